/* arm_modbus.c: the modbus arm backend: brushloop's firmware over Modbus RTU (serial) or TCP through libmodbus, streaming joint-space segments. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <modbus.h>

#include "arm/arm_backend.h"
#include "arm/arm_modbus.h"
#include "arm/kin.h"
#include "config/machine_conn.h"
#include "firmware/include/regmap.h"

/* Attempts of one request before a communication error is reported (BL_EIO). */
#define MB_ATTEMPTS 3
/* Time between status polls while motion runs: also the heartbeat. */
#define MB_POLL_NS 2000000
/* The status block: input registers FW_IR_STATE .. FW_IR_MOTION_MS in one read. */
#define MB_ST_FIRST FW_IR_STATE
#define MB_ST_COUNT (FW_IR_MOTION_MS + 2 - FW_IR_STATE)

struct mb_status {
	uint16_t state, sw, fault, detail, refusal, qlen, qfree;
	uint32_t last_seq, done_seq, done;
	int32_t pos_um[FW_JOINTS];
	uint32_t motion_ms;      /* the firmware's time running segments since boot */
};

/* One joint-space segment as the firmware takes it. */
struct mb_seg {
	uint16_t flags, dwell_ms;
	uint32_t speed_um_s;
	int32_t target_um[FW_JOINTS];
};

struct mb {
	modbus_t *ctx;
	char where[CFG_PATH_MAX + 16];
	uint16_t cw;                  /* the control word last written */
	uint32_t seq;                 /* sequence number of the last segment sent */
	int32_t lim_min[FW_JOINTS], lim_max[FW_JOINTS];
	uint32_t lim_speed[FW_JOINTS], lim_accel[FW_JOINTS];
	uint32_t motion_ms;           /* firmware time spent executing actions since open (arm_time_s) */
	int have_status;
	struct mb_status last;
};

static struct mb *priv(struct arm *a)
{
	return a->priv;
}

static int is_exception(int e)
{
	return e >= EMBXILFUN && e <= EMBXGTAR;
}

/*
 * Runs one request with bounded retries. A Modbus exception is the
 * firmware's answer, never retried: returned as its code (> 0) for the caller
 * to explain. Communication errors are retried, then reported as BL_EIO.
 */
enum { OP_READ_IN, OP_WRITE };

/*
 * After a retried request the first one's reply may still be on its way (the
 * slave was late, not deaf), and RTU replies carry no transaction number: a
 * later write of the same shape, the next segment, would take that reply for
 * its own and count a segment the slave never got (a sequence gap), and a
 * later status read would read the one before. The slave answers in order,
 * and this one-register read's reply is never taken for a write's or a
 * status's, so once it is answered every earlier reply has come and gone.
 */
static void resync(struct mb *p)
{
	uint16_t v;

	for (int attempt = 0; attempt < MB_ATTEMPTS; attempt++) {
		if (modbus_read_input_registers(p->ctx, FW_IR_MAGIC, 1, &v) == 1)
			return;
		modbus_flush(p->ctx);
	}
}

static int request(struct mb *p, int op, int addr, int n, uint16_t *regs, const char *what,
		   bl_err *err)
{
	int e = 0;

	for (int attempt = 0; attempt < MB_ATTEMPTS; attempt++) {
		int rc = op == OP_READ_IN ? modbus_read_input_registers(p->ctx, addr, n, regs)
					  : modbus_write_registers(p->ctx, addr, n, regs);

		if (rc == n) {
			if (attempt > 0)
				resync(p);
			return 0;
		}
		e = rc < 0 ? errno : EMBMDATA;
		if (is_exception(e))
			return e - MODBUS_ENOBASE;
		/* A late reply to a timed-out request must not be read as the next one's. */
		modbus_flush(p->ctx);
	}
	return bl_fail(err, BL_EIO, "modbus %s: %s: %s (after %d attempts)", p->where, what,
		       modbus_strerror(e), MB_ATTEMPTS);
}

static uint32_t u32(const uint16_t *r)
{
	return ((uint32_t)r[0] << 16) | r[1];
}

static int read_status(struct mb *p, struct mb_status *s, bl_err *err)
{
	uint16_t r[MB_ST_COUNT];
	int rc = request(p, OP_READ_IN, MB_ST_FIRST, MB_ST_COUNT, r, "reading status", err);

#define R(addr) (r + (addr) - MB_ST_FIRST)
	if (rc > 0)
		return bl_fail(err, BL_EIO, "modbus %s: reading status: exception %d", p->where, rc);
	if (rc < 0)
		return rc;
	s->state = *R(FW_IR_STATE);
	s->sw = *R(FW_IR_STATUS);
	s->fault = *R(FW_IR_FAULT);
	s->detail = *R(FW_IR_FAULT_DETAIL);
	s->refusal = *R(FW_IR_REFUSAL);
	s->qlen = *R(FW_IR_QUEUE_LEN);
	s->qfree = *R(FW_IR_QUEUE_FREE);
	s->last_seq = u32(R(FW_IR_LAST_SEQ));
	s->done_seq = u32(R(FW_IR_DONE_SEQ));
	s->done = u32(R(FW_IR_DONE));
	for (int j = 0; j < FW_JOINTS; j++)
		s->pos_um[j] = (int32_t)u32(R(FW_IR_POS + 2 * j));
	s->motion_ms = u32(R(FW_IR_MOTION_MS));
#undef R
	p->last = *s;
	p->have_status = 1;
	return 0;
}

static int write_cw(struct mb *p, uint16_t cw, const char *what, bl_err *err)
{
	int rc = request(p, OP_WRITE, FW_HR_CONTROL, 1, &cw, what, err);

	if (rc > 0)
		return rc;
	if (rc == 0)
		p->cw = cw;
	return rc;
}

static const char *joint_unit(const struct machine *m, int j)
{
	if (m->kin.type == MACHINE_KIN_SCARA)
		return j == 2 ? "mm" : "deg";
	return j == 3 ? "deg" : "mm";
}

/* A person's explanation of a firmware fault or refusal code. */
static int explain(struct arm *a, int code, int detail, char *buf, size_t n)
{
	struct mb *p = priv(a);
	int j = detail - 1;

	switch (code) {
	case FW_FAULT_JOINT_LIMIT:
		if (j < 0 || j >= FW_JOINTS)
			return snprintf(buf, n, "a target beyond a joint limit");
		return snprintf(buf, n, "a target beyond joint %d's limits %.3f..%.3f %s", j + 1,
				p->lim_min[j] / 1000.0, p->lim_max[j] / 1000.0,
				joint_unit(a->m, j));
	case FW_FAULT_SPEED_LIMIT:
		if (j < 0 || j >= FW_JOINTS)
			return snprintf(buf, n, "a segment beyond a joint speed limit");
		return snprintf(buf, n, "a segment faster than joint %d's limit %.3f %s/s", j + 1,
				p->lim_speed[j] / 1000.0, joint_unit(a->m, j));
	case FW_FAULT_HOST_TIMEOUT:
		return snprintf(buf, n,
				"the host watchdog stopped the arm (no request for over %d ms while it moved)",
				a->m->connection.watchdog_ms);
	case FW_FAULT_SEQ_GAP:
		return snprintf(buf, n, "a segment was lost on the way (sequence gap)");
	case FW_FAULT_NOT_HOMED:
		return snprintf(buf, n, "motion before homing");
	case FW_FAULT_BAD_SEGMENT:
		return snprintf(buf, n, "a malformed segment (zero speed or unknown flags)");
	case FW_FAULT_NOT_ENABLED:
		return snprintf(buf, n, "motion while the drive is not enabled");
	case FW_FAULT_BUSY:
		return snprintf(buf, n, "the drive was busy");
	case FW_FAULT_BAD_VALUE:
		return snprintf(buf, n, "a register value out of range");
	default:
		return snprintf(buf, n, "unknown fault code %d", code);
	}
}

/* The error a latched fault or e-stop gives (BL_ESAFETY), or 0 when the drive is fine. */
static int state_error(struct arm *a, const struct mb_status *s, bl_err *err)
{
	struct mb *p = priv(a);
	char why[200];

	if (s->state == FW_STATE_ESTOP)
		return bl_fail(err, BL_ESAFETY,
			       "arm %s: e-stop latched (input %s); clearing it needs an operator (home)",
			       p->where, (s->sw & FW_SW_ESTOP_INPUT) ? "still pressed" : "released");
	if (s->state == FW_STATE_FAULT) {
		explain(a, s->fault, s->detail, why, sizeof(why));
		return bl_fail(err, BL_ESAFETY,
			       "arm %s: firmware fault: %s; clearing it needs an operator (home)",
			       p->where, why);
	}
	return 0;
}

static int mb_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	struct mb *p = priv(a);
	struct mb_status s;
	double joint[ARM_KIN_JOINTS];
	int rc = read_status(p, &s, err);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	for (int j = 0; j < FW_JOINTS; j++)
		joint[j] = s.pos_um[j] / 1000.0;
	arm_kin_forward(a->m, joint, &st->pos_mm);
	st->homed = (s.sw & FW_SW_HOMED) != 0;
	st->moving = (s.sw & FW_SW_MOVING) != 0;
	st->held = s.state == FW_STATE_HOLD;
	st->fault = s.state == FW_STATE_FAULT;
	st->estop = s.state == FW_STATE_ESTOP;
	if (st->fault || st->estop) {
		bl_err e;

		state_error(a, &s, &e);
		snprintf(st->fault_msg, sizeof(st->fault_msg), "%s", e.msg);
	}
	st->arm_time_s = p->motion_ms / 1000.0;
	return 0;
}

/* Drive to enabled (from disabled or ready); faults and e-stops stay as they are. */
static int enable(struct mb *p, bl_err *err)
{
	uint16_t cw = FW_CW_READY | FW_CW_ENABLE;
	int rc = write_cw(p, cw, "enabling the drive", err);

	if (rc > 0)
		return bl_fail(err, BL_EIO, "modbus %s: enabling the drive: exception %d", p->where,
			       rc);
	return rc;
}

/* Clears a latched fault or e-stop (the gate has put an operator in front of homing). */
static int clear_latches(struct arm *a, bl_err *err)
{
	struct mb *p = priv(a);
	struct mb_status s;
	int rc = read_status(p, &s, err);

	if (rc)
		return rc;
	if (s.state == FW_STATE_ESTOP) {
		if (s.sw & FW_SW_ESTOP_INPUT)
			return bl_fail(err, BL_ESAFETY,
				       "arm %s: the e-stop input is still pressed: release it first",
				       p->where);
		if ((rc = write_cw(p, 0, "clearing the e-stop", err)) ||
		    (rc = write_cw(p, FW_CW_ESTOP_CLEAR, "clearing the e-stop", err)))
			return rc < 0 ? rc : bl_fail(err, BL_ESAFETY, "arm %s: e-stop clear refused",
						     p->where);
	} else if (s.state == FW_STATE_FAULT) {
		if ((rc = write_cw(p, 0, "resetting the fault", err)) ||
		    (rc = write_cw(p, FW_CW_FAULT_RESET, "resetting the fault", err)))
			return rc < 0 ? rc : bl_fail(err, BL_EIO, "arm %s: fault reset refused",
						     p->where);
	}
	/* The firmware keeps its sequence across a reset: continue after what it accepted. */
	p->seq = s.last_seq;
	return 0;
}

static int mb_home(struct arm *a, bl_err *err)
{
	struct mb *p = priv(a);
	arm_point home = { a->m->home_mm[0], a->m->home_mm[1], a->m->home_mm[2] };
	double joint[ARM_KIN_JOINTS];
	uint16_t r[2 * FW_JOINTS];
	struct mb_status s;
	int rc;

	if ((rc = arm_kin_inverse(a->m, &home, joint, err)))
		return bl_err_prefix(err, "home_mm");
	if ((rc = clear_latches(a, err)) || (rc = enable(p, err)))
		return rc;
	for (int j = 0; j < FW_JOINTS; j++) {
		uint32_t v = (uint32_t)(int32_t)lround(joint[j] * 1000.0);

		r[2 * j] = (uint16_t)(v >> 16);
		r[2 * j + 1] = (uint16_t)v;
	}
	rc = request(p, OP_WRITE, FW_HR_HOME, 2 * FW_JOINTS, r, "writing the home pose", err);
	if (rc < 0)
		return rc;
	rc = write_cw(p, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOME, "homing", err);
	if (rc < 0)
		return rc;
	if (rc > 0 || (rc = read_status(p, &s, err)) || !(s.sw & FW_SW_HOMED)) {
		char why[200];

		if (rc < 0)
			return rc;
		explain(a, p->have_status ? p->last.refusal : 0, 0, why, sizeof(why));
		write_cw(p, FW_CW_READY | FW_CW_ENABLE, "homing", NULL);
		return bl_fail(err, BL_ESAFETY, "arm %s: homing refused: %s", p->where, why);
	}
	rc = write_cw(p, FW_CW_READY | FW_CW_ENABLE, "homing", err);
	return rc < 0 ? rc : 0;
}

/* Room for one more segment in *v. */
static int grow(struct mb_seg **v, size_t n, size_t *cap, bl_err *err)
{
	struct mb_seg *nv;

	if (n < *cap)
		return 0;
	nv = realloc(*v, (*cap ? 2 * *cap : 64) * sizeof(*nv));
	if (!nv)
		return bl_fail(err, BL_ENOMEM, "out of memory planning segments");
	*v = nv;
	*cap = *cap ? 2 * *cap : 64;
	return 0;
}

static int32_t um(double v)
{
	double r = v * 1000.0;

	if (r > INT32_MAX)
		return INT32_MAX;
	if (r < INT32_MIN)
		return INT32_MIN;
	return (int32_t)lround(r);
}

/*
 * Turns the tool path into firmware segments through the kinematics: each
 * straight tool segment becomes one joint-space segment (cartesian) or pieces
 * short enough that joint-linear motion stays on the line (SCARA). The speed
 * sent is the leading joint's, so the tool moves at the planned speed.
 */
static int plan(struct arm *a, const struct arm_path *path, struct mb_seg **out, size_t *n_out,
		double *est_s, bl_err *err)
{
	const struct machine *m = a->m;
	struct mb *p = priv(a);
	double step = arm_kin_step_mm(m), accel_um = INFINITY;
	size_t n = 0, cap = 0;
	struct mb_seg *v = NULL;
	double t = 0.0;

	for (int j = 0; j < FW_JOINTS; j++)
		accel_um = fmin(accel_um, p->lim_accel[j] * 1000.0);
	for (size_t i = 0; i < path->n; i++) {
		const struct arm_segment *s = &path->seg[i];
		double len = arm_segment_length(s), prev[ARM_KIN_JOINTS];
		int pieces = 1, rc;

		if (s->flags & ARM_SEG_DWELL) {
			for (int left = s->dwell_ms; left > 0; left -= 60000) {
				if (grow(&v, n, &cap, err)) {
					free(v);
					return BL_ENOMEM;
				}
				memset(&v[n], 0, sizeof(v[n]));
				v[n].flags = FW_SEG_DWELL;
				v[n].dwell_ms = (uint16_t)(left > 60000 ? 60000 : left);
				t += v[n].dwell_ms / 1000.0;
				n++;
			}
			continue;
		}
		if (len <= 0.0)
			continue;
		if (!(s->speed_mm_s > 0.0)) {
			free(v);
			return bl_fail(err, BL_EINVAL, "path segment %zu has no speed", i);
		}
		if (isfinite(step) && len > step)
			pieces = (int)ceil(len / step);
		if ((rc = arm_kin_inverse(m, &s->from, prev, err))) {
			free(v);
			return bl_err_prefix(err, "path segment %zu", i);
		}
		for (int k = 1; k <= pieces; k++) {
			double f = (double)k / pieces, joint[ARM_KIN_JOINTS], lead = 0.0;
			arm_point q = { s->from.x + (s->to.x - s->from.x) * f,
					s->from.y + (s->to.y - s->from.y) * f,
					s->from.z + (s->to.z - s->from.z) * f };

			if ((rc = arm_kin_inverse(m, &q, joint, err))) {
				free(v);
				return bl_err_prefix(err, "path segment %zu", i);
			}
			if (grow(&v, n, &cap, err)) {
				free(v);
				return BL_ENOMEM;
			}
			memset(&v[n], 0, sizeof(v[n]));
			for (int j = 0; j < FW_JOINTS; j++) {
				v[n].target_um[j] = um(joint[j]);
				lead = fmax(lead, fabs(joint[j] - prev[j]) * 1000.0);
			}
			/* um/s of the leading joint = tool mm/s * its um per tool mm. */
			v[n].speed_um_s = (uint32_t)fmax(1.0, fmin(4e9, lround(s->speed_mm_s * lead /
									       (len / pieces))));
			t += arm_move_time_s(lead, v[n].speed_um_s, accel_um);
			memcpy(prev, joint, sizeof(prev));
			n++;
		}
	}
	*out = v;
	*n_out = n;
	*est_s = t;
	return 0;
}

static int send_segment(struct arm *a, const struct mb_seg *g, uint32_t seq, bl_err *err)
{
	struct mb *p = priv(a);
	uint16_t r[FW_SEG_REGS];

	r[0] = g->flags;
	r[1] = g->dwell_ms;
	r[2] = (uint16_t)(g->speed_um_s >> 16);
	r[3] = (uint16_t)g->speed_um_s;
	for (int j = 0; j < FW_JOINTS; j++) {
		r[4 + 2 * j] = (uint16_t)((uint32_t)g->target_um[j] >> 16);
		r[5 + 2 * j] = (uint16_t)g->target_um[j];
	}
	r[12] = (uint16_t)(seq >> 16);
	r[13] = (uint16_t)seq;
	return request(p, OP_WRITE, FW_HR_SEG_FLAGS, FW_SEG_REGS, r, "sending a segment", err);
}

static int refused(struct arm *a, uint32_t seq, const struct mb_seg *g, bl_err *err)
{
	struct mb *p = priv(a);
	struct mb_status s;
	char why[200];
	int rc = read_status(p, &s, err);

	if (rc)
		return rc;
	if (s.state == FW_STATE_FAULT || s.state == FW_STATE_ESTOP) {
		state_error(a, &s, err);
		return bl_err_prefix(err, "segment %u to (%.3f, %.3f, %.3f, %.3f) refused", seq,
				     g->target_um[0] / 1000.0, g->target_um[1] / 1000.0,
				     g->target_um[2] / 1000.0, g->target_um[3] / 1000.0);
	}
	explain(a, s.refusal, s.detail, why, sizeof(why));
	return bl_fail(err, s.refusal == FW_FAULT_NOT_ENABLED ? BL_ESAFETY : BL_EIO,
		       "arm %s: segment %u refused: %s", p->where, seq, why);
}

static int mb_execute(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		      bl_err *err)
{
	struct mb *p = priv(a);
	struct mb_seg *segs = NULL;
	struct mb_status s;
	size_t n = 0, sent = 0;
	double est = 0.0;
	int64_t deadline;
	uint32_t first, motion0_ms = 0;
	int rc;

	(void)act;
	if ((rc = plan(a, path, &segs, &n, &est, err)))
		return rc;
	if ((rc = read_status(p, &s, err)))
		goto out_free_segs;
	if ((rc = state_error(a, &s, err)))
		goto out_free_segs;
	if (!(s.sw & FW_SW_HOMED)) {
		rc = bl_fail(err, BL_ESAFETY, "arm %s: not homed: home it first", p->where);
		goto out_free_segs;
	}
	if (s.state == FW_STATE_HOLD) {
		rc = bl_fail(err, BL_EPAUSED, "arm %s: held: resume it first", p->where);
		goto out_free_segs;
	}
	if (s.state == FW_STATE_DISABLED || s.state == FW_STATE_READY) {
		if ((rc = enable(p, err)))
			goto out_free_segs;
	}
	p->seq = s.last_seq;
	first = p->seq + 1;
	motion0_ms = s.motion_ms;
	/* Generous: the planned motion twice over, plus a poll per segment and slack. */
	deadline = clk_real_ns() + (int64_t)((2.0 * est + 0.02 * (double)n + 3.0) * 1e9);
	for (;;) {
		int busy = 0;

		/* Fill the firmware's queue, then poll: the poll is also the heartbeat. */
		while (sent < n && s.qfree > 0) {
			rc = send_segment(a, &segs[sent], p->seq + 1, err);
			if (rc == FW_EX_BUSY) {
				busy = 1;
				break;
			}
			if (rc > 0) {
				rc = refused(a, p->seq + 1, &segs[sent], err);
				goto out_free_segs;
			}
			if (rc < 0)
				goto out_free_segs;
			p->seq++;
			sent++;
			s.qfree--;
		}
		if ((rc = read_status(p, &s, err)))
			goto out_free_segs;
		if ((rc = state_error(a, &s, err)))
			goto out_free_segs;
		if (sent == n && s.qlen == 0 && !(s.sw & FW_SW_MOVING)) {
			/* Every segment ran: the count proves none was lost or run twice. */
			if (n && s.done_seq != p->seq) {
				rc = bl_fail(err, BL_EIO,
					     "arm %s: the queue emptied at segment %u, expected %u",
					     p->where, s.done_seq, p->seq);
				goto out_free_segs;
			}
			break;
		}
		if (clk_real_ns() > deadline) {
			write_cw(p, (uint16_t)(p->cw | FW_CW_STOP), "stopping", NULL);
			write_cw(p, (uint16_t)(p->cw & ~FW_CW_STOP), "stopping", NULL);
			rc = bl_fail(err, BL_ETIMEDOUT,
				     "arm %s: motion of segments %u..%u not done after %.1f s (planned %.1f s); stopped",
				     p->where, first, first + (uint32_t)n - 1, 2.0 * est + 3.0, est);
			goto out_free_segs;
		}
		if (sent == n || s.qfree == 0 || busy)
			clk_sleep_ns(a->clock, MB_POLL_NS);
	}
	rc = 0;
out_free_segs:
	/*
	 * Motion time as the firmware counts it: the periods a segment ran in,
	 * not the wall time between sends and polls, which a slow host or a
	 * starved emulator stretches (a 1 s move once spanned 5.8 s of polls).
	 */
	if (sent && p->have_status)
		p->motion_ms += p->last.motion_ms - motion0_ms;
	free(segs);
	return rc;
}

static int cw_op(struct arm *a, uint16_t cw, const char *what, bl_err *err)
{
	struct mb *p = priv(a);
	int rc = write_cw(p, cw, what, err);

	if (rc > 0)
		return bl_fail(err, BL_EIO, "modbus %s: %s: exception %d", p->where, what, rc);
	return rc;
}

static int mb_hold(struct arm *a, bl_err *err)
{
	return cw_op(a, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD, "holding", err);
}

static int mb_resume(struct arm *a, bl_err *err)
{
	return cw_op(a, FW_CW_READY | FW_CW_ENABLE, "resuming", err);
}

static int mb_stop(struct arm *a, bl_err *err)
{
	int rc = cw_op(a, FW_CW_READY | FW_CW_ENABLE | FW_CW_STOP, "stopping", err);

	return rc ? rc : cw_op(a, FW_CW_READY | FW_CW_ENABLE, "stopping", err);
}

int arm_modbus_estop(struct arm *a, bl_err *err)
{
	struct mb *p = priv(a);

	return cw_op(a, (uint16_t)(p->cw | FW_CW_ESTOP), "e-stop", err);
}

static void mb_close(struct arm *a)
{
	struct mb *p = priv(a);

	/* Leave the drive disabled: whatever was queued stops under control. */
	write_cw(p, 0, "disabling", NULL);
	modbus_close(p->ctx);
	modbus_free(p->ctx);
	free(p);
	free(a);
}

static const struct arm_ops mb_ops = {
	"modbus", mb_home, mb_execute, mb_status, mb_hold, mb_resume, mb_stop, mb_close,
};

static modbus_t *new_ctx(const struct machine_connection *c, bl_err *err)
{
	static const char parity[] = { 'N', 'E', 'O' };
	modbus_t *ctx;

	if (c->host[0]) {
		char node[CFG_PATH_MAX], *colon;

		snprintf(node, sizeof(node), "%s", c->host);
		colon = strrchr(node, ':');
		if (!colon) {
			bl_fail(err, BL_EINVAL, "connection.host '%s': write it as host:port", c->host);
			return NULL;
		}
		*colon = '\0';
		ctx = modbus_new_tcp_pi(node, colon + 1);
	} else {
		ctx = modbus_new_rtu(c->port, c->baud, parity[c->parity], 8, 1);
	}
	if (!ctx)
		bl_fail(err, BL_EINVAL, "modbus %s: %s", c->host[0] ? c->host : c->port,
			modbus_strerror(errno));
	return ctx;
}

/* arm.connection of a Modbus controller: RTU over a serial port or TCP, a slave address, a watchdog. */
int arm_modbus_load_connection(json_obj *o, struct machine_connection *c, bl_err *err)
{
	c->address = 1;
	c->watchdog_ms = 1000;
	BL_TRY(machine_conn_link(o, c, MACHINE_LINK_SERIAL_OR_TCP, "modbus", err));
	BL_TRY(json_i32(o, "address", JSON_OPTIONAL, 1, 247, &c->address, err));
	/* The firmware's range (firmware/include/regmap.h). */
	BL_TRY(json_i32(o, "watchdog_ms", JSON_OPTIONAL, 20, 60000, &c->watchdog_ms, err));
	return json_end(o, err);
}

int arm_modbus_open(const struct machine *m, clk *c, struct arm **out, bl_err *err)
{
	const struct machine_connection *mc = &m->connection;
	struct arm *a = calloc(1, sizeof(*a));
	struct mb *p = calloc(1, sizeof(*p));
	uint16_t id[2], lim[8 * FW_JOINTS], wd = (uint16_t)mc->watchdog_ms;
	struct mb_status s;
	int rc;

	if (!a || !p) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	a->ops = &mb_ops;
	a->priv = p;
	a->m = m;
	a->clock = c;
	snprintf(p->where, sizeof(p->where), "%s", mc->host[0] ? mc->host : mc->port);
	p->ctx = new_ctx(mc, err);
	if (!p->ctx) {
		rc = err ? err->code : BL_EINVAL;
		goto out_free;
	}
	modbus_set_slave(p->ctx, mc->address);
	modbus_set_response_timeout(p->ctx, (uint32_t)(mc->timeout_ms / 1000),
				    (uint32_t)(mc->timeout_ms % 1000) * 1000u);
	if (modbus_connect(p->ctx) < 0) {
		rc = bl_fail(err, BL_EIO, "modbus %s: cannot connect: %s", p->where,
			     modbus_strerror(errno));
		goto out_free_ctx;
	}
	/* Requests sent while nobody listened wait in the line: start clean. */
	modbus_flush(p->ctx);
	rc = request(p, OP_READ_IN, FW_IR_MAGIC, 2, id, "reading the firmware's identity", err);
	if (rc > 0 || (rc == 0 && id[0] != FW_MAGIC)) {
		rc = bl_fail(err, BL_EIO,
			     "modbus %s (address %d): not a brushloop arm: input register 0 %s (expected 0x%04X)",
			     p->where, mc->address, rc > 0 ? "gives an exception" : "differs",
			     FW_MAGIC);
		goto out_close;
	}
	if (rc < 0)
		goto out_close;
	if (id[1] != FW_PROTOCOL_VERSION) {
		rc = bl_fail(err, BL_EIO,
			     "modbus %s: firmware speaks protocol version %u, this brushloop speaks %d: update one of them",
			     p->where, id[1], FW_PROTOCOL_VERSION);
		goto out_close;
	}
	rc = request(p, OP_READ_IN, FW_IR_LIMITS, 8 * FW_JOINTS, lim, "reading the joint limits", err);
	if (rc > 0)
		rc = bl_fail(err, BL_EIO, "modbus %s: reading the joint limits: exception %d",
			     p->where, rc);
	if (rc)
		goto out_close;
	for (int j = 0; j < FW_JOINTS; j++) {
		const uint16_t *l = lim + 8 * j;

		p->lim_min[j] = (int32_t)u32(l + FW_LIM_MIN);
		p->lim_max[j] = (int32_t)u32(l + FW_LIM_MAX);
		p->lim_speed[j] = u32(l + FW_LIM_SPEED);
		p->lim_accel[j] = u32(l + FW_LIM_ACCEL);
	}
	rc = request(p, OP_WRITE, FW_HR_WATCHDOG_MS, 1, &wd, "setting the watchdog", err);
	if (rc > 0)
		rc = bl_fail(err, BL_EIO, "modbus %s: setting the watchdog: exception %d", p->where,
			     rc);
	if (rc || (rc = read_status(p, &s, err)))
		goto out_close;
	p->seq = s.last_seq;
	/* A latched fault or e-stop stays latched: only homing (an operator's) clears it. */
	if (s.state == FW_STATE_DISABLED || s.state == FW_STATE_READY)
		if ((rc = enable(p, err)))
			goto out_close;
	*out = a;
	return 0;
out_close:
	modbus_close(p->ctx);
out_free_ctx:
	modbus_free(p->ctx);
out_free:
	free(p);
	free(a);
	return rc;
}
