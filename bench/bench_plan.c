/* bench_plan.c: the planner's benchmark: a 1000 x 800 target to a plan of 2,000 strokes, from the PNG file to plan.json text. */
#include <stdlib.h>

#include "bench/bench.h"
#include "config/machine.h"
#include "config/palette.h"
#include "plan/plan.h"
#include "plan/plan_image.h"
#include "plan/plan_mix.h"

struct bench_plan_env {
	struct machine m;
	struct palette pal;
	struct plan_mixer mixer;
};

int bench_plan_strokes(double *value, bl_err *err)
{
	static const char target[] = BL_SOURCE_ROOT "/examples/targets/autumn-tree.png";
	struct bench_plan_env *e = calloc(1, sizeof(*e));
	struct plan_target t = { 0 };
	struct plan_options o;
	struct plan_inputs in = { 0 };
	struct plan p = { 0 };
	cJSON *j = NULL;
	char *text = NULL;
	double t0;
	int rc;

	if (!e)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* Machine, palette and mixing model are loaded once a run, outside the figure. */
	if ((rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &e->m, err)) ||
	    (rc = palette_load(BL_SOURCE_ROOT "/palettes/kimera-13.json", &e->pal, err)) ||
	    (rc = plan_mixer_init(&e->mixer, &e->pal, &e->m, err)))
		goto out_free;
	t0 = bench_now_ms();
	if ((rc = plan_target_load(target, &e->m, &t, err)))
		goto out_free;
	plan_options_default(&o, &e->m);
	o.max_strokes = 2000;
	in.machine = &e->m;
	in.solver = &e->mixer.solver;
	in.target = &t.lab;
	in.target_file = target;
	in.target_hash = t.hash;
	in.target_w = t.w;
	in.target_h = t.h;
	if ((rc = plan_make(&in, &o, &p, err)))
		goto out_free;
	j = plan_to_json(&p);
	text = j ? cJSON_Print(j) : NULL;
	*value = (bench_now_ms() - t0) / 1000.0;
	if (!text)
		rc = bl_fail(err, BL_ENOMEM, "out of memory printing the plan");
	else if (p.n_strokes != 2000)
		rc = bl_fail(err, BL_EIO, "the plan has %d strokes, not 2000", p.n_strokes);

out_free:
	cJSON_free(text);
	cJSON_Delete(j);
	plan_free(&p);
	plan_target_free(&t);
	free(e);
	return rc;
}
