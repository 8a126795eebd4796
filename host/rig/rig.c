/* rig.c: chooses the arm and camera backends of a machine file from a table, so every backend registers in one place. */
#include "rig/rig.h"

#include <string.h>

#include "rig/rig_shadow.h"
#include "sim/sim.h"

/*
 * The simulated world. With the simulator's arm the run keeps the world's
 * virtual clock; when the arm is real (a shadow world the sim camera films),
 * the world keeps that clock to itself (paint, light and frames run on it)
 * while the run keeps the real arm's.
 */
static int open_world(struct rig *r, const struct rig_options *o, int shadow, bl_err *err)
{
	struct sim_options so = { 0 };

	if (r->sim)
		return 0;
	if (o) {
		so.seed = o->seed;
		so.seed_given = o->seed_given;
		so.world_file = o->world_file;
	}
	if (!shadow)
		r->clock = &r->vclock;
	return sim_open_owned(&r->m, &so, o ? o->world_owner : NULL, &r->vclock, &r->sim, err);
}

/* The hardware backends of config/backends.def; the simulator's slots stay NULL (its world opens it). */
static int (*const arm_opens[MACHINE_ARM_COUNT])(const struct machine *m, clk *c,
						  struct arm **out, bl_err *err) = {
#define BL_ARM_BACKEND(ID, name, load_connection, open) [MACHINE_ARM_##ID] = open,
#include "config/backends.def"
#undef BL_ARM_BACKEND
};

static int (*const cam_opens[MACHINE_CAM_COUNT])(struct camera *c, const struct machine *m,
						  clk *clock, bl_err *err) = {
#define BL_CAM_BACKEND(ID, name, open) [MACHINE_CAM_##ID] = open,
#include "config/backends.def"
#undef BL_CAM_BACKEND
};

static int open_arm(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc;

	if (r->m.arm_backend == MACHINE_ARM_SIM) {
		if ((rc = open_world(r, o, 0, err)) == 0)
			r->arm = sim_arm(r->sim);
		return rc;
	}
	if ((rc = arm_opens[r->m.arm_backend](&r->m, r->clock, &r->arm, err)))
		return rc;
	if (r->m.camera.backend == MACHINE_CAM_SIM) {
		/*
		 * A real arm and the simulator's camera: the camera must see what the
		 * arm did, so the simulated world repeats every action the arm completes.
		 */
		struct arm *wrapped;

		if ((rc = open_world(r, o, 1, err)) ||
		    (rc = rig_shadow_arm(r->arm, r->sim, &wrapped, err)))
			return rc;
		r->arm = wrapped;
	}
	return 0;
}

static int open_camera(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc;

	if (r->m.camera.backend == MACHINE_CAM_SIM) {
		/* With a real arm the camera films a world in the arm's shadow (rig_shadow.h). */
		if ((rc = open_world(r, o, r->m.arm_backend != MACHINE_ARM_SIM, err)) == 0)
			r->cam = sim_camera(r->sim);
		return rc;
	}
	if ((rc = cam_opens[r->m.camera.backend](&r->cam_store, &r->m, r->clock, err)) == 0)
		r->cam = &r->cam_store;
	return rc;
}

static int open_parts(const struct machine *m, const struct rig_options *o, int with_arm,
		      struct rig *r, bl_err *err)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->m = *m;
	r->clock = clk_monotonic();
	for (int k = 0; o && k < o->n_faults; k++) {
		if (m->arm_backend != MACHINE_ARM_SIM && m->camera.backend != MACHINE_CAM_SIM)
			return bl_fail(err, BL_EINVAL, "--fault: %s simulates nothing, so it has no "
				       "faults to inject", m->file);
		rc = machine_sim_fault_set(&r->m, o->faults[k], err);
		if (rc)
			return rc;
	}
	if ((with_arm && (rc = open_arm(r, o, err))) || (rc = open_camera(r, o, err)))
		goto out_close;
	return 0;

out_close:
	rig_close(r);
	return rc;
}

int rig_open(const struct machine *m, const struct rig_options *o, struct rig *r, bl_err *err)
{
	return open_parts(m, o, 1, r, err);
}

int rig_open_camera(const struct machine *m, const struct rig_options *o, struct rig *r,
		    bl_err *err)
{
	return open_parts(m, o, 0, r, err);
}

int rig_well_refilled(struct rig *r, const char *well, bl_err *err)
{
	return r->sim ? sim_well_refill(r->sim, well, NULL, err) : 0;
}

void rig_close(struct rig *r)
{
	if (r->cam)
		cam_close(r->cam);
	if (r->arm)
		arm_close(r->arm);
	if (r->sim)
		sim_close(r->sim);
	r->cam = NULL;
	r->arm = NULL;
	r->sim = NULL;
}
