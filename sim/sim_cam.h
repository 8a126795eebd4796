/* sim_cam.h: the simulated camera's state and what its parts share: the render (sim_camera.c) and the truth of a frame (sim_cam_truth.c); sim/ only. */
#ifndef BL_SIM_SIM_CAM_H
#define BL_SIM_SIM_CAM_H

#include <math.h>
#include <stdint.h>

#include <turbojpeg.h>

#include "sim/sim_internal.h"
#include "sim/sim_shade.h"
#include "vision/canvas.h"

#define SIM_CAM_NSECT 8 /* sectors of a mixing cell while it is streaky */

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
	unsigned char lut[SIM_LUT_N];
	unsigned char *pix;        /* RGB8, w * h */
	unsigned char *armmask;    /* 1 where the arm hides the scene in the last frame, 2 its brush */
	uint32_t *arm_px;          /* those pixels' indices */
	size_t n_arm_px;
	tjhandle tj;
	double noise_a, noise_b;   /* raw variance = a * raw + b */
	float sigma[SIM_SIGMA_N];      /* its square root at raw = (i + 0.5) / SIGMA_PER_UNIT */
	int posed, moved;          /* the pose is set; it is the one a camera_moved fault knocked */
};

/* A point on the canvas where it truly lies, machine mm. */
void sim_cam_canvas_at(const struct sim *s, double x_mm, double y_mm, double out[2]);

/* Corner markers (their one definition is vision/canvas.h): centre of marker id, machine mm. */
void sim_cam_marker_center(const struct sim *s, const struct vis_markers *mk, int id, double out[2]);
extern const char *const sim_cam_marker_names[4];

/* The reflectance of the card's box i as painted. */
void sim_cam_card_box_refl(const struct sim *s, int i, double r[SIM_NB]);

/* The mixing cells as this scene shows them (tmp: room for seeded test mixes). */
const struct sim_pot *sim_cam_scene_cells(const struct sim *s, enum sim_scene scene, struct sim_pot *tmp);

/* A round station's area, mm^2. */
double sim_cam_station_area(const struct machine_station *t);

/* Marks the pixels the arm hides in this frame (armmask, arm_px); returns how many. */
long sim_cam_arm_mask(const struct sim *s, struct sim_cam *c);

/* The camera made and its pixel map built for the scene. */
int sim_cam_prepare(struct sim *s, enum sim_scene scene, bl_err *err);

/* The camera response (A and B) of a measured reflectance. */
void sim_cam_measured_ab(const struct sim_cam *c, const double r[SIM_NB], float ab[6]);

/* The pixel map of the scene (sim_cam_map.c): which surface each pixel sees, and its gain. */
void sim_cam_build_map(struct sim *s, struct sim_cam *c, enum sim_scene scene);

/* The verifier's faults (sim_cam_fault.c): the pose, knocked when its time has come (the map made again). */
void sim_cam_fault_pose(struct sim *s, struct sim_cam *c);
/* The lamp's share of its light and the exposure's drift, as one gain on every pixel. */
float sim_cam_fault_gain(struct sim *s);
/* Paint on the lens over the RGB image, once its time has come. */
void sim_cam_fault_smear(struct sim *s, struct sim_cam *c);
/* A frozen camera's frame into f (1), or 0 when the camera is not frozen (yet); then _keep the frame rendered. */
int sim_cam_fault_frozen(struct sim *s, struct cam_frame *f, bl_err *err);
int sim_cam_fault_keep(struct sim *s, const struct cam_frame *f, bl_err *err);

/* ---- geometry: inline, the map's and the render's inner loops call it ---- */

static inline void sub3(const double a[3], const double b[3], double o[3])
{
	o[0] = a[0] - b[0];
	o[1] = a[1] - b[1];
	o[2] = a[2] - b[2];
}

static inline double dot3(const double a[3], const double b[3])
{
	return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static inline void cross3(const double a[3], const double b[3], double o[3])
{
	o[0] = a[1] * b[2] - a[2] * b[1];
	o[1] = a[2] * b[0] - a[0] * b[2];
	o[2] = a[0] * b[1] - a[1] * b[0];
}

static inline void norm3(double v[3])
{
	double n = sqrt(dot3(v, v));

	v[0] /= n;
	v[1] /= n;
	v[2] /= n;
}

static inline void ray(const struct sim_cam *c, double u, double v, double d[3])
{
	double a = (u - c->cx) / c->f, b = (v - c->cy) / c->f;

	for (int i = 0; i < 3; i++)
		d[i] = c->fwd[i] + a * c->right[i] + b * c->down[i];
}

/* Where the ray through pixel centre (u, v) meets the plane z = z0; 0 when it does not. */
static inline int hit(const struct sim_cam *c, double u, double v, double z0, double p[3])
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
static inline int sim_cam_project(const struct sim_cam *c, const double p[3], double *u, double *v, double *depth)
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

static inline void bbox_add(const struct sim_cam *c, struct bbox *b, double x, double y, double z)
{
	double p[3] = { x, y, z }, u, v;

	if (!sim_cam_project(c, p, &u, &v, NULL)) {
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

static inline void bbox_clip(const struct sim_cam *c, struct bbox *b)
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

static inline struct bbox bbox_rect(const struct sim_cam *c, double x0, double y0, double x1, double y1,
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

#endif
