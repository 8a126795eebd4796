/* motion.c: expands typed actions into the straight segments the tool follows, shared by the gate and every backend. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arm/action.h"

/* Segments of a circle when stirring or swirling: 16 keeps the chord error under 2% of the radius. */
#define CIRCLE_SEGMENTS 16
/* Most loops one stir or wash makes, whatever its duration: a cap on path size. */
#define MAX_LOOPS 200

static int push(struct arm_path *p, arm_point from, arm_point to, double speed,
		enum arm_zone zone, unsigned flags, int dwell_ms, bl_err *err)
{
	struct arm_segment *s;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct arm_segment *ns = realloc(p->seg, cap * sizeof(*ns));

		if (!ns)
			return bl_fail(err, BL_ENOMEM, "out of memory expanding motion");
		p->seg = ns;
		p->cap = cap;
	}
	s = &p->seg[p->n++];
	s->from = from;
	s->to = to;
	s->speed_mm_s = speed;
	s->zone = zone;
	s->flags = flags;
	s->dwell_ms = dwell_ms;
	return 0;
}

/* Walks the tool: a cursor that appends a segment for every step. */
struct walker {
	const struct machine *m;
	struct arm_path *path;
	arm_point at;
	double speed;
	bl_err *err;
	int rc;
};

static void go(struct walker *w, double x, double y, double z, enum arm_zone zone, unsigned flags)
{
	arm_point to = { x, y, z };

	if (w->rc)
		return;
	if (to.x == w->at.x && to.y == w->at.y && to.z == w->at.z && !(flags & ARM_SEG_DWELL))
		return;
	w->rc = push(w->path, w->at, to, w->speed, zone, flags, 0, w->err);
	w->at = to;
}

/* Up to travel height (if below it), across, and down to z: the one way between stations. */
static void travel_to(struct walker *w, double x, double y, double z, enum arm_zone arrive)
{
	double tz = w->m->travel_z_mm;

	if (w->at.z < tz)
		go(w, w->at.x, w->at.y, tz, ARM_ZONE_TRAVEL, 0);
	go(w, x, y, w->at.z, ARM_ZONE_TRAVEL, 0);
	go(w, x, y, z, arrive, 0);
}

static void lift(struct walker *w)
{
	if (w->at.z < w->m->travel_z_mm)
		go(w, w->at.x, w->at.y, w->m->travel_z_mm, ARM_ZONE_TRAVEL, 0);
}

/* Circles of radius r about (cx, cy) at the tool's height for duration_ms at the walker's speed. */
static void circles(struct walker *w, double cx, double cy, double r, int duration_ms,
		    enum arm_zone zone)
{
	double per = 2.0 * M_PI * r;
	int loops = (int)ceil(w->speed * duration_ms / 1000.0 / per);

	if (loops < 1)
		loops = 1;
	if (loops > MAX_LOOPS)
		loops = MAX_LOOPS;
	go(w, cx + r, cy, w->at.z, zone, 0);
	for (int l = 0; l < loops; l++)
		for (int k = 1; k <= CIRCLE_SEGMENTS; k++) {
			double t = 2.0 * M_PI * k / CIRCLE_SEGMENTS;

			go(w, cx + r * cos(t), cy + r * sin(t), w->at.z, zone, 0);
		}
	go(w, cx, cy, w->at.z, zone, 0);
}

static int need(const void *found, const char *what, const char *name, bl_err *err)
{
	if (found)
		return 0;
	return bl_fail(err, BL_EINVAL, "%s '%s' is not on this machine", what, name);
}

int arm_motion(const struct machine *m, const arm_point *from, const struct arm_action *a,
	       struct arm_path *path, bl_err *err)
{
	struct walker w = { m, path, *from, a->speed_mm_s, err, 0 };
	const struct machine_station *well = NULL, *cell = NULL;
	int rc;

	path->n = 0;
	if ((a->kind == ARM_DIP && !a->cell[0]) || a->kind == ARM_DISPENSE) {
		well = machine_find_well(m, a->well);
		if ((rc = need(well, "well", a->well, err)))
			return rc;
	}
	if (a->kind == ARM_DISPENSE || a->kind == ARM_STIR || (a->kind == ARM_DIP && a->cell[0])) {
		cell = machine_find_cell(m, a->cell);
		if ((rc = need(cell, "mixing cell", a->cell, err)))
			return rc;
	}
	if ((a->kind == ARM_DIP || a->kind == ARM_STROKE) &&
	    (rc = need(machine_find_brush(m, a->brush), "brush", a->brush, err)))
		return rc;

	if ((unsigned)a->kind >= ARM_KIND_COUNT)
		return bl_fail(err, BL_EINVAL, "unknown action kind %d", (int)a->kind);
	switch (a->kind) {
	case ARM_HOME:
		travel_to(&w, m->home_mm[0], m->home_mm[1], m->home_mm[2], ARM_ZONE_TRAVEL);
		break;
	case ARM_PARK:
		travel_to(&w, m->park_mm[0], m->park_mm[1], m->park_mm[2], ARM_ZONE_TRAVEL);
		break;
	case ARM_MOVE:
		go(&w, a->target.x, a->target.y, a->target.z, ARM_ZONE_TRAVEL, 0);
		break;
	case ARM_JOG:
		go(&w, w.at.x + a->target.x, w.at.y + a->target.y, w.at.z + a->target.z,
		   ARM_ZONE_TRAVEL, 0);
		break;
	case ARM_STROKE:
		travel_to(&w, a->points[0].x, a->points[0].y, a->points[0].z, ARM_ZONE_CANVAS);
		for (size_t i = 1; i < a->n_points; i++)
			go(&w, a->points[i].x, a->points[i].y, a->points[i].z, ARM_ZONE_CANVAS,
			   ARM_SEG_PAINTS);
		lift(&w);
		break;
	case ARM_DIP: {
		/* A mixed colour is loaded from its mixing cell, a base paint from its well. */
		const struct machine_station *src = cell ? cell : well;
		enum arm_zone zone = cell ? ARM_ZONE_CELL : ARM_ZONE_WELL;

		travel_to(&w, src->center_mm[0], src->center_mm[1], w.at.z, ARM_ZONE_TRAVEL);
		go(&w, src->center_mm[0], src->center_mm[1], src->surface_z_mm - a->depth_mm, zone,
		   ARM_SEG_LOADS);
		lift(&w);
		break;
	}
	case ARM_DISPENSE:
		/* One trip a unit: the brush carries one dispense unit at a time. */
		for (int u = 0; u < a->units && !w.rc; u++) {
			travel_to(&w, well->center_mm[0], well->center_mm[1], w.at.z,
				  ARM_ZONE_TRAVEL);
			go(&w, well->center_mm[0], well->center_mm[1],
			   well->surface_z_mm - well->depth_mm, ARM_ZONE_WELL, ARM_SEG_LOADS);
			travel_to(&w, cell->center_mm[0], cell->center_mm[1],
				  cell->surface_z_mm - cell->depth_mm, ARM_ZONE_CELL);
			w.path->seg[w.path->n - 1].flags |= ARM_SEG_DEPOSITS;
		}
		lift(&w);
		break;
	case ARM_STIR:
		travel_to(&w, cell->center_mm[0], cell->center_mm[1], cell->surface_z_mm - a->depth_mm,
			  ARM_ZONE_CELL);
		circles(&w, cell->center_mm[0], cell->center_mm[1], cell->radius_mm * 0.5,
			a->duration_ms, ARM_ZONE_CELL);
		lift(&w);
		break;
	case ARM_WIPE: {
		const struct machine_station *p = &m->wipe;
		double h = p->radius_mm * 0.6;

		travel_to(&w, p->center_mm[0] - h, p->center_mm[1], p->surface_z_mm - p->depth_mm,
			  ARM_ZONE_WIPE);
		go(&w, p->center_mm[0] + h, p->center_mm[1], w.at.z, ARM_ZONE_WIPE, 0);
		lift(&w);
		break;
	}
	case ARM_WASH: {
		const struct machine_station *p = &m->water;

		travel_to(&w, p->center_mm[0], p->center_mm[1], p->surface_z_mm - p->depth_mm,
			  ARM_ZONE_WATER);
		circles(&w, p->center_mm[0], p->center_mm[1], p->radius_mm * 0.5, a->duration_ms,
			ARM_ZONE_WATER);
		lift(&w);
		break;
	}
	case ARM_KIND_COUNT:
		break; /* refused above */
	}
	return w.rc;
}

void arm_path_free(struct arm_path *p)
{
	free(p->seg);
	p->seg = NULL;
	p->n = p->cap = 0;
}

double arm_move_time_s(double length_mm, double speed_mm_s, double accel_mm_s2)
{
	double ramp_mm;

	if (length_mm <= 0.0 || speed_mm_s <= 0.0 || accel_mm_s2 <= 0.0)
		return 0.0;
	/* Distance to reach full speed and stop again. */
	ramp_mm = speed_mm_s * speed_mm_s / accel_mm_s2;
	if (length_mm >= ramp_mm)
		return length_mm / speed_mm_s + speed_mm_s / accel_mm_s2;
	return 2.0 * sqrt(length_mm / accel_mm_s2);
}

double arm_segment_length(const struct arm_segment *s)
{
	double dx = s->to.x - s->from.x, dy = s->to.y - s->from.y, dz = s->to.z - s->from.z;

	return sqrt(dx * dx + dy * dy + dz * dz);
}
