/* sim.c: opening and closing the simulated world, the bench entry that executes actions, and figures about the world. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color/color.h"
#include "sim/sim_internal.h"

const char *const sim_scene_names[] = { "canvas", "swatches", "chart", "card", "flat", NULL };

double sim_now_s(struct sim *s)
{
	return (double)clk_now_ns(s->clock) * 1e-9;
}

static void fp_mix(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= c[i];
		*h *= 0x100000001b3ULL;
	}
}

/* What a world file must have been made with: the geometry it holds and what its paints are. */
static uint64_t fingerprint(const struct sim *s)
{
	const struct machine *m = &s->m;
	uint64_t h = 0xcbf29ce484222325ULL;

	fp_mix(&h, &s->w.nx, sizeof(s->w.nx));
	fp_mix(&h, &s->w.ny, sizeof(s->w.ny));
	fp_mix(&h, &m->sim.cell_mm, sizeof(m->sim.cell_mm));
	fp_mix(&h, m->canvas.origin_mm, sizeof(m->canvas.origin_mm));
	fp_mix(&h, m->sim.canvas_offset_mm, sizeof(m->sim.canvas_offset_mm));
	fp_mix(&h, &m->sim.canvas_rotation_deg, sizeof(m->sim.canvas_rotation_deg));
	fp_mix(&h, &m->n_wells, sizeof(m->n_wells));
	fp_mix(&h, &m->n_cells, sizeof(m->n_cells));
	fp_mix(&h, &m->n_brushes, sizeof(m->n_brushes));
	fp_mix(&h, s->well_paint, sizeof(int) * (size_t)m->n_wells);
	fp_mix(&h, &m->sim.batch_variation, sizeof(m->sim.batch_variation));
	for (int i = 0; i < s->paints.n; i++)
		fp_mix(&h, s->paints.p[i].name, strlen(s->paints.p[i].name));
	return h;
}

static int assign_paints(struct sim *s, bl_err *err)
{
	const struct machine *m = &s->m;

	for (int i = 0; i < CFG_MAX_WELLS; i++)
		s->well_paint[i] = -1;
	if (m->sim.n_paints == 0) {
		/* No list: the measured set fills the wells in its own order. */
		for (int i = 0; i < m->n_wells && i < s->paints.n; i++)
			s->well_paint[i] = i;
		return 0;
	}
	for (int k = 0; k < m->sim.n_paints; k++) {
		int p = sim_paint_find(&s->paints, m->sim.paint_name[k]);

		if (p < 0) {
			char known[512] = "";

			for (int i = 0; i < s->paints.n; i++) {
				strncat(known, s->paints.p[i].name, sizeof(known) - strlen(known) - 3);
				if (i + 1 < s->paints.n)
					strncat(known, ", ", sizeof(known) - strlen(known) - 1);
			}
			return bl_fail(err, BL_EINVAL, "%s: sim.paints.%s: unknown paint '%s' (the "
				       "measured set has: %s)", m->file, m->sim.paint_well[k],
				       m->sim.paint_name[k], known);
		}
		for (int i = 0; i < m->n_wells; i++)
			if (strcmp(m->wells[i].name, m->sim.paint_well[k]) == 0)
				s->well_paint[i] = p;
	}
	return 0;
}

int sim_open(const struct machine *m, const struct sim_options *o, clk *clock, struct sim **out,
	     bl_err *err)
{
	return sim_open_owned(m, o, NULL, clock, out, err);
}

int sim_open_owned(const struct machine *m, const struct sim_options *o, const char *owner, clk *clock,
		   struct sim **out, bl_err *err)
{
	struct sim *s;
	rng batch;
	int exists = 0, rc;
	uint64_t seed = o && o->seed_given ? o->seed : 1;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return bl_fail(err, BL_ENOMEM, "sim: out of memory");
	s->refs = 1;
	s->log_fd = -1;
	s->m = *m;
	{
		double at[2] = { m->canvas.origin_mm[0] + m->sim.canvas_offset_mm[0],
				 m->canvas.origin_mm[1] + m->sim.canvas_offset_mm[1] };

		xform_place(&s->canvas_xf, at, m->sim.canvas_rotation_deg);
	}
	s->clock = clock;
	clk_virtual_init(clock, 0);
	if (o && o->world_file) {
		uint64_t wseed;

		if (snprintf(s->world_file, sizeof(s->world_file), "%s", o->world_file) >=
		    (int)sizeof(s->world_file)) {
			rc = bl_fail(err, BL_EINVAL, "%s: world file path too long", o->world_file);
			goto out_free;
		}
		rc = sim_world_peek_seed(o->world_file, &exists, &wseed, err);
		if (rc)
			goto out_free;
		if (exists) {
			if (o->seed_given && o->seed != wseed) {
				rc = bl_fail(err, BL_EINVAL, "%s: the world was made with seed %llu, "
					     "not %llu (leave --seed out to continue it)",
					     o->world_file, (unsigned long long)wseed,
					     (unsigned long long)o->seed);
				goto out_free;
			}
			seed = wseed;
		}
	}
	s->seed = seed;
	rc = sim_paints_derive(&s->paints, NULL, err);
	if (rc)
		goto out_free;
	rng_fork(&batch, seed, "sim.batch");
	sim_paints_perturb(&s->paints, &batch, m->sim.batch_variation);
	for (int i = 0; i < s->paints.n; i++)
		for (int j = 0; j < SIM_NB; j++) {
			s->kf[i][j] = (float)(s->paints.p[i].k[j] * SIM_S_PER_MM);
			s->sf[i][j] = (float)(s->paints.p[i].s[j] * SIM_S_PER_MM);
		}
	rc = assign_paints(s, err);
	if (rc)
		goto out_free;
	rc = sim_world_init(s, err);
	if (rc)
		goto out_free;
	s->fingerprint = fingerprint(s);
	if (owner && owner[0]) {
		/* Never 0, which a world file of nobody's (version 2) holds. */
		s->owner = 0xcbf29ce484222325ULL;
		fp_mix(&s->owner, owner, strlen(owner));
		s->owner |= 1;
	}
	if (exists) {
		rc = sim_world_load(s, s->world_file, err);
		if (rc)
			goto out_world;
	}
	s->arm = (struct arm){ .ops = &sim_arm_ops, .priv = s, .m = &s->m, .clock = clock };
	s->camera = (struct camera){ .ops = &sim_camera_ops, .priv = s, .m = &s->m, .clock = clock };
	*out = s;
	return 0;

out_world:
	sim_world_free(s);
out_free:
	free(s);
	return rc;
}

void sim_unref(struct sim *s)
{
	if (!s || --s->refs > 0)
		return;
	sim_cam_free(s->cam);
	cam_frame_free(&s->frozen);
	sim_store_close(s);
	sim_world_free(s);
	free(s);
}

void sim_close(struct sim *s)
{
	sim_unref(s);
}

struct arm *sim_arm(struct sim *s)
{
	s->refs++;
	return &s->arm;
}

struct camera *sim_camera(struct sim *s)
{
	s->refs++;
	return &s->camera;
}

void sim_set_scene(struct sim *s, enum sim_scene scene)
{
	s->scene = scene;
}

int sim_set_card(struct sim *s, const struct sim_card *card, bl_err *err)
{
	if (card->n < 0 || card->n > SIM_CARD_MAX)
		return bl_fail(err, BL_EINVAL, "sim card: %d boxes, at most %d", card->n, SIM_CARD_MAX);
	if (!(card->marker_size_mm > 0) || card->marker_inset_mm < 2.0 / 3.0 * card->marker_size_mm)
		return bl_fail(err, BL_EINVAL, "sim card: markers of %g mm need an inset of at least "
			       "2/3 of that, not %g", card->marker_size_mm, card->marker_inset_mm);
	for (int i = 0; i < card->n; i++) {
		if (sim_paint_find(&s->paints, card->box[i].paint) < 0)
			return bl_fail(err, BL_EINVAL, "sim card: box %d: this run has no paint '%s'", i,
				       card->box[i].paint);
		if (!(card->box[i].fraction > 0.0 && card->box[i].fraction <= 1.0))
			return bl_fail(err, BL_EINVAL, "sim card: box %d: fraction %g is outside (0, 1]",
				       i, card->box[i].fraction);
	}
	s->card = *card;
	s->has_card = 1;
	sim_cam_forget_map(s);
	return 0;
}

int sim_exec(struct sim *s, const struct arm_action *a, struct sim_exec_info *info, bl_err *err)
{
	struct arm_path p = { 0 };
	double t0 = sim_now_s(s);
	int rc;

	s->last_paint_ml = 0.0;
	rc = arm_motion(&s->m, &s->w.pos, a, &p, err);
	if (rc == 0)
		rc = s->arm.ops->execute(&s->arm, a, &p, err);
	if (info) {
		info->time_s = sim_now_s(s) - t0;
		info->segments = (int)p.n;
		info->paint_ml = s->last_paint_ml;
	}
	arm_path_free(&p);
	return rc;
}

double sim_last_paint_ml(const struct sim *s)
{
	return s->last_paint_ml;
}

void sim_get_stats(struct sim *s, struct sim_stats *st)
{
	size_t n = (size_t)s->w.nx * s->w.ny;
	double area = s->w.cell_mm * s->w.cell_mm;

	memset(st, 0, sizeof(*st));
	st->actions = s->w.actions;
	st->frames = s->w.frames;
	st->time_s = sim_now_s(s);
	st->arm_time_s = s->w.arm_time_s;
	st->seed = s->seed;
	for (size_t i = 0; i < n; i++) {
		const struct sim_cell *c = &s->w.cells[i];

		if (c->wet_mm > 0.0f || c->dry_mm > 0.0f) {
			st->painted_cells++;
			st->canvas_paint_ml += (c->wet_mm + c->dry_mm) * area / 1000.0;
			st->canvas_wet_ml += c->wet_mm * area / 1000.0;
		}
	}
}

static int find_station(const struct machine_station *l, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(l[i].name, name) == 0)
			return i;
	return -1;
}

double sim_station_ml(struct sim *s, const char *name)
{
	int i = find_station(s->m.wells, s->m.n_wells, name);

	if (i >= 0)
		return sim_pot_total(&s->w.wells[i]);
	i = find_station(s->m.cells, s->m.n_cells, name);
	if (i >= 0)
		return sim_pot_total(&s->w.mix[i]);
	return -1.0;
}

int sim_canvas_lab(struct sim *s, double x, double y, double lab[3], bl_err *err)
{
	struct canvas_pt p = xform_to_canvas(&s->canvas_xf, (struct machine_pt){ x, y });
	double cx = p.x / s->w.cell_mm, cy = p.y / s->w.cell_mm, r[SIM_NB];
	int ix = (int)floor(cx), iy = (int)floor(cy);

	if (ix < 0 || iy < 0 || ix >= s->w.nx || iy >= s->w.ny)
		return bl_fail(err, BL_EINVAL, "sim: (%g, %g) mm is not on the canvas", x, y);
	sim_world_dry(s);
	sim_cell_internal(s, &s->w.cells[(size_t)iy * s->w.nx + ix], r);
	for (int j = 0; j < SIM_NB; j++)
		r[j] = sim_saunderson(r[j]);
	sim_measured_lab(r, lab);
	return 0;
}

int sim_station_lab(struct sim *s, const char *name, double lab[3], bl_err *err)
{
	int i = find_station(s->m.wells, s->m.n_wells, name);
	const struct sim_pot *p = NULL;
	double r[SIM_NB];

	if (i >= 0)
		p = &s->w.wells[i];
	else if ((i = find_station(s->m.cells, s->m.n_cells, name)) >= 0)
		p = &s->w.mix[i];
	if (!p)
		return bl_fail(err, BL_EINVAL, "sim: no well or mixing cell named '%s'", name);
	if (sim_pot_total(p) <= 0.0)
		return bl_fail(err, BL_EINVAL, "sim: '%s' is empty", name);
	sim_paint_measured(s, p->ml, r);
	sim_measured_lab(r, lab);
	return 0;
}
