/* image.c: JPEG through TurboJPEG 2.1, PNG through libpng with setjmp error handling, sizes checked before allocating. */
#include "vision/image.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lcms2.h>
#include <png.h>
#include <turbojpeg.h>

#include "base/fs.h"
#include "base/log.h"

static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

static int is_jpeg(const unsigned char *buf, size_t len)
{
	return len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff;
}

static int is_png(const unsigned char *buf, size_t len)
{
	return len >= 8 && memcmp(buf, png_sig, 8) == 0;
}

static int check_size(const char *name, int w, int h, long max_pixels, bl_err *err)
{
	if (w <= 0 || h <= 0)
		return bl_fail(err, BL_EINVAL, "%s: image has no pixels (%dx%d)", name, w, h);
	/* Checked in 64 bits: a crafted 60000x60000 header must not wrap around. */
	if ((long long)w * h > (long long)max_pixels)
		return bl_fail(err, BL_EINVAL,
			       "%s: image is %dx%d = %lld pixels, more than the limit of %ld "
			       "(camera.max_pixels); refused before decoding",
			       name, w, h, (long long)w * h, max_pixels);
	return 0;
}

int img_alloc(struct img *im, int w, int h, bl_err *err)
{
	memset(im, 0, sizeof(*im));
	return img_resize(im, w, h, err);
}

int img_resize(struct img *im, int w, int h, bl_err *err)
{
	unsigned char *px = im->px;
	size_t cap = im->px_cap, need;

	free(im->px16);
	free(im->icc);
	memset(im, 0, sizeof(*im));
	if (w <= 0 || h <= 0 || (size_t)w * (size_t)h > SIZE_MAX / 3) {
		free(px);
		return bl_fail(err, BL_EINVAL, "bad image size %dx%d", w, h);
	}
	need = (size_t)w * (size_t)h * 3;
	if (!px || cap < need) {
		free(px);
		cap = need;
		if (!(px = malloc(need)))
			return bl_fail(err, BL_ENOMEM, "out of memory for a %dx%d image", w, h);
	}
	im->px = px;
	im->px_cap = cap;
	im->w = w;
	im->h = h;
	return 0;
}

void img_free(struct img *im)
{
	if (!im)
		return;
	free(im->px);
	free(im->px16);
	free(im->icc);
	memset(im, 0, sizeof(*im));
}

/* ---- JPEG ---- */

/*
 * An ICC profile in a JPEG is split over APP2 segments that begin with
 * "ICC_PROFILE\0", a sequence number and a count. A malformed set is ignored
 * with a warning: the pixels are still good, the target is then taken as sRGB.
 */
/*
 * The next marker segment before the scan: its marker, payload (after the
 * length) and payload length; 0 at the scan, the end, or a malformed header.
 */
static int jpeg_next_segment(const unsigned char *buf, size_t len, size_t *pos, unsigned *marker,
			     const unsigned char **data, size_t *n)
{
	while (*pos + 4 <= len) {
		size_t l;

		if (buf[*pos] != 0xff)
			return 0;
		*marker = buf[*pos + 1];
		if (*marker == 0xff) { /* fill byte */
			(*pos)++;
			continue;
		}
		if (*marker == 0xda || *marker == 0xd9) /* start of scan, end of image */
			return 0;
		if (*marker >= 0xd0 && *marker <= 0xd7) {
			*pos += 2;
			continue;
		}
		l = ((size_t)buf[*pos + 2] << 8) | buf[*pos + 3];
		if (l < 2 || *pos + 2 + l > len)
			return 0;
		*data = buf + *pos + 4;
		*n = l - 2;
		*pos += 2 + l;
		return 1;
	}
	return 0;
}

static void jpeg_read_icc(const unsigned char *buf, size_t len, const char *name, struct img *im)
{
	enum { MAX_SEG = 255 };
	const unsigned char *seg[MAX_SEG + 1] = { 0 }, *d;
	size_t seglen[MAX_SEG + 1] = { 0 };
	size_t pos = 2, total = 0, l;
	unsigned marker;
	int count = 0, found = 0;

	while (jpeg_next_segment(buf, len, &pos, &marker, &d, &l)) {
		if (marker == 0xe2 && l >= 14 && memcmp(d, "ICC_PROFILE", 12) == 0) {
			unsigned seq = d[12], n = d[13];

			if (seq == 0 || n == 0 || seq > n || (count && (int)n != count) ||
			    seg[seq]) {
				log_warn("%s: malformed embedded ICC profile ignored", name);
				return;
			}
			count = (int)n;
			seg[seq] = d + 14;
			seglen[seq] = l - 14;
			total += l - 14;
			found++;
		}
	}
	if (!found)
		return;
	if (found != count) {
		log_warn("%s: embedded ICC profile is incomplete (%d of %d parts); ignored", name,
			 found, count);
		return;
	}
	im->icc = malloc(total);
	if (!im->icc)
		return;
	im->icc_len = 0;
	for (int i = 1; i <= count; i++) {
		memcpy(im->icc + im->icc_len, seg[i], seglen[i]);
		im->icc_len += seglen[i];
	}
	im->icc_from = "APP2 ICC_PROFILE";
}

/* ---- EXIF orientation ---- */

static unsigned exif_u16(const unsigned char *p, int big)
{
	return big ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static uint32_t exif_u32(const unsigned char *p, int big)
{
	return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/*
 * The Orientation tag (0x0112) of IFD0 in an APP1 "Exif" segment (EXIF 2.3,
 * TIFF 6.0 layout): 1..8, or 0 when there is none. A value outside 1..8 is
 * warned about and taken as 1 (as stored).
 */
static int jpeg_read_orientation(const unsigned char *buf, size_t len, const char *name)
{
	const unsigned char *d, *t;
	size_t pos = 2, l, n;
	unsigned marker;

	while (jpeg_next_segment(buf, len, &pos, &marker, &d, &l)) {
		uint32_t ifd;
		unsigned count;
		int big;

		if (marker != 0xe1 || l < 14 || memcmp(d, "Exif\0\0", 6) != 0)
			continue;
		t = d + 6;
		n = l - 6;
		if (memcmp(t, "MM\0*", 4) == 0)
			big = 1;
		else if (memcmp(t, "II*\0", 4) == 0)
			big = 0;
		else
			return 0;
		ifd = exif_u32(t + 4, big);
		if (ifd > n - 2)
			return 0;
		count = exif_u16(t + ifd, big);
		for (unsigned i = 0; i < count && ifd + 2 + 12 * (size_t)(i + 1) <= n; i++) {
			const unsigned char *e = t + ifd + 2 + 12 * i;
			unsigned v;

			if (exif_u16(e, big) != 0x0112)
				continue;
			v = exif_u16(e + 8, big); /* a SHORT sits at the start of the value field */
			if (exif_u16(e + 2, big) != 3 || v < 1 || v > 8) {
				log_warn("%s: EXIF orientation %u is not one of 1..8; the picture is "
					 "taken as stored", name, v);
				return 1;
			}
			return (int)v;
		}
		return 0;
	}
	return 0;
}

/*
 * EXIF orientation as a display transform: shown pixel (x, y) is stored pixel
 * (u, v) = swap ? (y, x) : (x, y), then u mirrored when flip_u, v when flip_v.
 */
static const struct {
	unsigned char swap, flip_u, flip_v;
	const char *what;
} orientations[9] = {
	[0] = { 0, 0, 0, "as stored" },
	[1] = { 0, 0, 0, "as stored" },
	[2] = { 0, 1, 0, "mirrored left to right" },
	[3] = { 0, 1, 1, "turned 180 degrees" },
	[4] = { 0, 0, 1, "mirrored top to bottom" },
	[5] = { 1, 0, 0, "transposed (mirrored about its leading diagonal)" },
	[6] = { 1, 0, 1, "turned 90 degrees clockwise" },
	[7] = { 1, 1, 1, "transversed (mirrored about its other diagonal)" },
	[8] = { 1, 1, 0, "turned 90 degrees anticlockwise" },
};

const char *img_orientation_name(int orientation)
{
	return orientation >= 0 && orientation <= 8 ? orientations[orientation].what : "unknown";
}

/* Turns the decoded pixels as the EXIF orientation says a viewer shows them. */
static int img_orient(struct img *im, int orientation, bl_err *err)
{
	unsigned char *px;
	int w, h;

	im->orientation = orientation;
	if (orientation <= 1)
		return 0;
	w = orientations[orientation].swap ? im->h : im->w;
	h = orientations[orientation].swap ? im->w : im->h;
	px = malloc((size_t)w * h * 3);
	if (!px)
		return bl_fail(err, BL_ENOMEM, "out of memory turning a %dx%d picture", im->w, im->h);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			int u = orientations[orientation].swap ? y : x;
			int v = orientations[orientation].swap ? x : y;

			u = orientations[orientation].flip_u ? im->w - 1 - u : u;
			v = orientations[orientation].flip_v ? im->h - 1 - v : v;
			memcpy(px + ((size_t)y * w + x) * 3, im->px + ((size_t)v * im->w + u) * 3, 3);
		}
	free(im->px);
	im->px = px;
	im->px_cap = (size_t)w * h * 3;
	im->w = w;
	im->h = h;
	return 0;
}

/*
 * libjpeg warnings that leave the decoded image complete. Anything else
 * (premature end of data, bad Huffman code, corrupt data) means part of the
 * picture was invented by the decoder, so the frame is refused.
 */
static int jpeg_warning_harmless(const char *msg)
{
	return strstr(msg, "extraneous bytes before marker") != NULL;
}

static int jpeg_header(tjhandle tj, const unsigned char *buf, size_t len, const char *name,
		       int *w, int *h, bl_err *err)
{
	int sub, cs;

	if (tjDecompressHeader3(tj, buf, (unsigned long)len, w, h, &sub, &cs) < 0)
		return bl_fail(err, BL_EINVAL, "%s: not a readable JPEG: %s", name,
			       tjGetErrorStr2(tj));
	if (cs == TJCS_CMYK || cs == TJCS_YCCK)
		return bl_fail(err, BL_EINVAL, "%s: CMYK JPEG is not supported; convert it to RGB",
			       name);
	return 0;
}

static int jpeg_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
		       struct img *out, bl_err *err)
{
	tjhandle tj = tjInitDecompress();
	int w, h, rc;

	if (!tj)
		return bl_fail(err, BL_ENOMEM, "%s: cannot start the JPEG decoder", name);
	rc = jpeg_header(tj, buf, len, name, &w, &h, err);
	if (rc)
		goto out_destroy;
	rc = check_size(name, w, h, max_pixels, err);
	if (rc)
		goto out_destroy;
	/* out is zeroed, or a frame decoded before whose buffer is reused (img_decode_frame_into). */
	rc = img_resize(out, w, h, err);
	if (rc)
		goto out_destroy;
	if (tjDecompress2(tj, buf, (unsigned long)len, out->px, w, w * 3, h, TJPF_RGB, 0) < 0) {
		const char *msg = tjGetErrorStr2(tj);

		if (tjGetErrorCode(tj) == TJERR_FATAL || !jpeg_warning_harmless(msg)) {
			rc = bl_fail(err, BL_EINVAL, "%s: corrupt or truncated JPEG: %s", name, msg);
			img_free(out);
			goto out_destroy;
		}
		log_debug("%s: JPEG warning ignored: %s", name, msg);
	}
	jpeg_read_icc(buf, len, name, out);
	/* TurboJPEG decodes the pixels as stored; turning them as a viewer does is ours. */
	rc = img_orient(out, jpeg_read_orientation(buf, len, name), err);
	if (rc)
		img_free(out);
out_destroy:
	tjDestroy(tj);
	return rc;
}

/* ---- PNG ---- */

struct png_ctx {
	const char *name;
	const unsigned char *buf;
	size_t len, pos;
	char msg[256];
	/* Freed by the caller after a longjmp: kept here, not in registers. */
	unsigned char *px;
	png_bytep *rows;
	unsigned char *tmp;
	unsigned char *icc;
	size_t icc_len;
	const char *icc_from;
	unsigned char *out;
	size_t out_len, out_cap;
};

static void png_on_error(png_structp png, png_const_charp msg)
{
	struct png_ctx *c = png_get_error_ptr(png);

	snprintf(c->msg, sizeof(c->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
	struct png_ctx *c = png_get_error_ptr(png);

	/*
	 * libpng drops an iCCP it finds broken or not for the picture's colours,
	 * with a warning: "iCCP: ..." or "profile 'NAME': ..." (png_icc_profile_error).
	 */
	if (strncmp(msg, "iCCP", 4) == 0 || strncmp(msg, "profile '", 9) == 0)
		log_warn("%s: embedded ICC profile (iCCP) ignored (libpng: %s); taking the picture "
			 "as sRGB", c->name, msg);
	else
		log_debug("%s: libpng: %s", c->name, msg);
}

/*
 * A PNG without iCCP or sRGB describes its colours by gAMA (sample = light ^
 * gamma, PNG 1.2 section 11.3.3.2) and cHRM (the primaries' and white's
 * chromaticities; without it, sRGB's): the equivalent ICC profile, so the
 * picture's colours go through the same path as an embedded profile's.
 * cHRM without gAMA keeps sRGB's curve. NULL (and a warning) when LittleCMS
 * cannot make it.
 */
static unsigned char *png_profile_from_chunks(png_structp png, png_infop info, const char *name,
					      size_t *len, const char **from)
{
	cmsCIExyY white = { 0.3127, 0.3290, 1.0 };
	cmsCIExyYTRIPLE prim = { { 0.64, 0.33, 1.0 }, { 0.30, 0.60, 1.0 }, { 0.15, 0.06, 1.0 } };
	const cmsFloat64Number srgb[5] = { 2.4, 1.0 / 1.055, 0.055 / 1.055, 1.0 / 12.92, 0.04045 };
	cmsToneCurve *curve = NULL, *curves[3];
	cmsHPROFILE h = NULL;
	cmsUInt32Number n = 0;
	unsigned char *out = NULL;
	double gamma = 0.0;
	int has_gama = png_get_valid(png, info, PNG_INFO_gAMA) && png_get_gAMA(png, info, &gamma) &&
		       gamma > 0.0;
	int has_chrm = png_get_valid(png, info, PNG_INFO_cHRM) &&
		       png_get_cHRM(png, info, &white.x, &white.y, &prim.Red.x, &prim.Red.y,
				    &prim.Green.x, &prim.Green.y, &prim.Blue.x, &prim.Blue.y);

	*len = 0;
	if (!has_gama && !has_chrm)
		return NULL;
	*from = has_gama && has_chrm ? "gAMA and cHRM" : has_gama ? "gAMA" : "cHRM";
	curve = has_gama ? cmsBuildGamma(NULL, 1.0 / gamma) : cmsBuildParametricToneCurve(NULL, 4, srgb);
	curves[0] = curves[1] = curves[2] = curve;
	if (curve)
		h = cmsCreateRGBProfile(&white, &prim, curves);
	if (h && cmsSaveProfileToMem(h, NULL, &n) && n > 0 && (out = malloc(n)) &&
	    !cmsSaveProfileToMem(h, out, &n)) {
		free(out);
		out = NULL;
	}
	if (!out)
		log_warn("%s: its %s chunks make no colour space LittleCMS can build; taking the "
			 "picture as sRGB", name, *from);
	if (h)
		cmsCloseProfile(h);
	if (curve)
		cmsFreeToneCurve(curve);
	*len = out ? n : 0;
	return out;
}

static void png_read_mem(png_structp png, png_bytep out, size_t n)
{
	struct png_ctx *c = png_get_io_ptr(png);

	if (n > c->len - c->pos)
		png_error(png, "file ends early (truncated)");
	memcpy(out, c->buf + c->pos, n);
	c->pos += n;
}

/*
 * Decoded PNG rows (3 or 4 channels of 1 or 2 big-endian bytes) to the
 * image's 8-bit pixels and, for 16 bits, its px16 too. Transparent parts of
 * a target are painted on white: the canvas is white.
 */
static void png_samples(const unsigned char *tmp, size_t n, int channels, int bytes,
			struct img *out)
{
	const uint32_t max = bytes == 2 ? 65535u : 255u;

	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = tmp + i * (size_t)channels * bytes;
		uint32_t a = max;

		if (channels == 4)
			a = bytes == 2 ? (uint32_t)p[6] << 8 | p[7] : p[3];
		for (int k = 0; k < 3; k++) {
			uint32_t v = bytes == 2 ? (uint32_t)p[2 * k] << 8 | p[2 * k + 1] : p[k];

			v = (uint32_t)(((uint64_t)v * a + (uint64_t)max * (max - a) + max / 2) / max);
			if (bytes == 2) {
				out->px16[i * 3 + k] = (uint16_t)v;
				v = (v * 255u + 32767u) / 65535u;
			}
			out->px[i * 3 + k] = (unsigned char)v;
		}
	}
}

static int png_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
		      struct img *out, bl_err *err)
{
	struct png_ctx ctx = { .name = name, .buf = buf, .len = len };
	struct png_ctx *c = &ctx;
	png_structp png;
	png_infop info;
	png_uint_32 w, h;
	int depth, type, interlace, channels, bytes, rc;

	memset(out, 0, sizeof(*out));
	png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, png_on_error, png_on_warning);
	if (!png)
		return bl_fail(err, BL_ENOMEM, "%s: cannot start the PNG decoder", name);
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_read_struct(&png, NULL, NULL);
		return bl_fail(err, BL_ENOMEM, "%s: cannot start the PNG decoder", name);
	}
	if (setjmp(png_jmpbuf(png))) {
		rc = bl_fail(err, BL_EINVAL, "%s: corrupt or truncated PNG: %s", name, c->msg);
		goto out_free;
	}
	png_set_read_fn(png, c, png_read_mem);
	png_read_info(png, info);
	png_get_IHDR(png, info, &w, &h, &depth, &type, &interlace, NULL, NULL);
	if (w > INT_MAX || h > INT_MAX) {
		rc = bl_fail(err, BL_EINVAL, "%s: PNG size %lux%lu is absurd", name,
			     (unsigned long)w, (unsigned long)h);
		goto out_free;
	}
	rc = check_size(name, (int)w, (int)h, max_pixels, err);
	if (rc)
		goto out_free;
	if (type == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (png_get_valid(png, info, PNG_INFO_tRNS))
		png_set_tRNS_to_alpha(png);
	if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(png);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
	channels = png_get_channels(png, info);
	if (channels != 3 && channels != 4) {
		rc = bl_fail(err, BL_EINVAL, "%s: PNG with %d channels is not supported", name,
			     channels);
		goto out_free;
	}
	if (png_get_valid(png, info, PNG_INFO_iCCP)) {
		png_charp pname;
		png_bytep prof;
		png_uint_32 plen;
		int comp;

		if (png_get_iCCP(png, info, &pname, &comp, &prof, &plen) && plen > 0) {
			c->icc = malloc(plen);
			if (c->icc) {
				memcpy(c->icc, prof, plen);
				c->icc_len = plen;
				c->icc_from = "iCCP";
			}
		}
	} else if (!png_get_valid(png, info, PNG_INFO_sRGB)) {
		c->icc = png_profile_from_chunks(png, info, name, &c->icc_len, &c->icc_from);
	}
	bytes = png_get_bit_depth(png, info) == 16 ? 2 : 1;
	c->tmp = malloc((size_t)w * h * (size_t)channels * bytes);
	c->rows = malloc(sizeof(*c->rows) * h);
	if (!c->tmp || !c->rows) {
		rc = bl_fail(err, BL_ENOMEM, "%s: out of memory for %lux%lu pixels", name,
			     (unsigned long)w, (unsigned long)h);
		goto out_free;
	}
	for (png_uint_32 y = 0; y < h; y++)
		c->rows[y] = c->tmp + (size_t)y * w * (size_t)channels * bytes;
	png_read_image(png, c->rows);
	/* Reading to IEND checks the CRCs of everything after the pixels too. */
	png_read_end(png, NULL);
	rc = img_alloc(out, (int)w, (int)h, err);
	if (rc)
		goto out_free;
	out->icc = c->icc;
	out->icc_len = c->icc_len;
	out->icc_from = c->icc_from;
	c->icc = NULL;
	if (bytes == 2) {
		out->px16 = malloc((size_t)w * h * 3 * sizeof(*out->px16));
		if (!out->px16) {
			rc = bl_fail(err, BL_ENOMEM, "%s: out of memory for %lux%lu pixels", name,
				     (unsigned long)w, (unsigned long)h);
			goto out_free;
		}
	}
	png_samples(c->tmp, (size_t)w * h, channels, bytes, out);
	rc = 0;
out_free:
	free(c->tmp);
	free(c->rows);
	free(c->icc);
	png_destroy_read_struct(&png, &info, NULL);
	if (rc)
		img_free(out);
	return rc;
}

/* ---- entry points ---- */

int img_probe(const unsigned char *buf, size_t len, const char *name, enum cam_format *fmt,
	      int *w, int *h, bl_err *err)
{
	if (len == 0)
		return bl_fail(err, BL_EINVAL, "%s: empty file (0 bytes)", name);
	if (is_jpeg(buf, len)) {
		tjhandle tj = tjInitDecompress();
		int rc;

		if (!tj)
			return bl_fail(err, BL_ENOMEM, "%s: cannot start the JPEG decoder", name);
		rc = jpeg_header(tj, buf, len, name, w, h, err);
		tjDestroy(tj);
		*fmt = CAM_FMT_JPEG;
		return rc;
	}
	if (is_png(buf, len)) {
		/* IHDR follows the signature: length, "IHDR", width, height (big-endian). */
		if (len < 24 || memcmp(buf + 12, "IHDR", 4) != 0)
			return bl_fail(err, BL_EINVAL, "%s: PNG without a header chunk", name);
		*w = (int)(((uint32_t)buf[16] << 24 | (uint32_t)buf[17] << 16 |
			    (uint32_t)buf[18] << 8 | buf[19]) & 0x7fffffff);
		*h = (int)(((uint32_t)buf[20] << 24 | (uint32_t)buf[21] << 16 |
			    (uint32_t)buf[22] << 8 | buf[23]) & 0x7fffffff);
		*fmt = CAM_FMT_PNG;
		return 0;
	}
	return bl_fail(err, BL_EINVAL, "%s: neither a JPEG nor a PNG image", name);
}

/* img_decode into out, zeroed or decoded into before: a JPEG reuses its pixel buffer. */
static int decode_into(const unsigned char *buf, size_t len, const char *name, long max_pixels,
		       struct img *out, bl_err *err)
{
	if (len == 0)
		return bl_fail(err, BL_EINVAL, "%s: empty file (0 bytes)", name);
	if (is_jpeg(buf, len))
		return jpeg_decode(buf, len, name, max_pixels, out, err);
	/* PNG comes from files, not from a camera's stream: decoded afresh. */
	img_free(out);
	if (is_png(buf, len))
		return png_decode(buf, len, name, max_pixels, out, err);
	return bl_fail(err, BL_EINVAL, "%s: neither a JPEG nor a PNG image", name);
}

int img_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
	       struct img *out, bl_err *err)
{
	memset(out, 0, sizeof(*out));
	return decode_into(buf, len, name, max_pixels, out, err);
}

int img_load(const char *path, long max_pixels, struct img *out, bl_err *err)
{
	char *buf;
	size_t len;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = fs_read_file(path, IMG_MAX_FILE_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	rc = img_decode((const unsigned char *)buf, len, path, max_pixels, out, err);
	free(buf);
	return rc;
}

int img_decode_frame(const struct cam_frame *f, long max_pixels, struct img *out, bl_err *err)
{
	memset(out, 0, sizeof(*out));
	return img_decode_frame_into(f, max_pixels, out, err);
}

int img_decode_frame_into(const struct cam_frame *f, long max_pixels, struct img *out,
			  bl_err *err)
{
	int rc;

	if (f->format != CAM_FMT_RGB24) {
		rc = decode_into(f->data, f->len, f->source, max_pixels, out, err);
		if (rc == 0 && (f->width || f->height) &&
		    (out->w != f->width || out->h != f->height)) {
			rc = bl_fail(err, BL_EINVAL, "%s: frame decodes to %dx%d, announced %dx%d",
				     f->source, out->w, out->h, f->width, f->height);
			img_free(out);
		}
		return rc;
	}
	rc = check_size(f->source, f->width, f->height, max_pixels, err);
	if (rc)
		return rc;
	if (f->len != (size_t)f->width * (size_t)f->height * 3)
		return bl_fail(err, BL_EINVAL, "%s: RGB frame of %zu bytes, expected %dx%dx3",
			       f->source, f->len, f->width, f->height);
	rc = img_resize(out, f->width, f->height, err);
	if (rc)
		return rc;
	memcpy(out->px, f->data, f->len);
	return 0;
}

int img_encode_jpeg(const struct img *im, int quality, unsigned char **out, size_t *len,
		    bl_err *err)
{
	tjhandle tj = tjInitCompress();
	unsigned char *jbuf = NULL;
	unsigned long jlen = 0;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (!tj)
		return bl_fail(err, BL_ENOMEM, "cannot start the JPEG encoder");
	if (tjCompress2(tj, im->px, im->w, im->w * 3, im->h, TJPF_RGB, &jbuf, &jlen, TJSAMP_444,
			quality, 0) < 0) {
		rc = bl_fail(err, BL_EIO, "JPEG encoding failed: %s", tjGetErrorStr2(tj));
		goto out_destroy;
	}
	/* Hand out malloc'd memory, so callers free it like every other buffer. */
	*out = malloc(jlen);
	if (!*out) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_destroy;
	}
	memcpy(*out, jbuf, jlen);
	*len = jlen;
out_destroy:
	tjFree(jbuf);
	tjDestroy(tj);
	return rc;
}

static void png_write_mem(png_structp png, png_bytep data, size_t n)
{
	struct png_ctx *c = png_get_io_ptr(png);

	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 65536;
		unsigned char *nb;

		while (cap < c->out_len + n)
			cap *= 2;
		nb = realloc(c->out, cap);
		if (!nb)
			png_error(png, "out of memory");
		c->out = nb;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, n);
	c->out_len += n;
}

static void png_flush_mem(png_structp png)
{
	(void)png;
}

int img_encode_png(const struct img *im, unsigned char **out, size_t *len, bl_err *err)
{
	struct png_ctx ctx = { .name = "PNG output" };
	struct png_ctx *c = &ctx;
	png_structp png;
	png_infop info;
	int rc;

	*out = NULL;
	*len = 0;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, c, png_on_error, png_on_warning);
	if (!png)
		return bl_fail(err, BL_ENOMEM, "cannot start the PNG encoder");
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return bl_fail(err, BL_ENOMEM, "cannot start the PNG encoder");
	}
	if (setjmp(png_jmpbuf(png))) {
		rc = bl_fail(err, BL_EIO, "PNG encoding failed: %s", c->msg);
		free(c->out);
		c->out = NULL;
		goto out_free;
	}
	png_set_write_fn(png, c, png_write_mem, png_flush_mem);
	png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_sRGB(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
	png_set_compression_level(png, 6);
	png_write_info(png, info);
	for (int y = 0; y < im->h; y++)
		png_write_row(png, im->px + (size_t)y * im->w * 3);
	png_write_end(png, NULL);
	*out = c->out;
	*len = c->out_len;
	rc = 0;
out_free:
	png_destroy_write_struct(&png, &info);
	return rc;
}

static int has_ext(const char *path, const char *ext)
{
	size_t n = strlen(path), e = strlen(ext);

	return n > e && strcasecmp(path + n - e, ext) == 0;
}

int img_save_name_ok(const char *path)
{
	return has_ext(path, ".png") || has_ext(path, ".jpg") || has_ext(path, ".jpeg");
}

int img_save(const char *path, const struct img *im, bl_err *err)
{
	unsigned char *buf;
	size_t len;
	int rc;

	if (has_ext(path, ".png"))
		rc = img_encode_png(im, &buf, &len, err);
	else if (has_ext(path, ".jpg") || has_ext(path, ".jpeg"))
		rc = img_encode_jpeg(im, 95, &buf, &len, err);
	else
		return bl_fail(err, BL_EINVAL, "%s: name the file .png or .jpg", path);
	if (rc)
		return bl_err_prefix(err, "%s", path);
	rc = fs_write_atomic(path, buf, len, err);
	free(buf);
	return rc;
}

int img_save_frame(const char *path, const struct cam_frame *f, long max_pixels, int *w, int *h,
		   bl_err *err)
{
	struct img im = { 0 };
	int rc;

	if (!img_save_name_ok(path))
		return bl_fail(err, BL_EINVAL, "%s: name the file .png or .jpg", path);
	if (f->format == CAM_FMT_JPEG && !has_ext(path, ".png")) {
		if (w)
			*w = f->width;
		if (h)
			*h = f->height;
		return fs_write_atomic(path, f->data, f->len, err);
	}
	if ((rc = img_decode_frame(f, max_pixels, &im, err)) == 0) {
		if (w)
			*w = im.w;
		if (h)
			*h = im.h;
		rc = img_save(path, &im, err);
	}
	img_free(&im);
	return rc;
}
