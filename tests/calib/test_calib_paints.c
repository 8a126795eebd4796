/* test_calib_paints.c: paint characterisation: the card's layout, file and SVG; a simulated painted card measured into a palette the mixing model takes, against the simulator's truth; cards that cannot be read. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "color/mix.h"

static const char *palette_path(void)
{
	return src_path("palettes/kimera-13.json");
}

TEST(the_card_is_laid_out_saved_and_drawn)
{
	struct palette *p = malloc(sizeof(*p));
	struct calib_card *c = malloc(sizeof(*c)), *d = malloc(sizeof(*d));
	const double tints[3] = { 0.5, 0.2, 0.05 };
	bl_err err = { 0 };
	char *svg;

	CHECK(palette_load(palette_path(), p, &err) == 0);
	CHECK(calib_card_layout(p, 3, tints, c, &err) == 0);
	/* Each paint's masstone and three tints; the white alone. */
	CHECK(c->n == 1 + 4 * (p->n_paints - 1));
	for (int i = 0; i < c->n; i++)
		for (int k = 0; k < i; k++)
			CHECK(c->s[i].rect_mm[0] + c->s[i].rect_mm[2] <= c->s[k].rect_mm[0] ||
			      c->s[k].rect_mm[0] + c->s[k].rect_mm[2] <= c->s[i].rect_mm[0] ||
			      c->s[i].rect_mm[1] + c->s[i].rect_mm[3] <= c->s[k].rect_mm[1] ||
			      c->s[k].rect_mm[1] + c->s[k].rect_mm[3] <= c->s[i].rect_mm[1]);
	CHECK(calib_card_save(tmp_path("card.json"), c, &err) == 0);
	CHECK_MSG(calib_card_load(tmp_path("card.json"), d, &err) == 0, "%s", err.msg);
	CHECK(d->n == c->n && d->n_tints == 3 && strcmp(d->white, "white") == 0);
	CHECK_NEAR(d->s[5].rect_mm[1], c->s[5].rect_mm[1], 1e-9);
	CHECK(calib_card_svg(c, &svg, &err) == 0);
	CHECK_STR_CONTAINS(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"");
	CHECK_STR_CONTAINS(svg, "blue green shade");
	CHECK_STR_CONTAINS(svg, "20% paint");
	{
		/* The header's box (x, y - 3.5 .. x + textLength, y) clear of every marker's sheet (4S/3 across) and on the card. */
		const char *t = strstr(svg, "<text x=\"");
		double x = 0, y = 0, len = 0, S = c->marker_size_mm, in = c->marker_inset_mm;
		const double mc[4][2] = { { in, in }, { c->size_mm[0] - in, in }, { c->size_mm[0] - in, c->size_mm[1] - in },
					  { in, c->size_mm[1] - in } };

		CHECK(t && sscanf(t, "<text x=\"%lf\" y=\"%lf\"", &x, &y) == 2);
		CHECK(t && strstr(t, "textLength=\"") && sscanf(strstr(t, "textLength=\"") + 12, "%lf", &len) == 1);
		CHECK(x >= 0 && x + len <= c->size_mm[0] && y - 3.5 >= 0);
		for (int k = 0; k < 4; k++)
			CHECK_MSG(x + len <= mc[k][0] - 2 * S / 3 || x >= mc[k][0] + 2 * S / 3 ||
				  y <= mc[k][1] - 2 * S / 3 || y - 3.5 >= mc[k][1] + 2 * S / 3,
				  "the header (%g..%g, %g..%g mm) runs through marker %d", x, x + len, y - 3.5, y, k);
	}
	free(svg);
	/* Names are escaped for XML. */
	snprintf(c->palette, sizeof(c->palette), "a <b> & 'c'");
	CHECK(calib_card_svg(c, &svg, &err) == 0);
	CHECK_STR_CONTAINS(svg, "a &lt;b&gt; &amp; &apos;c&apos;");
	free(svg);
	{
		const double bad[1] = { 1.0 };

		CHECK(calib_card_layout(p, 1, bad, c, &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, "strictly between");
	}
	free(p);
	free(c);
	free(d);
}

TEST(card_files_are_read_strictly)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"kind\":\"paint-card\",\"version\":1,\"palette\":\"p\",\"white\":\"white\","
		  "\"size_mm\":[200,100],\"marker_size_mm\":20,\"marker_inset_mm\":15,\"tints\":[0.5],\"swatches\":["
		  "{\"paint\":\"red\",\"fraction\":1,\"rect_mm\":[30,30,18,18]}]}", "no masstone swatch" },
		{ "{\"kind\":\"paint-card\",\"version\":1,\"palette\":\"p\",\"white\":\"white\","
		  "\"size_mm\":[200,100],\"marker_size_mm\":20,\"marker_inset_mm\":15,\"tints\":[0.5],\"swatches\":["
		  "{\"paint\":\"white\",\"fraction\":1,\"rect_mm\":[190,30,18,18]}]}", "must lie on" },
		{ "{\"kind\":\"paint-card\",\"version\":1,\"palette\":\"p\",\"white\":\"white\","
		  "\"size_mm\":[200,100],\"marker_size_mm\":20,\"marker_inset_mm\":15,\"tints\":[0.5],\"swatches\":["
		  "{\"paint\":\"white\",\"fraction\":1,\"rect_mm\":[30,30,18,18]},"
		  "{\"paint\":\"white\",\"fraction\":1,\"rect_mm\":[60,30,18,18]}]}", "twice" },
		{ "{\"kind\":\"paint-card\",\"version\":1,\"palette\":\"p\",\"white\":\"white\","
		  "\"size_mm\":[200,100],\"marker_size_mm\":20,\"marker_inset_mm\":15,\"tints\":[1.5],\"swatches\":[]}", "tints" },
		{ "{\"kind\":\"paint-card\",\"version\":1,\"palette\":\"p\",\"white\":\"white\","
		  "\"size_mm\":[200,100],\"marker_size_mm\":20,\"marker_inset_mm\":15,\"tints\":[],\"swatches\":["
		  "{\"paint\":\"white\",\"fraction\":1,\"rect_mm\":[30,30,18,18],\"ink\":2}]}", "ink" },
	};
	struct calib_card *c = malloc(sizeof(*c));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[32];
		bl_err err = { 0 };

		snprintf(name, sizeof(name), "card%zu.json", i);
		CHECK(calib_card_load(test_write_file(name, bad[i].text), c, &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, bad[i].want);
		CHECK_STR_CONTAINS(err.msg, name);
	}
	free(c);
}

/* Calibrates the camera on the chart, lays out a card and has the simulator paint it. */
static void setup(const char **icc, const char **card, const char **frame, const char **truth)
{
	const char *chart = tmp_path("chart.jpg");
	static char i[4096], c[4096], f[4096], t[4096];
	const char *cam[] = { "calib", "camera", "--frame", chart, "-o", NULL, NULL };
	const char *lay[] = { "calib", "paints", "--palette", palette_path(), "--card", NULL,
			      "--layout", "--svg", NULL, NULL };
	const char *ren[] = { "sim", "render", "--seed", "3", "--scene", "card", "--card", NULL, "-o",
			      NULL, "--truth", NULL, NULL };

	snprintf(i, sizeof(i), "%s", tmp_path("cam.icc"));
	snprintf(c, sizeof(c), "%s", tmp_path("card.json"));
	snprintf(f, sizeof(f), "%s", tmp_path("card.jpg"));
	snprintf(t, sizeof(t), "%s", tmp_path("card-truth.json"));
	sim_frame(SIM_SCENE_CHART, 3, 0, NULL, chart, NULL);
	cam[5] = i;
	lay[5] = c;
	lay[8] = tmp_path("card.svg");
	ren[7] = c;
	ren[9] = f;
	ren[11] = t;
	CHECK(run_cli(cam, NULL, NULL) == 0);
	CHECK(run_cli(lay, NULL, NULL) == 0);
	CHECK(file_exists(tmp_path("card.svg")));
	CHECK(run_cli(ren, NULL, NULL) == 0);
	*icc = i;
	*card = c;
	*frame = f;
	*truth = t;
}

TEST(a_painted_card_becomes_a_palette_the_mixing_model_takes)
{
	const char *icc, *card, *frame, *truth;
	char out[4096];
	const char *args[] = { "calib", "paints", "--palette", NULL, "--card", NULL, "--frame", NULL,
			       "--profile", NULL, "--truth", NULL, "-o", out, "--json", NULL };
	struct palette *p = malloc(sizeof(*p));
	struct mix_model *m = malloc(sizeof(*m));
	bl_err err = { 0 };
	char *text;

	setup(&icc, &card, &frame, &truth);
	snprintf(out, sizeof(out), "%s", tmp_path("measured.json"));
	args[3] = palette_path();
	args[5] = card;
	args[7] = frame;
	args[9] = icc;
	args[11] = truth;
	CHECK(run_cli(args, &text, NULL) == 0);
	fprintf(stderr, "card against the truth: mean %.2f, max %.2f; last tints held out: mean %.2f, "
		"max %.2f\n", json_at(text, "truth.mean_de00"), json_at(text, "truth.max_de00"),
		json_at(text, "held_out_tints.mean_de00"), json_at(text, "held_out_tints.max_de00"));
	/* The camera's measurement of paint it never saw in calibration. */
	CHECK(json_at(text, "truth.mean_de00") < 2.0);
	CHECK(json_at(text, "truth.max_de00") < 4.0);
	CHECK(json_at(text, "truth.patches") == 37);
	CHECK(json_at(text, "held_out_tints.patches") == 12);
	CHECK(json_at(text, "held_out_tints.mean_de00") < 3.0);
	free(text);
	/* The file loads, every paint measured, and the model fits K and S to it. */
	CHECK_MSG(palette_load(out, p, &err) == 0, "%s", err.msg);
	CHECK(p->n_paints == 13);
	for (int i = 0; i < p->n_paints; i++) {
		CHECK(p->paints[i].has_measured && !p->paints[i].has_spectral);
		CHECK(p->paints[i].n_tints == (strcmp(p->paints[i].name, "white") ? 2 : 0));
	}
	CHECK_MSG(mix_model_from_palette(p, m, &err) == 0, "%s", err.msg);
	{
		const char *mix[] = { "mix", "lab:60,20,10", "--palette", out, "--json", NULL };

		CHECK(run_cli(mix, &text, NULL) == 0);
		CHECK(json_at(text, "de00") < 3.0);
		free(text);
	}
	free(p);
	free(m);
}

static void edit_frame(const char *in, const char *out, int x0, int y0, int x1, int y1,
		       unsigned char v)
{
	struct img im = { 0 };
	bl_err err = { 0 };

	if (img_load(in, 40000000, &im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++)
			memset(im.px + 3 * ((size_t)y * im.w + x), v, 3);
	img_save(out, &im, &err);
	img_free(&im);
}

TEST(a_card_that_cannot_be_read_says_why)
{
	const char *icc, *card, *frame, *truth;
	char out[4096];
	struct calib_truth_patch *t;
	int n;
	bl_err err = { 0 };
	char *e;
	const char *args[] = { "calib", "paints", "--palette", NULL, "--card", NULL, "--frame", NULL,
			       "--profile", NULL, "-o", out, NULL };

	setup(&icc, &card, &frame, &truth);
	snprintf(out, sizeof(out), "%s", tmp_path("never.json"));
	args[3] = palette_path();
	args[5] = card;
	args[9] = icc;
	CHECK(calib_truth_load(truth, &t, &n, NULL, &err) == 0);
	/* Unpainted: the red masstone's box shows the card's paper. */
	for (int i = 0; i < n; i++)
		if (strcmp(t[i].name, "red@1") == 0) {
			edit_frame(frame, tmp_path("unpainted.png"), t[i].roi.x - 3, t[i].roi.y - 3,
				   t[i].roi.x + t[i].roi.w + 3, t[i].roi.y + t[i].roi.h + 3, 232);
			args[7] = tmp_path("unpainted.png");
			CHECK(run_cli(args, NULL, &e) == 2);
			CHECK_STR_CONTAINS(e, "'red' at 1");
			free(e);
		}
	/* The card's markers out of the frame: the right half cut off. */
	edit_frame(frame, tmp_path("cut.png"), 900, 0, 1280, 720, 100);
	args[7] = tmp_path("cut.png");
	CHECK(run_cli(args, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "markers");
	free(e);
	CHECK(!file_exists(out));
	free(t);
}

/* The truth's box of swatch want ("red@1"), grown by g px: 0 when absent. */
static int truth_box(const char *truth, const char *want, int g, int box[4])
{
	struct calib_truth_patch *t;
	int n, found = 0;
	bl_err err = { 0 };

	if (calib_truth_load(truth, &t, &n, NULL, &err))
		return 0;
	for (int i = 0; i < n; i++)
		if (strcmp(t[i].name, want) == 0) {
			box[0] = t[i].roi.x - g;
			box[1] = t[i].roi.y - g;
			box[2] = t[i].roi.x + t[i].roi.w + g;
			box[3] = t[i].roi.y + t[i].roi.h + g;
			found = 1;
		}
	free(t);
	return found;
}

/* calib paints on an edited card frame, which must be refused: its exit status, its stderr in *e. */
static int measure_refused(const char *icc, const char *card, const char *edited, char **e)
{
	const char *out = tmp_path("never.json");
	const char *args[] = { "calib", "paints", "--palette", palette_path(), "--card", card, "--frame",
			       edited, "--profile", icc, "-o", out, NULL };
	int rc = run_cli(args, NULL, e);

	fprintf(stderr, "%s", *e ? *e : "");
	CHECK(!file_exists(out));
	return rc;
}

/*
 * The card frame with green's masstone box painted over red's (exchange 0:
 * its pixels copied there), or the two painted in each other's boxes
 * (exchange 1), saved as name; its stderr when calib paints refuses it.
 */
static char *boxes_edited(const char *name, int exchange)
{
	const char *icc, *card, *frame, *truth;
	int red[4], green[4];
	struct img im = { 0 };
	bl_err err = { 0 };
	char *e = NULL;

	setup(&icc, &card, &frame, &truth);
	CHECK(truth_box(truth, "red@1", 3, red) && truth_box(truth, "green@1", 3, green));
	CHECK(img_load(frame, 40000000, &im, &err) == 0);
	for (int y = 0; y < red[3] - red[1]; y++)
		for (int x = 0; x < red[2] - red[0]; x++) {
			unsigned char *r = im.px + 3 * ((size_t)(red[1] + y) * im.w + red[0] + x);
			unsigned char *g = im.px + 3 * ((size_t)(green[1] + y) * im.w + green[0] + x), t[3];

			memcpy(t, r, 3);
			memcpy(r, g, 3);
			if (exchange)
				memcpy(g, t, 3);
		}
	CHECK(img_save(tmp_path(name), &im, &err) == 0);
	img_free(&im);
	CHECK(measure_refused(icc, card, tmp_path(name), &e) == 2);
	return e;
}

TEST(a_paint_in_another_paints_box_is_named)
{
	char *e = boxes_edited("swapped.png", 0);

	CHECK_STR_CONTAINS(e, "swatch 'red' at 1");
	CHECK_STR_CONTAINS(e, "'green' at 1");
	free(e);
}

TEST(two_paints_in_each_others_boxes_are_named_both)
{
	char *e = boxes_edited("exchanged.png", 1);

	CHECK_STR_CONTAINS(e, "swatches 'red' at 1 and 'green' at 1 read as each other's paint");
	free(e);
}

TEST(an_unpainted_tint_is_named_unpainted)
{
	const char *icc, *card, *frame, *truth;
	int box[4];
	char *e;

	setup(&icc, &card, &frame, &truth);
	/* The violet's 10 % tint left bare: its box shows the card's paper. */
	CHECK(truth_box(truth, "violet@0.1", 3, box));
	edit_frame(frame, tmp_path("bare-tint.png"), box[0], box[1], box[2], box[3], 232);
	CHECK(measure_refused(icc, card, tmp_path("bare-tint.png"), &e) == 2);
	CHECK_STR_CONTAINS(e, "swatch 'violet' at 0.1 looks unpainted");
	free(e);
}

TEST(a_hidden_card_marker_is_named)
{
	const char *icc, *card, *frame, *truth;
	struct calib_card *c = malloc(sizeof(*c));
	struct img im = { 0 };
	double H[9], px[2], w, x, y;
	bl_err err = { 0 };
	char *e;

	setup(&icc, &card, &frame, &truth);
	CHECK(calib_card_load(card, c, &err) == 0);
	CHECK(img_load(frame, 40000000, &im, &err) == 0);
	CHECK(calib_card_locate(&im, "card", c, H, &err) == 0);
	img_free(&im);
	/* A rag over the card's top right marker. */
	x = c->size_mm[0] - c->marker_inset_mm;
	y = c->marker_inset_mm;
	w = H[6] * x + H[7] * y + H[8];
	px[0] = (H[0] * x + H[1] * y + H[2]) / w;
	px[1] = (H[3] * x + H[4] * y + H[5]) / w;
	edit_frame(frame, tmp_path("rag.png"), (int)px[0] - 25, (int)px[1] - 25, (int)px[0] + 25,
		   (int)px[1] + 25, 90);
	CHECK(measure_refused(icc, card, tmp_path("rag.png"), &e) == 2);
	CHECK_STR_CONTAINS(e, "top right");
	CHECK(strstr(e, "unpainted") == NULL);
	free(e);
	free(c);
}

TEST_MAIN(T(the_card_is_laid_out_saved_and_drawn), T(card_files_are_read_strictly),
	  T(a_painted_card_becomes_a_palette_the_mixing_model_takes),
	  T(a_card_that_cannot_be_read_says_why), T(a_paint_in_another_paints_box_is_named),
	  T(two_paints_in_each_others_boxes_are_named_both),
	  T(an_unpainted_tint_is_named_unpainted), T(a_hidden_card_marker_is_named))
