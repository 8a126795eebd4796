/* calib.h: calibration sessions (camera colour profile from a chart, canvas geometry, arm registration, paint characterisation) and the one call that loads a machine's calibration. */
#ifndef BL_CALIB_CALIB_H
#define BL_CALIB_CALIB_H

#include <stddef.h>

#include <cJSON.h>

#include "arm/action.h"
#include "base/err.h"
#include "base/prov.h"
#include "config/machine.h"
#include "config/palette.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

#define CALIB_MAX_PATCHES 300
#define CALIB_NAME_MAX 32

/* ---- charts (calib_chart.c) ---- */

/*
 * A colour chart: a grid of cols x rows patches, each with reference
 * CIELAB (D50, 2-degree observer), listed row by row from the top-left
 * patch as the chart is read upright.
 */
struct calib_chart {
	char name[64];
	char source[512];                   /* where the reference values come from */
	int cols, rows;
	int n;                              /* cols * rows */
	double patch_fraction;              /* patch side / patch pitch (the rest is gap) */
	int dark_frame;                     /* patches sit on a uniform dark surround */
	char patch[CALIB_MAX_PATCHES][CALIB_NAME_MAX];
	double lab[CALIB_MAX_PATCHES][3];
};

/* The built-in charts' names ("colorchecker24"), NULL-terminated. */
extern const char *const calib_chart_builtin_names[];

/* A built-in chart by name; BL_EINVAL naming the known ones when there is none. */
int calib_chart_builtin(const char *name, struct calib_chart *c, bl_err *err);

/* Loads a chart file ({"kind": "chart", "version": 1, ...}, docs/calibration.md) strictly. */
int calib_chart_load(const char *path, struct calib_chart *c, bl_err *err);

/*
 * A chart's reference from ArgyllCMS's CGATS (a .cie, a .ti2; the first
 * table): each patch placed by SAMPLE_LOC, else SAMPLE_ID, as a grid
 * location "A01" (row letter from the top, column from the left), which
 * must fill the grid; its Lab from LAB_L LAB_A LAB_B, else XYZ_X XYZ_Y XYZ_Z
 * (D50, white Y 100); named by SAMPLE_NAME, else its location. Anything
 * malformed is BL_EINVAL naming the file, the line and what is wrong.
 */
int calib_chart_load_cgats(const char *path, struct calib_chart *c, bl_err *err);

/* A built-in chart's name, or else a chart file's path: JSON when it starts with '{', else CGATS. */
int calib_chart_open(const char *name_or_path, struct calib_chart *c, bl_err *err);

/* The chart as a chart file's JSON (what calib_chart_load reads). */
cJSON *calib_chart_json(const struct calib_chart *c);

/* ---- finding a chart in a frame (calib_find.c, calib_find_outline.c, calib_find_grid.c) ---- */

#define CALIB_MAX_FRAME_SAMPLES 1200

struct calib_chart_view {
	double corners_px[8];   /* the chart's outline in raw px, clockwise from the top-left of the upright chart */
	double H[9];            /* outline space (unit square, u right, v down on the upright chart) -> px */
	double grid_u[2], grid_v[2]; /* patch (col, row) centre at u = grid_u[0] + (col + 0.5) grid_u[1], v alike */
	int given;              /* the corners were given, not found */
	int candidates;         /* dark regions examined */
	struct meas_roi roi[CALIB_MAX_PATCHES];
	double centre_uv[CALIB_MAX_PATCHES][2];
	int n_frame;            /* samples of the dark surround, for the light field */
	struct meas_roi frame_roi[CALIB_MAX_FRAME_SAMPLES];
	double frame_uv[CALIB_MAX_FRAME_SAMPLES][2];
	double frame_luma[CALIB_MAX_FRAME_SAMPLES]; /* median linear luminance of each sample */
};

/*
 * Finds chart c in frame: the largest dark regions are tried in turn, each
 * outline's patch grid is read from the dark gaps between patches, and of
 * the four ways the chart can lie, the one whose colours an affine camera
 * model explains best wins. With corners_px (the outline's four corners in
 * raw px, clockwise from the top-left of the upright chart) nothing is
 * searched. Failure is BL_EINVAL saying what was and was not found.
 */
int calib_chart_find(const struct img *frame, const char *name, const struct calib_chart *c,
		     const double *corners_px, struct calib_chart_view *v, bl_err *err);

/* ---- camera models (calib_fit.c) ---- */

enum calib_model_kind {
	CALIB_MODEL_MATRIX,    /* tone curves, then a 3x3 matrix to XYZ (an ICC matrix-shaper) */
	CALIB_MODEL_AFFINE,    /* tone curves, then 3x3 and an offset (flare) */
	CALIB_MODEL_ROOTPOLY,  /* tone curves, then second-order root-polynomial terms (Finlayson 2015) */
	CALIB_MODEL_COUNT
};
extern const char *const calib_model_names[]; /* "matrix", "affine", "root-polynomial", NULL */

/*
 * Camera code values v (0..1, as an ICC input profile takes them) to XYZ D50
 * (white Y = 1). Each channel's tone curve is the sRGB decoding raised to
 * gamma[c], written as ICC parametric curve type 4 (the toe below
 * CALIB_TOE_V linear), so the profile computes exactly what was fitted.
 */
#define CALIB_TOE_V 0.04045

struct calib_cam_model {
	int kind;
	double gamma[3];
	double m[3][6];        /* XYZ = m * terms; terms are t (3), or t and sqrt(t_r t_g), sqrt(t_g t_b), sqrt(t_r t_b) */
	double offset[3];      /* affine: added to XYZ */
};

/* The tone curve of one channel: v (0..1) to linear t. */
double calib_tone(double gamma, double v);

void calib_model_xyz(const struct calib_cam_model *m, const double v[3], double xyz[3]);
void calib_model_lab(const struct calib_cam_model *m, const double v[3], double lab[3]);

/*
 * Fits a model of kind to n patches (code values v, reference Lab), only
 * those with use[i] set (NULL: all): least squares of the Lab difference
 * weighted by CIEDE2000's local metric at each reference, so it minimises
 * CIEDE2000 to second order. Needs more patches than the model has terms.
 */
int calib_model_fit(int kind, int n, const double (*v)[3], const double (*lab)[3],
		    const unsigned char *use, struct calib_cam_model *out, bl_err *err);

/* ---- ICC profiles (calib_icc.c) ---- */

/* The ICC version calib camera writes unless told: 2 (2.4), which every colour tool reads. */
#define CALIB_ICC_VERSION 2

/*
 * Writes the model as an ICC input profile through LittleCMS, version 2
 * (2.4) or 4 (4.3): a matrix-shaper (rTRC/gTRC/bTRC and rXYZ/gXYZ/bXYZ;
 * v2 curves are 4096-entry tables of the parametric curve, v4 the
 * parametric curve itself) for the matrix model, else an A2B0 with a
 * 33-point CLUT from code values to Lab (v2 lut16Type, v4 lutAtoBType),
 * L* clipped at MEAS_WHITE_L (as meas_profile_lab clips a matrix profile). desc is the profile's description;
 * targ, when not NULL, the characterisation target's measurements as CGATS
 * text (the 'targ' tag: calib_ti3_text). *out is malloc'd. Another version is BL_EINVAL.
 */
int calib_icc_build(const struct calib_cam_model *m, int version, const char *desc, const char *targ,
		    unsigned char **out, size_t *len, bl_err *err);

/* ---- the camera session (calib_camera.c) ---- */

struct calib_figures {
	int n;
	double mean_de00, max_de00;
	char worst[CALIB_NAME_MAX];
};

struct calib_patch {
	char name[CALIB_NAME_MAX];
	struct meas_roi roi;
	long pixels;
	double rgb_linear[3];   /* robust mean as the camera recorded it (sRGB-decoded code values) */
	double light;           /* light falling on it relative to the chart's mean (1 without correction) */
	double v[3];            /* code values the profile is fitted to: light-corrected, re-encoded */
	double ref_lab[3];
	double fit_lab[3];      /* through the profile as written */
	double held_lab[3];     /* by the model fitted without this patch */
	double srgb_lab[3];     /* by the sRGB assumption */
	double fit_de00, held_de00, srgb_de00;
	int at_limit;           /* a channel at 0 or 255: the colour lies beyond what the camera records */
	int has_truth;
	double truth_lab[3];
	double truth_fit_de00, truth_held_de00, truth_srgb_de00;
};

enum calib_light_source { CALIB_LIGHT_NONE, CALIB_LIGHT_FRAME, CALIB_LIGHT_FLAT };
extern const char *const calib_light_names[]; /* "none", "chart frame", "flat frame" */

struct calib_camera_opts {
	const struct calib_chart *chart;
	const char *frame_name;      /* for messages */
	const double *corners_px;    /* the chart's corners given, or NULL to find it */
	const struct img *flat;      /* a frame of a uniform light card where the chart lay, or NULL */
	const char *flat_name;
	int light;                   /* 0: correct uneven light (flat frame, else chart frame); -1: do not */
	int model;                   /* -1: choose on held-out patches; else the calib_model_kind */
	double max_patch_de00;       /* a held-out patch beyond this is a bad frame (0: 10) */
	int icc_version;             /* 2 or 4 (0: CALIB_ICC_VERSION) */
};

struct calib_camera_result {
	struct calib_chart_view view;
	int n;
	struct calib_patch p[CALIB_MAX_PATCHES];
	int light_source;            /* enum calib_light_source */
	double light_min, light_max; /* over the patches */
	int model;                   /* the kind kept */
	struct calib_cam_model fitted;
	struct calib_figures cand_fit[CALIB_MODEL_COUNT], cand_held[CALIB_MODEL_COUNT];
	int cand_ok[CALIB_MODEL_COUNT];
	struct calib_figures fit, held_out, srgb;       /* against the chart's references */
	struct calib_figures held_in_range;             /* held out, patches at the camera's limit left out */
	int has_truth;
	struct calib_figures truth_fit, truth_held_out, truth_srgb, truth_held_in_range;
	unsigned char *icc;          /* the profile (malloc'd) */
	size_t icc_len;
	int white_patch;             /* the chart's whitest patch (highest reference L*) */
	double exposure_stops;       /* its luminance as recorded against its reference's, log2 (0: exact) */
	double blur_px;              /* the patches' edges: median sigma of a Gaussian blur that makes them so wide */
	int edges;                   /* edges that median is of */
};

/*
 * Runs the camera session on one frame: finds the chart, measures every
 * patch (refusing clipped, hidden or non-uniform ones), corrects the light's
 * unevenness, fits every model with leave-one-out, keeps the simplest one
 * no other beats on held-out patches by CALIB_MODEL_MARGIN_DE00, builds the
 * ICC profile and measures the chart through it. r is allocated; free it
 * with calib_camera_free.
 */
#define CALIB_MODEL_MARGIN_DE00 0.05

int calib_camera_run(const struct img *frame, const struct calib_camera_opts *o,
		     struct calib_camera_result **r, bl_err *err);

/*
 * What the chart frame says of the camera (calib_camera_check.c), filled
 * into r once its patches are measured: the exposure of its whitest patch
 * against the reference (stops), and the focus (the edges' blur, px). A
 * frame more than CALIB_UNDER_STOPS under, or blurred beyond
 * CALIB_BLUR_MAX_PX, is refused (BL_EINVAL) naming the figure. On the
 * simulator a sharp, well exposed chart is 0.22 stops under with edges of
 * 0.43 px; a Gaussian blur of 1, 2, 3 px reads 1.02, 1.85, 2.61 px (the
 * held-out mean 1.20, 2.99, 3.14 against 1.08).
 */
#define CALIB_UNDER_STOPS 1.5
#define CALIB_BLUR_MAX_PX 1.5
int calib_camera_check(const struct img *frame, const char *name, const struct calib_chart *c,
		       struct calib_camera_result *r, bl_err *err);
void calib_camera_free(struct calib_camera_result *r);

/*
 * The light over the whole view relative to the light the profile holds for
 * (the flat frame's mean over the chart's patches, as the session corrected
 * them), from the flat frame of a session run with one: a grid of cols cells
 * (rows to keep them square) of the median linear luminance, each divided by
 * that reference; 0 where the frame does not show the card (dark, clipped or
 * not uniform). The map is allocated in out. `calib camera --light-map` and
 * `mix trial` make it CALIB_LIGHT_MAP_COLS cells across.
 */
#define CALIB_LIGHT_MAP_COLS 64

int calib_light_map(const struct img *flat, const struct calib_camera_result *r, int cols,
		    struct vis_light *out, bl_err *err);

struct calib_truth_patch;

/*
 * Compares with the simulator's truth (calib_truth_parse): each patch of the
 * chart found there (by name, else by the truth's patch centred in its
 * region: a CGATS chart's A01 is the simulator's "dark skin") gets its true
 * Lab and the three differences;
 * fills the truth figures. name is the truth's source, for messages.
 */
int calib_camera_truth(struct calib_camera_result *r, const struct calib_truth_patch *t, int n,
		       const char *name, bl_err *err);

/*
 * The chart's measurements as ArgyllCMS's .ti3 (CGATS CTI3, an input
 * device): each patch's code values as fitted (light-corrected, 0..100) and
 * its reference Lab D50; colprof makes a profile of it, profcheck checks one
 * against it, and it is the profile's 'targ' tag. malloc'd; NULL when out of memory.
 */
char *calib_ti3_text(const struct calib_camera_result *r, const struct calib_chart *c);

/* The session's report as JSON ("fit", "held_out", "srgb", "patches", "model", ...). */
cJSON *calib_camera_json(const struct calib_camera_result *r);

/*
 * The session record kept beside a profile (PROFILE.json): chart, time,
 * every patch's code values and references, and its "session" (the frame,
 * settings, figures, verdict). A later session compares against it to
 * report drift.
 */
extern const struct json_format calib_camera_record_format; /* version 2 added "session" */
int calib_camera_record_save(const char *path, const struct calib_camera_result *r, const struct prov *pv,
			     cJSON *settings, double time_s, bl_err *err);

/* A profile's record's "session" (where it came from, its verdict): what every user of the profile warns about. */
int calib_camera_record_prov(const char *record_path, struct prov *pv, bl_err *err);

struct calib_drift {
	double hours;                  /* since the previous session (-1 unknown) */
	struct calib_figures previous_now; /* the previous profile on today's chart, against the references */
	struct calib_figures change;   /* the chart's colours through the previous profile, then and now */
	double intensity_change;       /* relative change of the light on the neutral patches (-0.05 = 5% darker) */
	int recalibrate;               /* previous_now.mean exceeds the threshold */
};

/*
 * Drift against the previous session: record_path is its record, icc the
 * previous profile's bytes. threshold is the machine's max_camera_de00.
 */
int calib_camera_drift(const struct calib_camera_result *now, const char *record_path,
		       const unsigned char *icc, size_t icc_len, double threshold, double time_s,
		       struct calib_drift *d, bl_err *err);

cJSON *calib_drift_json(const struct calib_drift *d);

/* ---- an existing profile on a fresh chart (calib_profile_check.c) ---- */

struct calib_profile_check {
	double lab[CALIB_MAX_PATCHES][3];  /* each patch's code values (as fitted) through the profile */
	double de00[CALIB_MAX_PATCHES];    /* against the chart's reference */
	struct calib_figures figures;
};

/* Reads r's patches through prof, a profile made before (calib camera --check). */
void calib_profile_check(const struct calib_camera_result *r, const struct meas_profile *prof,
			 struct calib_profile_check *c);

/*
 * The patch-error picture (as ArgyllCMS's diag.tif shows where it read):
 * the frame at half brightness, each patch's measured box split into the
 * reference (left) and the profile's reading (right), framed green within
 * threshold CIEDE2000, amber within twice it, red beyond, the frame wider
 * as the error grows. out is allocated (img_free it).
 */
int calib_profile_check_picture(const struct img *frame, const struct calib_camera_result *r,
				const struct calib_profile_check *c, double threshold, struct img *out,
				bl_err *err);

/* ---- the canvas session (calib_canvas.c) ---- */

struct calib_canvas_result {
	struct vis_markers markers;    /* where the markers are: the machine's zones.canvas */
	struct vis_canvas canvas;      /* what is written */
	double H[9];                   /* canvas mm -> px */
	int source;                    /* enum vis_source: VIS_FROM_MARKERS, or VIS_FROM_FILE for given corners */
	int markers_found;
	int n_points;                  /* points the homography was fitted to */
	double rms_mm, max_mm;         /* their reprojection error on the canvas (detection noise of single corners) */
	double map_error_mm;           /* the fitted map's error over the canvas, propagated from that noise (what is stored and checked) */
	double mm_per_px;              /* the frame's scale at the canvas centre */
	double corners_off_mm;         /* corners given: the farthest from where the markers put it, -1 unchecked */
};


/*
 * Fits the canvas in frame: from the four corner markers (every corner of
 * their squares, refined: up to 44 points, least squares, errors in mm), or
 * from corners_px given (clockwise as the frame shows them from the origin's
 * corner; exact, error not measurable: -1), refused when they run the other
 * way (a mirror) or, when the markers are in view, lie off them. markers gives the
 * canvas size and the markers' geometry (vis_markers_from_machine).
 */
int calib_canvas_run(const struct img *frame, const char *name, const struct vis_markers *markers,
		     const double *corners_px, struct calib_canvas_result *r, bl_err *err);

cJSON *calib_canvas_json(const struct calib_canvas_result *r);

/*
 * Compares with a simulator truth file's markers (their centres and outer
 * corners in the image): each is mapped through the fitted homography back
 * to the canvas and compared with where that point lies, in mm.
 */
int calib_canvas_truth(const struct calib_canvas_result *r, const cJSON *truth, const char *name,
		       double *mean_mm, double *max_mm, bl_err *err);

/* ---- arm registration (calib_arm.c) ---- */

enum calib_arm_model { CALIB_ARM_SIMILARITY = XFORM_SIMILARITY, CALIB_ARM_AFFINE = XFORM_AFFINE };
#define calib_arm_model_names xform_model_names /* "similarity", "affine", NULL */

#define CALIB_ARM_MAX_POINTS XFORM_REG_MAX_POINTS
/* Points closer than this (mm, on either side of the map) are one place: they count once towards the four a fit needs. */
#define CALIB_ARM_SAME_MM 1.0
/* A point recorded further than this above the canvas surface (mm) touches nothing: the session warns. */
#define CALIB_ARM_ABOVE_MM 5.0

/*
 * The canvas-to-arm registration (the file calibration.arm names, kind
 * "arm-calibration", version 1): canvas (x, y) mm to machine (x, y) mm by
 * xy = A (x, y) + t, and the canvas surface height z = z0 + zx x + zy y.
 */
struct calib_arm {
	int model;                     /* enum calib_arm_model */
	double a[2][3];                /* machine x = a[0][0] x + a[0][1] y + a[0][2]; y alike */
	double z[3];                   /* z0, zx, zy */
	double scale, rotation_deg;    /* of the fit (similarity: exact; affine: mean of the axes) */
	int n;
	double canvas_mm[CALIB_ARM_MAX_POINTS][2];
	arm_point arm_mm[CALIB_ARM_MAX_POINTS];
	double residual_mm[CALIB_ARM_MAX_POINTS]; /* in the canvas plane */
	double rms_mm, max_mm;
	double z_rms_mm;               /* of the surface plane */
	char created[32];              /* UTC, ISO 8601 */
	struct prov prov;              /* the file's "session" (calib_arm_save writes it, calib_arm_load reads it) */
};

/*
 * Fits the registration to n >= 4 point pairs. Points that do not span the
 * plane (all on a line) are BL_EINVAL.
 */
int calib_arm_fit(int model, int n, const double (*canvas_mm)[2], const arm_point *arm_mm,
		  struct calib_arm *out, bl_err *err);

/* Writes the registration with its "session" from c->prov and the writer's settings (taken over; NULL: none). */
int calib_arm_save(const char *path, const struct calib_arm *c, cJSON *settings, bl_err *err);
int calib_arm_load(const char *path, struct calib_arm *c, bl_err *err);
cJSON *calib_arm_json(const struct calib_arm *c);

/* Canvas (x, y) mm, at height dz_mm above the canvas surface, to machine coordinates. */
void calib_arm_to_machine(const struct calib_arm *c, double x_mm, double y_mm, double dz_mm,
			  arm_point *out);
/* Machine (x, y) to canvas (x, y) mm. */
void calib_arm_to_canvas(const struct calib_arm *c, double mx_mm, double my_mm, double *x_mm,
			 double *y_mm);

/* Reads point pairs ({"kind": "arm-points", "version": 1, "points": [{"canvas_mm", "arm_mm"}]}). */
int calib_arm_points_load(const char *path, int *n, double (*canvas_mm)[2], arm_point *arm_mm,
			  bl_err *err);

/* The default targets: 20 mm inside each canvas corner and the centre (5 points). */
int calib_arm_default_targets(const struct machine *m, double (*canvas_mm)[2]);

/* ---- the paint card (calib_paints.c) ---- */

#define CALIB_CARD_MAX_TINTS 4
#define CALIB_CARD_MAX_SWATCHES (PALETTE_MAX_PAINTS * (1 + CALIB_CARD_MAX_TINTS))
/*
 * A swatch further than this (CIEDE2000) from what its palette predicts is
 * not its paint (another paint's box, a bare box, the wrong palette). A
 * batch, a camera profile and a mix by weight each differ by a few units: on
 * the simulator (seeds 3, 5) the farthest right swatch is 3.0 from its palette.
 */
#define CALIB_SWATCH_FAR_DE00 12.0

/*
 * A paint card (kind "paint-card", version 1): a marker in each corner
 * (vision's design, host/vision/canvas.h, of side marker_size_mm, centred
 * marker_inset_mm inside the corner; the one with the core at the card's top
 * left, so the card is read the right way round however it lies), and a grid
 * of swatch boxes, one row a paint: its masstone, then its tints with the
 * palette's white at the given paint fractions (by weight).
 */
struct calib_card_swatch {
	char paint[CFG_NAME_MAX];
	double fraction;               /* paint / (paint + white) by weight; 1 for the masstone */
	double rect_mm[4];             /* x, y, w, h on the card */
};

struct calib_card {
	char palette[64];
	char white[CFG_NAME_MAX];
	double size_mm[2];
	double marker_size_mm;
	double marker_inset_mm;
	int n_tints;
	double tints[CALIB_CARD_MAX_TINTS];
	int n;
	struct calib_card_swatch s[CALIB_CARD_MAX_SWATCHES];
};

/* Lays out a card for a palette's paints; tints (n_tints, 1..4, each in (0, 1)) default to 0.5 and 0.1. */
int calib_card_layout(const struct palette *p, int n_tints, const double *tints,
		      struct calib_card *card, bl_err *err);
int calib_card_save(const char *path, const struct calib_card *card, bl_err *err);
int calib_card_load(const char *path, struct calib_card *card, bl_err *err);
/* The card as SVG for printing at 1:1 (mm units), swatch boxes labelled. *out malloc'd. */
int calib_card_svg(const struct calib_card *card, char **out, bl_err *err);

/* Where the card lies in a frame: card mm -> px, from its four markers. */
int calib_card_locate(const struct img *frame, const char *name, const struct calib_card *card,
		      double H[9], bl_err *err);

struct calib_swatch_result {
	char paint[CFG_NAME_MAX];
	double fraction;
	struct meas_roi roi;
	double lab[3];
	double stddev[3];
	long pixels;
	int has_truth;
	double truth_lab[3], truth_de00;
};

struct calib_paints_result {
	struct calib_card card;
	double H[9];
	int n;
	struct calib_swatch_result s[CALIB_CARD_MAX_SWATCHES];
	struct palette out;            /* the palette with measured data */
	double model_de00[PALETTE_MAX_PAINTS]; /* the mixing model's fit to each paint's measurements */
	int has_truth;
	struct calib_figures truth;    /* the card's measurement against the truth */
	int n_heldout;                 /* tints predicted by the model fitted without them */
	struct calib_figures heldout;
};

/*
 * Measures a painted card through the camera profile and derives every
 * paint's measured data (masstone Lab, tints) for the mixing model. The
 * palette gives the paints, wells and white; the output keeps them, with
 * measured data in place of what they had. The result is checked by loading
 * it into the mixing model. r is allocated (free()).
 */
int calib_paints_run(const struct img *frame, const char *name, const struct calib_card *card,
		     const struct palette *p, const struct meas_profile *prof,
		     struct calib_paints_result **r, bl_err *err);

/* Compares each swatch with the simulator's truth (patches named "PAINT@FRACTION", the masstone "PAINT@1"). */
int calib_paints_truth(struct calib_paints_result *r, const struct calib_truth_patch *t, int n,
		       const char *name, bl_err *err);

cJSON *calib_paints_json(const struct calib_paints_result *r);

/* ---- the machine's calibration, in one call (calib_machine.c) ---- */

/*
 * Everything calibration gave a machine, for the run engine and the CLI:
 * each part is present when the machine file names its file. A named file
 * that is missing or bad is an error (never silently uncalibrated); an
 * unnamed one leaves the part absent and says so in missing.
 */
/* One calibration file a machine names, what it records of itself, and its digest. */
struct calib_file {
	const char *key;               /* "camera_profile", "canvas", "arm", "light_map" */
	char path[CFG_PATH_MAX];
	char sha256[BL_DIGEST_HEX];
	int has_prov;                  /* the profile's record may be absent: nothing known */
	struct prov prov;
	double age_h;                  /* since prov.created, -1 unknown */
};

#define CALIB_FILES 4

struct calib_set {
	struct meas_profile *profile;  /* always set: the camera profile, or sRGB when absent */
	int has_profile;
	int has_canvas;
	struct vis_canvas canvas;
	int has_arm;
	struct calib_arm arm;
	int has_light;
	struct vis_light light;        /* calibration.light_map */
	char missing[256];             /* "camera_profile, arm" or "" */
	char warnings[1024];           /* recorded errors beyond the machine's thresholds, forced results, old files */
	int n_files;
	struct calib_file files[CALIB_FILES];
	int forced;                    /* files written by --force beyond their threshold */
	int too_old;                   /* files older than calibration.max_age_h */
};

/*
 * The one validator of the calibration files a machine names: each through
 * its own kind's loader (an ICC profile, a canvas, an arm registration, a
 * light map), so `config check` and a run refuse the same files. Each file's
 * digest and record (its "session"; a profile's is PROFILE.json beside it)
 * go in files; a result written by --force, or older than
 * calibration.max_age_h, is named in warnings (forced, too_old count them),
 * which every command using the calibration prints (calib_set_warn).
 */
int calib_load_machine(const struct machine *m, struct calib_set *out, bl_err *err);
void calib_set_free(struct calib_set *s);
/* Prints s->warnings (one log warning), if any. */
void calib_set_warn(const struct calib_set *s);
/*
 * calib_load_machine for a run (run_options.calibration; calib_run.c): warns
 * of what it found, and hands the run the profile, the light map and each
 * file's digest and record.
 */
struct run_calibration;
int calib_for_run(const struct machine *m, struct run_calibration *out, bl_err *err);
/* A profile named on the command line: a warning when its record says it was forced. */
void calib_profile_warn(const char *profile);

/* ---- truth files (calib_truth.c) ---- */

struct calib_truth_patch {
	char name[64];
	struct meas_roi roi;
	double lab[3];
};

/*
 * Reads the simulator's truth (docs/sim.md) strictly: its patches, and its
 * time_s (simulated seconds; -1 when absent; time_s may be NULL). name is
 * where it came from, for messages. *out is malloc'd.
 */
int calib_truth_parse(const cJSON *root, const char *name, struct calib_truth_patch **out, int *n,
		      double *time_s, bl_err *err);
/* The same from a truth file. */
int calib_truth_load(const char *path, struct calib_truth_patch **out, int *n, double *time_s,
		     bl_err *err);

/* ---- helpers ---- */

/* XYZ D50 (white Y = 1) to Lab, as LittleCMS does it (D50 0.9642, 1, 0.8249). */
void calib_xyz_to_lab(const double xyz[3], double lab[3]);
/* CIEDE2000 through LittleCMS. */
double calib_de00(const double a[3], const double b[3]);
/* Summary of n values. */
void calib_figures_of(const double *de, const char (*names)[CALIB_NAME_MAX], int n,
		      struct calib_figures *f);
cJSON *calib_figures_json(const struct calib_figures *f);
/* Now as UTC ISO 8601. */
void calib_now_iso(char *out, size_t n);
/*
 * The total-least-squares line through n points (px): its centre c and unit
 * direction d; 0 when n < 2. The chart's outline and the finder markers'
 * edges are fitted with it.
 */
int calib_line_fit(const double (*p)[2], int n, double c[2], double d[2]);
/*
 * Where two lines of calib_line_fit (a centre, a unit direction) cross: 0
 * when they are within 1e-6 rad of parallel, where the crossing lies a
 * million times farther off than the lines lie apart: no corner of anything.
 */
int calib_lines_meet(const double c1[2], const double d1[2], const double c2[2], const double d2[2],
		     double out[2]);

#endif
