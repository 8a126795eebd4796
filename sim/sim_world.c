/* sim_world.c: the simulated world's paint: canvas cells with wet and dry films, wells, mixing cells, water, and the tools that carry paint between them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

/*
 * Brush behaviour. A brush holds load_ml after a full dip, in two places:
 * its tip, which lays paint down, and deep in the bristles (DEEP of the
 * load), which only leaks into the tip slowly and is what carries one colour
 * into the next when the brush is not washed. The tip's paint runs out along
 * reload_mm of stroke, laying a film that thins as it goes; paint the tip
 * picks up from wet canvas is laid down again further on (a smear).
 */
#define DEEP 0.15
#define DEEP_LEAK_PER_MM 0.0001 /* share of the deep paint that reaches the tip per mm of stroke */
#define DIP_MIX 0.5           /* share of the deep paint a dip stirs into the new load */
#define NOMINAL_PRESS_MM 0.5  /* press at which the stroke has its nominal width */
#define FULL_DIP_MM 2.0       /* a dip this deep loads the brush fully */
#define DIP_RELEASE 0.3       /* share of a dirty brush's paint left in the well it dips into */
#define PICKUP 0.2            /* share of the wet film a brush picks up passing once over it */
#define WIPE_TIP_KEEP 0.3     /* a wipe leaves this share of the tip's paint */
#define WIPE_DEEP_KEEP 0.8    /* and this share of the deep paint */
#define WASH_TAU_S 0.8        /* time constant of rinsing in water */
#define STIR_TAU_S 1.5        /* time constant of stirring a cell uniform */
#define DISPENSER_KEEP 0.03   /* share of a unit that stays on the spatula */

double sim_pot_total(const struct sim_pot *p)
{
	double t = 0.0;

	for (int i = 0; i < SIM_MAX_PAINTS; i++)
		t += p->ml[i];
	return t;
}

/* Moves share f of every paint from a to b (b may be NULL: the paint is lost). */
static void pot_move(struct sim_pot *a, struct sim_pot *b, double f)
{
	if (f <= 0.0)
		return;
	if (f > 1.0)
		f = 1.0;
	for (int i = 0; i < SIM_MAX_PAINTS; i++) {
		double v = a->ml[i] * f;

		a->ml[i] -= v;
		if (b)
			b->ml[i] += v;
	}
}

/* Moves ml millilitres of a's mixture into b, or all of it when a holds less. */
static double pot_take(struct sim_pot *a, struct sim_pot *b, double ml)
{
	double tot = sim_pot_total(a);

	if (tot <= 0.0 || ml <= 0.0)
		return 0.0;
	if (ml > tot)
		ml = tot;
	pot_move(a, b, ml / tot);
	return ml;
}

void sim_paint_measured(const struct sim *s, const double *ml, double r[SIM_NB])
{
	double k[SIM_NB], sc[SIM_NB];

	sim_mix_ks(&s->paints, ml, k, sc);
	for (int j = 0; j < SIM_NB; j++)
		r[j] = sim_saunderson(sc[j] > 0.0 ? sim_km_rinf(k[j] / sc[j]) : 0.0);
}

void sim_pot_measured(const struct sim *s, const struct sim_pot *p, double area_mm2,
		      double base_internal, double r[SIM_NB])
{
	double amt[SIM_MAX_PAINTS], k[SIM_NB], sc[SIM_NB];

	/* A pot's content is a film as deep as its volume over the pot's floor. */
	for (int i = 0; i < SIM_MAX_PAINTS; i++)
		amt[i] = p->ml[i] * 1000.0 / area_mm2 * SIM_S_PER_MM;
	sim_mix_ks(&s->paints, amt, k, sc);
	for (int j = 0; j < SIM_NB; j++)
		r[j] = sim_saunderson(sim_km_layer(k[j], sc[j], base_internal));
}

void sim_cell_internal(const struct sim *s, const struct sim_cell *c, double r[SIM_NB])
{
	double amt[SIM_MAX_PAINTS], k[SIM_NB], sc[SIM_NB], binder;

	if (c->wet_mm <= 0.0f) {
		for (int j = 0; j < SIM_NB; j++)
			r[j] = c->base[j];
		return;
	}
	for (int i = 0; i < SIM_MAX_PAINTS; i++)
		amt[i] = c->wet[i] * SIM_S_PER_MM;
	sim_mix_ks(&s->paints, amt, k, sc);
	binder = c->wet_mm * SIM_WET_BINDER_S * SIM_S_PER_MM;
	for (int j = 0; j < SIM_NB; j++)
		r[j] = sim_km_layer(k[j], sc[j] + binder, c->base[j]);
}

/*
 * The camera's per-cell colour runs millions of times a night, so it is
 * written as plain passes over 32 padded bands with no calls and no
 * branches: the compiler turns them into vector code at -O2. exp and sqrt
 * are done by hand for that (libm's may set errno, which stops it).
 */

/*
 * e^x for x <= 0, to about 2e-7 relative (0 below e^-87): 2^t with t
 * clamped at -126 by max(a, b) = (a + b + |a - b|) / 2, split at its
 * truncation n (t <= 0, so f = t - n is in (-1, 0]) as 2^(n-1) 2^(f+1), the
 * last by a degree-5 polynomial on (0, 1]. No float comparison, so the
 * compiler vectorises a loop of it without -fno-trapping-math.
 */
static inline float exp_neg(float x)
{
	float t = x * 1.44269504f, n, f, p;
	union {
		float f;
		int32_t i;
	} u;

	t = 0.5f * (t - 126.0f + fabsf(t + 126.0f));
	n = (float)(int32_t)t;
	f = t - n + 1.0f;
	p = 1.0f + f * (0.69314718f + f * (0.24022650f + f * (0.05550411f + f * (0.00961813f +
										     f * 0.00133336f))));
	u.i = ((int32_t)n + 126) << 23;
	return p * u.f;
}

/* sqrt(x) for x >= 1e-12 from the inverse square root: a bit-level guess and three Newton steps. */
static inline float sqrt_pos(float x)
{
	union {
		float f;
		int32_t i;
	} u;
	float y;

	u.f = x;
	u.i = 0x5f3759df - (u.i >> 1);
	y = u.f;
	y = y * (1.5f - 0.5f * x * y * y);
	y = y * (1.5f - 0.5f * x * y * y);
	y = y * (1.5f - 0.5f * x * y * y);
	return x * y;
}

/*
 * Reflectance of a cell with its wet film in single precision: internal
 * (a = 1, k2 = 0) or as measured (Saunderson's a and k2), with the wet
 * binder's haze or without it (a film drying into the stack).
 */
static void cell_f(const struct sim *s, const struct sim_cell *c, float a, float k2, int haze,
		   float r[SIM_NBP])
{
	float kx[SIM_NBP] = { 0 }, sx[SIM_NBP], rg[SIM_NBP] = { 0 }, binder;
	float aa[SIM_NBP], bb[SIM_NBP], b[SIM_NBP], e[SIM_NBP];

	for (int j = 0; j < SIM_NB; j++)
		rg[j] = c->base[j];
	if (c->wet_mm <= 0.0f) {
		for (int j = 0; j < SIM_NBP; j++)
			r[j] = a * rg[j] / (1.0f - k2 * rg[j]);
		return;
	}
	binder = haze ? c->wet_mm * (float)(SIM_WET_BINDER_S * SIM_S_PER_MM) : 0.0f;
	/* The padding bands get a harmless film of their own: 0/0 there would be NaN. */
	for (int j = 0; j < SIM_NBP; j++)
		sx[j] = j < SIM_NB ? binder : 1.0f;
	for (int i = 0; i < s->paints.n; i++) {
		float w = c->wet[i];

		if (w <= 0.0f)
			continue;
		for (int j = 0; j < SIM_NBP; j++) {
			kx[j] += w * s->kf[i][j];
			sx[j] += w * s->sf[i][j];
		}
	}
	/*
	 * Kubelka's layer with b coth(b S X) = p / q, p = b (1 + e), q = 1 - e,
	 * e = exp(-2 b S X), multiplied through by q and with Saunderson folded
	 * in: two divisions a band, and no special case for a vanishing film (q
	 * -> 0 gives the background exactly). Short passes rather than one long
	 * chain a band, so the bands overlap; none branches, so they vectorise.
	 */
	for (int j = 0; j < SIM_NBP; j++) {
		aa[j] = 1.0f + kx[j] / sx[j];
		bb[j] = aa[j] * aa[j] - 1.0f + 1e-12f;
	}
	for (int j = 0; j < SIM_NBP; j++)
		b[j] = sqrt_pos(bb[j]);
	for (int j = 0; j < SIM_NBP; j++)
		e[j] = exp_neg(-2.0f * b[j] * sx[j]);
	for (int j = 0; j < SIM_NBP; j++) {
		float p = b[j] * (1.0f + e[j]), q = 1.0f - e[j];
		float num = q - rg[j] * (aa[j] * q - p), den = (aa[j] - rg[j]) * q + p;

		r[j] = a * num / (den - k2 * num);
	}
}

void sim_cell_measured_f(const struct sim *s, const struct sim_cell *c, float r[SIM_NBP])
{
	cell_f(s, c, (float)((1.0 - SIM_SAUNDERSON_K1) * (1.0 - SIM_SAUNDERSON_K2)),
	       (float)SIM_SAUNDERSON_K2, 1, r);
}

void sim_world_mark_wet(struct sim_world *w, size_t idx)
{
	struct sim_cell *c = &w->cells[idx];

	if (c->wet_pos >= 0)
		return;
	c->wet_pos = (int32_t)w->n_wet;
	w->wet[w->n_wet++] = (uint32_t)idx;
}

void sim_world_unmark_wet(struct sim_world *w, size_t idx)
{
	struct sim_cell *c = &w->cells[idx];
	uint32_t last;

	if (c->wet_pos < 0)
		return;
	last = w->wet[--w->n_wet];
	w->wet[c->wet_pos] = last;
	w->cells[last].wet_pos = c->wet_pos;
	c->wet_pos = -1;
}

/* The wet film becomes part of the dry stack: no binder haze, no more mixing. */
static void dry_cell(struct sim *s, struct sim_cell *c)
{
	float r[SIM_NBP];

	cell_f(s, c, 1.0f, 0.0f, 0, r);
	for (int j = 0; j < SIM_NB; j++)
		c->base[j] = r[j];
	c->dry_mm += c->wet_mm;
	memset(c->wet, 0, sizeof(c->wet));
	c->wet_mm = 0.0f;
	sim_cell_changed(&s->w, (size_t)(c - s->w.cells));
	sim_world_unmark_wet(&s->w, (size_t)(c - s->w.cells));
}

void sim_world_dry(struct sim *s)
{
	double now = sim_now_s(s), dry = s->m.sim.drying_s, oldest = HUGE_VAL;

	/* Cells only get younger when painted, so nothing is dry before oldest + drying time. */
	if (now - s->w.oldest_wet_s < dry)
		return;
	/* Backwards: drying a cell moves the last entry into its place, which was seen already. */
	for (size_t k = s->w.n_wet; k-- > 0;) {
		struct sim_cell *c = &s->w.cells[s->w.wet[k]];

		if (now - c->t_wet_s >= dry)
			dry_cell(s, c);
		else if (c->t_wet_s < oldest)
			oldest = c->t_wet_s;
	}
	s->w.oldest_wet_s = oldest;
}

int sim_world_init(struct sim *s, bl_err *err)
{
	struct sim_world *w = &s->w;
	const struct machine *m = &s->m;
	double ground[SIM_MAX_PAINTS] = { 0 }, r[SIM_NB];
	size_t n;
	int yo = sim_paint_find(&s->paints, "yellow oxide"), bk = sim_paint_find(&s->paints, "black");

	memset(w, 0, sizeof(*w));
	w->cell_mm = m->sim.cell_mm;
	w->nx = (int)ceil(m->canvas.size_mm[0] / w->cell_mm - 1e-9);
	w->ny = (int)ceil(m->canvas.size_mm[1] / w->cell_mm - 1e-9);
	n = (size_t)w->nx * w->ny;
	w->cells = calloc(n, sizeof(*w->cells));
	w->dirty = malloc(n);
	w->unsaved = calloc(n, 1);
	w->wet = malloc(n * sizeof(*w->wet));
	if (!w->cells || !w->dirty || !w->unsaved || !w->wet) {
		sim_world_free(s);
		return bl_fail(err, BL_ENOMEM, "sim: out of memory for %zu canvas cells", n);
	}
	memset(w->dirty, 1, n);

	/* Primed canvas: an opaque gesso, a titanium white faintly warmed by earth and black. */
	ground[0] = 1.0;
	if (yo >= 0)
		ground[yo] = 0.004;
	if (bk >= 0)
		ground[bk] = 0.0015;
	sim_paint_measured(s, ground, r);
	for (int j = 0; j < SIM_NB; j++)
		w->ground[j] = sim_saunderson_inv(r[j]);
	for (size_t i = 0; i < n; i++) {
		for (int j = 0; j < SIM_NB; j++)
			w->cells[i].base[j] = (float)w->ground[j];
		w->cells[i].wet_pos = -1;
	}

	for (int i = 0; i < m->n_wells; i++) {
		int p = s->well_paint[i];

		if (p < 0)
			continue;
		w->wells[i].ml[p] = m->wells[i].capacity_ml;
		if (m->sim.faults.dry_well[0] && strcmp(m->sim.faults.dry_well, m->wells[i].name) == 0)
			w->wells[i].ml[p] = m->sim.faults.dry_well_ml;
	}
	w->cur_tool = -1;
	w->oldest_wet_s = HUGE_VAL;
	w->pos = (arm_point){ m->park_mm[0], m->park_mm[1], m->park_mm[2] };
	rng_fork(&w->r_arm, s->seed, "sim.arm");
	rng_fork(&w->r_cmd, s->seed, "sim.command");
	rng_fork(&w->r_frame, s->seed, "sim.frame");
	rng_fork(&w->r_cam, s->seed, "sim.camera");
	rng_fork(&w->r_disp, s->seed, "sim.dispense");
	return 0;
}

void sim_world_free(struct sim *s)
{
	free(s->w.cells);
	free(s->w.dirty);
	free(s->w.unsaved);
	free(s->w.wet);
	s->w.cells = NULL;
	s->w.dirty = NULL;
	s->w.unsaved = NULL;
	s->w.wet = NULL;
}

/*
 * One stamp of the brush: a disc of diameter width at (x, y) leaves dv ml of
 * the tool's mixture spread over the cells it covers and picks up a share of
 * the wet paint already there (wet-in-wet mixing, and the smear of a dry
 * brush through wet paint). Returns the ml that landed on the canvas.
 */
static double stamp(struct sim *s, struct sim_pot *tool, double x, double y, double width,
		    double dv, double pick, double now)
{
	struct sim_world *w = &s->w;
	const double c = w->cell_mm, area = c * c, rad = 0.5 * width;
	/* On the canvas where it truly lies; a turn keeps the disc a disc. */
	struct canvas_pt at = xform_to_canvas(&s->canvas_xf, (struct machine_pt){ x, y });
	double cx = at.x, cy = at.y;
	int x0 = (int)floor((cx - rad) / c), x1 = (int)floor((cx + rad) / c);
	int y0 = (int)floor((cy - rad) / c), y1 = (int)floor((cy + rad) / c);
	double frac[SIM_MAX_PAINTS], tot = sim_pot_total(tool), picked[SIM_MAX_PAINTS] = { 0 };
	double landed = 0.0;
	int ncov = 0;

	/* Count the footprint first (cells whose centres it covers, at least the one under it). */
	for (int iy = y0; iy <= y1; iy++)
		for (int ix = x0; ix <= x1; ix++) {
			double dx = (ix + 0.5) * c - cx, dy = (iy + 0.5) * c - cy;

			if (dx * dx + dy * dy <= rad * rad)
				ncov++;
		}
	if (ncov == 0) {
		x0 = x1 = (int)floor(cx / c);
		y0 = y1 = (int)floor(cy / c);
		ncov = 1;
	}
	for (int i = 0; i < SIM_MAX_PAINTS; i++)
		frac[i] = tot > 0.0 ? tool->ml[i] / tot : 0.0;
	for (int iy = y0; iy <= y1; iy++) {
		for (int ix = x0; ix <= x1; ix++) {
			double dx = (ix + 0.5) * c - cx, dy = (iy + 0.5) * c - cy, film;
			struct sim_cell *cell;

			if (ncov > 1 && dx * dx + dy * dy > rad * rad)
				continue;
			if (ix < 0 || iy < 0 || ix >= w->nx || iy >= w->ny)
				continue; /* off the canvas: the paint goes on the board */
			cell = &w->cells[(size_t)iy * w->nx + ix];
			if (cell->wet_mm > 0.0f && now - cell->t_wet_s >= s->m.sim.drying_s)
				dry_cell(s, cell);
			if (cell->wet_mm > 0.0f) {
				float sum = 0.0f;

				for (int i = 0; i < SIM_MAX_PAINTS; i++) {
					float v = cell->wet[i] * (float)pick;

					cell->wet[i] -= v;
					sum += cell->wet[i];
					picked[i] += v * area / 1000.0;
				}
				cell->wet_mm = sum;
			}
			if (dv > 0.0) {
				film = dv / ncov * 1000.0 / area;
				for (int i = 0; i < SIM_MAX_PAINTS; i++)
					if (frac[i] > 0.0) {
						cell->wet[i] += (float)(film * frac[i]);
						cell->wet_mm += (float)(film * frac[i]);
					}
				landed += dv / ncov;
			}
			cell->t_wet_s = now;
			if (now < w->oldest_wet_s)
				w->oldest_wet_s = now;
			cell->touched = 1;
			sim_cell_changed(w, (size_t)(cell - w->cells));
			if (cell->wet_mm > 0.0f)
				sim_world_mark_wet(w, (size_t)(cell - w->cells));
		}
	}
	if (dv > 0.0)
		for (int i = 0; i < SIM_MAX_PAINTS; i++)
			tool->ml[i] = fmax(0.0, tool->ml[i] - dv * frac[i]);
	for (int i = 0; i < SIM_MAX_PAINTS; i++)
		tool->ml[i] += picked[i];
	return landed;
}

double sim_world_paint(struct sim *s, int tool, const struct machine_brush *b, const arm_point *a,
		       const arm_point *bp)
{
	struct sim_pot *t = &s->w.tools[tool], *deep = &s->w.deep[tool];
	double dx = bp->x - a->x, dy = bp->y - a->y, len = sqrt(dx * dx + dy * dy);
	double step = fmax(s->w.cell_mm, 0.25 * b->width_mm), landed = 0.0, now = sim_now_s(s);
	double full = (1.0 - DEEP) * b->load_ml;
	int n = (int)ceil(len / step);

	if (n < 1)
		n = 1;
	for (int k = 0; k < n; k++) {
		double u = (k + 0.5) / n, z = a->z + u * (bp->z - a->z), ds = len / n;
		double press = s->m.canvas.surface_z_mm - z, width, tip, dv = 0.0, pick;

		if (press <= 0.0)
			continue; /* above the canvas: the brush does not touch */
		width = b->width_mm * fmin(1.6, fmax(0.4, sqrt(press / NOMINAL_PRESS_MM)));
		/* A cell stays under the brush for about a width of travel: per stamp, the share that makes PICKUP over that. */
		pick = 1.0 - pow(1.0 - PICKUP, fmin(1.0, ds / width));
		pot_move(deep, t, DEEP_LEAK_PER_MM * ds);
		tip = sim_pot_total(t);
		if (tip > 0.0) {
			/* d(tip)/ds = -2 full/reload sqrt(tip/full): a full load lasts reload_mm. */
			double rate = 2.0 * full / b->reload_mm * sqrt(fmin(tip, full) / full);

			dv = fmin(tip, rate * ds);
		}
		landed += stamp(s, t, a->x + u * dx, a->y + u * dy, width, dv, pick, now);
	}
	return landed;
}

void sim_world_dip(struct sim *s, int tool, double load_ml, struct sim_pot *w, double depth_mm)
{
	struct sim_pot *t = &s->w.tools[tool], *deep = &s->w.deep[tool];
	double f = fmin(1.0, fmax(0.0, depth_mm / FULL_DIP_MM)), want_deep, want_tip, have;

	/* A dirty brush leaves some of its colour in the well or cell, and stirs some into its new load. */
	pot_move(t, w, DIP_RELEASE);
	pot_move(deep, w, DIP_RELEASE);
	pot_move(deep, t, DIP_MIX);
	want_deep = fmax(0.0, DEEP * load_ml * f - sim_pot_total(deep));
	want_tip = fmax(0.0, (1.0 - DEEP) * load_ml * f - sim_pot_total(t));
	/* A well with too little for both shares it out in proportion. */
	have = sim_pot_total(w);
	if (want_deep + want_tip > have && have > 0.0) {
		want_deep *= have / (want_deep + want_tip);
		want_tip = have - want_deep;
	}
	pot_take(w, deep, want_deep);
	pot_take(w, t, want_tip);
}

void sim_world_dispense_pick(struct sim *s, int well)
{
	struct sim_pot *t = &s->w.tools[SIM_TOOL_DISPENSER];
	double unit = s->m.mixing.dispense_unit_ml;
	double v = unit * (1.0 + s->m.sim.dispense_sd * rng_normal(&s->w.r_disp));

	if (v > 0.0)
		pot_take(&s->w.wells[well], t, v);
}

double sim_world_dispense_drop(struct sim *s, int cell)
{
	struct sim_pot *t = &s->w.tools[SIM_TOOL_DISPENSER], *c = &s->w.mix[cell];
	double keep = DISPENSER_KEEP * s->m.mixing.dispense_unit_ml, before = sim_pot_total(c);
	double give = sim_pot_total(t) - keep, after, cap = s->m.cells[cell].capacity_ml;

	if (give <= 0.0)
		return 0.0;
	pot_take(t, c, give);
	after = sim_pot_total(c);
	/* New paint sits on top unmixed. */
	c->mixed = after > 0.0 ? c->mixed * before / after : 0.0;
	if (after > cap)
		pot_move(c, NULL, (after - cap) / after); /* it overflows */
	return give;
}

void sim_world_stir(struct sim *s, int cell, double seconds)
{
	struct sim_pot *c = &s->w.mix[cell];

	if (sim_pot_total(c) > 0.0)
		c->mixed = 1.0 - (1.0 - c->mixed) * exp(-seconds / STIR_TAU_S);
}

void sim_world_wash(struct sim *s, int tool, double seconds)
{
	double f = 1.0 - exp(-seconds / WASH_TAU_S);

	pot_move(&s->w.tools[tool], &s->w.water, f);
	pot_move(&s->w.deep[tool], &s->w.water, f);
}

void sim_world_wipe(struct sim *s, int tool)
{
	pot_move(&s->w.tools[tool], NULL, 1.0 - WIPE_TIP_KEEP);
	pot_move(&s->w.deep[tool], NULL, 1.0 - WIPE_DEEP_KEEP);
}
