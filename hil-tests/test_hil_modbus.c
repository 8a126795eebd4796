/* test_hil_modbus.c: the firmware over a real serial line: register map by mbpoll, pymodbus and the host backend, exceptions, limits, watchdog, e-stop, a long stream. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arm/arm_backend.h"
#include "arm/arm_modbus.h"
#include "base/clock.h"
#include "hil.h"
#include "test.h"

extern char **environ;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	return (double)clk_real_ns() / 1e9;
}

/*
 * mbpoll on the target: RTU at 115200 8N1 (its defaults are 19200 and even
 * parity), 0-based addresses, one poll, a 5 s reply timeout (its default 1 s
 * is too short for QEMU on a loaded machine under the sanitizer suite). A
 * request that got no reply is sent again, at most twice, as a master does
 * (HIL_RETRY for libmodbus): on a loaded machine a frame on its way into QEMU
 * can pause longer than the firmware's frame gap (FW_FRAME_GAP_US), the
 * firmware drops both halves and says nothing, and mbpoll times out. Sending
 * again is safe: the firmware takes a segment it already queued as a retry.
 */
static int mbpoll(const struct hil_target *t, const char *type, const char *ref, const char *count,
		  const char *const *values, char **out)
{
	const char *argv[40] = { "mbpoll", "-m", "rtu", "-b", "115200", "-P", "none", "-a", "1",
				 "-0", "-1", "-o", "5", "-t", type, "-r", ref };
	int n = 17, rc;
	char *err = NULL;

	if (count) {
		argv[n++] = "-c";
		argv[n++] = count;
	}
	argv[n++] = t->tty;
	while (values && *values && n < 39)
		argv[n++] = *values++;
	argv[n] = NULL;
	for (int attempt = 0;; attempt++) {
		rc = hil_run(argv, 20, out, &err);
		if (rc == 0 || attempt == 2 || !err || !strstr(err, "timed out"))
			break;
		fprintf(stderr, "mbpoll -t %s -r %s: no reply (attempt %d), sending again\n", type, ref,
			attempt + 1);
		free(err);
		err = NULL;
		if (out) {
			free(*out);
			*out = NULL;
		}
	}
	if (out && *out && err) {
		/* mbpoll prints its errors on stderr: keep them with the output. */
		size_t a = strlen(*out), b = strlen(err);
		char *both = realloc(*out, a + b + 1);

		if (both) {
			memcpy(both + a, err, b + 1);
			*out = both;
		}
	}
	free(err);
	return rc;
}

static int t_is_native(void)
{
	const char *k = getenv("BRUSHLOOP_HIL_TARGET");

	return !k || !strcmp(k, "native");
}

/*
 * Tests that run the native board 10x faster than the wall clock give the
 * watchdog 10x more firmware time, so a host descheduled for 100 ms on a
 * loaded machine is not taken for a dead one.
 */
static int fast_watchdog_ms;

static struct arm *open_arm(const struct hil_target *t, struct machine *m)
{
	struct arm *a = NULL;
	bl_err err;

	hil_machine(t, m);
	if (fast_watchdog_ms && t->kind == HIL_NATIVE)
		m->connection.watchdog_ms = fast_watchdog_ms;
	if (arm_modbus_open(m, clk_monotonic(), &a, &err)) {
		fprintf(stderr, "arm_modbus_open: %s\n", err.msg);
		exit(1);
	}
	return a;
}

static void path_add(struct arm_path *p, arm_point from, arm_point to, double speed)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->seg = realloc(p->seg, p->cap * sizeof(*p->seg));
	}
	memset(&p->seg[p->n], 0, sizeof(p->seg[0]));
	p->seg[p->n].from = from;
	p->seg[p->n].to = to;
	p->seg[p->n].speed_mm_s = speed;
	p->n++;
}

static int move_to(struct arm *a, arm_point to, double speed, bl_err *err)
{
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_MOVE, .id = -1 };
	int rc;

	if ((rc = a->ops->status(a, &st, err)))
		return rc;
	path_add(&p, st.pos_mm, to, speed);
	rc = a->ops->execute(a, &act, &p, err);
	arm_path_free(&p);
	return rc;
}

TEST(register_map_by_mbpoll)
{
	struct hil_target t;
	char *out = NULL;
	modbus_t *mb;
	uint16_t v = 0;

	hil_start(&t, NULL);
	/* Identity: input registers 0 and 1. */
	CHECK(mbpoll(&t, "3", "0", "2", NULL, &out) == 0);
	CHECK_STR_CONTAINS(out, "[0]: \t16972");
	CHECK_STR_CONTAINS(out, "[1]: \t2\n"); /* FW_PROTOCOL_VERSION */
	free(out);
	/* Write the watchdog with mbpoll, read it back with libmodbus. */
	{
		const char *val[] = { "750", NULL };

		CHECK(mbpoll(&t, "4", "1", NULL, val, &out) == 0);
		free(out);
	}
	mb = hil_modbus(&t);
	CHECK(HIL_RETRY(mb, modbus_read_registers(mb, FW_HR_WATCHDOG_MS, 1, &v)) == 1 && v == 750);
	modbus_close(mb);
	modbus_free(mb);
	/* Drive a whole move with mbpoll alone: enable, home at (100, 100, 50) mm, one segment. */
	{
		const char *en[] = { "3", NULL };
		const char *home[] = { "1", "34464", "1", "34464", "0", "50000", "0", "0", NULL };
		const char *go[] = { "19", NULL };
		/* flags 0, dwell 0, 100 mm/s, to (120, 100, 50, 0) mm, sequence 1 */
		const char *seg[] = { "0", "0", "1", "34464", "1", "54464", "1", "34464", "0",
				      "50000", "0", "0", "0", "1", NULL };

		CHECK(mbpoll(&t, "4", "0", NULL, en, &out) == 0);
		free(out);
		CHECK(mbpoll(&t, "4", "2", NULL, home, &out) == 0);
		free(out);
		CHECK(mbpoll(&t, "4", "0", NULL, go, &out) == 0);
		free(out);
		CHECK(mbpoll(&t, "4", "10", NULL, seg, &out) == 0);
		free(out);
	}
	mb = hil_modbus(&t);
	for (int i = 0; i < 2000 && hil_in32(mb, FW_IR_DONE) < 1; i++)
		sleep_ms(5);
	CHECK(hil_in32(mb, FW_IR_DONE_SEQ) == 1);
	CHECK(hil_in32(mb, FW_IR_POS) == 120000);
	CHECK(hil_in32(mb, FW_IR_POS + 2) == 100000);
	modbus_close(mb);
	modbus_free(mb);
	/* mbpoll reads the position too (two 16-bit registers, high word first). */
	CHECK(mbpoll(&t, "3", "17", "2", NULL, &out) == 0);
	CHECK_STR_CONTAINS(out, "[17]: \t1");
	CHECK_STR_CONTAINS(out, "[18]: \t54464");
	free(out);
	hil_stop(&t);
}

TEST(exceptions_on_the_wire)
{
	struct hil_target t;
	char *out = NULL;
	modbus_t *mb;
	uint16_t v[4];
	uint8_t id[64];

	hil_start(&t, NULL);
	mb = hil_modbus(&t);
	CHECK(HIL_RETRY(mb, modbus_read_input_registers(mb, FW_IR_COUNT - 1, 2, v)) == -1 && errno == EMBXILADD);
	CHECK(HIL_RETRY(mb, modbus_read_registers(mb, FW_HR_COUNT, 1, v)) == -1 && errno == EMBXILADD);
	/* Report slave id (function 17) is not implemented: illegal function. */
	CHECK(HIL_RETRY(mb, modbus_report_slave_id(mb, sizeof(id), id)) == -1 && errno == EMBXILFUN);
	CHECK(HIL_RETRY(mb, modbus_write_register(mb, FW_HR_WATCHDOG_MS, 5)) == -1 && errno == EMBXILVAL);
	CHECK(hil_in(mb, FW_IR_REFUSAL) == FW_FAULT_BAD_VALUE);
	/* Motion before enabling is refused, not faulted. */
	{
		uint16_t seg[FW_SEG_REGS] = { 0 };

		seg[13] = 1;
		CHECK(HIL_RETRY(mb, modbus_write_registers(mb, FW_HR_SEG_FLAGS, FW_SEG_REGS, seg)) == -1 &&
		      errno == EMBXILVAL);
		CHECK(hil_in(mb, FW_IR_REFUSAL) == FW_FAULT_NOT_ENABLED);
		CHECK(hil_in(mb, FW_IR_STATE) == FW_STATE_DISABLED);
	}
	CHECK(hil_in32(mb, FW_IR_EXCEPTIONS) == 5);
	/* A frame with a bad CRC is dropped and counted, and the line works after it. */
	{
		static const uint8_t bad[8] = { 1, 4, 0, 0, 0, 1, 0xDE, 0xAD };
		uint32_t before = hil_in32(mb, FW_IR_CRC_ERRORS);
		int fd = open(t.tty, O_RDWR | O_NOCTTY);

		CHECK(fd >= 0 && write(fd, bad, sizeof(bad)) == (ssize_t)sizeof(bad));
		sleep_ms(50);
		if (fd >= 0)
			close(fd);
		modbus_flush(mb);
		/*
		 * One error on the native board, which reads the whole frame from
		 * its pty at once. In QEMU the frame crosses a bridge and a warped
		 * clock: on a loaded machine it can arrive in pieces further apart
		 * than the frame gap, each dropped and counted, at most one a byte.
		 */
		{
			uint32_t after = hil_in32(mb, FW_IR_CRC_ERRORS);

			CHECK_MSG(after == before + 1 ||
					  (t.kind == HIL_QEMU && after > before && after <= before + sizeof(bad)),
				  "CRC errors %u -> %u", before, after);
		}
		CHECK(hil_in(mb, FW_IR_MAGIC) == FW_MAGIC);
	}
	modbus_close(mb);
	modbus_free(mb);
	/* The same exceptions as an independent master sees them. */
	CHECK(mbpoll(&t, "4", "30", "1", NULL, &out) != 0);
	CHECK_STR_CONTAINS(out, "Illegal data address");
	free(out);
	{
		const char *val[] = { "10", NULL };

		CHECK(mbpoll(&t, "4", "1", NULL, val, &out) != 0);
		CHECK_STR_CONTAINS(out, "Illegal data value");
		free(out);
	}
	hil_stop(&t);
}

TEST(backend_homes_moves_holds)
{
	struct hil_target t;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	bl_err err;
	arm_point target = { 300, 200, 30 };

	hil_start(&t, NULL);
	a = open_arm(&t, &m);
	CHECK(strcmp(arm_backend_name(a), "modbus") == 0);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK(!st.homed && !st.fault && !st.estop);
	/* Motion before homing is refused by the backend. */
	CHECK(move_to(a, target, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "not homed");
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK(st.homed);
	CHECK_NEAR(st.pos_mm.x, m.home_mm[0], 1e-3);
	CHECK_NEAR(st.pos_mm.z, m.home_mm[2], 1e-3);
	/* A typed action expanded by arm_motion, as the gate will hand it over. */
	{
		struct arm_action act = { .kind = ARM_MOVE, .id = 1, .speed_mm_s = 200 };
		struct arm_path p = { 0 };

		act.target = target;
		CHECK(arm_motion(&m, &st.pos_mm, &act, &p, &err) == 0);
		CHECK(a->ops->execute(a, &act, &p, &err) == 0);
		arm_path_free(&p);
	}
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, 300, 1e-3);
	CHECK_NEAR(st.pos_mm.y, 200, 1e-3);
	CHECK_NEAR(st.pos_mm.z, 30, 1e-3);
	CHECK(!st.moving);
	CHECK(st.arm_time_s > 0.0);
	/* Held, motion waits for a resume; stop with nothing moving is harmless. */
	CHECK(arm_hold(a, &err) == 0);
	CHECK(arm_status(a, &st, &err) == 0 && st.held);
	CHECK(move_to(a, (arm_point){ 310, 200, 30 }, 100, &err) == BL_EPAUSED);
	CHECK(arm_resume(a, &err) == 0);
	CHECK(move_to(a, (arm_point){ 310, 200, 30 }, 100, &err) == 0);
	CHECK(arm_stop(a, &err) == 0);
	CHECK(arm_status(a, &st, &err) == 0 && !st.held && !st.fault);
	CHECK_NEAR(st.pos_mm.x, 310, 1e-3);
	arm_close(a);
	hil_stop(&t);
}

/*
 * arm_time_s is motion time in every backend (arm/arm_backend.h): a run's
 * cost and its arm-time brake read it, so an arm standing still while the
 * host waits (an operator, a camera) must not count.
 */
TEST(arm_time_is_motion_time_not_wall_time)
{
	struct hil_target t;
	struct machine m;
	struct arm_status st0, st1, st2;
	struct arm *a;
	bl_err err;

	hil_start(&t, NULL);
	a = open_arm(&t, &m);
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(arm_status(a, &st0, &err) == 0);
	sleep_ms(1500);
	CHECK(arm_status(a, &st1, &err) == 0);
	CHECK_MSG(st1.arm_time_s - st0.arm_time_s < 0.05, "idle 1.5 s counted %.3f s",
		  st1.arm_time_s - st0.arm_time_s);
	/*
	 * 100 mm at 100 mm/s: a second of motion and the ramps on the firmware's
	 * clock (FW_IR_MOTION_MS), however long the host or a starved emulator
	 * takes over its polls.
	 */
	CHECK(move_to(a, (arm_point){ m.home_mm[0] + 100, m.home_mm[1], m.home_mm[2] }, 100,
		      &err) == 0);
	CHECK(arm_status(a, &st2, &err) == 0);
	CHECK_MSG(st2.arm_time_s - st1.arm_time_s > 1.0 && st2.arm_time_s - st1.arm_time_s < 1.2,
		  "a 1 s move counted %.3f s", st2.arm_time_s - st1.arm_time_s);
	arm_close(a);
	hil_stop(&t);
}

TEST(backend_reports_a_silent_slave)
{
	struct hil_target t;
	struct machine m;
	struct arm *a = NULL;
	bl_err err;
	double t0;

	hil_start(&t, NULL);
	hil_machine(&t, &m);
	m.connection.address = 9; /* nobody answers there */
	m.connection.timeout_ms = 50;
	t0 = now_s();
	CHECK(arm_modbus_open(&m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK(a == NULL);
	CHECK_STR_CONTAINS(err.msg, "after 3 attempts");
	CHECK_STR_CONTAINS(err.msg, t.tty);
	/* Three attempts of 50 ms: bounded, not a hang (with room for a loaded machine). */
	CHECK(now_s() - t0 < 5.0);
	snprintf(m.connection.port, sizeof(m.connection.port), "%s/no-such-tty", t.dir);
	CHECK(arm_modbus_open(&m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "cannot connect");
	hil_stop(&t);
}

TEST(out_of_limit_targets_refused)
{
	struct hil_target t;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	modbus_t *mb;
	bl_err err;

	hil_start(&t, NULL);
	a = open_arm(&t, &m);
	CHECK(a->ops->home(a, &err) == 0);
	/* Below joint 3's -40 mm: the gate would deny it; here the host sends it on purpose. */
	CHECK(move_to(a, (arm_point){ 100, 100, -45 }, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "joint 3's limits -40.000..150.000 mm");
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK(st.fault);
	CHECK_STR_CONTAINS(st.fault_msg, "clearing it needs an operator");
	CHECK_NEAR(st.pos_mm.z, m.home_mm[2], 1e-3); /* nothing moved */
	/* Homing (the operator's act) clears it; then a move too fast for joint 1. */
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(move_to(a, (arm_point){ 600, 10, 100 }, 600, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "faster than joint 1's limit 500.000 mm/s");
	arm_close(a);
	mb = hil_modbus(&t);
	CHECK(hil_in(mb, FW_IR_STATE) == FW_STATE_FAULT);
	CHECK(hil_in(mb, FW_IR_FAULT) == FW_FAULT_SPEED_LIMIT);
	CHECK(hil_in(mb, FW_IR_FAULT_DETAIL) == 1);
	modbus_close(mb);
	modbus_free(mb);
	hil_stop(&t);
}

TEST(watchdog_stops_when_the_host_dies)
{
	struct hil_target t;
	const char *argv[] = { hil_env("BRUSHLOOP_HIL_HOST"), NULL, NULL, NULL };
	char log[600], *text = NULL;
	posix_spawn_file_actions_t fa;
	uint32_t last, trip, stopped, wd, period_ms, accel;
	int32_t pos1, pos2;
	modbus_t *mb;
	pid_t pid;
	int status;

	hil_start(&t, NULL);
	argv[1] = t.tty;
	/* QEMU's firmware time runs 30-45x the wall clock: a longer watchdog there keeps the host's polls inside it. */
	argv[2] = t.kind == HIL_QEMU ? "20000" : "1000";
	snprintf(log, sizeof(log), "%s/host.log", t.dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0);
	posix_spawn_file_actions_destroy(&fa);
	/* Wait until the host process says it streams motion, let it run, then kill it. */
	for (int i = 0; i < 2000; i++) {
		const char *cat[] = { "cat", log, NULL };

		free(text);
		text = NULL;
		hil_run(cat, 5, &text, NULL);
		if (text && strstr(text, "moving"))
			break;
		sleep_ms(5);
	}
	CHECK_STR_CONTAINS(text, "moving");
	free(text);
	sleep_ms(300);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	CHECK_MSG(WIFSIGNALED(status), "the host ended by itself before it was killed: see %s", log);

	/* Say nothing for longer than the watchdog: any frame would feed it. */
	sleep_ms(t.kind == HIL_QEMU ? 4000 : 1600);
	mb = hil_modbus(&t);
	{
		uint16_t w;

		CHECK(HIL_RETRY(mb, modbus_read_registers(mb, FW_HR_WATCHDOG_MS, 1, &w)) == 1);
		wd = w;
	}
	last = hil_in32(mb, FW_IR_WD_LAST_RX_MS);
	trip = hil_in32(mb, FW_IR_WD_TRIP_MS);
	stopped = hil_in32(mb, FW_IR_STOPPED_MS);
	period_ms = hil_in(mb, FW_IR_PERIOD_US) / 1000;
	accel = hil_in32(mb, FW_IR_LIMITS + FW_LIM_ACCEL);
	CHECK(hil_in(mb, FW_IR_STATE) == FW_STATE_FAULT);
	CHECK(hil_in(mb, FW_IR_FAULT) == FW_FAULT_HOST_TIMEOUT);
	CHECK(hil_in(mb, FW_IR_STATUS) & FW_SW_WATCHDOG);
	/* In firmware time: tripped after the watchdog time, within one control period of it. */
	CHECK_MSG(trip > last + wd && trip <= last + wd + period_ms,
		  "last frame %u ms, trip %u ms, watchdog %u ms", last, trip, wd);
	/* Then a controlled stop from at most 50 mm/s (the host's speed) at the firmware's acceleration. */
	CHECK_MSG(stopped >= trip && stopped <= trip + 1000 * 50 / accel + 2 * period_ms,
		  "trip %u ms, at rest %u ms", trip, stopped);
	pos1 = (int32_t)hil_in32(mb, FW_IR_POS);
	sleep_ms(100);
	pos2 = (int32_t)hil_in32(mb, FW_IR_POS);
	CHECK(pos1 == pos2);
	CHECK(hil_in(mb, FW_IR_QUEUE_LEN) == 0);
	fprintf(stderr, "watchdog: last frame %u ms, trip %u ms (+%u), at rest %u ms (+%u)\n", last,
		trip, trip - last, stopped, stopped - trip);
	modbus_close(mb);
	modbus_free(mb);
	hil_stop(&t);
}

TEST(estop_latches_until_cleared)
{
	struct hil_target t;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	modbus_t *mb;
	bl_err err;
	int32_t p1, p2;

	hil_start(&t, NULL);
	a = open_arm(&t, &m);
	CHECK(a->ops->home(a, &err) == 0);
	arm_close(a);
	/*
	 * Queue a long move by hand, let it start, then e-stop. At 2 mm/s the
	 * 600 mm take 300 s of firmware time: QEMU's icount clock runs 30 to 45
	 * times the wall clock, so a loaded host still finds it moving seconds
	 * later (at 50 mm/s it was over in 0.3 s of wall time). The bound left
	 * is the watchdog: the longest, 60 s of firmware time, is 1.3 to 2 s of
	 * a host that sends nothing.
	 */
	mb = hil_modbus(&t);
	{
		uint16_t en = FW_CW_READY | FW_CW_ENABLE;
		uint16_t seg[FW_SEG_REGS] = { 0, 0, 0, 2000, 0, 10000, 0, 10000, 1, 34464, 0, 0, 0, 0 };
		uint32_t seq = hil_in32(mb, FW_IR_LAST_SEQ) + 1;

		seg[4] = (uint16_t)(600000 >> 16);
		seg[5] = (uint16_t)600000;
		seg[12] = (uint16_t)(seq >> 16);
		seg[13] = (uint16_t)seq;
		CHECK(hil_write(mb, FW_HR_WATCHDOG_MS, FW_WATCHDOG_MAX_MS) == 0);
		CHECK(HIL_RETRY(mb, modbus_write_registers(mb, FW_HR_CONTROL, 1, &en)) == 1);
		CHECK(HIL_RETRY(mb, modbus_write_registers(mb, FW_HR_SEG_FLAGS, FW_SEG_REGS, seg)) == FW_SEG_REGS);
	}
	for (int i = 0; i < 1000 && !(hil_in(mb, FW_IR_STATUS) & FW_SW_MOVING); i++)
		sleep_ms(1);
	CHECK(hil_in(mb, FW_IR_STATUS) & FW_SW_MOVING);
	if (t.kind == HIL_NATIVE) {
		/* The native board's e-stop input. */
		kill(t.fw_pid, SIGUSR1);
		for (int i = 0; i < 1000 && hil_in(mb, FW_IR_STATE) != FW_STATE_ESTOP; i++)
			sleep_ms(1);
		CHECK(hil_in(mb, FW_IR_STATUS) & FW_SW_ESTOP_INPUT);
		/* Clearing while the input is pressed is refused. */
		CHECK(hil_write(mb, FW_HR_CONTROL, FW_CW_ESTOP_CLEAR) == EMBXILVAL);
	} else {
		CHECK(hil_write(mb, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_ESTOP) == 0);
	}
	CHECK(hil_in(mb, FW_IR_STATE) == FW_STATE_ESTOP);
	p1 = (int32_t)hil_in32(mb, FW_IR_POS);
	sleep_ms(100);
	p2 = (int32_t)hil_in32(mb, FW_IR_POS);
	CHECK(p1 == p2 && p1 < 600000);
	CHECK(hil_in(mb, FW_IR_QUEUE_LEN) == 0);
	CHECK(!(hil_in(mb, FW_IR_STATUS) & FW_SW_MOVING));
	/* Enabling does not clear the latch. */
	CHECK(hil_write(mb, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(hil_in(mb, FW_IR_STATE) == FW_STATE_ESTOP);
	modbus_close(mb);
	modbus_free(mb);

	a = open_arm(&t, &m);
	CHECK(a->ops->status(a, &st, &err) == 0 && st.estop);
	CHECK_STR_CONTAINS(st.fault_msg, "e-stop latched");
	CHECK(move_to(a, (arm_point){ 100, 100, 100 }, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "e-stop latched");
	if (t.kind == HIL_NATIVE) {
		CHECK(a->ops->home(a, &err) == BL_ESAFETY);
		CHECK_STR_CONTAINS(err.msg, "still pressed");
		kill(t.fw_pid, SIGUSR2);
		/* The board sees its input released at its next poll: a loaded machine may be late. */
		for (int i = 0; i < 200 && a->ops->home(a, &err) == BL_ESAFETY &&
				strstr(err.msg, "still pressed"); i++)
			sleep_ms(25);
	}
	/* Homing, which the gate puts in front of an operator, clears it. */
	CHECK_MSG(a->ops->home(a, &err) == 0, "%s", err.msg);
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.estop && st.homed);
	CHECK_MSG(move_to(a, (arm_point){ 100, 100, 100 }, 100, &err) == 0, "%s", err.msg);
	/* The host's own e-stop command latches the same way. */
	CHECK(arm_modbus_estop(a, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0 && st.estop);
	arm_close(a);
	hil_stop(&t);
}

TEST(thousand_segment_stream)
{
	struct hil_target t;
	/* The native board runs 10x faster than the wall clock here, with brisk axes, to keep this short. */
	const char *fast[] = { "--speedup", "10", "--joint", "1,0,700,500,20000", "--joint",
			       "2,0,500,500,20000", NULL };
	struct machine m;
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_STROKE, .id = 7 };
	struct arm *a;
	modbus_t *mb;
	bl_err err;
	uint32_t acc0, done0, seq0;
	arm_point at = { 100, 100, 50 }, last = at;
	double t0, took;
	int rc;

	hil_start(&t, fast);
	fast_watchdog_ms = 10000;
	a = open_arm(&t, &m);
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(move_to(a, at, 200, &err) == 0);
	arm_close(a);
	mb = hil_modbus(&t);
	acc0 = hil_in32(mb, FW_IR_ACCEPTED);
	done0 = hil_in32(mb, FW_IR_DONE);
	seq0 = hil_in32(mb, FW_IR_LAST_SEQ);
	modbus_close(mb);
	modbus_free(mb);

	for (int i = 1; i <= 1000; i++) {
		arm_point to = { 100 + 0.3 * i, 100 + (i % 2) * 0.5, 50 };

		path_add(&p, last, to, 100);
		last = to;
	}
	a = open_arm(&t, &m);
	t0 = now_s();
	rc = a->ops->execute(a, &act, &p, &err);
	took = now_s() - t0;
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, last.x, 1e-3);
	CHECK_NEAR(st.pos_mm.y, last.y, 1e-3);
	arm_close(a);
	arm_path_free(&p);
	mb = hil_modbus(&t);
	/* Every segment accepted once and run once, in order. */
	CHECK(hil_in32(mb, FW_IR_ACCEPTED) - acc0 == 1000);
	CHECK(hil_in32(mb, FW_IR_DONE) - done0 == 1000);
	CHECK(hil_in32(mb, FW_IR_LAST_SEQ) == seq0 + 1000);
	CHECK(hil_in32(mb, FW_IR_DONE_SEQ) == seq0 + 1000);
	CHECK(hil_in(mb, FW_IR_FAULT) == 0);
	fprintf(stderr, "1000 segments in %.2f s wall, %u ms firmware time\n", took,
		hil_in32(mb, FW_IR_TIME_MS));
	modbus_close(mb);
	modbus_free(mb);
	hil_stop(&t);
}

TEST(scara_line_through_kinematics)
{
	struct hil_target t;
	/* A SCARA's joints in degrees: shoulder 0..180, elbow 0..160 (left-handed). */
	const char *scara_args[] = { "--speedup", "10", "--joint", "1,0,180,360,20000", "--joint",
				     "2,0,160,360,20000", NULL };
	struct machine m;
	struct arm_status st;
	struct arm *a;
	modbus_t *mb;
	bl_err err;
	uint32_t acc0;
	int rc;

	/* Joints resolve 0.001 degree: about 0.01 mm at the tool. */
	hil_start(&t, t_is_native() ? scara_args : NULL);
	hil_machine(&t, &m);
	if (t.kind == HIL_NATIVE)
		m.connection.watchdog_ms = 10000; /* see fast_watchdog_ms */
	m.kin.type = MACHINE_KIN_SCARA;
	m.kin.base_mm[0] = 350;
	m.kin.base_mm[1] = -100;
	m.kin.l1_mm = 350;
	m.kin.l2_mm = 300;
	m.kin.j1_deg[0] = 0;
	m.kin.j1_deg[1] = 180;
	m.kin.j2_deg[0] = 0;
	m.kin.j2_deg[1] = 160;
	m.kin.elbow_right = 0;
	CHECK(arm_modbus_open(&m, clk_monotonic(), &a, &err) == 0);
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, m.home_mm[0], 0.02);
	CHECK_NEAR(st.pos_mm.y, m.home_mm[1], 0.02);
	CHECK(move_to(a, (arm_point){ 200, 300, 20 }, 100, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, 200, 0.02);
	arm_close(a);
	mb = hil_modbus(&t);
	acc0 = hil_in32(mb, FW_IR_ACCEPTED);
	modbus_close(mb);
	modbus_free(mb);
	CHECK(arm_modbus_open(&m, clk_monotonic(), &a, &err) == 0);
	/* 300 mm straight along x: joint-linear pieces of at most 2 mm keep the tool on the line. */
	rc = move_to(a, (arm_point){ 500, 300, 20 }, 50, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, 500, 0.02);
	CHECK_NEAR(st.pos_mm.y, 300, 0.02);
	CHECK_NEAR(st.pos_mm.z, 20, 0.02);
	arm_close(a);
	mb = hil_modbus(&t);
	CHECK(hil_in32(mb, FW_IR_ACCEPTED) - acc0 == 150);
	CHECK(hil_in(mb, FW_IR_FAULT) == 0);
	modbus_close(mb);
	modbus_free(mb);
	hil_stop(&t);
}

TEST(native_board_exits_cleanly)
{
	struct hil_target t;
	struct stat st;

	hil_start(&t, NULL);
	CHECK(t.kind == HIL_NATIVE);
	CHECK(lstat(t.tty, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(hil_stop(&t) == 0);
	CHECK(lstat(t.tty, &st) != 0);
}

/*
 * pymodbus (Debian's python3-pymodbus 3.0) as the master: what a strict map
 * answers to a control word with an undefined bit, and to HOME while the arm
 * moves. Its serial client lives in the system interpreter only.
 */
static const char pymodbus_script[] =
	"import sys\n"
	"from pymodbus.client import ModbusSerialClient\n"
	"from pymodbus.exceptions import ModbusIOException\n"
	"c = ModbusSerialClient(port=sys.argv[1], baudrate=115200, parity='N', timeout=1)\n"
	"assert c.connect()\n"
	"# A reply lost on a loaded machine is asked again, as HIL_RETRY does;\n"
	"# an exception response is the firmware's answer and is kept.\n"
	"def call(f, *a):\n"
	"    for n in range(4):\n"
	"        try:\n"
	"            r = f(*a, slave=1)\n"
	"        except ModbusIOException as e:\n"
	"            r = e\n"
	"        if not isinstance(r, ModbusIOException):\n"
	"            return r\n"
	"        print('no reply, asking again:', r, file=sys.stderr)\n"
	"        c.close(); c.connect()\n"
	"    sys.exit('no reply after 4 tries: %s' % r)\n"
	"def ex(r):\n"
	"    return r.exception_code if r.isError() else 0\n"
	"def refusal():\n"
	"    return call(c.read_input_registers, 6, 1).registers[0]\n"
	"print('fc6 0x0101 exception', ex(call(c.write_register, 0, 0x0101)))\n"
	"print('refusal', refusal())\n"
	"print('fc16 0x8000 exception', ex(call(c.write_registers, 0, [0x8000, 777])))\n"
	"print('holding 0..1', call(c.read_holding_registers, 0, 2).registers)\n"
	"# The longest watchdog: QEMU's firmware time runs 30 to 45 times the wall\n"
	"# clock, so the default 500 ms is about 12 ms of a slow Python's time;\n"
	"# 60 s is 1.3 to 2 s, past a lost reply's 1 s timeout and its retry.\n"
	"assert ex(call(c.write_register, 1, 60000)) == 0\n"
	"print('enable exception', ex(call(c.write_register, 0, 3)))\n"
	"ex(call(c.write_registers, 2, [1, 34464, 1, 34464, 0, 50000, 0, 0]))\n"
	"print('home exception', ex(call(c.write_register, 0, 0x13)))\n"
	"ex(call(c.write_register, 0, 3))\n"
	"# 2 mm/s to (300, 100, 50, 0) mm, sequence 1: 150 s of firmware motion\n"
	"print('segment exception', ex(call(c.write_registers, 10, [0, 0, 0, 2000, 4, 37856,\n"
	"      1, 34464, 0, 50000, 0, 0, 0, 1])))\n"
	"print('home while moving exception', ex(call(c.write_register, 0, 0x13)))\n"
	"print('refusal', refusal())\n"
	"print('stop exception', ex(call(c.write_register, 0, 1)))\n"
	"c.close()\n";

TEST(strict_control_word_by_pymodbus_and_mbpoll)
{
	struct hil_target t;
	char script[4096], *out = NULL, *err = NULL;

	snprintf(script, sizeof(script), "%s", test_write_file("strict_cw.py", pymodbus_script));
	hil_start(&t, NULL);
	{
		const char *argv[] = { "/usr/bin/python3", script, t.tty, NULL };

		CHECK_MSG(test_spawn(argv, NULL, &out, &err) == 0, "pymodbus: %s", err ? err : "");
	}
	fprintf(stderr, "pymodbus saw:\n%s", out ? out : "");
	CHECK_STR_CONTAINS(out, "fc6 0x0101 exception 3\nrefusal 9\n");
	CHECK_STR_CONTAINS(out, "fc16 0x8000 exception 3\n");
	/* Refused whole: neither the control word nor the watchdog after it was written. */
	{
		char want[64];

		snprintf(want, sizeof(want), "holding 0..1 [0, %d]\n", FW_WATCHDOG_DEFAULT_MS);
		CHECK_STR_CONTAINS(out, want);
	}
	CHECK_STR_CONTAINS(out, "enable exception 0\nhome exception 0\nsegment exception 0\n");
	CHECK_STR_CONTAINS(out, "home while moving exception 6\nrefusal 8\n");
	free(out);
	free(err);
	out = NULL;
	/* mbpoll, the other independent master, hears the same. */
	{
		const char *val[] = { "256", NULL };

		CHECK(mbpoll(&t, "4", "0", NULL, val, &out) != 0);
		CHECK_STR_CONTAINS(out, "Illegal data value");
		free(out);
	}
	hil_stop(&t);
}

TEST_MAIN(T(register_map_by_mbpoll), T(exceptions_on_the_wire), T(backend_homes_moves_holds),
	  T(arm_time_is_motion_time_not_wall_time), T(backend_reports_a_silent_slave), T(out_of_limit_targets_refused),
	  T(watchdog_stops_when_the_host_dies), T(estop_latches_until_cleared),
	  T(thousand_segment_stream), T(scara_line_through_kinematics),
	  T(native_board_exits_cleanly), T(strict_control_word_by_pymodbus_and_mbpoll))
