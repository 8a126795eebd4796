/* calib_arm_session.c: the guided arm registration at the terminal: the operator jogs the brush tip to each marked point through the safety gate at reduced speed (or moves the arm by hand) and brushloop records where the arm says it is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib_arm_session.h"

#define MAX_STEP_MM 50.0

/* Reduced speed for jogging by hand: a tenth of the soft limit, never above 25 mm/s. */
double calib_arm_jog_speed(const struct machine *m)
{
	return fmin(25.0, 0.1 * m->limits.soft.speed_mm_s);
}

static void help(FILE *out, int by_hand)
{
	if (by_hand) {
		fprintf(out, "  commands: ok (the tip is on the point: record it), skip, quit\n");
		return;
	}
	fprintf(out,
		"  commands: x+ x- y+ y- z+ z- [MM]  jog the tip (default step, at most %g mm)\n"
		"            step MM                 set the default step\n"
		"            go                      move above the point's nominal position (travel height)\n"
		"            where                   print where the arm says the tip is\n"
		"            ok                      the tip is on the point: record it\n"
		"            skip, quit\n",
		MAX_STEP_MM);
}

static int gate_run(struct calib_arm_session *s, struct arm_action *a, bl_err *err)
{
	struct gate_decision d;
	int rc = gate_execute(s->gate, s->arm, a, NULL, &d, err);

	if (rc == 0)
		return 0;
	if (rc == BL_EDENIED) {
		const struct gate_finding *f = gate_decision_primary(&d);

		fprintf(s->out, "  the gate refused it: %s\n",
			f ? (f->detail[0] ? f->detail : f->message) : err->msg);
		s->refused++;
		bl_err_clear(err);
		return 1;
	}
	return rc;
}

static int jog(struct calib_arm_session *s, double dx, double dy, double dz, bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_JOG;
	a.id = -1;
	a.speed_mm_s = s->speed_mm_s;
	a.target = (arm_point){ dx, dy, dz };
	/* A jog towards a point on the canvas may end on it: travel and canvas, nothing else. */
	a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CANVAS);
	s->jogs++;
	return gate_run(s, &a, err);
}

static int where(struct calib_arm_session *s, arm_point *p, bl_err *err);

/*
 * Above the target at travel height. A tip below travel height (on the point
 * just recorded) is lifted straight up first, declaring the canvas it
 * leaves: a move across from there would drag the brush over the canvas,
 * which the gate rightly refuses for a travel move.
 */
static int go_above(struct calib_arm_session *s, const double xy[2], bl_err *err)
{
	const struct machine *m = s->m;
	struct machine_pt t = xform_to_machine(&m->xf, (struct canvas_pt){ xy[0], xy[1] });
	struct arm_action a;
	arm_point now;
	int rc;

	if ((rc = where(s, &now, err)))
		return rc;
	if (now.z < m->travel_z_mm - 1e-6) {
		memset(&a, 0, sizeof(a));
		a.kind = ARM_MOVE;
		a.id = -1;
		a.speed_mm_s = s->speed_mm_s;
		a.target = (arm_point){ now.x, now.y, m->travel_z_mm };
		a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CANVAS);
		if ((rc = gate_run(s, &a, err)))
			return rc;
	}
	memset(&a, 0, sizeof(a));
	a.kind = ARM_MOVE;
	a.id = -1;
	a.speed_mm_s = s->speed_mm_s;
	a.target = (arm_point){ t.x, t.y, m->travel_z_mm };
	a.zones = 1u << ARM_ZONE_TRAVEL;
	return gate_run(s, &a, err);
}

static int where(struct calib_arm_session *s, arm_point *p, bl_err *err)
{
	struct arm_status st;
	int rc = arm_status(s->arm, &st, err);

	if (rc)
		return rc;
	if (st.fault || st.estop)
		return bl_fail(err, BL_ESAFETY, "the arm reports %s%s%s", st.estop ? "an e-stop" : "a fault",
			       st.fault_msg[0] ? ": " : "", st.fault_msg);
	*p = st.pos_mm;
	return 0;
}

/*
 * What a point about to be recorded says of itself: a tip far above the
 * canvas (at travel height: ok typed before lowering it) touches nothing, so
 * the first ok there is not taken (0 returned) and a second one, the
 * operator insisting, is; a place already recorded for another target means
 * the tip did not move: recorded with a warning, and the fit counts it once.
 */
static int check_point(struct calib_arm_session *s, const arm_point *p, int insisted)
{
	const double above = p->z - s->m->canvas.surface_z_mm;

	if (above > CALIB_ARM_ABOVE_MM && !insisted) {
		fprintf(s->out, "  warning: the tip is %.1f mm above the canvas surface (z %.2f; "
			"zones.canvas.surface_z_mm %g)%s: it touches nothing, and the registration's "
			"surface plane would be wrong. Lower it (z-) onto the point and type ok; ok again "
			"here records it anyway\n", above, p->z, s->m->canvas.surface_z_mm,
			p->z >= s->m->travel_z_mm - 1e-6 ? ", at travel height" : "");
		return 0;
	}
	for (int i = 0; i < s->n; i++)
		if (hypot(p->x - s->arm_mm[i].x, p->y - s->arm_mm[i].y) < CALIB_ARM_SAME_MM)
			fprintf(s->out, "  warning: the same place as point %d (within %g mm): did the tip "
				"move? A place recorded twice counts once\n", i + 1, CALIB_ARM_SAME_MM);
	return 1;
}

int calib_arm_session_run(struct calib_arm_session *s, bl_err *err)
{
	char line[256];

	s->n = 0;
	fprintf(s->out, "Arm registration: %d points. %s\n", s->n_targets,
		s->by_hand ? "Move the arm by hand (motors off) so the brush tip touches each point; "
			     "brushloop reads the position the arm reports."
			   : "Jog the brush tip onto each point; every jog goes through the safety gate "
			     "at reduced speed.");
	if (!s->by_hand)
		fprintf(s->out, "Jog speed %.1f mm/s, step %.2f mm.\n", s->speed_mm_s, s->step_mm);
	for (int k = 0; k < s->n_targets; k++) {
		const double *t = s->targets[k];
		int recorded = 0, air_ok = 0; /* ok typed in the air once: again there records it */
		double air_z = 0;

		fprintf(s->out, "\nPoint %d of %d: canvas (%.1f, %.1f) mm from its origin corner (the "
			"corner by the marker with the dark core).\n", k + 1, s->n_targets, t[0], t[1]);
		help(s->out, s->by_hand);
		while (!recorded) {
			char cmd[32] = "";
			double val = 0;
			int nf, rc = 0;

			fprintf(s->out, "point %d> ", k + 1);
			fflush(s->out);
			if (!fgets(line, sizeof(line), s->in))
				return bl_fail(err, BL_EINVAL, "the operator's input ended before point "
					       "%d was recorded", k + 1);
			nf = sscanf(line, "%31s %lf", cmd, &val);
			if (nf <= 0)
				continue;
			if (strcmp(cmd, "quit") == 0 || strcmp(cmd, "q") == 0)
				return bl_fail(err, BL_EINVAL, "the operator quit at point %d", k + 1);
			if (strcmp(cmd, "skip") == 0) {
				fprintf(s->out, "  skipped\n");
				break;
			}
			if (strcmp(cmd, "help") == 0 || strcmp(cmd, "?") == 0) {
				help(s->out, s->by_hand);
				continue;
			}
			if (strcmp(cmd, "ok") == 0 || strcmp(cmd, "here") == 0) {
				arm_point p;

				rc = where(s, &p, err);
				if (rc)
					return rc;
				if (!check_point(s, &p, air_ok && fabs(p.z - air_z) < 0.5)) {
					air_ok = 1;
					air_z = p.z;
					continue;
				}
				memcpy(s->canvas_mm[s->n], t, sizeof(s->canvas_mm[s->n]));
				s->arm_mm[s->n] = p;
				s->n++;
				recorded = 1;
				fprintf(s->out, "  recorded: the tip is at machine (%.3f, %.3f, %.3f) mm\n",
					p.x, p.y, p.z);
				continue;
			}
			if (strcmp(cmd, "where") == 0) {
				arm_point p;

				rc = where(s, &p, err);
				if (rc)
					return rc;
				fprintf(s->out, "  machine (%.3f, %.3f, %.3f) mm\n", p.x, p.y, p.z);
				continue;
			}
			if (s->by_hand) {
				fprintf(s->out, "  '%s': moving by hand, only ok, skip and quit\n", cmd);
				continue;
			}
			if (strcmp(cmd, "step") == 0) {
				if (nf < 2 || !(val > 0) || val > MAX_STEP_MM)
					fprintf(s->out, "  step takes a length in mm, 0..%g\n", MAX_STEP_MM);
				else
					s->step_mm = val;
				continue;
			}
			if (strcmp(cmd, "go") == 0) {
				rc = go_above(s, t, err);
			} else if (strlen(cmd) == 2 && strchr("xyz", cmd[0]) && strchr("+-", cmd[1])) {
				double d = nf >= 2 ? val : s->step_mm, v[3] = { 0, 0, 0 };

				if (!(d > 0) || d > MAX_STEP_MM) {
					fprintf(s->out, "  a jog is 0..%g mm\n", MAX_STEP_MM);
					continue;
				}
				v[cmd[0] - 'x'] = cmd[1] == '+' ? d : -d;
				rc = jog(s, v[0], v[1], v[2], err);
			} else {
				fprintf(s->out, "  unknown command '%s' (help lists them)\n", cmd);
				continue;
			}
			if (rc < 0)
				return rc;
		}
	}
	fprintf(s->out, "\n%d point%s recorded, %d jog%s, %d refused by the gate.\n", s->n,
		s->n == 1 ? "" : "s", s->jogs, s->jogs == 1 ? "" : "s", s->refused);
	return 0;
}
