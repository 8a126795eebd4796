/* test_mix_model.c: the mixing model: it reproduces the measurements it was derived from, mixes like paint, and works from measured colours alone. */
#include "base/json.h"
#include "base/rng.h"
#include "mix_fixture.h"

static color_lab lab3(const double v[3])
{
	return (color_lab){ v[0], v[1], v[2] };
}

/* Lab of one paint, or of a paint let down with the white at weight fraction f. */
static color_lab predict_tint(const struct mix_model *m, const char *paint, double f)
{
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab out;

	amt[mix_model_find(m, paint)] += f;
	amt[m->white] += 1.0 - f;
	mix_predict(m, NULL, amt, &out);
	return out;
}

/*
 * The committed palette against the measured spectra, read and converted
 * here without the derivation's code: every masstone within 0.02 CIEDE2000
 * (the band values keep each measurement's colour), every tint within 0.2
 * (S is smoothed across bands; measured worst 0.12, green).
 */
TEST(model_reproduces_masstones_and_tints)
{
	static struct mix_model m;
	struct fx_patch ms[16], tn[16];
	int nm = fx_measurements("calib/data/kimera-spectral/masstone.json", ms, 16);
	int nt = fx_measurements("calib/data/kimera-spectral/mix1.json", tn, 16);
	double worst_m = 0.0, worst_t = 0.0;

	fx_model(&m);
	CHECK(nm == 13);
	CHECK(nt == 12);
	CHECK(m.n_paints == 13 && m.n_bands == 31 && m.white == mix_model_find(&m, "white"));
	for (int i = 0; i < nm; i++) {
		color_lab want = lab3(ms[i].lab), got;
		double de;

		CHECK_MSG(mix_model_find(&m, ms[i].name) >= 0, "paint '%s' missing", ms[i].name);
		if (mix_model_find(&m, ms[i].name) < 0)
			continue;
		got = predict_tint(&m, ms[i].name, 1.0);
		de = color_de00(&got, &want);
		printf("masstone %-18s measured %6.2f %6.2f %6.2f  CIEDE2000 %.3f\n", ms[i].name,
		       want.L, want.a, want.b, de);
		CHECK_MSG(de <= 0.02, "%s masstone off by %.3f", ms[i].name, de);
		worst_m = fmax(worst_m, de);
	}
	for (int i = 0; i < nt; i++) {
		color_lab want = lab3(tn[i].lab), got;
		double de;

		if (mix_model_find(&m, tn[i].name) < 0) {
			CHECK_MSG(0, "tinted paint '%s' missing", tn[i].name);
			continue;
		}
		got = predict_tint(&m, tn[i].name, tn[i].frac);
		de = color_de00(&got, &want);
		printf("tint     %-18s %.3f     measured %6.2f %6.2f %6.2f  CIEDE2000 %.3f\n",
		       tn[i].name, tn[i].frac, want.L, want.a, want.b, de);
		CHECK_MSG(de <= 0.2, "%s tint off by %.3f", tn[i].name, de);
		worst_t = fmax(worst_t, de);
	}
	printf("worst: masstone %.3f, tint %.3f CIEDE2000\n", worst_m, worst_t);
}

/* The committed file is what `brushloop palette derive` makes from the data today. */
TEST(committed_palette_equals_fresh_derivation)
{
	static struct palette a, b, ex;
	char out[4096];
	const char *args[] = { "palette", "derive", "--masstone",
			       fx_src("calib/data/kimera-spectral/masstone.json"), "--tints",
			       fx_src("calib/data/kimera-spectral/mix1.json"), "-o", out, NULL };
	bl_err err;
	int rc;

	snprintf(out, sizeof(out), "%s/kimera-13.json", test_tmpdir());
	rc = test_brushloop(args, NULL, NULL);
	CHECK(rc == 0);
	CHECK(palette_load(out, &a, &err) == 0);
	CHECK(palette_load(fx_src("palettes/kimera-13.json"), &b, &err) == 0);
	CHECK(palette_load(fx_src("examples/palette.json"), &ex, &err) == 0);
	CHECK_STR_CONTAINS(b.notice, "Copyright (c) 2024 miciwan");
	CHECK_STR_CONTAINS(b.notice, "THE SOFTWARE IS PROVIDED \"AS IS\"");
	for (int f = 0; f < 2; f++) {
		const struct palette *c = f ? &ex : &b;

		CHECK(strcmp(a.name, c->name) == 0 && strcmp(a.notice, c->notice) == 0);
		CHECK(strcmp(a.white, c->white) == 0);
		CHECK(a.n_paints == c->n_paints && a.n_bands == c->n_bands);
		for (int i = 0; i < a.n_bands && a.n_bands == c->n_bands; i++)
			CHECK(a.wavelengths_nm[i] == c->wavelengths_nm[i]);
		for (int i = 0; i < a.n_paints && a.n_paints == c->n_paints; i++) {
			const struct palette_paint *x = &a.paints[i], *y = &c->paints[i];
			int bad = 0;

			CHECK(strcmp(x->name, y->name) == 0 && strcmp(x->well, y->well) == 0);
			for (int k = 0; k < a.n_bands; k++)
				bad += fabs(x->k[k] - y->k[k]) > 2e-6 * fabs(y->k[k]) + 1e-300 ||
				       fabs(x->s[k] - y->s[k]) > 2e-6 * fabs(y->s[k]) + 1e-300;
			CHECK_MSG(bad == 0, "%s: %d values differ from a fresh derivation", x->name,
				  bad);
		}
	}
}

/* Phthalo blue and a lemon yellow: a green, and darker than the yellow. */
TEST(blue_and_yellow_make_green)
{
	static struct mix_model m;
	const char *blues[] = { "blue green shade", "blue red shade" };

	fx_model(&m);
	for (int k = 0; k < 2; k++) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		color_lab g, y;
		double h;

		amt[mix_model_find(&m, blues[k])] = 1.0;
		amt[mix_model_find(&m, "cold yellow")] = 4.0;
		mix_predict(&m, NULL, amt, &g);
		y = predict_tint(&m, "cold yellow", 1.0);
		h = atan2(g.b, g.a) * 180.0 / M_PI;
		printf("%s + cold yellow 1:4: lab %.1f %.1f %.1f, hue %.0f deg\n", blues[k], g.L,
		       g.a, g.b, h);
		CHECK_MSG(h > 100.0 && h < 200.0, "hue %.0f is not green", h);
		CHECK(g.a < -10.0);
		CHECK(g.L < y.L);
	}
}

/*
 * More white makes a tint lighter and nearer the white, step by step (its
 * chroma may first rise: a dark masstone is less colourful than its tints).
 */
TEST(tints_grow_lighter_with_white)
{
	static struct mix_model m;
	color_lab prev = { 0 }, white;

	fx_model(&m);
	white = predict_tint(&m, "white", 1.0);
	for (int w = 0; w <= 16; w += 2) {
		color_lab c = predict_tint(&m, "magenta", 1.0 / (1.0 + w));

		if (w > 0) {
			CHECK(c.L > prev.L);
			CHECK(color_de00(&c, &white) < color_de00(&prev, &white));
		}
		prev = c;
	}
}

/* The analytic derivatives the solver and the learning rely on, against finite differences. */
TEST(derivatives_match_finite_differences)
{
	static struct mix_model m;
	int idx[3];
	double ck[3] = { 1.0, 0.3, 2.0 }, cs[3] = { 0.8, 0.5, 1.7 };
	double lab[3], jk[3][MIX_RECIPE_MAX], js[3][MIX_RECIPE_MAX];

	fx_model(&m);
	idx[0] = mix_model_find(&m, "white");
	idx[1] = mix_model_find(&m, "blue green shade");
	idx[2] = mix_model_find(&m, "red oxide");
	mix_eval(&m, 3, idx, ck, cs, lab, jk, js, NULL);
	for (int j = 0; j < 3; j++) {
		for (int t = 0; t < 2; t++) {
			double c2[3], l2[3], h = 1e-6;

			memcpy(c2, t ? cs : ck, sizeof(c2));
			c2[j] += h;
			mix_eval(&m, 3, idx, t ? ck : c2, t ? c2 : cs, l2, NULL, NULL, NULL);
			for (int c = 0; c < 3; c++) {
				double fd = (l2[c] - lab[c]) / h, an = t ? js[c][j] : jk[c][j];

				CHECK_MSG(fabs(fd - an) <= 1e-3 * (1.0 + fabs(an)),
					  "d lab[%d]/d %s[%d]: analytic %g, numeric %g", c,
					  t ? "cs" : "ck", j, an, fd);
			}
		}
	}
}

/* Saunderson and Kubelka-Munk invert each other, from a black to a white. */
TEST(reflectance_and_ratio_invert)
{
	for (double q = 1e-4; q < 200.0; q *= 1.7) {
		double rm = mix_km_reflectance(q);

		CHECK(rm > 0.0 && rm < 1.0 - MIX_SAUNDERSON_K1);
		CHECK_NEAR(mix_km_ratio(rm) / q, 1.0, 1e-9);
	}
}

/*
 * A palette with no spectra, only the Kimera set's Lab values as a camera
 * would measure them (masstones and tints, here computed from the spectra):
 * the fitted model reproduces those colours within 0.3 CIEDE2000 (measured
 * worst 0.26) and predicts 1000 mixes it never saw within a median of 2.0 and
 * a 95th percentile of 8.0 CIEDE2000 of the spectral model (measured 1.5 and
 * 6.2). The choice of priors was made by this figure: with S kept flat it is
 * 2.5 and 13.3, and this test fails. The palette goes through the file format
 * and the loader.
 */
TEST(measured_only_palette_predicts_like_spectral)
{
	static struct mix_model ms, mm;
	static struct palette p, q;
	struct fx_patch mass[16], tint[16];
	double de[1000], fit_worst = 0.0;
	int nm = fx_measurements("calib/data/kimera-spectral/masstone.json", mass, 16);
	int nt = fx_measurements("calib/data/kimera-spectral/mix1.json", tint, 16);
	const char *path;
	char *text;
	cJSON *doc;
	bl_err err;
	rng r;

	fx_model(&ms);
	CHECK(palette_load(fx_src("palettes/kimera-13.json"), &p, &err) == 0);
	memset(&q, 0, sizeof(q));
	snprintf(q.name, sizeof(q.name), "kimera-13-measured");
	snprintf(q.white, sizeof(q.white), "white");
	q.n_paints = p.n_paints;
	for (int i = 0; i < p.n_paints; i++) {
		struct palette_paint *pp = &q.paints[i];

		snprintf(pp->name, sizeof(pp->name), "%s", p.paints[i].name);
		snprintf(pp->well, sizeof(pp->well), "%s", p.paints[i].well);
		pp->has_measured = 1;
		for (int k = 0; k < nm; k++)
			if (strcmp(mass[k].name, pp->name) == 0)
				memcpy(pp->masstone_lab, mass[k].lab, sizeof(pp->masstone_lab));
		for (int k = 0; k < nt; k++)
			if (strcmp(tint[k].name, pp->name) == 0) {
				pp->n_tints = 1;
				pp->tints[0].paint_fraction = tint[k].frac;
				memcpy(pp->tints[0].lab, tint[k].lab, sizeof(pp->tints[0].lab));
			}
	}
	doc = mix_palette_to_json(&q);
	text = cJSON_Print(doc);
	path = test_write_file("measured.json", text);
	cJSON_free(text);
	cJSON_Delete(doc);
	CHECK(palette_load(path, &q, &err) == 0);
	CHECK(mix_model_from_palette(&q, &mm, &err) == 0);
	for (int i = 0; i < mm.n_paints; i++) {
		CHECK(mm.fitted[i]);
		fit_worst = fmax(fit_worst, mm.fit_de00[i]);
	}
	printf("measured-only fit: worst %.3f CIEDE2000 to its own colours\n", fit_worst);
	CHECK(fit_worst <= 0.3);
	rng_init(&r, 1);
	for (int t = 0; t < 1000; t++) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		int k = 2 + (int)rng_below(&r, 2);
		color_lab a, b;

		for (int j = 0; j < k; j++)
			amt[rng_below(&r, (uint64_t)mm.n_paints)] += 1.0 + (double)rng_below(&r, 20);
		mix_predict(&ms, NULL, amt, &a);
		mix_predict(&mm, NULL, amt, &b);
		de[t] = color_de00(&a, &b);
	}
	qsort(de, 1000, sizeof(double), fx_cmp_double);
	printf("measured-only vs spectral, 1000 mixes of 2-3 paints: median %.2f, p95 %.2f, max %.2f\n",
	       de[500], de[950], de[999]);
	CHECK(de[500] <= 2.0);
	CHECK(de[950] <= 8.0);
}

/* Palettes the model cannot work from are refused with the paint named. */
TEST(model_refuses_unusable_palettes)
{
	static struct palette p;
	static struct mix_model m;
	bl_err err;
	const char *path = test_write_file(
		"no-white.json",
		"{\"kind\": \"palette\", \"version\": 1, \"name\": \"x\", \"paints\": ["
		"{\"name\": \"ochre\", \"well\": \"w1\", \"measured\": {\"masstone_lab\": [60, 10, 50]}}]}");

	CHECK(palette_load(path, &p, &err) == 0);
	CHECK(mix_model_from_palette(&p, &m, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "ochre");
	CHECK_STR_CONTAINS(err.msg, "no white");
}

TEST_MAIN(T(model_reproduces_masstones_and_tints), T(committed_palette_equals_fresh_derivation),
	  T(blue_and_yellow_make_green), T(tints_grow_lighter_with_white),
	  T(derivatives_match_finite_differences), T(reflectance_and_ratio_invert),
	  T(measured_only_palette_predicts_like_spectral), T(model_refuses_unusable_palettes))
