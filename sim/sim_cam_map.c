/* sim_cam_map.c: the simulated camera's pixel map: which surface each pixel sees (table, stations, canvas cells, markers, chart, card) and how much light falls there. */
#include <math.h>
#include <string.h>

#include "sim/sim_cam.h"

/* ---- the pixel map: which surface each pixel sees, and how much light falls there ---- */

static float light_gain(const struct sim *s, const struct sim_cam *c, int u, int v, const double p[3])
{
	const double *l = s->m.sim.light_position_mm;
	double dx = l[0] - p[0], dy = l[1] - p[1], dz = l[2] - p[2], d = sqrt(dx * dx + dy * dy + dz * dz);
	double r[3], cosa, vig;

	/* Irradiance of a point light on a horizontal surface, 1 straight under the light at z = 0. */
	double e = l[2] * l[2] * dz / (d * d * d);

	ray(c, u + 0.5, v + 0.5, r);
	cosa = 1.0 / sqrt(dot3(r, r)); /* fwd is a unit vector and r = fwd + orthogonal parts */
	vig = 1.0 - s->m.sim.vignetting * (1.0 - cosa * cosa * cosa * cosa);
	return (float)(e * vig);
}

static void set_px(const struct sim *s, struct sim_cam *c, int u, int v, uint32_t src,
		   const double p[3])
{
	size_t i = (size_t)v * c->w + u;

	c->src[i] = src;
	c->gain[i] = light_gain(s, c, u, v, p);
}

static void map_stations(const struct sim *s, struct sim_cam *c, const struct machine_station *st,
			 int n, uint32_t src0, int sectors, uint32_t fixed_src)
{
	for (int i = 0; i < n; i++) {
		const struct machine_station *t = &st[i];
		double r = t->radius_mm, zs = t->surface_z_mm;
		struct bbox b = bbox_rect(c, t->center_mm[0] - r, t->center_mm[1] - r,
					  t->center_mm[0] + r, t->center_mm[1] + r, fmax(zs, 0.0),
					  fmin(zs, 0.0));

		for (int v = b.y0; v <= b.y1; v++)
			for (int u = b.x0; u <= b.x1; u++) {
				double p0[3], ps[3], dx, dy;
				uint32_t src;

				/* Through the hole in the board (or onto a raised pad)... */
				if (zs < 0.0) {
					if (!hit(c, u + 0.5, v + 0.5, 0.0, p0))
						continue;
					dx = p0[0] - t->center_mm[0];
					dy = p0[1] - t->center_mm[1];
					if (dx * dx + dy * dy > r * r)
						continue;
				}
				if (!hit(c, u + 0.5, v + 0.5, zs, ps))
					continue;
				dx = ps[0] - t->center_mm[0];
				dy = ps[1] - t->center_mm[1];
				if (dx * dx + dy * dy > r * r) {
					/* ...to the paint, or to the inner wall it hides behind. */
					if (zs < 0.0)
						set_px(s, c, u, v, (uint32_t)(c->ncell + SRC_WALL), p0);
					continue;
				}
				if (fixed_src) {
					src = fixed_src;
				} else if (sectors) {
					double rho = sqrt(dx * dx + dy * dy) / r;
					double a = atan2(dy, dx) / (2.0 * M_PI) + 0.5 + 0.35 * rho;
					int k = (int)floor(a * SIM_CAM_NSECT) % SIM_CAM_NSECT;

					src = src0 + (uint32_t)(i * SIM_CAM_NSECT + k);
				} else {
					src = src0 + (uint32_t)i;
				}
				set_px(s, c, u, v, src, ps);
			}
	}
}

/* A point on the canvas where it truly lies, machine mm. */
void sim_cam_canvas_at(const struct sim *s, double x_mm, double y_mm, double out[2])
{
	struct machine_pt p = xform_to_machine(&s->canvas_xf, (struct canvas_pt){ x_mm, y_mm });

	out[0] = p.x;
	out[1] = p.y;
}

/* Corner markers (their one definition is vision/canvas.h): centre of marker id, machine mm. */
void sim_cam_marker_center(const struct sim *s, const struct vis_markers *mk, int id, double out[2])
{
	double c[2];

	vis_marker_centre(mk, id, c);
	sim_cam_canvas_at(s, c[0], c[1], out);
}

const char *const sim_cam_marker_names[4] = { "origin", "x", "xy", "y" };

static void chart_geometry(const struct machine *m, double *x0, double *y1, double *w, double *h)
{
	double p = m->sim.chart_patch_mm, g = m->sim.chart_gap_mm;

	*w = 6.0 * p + 7.0 * g;
	*h = 4.0 * p + 5.0 * g;
	*x0 = m->sim.chart_center_mm[0] - 0.5 * *w;
	*y1 = m->sim.chart_center_mm[1] + 0.5 * *h;
}

/* Patch (row, col) of the chart as a machine-coordinate square: row 0 is the far (top) row. */
static void chart_patch_rect(const struct machine *m, int k, double r[4])
{
	double x0, y1, w, h, p = m->sim.chart_patch_mm, g = m->sim.chart_gap_mm;
	int row = k / 6, col = k % 6;

	chart_geometry(m, &x0, &y1, &w, &h);
	r[0] = x0 + g + col * (p + g);
	r[2] = r[0] + p;
	r[3] = y1 - g - row * (p + g);
	r[1] = r[3] - p;
}

/* Card coordinates (mm from its top left, y down the card) of a machine point. */
static void card_coords(const struct sim_card *k, const double p[3], double *x, double *y)
{
	*x = p[0] - (k->center_mm[0] - 0.5 * k->size_mm[0]);
	*y = (k->center_mm[1] + 0.5 * k->size_mm[1]) - p[1];
}

/* The card: paper, its four markers, and each box's paint. */
static void card_map(struct sim *s, struct sim_cam *c, double z)
{
	const struct sim_card *k = &s->card;
	const double W = k->size_mm[0], H = k->size_mm[1], in = k->marker_inset_mm;
	const double k_size = k->marker_size_mm;
	const double mk[4][2] = { { in, in }, { W - in, in }, { W - in, H - in }, { in, H - in } };
	struct bbox b = bbox_rect(c, k->center_mm[0] - 0.5 * W, k->center_mm[1] - 0.5 * H,
				  k->center_mm[0] + 0.5 * W, k->center_mm[1] + 0.5 * H, z, z);

	for (int v = b.y0; v <= b.y1; v++)
		for (int u = b.x0; u <= b.x1; u++) {
			double p[3], x, y;
			uint32_t src = (uint32_t)(c->ncell + SRC_PAPER);
			int done = 0;

			if (!hit(c, u + 0.5, v + 0.5, z, p))
				continue;
			card_coords(k, p, &x, &y);
			if (x < 0 || y < 0 || x > W || y > H)
				continue;
			for (int i = 0; i < 4 && !done; i++) {
				int pat = vis_marker_pattern(i, x - mk[i][0], y - mk[i][1], k_size);

				if (pat >= 0) {
					src = (uint32_t)(c->ncell + (pat ? SRC_INK : SRC_PAPER));
					done = 1;
				}
			}
			for (int i = 0; i < k->n && !done; i++) {
				const double *r = k->box[i].rect_mm;

				if (x >= r[0] && x < r[0] + r[2] && y >= r[1] && y < r[1] + r[3]) {
					src = (uint32_t)(c->card0 + i);
					done = 1;
				}
			}
			set_px(s, c, u, v, src, p);
		}
}

void sim_cam_forget_map(struct sim *s)
{
	if (!s->cam)
		return;
	s->cam->map_scene = -1;
	for (int i = 0; i < s->card.n; i++) {
		double r[SIM_NB];

		sim_cam_card_box_refl(s, i, r);
		sim_cam_measured_ab(s->cam, r, s->cam->src_ab[s->cam->card0 - s->cam->ncell + i]);
	}
}

/* The table under everything, and the room beyond it where no ray meets the table. */
static void map_table(struct sim *s, struct sim_cam *c)
{
	for (int v = 0; v < c->h; v++)
		for (int u = 0; u < c->w; u++) {
			double p[3];

			if (hit(c, u + 0.5, v + 0.5, 0.0, p)) {
				set_px(s, c, u, v, (uint32_t)(c->ncell + SRC_TABLE), p);
			} else {
				c->src[(size_t)v * c->w + u] = (uint32_t)(c->ncell + SRC_WALL);
				c->gain[(size_t)v * c->w + u] = 0.05f; /* the room beyond the table */
			}
		}
}

/* The canvas where it truly lies (its placement unknown to the machine file), cell by cell. */
static void map_canvas(struct sim *s, struct sim_cam *c)
{
	const double *cs = s->m.canvas.size_mm, cz = s->m.canvas.surface_z_mm;
	double lo[2] = { INFINITY, INFINITY }, hi[2] = { -INFINITY, -INFINITY };
	struct bbox b;

	for (int k = 0; k < 4; k++) {
		double q[2];

		sim_cam_canvas_at(s, (k & 1) ? cs[0] : 0.0, (k & 2) ? cs[1] : 0.0, q);
		lo[0] = fmin(lo[0], q[0]);
		lo[1] = fmin(lo[1], q[1]);
		hi[0] = fmax(hi[0], q[0]);
		hi[1] = fmax(hi[1], q[1]);
	}
	b = bbox_rect(c, lo[0], lo[1], hi[0], hi[1], cz, cz);
	for (int v = b.y0; v <= b.y1; v++)
		for (int u = b.x0; u <= b.x1; u++) {
			double p[3];
			struct canvas_pt q;
			int ix, iy;

			if (!hit(c, u + 0.5, v + 0.5, cz, p))
				continue;
			q = xform_to_canvas(&s->canvas_xf, (struct machine_pt){ p[0], p[1] });
			if (q.x < 0 || q.y < 0 || q.x >= cs[0] || q.y >= cs[1])
				continue;
			ix = (int)(q.x / s->w.cell_mm);
			iy = (int)(q.y / s->w.cell_mm);
			if (ix >= s->w.nx)
				ix = s->w.nx - 1;
			if (iy >= s->w.ny)
				iy = s->w.ny - 1;
			set_px(s, c, u, v, (uint32_t)iy * s->w.nx + ix, p);
		}
}

/* The canvas's four corner markers, their patterns along its edges. */
static void map_markers(struct sim *s, struct sim_cam *c)
{
	const double cz = s->m.canvas.surface_z_mm;
	struct vis_markers mk;

	vis_markers_from_machine(&s->m, &mk);
	for (int id = 0; id < 4; id++) {
		/* The square's bounding box however the canvas is turned (sqrt 2 of its half side). */
		double mc[2], cc[2], hs = vis_marker_reach_mm(&mk) * M_SQRT2;
		struct bbox b;

		vis_marker_centre(&mk, id, cc);
		sim_cam_marker_center(s, &mk, id, mc);
		b = bbox_rect(c, mc[0] - hs, mc[1] - hs, mc[0] + hs, mc[1] + hs, cz, cz);
		for (int v = b.y0; v <= b.y1; v++)
			for (int u = b.x0; u <= b.x1; u++) {
				double p[3];
				struct canvas_pt q;
				int k;

				if (!hit(c, u + 0.5, v + 0.5, cz, p))
					continue;
				q = xform_to_canvas(&s->canvas_xf, (struct machine_pt){ p[0], p[1] });
				k = vis_marker_pattern(id, q.x - cc[0], q.y - cc[1], mk.size_mm);
				if (k >= 0)
					set_px(s, c, u, v, (uint32_t)(c->ncell + (k ? SRC_INK : SRC_PAPER)), p);
			}
	}
}

/* The colour chart, 1 mm above the canvas: its frame and patches. */
static void map_chart(struct sim *s, struct sim_cam *c)
{
	const struct machine *m = &s->m;
	double x0, y1, w, h, z = m->canvas.surface_z_mm + 1.0;
	struct bbox b;

	chart_geometry(m, &x0, &y1, &w, &h);
	b = bbox_rect(c, x0, y1 - h, x0 + w, y1, z, z);
	for (int v = b.y0; v <= b.y1; v++)
		for (int u = b.x0; u <= b.x1; u++) {
			double p[3], rc[4];
			uint32_t src = (uint32_t)(c->ncell + SRC_FRAME);

			if (!hit(c, u + 0.5, v + 0.5, z, p) || p[0] < x0 || p[0] > x0 + w || p[1] < y1 - h ||
			    p[1] > y1)
				continue;
			for (int k = 0; k < SIM_CHART_N; k++) {
				chart_patch_rect(m, k, rc);
				if (p[0] >= rc[0] && p[0] < rc[2] && p[1] >= rc[1] && p[1] < rc[3]) {
					src = (uint32_t)(c->chart0 + k);
					break;
				}
			}
			set_px(s, c, u, v, src, p);
		}
}

/* One card of the markers' white paper over the whole work area, 1 mm above the canvas. */
static void map_flat(struct sim *s, struct sim_cam *c)
{
	const struct machine *m = &s->m;

	for (int v = 0; v < c->h; v++)
		for (int u = 0; u < c->w; u++) {
			double p[3];

			if (hit(c, u + 0.5, v + 0.5, m->canvas.surface_z_mm + 1.0, p) &&
			    p[0] >= m->work_min_mm[0] && p[0] <= m->work_max_mm[0] &&
			    p[1] >= m->work_min_mm[1] && p[1] <= m->work_max_mm[1])
				set_px(s, c, u, v, (uint32_t)(c->ncell + SRC_PAPER), p);
		}
}

/* Which source each pixel sees in the scene, nearest last: table, stations, canvas, markers, the scene's own. */
void sim_cam_build_map(struct sim *s, struct sim_cam *c, enum sim_scene scene)
{
	const struct machine *m = &s->m;

	c->gain_max = 0.0f;
	map_table(s, c);
	map_stations(s, c, m->wells, m->n_wells, (uint32_t)c->well0, 0, 0);
	map_stations(s, c, m->cells, m->n_cells, (uint32_t)c->cell0, 1, 0);
	map_stations(s, c, &m->water, 1, 0, 0, (uint32_t)(c->ncell + SRC_WATER));
	map_stations(s, c, &m->wipe, 1, 0, 0, (uint32_t)(c->ncell + SRC_PAD));
	map_canvas(s, c);
	map_markers(s, c);
	if (scene == SIM_SCENE_CHART && m->sim.has_chart)
		map_chart(s, c);
	if (scene == SIM_SCENE_CARD && s->has_card)
		card_map(s, c, m->canvas.surface_z_mm + 0.5);
	if (scene == SIM_SCENE_FLAT)
		map_flat(s, c);
	for (size_t i = 0; i < (size_t)c->w * c->h; i++)
		if (c->gain[i] > c->gain_max)
			c->gain_max = c->gain[i];
	c->expo = 0.85f / c->gain_max; /* a perfect white at the brightest spot reads 85 % */
	c->map_scene = (int)scene;
}

