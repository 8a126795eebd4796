/* sim_camera.c: the simulated camera: a pinhole view of the table under an uneven, drifting light, a non-sRGB sensor with noise and white-balance error, JPEG out through TurboJPEG. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "color/cie.h"
#include "color/color.h"
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

#define NSECT 8                   /* sectors of a mixing cell while it is streaky */
#define LUT_N SIM_LUT_N            /* sim_shade.h's: the eight-pixel path shares the tables */
#define GAUSS_N SIM_GAUSS_N
#define SIGMA_N SIM_SIGMA_N
#define SIGMA_PER_UNIT SIM_SIGMA_PER_UNIT
#define FRAME_NS 33333333LL       /* one frame at 30 frames a second */
#define TRUTH_GRID_MM 50.0        /* canvas truth regions */
#define TRUTH_MAX_DE00 1.0        /* a canvas region is listed only when this uniform */

enum {
	SRC_TABLE, SRC_WALL, SRC_INK, SRC_PAPER, SRC_FRAME, SRC_ARM, SRC_PAD, SRC_WATER, SRC_BRUSH,
	SRC_FIXED_N = 16,
};

struct sim_cam {
	int w, h;
	double pos[3], fwd[3], right[3], down[3], f, cx, cy;
	int ncell;                 /* canvas cells: sources 0..ncell-1 */
	int well0, cell0, chart0, card0, nsrc;
	int map_scene;             /* scene the pixel map was built for, -1 none */
	uint32_t *src;
	float *gain;
	float gain_max;
	double wa[3][SIM_NB], wb[3][SIM_NB]; /* camera weights of a measured reflectance, and of its tilt */
	float wf[6][SIM_NBP];      /* wa and wb in single precision, zero past the last band */
	float mat[3][3];           /* colour matrix times white-balance gains (with their error) */
	float expo;
	float (*cell_ab)[6];       /* canvas cells: A (3) and B (3) */
	float ground_ab[6];
	float (*src_ab)[6];        /* every other source */
	float (*rgb)[3];           /* per source, this frame */
	unsigned char lut[LUT_N];
	unsigned char *pix;        /* RGB8, w * h */
	unsigned char *armmask;    /* 1 where the arm hides the scene in the last frame, 2 its brush */
	uint32_t *arm_px;          /* those pixels' indices */
	size_t n_arm_px;
	tjhandle tj;
	double noise_a, noise_b;   /* raw variance = a * raw + b */
	float sigma[SIGMA_N];      /* its square root at raw = (i + 0.5) / SIGMA_PER_UNIT */
};

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

/* ---- geometry ---- */

static void sub3(const double a[3], const double b[3], double o[3])
{
	o[0] = a[0] - b[0];
	o[1] = a[1] - b[1];
	o[2] = a[2] - b[2];
}

static double dot3(const double a[3], const double b[3])
{
	return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double a[3], const double b[3], double o[3])
{
	o[0] = a[1] * b[2] - a[2] * b[1];
	o[1] = a[2] * b[0] - a[0] * b[2];
	o[2] = a[0] * b[1] - a[1] * b[0];
}

static void norm3(double v[3])
{
	double n = sqrt(dot3(v, v));

	v[0] /= n;
	v[1] /= n;
	v[2] /= n;
}

static void ray(const struct sim_cam *c, double u, double v, double d[3])
{
	double a = (u - c->cx) / c->f, b = (v - c->cy) / c->f;

	for (int i = 0; i < 3; i++)
		d[i] = c->fwd[i] + a * c->right[i] + b * c->down[i];
}

/* Where the ray through pixel centre (u, v) meets the plane z = z0; 0 when it does not. */
static int hit(const struct sim_cam *c, double u, double v, double z0, double p[3])
{
	double d[3], t;

	ray(c, u, v, d);
	if (d[2] >= -1e-12)
		return 0;
	t = (z0 - c->pos[2]) / d[2];
	if (t <= 0.0)
		return 0;
	p[0] = c->pos[0] + t * d[0];
	p[1] = c->pos[1] + t * d[1];
	p[2] = z0;
	return 1;
}

/* Pixel coordinates of a world point; 0 when it lies behind the camera. */
static int project(const struct sim_cam *c, const double p[3], double *u, double *v, double *depth)
{
	double r[3], z;

	sub3(p, c->pos, r);
	z = dot3(r, c->fwd);
	if (z <= 1.0)
		return 0;
	*u = c->cx + c->f * dot3(r, c->right) / z;
	*v = c->cy + c->f * dot3(r, c->down) / z;
	if (depth)
		*depth = z;
	return 1;
}

struct bbox {
	int x0, y0, x1, y1; /* inclusive; empty when x0 > x1 */
};

static void bbox_add(const struct sim_cam *c, struct bbox *b, double x, double y, double z)
{
	double p[3] = { x, y, z }, u, v;

	if (!project(c, p, &u, &v, NULL)) {
		/* Behind the camera: be safe and take the whole image. */
		b->x0 = b->y0 = 0;
		b->x1 = c->w - 1;
		b->y1 = c->h - 1;
		return;
	}
	if ((int)floor(u) - 2 < b->x0)
		b->x0 = (int)floor(u) - 2;
	if ((int)ceil(u) + 2 > b->x1)
		b->x1 = (int)ceil(u) + 2;
	if ((int)floor(v) - 2 < b->y0)
		b->y0 = (int)floor(v) - 2;
	if ((int)ceil(v) + 2 > b->y1)
		b->y1 = (int)ceil(v) + 2;
}

static void bbox_clip(const struct sim_cam *c, struct bbox *b)
{
	if (b->x0 < 0)
		b->x0 = 0;
	if (b->y0 < 0)
		b->y0 = 0;
	if (b->x1 > c->w - 1)
		b->x1 = c->w - 1;
	if (b->y1 > c->h - 1)
		b->y1 = c->h - 1;
}

static struct bbox bbox_rect(const struct sim_cam *c, double x0, double y0, double x1, double y1,
			     double za, double zb)
{
	struct bbox b = { 1 << 30, 1 << 30, -(1 << 30), -(1 << 30) };

	bbox_add(c, &b, x0, y0, za);
	bbox_add(c, &b, x1, y0, za);
	bbox_add(c, &b, x1, y1, za);
	bbox_add(c, &b, x0, y1, za);
	bbox_add(c, &b, x0, y0, zb);
	bbox_add(c, &b, x1, y0, zb);
	bbox_add(c, &b, x1, y1, zb);
	bbox_add(c, &b, x0, y1, zb);
	bbox_clip(c, &b);
	return b;
}

/* ---- light and sensor ---- */

static void light_spd(int type, double e[SIM_NB])
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
		default: {
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

static void measured_ab(const struct sim_cam *c, const double r[SIM_NB], float ab[6])
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
	measured_ab(c, r, ab);
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
static void card_box_refl(const struct sim *s, int i, double r[SIM_NB])
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
	double e[SIM_NB], wg = 0.0, up[3] = { 0, 0, 1 }, t[3];
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
	c->chart0 = c->cell0 + CFG_MAX_CELLS * NSECT;
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

	memcpy(c->pos, ms->cam_position_mm, sizeof(c->pos));
	sub3(ms->cam_look_at_mm, c->pos, c->fwd);
	norm3(c->fwd);
	cross3(c->fwd, up, t);
	if (dot3(t, t) < 1e-12) {
		/* Straight down: image up is machine +y. */
		up[1] = 1.0;
		up[2] = 0.0;
		cross3(c->fwd, up, t);
	}
	norm3(t);
	memcpy(c->right, t, sizeof(t));
	cross3(c->fwd, c->right, c->down);
	c->f = 0.5 * c->w / tan(0.5 * ms->cam_hfov_deg * M_PI / 180.0);
	c->cx = 0.5 * c->w;
	c->cy = 0.5 * c->h;

	light_spd(ms->light_spectrum, e);
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
	for (int i = 0; i < SIGMA_N; i++)
		c->sigma[i] = (float)sqrt(c->noise_a * (i + 0.5) / SIGMA_PER_UNIT + c->noise_b);

	{
		double r[SIM_NB];

		for (int j = 0; j < SIM_NB; j++)
			r[j] = sim_saunderson(s->w.ground[j]);
		measured_ab(c, r, c->ground_ab);
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
			measured_ab(c, chart[i], c->src_ab[c->chart0 - c->ncell + i]);
	}
	for (int i = 0; s->has_card && i < s->card.n; i++) {
		double r[SIM_NB];

		card_box_refl(s, i, r);
		measured_ab(c, r, c->src_ab[c->card0 - c->ncell + i]);
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
					int k = (int)floor(a * NSECT) % NSECT;

					src = src0 + (uint32_t)(i * NSECT + k);
				} else {
					src = src0 + (uint32_t)i;
				}
				set_px(s, c, u, v, src, ps);
			}
	}
}

/* A point on the canvas where it truly lies, machine mm. */
static void canvas_at(const struct sim *s, double x_mm, double y_mm, double out[2])
{
	struct machine_pt p = xform_to_machine(&s->canvas_xf, (struct canvas_pt){ x_mm, y_mm });

	out[0] = p.x;
	out[1] = p.y;
}

/* Corner markers (their one definition is vision/canvas.h): centre of marker id, machine mm. */
static void marker_center(const struct sim *s, const struct vis_markers *mk, int id, double out[2])
{
	double c[2];

	vis_marker_centre(mk, id, c);
	canvas_at(s, c[0], c[1], out);
}

static const char *const marker_names[4] = { "origin", "x", "xy", "y" };

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

		card_box_refl(s, i, r);
		measured_ab(s->cam, r, s->cam->src_ab[s->cam->card0 - s->cam->ncell + i]);
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

		canvas_at(s, (k & 1) ? cs[0] : 0.0, (k & 2) ? cs[1] : 0.0, q);
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
		marker_center(s, &mk, id, mc);
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
static void build_map(struct sim *s, struct sim_cam *c, enum sim_scene scene)
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
static const struct sim_pot *scene_cells(const struct sim *s, enum sim_scene scene,
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

static double station_area(const struct machine_station *t)
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
	const struct sim_pot *cells = scene_cells(s, scene, tmp);
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
		sim_pot_measured(s, &s->w.wells[i], station_area(&m->wells[i]), ceramic, r);
		measured_ab(c, r, c->src_ab[c->well0 - c->ncell + i]);
	}
	for (int i = 0; i < m->n_cells; i++) {
		const struct sim_pot *p = &cells[i];
		double tot = sim_pot_total(p), area = station_area(&m->cells[i]);
		int comp[SIM_MAX_PAINTS], nc = 0;

		for (int k = 0; k < SIM_MAX_PAINTS; k++)
			if (p->ml[k] > 0.0)
				comp[nc++] = k;
		for (int k = 0; k < NSECT; k++) {
			struct sim_pot q = *p;

			/* Streaky until stirred: each sector leans to one of the paints. */
			if (nc > 1 && p->mixed < 0.999) {
				int which = comp[k % nc];

				for (int t = 0; t < SIM_MAX_PAINTS; t++)
					q.ml[t] = p->mixed * p->ml[t] + (t == which ? (1.0 - p->mixed) * tot : 0.0);
			}
			sim_pot_measured(s, &q, area, ceramic, r);
			measured_ab(c, r, c->src_ab[c->cell0 - c->ncell + i * NSECT + k]);
		}
	}
	sim_pot_measured(s, &s->w.water, station_area(&m->water), sim_saunderson_inv(SIM_R_POT), r);
	measured_ab(c, r, c->src_ab[SRC_WATER]);

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
static long arm_mask(const struct sim *s, struct sim_cam *c)
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

		if (!project(c, cap[i].a, &ua, &va, &da) || !project(c, cap[i].b, &ub, &vb, &db))
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

static int prepare(struct sim *s, enum sim_scene scene, bl_err *err)
{
	if (scene == SIM_SCENE_CARD && !s->has_card)
		return bl_fail(err, BL_EINVAL, "sim: the card scene needs a card (sim_set_card, "
			       "or --card for sim render)");
	if (!s->cam) {
		s->cam = cam_new(s, err);
		if (!s->cam)
			return err ? err->code : BL_ENOMEM;
	}
	if (s->cam->map_scene != (int)scene)
		build_map(s, s->cam, scene);
	return 0;
}

int sim_cam_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err)
{
	struct sim_cam *c;
	double hours;
	float scale;
	uint64_t st;
	size_t npix;
	unsigned long size;
	unsigned char *jpeg;
	int rc;

	rc = prepare(s, scene, err);
	if (rc)
		return rc;
	c = s->cam;
	npix = (size_t)c->w * c->h;
	update_sources(s, c, scene);
	hours = sim_now_s(s) / 3600.0;
	scale = c->expo * (float)fmax(0.0, 1.0 + s->m.sim.drift_intensity_per_h * hours);
	st = rng_u64(&s->w.r_cam);
	{
		struct half h[2] = {
			{ shade_half, s, c, 0, npix / 2, scale, st },
			{ shade_half, s, c, npix / 2, npix, scale, st ^ 0x9e3779b97f4a7c15ULL },
		};

		run_halves(h);
	}
	/* The arm is nearer the light than the table under it: a little brighter. */
	if (arm_mask(s, c) > 0) {
		shade_span(c, c->arm_px, scale * 1.15f, st ^ 0x5bd1e995ULL, 0, c->n_arm_px);
	}

	size = tjBufSize(c->w, c->h, TJSAMP_420);
	jpeg = malloc(size);
	if (!jpeg)
		return bl_fail(err, BL_ENOMEM, "sim camera: out of memory for a JPEG");
	if (tjCompress2(c->tj, c->pix, c->w, 0, c->h, TJPF_RGB, &jpeg, &size, TJSAMP_420,
			s->m.sim.jpeg_quality, TJFLAG_NOREALLOC) != 0) {
		rc = bl_fail(err, BL_EIO, "sim camera: JPEG encoding failed: %s",
			     tjGetErrorStr2(c->tj));
		free(jpeg);
		return rc;
	}
	memset(f, 0, sizeof(*f));
	f->data = jpeg;
	f->len = size;
	f->format = CAM_FMT_JPEG;
	f->width = c->w;
	f->height = c->h;
	f->t_ns = clk_now_ns(s->clock);
	f->seq = s->w.frames++;
	f->controls_locked = s->controls_locked;
	snprintf(f->source, sizeof(f->source), "sim:%s", sim_scene_names[scene]);
	clk_advance(s->clock, FRAME_NS);
	return 0;
}

int sim_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err)
{
	return sim_cam_render(s, scene, f, err);
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
	rc = sim_cam_render(s, s->scene, f, err);
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
	const struct sim_pot *cells = scene_cells(s, scene, tmp);
	int gnx, gny;
	double cells_per = TRUTH_GRID_MM / s->w.cell_mm, ceramic = sim_saunderson_inv(SIM_R_CERAMIC);
	int np = 0;

	truth_grid(m, &gnx, &gny);
	if (scene == SIM_SCENE_SWATCHES) {
		for (int i = 0; i < m->n_wells; i++) {
			double r[SIM_NB];

			if (sim_pot_total(&s->w.wells[i]) <= 0.0)
				continue;
			sim_pot_measured(s, &s->w.wells[i], station_area(&m->wells[i]), ceramic, r);
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", m->wells[i].name);
			sim_measured_lab(r, tp[np].lab);
			owner[c->well0 + i] = np++;
		}
		for (int i = 0; i < m->n_cells; i++) {
			double r[SIM_NB];

			if (sim_pot_total(&cells[i]) <= 0.0 || cells[i].mixed < 0.98)
				continue;
			sim_pot_measured(s, &cells[i], station_area(&m->cells[i]), ceramic, r);
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", m->cells[i].name);
			sim_measured_lab(r, tp[np].lab);
			for (int k = 0; k < NSECT; k++)
				owner[c->cell0 + i * NSECT + k] = np;
			np++;
		}
	} else if (scene == SIM_SCENE_CHART && m->sim.has_chart) {
		const double (*chart)[SIM_NB] = sim_chart_spectra();

		for (int k = 0; k < SIM_CHART_N; k++) {
			snprintf(tp[np].name, sizeof(tp[np].name), "%s", sim_chart_names[k]);
			sim_measured_lab(chart[k], tp[np].lab);
			owner[c->chart0 + k] = np++;
		}
	} else if (scene == SIM_SCENE_CARD && s->has_card) {
		for (int k = 0; k < s->card.n; k++) {
			double r[SIM_NB];

			card_box_refl(s, k, r);
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
		marker_center(s, &mk, id, mc);
		cJSON_AddNumberToObject(o, "id", id);
		cJSON_AddStringToObject(o, "corner", marker_names[id]);
		p[0] = mc[0];
		p[1] = mc[1];
		cJSON_AddItemToObject(o, "center_mm", cJSON_CreateDoubleArray(mc, 2));
		if (project(c, p, &u, &v, NULL))
			cJSON_AddItemToObject(o, "center", point_json(u, v));
		corners = cJSON_AddArrayToObject(o, "corners");
		for (int k = 0; k < 4; k++) {
			canvas_at(s, cc[0] + sx[k] * hs, cc[1] + sy[k] * hs, p);
			if (!project(c, p, &u, &v, NULL) || u < 0 || v < 0 || u >= c->w ||
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

	rc = prepare(s, scene, err);
	if (rc)
		return rc;
	c = s->cam;
	sim_world_dry(s);
	arm_mask(s, c);
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
