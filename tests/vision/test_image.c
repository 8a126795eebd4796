/* test_image.c: JPEG and PNG decoding: files from another program, PNG variants, embedded profiles, and every kind of bad file (exit 2, the file named). */
#include <lcms2.h>
#include <png.h>
#include <sys/stat.h>

#include "vtest.h"

/* A 64x48 picture with four flat quadrants and a gradient row. */
static void make_picture(struct img *im)
{
	if (img_alloc(im, 64, 48, NULL))
		exit(1);
	vt_fill(im, 0, 0, 32, 24, 200, 30, 40);
	vt_fill(im, 32, 0, 32, 24, 30, 160, 60);
	vt_fill(im, 0, 24, 32, 24, 40, 60, 190);
	vt_fill(im, 32, 24, 32, 24, 240, 240, 235);
	for (int x = 0; x < 64; x++)
		vt_fill(im, x, 47, 1, 1, x * 4, x * 4, x * 4);
}

static const char *good_jpeg(void)
{
	struct img im;
	const char *ppm = vt_path("pic.ppm"), *jpg = vt_path("pic.jpg");
	const char *argv[] = { "cjpeg", "-quality", "95", "-outfile", jpg, ppm, NULL };

	make_picture(&im);
	vt_write_ppm(ppm, &im);
	img_free(&im);
	if (vt_run(argv, NULL) != 0) {
		fprintf(stderr, "cjpeg failed (scripts/install-deps installs libjpeg-turbo-progs)\n");
		exit(1);
	}
	return jpg;
}

/* Runs `measure FILE --roi 0,0,4,4` and checks exit 2 and a message naming the file and saying why. */
static void check_cli_refuses(const char *file, const char *why)
{
	const char *args[] = { "measure", file, "--roi", "0,0,4,4", NULL };
	char *out = NULL, *err = NULL;
	int st = test_brushloop(args, &out, &err);

	CHECK_MSG(st == 2, "%s: exit %d, want 2 (%s)", file, st, err ? err : "");
	CHECK_STR_CONTAINS(err, file);
	CHECK_STR_CONTAINS(err, why);
	CHECK(out && !out[0]);
	free(out);
	free(err);
}

TEST(jpeg_from_another_program)
{
	const char *jpg = good_jpeg();
	struct img im;
	bl_err err = { 0 };
	int rc = img_load(jpg, 1000000, &im, &err);

	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK(im.w == 64 && im.h == 48);
	CHECK(abs(im.px[(10 * 64 + 10) * 3] - 200) <= 3);
	CHECK(abs(im.px[(10 * 64 + 40) * 3 + 1] - 160) <= 3);
	CHECK(abs(im.px[(30 * 64 + 10) * 3 + 2] - 190) <= 3);
	CHECK(im.icc == NULL);
	img_free(&im);
}

TEST(png_round_trip_is_exact)
{
	struct img im, back;
	unsigned char *buf;
	size_t len;
	bl_err err = { 0 };

	make_picture(&im);
	CHECK(img_encode_png(&im, &buf, &len, &err) == 0);
	CHECK(img_decode(buf, len, "mem.png", 1000000, &back, &err) == 0);
	CHECK(back.w == im.w && back.h == im.h);
	CHECK(back.px && memcmp(back.px, im.px, (size_t)im.w * im.h * 3) == 0);
	free(buf);
	img_free(&im);
	img_free(&back);
}

/* Writes a 4x2 PNG of the given libpng colour type and bit depth through libpng directly. */
static const char *write_png_variant(const char *name, int type, int depth, const void *icc,
				     size_t icc_len)
{
	const char *path = vt_path(name);
	FILE *f = fopen(path, "wb");
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	int ch = type == PNG_COLOR_TYPE_GRAY ? 1 : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
		 : type == PNG_COLOR_TYPE_RGB ? 3 : type == PNG_COLOR_TYPE_RGBA ? 4 : 1;
	int bps = depth / 8;
	unsigned char row[4 * 4 * 2];

	if (!f || setjmp(png_jmpbuf(png)))
		exit(1);
	png_init_io(png, f);
	png_set_IHDR(png, info, 4, 2, depth, type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	if (type == PNG_COLOR_TYPE_PALETTE) {
		png_color pal[2] = { { 255, 0, 0 }, { 0, 0, 255 } };

		png_set_PLTE(png, info, pal, 2);
	}
	if (icc)
		png_set_iCCP(png, info, "test", 0, icc, (png_uint_32)icc_len);
	png_write_info(png, info);
	for (int y = 0; y < 2; y++) {
		for (int x = 0; x < 4; x++)
			for (int c = 0; c < ch; c++)
				for (int b = 0; b < bps; b++) {
					int v;

					if (type == PNG_COLOR_TYPE_PALETTE)
						v = x & 1;
					else if (c == ch - 1 && (type & PNG_COLOR_MASK_ALPHA))
						v = x < 2 ? 255 : 0; /* right half transparent */
					else
						v = c == 0 ? 200 : c == 1 ? 100 : 50;
					row[(x * ch + c) * bps + b] = (unsigned char)v;
				}
		png_write_row(png, row);
	}
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	fclose(f);
	return path;
}

TEST(png_variants_decode_to_rgb)
{
	struct img im;
	bl_err err = { 0 };

	CHECK(img_load(write_png_variant("g8.png", PNG_COLOR_TYPE_GRAY, 8, NULL, 0), 1000, &im,
		       &err) == 0);
	CHECK(im.w == 4 && im.px[0] == 200 && im.px[1] == 200 && im.px[2] == 200);
	img_free(&im);
	CHECK(img_load(write_png_variant("rgb16.png", PNG_COLOR_TYPE_RGB, 16, NULL, 0), 1000, &im,
		       &err) == 0);
	/* 16-bit 200*257+200 scales to 8-bit 200. */
	CHECK(im.px[0] == 200 && im.px[1] == 100 && im.px[2] == 50);
	img_free(&im);
	CHECK(img_load(write_png_variant("rgba.png", PNG_COLOR_TYPE_RGBA, 8, NULL, 0), 1000, &im,
		       &err) == 0);
	/* Opaque on the left, transparent (so white paper) on the right. */
	CHECK(im.px[0] == 200 && im.px[1] == 100 && im.px[2] == 50);
	CHECK(im.px[3 * 3] == 255 && im.px[3 * 3 + 1] == 255 && im.px[3 * 3 + 2] == 255);
	img_free(&im);
	CHECK(img_load(write_png_variant("ga.png", PNG_COLOR_TYPE_GRAY_ALPHA, 8, NULL, 0), 1000,
		       &im, &err) == 0);
	CHECK(im.px[0] == 200 && im.px[3 * 3] == 255);
	img_free(&im);
	CHECK(img_load(write_png_variant("pal.png", PNG_COLOR_TYPE_PALETTE, 8, NULL, 0), 1000, &im,
		       &err) == 0);
	CHECK(im.px[0] == 255 && im.px[2] == 0 && im.px[3] == 0 && im.px[5] == 255);
	img_free(&im);
}

TEST(embedded_profiles_are_kept)
{
	unsigned char fake_icc[300];
	struct img im;
	bl_err err = { 0 };
	size_t len;
	unsigned char *jpg, *spliced;
	const char *p;

	for (size_t i = 0; i < sizeof(fake_icc); i++)
		fake_icc[i] = (unsigned char)(i * 7);
	/* libpng checks an iCCP's header, so the PNG gets a real profile: lcms2's sRGB. */
	{
		cmsHPROFILE srgb = cmsCreate_sRGBProfile();
		cmsUInt32Number n = 0;
		unsigned char *prof;

		cmsSaveProfileToMem(srgb, NULL, &n);
		prof = malloc(n);
		cmsSaveProfileToMem(srgb, prof, &n);
		cmsCloseProfile(srgb);
		CHECK(img_load(write_png_variant("icc.png", PNG_COLOR_TYPE_RGB, 8, prof, n), 1000,
			       &im, &err) == 0);
		CHECK_MSG(im.icc_len == n && im.icc && memcmp(im.icc, prof, n) == 0,
			  "icc %zu bytes, want %u", im.icc_len, n);
		img_free(&im);
		free(prof);
	}
	/* JPEG: the profile split over two APP2 segments, in the wrong order on purpose. */
	jpg = vt_read_bytes(good_jpeg(), &len);
	spliced = malloc(len + 600);
	{
		size_t k = 0;
		const unsigned char hdr[] = "ICC_PROFILE";

		memcpy(spliced, jpg, 2); /* SOI */
		k = 2;
		for (int part = 2; part >= 1; part--) {
			size_t n = part == 1 ? 200 : 100, l = n + 16;

			spliced[k++] = 0xff;
			spliced[k++] = 0xe2;
			spliced[k++] = (unsigned char)(l >> 8);
			spliced[k++] = (unsigned char)l;
			memcpy(spliced + k, hdr, 12);
			k += 12;
			spliced[k++] = (unsigned char)part;
			spliced[k++] = 2;
			memcpy(spliced + k, fake_icc + (part == 1 ? 0 : 200), n);
			k += n;
		}
		memcpy(spliced + k, jpg + 2, len - 2);
		k += len - 2;
		p = vt_path("icc.jpg");
		vt_write_bytes(p, spliced, k);
	}
	CHECK(img_load(p, 1000000, &im, &err) == 0);
	CHECK(im.icc_len == sizeof(fake_icc));
	CHECK(im.icc && memcmp(im.icc, fake_icc, sizeof(fake_icc)) == 0);
	img_free(&im);
	free(jpg);
	free(spliced);
}

TEST(harmless_jpeg_warning_is_accepted)
{
	size_t len;
	unsigned char *jpg = vt_read_bytes(good_jpeg(), &len), *b = malloc(len + 2);
	const char *p = vt_path("extra.jpg");
	struct img im;
	bl_err err = { 0 };

	/* Junk before the end marker, as some webcams send: the picture is complete. */
	memcpy(b, jpg, len - 2);
	b[len - 2] = 0;
	b[len - 1] = 0;
	memcpy(b + len, jpg + len - 2, 2);
	vt_write_bytes(p, b, len + 2);
	CHECK(img_load(p, 1000000, &im, &err) == 0);
	CHECK(im.w == 64);
	img_free(&im);
	free(b);
	free(jpg);
}

TEST(truncated_jpeg_is_refused)
{
	size_t len;
	unsigned char *jpg = vt_read_bytes(good_jpeg(), &len);
	const char *p = vt_path("truncated.jpg");
	struct img im;
	bl_err err = { 0 };
	size_t sos = 0;

	for (size_t i = 2; i + 1 < len; i++)
		if (jpg[i] == 0xff && jpg[i + 1] == 0xda) {
			sos = i;
			break;
		}
	CHECK(sos > 0);
	/* Cut in the middle of the picture data, as an interrupted transfer leaves it. */
	vt_write_bytes(p, jpg, sos + (len - sos) / 2);
	CHECK(img_load(p, 1000000, &im, &err) == BL_EINVAL);
	CHECK(im.px == NULL);
	CHECK_STR_CONTAINS(err.msg, "truncated");
	check_cli_refuses(p, "Premature end of JPEG file");
	free(jpg);
}

TEST(corrupt_jpeg_is_refused)
{
	size_t len, sos = 0;
	unsigned char *jpg = vt_read_bytes(good_jpeg(), &len);
	const char *p = vt_path("corrupt.jpg"), *q = vt_path("badheader.jpg");

	for (size_t i = 2; i + 1 < len; i++)
		if (jpg[i] == 0xff && jpg[i + 1] == 0xda) {
			sos = i;
			break;
		}
	CHECK(sos > 0);
	/* The entropy-coded data half zeroed: the decoder would fill in grey. */
	memset(jpg + sos + 20, 0, (len - sos - 22) / 2);
	vt_write_bytes(p, jpg, len);
	check_cli_refuses(p, "Corrupt JPEG data");
	/* A header whose quantisation table segment claims a silly length. */
	free(jpg);
	jpg = vt_read_bytes(good_jpeg(), &len);
	for (size_t i = 2; i + 3 < len; i++)
		if (jpg[i] == 0xff && jpg[i + 1] == 0xdb) {
			jpg[i + 2] = 0x00;
			jpg[i + 3] = 0x03;
			break;
		}
	vt_write_bytes(q, jpg, len);
	check_cli_refuses(q, "JPEG");
	free(jpg);
}

TEST(huge_jpeg_header_refused_before_allocating)
{
	size_t len;
	unsigned char *jpg = vt_read_bytes(good_jpeg(), &len);
	const char *p = vt_path("huge.jpg");
	struct img im;
	bl_err err = { 0 };
	int found = 0;

	/* SOF0: FF C0, length, precision, height, width. */
	for (size_t i = 2; i + 8 < len; i++)
		if (jpg[i] == 0xff && (jpg[i + 1] == 0xc0 || jpg[i + 1] == 0xc1)) {
			jpg[i + 5] = 0xea; /* 60000 */
			jpg[i + 6] = 0x60;
			jpg[i + 7] = 0xea;
			jpg[i + 8] = 0x60;
			found = 1;
			break;
		}
	CHECK(found);
	vt_write_bytes(p, jpg, len);
	CHECK(img_load(p, 40000000L, &im, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "60000x60000");
	CHECK_STR_CONTAINS(err.msg, "refused before decoding");
	check_cli_refuses(p, "60000x60000");
	free(jpg);
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return c ^ 0xffffffffu;
}

static unsigned char *good_png(size_t *len)
{
	struct img im;
	unsigned char *buf;

	make_picture(&im);
	if (img_encode_png(&im, &buf, len, NULL))
		exit(1);
	img_free(&im);
	return buf;
}

TEST(huge_png_header_refused_before_allocating)
{
	size_t len;
	unsigned char *png = good_png(&len);
	const char *p = vt_path("huge.png");
	uint32_t crc;
	struct img im;
	bl_err err = { 0 };

	/* IHDR data at 16..28; width and height big-endian; its CRC after, made valid again. */
	png[16] = 0;
	png[17] = 0;
	png[18] = 0xea;
	png[19] = 0x60;
	png[20] = 0;
	png[21] = 0;
	png[22] = 0xea;
	png[23] = 0x60;
	crc = crc32_of(png + 12, 17);
	png[29] = (unsigned char)(crc >> 24);
	png[30] = (unsigned char)(crc >> 16);
	png[31] = (unsigned char)(crc >> 8);
	png[32] = (unsigned char)crc;
	vt_write_bytes(p, png, len);
	CHECK(img_load(p, 40000000L, &im, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "60000x60000");
	check_cli_refuses(p, "refused before decoding");
	free(png);
}

TEST(png_with_bad_crc_is_refused)
{
	size_t len;
	unsigned char *png = good_png(&len);
	const char *p = vt_path("badcrc.png");
	size_t idat = 0;

	for (size_t i = 8; i + 8 < len; i++)
		if (memcmp(png + i, "IDAT", 4) == 0) {
			idat = i;
			break;
		}
	CHECK(idat > 0);
	{
		/* The stored CRC after the chunk's data, flipped: the data itself stays good. */
		size_t n = (size_t)png[idat - 4] << 24 | (size_t)png[idat - 3] << 16 |
			   (size_t)png[idat - 2] << 8 | png[idat - 1];

		CHECK(idat + 4 + n + 4 <= len);
		png[idat + 4 + n] ^= 0x55;
	}
	vt_write_bytes(p, png, len);
	check_cli_refuses(p, "CRC");
	free(png);
}

TEST(truncated_png_is_refused)
{
	size_t len;
	unsigned char *png = good_png(&len);
	const char *p = vt_path("short.png");

	vt_write_bytes(p, png, len / 2);
	check_cli_refuses(p, "truncated");
	free(png);
}

TEST(empty_file_is_refused)
{
	const char *p = vt_path("empty.jpg");

	vt_write_bytes(p, "", 0);
	check_cli_refuses(p, "empty file");
}

TEST(directory_is_refused)
{
	const char *p = vt_path("adir.jpg");

	mkdir(p, 0755);
	check_cli_refuses(p, "is a directory");
}

TEST(text_and_missing_files_are_refused)
{
	const char *p = vt_path("notes.jpg");

	vt_write_bytes(p, "hello\n", 6);
	check_cli_refuses(p, "neither a JPEG nor a PNG");
	check_cli_refuses(vt_path("no-such-file.png"), "cannot open");
}

TEST(rgb_frame_of_wrong_length_is_refused)
{
	unsigned char data[10] = { 0 };
	struct cam_frame f = { .data = data, .len = 10, .format = CAM_FMT_RGB24, .width = 4,
			       .height = 4 };
	struct img im;
	bl_err err = { 0 };

	snprintf(f.source, sizeof(f.source), "/dev/video7");
	CHECK(img_decode_frame(&f, 1000, &im, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "/dev/video7");
	CHECK_STR_CONTAINS(err.msg, "expected 4x4x3");
}

TEST_MAIN(T(jpeg_from_another_program), T(png_round_trip_is_exact), T(png_variants_decode_to_rgb),
	  T(embedded_profiles_are_kept), T(harmless_jpeg_warning_is_accepted),
	  T(truncated_jpeg_is_refused), T(corrupt_jpeg_is_refused),
	  T(huge_jpeg_header_refused_before_allocating),
	  T(huge_png_header_refused_before_allocating), T(png_with_bad_crc_is_refused),
	  T(truncated_png_is_refused), T(empty_file_is_refused), T(directory_is_refused),
	  T(text_and_missing_files_are_refused), T(rgb_frame_of_wrong_length_is_refused))
