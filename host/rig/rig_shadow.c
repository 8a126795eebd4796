/* rig_shadow.c: a real arm with a simulated world in its shadow: every action the real arm completed is done again in the simulator, so a simulated camera films paint a real arm laid. */
#include "rig/rig_shadow.h"

#include <stdio.h>
#include <stdlib.h>

#include "arm/arm_backend.h"
#include "base/log.h"
#include "sim/sim.h"

/*
 * Why: hardware-in-the-loop runs of the whole engine. The arm is real (its
 * firmware over a real serial line, its own limits and watchdog); paint and
 * camera are the simulator's. The gate judges and the real arm executes every
 * action; only an action the real arm completed is replayed on the simulated
 * world (its arm, paint and clock), from the simulated arm's own position, so
 * the world shows what the real arm did. Status (position, faults, arm time)
 * is the real arm's: it is the machine.
 */
struct shadow {
	struct arm *real;
	struct arm *sim_arm;
	struct sim *sim;
};

static struct shadow *sh(struct arm *a)
{
	return a->priv;
}

static int shadow_home(struct arm *a, bl_err *err)
{
	struct shadow *s = sh(a);
	int rc;

	s->real->signalled = a->signalled;
	rc = s->real->ops->home(s->real, err);

	if (rc)
		return rc;
	rc = s->sim_arm->ops->home(s->sim_arm, err);
	return rc ? bl_err_prefix(err, "the simulated world could not follow the homing") : 0;
}

static int shadow_execute(struct arm *a, const struct arm_action *act, const struct arm_path *path,
			  bl_err *err)
{
	struct shadow *s = sh(a);
	struct sim_exec_info info;
	int rc;

	s->real->signalled = a->signalled;
	rc = s->real->ops->execute(s->real, act, path, err);

	if (rc)
		return rc; /* the real arm did not complete it: the world does not either */
	/* Expanded again from the simulated arm's position: the real one reads back in whole micrometres. */
	rc = sim_exec(s->sim, act, &info, err);
	if (rc) {
		/* The real arm moved: whatever the world says, this is no command that was never sent. */
		if (rc == BL_ENOTSENT)
			err->code = rc = BL_EIO;
		return bl_err_prefix(err, "the real arm completed action %ld, but the simulated world "
				     "could not follow it", act->id);
	}
	return 0;
}

static int shadow_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	return sh(a)->real->ops->status(sh(a)->real, st, err);
}

static int shadow_hold(struct arm *a, bl_err *err)
{
	struct shadow *s = sh(a);
	int rc = s->real->ops->hold(s->real, err);

	s->sim_arm->ops->hold(s->sim_arm, NULL);
	return rc;
}

static int shadow_resume(struct arm *a, bl_err *err)
{
	struct shadow *s = sh(a);
	int rc = s->real->ops->resume(s->real, err);

	if (rc == 0)
		s->sim_arm->ops->resume(s->sim_arm, NULL);
	return rc;
}

static int shadow_stop(struct arm *a, bl_err *err)
{
	struct shadow *s = sh(a);
	int rc = s->real->ops->stop(s->real, err);

	s->sim_arm->ops->stop(s->sim_arm, NULL);
	return rc;
}

static void shadow_close(struct arm *a)
{
	struct shadow *s = sh(a);

	arm_close(s->real);
	arm_close(s->sim_arm);
	free(s);
	free(a);
}

static const struct arm_ops shadow_ops = {
	.name = "shadowed",
	.home = shadow_home,
	.execute = shadow_execute,
	.status = shadow_status,
	.hold = shadow_hold,
	.resume = shadow_resume,
	.stop = shadow_stop,
	.close = shadow_close,
};

int rig_shadow_arm(struct arm *real, struct sim *world, struct arm **out, bl_err *err)
{
	struct arm *a = calloc(1, sizeof(*a));
	struct shadow *s = calloc(1, sizeof(*s));

	if (!a || !s) {
		free(a);
		free(s);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	s->real = real;
	s->sim = world;
	s->sim_arm = sim_arm(world);
	a->ops = &shadow_ops;
	a->priv = s;
	a->m = real->m;
	a->clock = real->clock;
	*out = a;
	return 0;
}
