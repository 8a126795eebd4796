/* sim.h: the simulator: a persistent world of paint, an arm and a camera behind the same interfaces as the hardware. */
#ifndef BL_SIM_SIM_H
#define BL_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "arm/arm.h"
#include "base/clock.h"
#include "base/err.h"
#include "config/machine.h"
#include "vision/camera.h"

/*
 * What the camera is shown: the world as it is, its wells and mixing cells, a
 * colour chart laid on the canvas, a painted paint card laid on the canvas, or
 * a uniform white card over the whole table (a flat field of the light).
 */
enum sim_scene { SIM_SCENE_CANVAS, SIM_SCENE_SWATCHES, SIM_SCENE_CHART, SIM_SCENE_CARD,
		 SIM_SCENE_FLAT, SIM_SCENE_COUNT };
/* "canvas", "swatches", "chart", "card", "flat" (a uniform white card over the whole table), NULL */
extern const char *const sim_scene_names[];

/* The process exit status of a simulated power loss (the process ends at once with _exit). */
#define SIM_POWER_LOSS_EXIT 86

struct sim_options {
	uint64_t seed;           /* seeds the paint batch and every noise stream */
	int seed_given;          /* a world file keeps its own seed: a different given seed is an error */
	const char *world_file;  /* loaded at open if it exists, saved after every action (NULL: none) */
};

struct sim;

/*
 * Opens the simulated world for machine m (copied): derives this run's
 * paints, loads the world file if one is named and exists, and sets the
 * virtual clock to the world's time. Fails with a message naming what is
 * wrong (an unknown paint in sim.paints, a world file made for another
 * machine or seed, a damaged world file).
 */
int sim_open(const struct machine *m, const struct sim_options *o, clk *clock, struct sim **out,
	     bl_err *err);
/*
 * The same for a world owned by owner (a run's id): its world file is
 * stamped with it, and a world file of another owner is refused (NULL or
 * "": anyone's, as sim_open).
 */
int sim_open_owned(const struct machine *m, const struct sim_options *o, const char *owner, clk *clock,
		   struct sim **out, bl_err *err);

/* Drops the caller's reference; the world is freed when its arm and camera are closed too. */
void sim_close(struct sim *s);

/* The simulated arm and camera (each holds a reference: close them with arm_close, cam_close). */
struct arm *sim_arm(struct sim *s);
struct camera *sim_camera(struct sim *s);

/* What sim_exec reports of one action. */
struct sim_exec_info {
	double time_s;           /* simulated time the action took */
	int segments;            /* straight segments executed */
	double paint_ml;         /* paint left on the canvas or in cells by this action */
};

/*
 * Expands action a from the arm's position (arm_motion) and executes it on
 * the simulated arm with no safety gate in between: for the simulator's own
 * tests and benchmarks, and for the rig's shadow of a real arm
 * (host/rig/rig_shadow.c), which repeats what the real arm did after the gate
 * allowed it. Every command (`sim exec` included) moves the arm through
 * gate_execute.
 */
int sim_exec(struct sim *s, const struct arm_action *a, struct sim_exec_info *info, bl_err *err);

/* Paint (ml) the last action the simulated arm executed left on the canvas or in cells. */
double sim_last_paint_ml(const struct sim *s);

/* The scene the camera shows on capture (default canvas). */
void sim_set_scene(struct sim *s, enum sim_scene scene);

/*
 * A paint card as calibration prints it (docs/calibration.md) and a painter
 * fills it: white paper with vision's markers (vis_marker_pattern, side
 * marker_size_mm, the origin's at the card's top left) centred
 * marker_inset_mm inside its corners, and boxes each painted opaquely with a paint mixed
 * with the white (the first paint of this run's set) at a fraction by
 * weight (1: the paint alone). It lies on the canvas, 0.5 mm above it,
 * centred at center_mm, upright as the camera sees it: card x along
 * machine +x, card y (down the card) along machine -y.
 */
#define SIM_CARD_MAX 200

struct sim_card {
	double size_mm[2];
	double center_mm[2];     /* machine x, y of the card's centre */
	double marker_size_mm;
	double marker_inset_mm;
	int n;
	struct {
		char paint[32];
		double fraction;     /* paint / (paint + white) by weight */
		double rect_mm[4];   /* x, y, w, h on the card */
	} box[SIM_CARD_MAX];
};

/* Sets the card the card scene shows; a paint this run does not have is BL_EINVAL naming it. */
int sim_set_card(struct sim *s, const struct sim_card *card, bl_err *err);

/*
 * Renders one frame of scene as JPEG, without the frame faults (drop,
 * corrupt) but with all the camera's noise; advances the clock by one frame
 * period like a capture.
 */
int sim_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err);

/*
 * The truth of scene as the last render saw it: {"scene", "width", "height",
 * "patches": [{"name", "roi": [x, y, w, h], "lab": [L, a, b]}], "markers":
 * [...]}. See docs/sim.md.
 */
int sim_truth(struct sim *s, enum sim_scene scene, cJSON **out, bl_err *err);

/* Saves the world atomically (the world file of sim_open when path is NULL). */
int sim_save(struct sim *s, const char *path, bl_err *err);

/* The world's state as the bytes sim_save writes (malloc'd), for comparisons. */
int sim_state_bytes(struct sim *s, unsigned char **buf, size_t *len, bl_err *err);

/* Figures of the world, for reports and tests. */
struct sim_stats {
	long actions;            /* actions executed over the world's life */
	long frames;             /* frames captured */
	double time_s;           /* simulated time */
	double arm_time_s;       /* time the arm spent moving */
	double canvas_paint_ml;  /* paint on the canvas, wet and dry */
	double canvas_wet_ml;    /* of which still wet */
	int painted_cells;       /* canvas cells with any paint */
	uint64_t seed;
};
void sim_get_stats(struct sim *s, struct sim_stats *st);

/* Volume (ml) a well or mixing cell holds, or -1 when there is no such station. */
double sim_station_ml(struct sim *s, const char *name);

/*
 * CIELAB (D50) of the canvas at machine (x, y) mm as a spectrophotometer
 * would read it, wet paint included; fails outside the canvas.
 */
int sim_canvas_lab(struct sim *s, double x_mm, double y_mm, double lab[3], bl_err *err);

/* CIELAB (D50) of what a well or mixing cell holds, well stirred (fails when empty or unknown). */
int sim_station_lab(struct sim *s, const char *name, double lab[3], bl_err *err);

/*
 * The mixing bench without the arm, for `brushloop mix trial`: a mixing cell
 * emptied and cleaned, units dispensed from a well into it, a cell stirred,
 * the dispensing spatula washed and wiped (as a plan does after stirring).
 * These use the arm's tools and physics (each unit off by sim.dispense_sd,
 * the spatula keeping 3 % of a unit for the next drop until it is washed)
 * and advance the clock by the time the arm would take from its park pose,
 * but the arm stays parked, out of the camera's view. An unknown well or
 * cell, or units or times out of range, is BL_EINVAL naming it.
 */
int sim_bench_clear(struct sim *s, const char *cell, bl_err *err);
int sim_bench_dispense(struct sim *s, const char *well, const char *cell, int units, bl_err *err);
int sim_bench_stir(struct sim *s, const char *cell, int ms, bl_err *err);
int sim_bench_clean(struct sim *s, int wash_ms, bl_err *err);

/*
 * A person refills a well: it holds its paint up to its capacity_ml again
 * (what was left stays; the world file keeps it). *left_ml, if not NULL,
 * gets what it held before. An unknown or empty-by-design well is BL_EINVAL.
 */
int sim_well_refill(struct sim *s, const char *well, double *left_ml, bl_err *err);

#endif
