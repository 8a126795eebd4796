/* plan.c: the planner's entry points: options, planning a target, predicting a plan's canvas, checking it against the machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

void plan_options_default(struct plan_options *o, const struct machine *m)
{
	memset(o, 0, sizeof(*o));
	o->colours = 0; /* as many as the target needs, at most one a mixing cell */
	o->max_strokes = 1000;
	/* The machine's canvas as its camera reads it, else a primed white canvas under D50. */
	o->canvas_lab = m->canvas.has_lab
				? (color_lab){ m->canvas.lab[0], m->canvas.lab[1], m->canvas.lab[2] }
				: (color_lab){ 95.0, 0.0, 2.0 };
	o->opacity = 0.95;
	o->press_mm = 0.5;
	o->stroke_speed_mm_s = m->painting.stroke_speed_mm_s;
	o->travel_speed_mm_s = m->painting.travel_speed_mm_s;
	o->cell_mm = 10.0;
	o->batch_strokes = 40;
	o->wash_ms = 3000;
	o->seed = 1;
}

void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->n_subtasks; i++) {
		struct plan_subtask *s = &p->subtasks[i];

		for (size_t k = 0; k < s->n_actions; k++)
			arm_action_release(&s->actions[k]);
		free(s->actions);
		free(s->cells);
	}
	free(p->subtasks);
	free(p->unfixable);
	p->subtasks = NULL;
	p->unfixable = NULL;
	p->n_subtasks = p->n_unfixable = 0;
}

void plan_hash_hex(const void *data, size_t n, char out[17])
{
	const unsigned char *b = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int plan_motion_time_s(const struct plan *p, const struct machine *m, double accel_mm_s2, double *out_s,
		       bl_err *err)
{
	arm_point at = { m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	struct arm_path path = { 0 };
	double t = 0.0;
	int rc = 0;

	for (size_t i = 0; i < p->n_subtasks && rc == 0; i++)
		for (size_t k = 0; k < p->subtasks[i].n_actions && rc == 0; k++) {
			if ((rc = arm_motion(m, &at, &p->subtasks[i].actions[k], &path, err)))
				break;
			for (size_t g = 0; g < path.n; g++) {
				const struct arm_segment *s = &path.seg[g];

				t += arm_move_time_s(arm_segment_length(s), s->speed_mm_s, accel_mm_s2) +
				     s->dwell_ms / 1000.0;
				at = s->to;
			}
		}
	arm_path_free(&path);
	*out_s = t;
	return rc;
}

double plan_paint_ml(const struct plan *p)
{
	double ml = 0.0;

	for (int c = 0; c < p->n_colours; c++)
		ml += p->colours[c].paint_ml;
	return ml;
}

static int check_options(const struct plan_inputs *in, const struct plan_options *o, bl_err *err)
{
	const struct machine *m = in->machine;

	if (o->colours < 0 || o->colours > m->n_cells || o->colours > PLAN_MAX_COLOURS)
		return bl_fail(err, BL_EINVAL,
			       "--colours %d: the machine has %d mixing cells, so 1..%d colours (0: as many as the target needs)",
			       o->colours, m->n_cells,
			       m->n_cells < PLAN_MAX_COLOURS ? m->n_cells : PLAN_MAX_COLOURS);
	if (o->max_strokes < 0 || o->max_strokes > PLAN_MAX_STROKES)
		return bl_fail(err, BL_EINVAL, "--max-strokes %d is outside 0..%d", o->max_strokes,
			       PLAN_MAX_STROKES);
	if (!(o->opacity > 0.0 && o->opacity <= 1.0) || !(o->cell_mm >= 1.0) ||
	    o->batch_strokes < 1 || !(o->press_mm >= 0.0))
		return bl_fail(err, BL_EINVAL, "planner options out of range");
	if (!in->target || !in->target->px || in->target->w < 1 || in->target->h < 1)
		return bl_fail(err, BL_EINVAL, "the target image is empty");
	{
		int w = in->target_w > 0 ? in->target_w : in->target->w;
		int h = in->target_h > 0 ? in->target_h : in->target->h;

		/* A picture smaller than this has nothing a brush could follow. */
		if (w < PLAN_MIN_TARGET_PX || h < PLAN_MIN_TARGET_PX)
			return bl_fail(err, BL_EINVAL,
				       "%s: the target is %d x %d px, too small to paint from (at least %d x %d px)",
				       in->target_file && in->target_file[0] ? in->target_file : "target",
				       w, h, PLAN_MIN_TARGET_PX, PLAN_MIN_TARGET_PX);
	}
	if (m->n_brushes < 1)
		return bl_fail(err, BL_EINVAL, "%s: the machine has no brushes", m->file);
	return 0;
}

/* Drops colours no stroke uses and gives each remaining one a mixing cell. */
static void compact_colours(struct plan *p, const struct machine *m, struct pm_strokes *st)
{
	int map[PLAN_MAX_COLOURS], used[PLAN_MAX_COLOURS] = { 0 }, n = 0;

	for (size_t i = 0; i < st->n; i++)
		used[st->s[i].colour] = 1;
	for (int c = 0; c < p->n_colours; c++) {
		map[c] = used[c] ? n : -1;
		if (used[c]) {
			p->colours[n] = p->colours[c];
			snprintf(p->colours[n].name, sizeof(p->colours[n].name), "c%d", n + 1);
			snprintf(p->colours[n].cell, sizeof(p->colours[n].cell), "%s", m->cells[n].name);
			n++;
		}
	}
	for (size_t i = 0; i < st->n; i++)
		st->s[i].colour = map[st->s[i].colour];
	p->n_colours = n;
}

static void fill_header(struct plan *p, const struct plan_inputs *in, const struct plan_options *o,
			const double image_mm[4])
{
	const struct machine *m = in->machine;

	snprintf(p->target_file, sizeof(p->target_file), "%s", in->target_file ? in->target_file : "");
	snprintf(p->target_hash, sizeof(p->target_hash), "%s", in->target_hash ? in->target_hash : "");
	p->target_w = in->target_w > 0 ? in->target_w : in->target->w;
	p->target_h = in->target_h > 0 ? in->target_h : in->target->h;
	for (int i = 0; i < 4; i++)
		p->image_mm[i] = round(image_mm[i] * 100.0) / 100.0;
	snprintf(p->machine_name, sizeof(p->machine_name), "%s", m->name);
	p->canvas_origin_mm[0] = m->canvas.origin_mm[0];
	p->canvas_origin_mm[1] = m->canvas.origin_mm[1];
	p->canvas_size_mm[0] = m->canvas.size_mm[0];
	p->canvas_size_mm[1] = m->canvas.size_mm[1];
	p->canvas_surface_z_mm = m->canvas.surface_z_mm;
	p->xf = m->xf;
	p->canvas_lab = o->canvas_lab;
	p->opacity = o->opacity;
	p->cell_mm = o->cell_mm;
}

/* The grid over a plan's image rectangle, and the target on it. */
static int target_on_grid(const struct plan_raster *target, const double image_mm[4],
			  struct pm_grid *g, struct pm_target *t, bl_err *err)
{
	size_t n;
	float *lab;
	int rc;

	pm_grid_for(g, image_mm);
	n = (size_t)g->w * g->h;
	lab = malloc(n * 3 * sizeof(float));
	if (!lab)
		return bl_fail(err, BL_ENOMEM, "out of memory for the target");
	rc = pm_resample(target, g, lab, err);
	if (rc == 0)
		rc = pm_target_init(t, g, lab, err);
	free(lab);
	return rc;
}

static float *blank_canvas(const struct pm_grid *g, const color_lab *c, bl_err *err)
{
	size_t n = (size_t)g->w * g->h;
	float *canvas = malloc(n * 3 * sizeof(float));

	if (!canvas) {
		bl_fail(err, BL_ENOMEM, "out of memory for the canvas");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		canvas[3 * i] = (float)c->L;
		canvas[3 * i + 1] = (float)c->a;
		canvas[3 * i + 2] = (float)c->b;
	}
	return canvas;
}

int plan_make(const struct plan_inputs *in, const struct plan_options *opt, struct plan *out,
	      bl_err *err)
{
	const struct machine *m = in->machine;
	struct pm_grid g;
	struct pm_target t = { 0 };
	struct pm_strokes st = { 0 };
	double image_mm[4];
	float *canvas = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_options(in, opt, err)))
		return rc;
	pm_fit(m, in->target_w > 0 ? in->target_w : in->target->w,
	       in->target_h > 0 ? in->target_h : in->target->h, image_mm);
	fill_header(out, in, opt, image_mm);
	if ((rc = target_on_grid(in->target, out->image_mm, &g, &t, err)))
		goto out_free;
	if ((rc = pm_choose_colours(&g, &t, in->solver, opt, opt->colours,
				    m->n_cells < PLAN_MAX_COLOURS ? m->n_cells : PLAN_MAX_COLOURS,
				    out->colours, &out->n_colours, err)))
		goto out_free;
	if (!(canvas = blank_canvas(&g, &opt->canvas_lab, err))) {
		rc = BL_ENOMEM;
		goto out_free;
	}
	if (opt->baseline)
		rc = pm_baseline_strokes(&g, &t, m, out->colours, out->n_colours, opt, &st, err);
	else
		rc = pm_place_strokes(&g, &t, canvas, NULL, m, out->colours, out->n_colours, opt, &st,
				      err);
	if (rc)
		goto out_free;
	compact_colours(out, m, &st);
	rc = pm_build(out, &g, &t, canvas, m, in->solver, opt, &st, err);

out_free:
	if (rc)
		plan_free(out);
	pm_strokes_free(&st);
	pm_target_free(&t);
	free(canvas);
	return rc;
}

/* ---- prediction of a plan as written --------------------------------- */

/*
 * The footprint of stroke action a of subtask s on grid g: its points in
 * canvas mm (xy, grown as needed: *cap points), through the machine's brush.
 */
static int stroke_footprint(const struct plan *p, const struct machine *m,
			    const struct plan_subtask *s, const struct arm_action *a,
			    const struct pm_grid *g, struct pm_footprint *fp, double **xy, size_t *cap,
			    bl_err *err)
{
	const struct machine_brush *br = machine_find_brush(m, a->brush);

	if (!br)
		return bl_fail(err, BL_EINVAL, "subtask %d: brush '%s' is not on machine '%s'", s->id,
			       a->brush, m->name);
	if (a->n_points > *cap) {
		double *nx = realloc(*xy, a->n_points * 2 * sizeof(double));

		if (!nx)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		*xy = nx;
		*cap = a->n_points;
	}
	for (size_t q = 0; q < a->n_points; q++) {
		struct canvas_pt c = xform_to_canvas(&p->xf, (struct machine_pt){ a->points[q].x,
										  a->points[q].y });

		(*xy)[2 * q] = c.x;
		(*xy)[2 * q + 1] = c.y;
	}
	return pm_fp_stroke(fp, g, *xy, (int)a->n_points, br->width_mm, p->opacity, err);
}

int plan_batch_alpha(const struct plan *p, const struct machine *m, const struct plan_subtask *s,
		     float *alpha, int w, int h, bl_err *err)
{
	struct pm_grid g = { .w = w, .h = h, .px_mm = 1.0, .w_mm = w, .h_mm = h };
	struct pm_footprint fp;
	double *xy = NULL;
	size_t cap = 0;
	int rc;

	memset(alpha, 0, (size_t)w * h * sizeof(*alpha));
	if ((rc = pm_fp_init(&fp, &g, err)))
		return rc;
	for (size_t k = 0; k < s->n_actions; k++) {
		const struct arm_action *a = &s->actions[k];

		if (a->kind != ARM_STROKE)
			continue;
		if ((rc = stroke_footprint(p, m, s, a, &g, &fp, &xy, &cap, err)))
			goto out_free;
		for (int i = 0; i < fp.n; i++) {
			float *v = alpha + fp.idx[i];

			*v = 1.0f - (1.0f - *v) * (1.0f - fp.a[i]);
		}
	}
	rc = 0;
out_free:
	free(xy);
	pm_fp_free(&fp);
	return rc;
}

int plan_predict(const struct plan *p, const struct machine *m, const struct plan_raster *target,
		 double px_mm, struct plan_raster *canvas_out, double *mean_de00, double *p95_de00,
		 bl_err *err)
{
	struct pm_grid g;
	struct pm_footprint fp;
	float *canvas, *tg = NULL;
	double *xy = NULL;
	size_t cap = 0;
	int rc;

	pm_grid_for(&g, p->image_mm);
	if (px_mm > 0.0) {
		g.px_mm = px_mm;
		g.w = (int)fmax(1.0, floor(p->image_mm[2] * px_mm));
		g.h = (int)fmax(1.0, floor(p->image_mm[3] * px_mm));
	}
	if (!(canvas = blank_canvas(&g, &p->canvas_lab, err)))
		return BL_ENOMEM;
	if ((rc = pm_fp_init(&fp, &g, err))) {
		free(canvas);
		return rc;
	}
	for (size_t i = 0; i < p->n_subtasks; i++) {
		const struct plan_subtask *s = &p->subtasks[i];
		float col[3];

		if (s->type != PLAN_PAINT || s->colour < 0)
			continue;
		col[0] = (float)p->colours[s->colour].lab.L;
		col[1] = (float)p->colours[s->colour].lab.a;
		col[2] = (float)p->colours[s->colour].lab.b;
		for (size_t k = 0; k < s->n_actions; k++) {
			const struct arm_action *a = &s->actions[k];

			if (a->kind != ARM_STROKE)
				continue;
			if ((rc = stroke_footprint(p, m, s, a, &g, &fp, &xy, &cap, err)))
				goto out_free;
			pm_fp_apply(&fp, canvas, col);
		}
	}
	if (target && (mean_de00 || p95_de00)) {
		tg = malloc((size_t)g.w * g.h * 3 * sizeof(float));
		if (!tg) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory predicting");
			goto out_free;
		}
		if ((rc = pm_resample(target, &g, tg, err)) ||
		    (rc = pm_score(&g, tg, canvas, mean_de00, p95_de00, err)))
			goto out_free;
	}
	if (canvas_out) {
		canvas_out->w = g.w;
		canvas_out->h = g.h;
		canvas_out->px = canvas;
		canvas = NULL;
	}

out_free:
	pm_fp_free(&fp);
	free(canvas);
	free(tg);
	free(xy);
	return rc;
}

/* ---- the planner's own check against the machine -------------------- */

static int in_box(const arm_point *p, const double *lo, const double *hi)
{
	return p->x >= lo[0] && p->x <= hi[0] && p->y >= lo[1] && p->y <= hi[1] && p->z >= lo[2] &&
	       p->z <= hi[2];
}

static int seg_in_keepout(const struct arm_segment *s, const struct machine_box *k)
{
	/* Sampled every mm: exact enough for a check that backs up the gate, never replaces it. */
	double len = arm_segment_length(s);
	int n = (int)ceil(len) + 1;

	for (int i = 0; i <= n; i++) {
		double t = (double)i / n;
		arm_point q = { s->from.x + t * (s->to.x - s->from.x), s->from.y + t * (s->to.y - s->from.y),
				s->from.z + t * (s->to.z - s->from.z) };

		if (in_box(&q, k->min_mm, k->max_mm))
			return 1;
	}
	return 0;
}

int plan_check(const struct plan *p, const struct machine *m, bl_err *err)
{
	const struct machine_z_floors *zf = &m->limits.z_floor;
	arm_point at = { m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	struct arm_path path = { 0 };
	int rc = 0;

	if (p->canvas_origin_mm[0] != m->canvas.origin_mm[0] ||
	    p->canvas_origin_mm[1] != m->canvas.origin_mm[1] ||
	    p->canvas_size_mm[0] != m->canvas.size_mm[0] ||
	    p->canvas_size_mm[1] != m->canvas.size_mm[1] ||
	    p->canvas_surface_z_mm != m->canvas.surface_z_mm)
		return bl_fail(err, BL_EINVAL,
			       "the plan was made for another canvas than machine '%s' has", m->name);
	if (!xform_same(&p->xf, &m->xf))
		return bl_fail(err, BL_EINVAL, "the plan was made for another canvas placement than "
			       "machine '%s' has (%s): plan again", m->name,
			       m->xf.registered ? "its arm registration, calibration.arm"
						: "no arm registration");
	for (size_t i = 0; i < p->n_subtasks && rc == 0; i++) {
		const struct plan_subtask *s = &p->subtasks[i];
		double tol = plan_kind_tolerance(m, s->type);

		if (s->tolerance_de00 > tol)
			return bl_fail(err, BL_EINVAL,
				       "subtask %d: tolerance %g is looser than the machine's %g", s->id,
				       s->tolerance_de00, tol);
		for (size_t k = 0; k < s->n_actions && rc == 0; k++) {
			const struct arm_action *a = &s->actions[k];

			if (a->speed_mm_s > m->limits.soft.speed_mm_s)
				return bl_fail(err, BL_EINVAL, "subtask %d action %ld: speed %g mm/s above %g",
					       s->id, a->id, a->speed_mm_s, m->limits.soft.speed_mm_s);
			if (a->kind == ARM_STROKE) {
				const struct machine_brush *br = machine_find_brush(m, a->brush);
				double h = br ? 0.5 * br->width_mm - 0.011 : 0.0;

				if ((long)a->n_points > m->limits.max_stroke_points)
					return bl_fail(err, BL_EINVAL, "subtask %d action %ld: %zu points",
						       s->id, a->id, a->n_points);
				for (size_t q = 0; q < a->n_points; q++) {
					struct canvas_pt c = xform_to_canvas(
						&m->xf, (struct machine_pt){ a->points[q].x, a->points[q].y });
					double x = c.x, y = c.y;

					if (x < h || y < h || x > m->canvas.size_mm[0] - h ||
					    y > m->canvas.size_mm[1] - h)
						return bl_fail(err, BL_EINVAL,
							       "subtask %d action %ld: point %zu (%g, %g) mm on the canvas lets the brush leave it",
							       s->id, a->id, q, x, y);
				}
			}
			if ((rc = arm_motion(m, &at, a, &path, err)))
				break;
			for (size_t q = 0; q < path.n; q++) {
				const struct arm_segment *g = &path.seg[q];
				double lo = fmin(g->from.z, g->to.z), floor_z = zf->travel_mm;

				switch (g->zone) {
				case ARM_ZONE_CANVAS: floor_z = zf->canvas_mm; break;
				case ARM_ZONE_WELL: floor_z = zf->well_mm; break;
				case ARM_ZONE_CELL: floor_z = zf->cell_mm; break;
				case ARM_ZONE_WATER: floor_z = zf->water_mm; break;
				case ARM_ZONE_WIPE: floor_z = zf->wipe_mm; break;
				case ARM_ZONE_TRAVEL:
				case ARM_ZONE_COUNT: lo = fmax(g->from.z, g->to.z); break;
				}
				if (lo < floor_z - 1e-9) {
					rc = bl_fail(err, BL_EINVAL, "subtask %d action %ld: z %g below the %s floor %g",
						     s->id, a->id, lo, arm_zone_names[g->zone], floor_z);
					break;
				}
				if (arm_segment_length(g) > m->limits.soft.move_mm) {
					rc = bl_fail(err, BL_EINVAL, "subtask %d action %ld: a %g mm move is longer than %g",
						     s->id, a->id, arm_segment_length(g), m->limits.soft.move_mm);
					break;
				}
				if (!in_box(&g->to, m->work_min_mm, m->work_max_mm)) {
					rc = bl_fail(err, BL_EINVAL, "subtask %d action %ld: leaves the work area",
						     s->id, a->id);
					break;
				}
				for (int b = 0; b < m->n_keep_out; b++)
					if (seg_in_keepout(g, &m->keep_out[b])) {
						rc = bl_fail(err, BL_EINVAL, "subtask %d action %ld: enters keep-out '%s'",
							     s->id, a->id, m->keep_out[b].name);
						break;
					}
				if (rc)
					break;
				at = g->to;
			}
		}
	}
	arm_path_free(&path);
	return rc;
}
