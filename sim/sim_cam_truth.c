/* sim_cam_truth.c: the truth of a simulated frame: where each patch, canvas region and marker lies in the image and its true colour, as a spectrophotometer reads it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "color/cie.h"
#include "color/color.h"
#include "sim/sim_cam.h"

#define TRUTH_GRID_MM 50.0        /* canvas truth regions */
#define TRUTH_MAX_DE00 1.0        /* a canvas region is listed only when this uniform */

/* ---- truth ---- */

struct tpatch {
	char name[64];
	double lab[3];
	int x0, y0, x1, y1;  /* bounding box of its pixels */
	int any;
};

/*
 * The largest rectangle inside a patch we can vouch for: from the patch's
 * bounding box shrunk by a quarter each side, shrunk further until every
 * pixel within 2 px of it belongs to the patch and the arm hides none.
 */
static int roi_of(const struct sim_cam *c, const int *owner, int id, const struct tpatch *t,
		  int roi[4])
{
	int w = t->x1 - t->x0 + 1, h = t->y1 - t->y0 + 1;
	int x0 = t->x0 + w / 4, x1 = t->x1 - w / 4, y0 = t->y0 + h / 4, y1 = t->y1 - h / 4;

	while (x1 - x0 >= 3 && y1 - y0 >= 3) {
		int ok = 1;

		for (int v = y0 - 2; v <= y1 + 2 && ok; v++)
			for (int u = x0 - 2; u <= x1 + 2 && ok; u++) {
				size_t i;

				if (u < 0 || v < 0 || u >= c->w || v >= c->h) {
					ok = 0;
					break;
				}
				i = (size_t)v * c->w + u;
				if (owner[c->src[i]] != id || c->armmask[i])
					ok = 0;
			}
		if (ok) {
			roi[0] = x0;
			roi[1] = y0;
			roi[2] = x1 - x0 + 1;
			roi[3] = y1 - y0 + 1;
			return 1;
		}
		x0++;
		x1--;
		y0++;
		y1--;
	}
	return 0;
}

static double de00(const double a[3], const double b[3])
{
	color_lab x = { a[0], a[1], a[2] }, y = { b[0], b[1], b[2] };

	return color_de00(&x, &y);
}

/* A canvas region's truth: the Lab of its mean reflectance, when it is uniform. */
static int canvas_region(struct sim *s, int gx, int gy, double cells_per, double lab[3])
{
	int ix0 = (int)(gx * cells_per), ix1 = (int)((gx + 1) * cells_per);
	int iy0 = (int)(gy * cells_per), iy1 = (int)((gy + 1) * cells_per), touched = 0, n = 0;
	double mean[SIM_NB] = { 0 }, r[SIM_NB];

	if (ix1 > s->w.nx)
		ix1 = s->w.nx;
	if (iy1 > s->w.ny)
		iy1 = s->w.ny;
	for (int iy = iy0; iy < iy1; iy++)
		for (int ix = ix0; ix < ix1; ix++)
			touched |= s->w.cells[(size_t)iy * s->w.nx + ix].touched;
	if (!touched) {
		for (int j = 0; j < SIM_NB; j++)
			r[j] = sim_saunderson(s->w.ground[j]);
		sim_measured_lab(r, lab);
		return 1;
	}
	for (int iy = iy0; iy < iy1; iy++)
		for (int ix = ix0; ix < ix1; ix++) {
			sim_cell_internal(s, &s->w.cells[(size_t)iy * s->w.nx + ix], r);
			for (int j = 0; j < SIM_NB; j++)
				mean[j] += sim_saunderson(r[j]);
			n++;
		}
	for (int j = 0; j < SIM_NB; j++)
		mean[j] /= n;
	sim_measured_lab(mean, lab);
	for (int iy = iy0; iy < iy1; iy++)
		for (int ix = ix0; ix < ix1; ix++) {
			double l[3];

			sim_cell_internal(s, &s->w.cells[(size_t)iy * s->w.nx + ix], r);
			for (int j = 0; j < SIM_NB; j++)
				r[j] = sim_saunderson(r[j]);
			sim_measured_lab(r, l);
			if (de00(l, lab) > TRUTH_MAX_DE00)
				return 0;
		}
	return 1;
}

/*
 * An image point for the truth, with pixel centres at integer coordinates as
 * vision and the canvas file count them (the renderer's pixel u spans [u, u+1)).
 */
static cJSON *point_json(double u, double v)
{
	const double p[2] = { round((u - 0.5) * 100.0) / 100.0, round((v - 0.5) * 100.0) / 100.0 };

	return cJSON_CreateDoubleArray(p, 2);
}

/* The canvas's truth patches: TRUTH_GRID_MM squares, gnx across, gny down. */
static void truth_grid(const struct machine *m, int *gnx, int *gny)
{
	*gnx = (int)ceil(m->canvas.size_mm[0] / TRUTH_GRID_MM - 1e-9);
	*gny = (int)ceil(m->canvas.size_mm[1] / TRUTH_GRID_MM - 1e-9);
}

/* The scene's patches of known colour into tp (sized for all it may hold) and the camera sources each owns; their count. */
static int truth_patches(struct sim *s, enum sim_scene scene, const struct sim_cam *c, struct tpatch *tp,
			 int *owner)
{
	const struct machine *m = &s->m;
	struct sim_pot tmp[CFG_MAX_CELLS];
	const struct sim_pot *cells = sim_cam_scene_cells(s, scene, tmp);
	int gnx, gny;
	double cells_per = TRUTH_GRID_MM / s->w.cell_mm, ceramic = sim_saunderson_inv(SIM_R_CERAMIC);
	int np = 0;

	truth_grid(m, &gnx, &gny);
	if (scene == SIM_SCENE_SWATCHES) {
		for (int i = 0; i < m->n_wells; i++) {
			double r[SIM_NB];

			if (sim_pot_total(&s->w.wells[i]) <= 0.0)
				continue;
			sim_pot_measured(s, &s->w.wells[i], sim_cam_station_area(&m->wells[i]), ceramic, r);
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", m->wells[i].name);
			sim_measured_lab(r, tp[np].lab);
			owner[c->well0 + i] = np++;
		}
		for (int i = 0; i < m->n_cells; i++) {
			double r[SIM_NB];

			if (sim_pot_total(&cells[i]) <= 0.0 || cells[i].mixed < 0.98)
				continue;
			sim_pot_measured(s, &cells[i], sim_cam_station_area(&m->cells[i]), ceramic, r);
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", m->cells[i].name);
			sim_measured_lab(r, tp[np].lab);
			for (int k = 0; k < SIM_CAM_NSECT; k++)
				owner[c->cell0 + i * SIM_CAM_NSECT + k] = np;
			np++;
		}
	} else if (scene == SIM_SCENE_CHART && m->sim.has_chart) {
		const double (*chart)[SIM_NB] = sim_chart_spectra();

		for (int k = 0; k < SIM_CHART_N; k++) {
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", color_cc24_names[k]);
			sim_measured_lab(chart[k], tp[np].lab);
			owner[c->chart0 + k] = np++;
		}
	} else if (scene == SIM_SCENE_CARD && s->has_card) {
		for (int k = 0; k < s->card.n; k++) {
			double r[SIM_NB];

			sim_cam_card_box_refl(s, k, r);
			snprintf(tp[np].name, sizeof(tp[np].name), "%s@%g", s->card.box[k].paint,
				 s->card.box[k].fraction);
			sim_measured_lab(r, tp[np].lab);
			owner[c->card0 + k] = np++;
		}
	} else if (scene == SIM_SCENE_CANVAS) {
		for (int gy = 0; gy < gny; gy++)
			for (int gx = 0; gx < gnx; gx++) {
				int ix0 = (int)(gx * cells_per), ix1 = (int)((gx + 1) * cells_per);
				int iy0 = (int)(gy * cells_per), iy1 = (int)((gy + 1) * cells_per);

				if (!canvas_region(s, gx, gy, cells_per, tp[np].lab))
					continue;
				snprintf(tp[np].name, sizeof(tp[np].name), "canvas[%d,%d]", gx, gy);
				for (int iy = iy0; iy < iy1 && iy < s->w.ny; iy++)
					for (int ix = ix0; ix < ix1 && ix < s->w.nx; ix++)
						owner[(size_t)iy * s->w.nx + ix] = np;
				np++;
			}
	}
	return np;
}

/* The four corner markers as the camera sees them: centre, corners, whether all are in the frame. */
static cJSON *truth_markers(struct sim *s, const struct sim_cam *c)
{
	const struct machine *m = &s->m;
	cJSON *markers = cJSON_CreateArray();
	struct vis_markers mk;

	vis_markers_from_machine(m, &mk);
	for (int id = 0; id < 4; id++) {
		double mc[2], cc[2], hs = 0.5 * mk.size_mm, z = m->canvas.surface_z_mm;
		double p[3] = { 0, 0, z }, u, v;
		static const int sx[4] = { -1, 1, 1, -1 }, sy[4] = { -1, -1, 1, 1 };
		cJSON *o = cJSON_CreateObject(), *corners;
		int visible = 1;

		vis_marker_centre(&mk, id, cc);
		sim_cam_marker_center(s, &mk, id, mc);
		cJSON_AddNumberToObject(o, "id", id);
		cJSON_AddStringToObject(o, "corner", sim_cam_marker_names[id]);
		p[0] = mc[0];
		p[1] = mc[1];
		cJSON_AddItemToObject(o, "center_mm", cJSON_CreateDoubleArray(mc, 2));
		if (sim_cam_project(c, p, &u, &v, NULL))
			cJSON_AddItemToObject(o, "center", point_json(u, v));
		corners = cJSON_AddArrayToObject(o, "corners");
		for (int k = 0; k < 4; k++) {
			sim_cam_canvas_at(s, cc[0] + sx[k] * hs, cc[1] + sy[k] * hs, p);
			if (!sim_cam_project(c, p, &u, &v, NULL) || u < 0 || v < 0 || u >= c->w ||
			    v >= c->h)
				visible = 0;
			else
				cJSON_AddItemToArray(corners, point_json(u, v));
		}
		cJSON_AddBoolToObject(o, "visible", visible);
		cJSON_AddItemToArray(markers, o);
	}
	return markers;
}

int sim_cam_truth(struct sim *s, enum sim_scene scene, cJSON **out, bl_err *err)
{
	const struct machine *m = &s->m;
	struct sim_cam *c;
	struct tpatch *tp = NULL;
	int *owner = NULL, np = 0, maxp, gnx, gny;
	cJSON *root, *patches;
	int rc;

	rc = sim_cam_prepare(s, scene, err);
	if (rc)
		return rc;
	c = s->cam;
	sim_world_dry(s);
	sim_cam_arm_mask(s, c);
	truth_grid(m, &gnx, &gny);
	maxp = m->n_wells + m->n_cells + SIM_CHART_N + SIM_CARD_MAX + gnx * gny;
	tp = calloc((size_t)maxp, sizeof(*tp));
	owner = malloc((size_t)c->nsrc * sizeof(*owner));
	if (!tp || !owner) {
		rc = bl_fail(err, BL_ENOMEM, "sim: out of memory for the truth");
		goto out_free;
	}
	for (int i = 0; i < c->nsrc; i++)
		owner[i] = -1;

	np = truth_patches(s, scene, c, tp, owner);
	for (int i = 0; i < np; i++) {
		tp[i].x0 = tp[i].y0 = 1 << 30;
		tp[i].x1 = tp[i].y1 = -1;
	}
	for (int v = 0; v < c->h; v++)
		for (int u = 0; u < c->w; u++) {
			int id = owner[c->src[(size_t)v * c->w + u]];

			if (id < 0)
				continue;
			tp[id].any = 1;
			if (u < tp[id].x0)
				tp[id].x0 = u;
			if (u > tp[id].x1)
				tp[id].x1 = u;
			if (v < tp[id].y0)
				tp[id].y0 = v;
			if (v > tp[id].y1)
				tp[id].y1 = v;
		}

	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "scene", sim_scene_names[scene]);
	cJSON_AddNumberToObject(root, "width", c->w);
	cJSON_AddNumberToObject(root, "height", c->h);
	cJSON_AddNumberToObject(root, "time_s", sim_now_s(s));
	patches = cJSON_AddArrayToObject(root, "patches");
	for (int i = 0; i < np; i++) {
		int roi[4];
		double lab[3];
		cJSON *o;

		if (!tp[i].any || !roi_of(c, owner, i, &tp[i], roi))
			continue;
		for (int k = 0; k < 3; k++)
			lab[k] = round(tp[i].lab[k] * 1e4) / 1e4;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", tp[i].name);
		cJSON_AddItemToObject(o, "roi", cJSON_CreateIntArray(roi, 4));
		cJSON_AddItemToObject(o, "lab", cJSON_CreateDoubleArray(lab, 3));
		cJSON_AddItemToArray(patches, o);
	}
	cJSON_AddItemToObject(root, "markers", truth_markers(s, c));
	*out = root;
	rc = 0;
out_free:
	free(tp);
	free(owner);
	return rc;
}

int sim_truth(struct sim *s, enum sim_scene scene, cJSON **out, bl_err *err)
{
	return sim_cam_truth(s, scene, out, err);
}
