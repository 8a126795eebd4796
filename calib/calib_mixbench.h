/* calib_mixbench.h: the mixing trial's bench: the simulator's mixing cells and camera without the arm, measured through the calibrated vision pipeline as a run measures a cell. */
#ifndef BL_CALIB_MIXBENCH_H
#define BL_CALIB_MIXBENCH_H

#include <cJSON.h>
#include <stdint.h>

#include "calib/calib.h"
#include "color/mix.h"
#include "config/machine.h"
#include "config/palette.h"
#include "rig/rig.h"
#include "vision/light.h"
#include "vision/observe.h"

/*
 * The world of a trial: the simulator's mixing cells and camera, without the
 * arm (sim_bench_*), measured through the calibrated vision pipeline exactly
 * as the run engine measures a cell: the camera profile (made here from a
 * chart frame of the same bench, as `calib camera` makes it, unless the
 * machine file names one), the machine's light map divided out of every frame
 * as the engine divides it (made here from the simulator's flat scene, as
 * `calib camera --flat --light-map` makes it, when the machine file names
 * none), the canvas geometry from the corner markers (or calibration.canvas),
 * and the cell's region through vis_measure_station.
 */
struct calib_mixbench {
	struct rig rig;              /* the rig keeps pointers into itself: never moved */
	const struct machine *m;     /* rig.m */
	struct sim *sim;
	const struct mix_model *model;
	char well[MIX_MAX_PAINTS][CFG_NAME_MAX]; /* the well of each model paint */
	int cell;                    /* the current mixing cell, -1 before the first */
	int wash_ms;                 /* the spatula's wash after each dispense, as a plan washes */
	struct meas_profile *profile;
	struct calib_set cs;
	int has_cs;
	char profile_source[CFG_PATH_MAX + 96];
	int calibrated_here;
	double calib_held_mean, calib_held_max; /* of a profile made here, against the chart */
	double calib_truth_held_mean;
	struct vis_geometry g;
	struct vis_light light;
	int has_light;               /* 0: light not corrected */
	struct vis_lamp *lamp;       /* the board in the bare frame: the lamp followed from it (with the light) */
	double lamp_now[3];          /* the lamp in the last frame against the bare one, R, G, B */
	char light_source[CFG_PATH_MAX + 96];
	double light_min, light_max; /* the map's gain over the cells' regions */
	int measurements;
	double time_s;               /* simulated time at the end */
	/*
	 * Beside the truth of the paint, the truth of the cell as it lies (its
	 * content as deep as its volume over the cell's white floor, what the
	 * camera looks at): it splits the camera's distance from the paint's
	 * colour into the camera's own error and the floor showing through a
	 * thin layer.
	 */
	double *seen_de00;           /* camera against the cell as seen, per measurement */
	double *thin_de00;           /* the cell as seen against its paint's colour */
	int n_seen, cap_seen;
};

/*
 * Opens the bench of machine mc (its camera must be the simulator's, with a
 * mixing cell) for model's paints as palette p places them, seeded with
 * seed; the camera profile and (light: 1) the light map are the machine
 * file's, else made here from the simulator's chart and flat frames. Fills
 * ops with the bench's fresh-cell, dispense, measure and truth operations
 * for mix_trial. 0, or an error with nothing left open.
 */
int calib_mixbench_open(const struct machine *mc, const struct palette *p, const struct mix_model *model,
			uint64_t seed, int light, struct calib_mixbench **out, struct mix_ops *ops, bl_err *err);

/* After the trial: the simulated time, and the spreads of the camera against the cell as it lies and of that against its paint. */
void calib_mixbench_finish(struct calib_mixbench *b, struct mix_trial_spread *seen, struct mix_trial_spread *thin);

/* The trial's figures with the bench's camera, light and time, as `mix trial --json` prints them. */
cJSON *calib_mixbench_json(const struct mix_trial_stats *st, const struct calib_mixbench *b,
			   const struct mix_trial_spread *seen, const struct mix_trial_spread *thin);

void calib_mixbench_close(struct calib_mixbench *b);

#endif
