/* check.c: the gate's rules: an action expanded into segments, its geometry classified from the machine file, every broken rule a finding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safety/gate.h"

#define ZB(z) (1u << (z))
/* Geometry is compared with this slack so a point placed exactly on a limit passes. */
#define EPS_MM 1e-9
/*
 * The motion model the gate assumes of every backend: a junction turning by
 * this much or more is a stop (the tool comes to rest, ramps at the backend's
 * own acceleration); a gentler one is taken at speed, which takes a
 * centripetal acceleration v^2 / R, R the radius of the circle through the
 * three points. A stir circle of 16 chords turns 22.5 degrees a chord.
 */
#define STOP_TURN_DEG 45.0
/* Most zone footprints one path meets: canvas, wells, cells, water, wipe. */
#define MAX_REGIONS (3 + CFG_MAX_WELLS + CFG_MAX_CELLS)

static const char *zone_name(enum arm_zone z)
{
	return arm_zone_names[z];
}

static struct gate_finding *finding(struct gate_decision *d, enum gate_reason r, const char *field,
				    long seg)
{
	struct gate_finding *f;
	enum gate_verdict v = gate_reason_verdict(r);

	if (v > d->verdict)
		d->verdict = v;
	/* One finding a rule: a 4000-segment stroke under the floor is one problem, not 4000. */
	for (int i = 0; i < d->n_findings; i++)
		if (d->findings[i].reason == r)
			return NULL;
	if (d->n_findings == GATE_MAX_REASONS) {
		d->n_dropped++;
		return NULL;
	}
	f = &d->findings[d->n_findings++];
	memset(f, 0, sizeof(*f));
	f->reason = r;
	snprintf(f->field, sizeof(f->field), "%s", field ? field : "");
	f->segment = seg;
	return f;
}

static void figures(struct gate_finding *f, double value, double limit)
{
	f->has_figures = 1;
	f->value = value;
	f->limit = limit;
}

/*
 * For a stroke, the point each segment of its path ends on (pt[i], an index
 * into points_mm), found in one walk: a painting segment ends on the next
 * point that matches its end; the approach before the first says 0, the lift
 * after the painting says the last point. NULL (nothing to map) for other
 * kinds; BL_ENOMEM when it cannot be made.
 */
static int seg_points(const struct arm_action *a, const struct arm_path *p, size_t **out,
		      bl_err *err)
{
	size_t *pt, k = 0;
	int painted = 0;

	*out = NULL;
	if (a->kind != ARM_STROKE || !p->n)
		return 0;
	pt = malloc(p->n * sizeof(*pt));
	if (!pt)
		return bl_fail(err, BL_ENOMEM, "out of memory mapping a stroke's %zu segments", p->n);
	for (size_t j = 0; j < p->n; j++) {
		const struct arm_segment *s = &p->seg[j];

		if (!(s->flags & ARM_SEG_PAINTS)) {
			pt[j] = painted ? a->n_points - 1 : 0;
			continue;
		}
		painted = 1;
		while (k + 1 < a->n_points) {
			k++;
			if (a->points[k].x == s->to.x && a->points[k].y == s->to.y &&
			    a->points[k].z == s->to.z)
				break;
		}
		pt[j] = k;
	}
	*out = pt;
	return 0;
}

/* The action's key that produced segment i: what a planner has to change (pt: seg_points). */
static void seg_field(const struct arm_action *a, const struct arm_path *p, const size_t *pt,
		      size_t i, char *out, size_t n)
{
	const struct arm_segment *s = &p->seg[i];

	switch (a->kind) {
	case ARM_MOVE:
		snprintf(out, n, "to_mm");
		return;
	case ARM_JOG:
		snprintf(out, n, "delta_mm");
		return;
	case ARM_STROKE:
		snprintf(out, n, "points_mm[%zu]", pt ? pt[i] : 0);
		return;
	case ARM_DIP:
		snprintf(out, n, "%s", s->zone == ARM_ZONE_WELL || s->zone == ARM_ZONE_CELL ? "depth_mm"
				       : a->cell[0]                                     ? "cell"
											: "well");
		return;
	case ARM_STIR:
		snprintf(out, n, "%s", s->zone == ARM_ZONE_CELL ? "depth_mm" : "cell");
		return;
	case ARM_DISPENSE:
		snprintf(out, n, "%s", s->zone == ARM_ZONE_CELL ? "cell" : "well");
		return;
	case ARM_HOME:
	case ARM_WIPE:
	case ARM_WASH:
	case ARM_PARK:
	case ARM_KIND_COUNT:
		snprintf(out, n, "path[%zu]", i);
		return;
	}
}

/* "to_mm: path[3]", or just "path[3]" when that is the field: how a message says where. */
static void seg_where(const char *field, size_t i, char *out, size_t n)
{
	char seg[32];

	snprintf(seg, sizeof(seg), "path[%zu]", i);
	if (strcmp(field, seg) == 0)
		snprintf(out, n, "%s", seg);
	else
		snprintf(out, n, "%s: %s", field, seg);
}

/* A zone's footprint: the canvas rectangle or a station's circle, with the lowest z allowed in it. */
struct region {
	enum arm_zone zone;
	int round;
	double cx, cy, r;          /* round, machine mm */
	double x0, y0, x1, y1;     /* rectangle, canvas mm */
	double floor_mm;
	const char *name;
	const char *floor_key;
	const struct xform *xf;    /* the rectangle's canvas to machine */
};

static int build_regions(const struct machine *m, struct region *rg)
{
	const struct machine_z_floors *f = &m->limits.z_floor;
	int n = 0;

	rg[n++] = (struct region){ .zone = ARM_ZONE_CANVAS,
				   .x1 = m->canvas.size_mm[0],
				   .y1 = m->canvas.size_mm[1],
				   .xf = &m->xf,
				   .floor_mm = f->canvas_mm,
				   .name = "canvas",
				   .floor_key = "canvas" };
	for (int i = 0; i < m->n_wells; i++)
		rg[n++] = (struct region){ ARM_ZONE_WELL, 1, m->wells[i].center_mm[0],
					   m->wells[i].center_mm[1], m->wells[i].radius_mm,
					   0, 0, 0, 0, f->well_mm, m->wells[i].name, "well", NULL };
	for (int i = 0; i < m->n_cells; i++)
		rg[n++] = (struct region){ ARM_ZONE_CELL, 1, m->cells[i].center_mm[0],
					   m->cells[i].center_mm[1], m->cells[i].radius_mm,
					   0, 0, 0, 0, f->cell_mm, m->cells[i].name, "cell", NULL };
	rg[n++] = (struct region){ ARM_ZONE_WATER, 1, m->water.center_mm[0], m->water.center_mm[1],
				   m->water.radius_mm, 0, 0, 0, 0, f->water_mm, "water", "water", NULL };
	rg[n++] = (struct region){ ARM_ZONE_WIPE, 1, m->wipe.center_mm[0], m->wipe.center_mm[1],
				   m->wipe.radius_mm, 0, 0, 0, 0, f->wipe_mm, "wipe", "wipe", NULL };
	return n;
}

/* Clips t in [*t0, *t1] to where p + t d stays within [lo, hi] on one axis. */
static int clip_axis(double p, double d, double lo, double hi, double *t0, double *t1)
{
	if (fabs(d) < 1e-15)
		return p >= lo - EPS_MM && p <= hi + EPS_MM;
	{
		double ta = (lo - EPS_MM - p) / d, tb = (hi + EPS_MM - p) / d;

		if (ta > tb) {
			double t = ta;

			ta = tb;
			tb = t;
		}
		if (ta > *t0)
			*t0 = ta;
		if (tb < *t1)
			*t1 = tb;
	}
	return *t0 <= *t1;
}

/* The part of the segment's footprint (x, y) inside a region, as t in [0, 1]; 0 when none. */
static int region_interval(const struct region *r, const struct arm_segment *s, double *t0,
			   double *t1)
{
	double dx = s->to.x - s->from.x, dy = s->to.y - s->from.y;

	*t0 = 0.0;
	*t1 = 1.0;
	if (!r->round) {
		/* In canvas mm: the map is affine, so t along the segment is the same on both sides. */
		struct canvas_pt a = xform_to_canvas(r->xf, (struct machine_pt){ s->from.x, s->from.y });
		struct canvas_pt b = xform_to_canvas(r->xf, (struct machine_pt){ s->to.x, s->to.y });

		return clip_axis(a.x, b.x - a.x, r->x0, r->x1, t0, t1) &&
		       clip_axis(a.y, b.y - a.y, r->y0, r->y1, t0, t1);
	}
	{
		double ax = s->from.x - r->cx, ay = s->from.y - r->cy;
		double qa = dx * dx + dy * dy, qb = 2.0 * (dx * ax + dy * ay);
		double rr = r->r + EPS_MM, qc = ax * ax + ay * ay - rr * rr, disc, sq, lo, hi;

		if (qa < 1e-24)
			return qc <= 0.0;
		disc = qb * qb - 4.0 * qa * qc;
		if (disc < 0.0)
			return 0;
		sq = sqrt(disc);
		lo = (-qb - sq) / (2.0 * qa);
		hi = (-qb + sq) / (2.0 * qa);
		if (lo > *t0)
			*t0 = lo;
		if (hi < *t1)
			*t1 = hi;
		return *t0 <= *t1;
	}
}

static double z_at(const struct arm_segment *s, double t)
{
	return s->from.z + t * (s->to.z - s->from.z);
}

static int cmp_interval(const void *a, const void *b)
{
	const double *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

static int in_box(const arm_point *p, const double lo[3], const double hi[3])
{
	return p->x >= lo[0] - EPS_MM && p->x <= hi[0] + EPS_MM && p->y >= lo[1] - EPS_MM &&
	       p->y <= hi[1] + EPS_MM && p->z >= lo[2] - EPS_MM && p->z <= hi[2] + EPS_MM;
}

/* Whether the segment touches a closed box anywhere (slab test). */
static int seg_hits_box(const struct arm_segment *s, const double lo[3], const double hi[3])
{
	double t0 = 0.0, t1 = 1.0;

	return clip_axis(s->from.x, s->to.x - s->from.x, lo[0], hi[0], &t0, &t1) &&
	       clip_axis(s->from.y, s->to.y - s->from.y, lo[1], hi[1], &t0, &t1) &&
	       clip_axis(s->from.z, s->to.z - s->from.z, lo[2], hi[2], &t0, &t1);
}

/* One segment as its space checks see it: the action it is part of, and how findings name it. */
struct seg_view {
	const struct machine *m;
	const struct arm_action *a;
	const struct arm_segment *s;
	size_t i;
	char field[GATE_FIELD_MAX], where[GATE_FIELD_MAX + 24];
	struct gate_decision *d;
};

static void seg_work_area(const struct seg_view *v)
{
	const struct machine *m = v->m;
	const struct arm_segment *s = v->s;
	const arm_point *q;
	struct gate_finding *f;

	if (in_box(&s->from, m->work_min_mm, m->work_max_mm) && in_box(&s->to, m->work_min_mm, m->work_max_mm))
		return;
	q = in_box(&s->from, m->work_min_mm, m->work_max_mm) ? &s->to : &s->from;
	if (!(f = finding(v->d, GATE_R_OUTSIDE_WORK_AREA, v->field, (long)v->i)))
		return;
	snprintf(f->message, sizeof(f->message), "%s reaches (%g, %g, %g) mm, outside the work area", v->where,
		 q->x, q->y, q->z);
	snprintf(f->detail, sizeof(f->detail),
		 "%s reaches (%g, %g, %g) mm; work_area is x %g..%g, y %g..%g, z %g..%g mm", v->where, q->x, q->y,
		 q->z, m->work_min_mm[0], m->work_max_mm[0], m->work_min_mm[1], m->work_max_mm[1],
		 m->work_min_mm[2], m->work_max_mm[2]);
}

/* The first keep-out box the segment enters. */
static void seg_keep_out(const struct seg_view *v)
{
	const struct arm_segment *s = v->s;
	struct gate_finding *f;

	for (int k = 0; k < v->m->n_keep_out; k++) {
		const struct machine_box *b = &v->m->keep_out[k];

		if (!seg_hits_box(s, b->min_mm, b->max_mm))
			continue;
		if ((f = finding(v->d, GATE_R_KEEP_OUT, v->field, (long)v->i))) {
			snprintf(f->message, sizeof(f->message),
				 "%s from (%g, %g, %g) to (%g, %g, %g) mm enters keep-out zone '%s'",
				 v->where, s->from.x, s->from.y, s->from.z, s->to.x, s->to.y, s->to.z, b->name);
			snprintf(f->detail, sizeof(f->detail),
				 "%s from (%g, %g, %g) to (%g, %g, %g) mm enters zones.keep_out '%s' (%g, %g, %g)..(%g, %g, %g) mm",
				 v->where, s->from.x, s->from.y, s->from.z, s->to.x, s->to.y, s->to.z, b->name,
				 b->min_mm[0], b->min_mm[1], b->min_mm[2], b->max_mm[0], b->max_mm[1], b->max_mm[2]);
		}
		return;
	}
}

/*
 * Zones: where the footprint lies in a zone below the travel floor, the zone
 * is entered; below the zone's own floor is a finding. iv gets the parameter
 * interval of each zone the segment crosses (*niv of them).
 */
static unsigned seg_zones(const struct seg_view *v, const struct region *rg, int nrg, double iv[][2], int *niv)
{
	const struct arm_segment *s = v->s;
	double travel_floor = v->m->limits.z_floor.travel_mm;
	unsigned entered = 0;
	struct gate_finding *f;

	*niv = 0;
	for (int r = 0; r < nrg; r++) {
		double t0, t1, zmin;

		if (!region_interval(&rg[r], s, &t0, &t1))
			continue;
		iv[*niv][0] = t0;
		iv[*niv][1] = t1;
		(*niv)++;
		zmin = fmin(z_at(s, t0), z_at(s, t1));
		if (zmin < travel_floor)
			entered |= ZB(rg[r].zone);
		if (zmin < rg[r].floor_mm - EPS_MM && (f = finding(v->d, GATE_R_BELOW_FLOOR, v->field, (long)v->i))) {
			snprintf(f->message, sizeof(f->message),
				 "%s goes down to z %g mm in the %s zone (%s), below its floor", v->where, zmin,
				 zone_name(rg[r].zone), rg[r].name);
			snprintf(f->detail, sizeof(f->detail),
				 "%s goes down to z %g mm in the %s zone (%s); limits.z_floor_mm.%s is %g mm", v->where,
				 zmin, zone_name(rg[r].zone), rg[r].name, rg[r].floor_key, rg[r].floor_mm);
			figures(f, zmin, rg[r].floor_mm);
		}
	}
	return entered;
}

/* Outside every zone footprint (the gaps between the niv intervals), the travel floor holds. */
static unsigned seg_travel(const struct seg_view *v, double iv[][2], int niv)
{
	const struct arm_segment *s = v->s;
	double travel_floor = v->m->limits.z_floor.travel_mm, prev = 0.0;
	struct gate_finding *f;
	int any_gap = 0;

	qsort(iv, (size_t)niv, sizeof(iv[0]), cmp_interval);
	for (int k = 0; k <= niv; k++) {
		double g0 = prev, g1 = k < niv ? iv[k][0] : 1.0;

		if (g1 - g0 > 1e-12) {
			double zmin = fmin(z_at(s, g0), z_at(s, g1));

			any_gap = 1;
			if (zmin < travel_floor - EPS_MM &&
			    (f = finding(v->d, GATE_R_BELOW_FLOOR, v->field, (long)v->i))) {
				snprintf(f->message, sizeof(f->message),
					 "%s goes down to z %g mm outside every zone, below the travel floor", v->where,
					 zmin);
				snprintf(f->detail, sizeof(f->detail),
					 "%s goes down to z %g mm outside every zone; limits.z_floor_mm.travel is %g mm",
					 v->where, zmin, travel_floor);
				figures(f, zmin, travel_floor);
			}
		}
		if (k < niv && iv[k][1] > prev)
			prev = iv[k][1];
	}
	return any_gap || fmax(s->from.z, s->to.z) >= travel_floor ? ZB(ARM_ZONE_TRAVEL) : 0;
}

/* A zone entered that the action does not declare (the first such), and the declared bounds. */
static void seg_declared(const struct seg_view *v, unsigned entered)
{
	const struct arm_action *a = v->a;
	const double blo[3] = { a->bounds_min.x, a->bounds_min.y, a->bounds_min.z };
	const double bhi[3] = { a->bounds_max.x, a->bounds_max.y, a->bounds_max.z };
	struct gate_finding *f;

	if (entered & ~a->zones) {
		int z = 0;

		while (!((entered & ~a->zones) & ZB(z)))
			z++;
		if ((f = finding(v->d, GATE_R_UNDECLARED_ZONE, "zones", (long)v->i))) {
			snprintf(f->message, sizeof(f->message),
				 "zones: path[%zu] (from %s) enters the %s zone, which the action does not declare",
				 v->i, v->field, zone_name((enum arm_zone)z));
			memcpy(f->detail, f->message, sizeof(f->detail));
		}
	}
	if (a->has_bounds && (!in_box(&v->s->from, blo, bhi) || !in_box(&v->s->to, blo, bhi))) {
		const arm_point *q = in_box(&v->s->from, blo, bhi) ? &v->s->to : &v->s->from;

		if ((f = finding(v->d, GATE_R_OUTSIDE_BOUNDS, "bounds_mm", (long)v->i))) {
			snprintf(f->message, sizeof(f->message),
				 "bounds_mm: path[%zu] (from %s) reaches (%g, %g, %g) mm, outside the declared bounds",
				 v->i, v->field, q->x, q->y, q->z);
			memcpy(f->detail, f->message, sizeof(f->detail));
		}
	}
}

/* The zones segment i enters, its floors, keep-out boxes and the work area. */
static void check_segment_space(const struct machine *m, const struct arm_action *a,
				const struct arm_path *p, const size_t *pt, size_t i,
				const struct region *rg, int nrg, struct gate_decision *d)
{
	struct seg_view v = { .m = m, .a = a, .s = &p->seg[i], .i = i, .d = d };
	double iv[MAX_REGIONS][2];
	unsigned entered;
	int niv;

	seg_field(a, p, pt, i, v.field, sizeof(v.field));
	seg_where(v.field, i, v.where, sizeof(v.where));
	seg_work_area(&v);
	seg_keep_out(&v);
	entered = seg_zones(&v, rg, nrg, iv, &niv);
	entered |= seg_travel(&v, iv, niv);
	d->zones_entered |= entered;
	seg_declared(&v, entered);
}

static void check_paint_segment(const struct machine *m, const struct arm_action *a,
				const struct arm_path *p, const size_t *pt, size_t i,
				struct gate_decision *d)
{
	const struct arm_segment *s = &p->seg[i];
	const struct machine_brush *b = machine_find_brush(m, a->brush);
	/* In canvas mm, where the canvas is a rectangle whatever the registration turns it by. */
	double half = b ? 0.5 * b->width_mm / m->xf.scale : 0.0;
	double x0 = half, y0 = half, x1 = m->canvas.size_mm[0] - half, y1 = m->canvas.size_mm[1] - half;
	struct canvas_pt c0 = xform_to_canvas(&m->xf, (struct machine_pt){ s->from.x, s->from.y });
	struct canvas_pt c1 = xform_to_canvas(&m->xf, (struct machine_pt){ s->to.x, s->to.y });
	char field[GATE_FIELD_MAX], where[GATE_FIELD_MAX + 24];
	struct gate_finding *f;

	if (!(s->flags & ARM_SEG_PAINTS))
		return;
	if (c0.x >= x0 - EPS_MM && c0.x <= x1 + EPS_MM && c1.x >= x0 - EPS_MM && c1.x <= x1 + EPS_MM &&
	    c0.y >= y0 - EPS_MM && c0.y <= y1 + EPS_MM && c1.y >= y0 - EPS_MM && c1.y <= y1 + EPS_MM)
		return;
	seg_field(a, p, pt, i, field, sizeof(field));
	seg_where(field, i, where, sizeof(where));
	if ((f = finding(d, GATE_R_OFF_CANVAS, field, (long)i))) {
		snprintf(f->message, sizeof(f->message),
			 "%s paints from (%g, %g) to (%g, %g) mm, where brush '%s' reaches past the canvas edge",
			 where, s->from.x, s->from.y, s->to.x, s->to.y, a->brush);
		snprintf(f->detail, sizeof(f->detail),
			 "%s paints from (%g, %g) to (%g, %g) mm, canvas (%.2f, %.2f) to (%.2f, %.2f) mm; with brush '%s' (%g mm) the centre must stay in canvas x %g..%g, y %g..%g mm",
			 where, s->from.x, s->from.y, s->to.x, s->to.y, c0.x, c0.y, c1.x, c1.y,
			 a->brush, b ? b->width_mm : 0.0, x0, x1, y0, y1);
	}
}

static void check_length(const struct machine *m, const struct arm_action *a,
			 const struct arm_path *p, const size_t *pt, size_t i, struct gate_decision *d)
{
	double len = arm_segment_length(&p->seg[i]);
	const struct machine_motion_limits *soft = &m->limits.soft, *hard = &m->limits.hard;
	enum gate_reason r;
	char field[GATE_FIELD_MAX], where[GATE_FIELD_MAX + 24];
	struct gate_finding *f;

	if (len > d->longest_mm)
		d->longest_mm = len;
	if (len <= soft->move_mm + EPS_MM)
		return;
	r = len > hard->move_mm + EPS_MM ? GATE_R_MOVE_HARD : GATE_R_MOVE_SOFT;
	seg_field(a, p, pt, i, field, sizeof(field));
	seg_where(field, i, where, sizeof(where));
	if ((f = finding(d, r, field, (long)i))) {
		snprintf(f->message, sizeof(f->message),
			 "%s is one straight move of %.1f mm, longer than this machine allows%s",
			 where, len, r == GATE_R_MOVE_SOFT ? " unattended" : "");
		snprintf(f->detail, sizeof(f->detail),
			 "%s is one straight move of %.1f mm; limits.%s.move_mm is %g mm",
			 where, len, r == GATE_R_MOVE_SOFT ? "soft" : "hard",
			 r == GATE_R_MOVE_SOFT ? soft->move_mm : hard->move_mm);
		figures(f, len, r == GATE_R_MOVE_SOFT ? soft->move_mm : hard->move_mm);
	}
}

static int moving(const struct arm_segment *s)
{
	return !(s->flags & ARM_SEG_DWELL) && arm_segment_length(s) > 1e-9;
}

/* Centripetal acceleration at junctions the tool takes at speed (see STOP_TURN_DEG). */
static void check_accel(const struct machine *m, const struct arm_action *a,
			const struct arm_path *p, const size_t *pt, struct gate_decision *d)
{
	const double cos_stop = cos(STOP_TURN_DEG * M_PI / 180.0);
	double peak = 0.0;
	size_t at = 0;

	for (size_t i = 1; i < p->n; i++) {
		const struct arm_segment *s0 = &p->seg[i - 1], *s1 = &p->seg[i];
		double ux, uy, uz, vx, vy, vz, l0, l1, c, wx, wy, wz, cx, cy, cz, l2, cross, R, v, acc;

		if (!moving(s0) || !moving(s1))
			continue;
		ux = s0->to.x - s0->from.x;
		uy = s0->to.y - s0->from.y;
		uz = s0->to.z - s0->from.z;
		vx = s1->to.x - s1->from.x;
		vy = s1->to.y - s1->from.y;
		vz = s1->to.z - s1->from.z;
		l0 = sqrt(ux * ux + uy * uy + uz * uz);
		l1 = sqrt(vx * vx + vy * vy + vz * vz);
		c = (ux * vx + uy * vy + uz * vz) / (l0 * l1);
		if (c <= cos_stop)
			continue; /* a stop corner */
		/* Circumradius of A, B, C: |AB| |BC| |CA| / (2 |AB x BC|). */
		wx = s1->to.x - s0->from.x;
		wy = s1->to.y - s0->from.y;
		wz = s1->to.z - s0->from.z;
		l2 = sqrt(wx * wx + wy * wy + wz * wz);
		cx = uy * vz - uz * vy;
		cy = uz * vx - ux * vz;
		cz = ux * vy - uy * vx;
		cross = sqrt(cx * cx + cy * cy + cz * cz);
		if (cross < 1e-12 * l0 * l1)
			continue; /* straight on */
		R = l0 * l1 * l2 / (2.0 * cross);
		v = fmin(s0->speed_mm_s, s1->speed_mm_s);
		acc = v * v / R;
		if (acc > peak) {
			peak = acc;
			at = i;
		}
	}
	d->peak_accel_mm_s2 = peak;
	if (peak > m->limits.soft.accel_mm_s2 + 1e-9) {
		int hard = peak > m->limits.hard.accel_mm_s2 + 1e-9;
		double lim = hard ? m->limits.hard.accel_mm_s2 : m->limits.soft.accel_mm_s2;
		struct gate_finding *f;
		char field[GATE_FIELD_MAX];

		/* Speed is the lever; for a stroke, where on it the curve is helps too. */
		if (a->kind == ARM_STROKE)
			seg_field(a, p, pt, at - 1, field, sizeof(field)); /* the vertex ends segment at-1 */
		else
			snprintf(field, sizeof(field), "speed_mm_s");
		if ((f = finding(d, hard ? GATE_R_ACCEL_HARD : GATE_R_ACCEL_SOFT, field, (long)at))) {
			snprintf(f->message, sizeof(f->message),
				 "%s: the curve at the start of path[%zu] needs %.0f mm/s2 at speed_mm_s %g, more than this machine allows%s; slow down or widen the curve",
				 field, at, peak, a->speed_mm_s, hard ? "" : " unattended");
			snprintf(f->detail, sizeof(f->detail),
				 "%s: the curve at the start of path[%zu] needs %.0f mm/s2 at %g mm/s; limits.%s.accel_mm_s2 is %g mm/s2",
				 field, at, peak, a->speed_mm_s, hard ? "hard" : "soft", lim);
			figures(f, peak, lim);
		}
	}
}

static void check_speed(const struct machine *m, const struct arm_action *a, struct gate_decision *d)
{
	const double soft = m->limits.soft.speed_mm_s, hard = m->limits.hard.speed_mm_s;
	struct gate_finding *f;
	int is_hard;

	if (a->speed_mm_s <= soft)
		return;
	is_hard = a->speed_mm_s > hard;
	if ((f = finding(d, is_hard ? GATE_R_SPEED_HARD : GATE_R_SPEED_SOFT, "speed_mm_s", -1))) {
		snprintf(f->message, sizeof(f->message),
			 "speed_mm_s: %g mm/s is faster than this machine allows%s", a->speed_mm_s,
			 is_hard ? "" : " unattended");
		snprintf(f->detail, sizeof(f->detail),
			 "speed_mm_s: %g mm/s is above limits.%s.speed_mm_s %g mm/s%s", a->speed_mm_s,
			 is_hard ? "hard" : "soft", is_hard ? hard : soft,
			 is_hard ? "" : " (below the hard limit)");
		figures(f, a->speed_mm_s, is_hard ? hard : soft);
	}
}

/* References, amounts and counts: what can be judged before any motion is expanded. Returns 0 when expansion can go on. */
static int check_static(const struct machine *m, const struct arm_action *a,
			const struct gate_context *ctx, struct gate_decision *d)
{
	const struct machine_station *well = NULL, *cell = NULL;
	struct gate_finding *f;
	int missing = 0;

	if ((a->kind == ARM_STROKE || a->kind == ARM_DIP) && !machine_find_brush(m, a->brush)) {
		missing = 1;
		if ((f = finding(d, GATE_R_UNKNOWN_REFERENCE, "brush", -1)))
			snprintf(f->message, sizeof(f->message),
				 "brush: '%s' is not a brush of this machine", a->brush);
	}
	/* A dip loads from a paint well, or from the mixing cell holding a mixed colour. */
	if ((a->kind == ARM_DIP && !a->cell[0]) || a->kind == ARM_DISPENSE) {
		well = machine_find_well(m, a->well);
		if (!well) {
			missing = 1;
			if ((f = finding(d, GATE_R_UNKNOWN_REFERENCE, "well", -1)))
				snprintf(f->message, sizeof(f->message),
					 "well: '%s' is not a paint well of this machine", a->well);
		}
	}
	if (a->kind == ARM_DISPENSE || a->kind == ARM_STIR || (a->kind == ARM_DIP && a->cell[0])) {
		cell = machine_find_cell(m, a->cell);
		if (!cell) {
			missing = 1;
			if ((f = finding(d, GATE_R_UNKNOWN_REFERENCE, "cell", -1)))
				snprintf(f->message, sizeof(f->message),
					 "cell: '%s' is not a mixing cell of this machine", a->cell);
		}
	}
	for (int i = 0; i < d->n_findings; i++)
		if (d->findings[i].reason == GATE_R_UNKNOWN_REFERENCE && !d->findings[i].detail[0])
			memcpy(d->findings[i].detail, d->findings[i].message,
			       sizeof(d->findings[i].detail));

	check_speed(m, a, d);

	/* Too many points is refused before a path is made: its cost grows with the points. */
	if (a->kind == ARM_STROKE && a->n_points > (size_t)m->limits.max_stroke_points) {
		missing = 1;
		if ((f = finding(d, GATE_R_TOO_MANY_POINTS, "points_mm", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "points_mm: %zu points are more than this machine takes in one "
				 "stroke; split it", a->n_points);
			snprintf(f->detail, sizeof(f->detail),
				 "points_mm: %zu points; limits.max_stroke_points is %d", a->n_points,
				 m->limits.max_stroke_points);
			figures(f, (double)a->n_points, m->limits.max_stroke_points);
		}
	}
	if (a->kind == ARM_DISPENSE) {
		double ml = a->units * m->mixing.dispense_unit_ml;

		if (ml > m->mixing.cell_max_ml + 1e-12 &&
		    (f = finding(d, GATE_R_PAINT_AMOUNT, "units", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "units: %d units (%g ml) are more than a mixing cell holds", a->units,
				 ml);
			snprintf(f->detail, sizeof(f->detail),
				 "units: %d units of mixing.dispense_unit_ml %g ml = %g ml; mixing.cell_max_ml is %g ml",
				 a->units, m->mixing.dispense_unit_ml, ml, m->mixing.cell_max_ml);
			figures(f, ml, m->mixing.cell_max_ml);
		}
	}
	if ((a->kind == ARM_DIP && (well || cell)) || (a->kind == ARM_STIR && cell)) {
		const struct machine_station *st = well ? well : cell;

		if (a->depth_mm > st->depth_mm + EPS_MM &&
		    (f = finding(d, GATE_R_TOO_DEEP, "depth_mm", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "depth_mm: %g mm is deeper than %s '%s' allows", a->depth_mm,
				 well ? "well" : "cell", st->name);
			snprintf(f->detail, sizeof(f->detail),
				 "depth_mm: %g mm; %s '%s' has depth_mm %g", a->depth_mm,
				 well ? "well" : "mixing cell", st->name, st->depth_mm);
			figures(f, a->depth_mm, st->depth_mm);
		}
	}

	/* Irreversible or unusual: a person says yes. */
	if (a->override_limits && (f = finding(d, GATE_R_OVERRIDE_LIMITS, "override_limits", -1))) {
		snprintf(f->message, sizeof(f->message),
			 "override_limits: moving with limits overridden needs an operator");
		memcpy(f->detail, f->message, sizeof(f->detail));
	}
	for (int i = 0; i < m->safety.n_operator_kinds; i++) {
		if (strcmp(m->safety.operator_kinds[i], arm_kind_names[a->kind]) != 0)
			continue;
		if ((f = finding(d, GATE_R_OPERATOR_KIND, "type", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "type: a %s needs an operator on this machine", arm_kind_names[a->kind]);
			snprintf(f->detail, sizeof(f->detail),
				 "type: safety.operator_kinds lists '%s'", arm_kind_names[a->kind]);
		}
	}
	if (a->kind == ARM_HOME && m->safety.confirm_homing &&
	    (f = finding(d, GATE_R_HOMING, "type", -1))) {
		snprintf(f->message, sizeof(f->message), "type: homing needs an operator on this machine");
		snprintf(f->detail, sizeof(f->detail), "type: home, and safety.confirm_homing is true");
	}
	if (ctx && ctx->after_fault && (f = finding(d, GATE_R_AFTER_FAULT, "", -1))) {
		snprintf(f->message, sizeof(f->message),
			 "the first motion after a fault needs an operator");
		snprintf(f->detail, sizeof(f->detail),
			 "the arm reported a fault or e-stop; this is the first motion since");
	} else if (ctx && ctx->first_motion && m->safety.confirm_first_motion &&
		   (f = finding(d, GATE_R_FIRST_MOTION, "", -1))) {
		snprintf(f->message, sizeof(f->message),
			 "the first motion after connecting needs an operator");
		snprintf(f->detail, sizeof(f->detail),
			 "first motion since the gate opened, and safety.confirm_first_motion is true");
	}
	return missing ? -1 : 0;
}

int gate_check(const struct machine *m, const arm_point *from, const struct arm_action *a,
	       const struct gate_context *ctx, struct arm_path *path, struct gate_decision *d,
	       bl_err *err)
{
	struct arm_path local = { 0 };
	struct arm_path *p = path ? path : &local;
	struct region rg[MAX_REGIONS];
	struct gate_finding *f;
	size_t *pt = NULL;
	bl_err merr = { 0 };
	int nrg, rc = 0;

	memset(d, 0, sizeof(*d));
	d->verdict = GATE_ALLOW;
	d->index = -1;
	d->action_id = a->id;
	d->kind = (int)a->kind;
	d->speed_mm_s = a->speed_mm_s;
	d->from = *from;
	p->n = 0;

	if (!isfinite(from->x) || !isfinite(from->y) || !isfinite(from->z)) {
		if ((f = finding(d, GATE_R_BAD_POSITION, "", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "the tool position is unknown; home the arm first");
			snprintf(f->detail, sizeof(f->detail),
				 "the arm reports a tool position that is not finite");
		}
		goto out;
	}
	if (check_static(m, a, ctx, d) < 0)
		goto out;

	rc = arm_motion(m, from, a, p, &merr);
	if (rc) {
		if (rc == BL_ENOMEM) {
			bl_fail(err, rc, "%s", merr.msg);
			goto out;
		}
		rc = 0;
		if ((f = finding(d, GATE_R_MALFORMED, "", -1))) {
			snprintf(f->message, sizeof(f->message), "%s", merr.msg);
			snprintf(f->detail, sizeof(f->detail), "%s", merr.msg);
		}
		goto out;
	}
	d->has_path = 1;
	d->n_segments = p->n;
	d->to = p->n ? p->seg[p->n - 1].to : *from;
	if ((rc = seg_points(a, p, &pt, err)))
		goto out;
	nrg = build_regions(m, rg);
	for (size_t i = 0; i < p->n; i++) {
		d->length_mm += arm_segment_length(&p->seg[i]);
		check_segment_space(m, a, p, pt, i, rg, nrg, d);
		if (a->kind == ARM_STROKE)
			check_paint_segment(m, a, p, pt, i, d);
		check_length(m, a, p, pt, i, d);
	}
	check_accel(m, a, p, pt, d);
out:
	free(pt);
	if (!path)
		arm_path_free(&local);
	return rc;
}

static const struct {
	const char *name;
	size_t off;
} tol_kinds[] = {
	{ "mix", offsetof(struct machine_tolerances, mix_de00) },
	{ "paint", offsetof(struct machine_tolerances, paint_de00) },
};

enum gate_verdict gate_check_tolerance(const struct machine *m, const char *kind,
				       double value_de00, struct gate_decision *d)
{
	struct gate_finding *f;
	const double *limit = NULL;
	char field[GATE_FIELD_MAX];

	memset(d, 0, sizeof(*d));
	d->verdict = GATE_ALLOW;
	d->index = -1;
	d->action_id = -1;
	d->kind = -1;
	for (size_t i = 0; i < sizeof(tol_kinds) / sizeof(tol_kinds[0]); i++)
		if (kind && strcmp(kind, tol_kinds[i].name) == 0)
			limit = (const double *)((const char *)&m->tolerances + tol_kinds[i].off);
	snprintf(field, sizeof(field), "tolerance.%s_de00", kind ? kind : "");
	if (!limit) {
		if ((f = finding(d, GATE_R_BAD_VALUE, "tolerance", -1))) {
			snprintf(f->message, sizeof(f->message),
				 "tolerance: kind '%s' is not one of: mix, paint", kind ? kind : "");
			memcpy(f->detail, f->message, sizeof(f->detail));
		}
	} else if (!isfinite(value_de00)) {
		if ((f = finding(d, GATE_R_NOT_FINITE, field, -1))) {
			snprintf(f->message, sizeof(f->message), "%s: is not a finite number", field);
			memcpy(f->detail, f->message, sizeof(f->detail));
		}
	} else if (value_de00 <= 0.0) {
		if ((f = finding(d, GATE_R_BAD_VALUE, field, -1))) {
			snprintf(f->message, sizeof(f->message), "%s: %g must be positive", field,
				 value_de00);
			memcpy(f->detail, f->message, sizeof(f->detail));
		}
	} else if (value_de00 > *limit) {
		/* A planner never makes its own work pass by lowering the bar. */
		if ((f = finding(d, GATE_R_TOLERANCE, field, -1))) {
			snprintf(f->message, sizeof(f->message),
				 "%s: %g CIEDE2000 is looser than this machine accepts", field,
				 value_de00);
			snprintf(f->detail, sizeof(f->detail),
				 "%s: %g CIEDE2000 is looser than tolerances.%s_de00 %g", field,
				 value_de00, kind, *limit);
			figures(f, value_de00, *limit);
		}
	}
	return d->verdict;
}

void gate_check_homing(const struct machine *m, const struct gate_context *ctx,
		       struct gate_decision *d)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_HOME;
	a.id = -1;
	a.speed_mm_s = m->limits.soft.speed_mm_s;
	a.zones = arm_default_zones(ARM_HOME);
	memset(d, 0, sizeof(*d));
	d->verdict = GATE_ALLOW;
	d->index = -1;
	d->action_id = -1;
	d->kind = ARM_HOME;
	d->speed_mm_s = a.speed_mm_s;
	check_static(m, &a, ctx, d);
}
