/* plan_actions.c: a plan's subtasks and their arm actions as plan_build.c assembles them: routes around keep-out boxes, speeds the arm can keep, dips, strokes and mixes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_build_int.h"
#include "plan/plan_int.h"

/* ---- actions ----------------------------------------------------------- */

struct plan_subtask *pm_new_subtask(struct builder *b, enum plan_subtask_type type, int colour,
				    bl_err *err)
{
	struct plan *p = b->p;
	struct plan_subtask *s;

	if (p->n_subtasks == b->cap_sub) {
		size_t cap = b->cap_sub ? b->cap_sub * 2 : 64;
		struct plan_subtask *ns = realloc(p->subtasks, cap * sizeof(*ns));

		if (!ns) {
			bl_fail(err, BL_ENOMEM, "out of memory for subtasks");
			return NULL;
		}
		p->subtasks = ns;
		b->cap_sub = cap;
	}
	s = &p->subtasks[p->n_subtasks++];
	memset(s, 0, sizeof(*s));
	s->id = (int)p->n_subtasks;
	s->type = type;
	s->colour = colour;
	s->batch = -1;
	s->tolerance_de00 = plan_kind_tolerance(b->m, type);
	b->cur = s;
	b->cap_act = 0;
	return s;
}

static int seg_hits_box(double ax, double ay, double bx, double by, const struct machine_box *k,
			double margin)
{
	/* Liang-Barsky clip of the segment against the box grown by margin, in x and y. */
	double t0 = 0.0, t1 = 1.0, dx = bx - ax, dy = by - ay;
	double p[4] = { -dx, dx, -dy, dy };
	double q[4] = { ax - (k->min_mm[0] - margin), (k->max_mm[0] + margin) - ax,
			ay - (k->min_mm[1] - margin), (k->max_mm[1] + margin) - ay };

	for (int i = 0; i < 4; i++) {
		if (p[i] == 0.0) {
			if (q[i] < 0.0)
				return 0;
			continue;
		}
		double t = q[i] / p[i];

		if (p[i] < 0.0) {
			if (t > t1)
				return 0;
			if (t > t0)
				t0 = t;
		} else {
			if (t < t0)
				return 0;
			if (t < t1)
				t1 = t;
		}
	}
	return 1;
}

static int clear_path(const struct machine *m, double ax, double ay, double bx, double by,
		      double z)
{
	for (int i = 0; i < m->n_keep_out; i++) {
		const struct machine_box *k = &m->keep_out[i];

		if (z < k->min_mm[2] || z > k->max_mm[2])
			continue;
		if (seg_hits_box(ax, ay, bx, by, k, 4.0))
			return 0;
	}
	return 1;
}

static int push_action(struct builder *b, struct arm_action *a, bl_err *err);
static double safe_speed(const struct machine *m, const struct arm_path *p, double v);

static int push_move(struct builder *b, double x, double y, double z, bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_MOVE;
	a.zones = 1u << ARM_ZONE_TRAVEL;
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	a.target.x = pm_r2(x);
	a.target.y = pm_r2(y);
	a.target.z = pm_r2(z);
	return push_action(b, &a, err);
}

/*
 * Every action starts by travelling across at the tool's height; where that
 * crossing is longer than one move may be, or passes a keep-out box, waypoints
 * go first, so the whole plan stays within the unattended limits.
 */
static int route_to(struct builder *b, double x, double y, bl_err *err)
{
	const struct machine *m = b->m;
	/* Less the 0.01 mm waypoints are rounded to, so that no step passes move_mm. */
	double z = b->at.z, max_mm = m->painting.move_mm - 0.01;
	int rc;

	if (!clear_path(m, b->at.x, b->at.y, x, y, z)) {
		double best = INFINITY, wx = 0, wy = 0;

		for (int i = 0; i < m->n_keep_out; i++)
			for (int c = 0; c < 4; c++) {
				const struct machine_box *k = &m->keep_out[i];
				double cx = c & 1 ? k->max_mm[0] + 10.0 : k->min_mm[0] - 10.0;
				double cy = c & 2 ? k->max_mm[1] + 10.0 : k->min_mm[1] - 10.0;
				double d = hypot(cx - b->at.x, cy - b->at.y) + hypot(x - cx, y - cy);

				if (cx < m->work_min_mm[0] || cx > m->work_max_mm[0] ||
				    cy < m->work_min_mm[1] || cy > m->work_max_mm[1])
					continue;
				if (d < best && clear_path(m, b->at.x, b->at.y, cx, cy, z) &&
				    clear_path(m, cx, cy, x, y, z)) {
					best = d;
					wx = cx;
					wy = cy;
				}
			}
		if (isfinite(best) && (rc = route_to(b, wx, wy, err)))
			return rc;
		if (isfinite(best) && (rc = push_move(b, wx, wy, z, err)))
			return rc;
	}
	while (hypot(x - b->at.x, y - b->at.y) > max_mm) {
		double d = hypot(x - b->at.x, y - b->at.y), f = max_mm / d;

		if ((rc = push_move(b, b->at.x + f * (x - b->at.x), b->at.y + f * (y - b->at.y), z,
				    err)))
			return rc;
	}
	return 0;
}

static int push_action(struct builder *b, struct arm_action *a, bl_err *err)
{
	struct plan_subtask *s = b->cur;
	int rc;

	if (a->kind != ARM_MOVE) {
		/* Where the action first goes, so that the crossing to it can be checked. */
		double x = b->at.x, y = b->at.y;
		const struct machine_station *st = NULL;

		switch (a->kind) {
		case ARM_STROKE:
			x = a->points[0].x;
			y = a->points[0].y;
			break;
		case ARM_DIP:
			st = a->cell[0] ? machine_find_cell(b->m, a->cell) : machine_find_well(b->m, a->well);
			break;
		case ARM_DISPENSE:
			st = machine_find_well(b->m, a->well);
			break;
		case ARM_STIR:
			st = machine_find_cell(b->m, a->cell);
			break;
		case ARM_WASH:
			st = &b->m->water;
			break;
		case ARM_WIPE:
			st = &b->m->wipe;
			break;
		case ARM_PARK:
			x = b->m->park_mm[0];
			y = b->m->park_mm[1];
			break;
		case ARM_HOME:
		case ARM_MOVE:
		case ARM_JOG:
		case ARM_KIND_COUNT:
			break;
		}
		if (st) {
			x = st->center_mm[0];
			y = st->center_mm[1];
		}
		if ((rc = route_to(b, x, y, err)))
			goto out_release;
	}
	if (s->n_actions == b->cap_act) {
		size_t cap = b->cap_act ? b->cap_act * 2 : 16;
		struct arm_action *na = realloc(s->actions, cap * sizeof(*na));

		if (!na) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory for actions");
			goto out_release;
		}
		s->actions = na;
		b->cap_act = cap;
	}
	a->id = b->next_id++;
	rc = arm_motion(b->m, &b->at, a, &b->path, err);
	if (rc)
		goto out_release;
	{
		/* Curves (a stroke's bends, a stir's circle) set the speed: slower where they are tight. */
		double v = safe_speed(b->m, &b->path, a->speed_mm_s);

		if (v < a->speed_mm_s) {
			a->speed_mm_s = v > 1.0 ? v : 1.0;
			if ((rc = arm_motion(b->m, &b->at, a, &b->path, err)))
				goto out_release;
		}
	}
	for (size_t i = 0; i < b->path.n; i++) {
		const struct arm_segment *g = &b->path.seg[i];

		b->at = g->to;
	}
	s->actions[s->n_actions++] = *a;
	return 0;

out_release:
	arm_action_release(a);
	return rc;
}

/*
 * The fastest speed at which every gentle turn of a path stays within the
 * unattended acceleration: a turn under 45 degrees is taken at speed, with a
 * centripetal acceleration v^2 / R (R through the three points), as the gate
 * models every backend; a sharper one is a stop.
 */
static double safe_speed(const struct machine *m, const struct arm_path *p, double v)
{
	double amax = m->painting.curve_accel_mm_s2;

	for (size_t i = 1; i < p->n; i++) {
		const struct arm_segment *s0 = &p->seg[i - 1], *s1 = &p->seg[i];
		double ux = s0->to.x - s0->from.x, uy = s0->to.y - s0->from.y, uz = s0->to.z - s0->from.z;
		double vx = s1->to.x - s1->from.x, vy = s1->to.y - s1->from.y, vz = s1->to.z - s1->from.z;
		double wx = s1->to.x - s0->from.x, wy = s1->to.y - s0->from.y, wz = s1->to.z - s0->from.z;
		double l0 = sqrt(ux * ux + uy * uy + uz * uz), l1 = sqrt(vx * vx + vy * vy + vz * vz);
		double l2 = sqrt(wx * wx + wy * wy + wz * wz), cx = uy * vz - uz * vy,
		       cy = uz * vx - ux * vz, cz = ux * vy - uy * vx, cross, r;

		if (l0 <= 0.0 || l1 <= 0.0 || (s0->flags | s1->flags) & ARM_SEG_DWELL)
			continue;
		if ((ux * vx + uy * vy + uz * vz) / (l0 * l1) <= cos(45.0 * M_PI / 180.0))
			continue;
		cross = sqrt(cx * cx + cy * cy + cz * cz);
		if (cross < 1e-9 * l0 * l1)
			continue;
		r = l0 * l1 * l2 / (2.0 * cross);
		if (v * v / r > amax)
			v = sqrt(amax * r);
	}
	return floor(v);
}

int pm_act_simple(struct builder *b, enum arm_kind kind, bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.zones = arm_default_zones(kind);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	if (kind == ARM_WASH)
		a.duration_ms = b->opt->wash_ms;
	return push_action(b, &a, err);
}

int pm_act_dip(struct builder *b, const char *brush, const char *cell, bl_err *err)
{
	const struct machine_station *c = machine_find_cell(b->m, cell);
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_DIP;
	a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CELL);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	snprintf(a.brush, sizeof(a.brush), "%s", brush);
	snprintf(a.cell, sizeof(a.cell), "%s", cell);
	/* Half the cell's depth: enough to load the brush without flooding it. */
	a.depth_mm = pm_r2(0.5 * c->depth_mm);
	return push_action(b, &a, err);
}

/*
 * Canvas point (x, y) as the machine point a stroke holds, rounded to 0.01 mm.
 * On a registered (turned) canvas the rounding moves the point up to 0.007 mm
 * in canvas mm, enough to put a point planned on the brush's margin past it
 * when the gate maps it back: such a point is moved inward by the rounding's
 * reach first, so every point the planner keeps inside the margin stays
 * inside after the round trip. Other points are as before.
 */
static arm_point stroke_point(const struct machine *m, double x, double y, double width_mm)
{
	const double h = 0.5 * width_mm / m->xf.scale, in = 0.01 / m->xf.scale;
	const double W = m->canvas.size_mm[0], H = m->canvas.size_mm[1];
	struct machine_pt mp = xform_to_machine(&m->xf, (struct canvas_pt){ x, y });
	arm_point p = { pm_r2(mp.x), pm_r2(mp.y), 0 };
	struct canvas_pt back = xform_to_canvas(&m->xf, (struct machine_pt){ p.x, p.y });

	if (back.x >= h && back.x <= W - h && back.y >= h && back.y <= H - h)
		return p;
	x = fmin(fmax(x, h + in), W - h - in);
	y = fmin(fmax(y, h + in), H - h - in);
	mp = xform_to_machine(&m->xf, (struct canvas_pt){ x, y });
	return (arm_point){ pm_r2(mp.x), pm_r2(mp.y), 0 };
}

int pm_act_stroke(struct builder *b, const struct pm_stroke *st, bl_err *err)
{
	const struct machine *m = b->m;
	double floor_press = m->painting.press_max_mm;
	double z = pm_r2(m->canvas.surface_z_mm - fmin(b->opt->press_mm, floor_press));
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_STROKE;
	a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CANVAS);
	a.speed_mm_s = b->opt->stroke_speed_mm_s;
	snprintf(a.brush, sizeof(a.brush), "%s", m->brushes[st->brush].name);
	a.points = malloc((size_t)st->n * sizeof(*a.points));
	if (!a.points)
		return bl_fail(err, BL_ENOMEM, "out of memory for a stroke");
	a.n_points = (size_t)st->n;
	for (int i = 0; i < st->n; i++) {
		arm_point p = stroke_point(m, st->xy[2 * i], st->xy[2 * i + 1], m->brushes[st->brush].width_mm);

		a.points[i].x = p.x;
		a.points[i].y = p.y;
		a.points[i].z = z;
	}
	return push_action(b, &a, err);
}

int pm_add_mix(struct builder *b, int colour, double volume_ml, bl_err *err)
{
	const struct machine *m = b->m;
	struct plan_colour *c = &b->p->colours[colour];
	const struct machine_station *cell = machine_find_cell(m, c->cell);
	struct plan_subtask *s = pm_new_subtask(b, PLAN_MIX, colour, err);
	struct arm_action a;
	int rc;

	if (!s)
		return BL_ENOMEM;
	s->volume_ml = volume_ml;
	if ((rc = b->solver->solve(b->solver->ctx, &c->want, volume_ml, &s->mix, err)))
		return rc;
	for (int i = 0; i < s->mix.recipe.n; i++) {
		const struct plan_recipe_item *it = &s->mix.recipe.item[i];

		if (it->units <= 0)
			continue;
		memset(&a, 0, sizeof(a));
		a.kind = ARM_DISPENSE;
		a.zones = arm_default_zones(ARM_DISPENSE);
		a.speed_mm_s = b->opt->travel_speed_mm_s;
		snprintf(a.well, sizeof(a.well), "%s", it->well);
		snprintf(a.cell, sizeof(a.cell), "%s", c->cell);
		a.units = it->units;
		if ((rc = push_action(b, &a, err)))
			return rc;
	}
	memset(&a, 0, sizeof(a));
	a.kind = ARM_STIR;
	a.zones = arm_default_zones(ARM_STIR);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	snprintf(a.cell, sizeof(a.cell), "%s", c->cell);
	a.depth_mm = pm_r2(0.8 * cell->depth_mm);
	a.duration_ms = m->mixing.stir_ms;
	if ((rc = push_action(b, &a, err)))
		return rc;
	if ((rc = pm_act_simple(b, ARM_WASH, err)) || (rc = pm_act_simple(b, ARM_WIPE, err)))
		return rc;
	/* Out of the camera's view, so the mix can be measured. */
	return pm_act_simple(b, ARM_PARK, err);
}
