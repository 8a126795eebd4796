/* kin.c: cartesian and SCARA kinematics (inverse and forward) with the machine's joint limits. */
#include <math.h>

#include "arm/kin.h"

#define DEG (180.0 / M_PI)

double arm_kin_step_mm(const struct machine *m)
{
	return m->kin.type == MACHINE_KIN_SCARA ? 2.0 : INFINITY;
}

static int within(double v, const double lim[2])
{
	return v >= lim[0] - 1e-9 && v <= lim[1] + 1e-9;
}

int arm_kin_inverse(const struct machine *m, const arm_point *p, double joint[ARM_KIN_JOINTS],
		    bl_err *err)
{
	const struct machine_kinematics *k = &m->kin;
	double dx, dy, c2, s2, t1, t2;

	if (k->type == MACHINE_KIN_CARTESIAN) {
		joint[0] = p->x;
		joint[1] = p->y;
		joint[2] = p->z;
		joint[3] = 0.0;
		return 0;
	}
	dx = p->x - k->base_mm[0];
	dy = p->y - k->base_mm[1];
	c2 = (dx * dx + dy * dy - k->l1_mm * k->l1_mm - k->l2_mm * k->l2_mm) /
	     (2.0 * k->l1_mm * k->l2_mm);
	if (c2 > 1.0 + 1e-12 || c2 < -1.0 - 1e-12)
		return bl_fail(err, BL_EINVAL, "(%.3f, %.3f) mm is out of the SCARA arm's reach",
			       p->x, p->y);
	c2 = fmax(-1.0, fmin(1.0, c2));
	s2 = sqrt(1.0 - c2 * c2);
	if (k->elbow_right)
		s2 = -s2;
	t2 = atan2(s2, c2);
	t1 = atan2(dy, dx) - atan2(k->l2_mm * s2, k->l1_mm + k->l2_mm * c2);
	/* atan2 gives (-180, 180]: bring the shoulder into its range when a turn does it. */
	t1 *= DEG;
	if (!within(t1, k->j1_deg) && within(t1 + 360.0, k->j1_deg))
		t1 += 360.0;
	else if (!within(t1, k->j1_deg) && within(t1 - 360.0, k->j1_deg))
		t1 -= 360.0;
	joint[0] = t1;
	joint[1] = t2 * DEG;
	joint[2] = p->z;
	joint[3] = 0.0;
	if (!within(joint[0], k->j1_deg))
		return bl_fail(err, BL_EINVAL,
			       "(%.3f, %.3f) mm needs shoulder %.2f deg, outside kinematics.j1_deg %g..%g",
			       p->x, p->y, joint[0], k->j1_deg[0], k->j1_deg[1]);
	if (!within(joint[1], k->j2_deg))
		return bl_fail(err, BL_EINVAL,
			       "(%.3f, %.3f) mm needs elbow %.2f deg, outside kinematics.j2_deg %g..%g",
			       p->x, p->y, joint[1], k->j2_deg[0], k->j2_deg[1]);
	return 0;
}

void arm_kin_forward(const struct machine *m, const double joint[ARM_KIN_JOINTS], arm_point *p)
{
	const struct machine_kinematics *k = &m->kin;
	double t1, t12;

	if (k->type == MACHINE_KIN_CARTESIAN) {
		p->x = joint[0];
		p->y = joint[1];
		p->z = joint[2];
		return;
	}
	t1 = joint[0] / DEG;
	t12 = (joint[0] + joint[1]) / DEG;
	p->x = k->base_mm[0] + k->l1_mm * cos(t1) + k->l2_mm * cos(t12);
	p->y = k->base_mm[1] + k->l1_mm * sin(t1) + k->l2_mm * sin(t12);
	p->z = joint[2];
}
