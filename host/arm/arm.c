/* arm.c: the calls of the arm interface that anyone may make (status, hold, resume, stop, close). */
#include "arm/arm_backend.h"

int arm_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	return a->ops->status(a, st, err);
}

int arm_hold(struct arm *a, bl_err *err)
{
	return a->ops->hold(a, err);
}

int arm_resume(struct arm *a, bl_err *err)
{
	return a->ops->resume(a, err);
}

int arm_stop(struct arm *a, bl_err *err)
{
	return a->ops->stop(a, err);
}

void arm_close(struct arm *a)
{
	if (a && a->ops && a->ops->close)
		a->ops->close(a);
}

const struct machine *arm_machine(const struct arm *a)
{
	return a->m;
}

clk *arm_clock(const struct arm *a)
{
	return a->clock;
}

const char *arm_backend_name(const struct arm *a)
{
	return a->ops->name;
}
