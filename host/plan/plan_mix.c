/* plan_mix.c: the planner's colour choice wired to the mixing model: nearest reachable colour and its recipe from the recipe solver. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan_mix.h"

static int solve(void *ctx, const color_lab *want, double volume_ml, struct plan_mix *out,
		 bl_err *err)
{
	struct plan_mixer *s = ctx;
	struct mix_limits lim = s->lim;
	struct mix_solution sol;
	int rc;

	/* The volume the strokes need, within what a cell holds; the solver may still choose more. */
	if (volume_ml > 0.0) {
		int units = (int)ceil(volume_ml / lim.unit_ml - 1e-9);

		lim.min_units = units < lim.min_units ? lim.min_units
			      : units > lim.max_units ? lim.max_units
						      : units;
	}
	rc = mix_solve(&s->model, NULL, want, &lim, &sol, err);
	if (rc)
		return bl_err_prefix(err, "mixing lab:%.2f,%.2f,%.2f", want->L, want->a, want->b);
	memset(out, 0, sizeof(*out));
	/* Two decimals: what plan.json keeps, so a loaded plan predicts exactly what was planned. */
	out->lab.L = round(sol.recipe.predicted.L * 100.0) / 100.0;
	out->lab.a = round(sol.recipe.predicted.a * 100.0) / 100.0;
	out->lab.b = round(sol.recipe.predicted.b * 100.0) / 100.0;
	for (int i = 0; i < s->model.n_paints; i++) {
		struct plan_recipe_item *it;
		int pi;

		if (sol.recipe.units[i] <= 0)
			continue;
		if (out->recipe.n == PLAN_MAX_RECIPE)
			return bl_fail(err, BL_EINVAL, "a recipe of more than %d paints", PLAN_MAX_RECIPE);
		pi = palette_find(s->palette, s->model.name[i]);
		if (pi < 0)
			return bl_fail(err, BL_EINVAL, "paint '%s' is not in palette %s",
				       s->model.name[i], s->palette->file);
		it = &out->recipe.item[out->recipe.n++];
		snprintf(it->paint, sizeof(it->paint), "%s", s->model.name[i]);
		snprintf(it->well, sizeof(it->well), "%s", s->palette->paints[pi].well);
		it->units = sol.recipe.units[i];
	}
	if (out->recipe.n == 0)
		return bl_fail(err, BL_EINVAL, "the solver found no recipe for lab:%.2f,%.2f,%.2f",
			       want->L, want->a, want->b);
	return 0;
}

int plan_mixer_init(struct plan_mixer *s, const struct palette *p, const struct machine *m,
		    bl_err *err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = palette_check_machine(p, m, err)) || (rc = mix_model_from_palette(p, &s->model, err)))
		return rc;
	mix_limits_from_machine(m, &s->lim);
	s->palette = p;
	s->solver.solve = solve;
	s->solver.ctx = s;
	return 0;
}
