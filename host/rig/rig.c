/* rig.c: chooses the arm and camera backends of a machine file from a table, so every backend registers in one place. */
#include "rig/rig.h"

#include <string.h>

#include "arm/arm_gcode.h"
#include "arm/arm_modbus.h"
#include "rig/rig_shadow.h"
#include "sim/sim.h"
#include "vision/cam_open.h"

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
	return sim_open(&r->m, &so, &r->vclock, &r->sim, err);
}

static int open_sim_arm(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc = open_world(r, o, 0, err);

	if (rc == 0)
		r->arm = sim_arm(r->sim);
	return rc;
}

static int open_modbus_arm(struct rig *r, const struct rig_options *o, bl_err *err)
{
	(void)o;
	return arm_modbus_open(&r->m, r->clock, &r->arm, err);
}

static int open_gcode_arm(struct rig *r, const struct rig_options *o, bl_err *err)
{
	(void)o;
	return arm_gcode_open(&r->m, r->clock, &r->arm, err);
}

static int open_sim_camera(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc;

	/* With a real arm the camera films a world in the arm's shadow (rig_shadow.h). */
	rc = open_world(r, o, r->m.arm_backend != MACHINE_ARM_SIM, err);
	if (rc == 0)
		r->cam = sim_camera(r->sim);
	return rc;
}

static int open_v4l2_camera(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc = cam_v4l2_open(&r->cam_store, &r->m, r->clock, err);

	(void)o;
	if (rc == 0)
		r->cam = &r->cam_store;
	return rc;
}

static int open_replay_camera(struct rig *r, const struct rig_options *o, bl_err *err)
{
	int rc = cam_replay_open(&r->cam_store, &r->m, r->clock, err);

	(void)o;
	if (rc == 0)
		r->cam = &r->cam_store;
	return rc;
}

/* Backends by the machine file's names: a new one adds its entry here and nowhere else. */
static const struct {
	int backend;
	int (*open)(struct rig *r, const struct rig_options *o, bl_err *err);
} arm_backends[] = {
	{ MACHINE_ARM_SIM, open_sim_arm },
	{ MACHINE_ARM_MODBUS, open_modbus_arm },
	{ MACHINE_ARM_GCODE, open_gcode_arm },
}, cam_backends[] = {
	{ MACHINE_CAM_SIM, open_sim_camera },
	{ MACHINE_CAM_V4L2, open_v4l2_camera },
	{ MACHINE_CAM_REPLAY, open_replay_camera },
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int open_parts(const struct machine *m, const struct rig_options *o, int with_arm,
		      struct rig *r, bl_err *err)
{
	size_t i;
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
	if (with_arm) {
		for (i = 0; i < N_OF(arm_backends) && arm_backends[i].backend != m->arm_backend; i++)
			;
		if (i == N_OF(arm_backends))
			return bl_fail(err, BL_EINVAL, "%s: arm backend '%s' is not built into this "
				       "brushloop", m->file, machine_arm_backend_names[m->arm_backend]);
		rc = arm_backends[i].open(r, o, err);
		if (rc)
			goto out_close;
		if (m->arm_backend != MACHINE_ARM_SIM && m->camera.backend == MACHINE_CAM_SIM) {
			/*
			 * A real arm and the simulator's camera: the camera must see what the
			 * arm did, so the simulated world repeats every action the arm completes.
			 */
			struct arm *wrapped;

			if ((rc = open_world(r, o, 1, err)) ||
			    (rc = rig_shadow_arm(r->arm, r->sim, &wrapped, err)))
				goto out_close;
			r->arm = wrapped;
		}
	}
	for (i = 0; i < N_OF(cam_backends) && cam_backends[i].backend != m->camera.backend; i++)
		;
	if (i == N_OF(cam_backends)) {
		rc = bl_fail(err, BL_EINVAL, "%s: camera backend '%s' is not built into this "
			     "brushloop", m->file, machine_cam_backend_names[m->camera.backend]);
		goto out_close;
	}
	rc = cam_backends[i].open(r, o, err);
	if (rc)
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
