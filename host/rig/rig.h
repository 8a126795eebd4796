/* rig.h: opens the arm, the camera and the clock a machine file names, through the one table that maps backends to implementations. */
#ifndef BL_RIG_RIG_H
#define BL_RIG_RIG_H

#include <stdint.h>

#include "arm/arm.h"
#include "base/clock.h"
#include "base/err.h"
#include "config/machine.h"
#include "vision/camera.h"

#define RIG_MAX_FAULTS 16

struct rig_options {
	uint64_t seed;                     /* simulator seed */
	int seed_given;
	const char *world_file;            /* simulator world file (NULL: none) */
	int n_faults;
	const char *faults[RIG_MAX_FAULTS];/* "KEY=VALUE" overrides of sim.faults */
	const char *world_owner;           /* whose world file it is (a run's id; NULL: anyone's) */
};

struct sim;

/*
 * What rig_open opened; the machine copy carries the fault overrides. The
 * backends keep pointers into it: a rig stays where it was opened until
 * rig_close.
 */
struct rig {
	struct machine m;
	clk vclock;                /* the simulator's virtual clock */
	clk *clock;                /* vclock, or the monotonic clock for hardware */
	struct arm *arm;           /* NULL after rig_open_camera */
	struct camera *cam;
	struct camera cam_store;   /* for camera backends that fill a caller's struct (v4l2, replay) */
	struct sim *sim;           /* the simulated world when a backend is "sim", else NULL */
};

/*
 * Opens the arm and camera backends m names (sim, modbus, gcode; sim, v4l2,
 * replay), and the clock they share. A backend that is not built in is an
 * error naming it. On failure nothing stays open. o may be NULL.
 */
int rig_open(const struct machine *m, const struct rig_options *o, struct rig *r, bl_err *err);

/*
 * Opens only the camera (and, for the sim camera, the simulated world it
 * films): for commands that look and never move, so no arm is connected.
 */
int rig_open_camera(const struct machine *m, const struct rig_options *o, struct rig *r,
		    bl_err *err);

/*
 * A person has filled the machine's well to capacity: where the world is
 * simulated (r->sim), the simulator's well is filled too, so the run above
 * never asks which backend it drives. Nothing to do on real hardware.
 */
int rig_well_refilled(struct rig *r, const char *well, bl_err *err);

void rig_close(struct rig *r);

#endif
