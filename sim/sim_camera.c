/* sim_camera.c: the simulated camera: a pinhole view of the table under an uneven, drifting light, a non-sRGB sensor with noise and white-balance error, JPEG out through TurboJPEG. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "base/prof.h"
#include "color/cie.h"
#include "color/color.h"
#include "sim/sim_cam.h"
#include "sim/sim_internal.h"
#include "sim/sim_shade.h"
#include "vision/canvas.h"

/*
 * How a frame is made. Spectra are integrated once per surface, never per
 * pixel: every pixel of the image has a precomputed source (a canvas cell, a
 * well, a sector of a mixing cell, a chart patch, the board...) and a gain
 * (the light's falloff where the ray lands, times the lens's vignetting). A
 * surface's camera response is A + tau * B, A under the light as installed
 * and B its spectral tilt, so the light's slow drift costs nothing per
 * surface. Per pixel: raw = response * gain * exposure, plus shot and read
 * noise, then white balance and colour matrix, then the sRGB curve.
 */

#define LUT_N SIM_LUT_N            /* sim_shade.h's: the eight-pixel path shares the tables */
#define GAUSS_N SIM_GAUSS_N
#define SIGMA_N SIM_SIGMA_N
#define SIGMA_PER_UNIT SIM_SIGMA_PER_UNIT

static float gauss[GAUSS_N];

/* Standard normal quantiles at (i + 0.5) / N, from erfc on a fine grid inverted by interpolation. */
static void gauss_init(void)
{
	static int done;
	enum { G = 24001 };
	static double cdf[G];
	const double x0 = -6.0, dx = 12.0 / (G - 1);
	int j = 0;

	if (done)
		return;
	for (int k = 0; k < G; k++)
		cdf[k] = 0.5 * erfc(-(x0 + k * dx) / M_SQRT2);
	for (int i = 0; i < GAUSS_N; i++) {
		double p = (i + 0.5) / GAUSS_N;

		while (j < G - 2 && cdf[j + 1] < p)
			j++;
		gauss[i] = (float)(x0 + dx * (j + (p - cdf[j]) / (cdf[j + 1] - cdf[j])));
	}
	done = 1;
}

static inline uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += SIM_SPLITMIX_GAMMA);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Runs fn on two halves of a job, the second on a thread of its own when one
 * can be started. The halves are fixed and seeded apart, so the result is
 * the same bytes whether they run together or one after the other.
 */
struct half {
	void (*fn)(struct half *h);
	struct sim *s;
	struct sim_cam *c;
	size_t from, to;
	float scale;
	uint64_t seed;
};

static void *half_main(void *arg)
{
	struct half *h = arg;

	h->fn(h);
	return NULL;
}

static void run_halves(struct half h[2])
{
	pthread_t t;
	int threaded = pthread_create(&t, NULL, half_main, &h[1]) == 0;

	h[0].fn(&h[0]);
	if (threaded)
		pthread_join(t, NULL);
	else
		h[1].fn(&h[1]);
}

/* ---- light and sensor ---- */

static void light_spd(enum machine_sim_light type, double e[SIM_NB])
{
	for (int j = 0; j < SIM_NB; j++) {
		double nm = sim_band_nm(j);
		int k = (int)((nm - CIE_WL0_NM) / CIE_STEP_NM + 0.5);

		switch (type) {
		case MACHINE_SIM_LIGHT_D50:
			e[j] = cie_d50[k];
			break;
		case MACHINE_SIM_LIGHT_D65:
			e[j] = cie_d65[k];
			break;
		case MACHINE_SIM_LIGHT_TUNGSTEN: {
			/* Planck's law at 2856 K (CIE illuminant A's temperature). */
			double l = nm * 1e-9, c2 = 1.4388e-2, t = 2856.0;

			e[j] = 1.0 / (pow(l, 5.0) * (exp(c2 / (l * t)) - 1.0));
			break;
		}
		case MACHINE_SIM_LIGHT_LED: {
			/* A 4000 K white LED: the blue die and the broad phosphor. */
			double b = (nm - 452.0) / 11.0, p = (nm - 590.0) / 62.0;

			e[j] = 0.8 * exp(-0.5 * b * b) + exp(-0.5 * p * p);
			break;
		}
		}
	}
}

/* Linear sRGB (white = 1) of XYZ under D50 (white Y = 100): the Bradford-adapted sRGB matrix. */
static void xyz50_to_linear_srgb(const double xyz[3], double rgb[3])
{
	static const double m[3][3] = {
		{ 3.1338561, -1.6168667, -0.4906146 },
		{ -0.9787684, 1.9161415, 0.0334540 },
		{ 0.0719453, -0.2289914, 1.4052427 },
	};

	for (int i = 0; i < 3; i++)
		rgb[i] = (m[i][0] * xyz[0] + m[i][1] * xyz[1] + m[i][2] * xyz[2]) / 100.0;
}

void sim_cam_measured_ab(const struct sim_cam *c, const double r[SIM_NB], float ab[6])
{
	for (int k = 0; k < 3; k++) {
		double a = 0.0, b = 0.0;

		for (int j = 0; j < SIM_NB; j++) {
			a += c->wa[k][j] * r[j];
			b += c->wb[k][j] * r[j];
		}
		ab[k] = (float)a;
		ab[3 + k] = (float)b;
	}
}

static void flat_ab(const struct sim_cam *c, double refl, float ab[6])
{
	double r[SIM_NB];

	for (int j = 0; j < SIM_NB; j++)
		r[j] = refl;
	sim_cam_measured_ab(c, r, ab);
}

/*
 * The camera's processing as a UVC camera's firmware does it: gains that
 * balance the light as installed (set once, then locked, with the error
 * the machine file gives), and a 3x3 colour matrix fitted by least squares
 * from the sensor's response to the chart and the paints to their linear
 * sRGB, each row summing to one so a white stays neutral. Its residual
 * metamerism is what the calibration profile must correct.
 */
static void fit_processing(const struct sim *s, struct sim_cam *c)
{
	const struct machine_sim *ms = &s->m.sim;
	const double (*chart)[SIM_NB] = sim_chart_spectra();
	double white[3], g[3], ccm[3][3];
	double ata[3][2][2] = { { { 0 } } }, aty[3][2] = { { 0 } };
	int n = SIM_CHART_N + s->paints.n;

	for (int k = 0; k < 3; k++) {
		white[k] = 0.0;
		for (int j = 0; j < SIM_NB; j++)
			white[k] += c->wa[k][j];
		g[k] = 1.0 / white[k];
	}
	for (int i = 0; i < n; i++) {
		double r[SIM_NB], cie[CIE_N], xyz[3], t[3], raw[3];

		if (i < SIM_CHART_N) {
			memcpy(r, chart[i], sizeof(r));
		} else {
			double ml[SIM_MAX_PAINTS] = { 0 };

			ml[i - SIM_CHART_N] = 1.0;
			sim_paint_measured(s, ml, r);
		}
		sim_to_cie_grid(r, cie);
		cie_reflectance_to_xyz(cie, cie_d50, xyz);
		xyz50_to_linear_srgb(xyz, t);
		for (int k = 0; k < 3; k++) {
			raw[k] = 0.0;
			for (int j = 0; j < SIM_NB; j++)
				raw[k] += c->wa[k][j] * r[j];
			raw[k] *= g[k];
		}
		/* Row sums one: m0 (r - b) + m1 (g - b) = t - b. */
		for (int k = 0; k < 3; k++) {
			double u0 = raw[0] - raw[2], u1 = raw[1] - raw[2], y = t[k] - raw[2];

			ata[k][0][0] += u0 * u0;
			ata[k][0][1] += u0 * u1;
			ata[k][1][1] += u1 * u1;
			aty[k][0] += u0 * y;
			aty[k][1] += u1 * y;
		}
	}
	for (int k = 0; k < 3; k++) {
		double d = ata[k][0][0] * ata[k][1][1] - ata[k][0][1] * ata[k][0][1];

		ccm[k][0] = (aty[k][0] * ata[k][1][1] - aty[k][1] * ata[k][0][1]) / d;
		ccm[k][1] = (aty[k][1] * ata[k][0][0] - aty[k][0] * ata[k][0][1]) / d;
		ccm[k][2] = 1.0 - ccm[k][0] - ccm[k][1];
	}
	g[0] *= 1.0 + ms->wb_error[0];
	g[2] *= 1.0 + ms->wb_error[1];
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 3; i++)
			c->mat[k][i] = (float)(ccm[k][i] * g[i]);
}

static void lut_init(struct sim_cam *c)
{
	for (int i = 0; i < LUT_N; i++) {
		double v = (double)i / (LUT_N - 1), e;

		e = v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
		c->lut[i] = (unsigned char)lrint(fmin(255.0, fmax(0.0, e * 255.0)));
	}
}

/* Reflectance of a card box: the paint mixed with white by weight, opaque (equal densities). */
void sim_cam_card_box_refl(const struct sim *s, int i, double r[SIM_NB])
{
	double ml[SIM_MAX_PAINTS] = { 0 }, f = s->card.box[i].fraction;
	int p = sim_paint_find(&s->paints, s->card.box[i].paint);

	ml[0] += 1.0 - f;
	ml[p] += f;
	sim_paint_measured(s, ml, r);
}

static struct sim_cam *cam_new(struct sim *s, bl_err *err)
{
	const struct machine_sim *ms = &s->m.sim;
	struct sim_cam *c = calloc(1, sizeof(*c));
	double e[SIM_NB], wg = 0.0;
	size_t npix;

	if (!c) {
		bl_fail(err, BL_ENOMEM, "sim camera: out of memory");
		return NULL;
	}
	gauss_init();
	c->w = s->m.camera.width;
	c->h = s->m.camera.height;
	npix = (size_t)c->w * c->h;
	c->ncell = s->w.nx * s->w.ny;
	c->well0 = c->ncell + SRC_FIXED_N;
	c->cell0 = c->well0 + CFG_MAX_WELLS;
	c->chart0 = c->cell0 + CFG_MAX_CELLS * SIM_CAM_NSECT;
	c->card0 = c->chart0 + SIM_CHART_N;
	c->nsrc = c->card0 + SIM_CARD_MAX;
	c->map_scene = -1;
	c->src = malloc(npix * sizeof(*c->src));
	c->gain = malloc(npix * sizeof(*c->gain));
	c->pix = malloc(npix * 3);
	c->armmask = calloc(npix, 1);
	c->arm_px = malloc(npix * sizeof(*c->arm_px));
	c->cell_ab = malloc((size_t)c->ncell * sizeof(*c->cell_ab));
	c->src_ab = calloc((size_t)(c->nsrc - c->ncell), sizeof(*c->src_ab));
	c->rgb = malloc((size_t)c->nsrc * sizeof(*c->rgb));
	c->tj = tjInitCompress();
	if (!c->src || !c->gain || !c->pix || !c->armmask || !c->arm_px || !c->cell_ab || !c->src_ab || !c->rgb ||
	    !c->tj) {
		sim_cam_free(c);
		bl_fail(err, BL_ENOMEM, "sim camera: out of memory for a %dx%d frame", c->w, c->h);
		return NULL;
	}

	sim_cam_fault_pose(s, c);
	c->f = 0.5 * c->w / tan(0.5 * ms->cam_hfov_deg * M_PI / 180.0);
	c->cx = 0.5 * c->w;
	c->cy = 0.5 * c->h;

	light_spd((enum machine_sim_light)ms->light_spectrum, e);
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < SIM_NB; j++) {
			double d = (sim_band_nm(j) - ms->sensor_peaks_nm[k]) / ms->sensor_widths_nm[k];

			c->wa[k][j] = e[j] * exp(-0.5 * d * d);
		}
	for (int j = 0; j < SIM_NB; j++)
		wg += c->wa[1][j];
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < SIM_NB; j++) {
			c->wa[k][j] /= wg; /* a perfect white gives raw green 1 */
			c->wb[k][j] = c->wa[k][j] * (sim_band_nm(j) - 550.0) / 150.0;
		}
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < SIM_NB; j++) {
			c->wf[k][j] = (float)c->wa[k][j];
			c->wf[3 + k][j] = (float)c->wb[k][j];
		}
	fit_processing(s, c);
	lut_init(c);
	c->noise_a = 1.0 / ms->full_well_e;
	c->noise_b = (ms->read_noise_e / ms->full_well_e) * (ms->read_noise_e / ms->full_well_e);
	/* The noisy sensor fault: every noise sigma times sim.faults.sensor_noise. */
	if (ms->faults.sensor_noise > 0) {
		c->noise_a *= ms->faults.sensor_noise * ms->faults.sensor_noise;
		c->noise_b *= ms->faults.sensor_noise * ms->faults.sensor_noise;
	}
	for (int i = 0; i < SIGMA_N; i++)
		c->sigma[i] = (float)sqrt(c->noise_a * (i + 0.5) / SIGMA_PER_UNIT + c->noise_b);

	{
		double r[SIM_NB];

		for (int j = 0; j < SIM_NB; j++)
			r[j] = sim_saunderson(s->w.ground[j]);
		sim_cam_measured_ab(c, r, c->ground_ab);
	}
	{
		static const struct {
			int src;
			double r;
		} fixed[] = { { SRC_TABLE, SIM_R_TABLE }, { SRC_WALL, SIM_R_WALL }, { SRC_INK, SIM_R_INK },
			      { SRC_PAPER, SIM_R_PAPER }, { SRC_FRAME, SIM_R_CHART_FRAME },
			      { SRC_ARM, SIM_R_ARM }, { SRC_PAD, SIM_R_PAD }, { SRC_BRUSH, 0.45 } };

		for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
			flat_ab(c, fixed[i].r, c->src_ab[fixed[i].src]);
	}
	{
		const double (*chart)[SIM_NB] = sim_chart_spectra();

		for (int i = 0; i < SIM_CHART_N; i++)
			sim_cam_measured_ab(c, chart[i], c->src_ab[c->chart0 - c->ncell + i]);
	}
	for (int i = 0; s->has_card && i < s->card.n; i++) {
		double r[SIM_NB];

		sim_cam_card_box_refl(s, i, r);
		sim_cam_measured_ab(c, r, c->src_ab[c->card0 - c->ncell + i]);
	}
	memset(s->w.dirty, 1, (size_t)c->ncell);
	return c;
}

void sim_cam_free(struct sim_cam *c)
{
	if (!c)
		return;
	if (c->tj)
		tjDestroy(c->tj);
	free(c->src);
	free(c->gain);
	free(c->pix);
	free(c->armmask);
	free(c->arm_px);
	free(c->cell_ab);
	free(c->src_ab);
	free(c->rgb);
	free(c);
}

/* ---- per-frame source colours ---- */

/* Test mixes for a fresh world's swatches scene: two or three paints, seeded, well stirred. */
static void sample_mixes(const struct sim *s, struct sim_pot *out)
{
	rng r;

	rng_fork(&r, s->seed, "sim.swatches");
	for (int i = 0; i < s->m.n_cells; i++) {
		int n = 2 + (int)rng_below(&r, 2);

		memset(&out[i], 0, sizeof(out[i]));
		/* Most mixes a painter makes are tints: white in two of three. */
		if (rng_uniform(&r) < 2.0 / 3.0)
			out[i].ml[0] += 0.5 + 1.5 * rng_uniform(&r);
		for (int k = 0; k < n; k++)
			out[i].ml[rng_below(&r, (uint64_t)s->paints.n)] += 0.1 + 0.6 * rng_uniform(&r);
		out[i].mixed = 1.0;
	}
}

/* The mixing cells as this scene shows them. */
const struct sim_pot *sim_cam_scene_cells(const struct sim *s, enum sim_scene scene,
					 struct sim_pot *tmp)
{
	int empty = 1;

	for (int i = 0; i < s->m.n_cells; i++)
		if (sim_pot_total(&s->w.mix[i]) > 0.0)
			empty = 0;
	if (scene == SIM_SCENE_SWATCHES && empty && s->w.actions == 0) {
		sample_mixes(s, tmp);
		return tmp;
	}
	return s->w.mix;
}

double sim_cam_station_area(const struct machine_station *t)
{
	return M_PI * t->radius_mm * t->radius_mm;
}

/* Recomputes the camera response of the dirty canvas cells in [from, to). */
static void cells_half(struct half *h)
{
	struct sim *s = h->s;
	struct sim_cam *c = h->c;

	for (size_t i = h->from; i < h->to; i++) {
		const struct sim_cell *cell = &s->w.cells[i];

		if (!s->w.dirty[i])
			continue;
		if (!cell->touched) {
			memcpy(c->cell_ab[i], c->ground_ab, sizeof(c->ground_ab));
		} else {
			float rf[SIM_NBP];

			sim_cell_measured_f(s, cell, rf);
			for (int k = 0; k < 6; k++) {
				float acc = 0.0f;

				for (int j = 0; j < SIM_NBP; j++)
					acc += c->wf[k][j] * rf[j];
				c->cell_ab[i][k] = acc;
			}
		}
		s->w.dirty[i] = 0;
	}
}

static void update_sources(struct sim *s, struct sim_cam *c, enum sim_scene scene)
{
	const struct machine *m = &s->m;
	struct sim_pot tmp[CFG_MAX_CELLS];
	const struct sim_pot *cells = sim_cam_scene_cells(s, scene, tmp);
	double ceramic = sim_saunderson_inv(SIM_R_CERAMIC), r[SIM_NB];

	sim_world_dry(s);
	{
		struct half h[2] = {
			{ cells_half, s, c, 0, (size_t)c->ncell / 2, 0.0f, 0 },
			{ cells_half, s, c, (size_t)c->ncell / 2, (size_t)c->ncell, 0.0f, 0 },
		};

		run_halves(h);
	}
	for (int i = 0; i < m->n_wells; i++) {
		sim_pot_measured(s, &s->w.wells[i], sim_cam_station_area(&m->wells[i]), ceramic, r);
		sim_cam_measured_ab(c, r, c->src_ab[c->well0 - c->ncell + i]);
	}
	for (int i = 0; i < m->n_cells; i++) {
		const struct sim_pot *p = &cells[i];
		double tot = sim_pot_total(p), area = sim_cam_station_area(&m->cells[i]);
		int comp[SIM_MAX_PAINTS], nc = 0;

		for (int k = 0; k < SIM_MAX_PAINTS; k++)
			if (p->ml[k] > 0.0)
				comp[nc++] = k;
		for (int k = 0; k < SIM_CAM_NSECT; k++) {
			struct sim_pot q = *p;

			/* Streaky until stirred: each sector leans to one of the paints. */
			if (nc > 1 && p->mixed < 0.999) {
				int which = comp[k % nc];

				for (int t = 0; t < SIM_MAX_PAINTS; t++)
					q.ml[t] = p->mixed * p->ml[t] + (t == which ? (1.0 - p->mixed) * tot : 0.0);
			}
			sim_pot_measured(s, &q, area, ceramic, r);
			sim_cam_measured_ab(c, r, c->src_ab[c->cell0 - c->ncell + i * SIM_CAM_NSECT + k]);
		}
	}
	sim_pot_measured(s, &s->w.water, sim_cam_station_area(&m->water), sim_saunderson_inv(SIM_R_POT), r);
	sim_cam_measured_ab(c, r, c->src_ab[SRC_WATER]);

	{
		double hours = sim_now_s(s) / 3600.0;
		float tau = (float)(m->sim.drift_tilt_per_h * hours);

		for (int i = 0; i < c->ncell; i++)
			for (int k = 0; k < 3; k++)
				c->rgb[i][k] = c->cell_ab[i][k] + tau * c->cell_ab[i][3 + k];
		for (int i = c->ncell; i < c->nsrc; i++)
			for (int k = 0; k < 3; k++)
				c->rgb[i][k] = c->src_ab[i - c->ncell][k] + tau * c->src_ab[i - c->ncell][3 + k];
	}
}

/* ---- the arm as the camera sees it ---- */

struct capsule {
	double a[3], b[3], r;
	int src;
};

static int arm_capsules(const struct sim *s, struct capsule *cap)
{
	const struct machine *m = &s->m;
	const arm_point *p = &s->w.pos;
	double top = m->work_max_mm[2] + 60.0;
	int n = 0;

	/* The brush, the tool head above it, then what carries the head. */
	cap[n++] = (struct capsule){ { p->x, p->y, p->z }, { p->x, p->y, p->z + 45.0 }, 3.0, SRC_BRUSH };
	cap[n++] = (struct capsule){ { p->x, p->y, p->z + 45.0 }, { p->x, p->y, top }, 16.0, SRC_ARM };
	if (m->kin.type == MACHINE_KIN_SCARA) {
		const struct machine_kinematics *k = &m->kin;
		double px = p->x - k->base_mm[0], py = p->y - k->base_mm[1];
		double c2 = (px * px + py * py - k->l1_mm * k->l1_mm - k->l2_mm * k->l2_mm) /
			    (2.0 * k->l1_mm * k->l2_mm);
		double q2 = acos(fmax(-1.0, fmin(1.0, c2))) * (k->elbow_right ? -1.0 : 1.0);
		double q1 = atan2(py, px) - atan2(k->l2_mm * sin(q2), k->l1_mm + k->l2_mm * cos(q2));
		double ex = k->base_mm[0] + k->l1_mm * cos(q1), ey = k->base_mm[1] + k->l1_mm * sin(q1);

		cap[n++] = (struct capsule){ { k->base_mm[0], k->base_mm[1], 0.0 },
					     { k->base_mm[0], k->base_mm[1], top }, 40.0, SRC_ARM };
		cap[n++] = (struct capsule){ { k->base_mm[0], k->base_mm[1], top }, { ex, ey, top },
					     25.0, SRC_ARM };
		cap[n++] = (struct capsule){ { ex, ey, top }, { p->x, p->y, top }, 20.0, SRC_ARM };
	} else {
		/* A cantilever gantry: its beam reaches in from the far side along y. */
		cap[n++] = (struct capsule){ { p->x, p->y, top },
					     { p->x, m->work_max_mm[1] + 150.0, top }, 22.0, SRC_ARM };
	}
	return n;
}

/* Marks the arm's pixels in c->armmask (1 head and links, 2 the brush); returns how many. */
long sim_cam_arm_mask(const struct sim *s, struct sim_cam *c)
{
	struct capsule cap[8];
	int n = arm_capsules(s, cap);
	long count = 0;

	for (size_t k = 0; k < c->n_arm_px; k++)
		c->armmask[c->arm_px[k]] = 0;
	c->n_arm_px = 0;
	for (int i = 0; i < n; i++) {
		double ua, va, da, ub, vb, db, rad;
		struct bbox b;

		if (!sim_cam_project(c, cap[i].a, &ua, &va, &da) || !sim_cam_project(c, cap[i].b, &ub, &vb, &db))
			continue;
		rad = cap[i].r * c->f / fmin(da, db);
		b.x0 = (int)floor(fmin(ua, ub) - rad) - 1;
		b.x1 = (int)ceil(fmax(ua, ub) + rad) + 1;
		b.y0 = (int)floor(fmin(va, vb) - rad) - 1;
		b.y1 = (int)ceil(fmax(va, vb) + rad) + 1;
		bbox_clip(c, &b);
		if (b.x0 > b.x1 || b.y0 > b.y1)
			continue;
		for (int v = b.y0; v <= b.y1; v++)
			for (int u = b.x0; u <= b.x1; u++) {
				double px = u + 0.5 - ua, py = v + 0.5 - va, dx = ub - ua, dy = vb - va;
				double l2 = dx * dx + dy * dy, t = l2 > 0.0 ? (px * dx + py * dy) / l2 : 0.0;
				double ex, ey;
				unsigned char *mk = &c->armmask[(size_t)v * c->w + u];

				t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
				ex = px - t * dx;
				ey = py - t * dy;
				if (ex * ex + ey * ey > rad * rad)
					continue;
				if (!*mk) {
					count++;
					c->arm_px[c->n_arm_px++] = (uint32_t)((size_t)v * c->w + u);
				}
				/* The head and links sit above the brush and hide it. */
				if (!*mk || cap[i].src == SRC_ARM)
					*mk = cap[i].src == SRC_ARM ? 1 : 2;
			}
	}
	return count;
}

/* ---- rendering ---- */

/*
 * The per-pixel pipeline over pixels [from, to), or over list[from..to) when
 * a list of the arm's pixels is given: everything it reads is
 * copied into locals first, so the byte stores cannot make the compiler
 * reload the tables on every pixel.
 */
static void shade_span(const struct sim_cam *c, const uint32_t *list, float scale, uint64_t st,
		       size_t from, size_t to)
{
	const float m00 = c->mat[0][0], m01 = c->mat[0][1], m02 = c->mat[0][2];
	const float m10 = c->mat[1][0], m11 = c->mat[1][1], m12 = c->mat[1][2];
	const float m20 = c->mat[2][0], m21 = c->mat[2][1], m22 = c->mat[2][2];
	const float top = (float)(LUT_N - 1);
	const float *restrict sigma = c->sigma;
	const uint32_t *restrict src = c->src;
	const float *restrict gain = c->gain;
	const float (*restrict rgb)[3] = (const float (*)[3])c->rgb;
	const unsigned char *restrict lut = c->lut;
	const float *restrict g = gauss;
	unsigned char *restrict out = c->pix;

	const unsigned char *restrict mask = c->armmask;
	const uint32_t arm = (uint32_t)(c->ncell + SRC_ARM), brush = (uint32_t)(c->ncell + SRC_BRUSH);

	/* The whole frame eight pixels at a time where the CPU can, the rest below. */
	if (!list) {
		const struct sim_shade sh = {
			src, gain, rgb, sigma, g, lut,
			{ { m00, m01, m02 }, { m10, m11, m12 }, { m20, m21, m22 } }, out,
		};

		from += sim_shade_wide(&sh, scale, &st, from, to);
	}
	for (size_t n = from; n < to; n++) {
		size_t i = list ? list[n] : n;
		const float *q;
		float k, v0, v1, v2, o0, o1, o2;
		uint64_t rnd;
		int i0, i1, i2;

		/* The arm's own pixels (from the list) show the arm, whatever lies under it. */
		q = rgb[list ? (mask[i] == 1 ? arm : brush) : src[i]];
		k = gain[i] * scale;
		rnd = splitmix(&st);
		v0 = q[0] * k;
		v1 = q[1] * k;
		v2 = q[2] * k;
		/* Shot noise grows with the signal, read noise does not. */
		i0 = (int)(v0 * SIGMA_PER_UNIT);
		i1 = (int)(v1 * SIGMA_PER_UNIT);
		i2 = (int)(v2 * SIGMA_PER_UNIT);
		i0 = i0 < 0 ? 0 : i0 >= SIGMA_N ? SIGMA_N - 1 : i0;
		i1 = i1 < 0 ? 0 : i1 >= SIGMA_N ? SIGMA_N - 1 : i1;
		i2 = i2 < 0 ? 0 : i2 >= SIGMA_N ? SIGMA_N - 1 : i2;
		v0 += sigma[i0] * g[rnd & (GAUSS_N - 1)];
		v1 += sigma[i1] * g[(rnd >> 12) & (GAUSS_N - 1)];
		v2 += sigma[i2] * g[(rnd >> 24) & (GAUSS_N - 1)];
		o0 = (m00 * v0 + m01 * v1 + m02 * v2) * top + 0.5f;
		o1 = (m10 * v0 + m11 * v1 + m12 * v2) * top + 0.5f;
		o2 = (m20 * v0 + m21 * v1 + m22 * v2) * top + 0.5f;
		o0 = o0 < 0.0f ? 0.0f : o0 > top ? top : o0;
		o1 = o1 < 0.0f ? 0.0f : o1 > top ? top : o1;
		o2 = o2 < 0.0f ? 0.0f : o2 > top ? top : o2;
		i0 = (int)o0;
		i1 = (int)o1;
		i2 = (int)o2;
		out[3 * i] = lut[i0];
		out[3 * i + 1] = lut[i1];
		out[3 * i + 2] = lut[i2];
	}
}

static void shade_half(struct half *h)
{
	shade_span(h->c, NULL, h->scale, h->seed, h->from, h->to);
}

int sim_cam_prepare(struct sim *s, enum sim_scene scene, bl_err *err)
{
	if (scene == SIM_SCENE_CARD && !s->has_card)
		return bl_fail(err, BL_EINVAL, "sim: the card scene needs a card (sim_set_card, "
			       "or --card for sim render)");
	if (!s->cam) {
		s->cam = cam_new(s, err);
		if (!s->cam)
			return err ? err->code : BL_ENOMEM;
	}
	sim_cam_fault_pose(s, s->cam);
	if (s->cam->map_scene != (int)scene)
		sim_cam_build_map(s, s->cam, scene);
	return 0;
}

/*
 * The camera faults a run's camera check must see, on the frame as encoded
 * (nothing is drawn or changed without them, so a world without them renders
 * as before). Flicker: a lamp on mains seen by a rolling shutter lights each
 * row at another phase of its beat, so bands up to sim.faults.flicker
 * brighter and darker cross the frame and move from frame to frame. An
 * exposure not locked: the camera's automatic exposure hunts frame to frame
 * by up to sim.faults.auto_exposure, and the tone curve it adjusts with it
 * (a gamma up to half that), clipping what it pushes past white. Neither is
 * one gain that the lamp followed on the board could divide out.
 */
static void camera_faults(struct sim *s, struct sim_cam *c)
{
	const struct machine_sim_faults *ft = &s->m.sim.faults;
	const double phase = 2.1 * (double)s->w.frames;
	double k = 1.0, g = 1.0;
	float lin[256];
	unsigned char tab[256];

	if (!(ft->flicker > 0) && !(ft->auto_exposure > 0))
		return;
	if (ft->auto_exposure > 0) {
		k = 1.0 + ft->auto_exposure * (2 * rng_uniform(&s->w.r_frame) - 1);
		g = 1.0 + 0.5 * ft->auto_exposure * (2 * rng_uniform(&s->w.r_frame) - 1);
	}
	for (int v = 0; v < 256; v++) {
		double e = v / 255.0;

		lin[v] = (float)pow(e <= 0.04045 ? e / 12.92 : pow((e + 0.055) / 1.055, 2.4), g);
	}
	for (int y = 0; y < c->h; y++) {
		double f = k * (1.0 + ft->flicker * sin(2 * M_PI * y / (0.37 * c->h) + phase));
		unsigned char *row = c->pix + (size_t)3 * y * c->w;

		if (y == 0 || ft->flicker > 0)
			for (int v = 0; v < 256; v++) {
				int q = (int)(lin[v] * f * (LUT_N - 1) + 0.5);

				tab[v] = c->lut[q > LUT_N - 1 ? LUT_N - 1 : q];
			}
		for (int i = 0; i < 3 * c->w; i++)
			row[i] = tab[row[i]];
	}
}

int sim_cam_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err)
{
	struct sim_cam *c;
	double hours;
	float scale;
	uint64_t st;
	size_t npix;
	unsigned long size;
	enum prof_phase prev;
	int rc;

	prev = prof_enter(PROF_RENDER);
	rc = sim_cam_prepare(s, scene, err);
	if (rc)
		goto out;
	c = s->cam;
	npix = (size_t)c->w * c->h;
	update_sources(s, c, scene);
	hours = sim_now_s(s) / 3600.0;
	scale = c->expo * (float)fmax(0.0, 1.0 + s->m.sim.drift_intensity_per_h * hours) * sim_cam_fault_gain(s);
	st = rng_u64(&s->w.r_cam);
	{
		struct half h[2] = {
			{ shade_half, s, c, 0, npix / 2, scale, st },
			{ shade_half, s, c, npix / 2, npix, scale, st ^ 0x9e3779b97f4a7c15ULL },
		};

		run_halves(h);
	}
	/* The arm is nearer the light than the table under it: a little brighter. */
	if (sim_cam_arm_mask(s, c) > 0) {
		shade_span(c, c->arm_px, scale * 1.15f, st ^ 0x5bd1e995ULL, 0, c->n_arm_px);
	}
	sim_cam_fault_smear(s, c);

	camera_faults(s, c);
	/* Into the frame's own buffer: the camera's averages hand back the one of the frame before. */
	prof_enter(PROF_ENCODE);
	size = tjBufSize(c->w, c->h, TJSAMP_420);
	if (cam_frame_reserve(f, size, NULL)) {
		rc = bl_fail(err, BL_ENOMEM, "sim camera: out of memory for a JPEG");
		goto out;
	}
	if (tjCompress2(c->tj, c->pix, c->w, 0, c->h, TJPF_RGB, &f->data, &size, TJSAMP_420,
			s->m.sim.jpeg_quality, TJFLAG_NOREALLOC) != 0) {
		rc = bl_fail(err, BL_EIO, "sim camera: JPEG encoding failed: %s", tjGetErrorStr2(c->tj));
		goto out;
	}
	f->len = size;
	f->format = CAM_FMT_JPEG;
	f->width = c->w;
	f->height = c->h;
	f->t_ns = clk_now_ns(s->clock);
	f->seq = s->w.frames++;
	f->controls_locked = s->controls_locked;
	snprintf(f->source, sizeof(f->source), "sim:%s", sim_scene_names[scene]);
	clk_advance(s->clock, SIM_FRAME_NS);
out:
	prof_leave(prev);
	return rc;
}

int sim_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	rc = sim_cam_render(s, scene, f, err);
	if (rc)
		cam_frame_free(f);
	return rc;
}

/* ---- camera ops, with the frame faults ---- */

static int sim_lock_controls(struct camera *cam, bl_err *err)
{
	struct sim *s = cam->priv;

	(void)err;
	s->controls_locked = 1; /* the simulated controls are fixed: nothing else to switch off */
	return 0;
}

/* A frame damaged in transfer: cut short and with garbage in its entropy-coded data. */
static void corrupt(struct sim *s, struct cam_frame *f)
{
	size_t cut = (size_t)(f->len * (0.3 + 0.5 * rng_uniform(&s->w.r_frame)));

	for (int k = 0; k < 32 && cut > f->len / 4 + 1; k++) {
		size_t at = f->len / 4 + (size_t)rng_below(&s->w.r_frame, cut - f->len / 4);

		f->data[at] = (unsigned char)rng_below(&s->w.r_frame, 256);
	}
	f->len = cut;
}

static int sim_capture(struct camera *cam, struct cam_frame *f, bl_err *err)
{
	struct sim *s = cam->priv;
	const struct machine_sim_faults *ft = &s->m.sim.faults;
	double u_drop = 1.0, u_corrupt = 1.0;
	int rc;

	if (ft->drop_frames > 0.0 || ft->corrupt_frames > 0.0) {
		u_drop = rng_uniform(&s->w.r_frame);
		u_corrupt = rng_uniform(&s->w.r_frame);
	}
	if (u_drop < ft->drop_frames) {
		clk_advance(s->clock, (int64_t)s->m.camera.timeout_ms * 1000000LL);
		return bl_fail(err, BL_ETIMEDOUT, "sim camera: no frame within %d ms (dropped)",
			       s->m.camera.timeout_ms);
	}
	rc = sim_cam_fault_frozen(s, f, err);
	if (rc == 0 && (rc = sim_cam_render(s, s->scene, f, err)) == 0)
		rc = sim_cam_fault_keep(s, f, err);
	rc = rc == 1 ? 0 : rc;
	if (rc == 0 && u_corrupt < ft->corrupt_frames)
		corrupt(s, f);
	return rc;
}

static void sim_camera_close(struct camera *cam)
{
	sim_unref(cam->priv);
}

const struct camera_ops sim_camera_ops = {
	.name = "sim",
	.lock_controls = sim_lock_controls,
	.capture = sim_capture,
	.close = sim_camera_close,
};
