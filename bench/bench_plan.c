/* bench_plan.c: the planner's benchmark: a 1000 x 800 target to a plan of 2,000 strokes, from the PNG file to plan.json text. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/rng.h"
#include "vision/image.h"

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

/*
 * A target busy enough to use the whole budget: the planner stops adding
 * strokes when none improves its prediction, and the example targets are
 * painted out in 700 to 1,950. A 40 x 40 px (16 mm) mosaic of twelve colours
 * asks for several strokes a tile, over 500 tiles.
 */
static int busy_target(const char *path, bl_err *err)
{
	static const unsigned char colours[12][3] = {
		{ 200, 40, 40 }, { 240, 200, 40 }, { 30, 60, 150 }, { 40, 140, 80 },
		{ 240, 235, 220 }, { 30, 30, 30 }, { 230, 120, 40 }, { 120, 60, 150 },
		{ 140, 90, 50 }, { 120, 180, 220 }, { 230, 150, 170 }, { 110, 110, 110 },
	};
	struct img im = { 0 };
	rng r;
	int rc;

	if ((rc = img_alloc(&im, 1000, 800, err)))
		return rc;
	rng_init(&r, 2000);
	for (int ty = 0; ty < 800 / 40; ty++)
		for (int tx = 0; tx < 1000 / 40; tx++) {
			const unsigned char *c = colours[rng_below(&r, 12)];

			for (int y = ty * 40; y < ty * 40 + 40; y++)
				for (int x = tx * 40; x < tx * 40 + 40; x++) {
					unsigned char *p = im.px + 3 * ((size_t)y * im.w + x);

					p[0] = c[0];
					p[1] = c[1];
					p[2] = c[2];
				}
		}
	rc = img_save(path, &im, err);
	img_free(&im);
	return rc;
}

int bench_plan_strokes(double *value, int quick, bl_err *err)
{
	char target[64];
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
	snprintf(target, sizeof(target), "/tmp/brushloop-bench-plan-%ld.png", (long)getpid());
	if ((rc = busy_target(target, err)))
		goto out_free;
	/* Machine, palette and mixing model are loaded once a run, outside the figure. */
	if ((rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &e->m, err)) ||
	    (rc = palette_load(BL_SOURCE_ROOT "/palettes/kimera-13.json", &e->pal, err)) ||
	    (rc = plan_mixer_init(&e->mixer, &e->pal, &e->m, err)))
		goto out_free;
	t0 = bench_now_ms();
	if ((rc = plan_target_load(target, &e->m, &t, err)))
		goto out_free;
	plan_options_default(&o, &e->m);
	/* Quick: a tenth of the strokes, still the whole budget used on the same picture. */
	o.max_strokes = quick ? 200 : 2000;
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
	else if (p.n_strokes != o.max_strokes)
		rc = bl_fail(err, BL_EIO, "the plan has %d strokes, not %d", p.n_strokes, o.max_strokes);

out_free:
	cJSON_free(text);
	cJSON_Delete(j);
	plan_free(&p);
	plan_target_free(&t);
	unlink(target);
	free(e);
	return rc;
}
