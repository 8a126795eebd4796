/* test_kin.c: cartesian and SCARA kinematics: round trips, elbow solutions, reach and joint limits. */
#include "arm/kin.h"
#include "test.h"

static struct machine mach;

static struct machine *scara(int elbow_right)
{
	char path[4096];
	bl_err err;

	snprintf(path, sizeof(path), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	if (machine_load(path, &mach, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	mach.kin.type = MACHINE_KIN_SCARA;
	mach.kin.base_mm[0] = 350;
	mach.kin.base_mm[1] = -100;
	mach.kin.l1_mm = 350;
	mach.kin.l2_mm = 300;
	mach.kin.j1_deg[0] = -10;
	mach.kin.j1_deg[1] = 190;
	mach.kin.j2_deg[0] = -160;
	mach.kin.j2_deg[1] = 160;
	mach.kin.elbow_right = elbow_right;
	return &mach;
}

TEST(cartesian_is_identity)
{
	struct machine *m = scara(0);
	arm_point p = { 12.5, -3, 40 }, q;
	double j[ARM_KIN_JOINTS];

	m->kin.type = MACHINE_KIN_CARTESIAN;
	CHECK(arm_kin_inverse(m, &p, j, NULL) == 0);
	CHECK(j[0] == 12.5 && j[1] == -3 && j[2] == 40 && j[3] == 0);
	arm_kin_forward(m, j, &q);
	CHECK(q.x == p.x && q.y == p.y && q.z == p.z);
	CHECK(isinf(arm_kin_step_mm(m)));
}

TEST(scara_round_trips_both_elbows)
{
	for (int elbow = 0; elbow < 2; elbow++) {
		struct machine *m = scara(elbow);
		static const arm_point pts[] = { { 350, 300, 0 }, { 100, 200, 10 }, { 600, 150, -5 },
						 { 350, 500, 20 } };

		for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
			double j[ARM_KIN_JOINTS];
			arm_point q;
			bl_err err;
			int rc = arm_kin_inverse(m, &pts[i], j, &err);

			CHECK_MSG(rc == 0, "elbow %d point %zu: %s", elbow, i, err.msg);
			arm_kin_forward(m, j, &q);
			CHECK_NEAR(q.x, pts[i].x, 1e-9);
			CHECK_NEAR(q.y, pts[i].y, 1e-9);
			CHECK_NEAR(q.z, pts[i].z, 1e-12);
			/* A right-handed elbow bends negative. */
			CHECK(elbow ? j[1] < 0 : j[1] > 0);
		}
		CHECK(arm_kin_step_mm(m) == 2.0);
	}
}

TEST(scara_straight_reach)
{
	struct machine *m = scara(0);
	arm_point p = { 350, 550, 0 }; /* l1 + l2 straight up */
	double j[ARM_KIN_JOINTS];

	CHECK(arm_kin_inverse(m, &p, j, NULL) == 0);
	CHECK_NEAR(j[0], 90, 1e-6);
	CHECK_NEAR(j[1], 0, 1e-6);
}

TEST(scara_refuses_out_of_reach_and_limits)
{
	struct machine *m = scara(0);
	arm_point far = { 350, 600, 0 }, near = { 350, -20, 0 }, behind = { 350, -400, 0 };
	double j[ARM_KIN_JOINTS];
	bl_err err;

	CHECK(arm_kin_inverse(m, &far, j, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "out of the SCARA arm's reach");
	/* Close to the shoulder needs an elbow folded beyond 160 degrees. */
	CHECK(arm_kin_inverse(m, &near, j, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "j2_deg");
	/* Behind the base needs the shoulder at about -90 degrees, outside -10..190. */
	CHECK(arm_kin_inverse(m, &behind, j, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "j1_deg");
}

TEST(scara_shoulder_wraps_into_its_range)
{
	struct machine *m = scara(1);
	arm_point p = { 100, -150, 0 }; /* left of the base and below its axis: atan2 gives a negative shoulder */
	double j[ARM_KIN_JOINTS];
	arm_point q;
	bl_err err;

	m->kin.j1_deg[0] = 90;
	m->kin.j1_deg[1] = 300;
	CHECK_MSG(arm_kin_inverse(m, &p, j, &err) == 0, "%s", err.msg);
	CHECK(j[0] >= 90 && j[0] <= 300);
	arm_kin_forward(m, j, &q);
	CHECK_NEAR(q.x, 100, 1e-9);
	CHECK_NEAR(q.y, -150, 1e-9);
}

TEST_MAIN(T(cartesian_is_identity), T(scara_round_trips_both_elbows), T(scara_straight_reach),
	  T(scara_refuses_out_of_reach_and_limits), T(scara_shoulder_wraps_into_its_range))
