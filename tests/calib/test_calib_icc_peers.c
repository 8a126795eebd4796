/* test_calib_icc_peers.c: brushloop's camera profiles in the colour tools people have (ArgyllCMS's iccdump, profcheck and xicclu, Pillow), each agreeing with `brushloop measure --profile`. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "color/color.h"

/*
 * The patches every case reads: the chart's patches at the code values the
 * session fitted (to 8 bits, as a frame holds them), then two beyond the
 * chart's white (the camera's own white, and just below it).
 */
#define EXTRA 2
#define MAX_P (CALIB_MAX_PATCHES + EXTRA)
#define SIDE_PX 16

struct peers {
	const char *model;
	char icc[4096];
	int n, chart_n;                /* patches, of which from the chart */
	int code[MAX_P][3];            /* 0..255 */
	double ref[MAX_P][3];          /* the chart's Lab (white for the extras) */
	color_lab bl[MAX_P];           /* brushloop measure through the profile */
	double bl_de00[MAX_P];         /* brushloop measure against ref */
};

/* The patches as a picture and its truth file, so `measure --truth` reads each one. */
static int write_patches(const struct peers *p, const char *png, const char *truth)
{
	struct img im = { 0 };
	cJSON *t = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(t, "patches");
	bl_err err = { 0 };
	int rc;

	if (img_alloc(&im, SIDE_PX * p->n, SIDE_PX, &err))
		return -1;
	for (int i = 0; i < p->n; i++) {
		cJSON *pj = cJSON_CreateObject();
		const int roi[4] = { i * SIDE_PX + 2, 2, SIDE_PX - 4, SIDE_PX - 4 };
		char name[32];

		for (int y = 0; y < SIDE_PX; y++)
			for (int x = 0; x < SIDE_PX; x++)
				for (int c = 0; c < 3; c++)
					im.px[3 * ((size_t)y * im.w + i * SIDE_PX + x) + c] =
						(unsigned char)p->code[i][c];
		snprintf(name, sizeof(name), "p%d", i);
		cJSON_AddStringToObject(pj, "name", name);
		cJSON_AddItemToObject(pj, "roi", cJSON_CreateIntArray(roi, 4));
		json_add_vec(pj, "lab", p->ref[i], 3);
		cJSON_AddItemToArray(arr, pj);
	}
	rc = img_save(png, &im, &err) || json_write_file(truth, t, &err) ? -1 : 0;
	if (rc)
		fprintf(stderr, "write_patches: %s\n", err.msg);
	img_free(&im);
	cJSON_Delete(t);
	return rc;
}

/* Makes a profile of model with calib camera and reads every patch through it with measure. */
static int make(struct peers *p, const char *model)
{
	char name[64], *out = NULL;
	const char *png, *truth;
	cJSON *root, *it;
	int rc, i = 0;

	memset(p, 0, sizeof(*p));
	p->model = model;
	snprintf(name, sizeof(name), "%s.icc", model);
	snprintf(p->icc, sizeof(p->icc), "%s", tmp_path(name));
	{
		const char *a[] = { "calib", "camera", "--frame", chart_seed1(), "--model", model, "-o",
				    p->icc, "--json", "--force", NULL };

		rc = run_cli(a, &out, NULL);
	}
	root = rc <= 1 && out ? cJSON_Parse(out) : NULL;
	free(out);
	if (!root)
		return -1;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "patches")) {
		for (int c = 0; c < 3; c++) {
			p->code[i][c] = (int)lround(
				255 * cJSON_GetArrayItem(cJSON_GetObjectItem(it, "code"), c)->valuedouble);
			p->ref[i][c] = cJSON_GetArrayItem(cJSON_GetObjectItem(it, "ref_lab"), c)->valuedouble;
		}
		i++;
	}
	cJSON_Delete(root);
	p->chart_n = i;
	for (int e = 0; e < EXTRA; e++, i++)
		for (int c = 0; c < 3; c++) {
			p->code[i][c] = 255 - 8 * e;
			p->ref[i][c] = c ? 0 : 100;
		}
	p->n = i;
	snprintf(name, sizeof(name), "%s-patches.png", model);
	png = tmp_path(name);
	snprintf(name, sizeof(name), "%s-patches.json", model);
	truth = tmp_path(name);
	if (write_patches(p, png, truth))
		return -1;
	{
		const char *a[] = { "measure", png, "--truth", truth, "--profile", p->icc, "--json",
				    NULL };

		rc = run_cli(a, &out, NULL);
	}
	root = rc == 0 && out ? cJSON_Parse(out) : NULL;
	free(out);
	if (!root)
		return -1;
	i = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "patches")) {
		cJSON *lab = cJSON_GetObjectItem(it, "lab");

		if (i >= p->n)
			break;
		p->bl[i].L = cJSON_GetArrayItem(lab, 0)->valuedouble;
		p->bl[i].a = cJSON_GetArrayItem(lab, 1)->valuedouble;
		p->bl[i].b = cJSON_GetArrayItem(lab, 2)->valuedouble;
		p->bl_de00[i] = cJSON_GetObjectItem(it, "de00")->valuedouble;
		i++;
	}
	cJSON_Delete(root);
	return i == p->n && p->chart_n == 24 ? 0 : -1;
}

/* Reads up to max "L a b" triples from a tool's output; returns how many. */
static int read_labs(const char *text, color_lab *lab, int max)
{
	const char *s = text;
	int n = 0;

	while (s && n < max) {
		char *e;

		lab[n].L = strtod(s, &e);
		lab[n].a = strtod(e, &e);
		lab[n].b = strtod(e, &e);
		if (e == s)
			break;
		s = e;
		n++;
	}
	return n;
}

static const char *const models[] = { "matrix", "root-polynomial" };

TEST(iccdump_reads_the_profile_as_version_2_4_input)
{
	for (int m = 0; m < 2; m++) {
		struct peers p;
		const char *a[] = { "iccdump", "-v3", p.icc, NULL };
		char *out = NULL, *err = NULL;

		CHECK(make(&p, models[m]) == 0);
		CHECK_MSG(test_spawn(a, NULL, &out, &err) == 0, "iccdump: %s", err ? err : "");
		CHECK_STR_CONTAINS(out, "Version      = 2.4.0");
		CHECK_STR_CONTAINS(out, "Device Class = Input");
		CHECK_STR_CONTAINS(out, m ? "Conn. Space  = Lab" : "Conn. Space  = XYZ");
		CHECK_STR_CONTAINS(out, m ? "'A2B0'" : "'rTRC'");
		free(out);
		free(err);
	}
}

/* The chart's patches as ArgyllCMS's .ti3 (CGATS: device RGB 0..100, Lab D50). */
static const char *write_ti3(const struct peers *p)
{
	const char *path = tmp_path("chart.ti3");
	FILE *f = fopen(path, "w");

	if (!f)
		return NULL;
	fprintf(f, "CTI3\n\nDESCRIPTOR \"brushloop chart patches\"\nORIGINATOR \"brushloop tests\"\n"
		   "DEVICE_CLASS \"INPUT\"\nCOLOR_REP \"LAB_RGB\"\n\nNUMBER_OF_FIELDS 7\n"
		   "BEGIN_DATA_FORMAT\nSAMPLE_ID RGB_R RGB_G RGB_B LAB_L LAB_A LAB_B\n"
		   "END_DATA_FORMAT\n\nNUMBER_OF_SETS %d\nBEGIN_DATA\n", p->chart_n);
	for (int i = 0; i < p->chart_n; i++)
		fprintf(f, "%d %.6f %.6f %.6f %.4f %.4f %.4f\n", i + 1, p->code[i][0] * 100.0 / 255,
			p->code[i][1] * 100.0 / 255, p->code[i][2] * 100.0 / 255, p->ref[i][0],
			p->ref[i][1], p->ref[i][2]);
	fprintf(f, "END_DATA\n");
	return fclose(f) == 0 ? path : NULL;
}

TEST(profcheck_finds_the_errors_measure_finds)
{
	for (int m = 0; m < 2; m++) {
		struct peers p;
		const char *ti3;
		char *out = NULL, *err = NULL, *line;
		double worst = 0, avg = -1, bl_avg = 0;
		int seen = 0;

		CHECK(make(&p, models[m]) == 0);
		ti3 = write_ti3(&p);
		CHECK(ti3 != NULL);
		{
			const char *a[] = { "profcheck", "-k", "-v2", ti3, p.icc, NULL };

			CHECK_MSG(test_spawn(a, NULL, &out, &err) == 0, "profcheck: %s", err ? err : "");
		}
		/* "[0.537206] 1: r g b -> L a b should be L a b", then the summary line. */
		for (line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
			double de;
			int id;

			if (sscanf(line, "[%lf] %d:", &de, &id) == 2 && id >= 1 && id <= p.chart_n) {
				worst = fmax(worst, fabs(de - p.bl_de00[id - 1]));
				seen++;
			}
			if (strncmp(line, "Profile check complete", 22) == 0 && strstr(line, "avg. = "))
				avg = atof(strstr(line, "avg. = ") + 7);
		}
		for (int i = 0; i < p.chart_n; i++)
			bl_avg += p.bl_de00[i] / p.chart_n;
		fprintf(stderr, "%s: profcheck CIEDE2000 mean %.4f, brushloop measure %.4f; per patch "
			"they differ by at most %.4f\n", models[m], avg, bl_avg, worst);
		CHECK(seen == p.chart_n);
		CHECK(worst <= 0.5);
		CHECK(avg >= 0 && fabs(avg - bl_avg) <= 0.5);
		free(out);
		free(err);
	}
}

TEST(xicclu_reads_each_colour_as_measure_does_white_clipped)
{
	for (int m = 0; m < 2; m++) {
		struct peers p;
		const char *in = tmp_path("xicclu.in");
		FILE *f = fopen(in, "w");
		char *out = NULL, *err = NULL;
		color_lab lab[MAX_P];
		double worst = 0, white_raw = 0;
		int n = 0;

		CHECK(make(&p, models[m]) == 0);
		CHECK(f != NULL);
		for (int i = 0; f && i < p.n; i++)
			fprintf(f, "%d %d %d\n", p.code[i][0], p.code[i][1], p.code[i][2]);
		if (f)
			fclose(f);
		{
			/* Forward, relative colorimetric, Lab out, device values 0..255. */
			const char *a[] = { "xicclu", "-v0", "-ff", "-ir", "-pl", "-s", "255", p.icc, NULL };

			CHECK_MSG(test_spawn(a, in, &out, &err) == 0, "xicclu: %s", err ? err : "");
		}
		n = read_labs(out, lab, p.n);
		for (int i = 0; i < n; i++) {
			if (i == p.chart_n)
				white_raw = lab[i].L;
			/* brushloop's decision: nothing reads lighter than the chart's white. */
			lab[i].L = fmin(lab[i].L, 100.0);
			worst = fmax(worst, color_de00(&lab[i], &p.bl[i]));
		}
		fprintf(stderr, "%s: xicclu and brushloop measure differ by at most %.4f CIEDE2000 over "
			"%d colours; code 255 grey: xicclu L* %.2f, brushloop %.2f\n", models[m], worst,
			n, white_raw, p.bl[p.chart_n].L);
		CHECK(n == p.n);
		CHECK(worst <= 0.5);
		CHECK_NEAR(p.bl[p.chart_n].L, 100.0, 1e-6);
		/* The matrix extrapolates beyond the chart's white, so the clip is what agreement rests on. */
		if (m == 0)
			CHECK(white_raw > 101.0);
		free(out);
		free(err);
	}
}

TEST(pillow_converts_each_colour_as_measure_does)
{
	static const char script[] =
		"import sys\n"
		"from PIL import Image, ImageCms\n"
		"im = Image.open(sys.argv[2]).convert('RGB')\n"
		"t = ImageCms.buildTransform(ImageCms.getOpenProfile(sys.argv[1]),\n"
		"                            ImageCms.createProfile('LAB'), 'RGB', 'LAB')\n"
		"lab = ImageCms.applyTransform(im, t)\n"
		"for i in range(int(sys.argv[3])):\n"
		"    L, a, b = lab.getpixel((i * 16 + 8, 8))\n"
		"    print(L * 100 / 255, a - 128, b - 128)\n";
	const char *py = test_write_file("pillow_lab.py", script);
	char pypath[4096];

	snprintf(pypath, sizeof(pypath), "%s", py);
	for (int m = 0; m < 2; m++) {
		struct peers p;
		char png[4096], count[16], name[64], *out = NULL, *err = NULL;
		color_lab lab[MAX_P];
		double worst = 0;
		int n = 0;

		CHECK(make(&p, models[m]) == 0);
		snprintf(name, sizeof(name), "%s-patches.png", models[m]);
		snprintf(png, sizeof(png), "%s", tmp_path(name));
		snprintf(count, sizeof(count), "%d", p.n);
		{
			/* Debian's Pillow is importable by the system interpreter only. */
			const char *a[] = { "/usr/bin/python3", pypath, p.icc, png, count, NULL };

			CHECK_MSG(test_spawn(a, NULL, &out, &err) == 0, "Pillow: %s", err ? err : "");
		}
		n = read_labs(out, lab, p.n);
		/* LittleCMS's 8-bit transforms map code 255 to white exactly (its white fix-up). */
		for (int i = 0; i < n; i++)
			if (i != p.chart_n)
				worst = fmax(worst, color_de00(&lab[i], &p.bl[i]));
		/* 8-bit Lab: L* in steps of 0.39, a* and b* of 1. */
		fprintf(stderr, "%s: Pillow (8-bit Lab) and brushloop measure differ by at most %.3f "
			"CIEDE2000 over %d colours (code 255 aside)\n", models[m], worst, n - 1);
		CHECK(n == p.n);
		CHECK(worst <= 1.0);
		free(out);
		free(err);
	}
}

/* The ICC header's version bytes (8 and 9) of a profile file. */
static int header_version(const char *path)
{
	unsigned char h[12];
	FILE *f = fopen(path, "rb");
	int ok = f && fread(h, 1, sizeof(h), f) == sizeof(h);

	if (f)
		fclose(f);
	return ok ? h[8] * 100 + (h[9] >> 4) * 10 + (h[9] & 15) : -1;
}

TEST(version_4_on_request_reads_as_version_2)
{
	for (int m = 0; m < 2; m++) {
		struct peers p;
		const char *v4 = tmp_path("v4.icc");
		const char *a[] = { "calib", "camera", "--frame", chart_seed1(), "--model", models[m],
				    "--icc-version", "4", "-o", v4, "--force", NULL };
		const char *bad[] = { "calib", "camera", "--frame", chart_seed1(), "--icc-version", "3",
				      "-o", tmp_path("v3.icc"), NULL };
		char *err = NULL;
		double worst = 0;

		CHECK(make(&p, models[m]) == 0);
		CHECK(header_version(p.icc) == 240);
		CHECK(run_cli(a, NULL, NULL) <= 1);
		CHECK(header_version(v4) == 430);
		/* The same model through both: v2's curves are tables of v4's parametric ones. */
		{
			struct meas_profile *a2 = NULL, *a4 = NULL;
			bl_err e = { 0 };

			CHECK(meas_profile_open(p.icc, &a2, &e) == 0);
			CHECK(meas_profile_open(v4, &a4, &e) == 0);
			for (int i = 0; a2 && a4 && i < p.n; i++) {
				double v[3] = { p.code[i][0] / 255.0, p.code[i][1] / 255.0,
						p.code[i][2] / 255.0 };
				color_lab x, y;

				meas_profile_lab(a2, v, &x);
				meas_profile_lab(a4, v, &y);
				worst = fmax(worst, color_de00(&x, &y));
			}
			meas_profile_close(a2);
			meas_profile_close(a4);
		}
		fprintf(stderr, "%s: v2.4 and v4.3 profiles differ by at most %.4f CIEDE2000\n",
			models[m], worst);
		CHECK(worst < 0.05);
		CHECK(run_cli(bad, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "--icc-version");
		free(err);
		unlink(v4);
	}
}

/* profcheck -k's mean CIEDE2000 ("avg. = ") and how many patch lines (-v2) it printed; -1 when it fails. */
static double profcheck_mean(const char *ti3, const char *icc, int *patches)
{
	const char *a[] = { "profcheck", "-k", "-v2", ti3, icc, NULL };
	char *out = NULL, *err = NULL;
	double avg = -1;

	*patches = 0;
	if (test_spawn(a, NULL, &out, &err) != 0)
		fprintf(stderr, "profcheck %s %s: %s\n", ti3, icc, err ? err : "");
	for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		double de;
		int id;

		if (sscanf(line, "[%lf] %d:", &de, &id) == 2)
			(*patches)++;
		if (strncmp(line, "Profile check complete", 22) == 0 && strstr(line, "avg. = "))
			avg = atof(strstr(line, "avg. = ") + 7);
	}
	free(out);
	free(err);
	return avg;
}

/*
 * calib camera --ti3: the measurements as Argyll's .ti3. profcheck reads
 * them against the profile made of them (the fit figure, to the rounding),
 * and a fresh chart's against it (Argyll's own held-out check, beside
 * brushloop's leave-one-out one); colprof makes a profile of them; the
 * profile carries them as its 'targ' tag.
 */
TEST(calib_cameras_ti3_reads_in_profcheck_and_colprof_and_is_the_targ_tag)
{
	const char *icc = tmp_path("ti3.icc"), *ti3 = tmp_path("ti3.ti3");
	char icc_p[4096], ti3_p[4096], chart2[4096], *out = NULL, *err = NULL;
	double fit, held, same, fresh, argyll;
	int n_same = 0, n_fresh = 0, n_argyll = 0;

	snprintf(icc_p, sizeof(icc_p), "%s", icc);
	snprintf(ti3_p, sizeof(ti3_p), "%s", ti3);
	snprintf(chart2, sizeof(chart2), "%s", tmp_path("chart2.jpg"));
	sim_frame(SIM_SCENE_CHART, 2, 0, NULL, chart2, NULL);
	{
		const char *a[] = { "calib", "camera", "--frame", chart_seed1(), "-o", icc_p, "--ti3", ti3_p,
				    "--json", "--force", NULL };

		CHECK_MSG(run_cli(a, &out, &err) <= 1, "calib camera --ti3: %s", err ? err : "");
	}
	fit = json_at(out, "fit.mean_de00");
	held = json_at(out, "held_out.mean_de00");
	CHECK(strstr(out ? out : "", "\"ti3\"") != NULL);
	free(out);
	free(err);
	same = profcheck_mean(ti3_p, icc_p, &n_same);
	{
		const char *a[] = { "calib", "camera", "--frame", chart2, "-o", tmp_path("ti3-2.icc"),
				    "--ti3", tmp_path("ti3-2.ti3"), "--force", NULL };

		CHECK(run_cli(a, NULL, NULL) <= 1);
	}
	fresh = profcheck_mean(tmp_path("ti3-2.ti3"), icc_p, &n_fresh);
	{
		/* colprof takes the .ti3's base name and writes the profile beside it (-O names it). */
		char base[4096], argyll_icc[4096];
		const char *a[] = { "colprof", "-qm", "-as", "-O", argyll_icc, base, NULL };

		snprintf(base, sizeof(base), "%.*s", (int)(strlen(ti3_p) - 4), ti3_p);
		snprintf(argyll_icc, sizeof(argyll_icc), "%s", tmp_path("argyll.icc"));
		CHECK_MSG(test_spawn(a, NULL, &out, &err) == 0, "colprof: %s", err ? err : "");
		free(out);
		free(err);
		argyll = profcheck_mean(ti3_p, argyll_icc, &n_argyll);
	}
	fprintf(stderr, "profcheck -k CIEDE2000 mean: brushloop's .ti3 against its profile %.4f "
		"(brushloop's fit %.4f, held out %.4f); a fresh chart (seed 2) against it %.4f; "
		"against colprof's matrix profile of the .ti3 %.4f\n", same, fit, held, fresh, argyll);
	CHECK(n_same == 24 && n_fresh == 24 && n_argyll == 24);
	CHECK(same >= 0 && fabs(same - fit) <= 0.01);
	CHECK(fresh > 0 && fresh <= held + 0.25);
	CHECK(argyll > 0 && argyll < 3.0);
	{
		const char *a[] = { "iccdump", "-v3", "-t", "targ", icc_p, NULL };

		CHECK_MSG(test_spawn(a, NULL, &out, &err) == 0, "iccdump: %s", err ? err : "");
		CHECK_STR_CONTAINS(out, "CTI3");
		CHECK_STR_CONTAINS(out, "DEVICE_CLASS \"INPUT\"");
		free(out);
		free(err);
	}
}

TEST_MAIN(T(iccdump_reads_the_profile_as_version_2_4_input),
	  T(profcheck_finds_the_errors_measure_finds),
	  T(xicclu_reads_each_colour_as_measure_does_white_clipped),
	  T(pillow_converts_each_colour_as_measure_does), T(version_4_on_request_reads_as_version_2),
	  T(calib_cameras_ti3_reads_in_profcheck_and_colprof_and_is_the_targ_tag))
