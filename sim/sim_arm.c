/* sim_arm.c: the simulated arm: checks a path as firmware would, times it with trapezoidal moves, applies its paint effects, and injects arm faults. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/prof.h"
#include "sim/sim_internal.h"

/* A path point may sit this far outside the work area (rounding of expanded circles). */
#define WORK_EPS_MM 1e-6
/* Straight segments of a SCARA are checked for reach every this many mm. */
#define SCARA_STEP_MM 5.0

static int same_point(const arm_point *a, const arm_point *b)
{
	return fabs(a->x - b->x) < 1e-6 && fabs(a->y - b->y) < 1e-6 && fabs(a->z - b->z) < 1e-6;
}

/* Is angle (deg) inside [lo, hi] for some turn of it? */
static int angle_in(double a, const double lim[2])
{
	for (int k = -2; k <= 2; k++) {
		double v = a + 360.0 * k;

		if (v >= lim[0] && v <= lim[1])
			return 1;
	}
	return 0;
}

/*
 * SCARA inverse kinematics for the tool at (x, y): shoulder j1 and elbow j2
 * in degrees for the configured elbow; 0 when reachable within the joint
 * limits, else a message.
 */
static int scara_check(const struct machine *m, double x, double y, char *why, size_t n)
{
	const struct machine_kinematics *k = &m->kin;
	double px = x - k->base_mm[0], py = y - k->base_mm[1];
	double c2 = (px * px + py * py - k->l1_mm * k->l1_mm - k->l2_mm * k->l2_mm) /
		    (2.0 * k->l1_mm * k->l2_mm);
	double q2, q1;

	if (c2 > 1.0 || c2 < -1.0) {
		snprintf(why, n, "(%.1f, %.1f) is out of the arm's reach", x, y);
		return -1;
	}
	q2 = acos(c2) * (k->elbow_right ? -1.0 : 1.0);
	q1 = atan2(py, px) - atan2(k->l2_mm * sin(q2), k->l1_mm + k->l2_mm * cos(q2));
	q1 *= 180.0 / M_PI;
	q2 *= 180.0 / M_PI;
	if (!angle_in(q1, k->j1_deg)) {
		snprintf(why, n, "(%.1f, %.1f) needs shoulder %.1f deg, outside %g..%g", x, y, q1,
			 k->j1_deg[0], k->j1_deg[1]);
		return -1;
	}
	if (!angle_in(q2, k->j2_deg)) {
		snprintf(why, n, "(%.1f, %.1f) needs elbow %.1f deg, outside %g..%g", x, y, q2,
			 k->j2_deg[0], k->j2_deg[1]);
		return -1;
	}
	return 0;
}

static int in_work(const struct machine *m, const arm_point *p)
{
	const double v[3] = { p->x, p->y, p->z };

	for (int i = 0; i < 3; i++)
		if (!isfinite(v[i]) || v[i] < m->work_min_mm[i] - WORK_EPS_MM ||
		    v[i] > m->work_max_mm[i] + WORK_EPS_MM)
			return 0;
	return 1;
}

/* What firmware refuses before it moves: every check here leaves the world as it was. */
static int validate(struct sim *s, const struct arm_action *a, const struct arm_path *p,
		    bl_err *err)
{
	const struct machine *m = &s->m;
	char why[160];

	if (a->kind < 0 || a->kind >= ARM_KIND_COUNT)
		return bl_fail(err, BL_EINVAL, "sim arm: unknown action kind %d", (int)a->kind);
	if ((a->kind == ARM_STROKE || a->kind == ARM_DIP) && !machine_find_brush(m, a->brush))
		return bl_fail(err, BL_EINVAL, "sim arm: brush '%s' is not on this machine", a->brush);
	if ((a->kind == ARM_DISPENSE || (a->kind == ARM_DIP && !a->cell[0])) &&
	    !machine_find_well(m, a->well))
		return bl_fail(err, BL_EINVAL, "sim arm: well '%s' is not on this machine", a->well);
	if (a->kind == ARM_DIP && a->cell[0] && !machine_find_cell(m, a->cell))
		return bl_fail(err, BL_EINVAL, "sim arm: mixing cell '%s' is not on this machine",
			       a->cell);
	if ((a->kind == ARM_DISPENSE || a->kind == ARM_STIR) && !machine_find_cell(m, a->cell))
		return bl_fail(err, BL_EINVAL, "sim arm: mixing cell '%s' is not on this machine",
			       a->cell);
	for (size_t i = 0; i < p->n; i++) {
		const struct arm_segment *g = &p->seg[i];
		const arm_point *from = i ? &p->seg[i - 1].to : &s->w.pos;

		if (!same_point(&g->from, from))
			return bl_fail(err, BL_EINVAL,
				       "sim arm: segment %zu starts at (%g, %g, %g), not where the "
				       "arm is (%g, %g, %g)", i, g->from.x, g->from.y, g->from.z,
				       from->x, from->y, from->z);
		if (!in_work(m, &g->to))
			return bl_fail(err, BL_EINVAL,
				       "sim arm: segment %zu ends at (%g, %g, %g), outside the work "
				       "area %g..%g, %g..%g, %g..%g mm", i, g->to.x, g->to.y, g->to.z,
				       m->work_min_mm[0], m->work_max_mm[0], m->work_min_mm[1],
				       m->work_max_mm[1], m->work_min_mm[2], m->work_max_mm[2]);
		if (!(g->speed_mm_s > 0.0) || g->speed_mm_s > m->limits.hard.speed_mm_s)
			return bl_fail(err, BL_EINVAL,
				       "sim arm: segment %zu speed %g mm/s is outside 0..%g mm/s (hard "
				       "limit)", i, g->speed_mm_s, m->limits.hard.speed_mm_s);
		if (g->dwell_ms < 0)
			return bl_fail(err, BL_EINVAL, "sim arm: segment %zu has a negative dwell", i);
		if (m->kin.type == MACHINE_KIN_SCARA) {
			double len = arm_segment_length(g);
			int n = (int)ceil(len / SCARA_STEP_MM);

			for (int k = 0; k <= n; k++) {
				double u = n ? (double)k / n : 1.0;

				if (scara_check(m, g->from.x + u * (g->to.x - g->from.x),
						g->from.y + u * (g->to.y - g->from.y), why,
						sizeof(why)))
					return bl_fail(err, BL_EINVAL, "sim arm: segment %zu: %s", i,
						       why);
			}
		}
	}
	return 0;
}

static double seg_time(const struct machine *m, const struct arm_segment *g)
{
	if (g->flags & ARM_SEG_DWELL)
		return g->dwell_ms / 1000.0;
	return arm_move_time_s(arm_segment_length(g), g->speed_mm_s, m->limits.soft.accel_mm_s2);
}

/* Distance covered t seconds into a trapezoidal move of length len (mm). */
static double trapezoid_at(double len, double v, double acc, double t)
{
	double total = arm_move_time_s(len, v, acc), ta;

	if (t >= total)
		return len;
	if (len >= v * v / acc) {
		ta = v / acc;
		if (t < ta)
			return 0.5 * acc * t * t;
		if (t < total - ta)
			return 0.5 * v * ta + v * (t - ta);
		return len - 0.5 * acc * (total - t) * (total - t);
	}
	ta = total / 2.0;
	if (t < ta)
		return 0.5 * acc * t * t;
	return len - 0.5 * acc * (total - t) * (total - t);
}

static arm_point noisy(struct sim *s, const arm_point *p)
{
	double sd = s->m.sim.arm_noise_mm;
	arm_point q = *p;

	if (sd > 0.0) {
		q.x += sd * rng_normal(&s->w.r_arm);
		q.y += sd * rng_normal(&s->w.r_arm);
		q.z += sd * rng_normal(&s->w.r_arm);
	}
	return q;
}

static int brush_index(const struct machine *m, const char *name)
{
	for (int i = 0; i < m->n_brushes; i++)
		if (strcmp(m->brushes[i].name, name) == 0)
			return i;
	return -1;
}

static int station_index(const struct machine_station *list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(list[i].name, name) == 0)
			return i;
	return -1;
}

struct run {
	double paint_ml;
	double stir_s, wash_s;
	int wiped;
	arm_point prev_actual; /* the tool's actual position at the end of the last painting segment */
	int has_prev;
};

/* The physical effect of segment g, followed from its start for fraction u (1 = whole). */
static void apply(struct sim *s, const struct arm_action *a, const struct arm_segment *g, double u,
		  double dt, struct run *r)
{
	const struct machine *m = &s->m;
	arm_point to = { g->from.x + u * (g->to.x - g->from.x), g->from.y + u * (g->to.y - g->from.y),
			 g->from.z + u * (g->to.z - g->from.z) };
	int complete = u >= 1.0;

	switch (a->kind) {
	case ARM_STROKE:
		if (g->flags & ARM_SEG_PAINTS) {
			int b = brush_index(m, a->brush);
			arm_point from = r->has_prev ? r->prev_actual : noisy(s, &g->from);
			arm_point end = noisy(s, &to);

			s->w.cur_tool = b;
			r->paint_ml += sim_world_paint(s, b, &m->brushes[b], &from, &end);
			r->prev_actual = end;
			r->has_prev = 1;
		} else {
			r->has_prev = 0;
		}
		break;
	case ARM_DIP:
		if ((g->flags & ARM_SEG_LOADS) && complete) {
			int b = brush_index(m, a->brush);
			arm_point end = noisy(s, &to);
			/* A brush loads from a paint well, or from a mixing cell holding a mixed colour. */
			int c = a->cell[0] ? station_index(m->cells, m->n_cells, a->cell) : -1;
			int w = c < 0 ? station_index(m->wells, m->n_wells, a->well) : -1;
			struct sim_pot *src = c >= 0 ? &s->w.mix[c] : &s->w.wells[w];
			double surface = c >= 0 ? m->cells[c].surface_z_mm : m->wells[w].surface_z_mm;

			s->w.cur_tool = b;
			sim_world_dip(s, b, m->brushes[b].load_ml, src, surface - end.z);
		}
		break;
	case ARM_DISPENSE:
		s->w.cur_tool = SIM_TOOL_DISPENSER;
		if ((g->flags & ARM_SEG_LOADS) && complete)
			sim_world_dispense_pick(s, station_index(m->wells, m->n_wells, a->well));
		if ((g->flags & ARM_SEG_DEPOSITS) && complete)
			r->paint_ml += sim_world_dispense_drop(s, station_index(m->cells, m->n_cells,
										a->cell));
		break;
	case ARM_STIR:
		if (g->zone == ARM_ZONE_CELL)
			r->stir_s += dt;
		break;
	case ARM_WASH:
		if (g->zone == ARM_ZONE_WATER)
			r->wash_s += dt;
		break;
	case ARM_WIPE:
		if (g->zone == ARM_ZONE_WIPE && g->from.x != g->to.x)
			r->wiped = 1;
		break;
	case ARM_HOME:
	case ARM_MOVE:
	case ARM_JOG:
	case ARM_PARK:
	case ARM_KIND_COUNT:
		break;
	}
}

static void finish(struct sim *s, const struct arm_action *a, const struct run *r)
{
	if (a->kind == ARM_STIR && r->stir_s > 0.0)
		sim_world_stir(s, station_index(s->m.cells, s->m.n_cells, a->cell), r->stir_s);
	if (s->w.cur_tool < 0)
		return;
	if (a->kind == ARM_WASH && r->wash_s > 0.0)
		sim_world_wash(s, s->w.cur_tool, r->wash_s);
	if (a->kind == ARM_WIPE && r->wiped)
		sim_world_wipe(s, s->w.cur_tool);
}

/* The world changed: keep it on disk as the physical world keeps its paint. */
static int persist(struct sim *s, bl_err *err)
{
	if (!s->world_file[0])
		return 0;
	return sim_save(s, NULL, err);
}

static int execute(struct arm *arm, const struct arm_action *a, const struct arm_path *p,
		   bl_err *err);

static int sim_execute(struct arm *arm, const struct arm_action *a, const struct arm_path *p,
		       bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_EXECUTE);
	int rc = execute(arm, a, p, err);

	prof_leave(prev);
	return rc;
}

static int execute(struct arm *arm, const struct arm_action *a, const struct arm_path *p,
		   bl_err *err)
{
	struct sim *s = arm->priv;
	const struct machine_sim_faults *f = &s->m.sim.faults;
	struct run r = { 0 };
	int rc = 0;

	s->last_paint_ml = 0.0;
	if (s->w.held)
		return bl_fail(err, BL_EPAUSED, "sim arm: held; resume it first");
	if (s->w.fault)
		return bl_fail(err, BL_ESAFETY, "sim arm: fault latched (%s); resume to clear it",
			       s->w.fault_msg);
	if (!s->w.homed && a->kind != ARM_HOME)
		return bl_fail(err, BL_ESAFETY, "sim arm: not homed; home it first (a \"home\" "
				"action)");
	rc = validate(s, a, p, err);
	if (rc)
		return rc;

	/* From here on the world changes (if only its random streams) and is saved. */
	if (f->command_failures > 0.0 && rng_uniform(&s->w.r_cmd) < f->command_failures) {
		rc = bl_fail(err, BL_ENOTSENT, "sim arm: command failed (simulated communication "
			     "fault); nothing moved");
		goto out_persist;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct arm_segment *g = &p->seg[i];
		double dt = seg_time(&s->m, g), now = sim_now_s(s);

		if (f->stall_at_s > 0.0 && !s->stall_fired && now < f->stall_at_s &&
		    now + dt >= f->stall_at_s) {
			double ts = f->stall_at_s - now, len = arm_segment_length(g);
			double u = (g->flags & ARM_SEG_DWELL) || len <= 0.0 ? 0.0 :
				   trapezoid_at(len, g->speed_mm_s, s->m.limits.soft.accel_mm_s2, ts) / len;

			apply(s, a, g, u, ts, &r);
			s->w.pos = (arm_point){ g->from.x + u * (g->to.x - g->from.x),
						g->from.y + u * (g->to.y - g->from.y),
						g->from.z + u * (g->to.z - g->from.z) };
			clk_advance(s->clock, (int64_t)llround(ts * 1e9));
			s->w.arm_time_s += ts;
			s->stall_fired = 1;
			s->w.fault = 1;
			snprintf(s->w.fault_msg, sizeof(s->w.fault_msg),
				 "stalled at %.3f s at (%.2f, %.2f, %.2f) mm in segment %zu",
				 f->stall_at_s, s->w.pos.x, s->w.pos.y, s->w.pos.z, i);
			rc = bl_fail(err, BL_ESAFETY, "sim arm: motor %s", s->w.fault_msg);
			goto out_persist;
		}
		apply(s, a, g, 1.0, dt, &r);
		s->w.pos = g->to;
		clk_advance(s->clock, (int64_t)llround(dt * 1e9));
		s->w.arm_time_s += dt;
	}
	finish(s, a, &r);
	s->last_paint_ml = r.paint_ml;
	if (a->kind == ARM_HOME)
		s->w.homed = 1;
	s->w.actions++;
	rc = persist(s, err);
	if (rc)
		return rc;
	if (f->power_loss_after > 0 && s->w.actions == f->power_loss_after) {
		/* The mains fail: the paint stays where it is, the process ends at once. */
		fprintf(stderr, "sim: power lost after action %ld\n", s->w.actions);
		_exit(SIM_POWER_LOSS_EXIT);
	}
	return 0;

out_persist:
	{
		bl_err e2;

		if (persist(s, &e2))
			log_error("%s", e2.msg);
	}
	return rc;
}

int sim_arm_home(struct arm *arm, bl_err *err)
{
	struct sim *s = arm->priv;
	struct arm_action a;
	struct arm_path p = { 0 };
	int rc;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_HOME;
	a.id = -1;
	a.speed_mm_s = s->m.limits.soft.speed_mm_s;
	a.zones = arm_default_zones(ARM_HOME);
	rc = arm_motion(&s->m, &s->w.pos, &a, &p, err);
	if (rc == 0)
		rc = sim_execute(arm, &a, &p, err);
	arm_path_free(&p);
	return rc;
}

static int sim_status(struct arm *arm, struct arm_status *st, bl_err *err)
{
	struct sim *s = arm->priv;

	(void)err;
	memset(st, 0, sizeof(*st));
	st->pos_mm = s->w.pos;
	st->homed = s->w.homed;
	st->held = s->w.held;
	st->fault = s->w.fault;
	snprintf(st->fault_msg, sizeof(st->fault_msg), "%s", s->w.fault ? s->w.fault_msg : "");
	st->arm_time_s = s->w.arm_time_s;
	return 0;
}

static int sim_hold(struct arm *arm, bl_err *err)
{
	struct sim *s = arm->priv;

	(void)err;
	s->w.held = 1;
	return 0;
}

/* An operator's resume also acknowledges a latched fault. */
static int sim_resume(struct arm *arm, bl_err *err)
{
	struct sim *s = arm->priv;

	(void)err;
	s->w.held = 0;
	s->w.fault = 0;
	s->w.fault_msg[0] = '\0';
	return 0;
}

/* The simulator executes whole actions at once, so a stop finds nothing queued: it holds. */
static int sim_stop(struct arm *arm, bl_err *err)
{
	return sim_hold(arm, err);
}

static void sim_arm_close(struct arm *arm)
{
	sim_unref(arm->priv);
}

const struct arm_ops sim_arm_ops = {
	.name = "sim",
	.home = sim_arm_home,
	.execute = sim_execute,
	.status = sim_status,
	.hold = sim_hold,
	.resume = sim_resume,
	.stop = sim_stop,
	.close = sim_arm_close,
};

/* ---- the mixing bench without the arm (mix trial) ---- */

/* An action of kind as the planner makes one, at the machine's soft speed. */
static void bench_action(const struct sim *s, enum arm_kind kind, struct arm_action *a)
{
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->id = -1;
	a->zones = arm_default_zones(kind);
	a->speed_mm_s = s->m.limits.soft.speed_mm_s;
}

/*
 * Carries out a dispense or a stir with the arm's tools but without moving
 * the arm: the same expansion into segments (from the park pose, where the
 * arm waits out of the camera's view between measurements), the same paint
 * effects per segment, and the clock advanced by the time the arm would take,
 * so the light drifts as it would during a real session.
 */
static int bench_act(struct sim *s, const struct arm_action *a, bl_err *err)
{
	const arm_point park = { s->m.park_mm[0], s->m.park_mm[1], s->m.park_mm[2] };
	struct arm_path p = { 0 };
	struct run r = { 0 };
	int rc = arm_motion(&s->m, &park, a, &p, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < p.n; i++) {
		double dt = seg_time(&s->m, &p.seg[i]);

		apply(s, a, &p.seg[i], 1.0, dt, &r);
		clk_advance(s->clock, (int64_t)llround(dt * 1e9));
	}
	finish(s, a, &r);
	arm_path_free(&p);
	s->last_paint_ml = r.paint_ml;
	s->w.actions++;
	return persist(s, err);
}

static int bench_cell(struct sim *s, const char *cell, bl_err *err)
{
	int c = station_index(s->m.cells, s->m.n_cells, cell);

	if (c < 0)
		return bl_fail(err, BL_EINVAL, "sim bench: %s has no mixing cell '%s'", s->m.file,
			       cell);
	return c;
}

int sim_well_refill(struct sim *s, const char *well, double *left_ml, bl_err *err)
{
	int w = station_index(s->m.wells, s->m.n_wells, well), p;

	if (w < 0)
		return bl_fail(err, BL_EINVAL, "sim: %s has no well '%s'", s->m.file, well);
	p = s->well_paint[w];
	if (p < 0)
		return bl_fail(err, BL_EINVAL, "sim: well '%s' holds no paint in %s", well, s->m.file);
	if (left_ml)
		*left_ml = sim_pot_total(&s->w.wells[w]);
	s->w.wells[w].ml[p] = fmax(s->w.wells[w].ml[p], s->m.wells[w].capacity_ml);
	return persist(s, err);
}

int sim_bench_clear(struct sim *s, const char *cell, bl_err *err)
{
	int c = bench_cell(s, cell, err);

	if (c < 0)
		return c;
	memset(&s->w.mix[c], 0, sizeof(s->w.mix[c]));
	s->w.actions++;
	return persist(s, err);
}

int sim_bench_dispense(struct sim *s, const char *well, const char *cell, int units, bl_err *err)
{
	struct arm_action a;
	int c = bench_cell(s, cell, err);

	if (c < 0)
		return c;
	if (station_index(s->m.wells, s->m.n_wells, well) < 0)
		return bl_fail(err, BL_EINVAL, "sim bench: %s has no well '%s'", s->m.file, well);
	if (units < 1 || units > ARM_MAX_UNITS)
		return bl_fail(err, BL_EINVAL, "sim bench: %d units to dispense, not 1..%d", units,
			       ARM_MAX_UNITS);
	bench_action(s, ARM_DISPENSE, &a);
	snprintf(a.well, sizeof(a.well), "%s", well);
	snprintf(a.cell, sizeof(a.cell), "%s", cell);
	a.units = units;
	return bench_act(s, &a, err);
}

int sim_bench_stir(struct sim *s, const char *cell, int ms, bl_err *err)
{
	struct arm_action a;
	int c = bench_cell(s, cell, err);

	if (c < 0)
		return c;
	if (ms < 1 || ms > ARM_MAX_MS)
		return bl_fail(err, BL_EINVAL, "sim bench: stirring %d ms, not 1..%d", ms, ARM_MAX_MS);
	bench_action(s, ARM_STIR, &a);
	snprintf(a.cell, sizeof(a.cell), "%s", cell);
	a.depth_mm = 0.8 * s->m.cells[c].depth_mm; /* as the planner stirs */
	a.duration_ms = ms;
	return bench_act(s, &a, err);
}

int sim_bench_clean(struct sim *s, int wash_ms, bl_err *err)
{
	struct arm_action a;
	int rc;

	if (wash_ms < 1 || wash_ms > ARM_MAX_MS)
		return bl_fail(err, BL_EINVAL, "sim bench: washing %d ms, not 1..%d", wash_ms,
			       ARM_MAX_MS);
	s->w.cur_tool = SIM_TOOL_DISPENSER;
	bench_action(s, ARM_WASH, &a);
	a.duration_ms = wash_ms;
	if ((rc = bench_act(s, &a, err)))
		return rc;
	a.kind = ARM_WIPE;
	a.zones = arm_default_zones(ARM_WIPE);
	a.duration_ms = 0;
	return bench_act(s, &a, err);
}
