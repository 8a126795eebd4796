/* fw_drive.c: the firmware's drive: registers, CiA 402-style states, the motion queue with trapezoidal profiles, limits, host watchdog and e-stop latch. */
#include <math.h>
#include <string.h>

#include "fw.h"
#include "fw_internal.h"

void fw_default_config(struct fw_config *cfg, uint16_t board)
{
	/* The example machine (examples/machine-sim.json): x, y, z in mm, a wrist roll in degrees. */
	static const struct fw_joint_limits lim[FW_JOINTS] = {
		{ 0, 700000, 500000, 2000 },
		{ 0, 500000, 500000, 2000 },
		{ -40000, 150000, 500000, 2000 },
		{ -360000, 360000, 360000, 2000 },
	};

	memset(cfg, 0, sizeof(*cfg));
	cfg->address = FW_DEFAULT_ADDRESS;
	cfg->board = board;
	cfg->baud = 115200;
	cfg->period_us = 1000;
	memcpy(cfg->lim, lim, sizeof(lim));
}

/*
 * Firmware time is the control clock: periods run times the period. The
 * watchdog and every time register use it, so a late board (a Linux process
 * descheduled, QEMU under load) still stops within the watchdog time and one
 * period of its own time.
 */
static uint32_t now_ms(struct fw *f)
{
	return (uint32_t)((uint64_t)f->ticks * f->cfg.period_us / 1000u);
}

void fw_init(struct fw *f, const struct fw_config *cfg, const struct fw_io *io)
{
	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	f->io = *io;
	/* Modbus: 3.5 characters of 11 bits, and a fixed 1.75 ms above 19200 baud. */
	f->t35_us = cfg->baud <= 19200 ? 38500000u / cfg->baud : 1750u;
	f->hr[FW_HR_WATCHDOG_MS] = FW_WATCHDOG_DEFAULT_MS;
	f->state = FW_STATE_DISABLED;
}

int32_t fw_pos_um(const struct fw *f, int j)
{
	return (int32_t)lroundf(f->pos[j]);
}

void fw_host_seen(struct fw *f)
{
	f->last_rx_ms = now_ms(f);
}

/* ---- motion ---- */

static void set_plan_end_here(struct fw *f)
{
	for (int j = 0; j < FW_JOINTS; j++)
		f->plan_end_um[j] = fw_pos_um(f, j);
}

static void flush_queue(struct fw *f)
{
	f->q_len = 0;
	f->running = 0;
	f->stopping = 0;
	f->paused = 0;
	set_plan_end_here(f);
}

/* Plans the profile of the head segment from where the joints are now. */
static void start_segment(struct fw *f)
{
	const struct fw_seg *s = &f->q[f->q_head];
	float a = 0.0f;

	f->running = 1;
	f->paused = 0;
	f->t_ticks = 0;
	f->len = 0.0f;
	if (s->flags & FW_SEG_DWELL) {
		f->t_total = (float)s->dwell_ms / 1000.0f;
		return;
	}
	for (int j = 0; j < FW_JOINTS; j++) {
		f->start[j] = f->pos[j];
		f->delta[j] = (float)s->target_um[j] - f->pos[j];
		if (fabsf(f->delta[j]) > f->len)
			f->len = fabsf(f->delta[j]);
	}
	/* The path is parametrised by the leading joint: each joint accelerates in proportion. */
	for (int j = 0; j < FW_JOINTS; j++) {
		float aj;

		if (f->delta[j] == 0.0f)
			continue;
		aj = (float)f->cfg.lim[j].accel_u_s2 * 1000.0f * f->len / fabsf(f->delta[j]);
		if (a == 0.0f || aj < a)
			a = aj;
	}
	if (f->len == 0.0f) {
		f->t_total = 0.0f;
		return;
	}
	f->a = a;
	f->v = (float)s->speed_um_s;
	if (f->v * f->v > f->len * a)
		f->v = sqrtf(f->len * a); /* a triangle: it never reaches the requested speed */
	f->t_acc = f->v / a;
	f->t_flat = (f->len - f->v * f->v / a) / f->v;
	if (f->t_flat < 0.0f)
		f->t_flat = 0.0f;
	f->t_total = 2.0f * f->t_acc + f->t_flat;
}

/* Distance along the path (um) and speed (um/s) at time t of the running profile. */
static void profile_at(const struct fw *f, float t, float *s, float *v)
{
	float a = f->a, td;

	if (t < f->t_acc) {
		*s = 0.5f * a * t * t;
		*v = a * t;
		return;
	}
	if (t < f->t_acc + f->t_flat) {
		*s = 0.5f * a * f->t_acc * f->t_acc + f->v * (t - f->t_acc);
		*v = f->v;
		return;
	}
	/* Only asked for t below t_total, so td stays within the ramp. */
	td = t - f->t_acc - f->t_flat;
	*s = 0.5f * a * f->t_acc * f->t_acc + f->v * f->t_flat + f->v * td - 0.5f * a * td * td;
	*v = f->v - a * td;
}

static void set_pos(struct fw *f, float s)
{
	s = fminf(s, f->len); /* a stop's rounding must not overshoot the target */
	for (int j = 0; j < FW_JOINTS; j++)
		f->pos[j] = f->start[j] + f->delta[j] * (s / f->len);
}

static float period_s(const struct fw *f)
{
	return (float)f->cfg.period_us / 1e6f;
}

/*
 * Starts a controlled stop: decelerate at the profile's rate and rest. A hold
 * keeps the queue and pauses the segment; otherwise the queue is dropped.
 */
static void begin_stop(struct fw *f, int drop)
{
	const struct fw_seg *s = &f->q[f->q_head];
	float pos_s, v;

	if (f->stopping) {
		f->stop_drop |= drop;
		return;
	}
	if (!f->running || f->paused || (s->flags & FW_SEG_DWELL) || f->len == 0.0f) {
		/* Nothing moves: the stop is complete at once. */
		if (drop)
			flush_queue(f);
		else if (f->running)
			f->paused = 1;
		return;
	}
	profile_at(f, (float)f->t_ticks * period_s(f), &pos_s, &v);
	f->stopping = 1;
	f->stop_drop = drop;
	f->stop_s0 = pos_s;
	f->stop_v0 = v;
	f->t_ticks = 0;
}

static void finish_segment(struct fw *f)
{
	const struct fw_seg *s = &f->q[f->q_head];

	if (!(s->flags & FW_SEG_DWELL) && f->len > 0.0f)
		for (int j = 0; j < FW_JOINTS; j++)
			f->pos[j] = (float)s->target_um[j];
	f->done_seq = s->seq;
	f->done++;
	f->q_head = (f->q_head + 1) % FW_QUEUE_LEN;
	f->q_len--;
	f->running = 0;
}

static void step_motion(struct fw *f)
{
	const struct fw_seg *s;
	float t;

	if (!f->q_len)
		return;
	s = &f->q[f->q_head];
	if (!f->running) {
		if (f->state != FW_STATE_ENABLED)
			return;
		start_segment(f);
	} else if (f->paused) {
		if (f->state != FW_STATE_ENABLED)
			return;
		start_segment(f); /* resume: a new profile from here to the same target */
	}
	f->t_ticks++;
	f->motion_ticks++;
	t = (float)f->t_ticks * period_s(f);
	if (f->stopping) {
		float tstop = f->stop_v0 / f->a;

		if (t < tstop) {
			set_pos(f, f->stop_s0 + f->stop_v0 * t - 0.5f * f->a * t * t);
			return;
		}
		set_pos(f, f->stop_s0 + 0.5f * f->stop_v0 * tstop);
		f->stopping = 0;
		f->stopped_ms = now_ms(f);
		if (f->stop_drop)
			flush_queue(f);
		else
			f->paused = 1;
		return;
	}
	if (t >= f->t_total) {
		finish_segment(f);
		return;
	}
	if (!(s->flags & FW_SEG_DWELL)) {
		float ps, v;

		profile_at(f, t, &ps, &v);
		set_pos(f, ps);
	}
}

/* The arm moves (or a dwell runs): what the watchdog guards. */
static int moving(const struct fw *f)
{
	return f->stopping || (f->running && !f->paused) ||
	       (f->q_len && f->state == FW_STATE_ENABLED);
}

/* ---- states ---- */

static void latch_fault(struct fw *f, uint16_t code, uint16_t detail)
{
	f->fault = code;
	f->fault_detail = detail;
	f->refusal = code;
	f->state = FW_STATE_FAULT;
	begin_stop(f, 1);
}

static void latch_estop(struct fw *f)
{
	/* Stop at once (category 0): no deceleration, nothing queued survives. */
	f->state = FW_STATE_ESTOP;
	flush_queue(f);
}

void fw_set_estop_input(struct fw *f, int active)
{
	if (active && !f->estop_input)
		latch_estop(f);
	f->estop_input = active != 0;
}

void fw_tick(struct fw *f)
{
	f->ticks++;
	if (moving(f) && f->state != FW_STATE_FAULT &&
	    now_ms(f) - f->last_rx_ms > f->hr[FW_HR_WATCHDOG_MS]) {
		f->wd_tripped = 1;
		f->wd_trip_ms = now_ms(f);
		f->wd_last_rx_ms = f->last_rx_ms;
		latch_fault(f, FW_FAULT_HOST_TIMEOUT, 0);
	}
	step_motion(f);
}

static int refuse(struct fw *f, uint16_t why, int ex)
{
	f->refusal = why;
	return ex;
}

static int do_home(struct fw *f)
{
	int32_t home[FW_JOINTS];

	if (f->state != FW_STATE_READY && f->state != FW_STATE_ENABLED)
		return refuse(f, FW_FAULT_NOT_ENABLED, FW_EX_ILLEGAL_VALUE);
	if (f->q_len || f->stopping)
		return refuse(f, FW_FAULT_BUSY, FW_EX_BUSY);
	for (int j = 0; j < FW_JOINTS; j++) {
		home[j] = (int32_t)(((uint32_t)f->hr[FW_HR_HOME + 2 * j] << 16) |
				    f->hr[FW_HR_HOME + 2 * j + 1]);
		if (home[j] < f->cfg.lim[j].min_um || home[j] > f->cfg.lim[j].max_um) {
			f->fault_detail = (uint16_t)(j + 1);
			return refuse(f, FW_FAULT_JOINT_LIMIT, FW_EX_ILLEGAL_VALUE);
		}
	}
	/* The simulated boards have no switches: homing sets the joints where the host says home is. */
	for (int j = 0; j < FW_JOINTS; j++)
		f->pos[j] = (float)home[j];
	f->homed = 1;
	set_plan_end_here(f);
	return 0;
}

static int control(struct fw *f, uint16_t old, uint16_t cw)
{
	uint16_t rise = (uint16_t)(cw & ~old);

	if (rise & FW_CW_ESTOP) {
		latch_estop(f);
		return 0;
	}
	if (f->state == FW_STATE_ESTOP) {
		if (!(rise & FW_CW_ESTOP_CLEAR))
			return 0;
		if (f->estop_input)
			return refuse(f, FW_FAULT_BAD_VALUE, FW_EX_ILLEGAL_VALUE);
		f->state = FW_STATE_DISABLED;
		return 0;
	}
	if (f->state == FW_STATE_FAULT) {
		if (rise & FW_CW_FAULT_RESET) {
			f->state = FW_STATE_DISABLED;
			f->fault = FW_FAULT_NONE;
			f->fault_detail = 0;
			f->wd_tripped = 0;
		}
		return 0;
	}
	if (!(cw & FW_CW_READY)) {
		if (f->state == FW_STATE_ENABLED || f->state == FW_STATE_HOLD)
			begin_stop(f, 1);
		f->state = FW_STATE_DISABLED;
		return (rise & FW_CW_HOME) ? do_home(f) : 0;
	}
	if (f->state == FW_STATE_DISABLED)
		f->state = FW_STATE_READY;
	if (!(cw & FW_CW_ENABLE)) {
		if (f->state == FW_STATE_ENABLED || f->state == FW_STATE_HOLD)
			begin_stop(f, 1);
		f->state = FW_STATE_READY;
	} else {
		if (f->state == FW_STATE_READY)
			f->state = FW_STATE_ENABLED;
		if (f->state == FW_STATE_ENABLED && (cw & FW_CW_HOLD)) {
			f->state = FW_STATE_HOLD;
			begin_stop(f, 0);
		} else if (f->state == FW_STATE_HOLD && !(cw & FW_CW_HOLD)) {
			f->state = FW_STATE_ENABLED;
		}
		if (rise & FW_CW_STOP)
			begin_stop(f, 1);
	}
	if (rise & FW_CW_HOME)
		return do_home(f);
	return 0;
}

static int32_t hr32(const struct fw *f, unsigned addr)
{
	return (int32_t)(((uint32_t)f->hr[addr] << 16) | f->hr[addr + 1]);
}

/* Checks the staged segment against the firmware's own limits and queues it. */
static int commit_segment(struct fw *f)
{
	struct fw_seg s;
	int64_t len = 0;

	s.seq = (uint32_t)hr32(f, FW_HR_SEG_SEQ);
	s.flags = f->hr[FW_HR_SEG_FLAGS];
	s.dwell_ms = f->hr[FW_HR_SEG_DWELL_MS];
	s.speed_um_s = (uint32_t)hr32(f, FW_HR_SEG_SPEED);
	for (int j = 0; j < FW_JOINTS; j++)
		s.target_um[j] = hr32(f, FW_HR_SEG_TARGET + 2 * j);

	/* A retry of a segment whose reply was lost: already queued, so accept it again and do nothing. */
	if (f->accepted && s.seq == f->last_seq)
		return 0;
	if (f->state != FW_STATE_ENABLED && f->state != FW_STATE_HOLD)
		return refuse(f, FW_FAULT_NOT_ENABLED, FW_EX_ILLEGAL_VALUE);
	if (f->q_len == FW_QUEUE_LEN || (f->stopping && f->stop_drop))
		return refuse(f, FW_FAULT_BUSY, FW_EX_BUSY);
	if (s.seq != f->last_seq + 1) {
		latch_fault(f, FW_FAULT_SEQ_GAP, 0);
		return FW_EX_ILLEGAL_VALUE;
	}
	if (!f->homed) {
		latch_fault(f, FW_FAULT_NOT_HOMED, 0);
		return FW_EX_ILLEGAL_VALUE;
	}
	if (s.flags & ~FW_SEG_DWELL) {
		latch_fault(f, FW_FAULT_BAD_SEGMENT, 0);
		return FW_EX_ILLEGAL_VALUE;
	}
	if (!(s.flags & FW_SEG_DWELL)) {
		for (int j = 0; j < FW_JOINTS; j++) {
			int64_t d = (int64_t)s.target_um[j] - f->plan_end_um[j];

			if (s.target_um[j] < f->cfg.lim[j].min_um ||
			    s.target_um[j] > f->cfg.lim[j].max_um) {
				latch_fault(f, FW_FAULT_JOINT_LIMIT, (uint16_t)(j + 1));
				return FW_EX_ILLEGAL_VALUE;
			}
			if (d < 0)
				d = -d;
			if (d > len)
				len = d;
		}
		if (s.speed_um_s == 0) {
			latch_fault(f, FW_FAULT_BAD_SEGMENT, 0);
			return FW_EX_ILLEGAL_VALUE;
		}
		/* Joint j moves at speed * |d_j| / len: refuse rather than slow down what the host planned. */
		for (int j = 0; j < FW_JOINTS; j++) {
			int64_t d = (int64_t)s.target_um[j] - f->plan_end_um[j];

			if (d < 0)
				d = -d;
			if ((uint64_t)s.speed_um_s * (uint64_t)d >
			    (uint64_t)f->cfg.lim[j].speed_um_s * (uint64_t)len) {
				latch_fault(f, FW_FAULT_SPEED_LIMIT, (uint16_t)(j + 1));
				return FW_EX_ILLEGAL_VALUE;
			}
		}
		for (int j = 0; j < FW_JOINTS; j++)
			f->plan_end_um[j] = s.target_um[j];
	}
	f->q[(f->q_head + f->q_len) % FW_QUEUE_LEN] = s;
	f->q_len++;
	f->last_seq = s.seq;
	f->accepted++;
	return 0;
}

/*
 * Registers with a range: the watchdog's, and the control word, whose
 * undefined bits a strict map refuses (a host that sets one means something
 * this firmware does not do).
 */
static int value_ok(unsigned addr, uint16_t v)
{
	if (addr == FW_HR_WATCHDOG_MS)
		return v >= FW_WATCHDOG_MIN_MS && v <= FW_WATCHDOG_MAX_MS;
	if (addr == FW_HR_CONTROL)
		return !(v & ~FW_CW_DEFINED);
	return 1;
}

int fw_write_holding(struct fw *f, unsigned addr, unsigned count, const uint16_t *v)
{
	uint16_t old_cw = f->hr[FW_HR_CONTROL];
	int ex = 0;

	/* The register file checks its own bounds: no caller's range check is trusted for it. */
	if (addr >= FW_HR_COUNT || count > FW_HR_COUNT - addr)
		return FW_EX_ILLEGAL_ADDRESS;
	/* A value out of range refuses the whole write: nothing of it is stored. */
	for (unsigned i = 0; i < count; i++)
		if (!value_ok(addr + i, v[i]))
			return refuse(f, FW_FAULT_BAD_VALUE, FW_EX_ILLEGAL_VALUE);
	for (unsigned i = 0; i < count; i++)
		f->hr[addr + i] = v[i];
	f->refusal = FW_FAULT_NONE;
	if (addr == FW_HR_CONTROL)
		ex = control(f, old_cw, f->hr[FW_HR_CONTROL]);
	if (!ex && addr <= FW_HR_SEG_SEQ + 1 && addr + count > FW_HR_SEG_SEQ + 1)
		ex = commit_segment(f);
	return ex;
}

int fw_read_holding(const struct fw *f, unsigned addr, uint16_t *out)
{
	if (addr >= FW_HR_COUNT)
		return FW_EX_ILLEGAL_ADDRESS;
	*out = f->hr[addr];
	return 0;
}

static uint16_t status_word(const struct fw *f)
{
	uint16_t sw = 0;

	if (f->state == FW_STATE_READY || f->state == FW_STATE_ENABLED ||
	    f->state == FW_STATE_HOLD)
		sw |= FW_SW_READY;
	if (f->state == FW_STATE_ENABLED || f->state == FW_STATE_HOLD)
		sw |= FW_SW_ENABLED;
	if (f->state == FW_STATE_HOLD)
		sw |= FW_SW_HOLD;
	if (f->state == FW_STATE_FAULT)
		sw |= FW_SW_FAULT;
	if (f->state == FW_STATE_ESTOP)
		sw |= FW_SW_ESTOP;
	if (f->estop_input)
		sw |= FW_SW_ESTOP_INPUT;
	if (f->stopping || (f->running && !f->paused))
		sw |= FW_SW_MOVING;
	if (f->homed)
		sw |= FW_SW_HOMED;
	if (f->q_len == FW_QUEUE_LEN)
		sw |= FW_SW_QUEUE_FULL;
	if (f->stopping)
		sw |= FW_SW_STOPPING;
	if (f->wd_tripped)
		sw |= FW_SW_WATCHDOG;
	return sw;
}

static uint16_t half(uint32_t v, unsigned addr, unsigned base)
{
	return addr == base ? (uint16_t)(v >> 16) : (uint16_t)v;
}

int fw_read_input(struct fw *f, unsigned addr, uint16_t *out)
{
	if (addr >= FW_IR_COUNT)
		return FW_EX_ILLEGAL_ADDRESS;
	if (addr >= FW_IR_LIMITS) {
		unsigned j = (addr - FW_IR_LIMITS) / 8, k = (addr - FW_IR_LIMITS) % 8;
		const struct fw_joint_limits *l = &f->cfg.lim[j];
		uint32_t v = k < 2 ? (uint32_t)l->min_um : k < 4 ? (uint32_t)l->max_um :
			     k < 6 ? l->speed_um_s : l->accel_u_s2;

		*out = (k % 2) ? (uint16_t)v : (uint16_t)(v >> 16);
		return 0;
	}
	switch (addr) {
	case FW_IR_MAGIC: *out = FW_MAGIC; return 0;
	case FW_IR_VERSION: *out = FW_PROTOCOL_VERSION; return 0;
	case FW_IR_STATE: *out = (uint16_t)f->state; return 0;
	case FW_IR_STATUS: *out = status_word(f); return 0;
	case FW_IR_FAULT: *out = f->fault; return 0;
	case FW_IR_FAULT_DETAIL: *out = f->fault_detail; return 0;
	case FW_IR_REFUSAL: *out = f->refusal; return 0;
	case FW_IR_QUEUE_LEN: *out = (uint16_t)f->q_len; return 0;
	case FW_IR_QUEUE_FREE: *out = (uint16_t)(FW_QUEUE_LEN - f->q_len); return 0;
	case FW_IR_PERIOD_US: *out = (uint16_t)f->cfg.period_us; return 0;
	case FW_IR_BOARD: *out = f->cfg.board; return 0;
	}
	{
		/* The 32-bit values, in register order. */
		static const unsigned base[] = { FW_IR_LAST_SEQ, FW_IR_DONE_SEQ, FW_IR_ACCEPTED,
			FW_IR_DONE, FW_IR_POS, FW_IR_POS + 2, FW_IR_POS + 4, FW_IR_POS + 6,
			FW_IR_TIME_MS, FW_IR_TICKS, FW_IR_GOOD_FRAMES, FW_IR_CRC_ERRORS,
			FW_IR_EXCEPTIONS, FW_IR_LAST_RX_MS, FW_IR_WD_TRIP_MS, FW_IR_STOPPED_MS,
			FW_IR_WD_LAST_RX_MS, FW_IR_MOTION_MS };
		uint32_t vals[18];

		vals[0] = f->last_seq;
		vals[1] = f->done_seq;
		vals[2] = f->accepted;
		vals[3] = f->done;
		for (int j = 0; j < FW_JOINTS; j++)
			vals[4 + j] = (uint32_t)fw_pos_um(f, j);
		vals[8] = now_ms(f);
		vals[9] = f->ticks;
		vals[10] = f->good_frames;
		vals[11] = f->crc_errors;
		vals[12] = f->exceptions;
		vals[13] = f->last_rx_ms;
		vals[14] = f->wd_trip_ms;
		vals[15] = f->stopped_ms;
		vals[16] = f->wd_last_rx_ms;
		vals[17] = (uint32_t)((uint64_t)f->motion_ticks * f->cfg.period_us / 1000u);
		for (unsigned i = 0; i < 18; i++)
			if (addr == base[i] || addr == base[i] + 1) {
				*out = half(vals[i], addr, base[i]);
				return 0;
			}
	}
	*out = 0; /* reserved registers read as 0 */
	return 0;
}
