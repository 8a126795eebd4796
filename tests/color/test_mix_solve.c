/* test_mix_solve.c: the recipe solver: exact recipes for colours mixed from known recipes, gamut, limits, determinism, additions. */
#include "base/rng.h"
#include "mix_fixture.h"

static int total_of(const int *u)
{
	int t = 0;

	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		t += u[i];
	return t;
}

static int used_of(const int *u)
{
	int n = 0;

	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		n += u[i] > 0;
	return n;
}

/*
 * Colours mixed from 60 known recipes of 1 to 3 paints (whole units, 5..30 in
 * all): the solver, asked for the most accurate recipe (aim 0), finds one
 * that the model predicts within 0.05 CIEDE2000 of each; for most it is the
 * very recipe or a multiple of it.
 */
TEST(solver_finds_exact_recipes_for_known_mixes)
{
	static struct mix_model m;
	struct mix_limits lim;
	rng r;
	int exact = 0;
	double worst = 0.0;

	fx_model(&m);
	fx_limits(&lim);
	lim.aim_de00 = 0.0;
	rng_init(&r, 11);
	for (int t = 0; t < 60; t++) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		int k = 1 + t % 3, total = 0, same = 1;
		struct mix_solution sol;
		color_lab target;
		bl_err err;

		while (total < 5) {
			memset(amt, 0, sizeof(amt));
			total = 0;
			for (int j = 0; j < k; j++) {
				int u = 1 + (int)rng_below(&r, 9);

				amt[rng_below(&r, 13)] += u;
				total += u;
			}
		}
		mix_predict(&m, NULL, amt, &target);
		CHECK(mix_solve(&m, NULL, &target, &lim, &sol, &err) == 0);
		CHECK(sol.in_gamut);
		CHECK_MSG(sol.recipe.de00 <= 0.05, "target %d (lab %.2f %.2f %.2f): best recipe %.3f",
			  t, target.L, target.a, target.b, sol.recipe.de00);
		worst = fmax(worst, sol.recipe.de00);
		/* The same proportions as the known recipe? */
		for (int i = 0; i < m.n_paints; i++)
			same &= fabs(sol.recipe.units[i] / (double)sol.recipe.total - amt[i] / total) < 1e-9;
		exact += same;
	}
	printf("60 known recipes: worst %.4f CIEDE2000, %d found in the very proportions\n", worst,
	       exact);
	CHECK(exact >= 40);
}

/* A saturated red-orange no three Kimera paints reach: reported, with the nearest colour. */
TEST(out_of_gamut_targets_are_reported)
{
	static struct mix_model m;
	struct mix_limits lim;
	struct mix_solution sol;
	color_lab target = { 50.0, 90.0, 90.0 }, in = { 50.0, -10.0, 20.0 };
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	CHECK(mix_solve(&m, NULL, &target, &lim, &sol, &err) == 0);
	CHECK(!sol.in_gamut);
	CHECK(sol.nearest_de00 > 5.0);
	CHECK_NEAR(color_de00(&sol.nearest, &target), sol.nearest_de00, 1e-9);
	/* The nearest colour is no further than the recipe offered for it. */
	CHECK(sol.nearest_de00 <= sol.recipe.de00 + 1e-9);
	CHECK(sol.recipe.total >= lim.min_units && sol.recipe.total <= lim.max_units);
	/* An olive: in gamut with four paints (0.0), not with two (3.6), three only just (0.7). */
	lim.max_paints = 2;
	CHECK(mix_solve(&m, NULL, &in, &lim, &sol, &err) == 0);
	CHECK(!sol.in_gamut && sol.nearest_de00 > 2.0);
	lim.max_paints = 4;
	CHECK(mix_solve(&m, NULL, &in, &lim, &sol, &err) == 0);
	CHECK(sol.in_gamut && sol.nearest_de00 < 0.05);
	CHECK(used_of(sol.recipe.units) <= 4);
}

/* Limits hold for any target: paints, units, volume, exclusions. */
TEST(recipes_respect_the_limits)
{
	static struct mix_model m;
	struct mix_limits lim;
	rng r;
	int blue;

	fx_model(&m);
	fx_limits(&lim);
	blue = mix_model_find(&m, "blue green shade");
	rng_init(&r, 5);
	for (int t = 0; t < 30; t++) {
		color_lab target = { 20.0 + 75.0 * rng_uniform(&r), -60.0 + 120.0 * rng_uniform(&r),
				     -60.0 + 120.0 * rng_uniform(&r) };
		struct mix_solution sol;
		bl_err err;

		lim.max_paints = 1 + t % 4;
		lim.min_units = 5 + t % 7;
		lim.exclude = t % 2 ? (uint64_t)1 << blue : 0;
		CHECK(mix_solve(&m, NULL, &target, &lim, &sol, &err) == 0);
		CHECK(used_of(sol.recipe.units) <= lim.max_paints);
		CHECK(sol.recipe.total == total_of(sol.recipe.units));
		CHECK(sol.recipe.total >= lim.min_units && sol.recipe.total <= lim.max_units);
		for (int i = 0; i < m.n_paints; i++)
			CHECK(sol.recipe.units[i] >= 0);
		if (t % 2)
			CHECK(sol.recipe.units[blue] == 0);
		CHECK(isfinite(sol.recipe.de00) && sol.recipe.de00 >= sol.nearest_de00 - 1e-9);
	}
}

/* The same target gives the same recipe, bit for bit. */
TEST(solver_is_deterministic)
{
	static struct mix_model m;
	struct mix_limits lim;
	struct mix_solution a, b;
	color_lab target = { 62.0, 18.0, 35.0 };
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	CHECK(mix_solve(&m, NULL, &target, &lim, &a, &err) == 0);
	CHECK(mix_solve(&m, NULL, &target, &lim, &b, &err) == 0);
	CHECK(memcmp(a.recipe.units, b.recipe.units, sizeof(a.recipe.units)) == 0);
	CHECK(a.recipe.de00 == b.recipe.de00);
	CHECK(a.nearest_de00 == b.nearest_de00);
}

/* Within the aim, the smallest volume wins; a smaller aim costs more paint, never less accuracy. */
TEST(smallest_volume_within_the_aim)
{
	static struct mix_model m;
	struct mix_limits lim;
	struct mix_solution loose, tight;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab target;
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	/* An in-gamut peach made of 13 white, 5 yellow oxide, 2 red and 1 orange. */
	amt[mix_model_find(&m, "white")] = 13;
	amt[mix_model_find(&m, "yellow oxide")] = 5;
	amt[mix_model_find(&m, "red")] = 2;
	amt[mix_model_find(&m, "orange")] = 1;
	mix_predict(&m, NULL, amt, &target);
	lim.aim_de00 = 1.5;
	CHECK(mix_solve(&m, NULL, &target, &lim, &loose, &err) == 0);
	lim.aim_de00 = 0.0;
	CHECK(mix_solve(&m, NULL, &target, &lim, &tight, &err) == 0);
	printf("aim 1.5: %d units, %.2f; aim 0: %d units, %.2f\n", loose.recipe.total,
	       loose.recipe.de00, tight.recipe.total, tight.recipe.de00);
	CHECK(loose.recipe.de00 <= 1.5);
	CHECK(loose.recipe.total <= tight.recipe.total);
	CHECK(tight.recipe.de00 <= loose.recipe.de00);
}

/* Additions: never negative, within the cell, and they move the colour toward the target. */
TEST(additions_stay_in_the_cell_and_help)
{
	static struct mix_model m;
	struct mix_limits lim;
	int have[MIX_MAX_PAINTS] = { 0 };
	double amt[MIX_MAX_PAINTS];
	color_lab target, now;
	struct mix_recipe add;
	int w = 0, y, b;
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	w = mix_model_find(&m, "white");
	y = mix_model_find(&m, "cold yellow");
	b = mix_model_find(&m, "blue green shade");
	/* The target: 10 white, 6 yellow, 1 blue; the cell: 8 white, 6 yellow, 2 blue (too blue). */
	memset(amt, 0, sizeof(amt));
	amt[w] = 10;
	amt[y] = 6;
	amt[b] = 1;
	mix_predict(&m, NULL, amt, &target);
	have[w] = 8;
	have[y] = 6;
	have[b] = 2;
	for (int i = 0; i < m.n_paints; i++)
		amt[i] = have[i];
	mix_predict(&m, NULL, amt, &now);
	CHECK(mix_solve_add(&m, NULL, &target, &lim, have, NULL, &add, &err) == 0);
	printf("cell %.2f off; adding %d white %d yellow %d blue: %.2f\n", color_de00(&now, &target),
	       add.units[w], add.units[y], add.units[b], add.de00);
	CHECK(add.de00 < color_de00(&now, &target));
	CHECK(add.de00 <= lim.tol_de00);
	CHECK(add.units[b] == 0);
	CHECK(add.total <= lim.max_units);
	CHECK(used_of(add.units) >= 1);
	for (int i = 0; i < m.n_paints; i++)
		CHECK(add.units[i] >= 0);
	/* A full cell can take nothing. */
	have[w] = 22;
	CHECK(mix_solve_add(&m, NULL, &target, &lim, have, NULL, &add, &err) == 0);
	CHECK(total_of(add.units) == 0 && add.total == 30);
	/* Negative contents are refused. */
	have[w] = -1;
	CHECK(mix_solve_add(&m, NULL, &target, &lim, have, NULL, &add, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "negative");
}

/* Bad targets and limits are refused, not solved. */
TEST(solver_refuses_bad_input)
{
	static struct mix_model m;
	struct mix_limits lim;
	struct mix_solution sol;
	color_lab nan_target = { NAN, 0.0, 0.0 }, ok = { 50.0, 0.0, 0.0 };
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	CHECK(mix_solve(&m, NULL, &nan_target, &lim, &sol, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not finite");
	lim.max_paints = 0;
	CHECK(mix_solve(&m, NULL, &ok, &lim, &sol, &err) == BL_EINVAL);
	fx_limits(&lim);
	lim.exclude = ~(uint64_t)0;
	CHECK(mix_solve(&m, NULL, &ok, &lim, &sol, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "excluded");
}

TEST_MAIN(T(solver_finds_exact_recipes_for_known_mixes), T(out_of_gamut_targets_are_reported),
	  T(recipes_respect_the_limits), T(solver_is_deterministic),
	  T(smallest_volume_within_the_aim), T(additions_stay_in_the_cell_and_help),
	  T(solver_refuses_bad_input))
