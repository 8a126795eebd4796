/* test_pictures.c: pictures as phones and editors write them: EXIF orientation (plan and estimate too), PNG gAMA and cHRM, broken or grey iCCP, frames with a profile measure ignores, 16-bit precision. */
#include <lcms2.h>
#include <png.h>

#include "color/color.h"
#include "plan/plan_image.h"
#include "config/machine.h"
#include "vision/measure.h"
#include "vtest.h"

enum { RED, GREEN, BLUE, WHITE };
static const int quad_rgb[4][3] = { { 220, 30, 30 }, { 30, 200, 40 }, { 30, 40, 210 },
				    { 245, 245, 245 } };

/* w x h px in four flat quadrants (red, green / blue, white), each a whole number of 8 px blocks. */
static void quadrants(struct img *im, int w, int h)
{
	if (img_alloc(im, w, h, NULL))
		exit(1);
	for (int q = 0; q < 4; q++)
		vt_fill(im, (q & 1) * w / 2, (q >> 1) * h / 2, w / 2, h / 2, quad_rgb[q][0],
			quad_rgb[q][1], quad_rgb[q][2]);
}

/* A JPEG (quality 100, 4:4:4) of im with an APP1 Exif segment giving orientation (0: none). */
static const char *jpeg_with_orientation(const char *name, const struct img *im, int orientation,
					 int big_endian)
{
	unsigned char *jpg, *out, app1[2 + 2 + 6 + 8 + 2 + 12 + 4];
	size_t len, k = 0;
	bl_err err = { 0 };
	const char *path = vt_path(name);

	if (img_encode_jpeg(im, 100, &jpg, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	/* APP1: "Exif\0\0", a TIFF header, IFD0 with one entry, Orientation SHORT 1. */
	app1[k++] = 0xff;
	app1[k++] = 0xe1;
	app1[k++] = 0;
	app1[k++] = (unsigned char)(sizeof(app1) - 2);
	memcpy(app1 + k, "Exif\0\0", 6);
	k += 6;
	memcpy(app1 + k, big_endian ? "MM\0*\0\0\0\x08" : "II*\0\x08\0\0\0", 8);
	k += 8;
	app1[k++] = big_endian ? 0 : 1;
	app1[k++] = big_endian ? 1 : 0;
	{
		const unsigned char be[12] = { 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0,
					       (unsigned char)orientation, 0, 0 };
		const unsigned char le[12] = { 0x12, 0x01, 3, 0, 1, 0, 0, 0,
					       (unsigned char)orientation, 0, 0, 0 };

		memcpy(app1 + k, big_endian ? be : le, 12);
		k += 12;
	}
	memset(app1 + k, 0, 4); /* no next IFD */
	k += 4;
	out = malloc(len + k);
	memcpy(out, jpg, 2);
	if (orientation)
		memcpy(out + 2, app1, k);
	else
		k = 0;
	memcpy(out + 2 + k, jpg + 2, len - 2);
	vt_write_bytes(path, out, len + k);
	free(out);
	free(jpg);
	return path;
}

/* Which quadrant's colour the pixel (x, y) is nearest to. */
static int quadrant_at(const struct img *im, int x, int y)
{
	const unsigned char *p = im->px + ((size_t)y * im->w + x) * 3;
	int best = -1, bd = 1 << 30;

	for (int q = 0; q < 4; q++) {
		int d = 0;

		for (int c = 0; c < 3; c++)
			d += (p[c] - quad_rgb[q][c]) * (p[c] - quad_rgb[q][c]);
		if (d < bd) {
			bd = d;
			best = q;
		}
	}
	return best;
}

TEST(exif_orientation_turns_jpegs_as_viewers_show_them)
{
	/* Top left, top right, bottom left, bottom right as shown, from EXIF 2.3's table of the 0th row and column. */
	static const int shown[9][4] = {
		[0] = { RED, GREEN, BLUE, WHITE },   [1] = { RED, GREEN, BLUE, WHITE },
		[2] = { GREEN, RED, WHITE, BLUE },   [3] = { WHITE, BLUE, GREEN, RED },
		[4] = { BLUE, WHITE, RED, GREEN },   [5] = { RED, BLUE, GREEN, WHITE },
		[6] = { BLUE, RED, WHITE, GREEN },   [7] = { WHITE, GREEN, BLUE, RED },
		[8] = { GREEN, WHITE, RED, BLUE },
	};
	struct img pic;

	quadrants(&pic, 64, 32);
	for (int o = 0; o <= 8; o++) {
		char name[32];
		struct img im;
		bl_err err = { 0 };
		int turned = o >= 5;

		snprintf(name, sizeof(name), "o%d.jpg", o);
		CHECK(img_load(jpeg_with_orientation(name, &pic, o, o & 1), 100000, &im, &err) == 0);
		CHECK_MSG(im.w == (turned ? 32 : 64) && im.h == (turned ? 64 : 32),
			  "orientation %d: %dx%d", o, im.w, im.h);
		CHECK(im.orientation == o);
		if (im.w > 4 && im.h > 4) {
			int got[4] = { quadrant_at(&im, 2, 2), quadrant_at(&im, im.w - 3, 2),
				       quadrant_at(&im, 2, im.h - 3),
				       quadrant_at(&im, im.w - 3, im.h - 3) };

			CHECK_MSG(memcmp(got, shown[o], sizeof(got)) == 0,
				  "orientation %d shows %d %d / %d %d", o, got[0], got[1], got[2], got[3]);
		}
		img_free(&im);
	}
	img_free(&pic);
}

/* The picture turned 90 degrees clockwise by hand. */
static void turn_clockwise(const struct img *in, struct img *out)
{
	if (img_alloc(out, in->h, in->w, NULL))
		exit(1);
	for (int y = 0; y < out->h; y++)
		for (int x = 0; x < out->w; x++)
			memcpy(out->px + ((size_t)y * out->w + x) * 3,
			       in->px + ((size_t)(in->h - 1 - x) * in->w + y) * 3, 3);
}

TEST(plan_and_estimate_paint_a_phone_photo_upright)
{
	struct img pic, upright, a, b;
	const char *phone, *hand;
	bl_err err = { 0 };

	/* Stored on its side as a phone does, with EXIF 6; and the same turned by hand. */
	quadrants(&pic, 96, 64);
	turn_clockwise(&pic, &upright);
	phone = jpeg_with_orientation("phone.jpg", &pic, 6, 0);
	{
		static char p[4096];

		snprintf(p, sizeof(p), "%s", jpeg_with_orientation("hand.jpg", &upright, 0, 0));
		hand = p;
	}
	/* Flat 8 px blocks decode exactly, so both are the same picture to the pixel. */
	CHECK(img_load(phone, 100000, &a, &err) == 0 && img_load(hand, 100000, &b, &err) == 0);
	CHECK(a.w == b.w && a.h == b.h && memcmp(a.px, b.px, (size_t)a.w * a.h * 3) == 0);
	img_free(&a);
	img_free(&b);
	{
		const char *pa[] = { "plan", phone, "-o", vt_path("phone-plan.json"), "--max-strokes",
				     "60", NULL };
		const char *pj[] = { "plan", phone, "-o", vt_path("phone-plan.json"), "--max-strokes",
				     "60", "--json", NULL };
		const char *hj[] = { "plan", hand, "-o", vt_path("hand-plan.json"), "--max-strokes",
				     "60", "--json", NULL };
		char *out = NULL, *ho = NULL;
		cJSON *x, *y;

		CHECK(test_brushloop(pa, &out, NULL) == 0);
		CHECK_STR_CONTAINS(out, "picture: 64 x 96 px");
		CHECK_STR_CONTAINS(out, "orientation: EXIF 6, turned 90 degrees clockwise");
		free(out);
		CHECK(test_brushloop(pj, &out, NULL) == 0 && test_brushloop(hj, &ho, NULL) == 0);
		x = vt_json(out);
		y = vt_json(ho);
		CHECK(vt_num(x, "orientation") == 6 && vt_num(y, "orientation") == 0);
		CHECK(vt_num(x, "strokes") == vt_num(y, "strokes"));
		CHECK(vt_num(x, "arm_time_s") == vt_num(y, "arm_time_s"));
		CHECK(vt_num(cJSON_GetObjectItem(x, "predicted"), "mean_de00") ==
		      vt_num(cJSON_GetObjectItem(y, "predicted"), "mean_de00"));
		cJSON_Delete(x);
		cJSON_Delete(y);
		free(out);
		free(ho);
	}
	{
		const char *pe[] = { "estimate", phone, "--max-strokes", "60", "--json", NULL };
		const char *he[] = { "estimate", hand, "--max-strokes", "60", "--json", NULL };
		char *out = NULL, *ho = NULL;
		cJSON *x, *y;

		CHECK(test_brushloop(pe, &out, NULL) == 0 && test_brushloop(he, &ho, NULL) == 0);
		x = vt_json(out);
		y = vt_json(ho);
		CHECK(vt_num(x, "strokes") == vt_num(y, "strokes"));
		CHECK(vt_num(cJSON_GetObjectItem(x, "expected"), "arm_s") ==
		      vt_num(cJSON_GetObjectItem(y, "expected"), "arm_s"));
		CHECK(vt_num(cJSON_GetObjectItem(x, "expected"), "paint_ml") ==
		      vt_num(cJSON_GetObjectItem(y, "expected"), "paint_ml"));
		cJSON_Delete(x);
		cJSON_Delete(y);
		free(out);
		free(ho);
	}
	img_free(&pic);
	img_free(&upright);
}

/* A 16x16 PNG of one colour, 8 or 16 bits, with the chunks asked for. */
struct png_spec {
	int depth;
	unsigned v[3];          /* samples at that depth */
	double gamma;           /* gAMA, 0: none */
	const double *chrm;     /* cHRM white x, y, red x, y, green x, y, blue x, y, or NULL */
	int srgb;               /* an sRGB chunk */
	const void *icc;        /* iCCP */
	size_t icc_len;
};

static const char *write_png(const char *name, const struct png_spec *s)
{
	const char *path = vt_path(name);
	FILE *f = fopen(path, "wb");
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	unsigned char row[16 * 3 * 2];
	int bps = s->depth / 8;

	if (!f || setjmp(png_jmpbuf(png)))
		exit(1);
	png_init_io(png, f);
	/* Write what the test asks for, even what libpng would call wrong. */
	png_set_benign_errors(png, 1);
	png_set_check_for_invalid_index(png, 0);
	png_set_IHDR(png, info, 16, 16, s->depth, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (s->gamma > 0)
		png_set_gAMA(png, info, s->gamma);
	if (s->chrm)
		png_set_cHRM(png, info, s->chrm[0], s->chrm[1], s->chrm[2], s->chrm[3], s->chrm[4],
			     s->chrm[5], s->chrm[6], s->chrm[7]);
	if (s->srgb)
		png_set_sRGB(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
	if (s->icc)
		png_set_iCCP(png, info, "test", 0, s->icc, (png_uint_32)s->icc_len);
	png_write_info(png, info);
	for (int x = 0; x < 16; x++)
		for (int c = 0; c < 3; c++) {
			if (bps == 2) {
				row[(x * 3 + c) * 2] = (unsigned char)(s->v[c] >> 8);
				row[(x * 3 + c) * 2 + 1] = (unsigned char)s->v[c];
			} else {
				row[x * 3 + c] = (unsigned char)s->v[c];
			}
		}
	for (int y = 0; y < 16; y++)
		png_write_row(png, row);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	fclose(f);
	return path;
}

/* The picture's Lab as a target reads it (one pixel of the canvas raster). */
static int target_lab(const char *path, float lab[3])
{
	struct img im;
	bl_err err = { 0 };
	int rc = img_load(path, 100000, &im, &err);

	if (!rc)
		rc = meas_target_lab(&im, path, 1, 1, lab, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	img_free(&im);
	return rc;
}

/* Linear RGB through primaries and white (xy) to XYZ, Bradford-adapted from D65 to D50, then Lab (the standards' formulas). */
static void linear_to_lab(const double lin[3], const double chrm[8], double lab[3])
{
	static const double B[9] = { 1.0478112, 0.0228866, -0.0501270, 0.0295424, 0.9904844,
				     -0.0170491, -0.0092345, 0.0150436, 0.7521316 };
	const double wd50[3] = { 0.9642, 1.0, 0.8249 };
	double P[9], W[3], S[3], xyz[3] = { 0 }, x50[3], f[3], inv[9], det;

	for (int i = 0; i < 3; i++) {
		double x = chrm[2 + 2 * i], y = chrm[3 + 2 * i];

		P[0 * 3 + i] = x / y;
		P[1 * 3 + i] = 1.0;
		P[2 * 3 + i] = (1 - x - y) / y;
	}
	W[0] = chrm[0] / chrm[1];
	W[1] = 1.0;
	W[2] = (1 - chrm[0] - chrm[1]) / chrm[1];
	det = P[0] * (P[4] * P[8] - P[5] * P[7]) - P[1] * (P[3] * P[8] - P[5] * P[6]) +
	      P[2] * (P[3] * P[7] - P[4] * P[6]);
	inv[0] = (P[4] * P[8] - P[5] * P[7]) / det;
	inv[1] = (P[2] * P[7] - P[1] * P[8]) / det;
	inv[2] = (P[1] * P[5] - P[2] * P[4]) / det;
	inv[3] = (P[5] * P[6] - P[3] * P[8]) / det;
	inv[4] = (P[0] * P[8] - P[2] * P[6]) / det;
	inv[5] = (P[2] * P[3] - P[0] * P[5]) / det;
	inv[6] = (P[3] * P[7] - P[4] * P[6]) / det;
	inv[7] = (P[1] * P[6] - P[0] * P[7]) / det;
	inv[8] = (P[0] * P[4] - P[1] * P[3]) / det;
	for (int i = 0; i < 3; i++)
		S[i] = inv[3 * i] * W[0] + inv[3 * i + 1] * W[1] + inv[3 * i + 2] * W[2];
	for (int r = 0; r < 3; r++)
		for (int c = 0; c < 3; c++)
			xyz[r] += P[3 * r + c] * S[c] * lin[c];
	for (int i = 0; i < 3; i++) {
		double t;

		x50[i] = B[3 * i] * xyz[0] + B[3 * i + 1] * xyz[1] + B[3 * i + 2] * xyz[2];
		t = x50[i] / wd50[i];
		f[i] = t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116;
	}
	lab[0] = 116 * f[1] - 16;
	lab[1] = 500 * (f[0] - f[1]);
	lab[2] = 200 * (f[1] - f[2]);
}

TEST(png_gama_and_chrm_without_iccp_are_honoured)
{
	static const double srgb_chrm[8] = { 0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06 };
	static const double adobe[8] = { 0.3127, 0.3290, 0.64, 0.33, 0.21, 0.71, 0.15, 0.06 };
	struct png_spec linear = { 8, { 128, 128, 128 }, 1.0, NULL, 0, NULL, 0 };
	struct png_spec wide = { 8, { 40, 200, 60 }, 1 / 2.2, adobe, 0, NULL, 0 };
	struct png_spec both = { 8, { 40, 200, 60 }, 1 / 2.2, adobe, 1, NULL, 0 };
	float got[3];
	double want[3], lin[3], srgb[3];
	color_lab x, y;

	/* Linear samples (gAMA 1, sRGB's primaries assumed without cHRM): grey 128 is Y 0.502. */
	CHECK(target_lab(write_png("linear.png", &linear), got) == 0);
	for (int c = 0; c < 3; c++)
		lin[c] = 128 / 255.0;
	linear_to_lab(lin, srgb_chrm, want);
	fprintf(stderr, "gAMA 1.0 grey 128: L* %.2f, from the formulas %.2f (as sRGB it would be 53.6)\n",
		got[0], want[0]);
	CHECK_NEAR(got[0], want[0], 0.2);
	CHECK(fabs(got[1]) < 0.3 && fabs(got[2]) < 0.3);
	/* Adobe RGB's primaries in cHRM and gamma 2.2. */
	CHECK(target_lab(write_png("wide.png", &wide), got) == 0);
	for (int c = 0; c < 3; c++)
		lin[c] = pow(wide.v[c] / 255.0, 1 / 0.45455);
	linear_to_lab(lin, adobe, want);
	x = (color_lab){ got[0], got[1], got[2] };
	y = (color_lab){ want[0], want[1], want[2] };
	vt_srgb_to_lab(40, 200, 60, srgb);
	fprintf(stderr, "gAMA 2.2 and Adobe RGB cHRM (40, 200, 60): Lab %.2f %.2f %.2f, from the "
		"formulas %.2f %.2f %.2f, as sRGB %.2f %.2f %.2f\n", got[0], got[1], got[2], want[0],
		want[1], want[2], srgb[0], srgb[1], srgb[2]);
	CHECK(color_de00(&x, &y) < 0.5);
	y = (color_lab){ srgb[0], srgb[1], srgb[2] };
	CHECK(color_de00(&x, &y) > 3);
	/* An sRGB chunk wins over gAMA and cHRM, as the PNG specification says. */
	CHECK(target_lab(write_png("both.png", &both), got) == 0);
	x = (color_lab){ got[0], got[1], got[2] };
	CHECK(color_de00(&x, &y) < 0.3);
}

/* `measure FILE --roi 0,0,4,4`: its exit status and stderr. */
static int measure_stderr(const char *file, char **err)
{
	const char *args[] = { "measure", file, "--roi", "0,0,4,4", NULL };
	char *out = NULL;
	int st = test_brushloop(args, &out, err);

	free(out);
	return st;
}

static unsigned char *profile_bytes(cmsHPROFILE h, size_t *len)
{
	cmsUInt32Number n = 0;
	unsigned char *b;

	cmsSaveProfileToMem(h, NULL, &n);
	b = malloc(n);
	cmsSaveProfileToMem(h, b, &n);
	cmsCloseProfile(h);
	*len = n;
	return b;
}

/*
 * A PNG whose iCCP holds exactly the bytes given: libpng checks a profile as
 * it writes one and drops a bad one, so Pillow (which does not) writes it.
 */
static const char *png_with_raw_iccp(const char *name, const unsigned char *icc, size_t len)
{
	static const char script[] =
		"import sys\n"
		"from PIL import Image\n"
		"Image.new('RGB', (16, 16), (200, 100, 50)).save(sys.argv[1],\n"
		"    icc_profile=open(sys.argv[2], 'rb').read())\n";
	char py[4096], prof[4096], path[4096];
	const char *argv[] = { "/usr/bin/python3", py, path, prof, NULL };

	snprintf(py, sizeof(py), "%s", test_write_file("raw_iccp.py", script));
	snprintf(prof, sizeof(prof), "%s.icc", vt_path(name));
	snprintf(path, sizeof(path), "%s", vt_path(name));
	vt_write_bytes(prof, icc, len);
	CHECK_MSG(test_spawn(argv, NULL, NULL, NULL) == 0, "Pillow could not write %s", name);
	return vt_path(name);
}

TEST(png_with_a_grey_or_broken_iccp_warns)
{
	cmsToneCurve *g = cmsBuildGamma(NULL, 2.2);
	size_t glen, slen;
	unsigned char *grey = profile_bytes(cmsCreateGrayProfile(cmsD50_xyY(), g), &glen);
	unsigned char *srgb = profile_bytes(cmsCreate_sRGBProfile(), &slen);
	char *err = NULL;

	cmsFreeToneCurve(g);
	/* A grey profile on an RGB picture: libpng drops it; brushloop says so. */
	CHECK(measure_stderr(png_with_raw_iccp("grey-iccp.png", grey, glen), &err) == 0);
	CHECK_STR_CONTAINS(err, "grey-iccp.png: embedded ICC profile (iCCP) ignored");
	CHECK_STR_CONTAINS(err, "taking the picture as sRGB");
	free(err);
	/* A profile whose header says it is longer than it is. */
	srgb[3] = (unsigned char)(srgb[3] + 16);
	CHECK(measure_stderr(png_with_raw_iccp("short-iccp.png", srgb, slen), &err) == 0);
	CHECK_STR_CONTAINS(err, "short-iccp.png: embedded ICC profile (iCCP) ignored");
	free(err);
	free(grey);
	free(srgb);
}

TEST(measure_says_a_frame_s_own_profile_is_ignored)
{
	size_t slen;
	unsigned char *srgb = profile_bytes(cmsCreate_sRGBProfile(), &slen);
	struct png_spec s = { 8, { 200, 100, 50 }, 0, NULL, 0, srgb, slen };
	struct png_spec gama = { 8, { 200, 100, 50 }, 1.0, NULL, 0, NULL, 0 };
	struct png_spec plain = { 8, { 200, 100, 50 }, 0, NULL, 0, NULL, 0 };
	char *err = NULL;

	CHECK(measure_stderr(write_png("frame-iccp.png", &s), &err) == 0);
	CHECK_STR_CONTAINS(err, "frame-iccp.png: its embedded colour profile (iCCP) is ignored");
	free(err);
	CHECK(measure_stderr(write_png("frame-gama.png", &gama), &err) == 0);
	CHECK_STR_CONTAINS(err, "frame-gama.png: its embedded colour profile (gAMA) is ignored");
	free(err);
	CHECK(measure_stderr(write_png("frame-plain.png", &plain), &err) == 0);
	CHECK(err && !strstr(err, "is ignored"));
	free(err);
	free(srgb);
}

TEST(sixteen_bit_png_keeps_its_precision_to_the_target_lab)
{
	/* Half way between two 8-bit codes: 8 bits would be 0.5 code (0.2 L*) off. */
	const unsigned v[3] = { 257 * 100 + 128, 257 * 60 + 128, 257 * 30 + 128 };
	struct png_spec s = { 16, { v[0], v[1], v[2] }, 0, NULL, 0, NULL, 0 };
	struct machine *m = malloc(sizeof(*m));
	struct plan_target t;
	bl_err err = { 0 };
	double want[3];
	const char *path = write_png("deep.png", &s);
	float got[3];

	vt_srgb_to_lab(v[0] / 257.0, v[1] / 257.0, v[2] / 257.0, want);
	CHECK(target_lab(path, got) == 0);
	fprintf(stderr, "16-bit (%u, %u, %u): target L* %.4f a* %.4f b* %.4f, from the formulas "
		"%.4f %.4f %.4f\n", v[0], v[1], v[2], got[0], got[1], got[2], want[0], want[1], want[2]);
	for (int c = 0; c < 3; c++)
		CHECK_NEAR(got[c], want[c], 0.02);
	/* The planner's target, through plan_target_load, is the same. */
	{
		char mp[4096];

		snprintf(mp, sizeof(mp), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
		CHECK(m && machine_load(mp, m, &err) == 0);
	}
	CHECK_MSG(plan_target_load(path, m, &t, &err) == 0, "%s", err.msg);
	for (int c = 0; c < 3 && t.lab.px; c++)
		CHECK_NEAR(t.lab.px[c], want[c], 0.02);
	plan_target_free(&t);
	free(m);
}

TEST_MAIN(T(exif_orientation_turns_jpegs_as_viewers_show_them),
	  T(plan_and_estimate_paint_a_phone_photo_upright),
	  T(png_gama_and_chrm_without_iccp_are_honoured), T(png_with_a_grey_or_broken_iccp_warns),
	  T(measure_says_a_frame_s_own_profile_is_ignored),
	  T(sixteen_bit_png_keeps_its_precision_to_the_target_lab))
