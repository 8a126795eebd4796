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
	if (w <= 0 || h <= 0 || (size_t)w * (size_t)h > SIZE_MAX / 3)
		return bl_fail(err, BL_EINVAL, "bad image size %dx%d", w, h);
	im->px = malloc((size_t)w * (size_t)h * 3);
	if (!im->px)
		return bl_fail(err, BL_ENOMEM, "out of memory for a %dx%d image", w, h);
	im->w = w;
	im->h = h;
	return 0;
}

void img_free(struct img *im)
{
	if (!im)
		return;
	free(im->px);
	free(im->icc);
	memset(im, 0, sizeof(*im));
}

/* ---- JPEG ---- */

/*
 * An ICC profile in a JPEG is split over APP2 segments that begin with
 * "ICC_PROFILE\0", a sequence number and a count. A malformed set is ignored
 * with a warning: the pixels are still good, the target is then taken as sRGB.
 */
static void jpeg_read_icc(const unsigned char *buf, size_t len, const char *name, struct img *im)
{
	enum { MAX_SEG = 255 };
	const unsigned char *seg[MAX_SEG + 1] = { 0 };
	size_t seglen[MAX_SEG + 1] = { 0 };
	size_t pos = 2, total = 0;
	int count = 0, found = 0;

	while (pos + 4 <= len) {
		unsigned marker;
		size_t l;

		if (buf[pos] != 0xff)
			return;
		marker = buf[pos + 1];
		if (marker == 0xff) { /* fill byte */
			pos++;
			continue;
		}
		if (marker == 0xda || marker == 0xd9) /* start of scan, end of image */
			break;
		if (marker >= 0xd0 && marker <= 0xd7) {
			pos += 2;
			continue;
		}
		l = ((size_t)buf[pos + 2] << 8) | buf[pos + 3];
		if (l < 2 || pos + 2 + l > len)
			return;
		if (marker == 0xe2 && l >= 16 && memcmp(buf + pos + 4, "ICC_PROFILE", 12) == 0) {
			unsigned seq = buf[pos + 16], n = buf[pos + 17];

			if (seq == 0 || n == 0 || seq > n || (count && (int)n != count) ||
			    seg[seq]) {
				log_warn("%s: malformed embedded ICC profile ignored", name);
				return;
			}
			count = (int)n;
			seg[seq] = buf + pos + 18;
			seglen[seq] = l - 16;
			total += l - 16;
			found++;
		}
		pos += 2 + l;
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
	rc = img_alloc(out, w, h, err);
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
	rc = 0;
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

	log_debug("%s: libpng: %s", c->name, msg);
}

static void png_read_mem(png_structp png, png_bytep out, size_t n)
{
	struct png_ctx *c = png_get_io_ptr(png);

	if (n > c->len - c->pos)
		png_error(png, "file ends early (truncated)");
	memcpy(out, c->buf + c->pos, n);
	c->pos += n;
}

static int png_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
		      struct img *out, bl_err *err)
{
	struct png_ctx ctx = { .name = name, .buf = buf, .len = len };
	struct png_ctx *c = &ctx;
	png_structp png;
	png_infop info;
	png_uint_32 w, h;
	int depth, type, interlace, channels, rc;

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
	if (depth == 16)
		png_set_scale_16(png);
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
			}
		}
	}
	c->tmp = malloc((size_t)w * h * (size_t)channels);
	c->rows = malloc(sizeof(*c->rows) * h);
	if (!c->tmp || !c->rows) {
		rc = bl_fail(err, BL_ENOMEM, "%s: out of memory for %lux%lu pixels", name,
			     (unsigned long)w, (unsigned long)h);
		goto out_free;
	}
	for (png_uint_32 y = 0; y < h; y++)
		c->rows[y] = c->tmp + (size_t)y * w * (size_t)channels;
	png_read_image(png, c->rows);
	/* Reading to IEND checks the CRCs of everything after the pixels too. */
	png_read_end(png, NULL);
	rc = img_alloc(out, (int)w, (int)h, err);
	if (rc)
		goto out_free;
	out->icc = c->icc;
	out->icc_len = c->icc_len;
	c->icc = NULL;
	if (channels == 3) {
		memcpy(out->px, c->tmp, (size_t)w * h * 3);
	} else {
		/* Transparent parts of a target are painted on white: the canvas is white. */
		for (size_t i = 0; i < (size_t)w * h; i++) {
			unsigned a = c->tmp[i * 4 + 3];

			for (int k = 0; k < 3; k++)
				out->px[i * 3 + k] = (unsigned char)((c->tmp[i * 4 + k] * a +
								      255u * (255u - a) + 127u) /
								     255u);
		}
	}
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

int img_decode(const unsigned char *buf, size_t len, const char *name, long max_pixels,
	       struct img *out, bl_err *err)
{
	memset(out, 0, sizeof(*out));
	if (len == 0)
		return bl_fail(err, BL_EINVAL, "%s: empty file (0 bytes)", name);
	if (is_jpeg(buf, len))
		return jpeg_decode(buf, len, name, max_pixels, out, err);
	if (is_png(buf, len))
		return png_decode(buf, len, name, max_pixels, out, err);
	return bl_fail(err, BL_EINVAL, "%s: neither a JPEG nor a PNG image", name);
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
	int rc;

	memset(out, 0, sizeof(*out));
	if (f->format != CAM_FMT_RGB24) {
		rc = img_decode(f->data, f->len, f->source, max_pixels, out, err);
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
	rc = img_alloc(out, f->width, f->height, err);
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
