/* test_hil_gcode.c: the gcode backend against a GRBL-protocol peer on a pty: character counting, real-time commands, alarms. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arm/arm_backend.h"
#include "arm/arm_gcode.h"
#include "base/clock.h"
#include "base/fs.h"
#include "hil.h"
#include "test.h"

extern char **environ;

struct peer {
	pid_t pid;
	char tty[600], stats[600];
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Starts grbl-peer; extra is NULL or "--option value" pairs, NULL-terminated. */
static void peer_start_with(struct peer *pr, const char *speedup, const char *const *extra)
{
	const char *argv[20] = { hil_env("BRUSHLOOP_GRBL_PEER"), "--pty", pr->tty, "--stats",
				 pr->stats, "--speedup", speedup };
	int n = 7;

	snprintf(pr->tty, sizeof(pr->tty), "%s/ttyGRBL", test_tmpdir());
	snprintf(pr->stats, sizeof(pr->stats), "%s/grbl.stats", test_tmpdir());
	unlink(pr->tty);
	for (int i = 0; extra && extra[i] && n < 19; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (posix_spawn(&pr->pid, argv[0], NULL, NULL, (char *const *)argv, environ) != 0) {
		fprintf(stderr, "cannot start %s\n", argv[0]);
		exit(1);
	}
	for (int i = 0; i < 1000 && access(pr->tty, F_OK) != 0; i++)
		sleep_ms(5);
}

static void peer_start(struct peer *pr, const char *speedup, const char *flag)
{
	const char *extra[] = { flag, "1", NULL };

	peer_start_with(pr, speedup, flag ? extra : NULL);
}

/* Stops the peer and returns its statistics line. */
static char *peer_stop(struct peer *pr)
{
	const char *cat[] = { "cat", pr->stats, NULL };
	char *text = NULL;
	int status;

	kill(pr->pid, SIGTERM);
	waitpid(pr->pid, &status, 0);
	hil_run(cat, 5, &text, NULL);
	return text;
}

static long stat_of(const char *text, const char *key)
{
	const char *at = text ? strstr(text, key) : NULL;

	return at ? atol(at + strlen(key)) : -1;
}

static struct arm *open_gcode_to(struct peer *pr, struct machine *m, int timeout_ms, bl_err *err)
{
	struct hil_target t = { .hold_fd = -1 };
	struct arm *a = NULL;

	snprintf(t.tty, sizeof(t.tty), "%s", pr->tty);
	hil_machine(&t, m);
	m->arm_backend = MACHINE_ARM_GCODE;
	/* The peer homes to -1,-1,-1 (pull-off 1 mm below switches at its travel 720, 520, 200): brushloop 709, 509, 154. */
	memcpy(m->connection.grbl_offset_mm, (double[3]){ 710, 510, 155 }, sizeof(m->connection.grbl_offset_mm));
	if (timeout_ms)
		m->connection.timeout_ms = timeout_ms;
	if (arm_gcode_open(m, clk_monotonic(), &a, err))
		return NULL;
	return a;
}

static struct arm *open_gcode(struct peer *pr, struct machine *m, bl_err *err)
{
	return open_gcode_to(pr, m, 0, err);
}

static struct arm *open_homed(struct peer *pr, struct machine *m)
{
	bl_err err;
	struct arm *a = open_gcode(pr, m, &err);

	CHECK_MSG(a != NULL, "%s", err.msg);
	if (a && a->ops->home(a, &err)) {
		CHECK_MSG(0, "home: %s", err.msg);
		arm_close(a);
		a = NULL;
	}
	return a;
}

static double since_s(int64_t t0)
{
	return (double)(clk_real_ns() - t0) / 1e9;
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


static void path_dwell(struct arm_path *p, arm_point at, int ms)
{
	path_add(p, at, at, 0);
	p->seg[p->n - 1].flags = ARM_SEG_DWELL;
	p->seg[p->n - 1].dwell_ms = ms;
}

/*
 * GRBL boots locked with homing enabled (grbl/main.c HOMING_INIT_LOCK): only
 * "[MSG:'$H'|'$X' to unlock]", no ALARM:N. That asks for homing; it is no fault.
 */
TEST(gcode_streams_by_character_counting)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_STROKE, .id = 3 };
	struct arm *a;
	arm_point last = { 100, 100, 50 };
	bl_err err;
	char *stats;
	int rc;

	peer_start(&pr, "20", NULL);
	a = open_gcode(&pr, &m, &err);
	CHECK_MSG(a != NULL, "%s", err.msg);
	if (!a)
		return;
	CHECK(strcmp(arm_backend_name(a), "gcode") == 0);
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.fault && !st.homed);
	CHECK_MSG(st.fault_msg[0] == '\0', "%s", st.fault_msg);
	CHECK(move_to(a, last, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "not homed");
	CHECK_MSG(a->ops->home(a, &err) == 0, "%s", err.msg);
	/* Homed, then moved to the machine file's home_mm. */
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.fault && st.homed);
	CHECK_NEAR(st.pos_mm.x, 10, 1e-3);
	CHECK_NEAR(st.pos_mm.y, 10, 1e-3);
	CHECK_NEAR(st.pos_mm.z, 100, 1e-3);
	CHECK(move_to(a, last, 200, &err) == 0);
	for (int i = 1; i <= 1000; i++) {
		arm_point to = { 100 + 0.3 * i, 100 + (i % 2) * 0.5, 50 };

		path_add(&p, last, to, 100);
		last = to;
	}
	path_dwell(&p, last, 100);
	rc = a->ops->execute(a, &act, &p, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, last.x, 1e-3);
	CHECK_NEAR(st.pos_mm.y, last.y, 1e-3);
	CHECK(!st.moving && !st.held);
	/* The arm time is the motion's planned time: 300 mm at 100 mm/s and more. */
	CHECK_MSG(st.arm_time_s > 3.0 && st.arm_time_s < 60.0, "%.2f s", st.arm_time_s);
	arm_path_free(&p);
	arm_close(a);
	stats = peer_stop(&pr);
	/* Never overflowed GRBL's 127 usable bytes, yet kept several lines in it. */
	CHECK_MSG(stat_of(stats, "overflows=") == 0, "%s", stats);
	CHECK_MSG(stat_of(stats, "max_rx=") > 80 && stat_of(stats, "max_rx=") <= 127, "%s", stats);
	/*
	 * $$, $H, G21 G90 G94, two moves to home_mm and G4 P0; the first move and
	 * G4 P0; 1000 segments, the dwell and G4 P0. Each block once: nothing repeated.
	 */
	CHECK_MSG(stat_of(stats, "lines=") == 1010, "%s", stats);
	CHECK_MSG(stat_of(stats, "blocks=") == 1003, "%s", stats);
	free(stats);
}

/*
 * grbl/motion_control.c mc_line: with the planner's 15 blocks full, a line's
 * "ok" waits for a block to finish; mc_dwell: G4's "ok" comes after every
 * queued block and the dwell. Here the 16th line waits for a 2.5 s move, longer
 * than any fixed reply timeout, and the backend waits for it by the motion it
 * queued.
 */
TEST(gcode_ok_waits_for_the_planner)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_STROKE, .id = 4 };
	struct arm *a;
	arm_point last = { 100, 100, 50 };
	bl_err err;
	char *stats;
	int64_t t0;
	int rc;

	peer_start(&pr, "1", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(move_to(a, last, 500, &err) == 0);
	path_add(&p, last, (arm_point){ 225, 100, 50 }, 50); /* 2.5 s */
	last = (arm_point){ 225, 100, 50 };
	for (int i = 1; i <= 20; i++) {
		arm_point to = { 225 + 0.1 * i, 100, 50 };

		path_add(&p, last, to, 100);
		last = to;
	}
	path_dwell(&p, last, 1000);
	t0 = clk_real_ns();
	rc = a->ops->execute(a, &act, &p, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK_MSG(since_s(t0) > 3.4, "took %.2f s", since_s(t0));
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.moving);
	CHECK_NEAR(st.pos_mm.x, last.x, 1e-3);
	arm_path_free(&p);
	arm_close(a);
	stats = peer_stop(&pr);
	/* An "ok" came well after its line was read: the planner was full behind the long move. */
	CHECK_MSG(stat_of(stats, "max_ok_wait_ms=") > 2000, "%s", stats);
	CHECK_MSG(stat_of(stats, "dwells=") >= 1, "%s", stats);
	free(stats);
}

/*
 * grbl/limits.c limits_soft_check and protocol.c: a target beyond travel is
 * ALARM:2, then "[MSG:Reset to continue]", and GRBL hears nothing but Ctrl-X.
 * The backend resets at once, so homing afterwards answers at once.
 */
TEST(gcode_alarm_is_a_fault_until_homed)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	bl_err err;
	char *stats;
	int64_t t0;

	peer_start(&pr, "20", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	/* Beyond the controller's travel (z -50 is GRBL -205, its travel 200): its soft limit. */
	CHECK(move_to(a, (arm_point){ 100, 100, -50 }, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "ALARM:2 (soft limit");
	CHECK_STR_CONTAINS(err.msg, "soft-reset");
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault);
	CHECK_STR_CONTAINS(st.fault_msg, "needs an operator");
	/* The position was kept: GRBL never started the move. */
	CHECK_NEAR(st.pos_mm.z, 100, 1e-3);
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 100, &err) == BL_ESAFETY);
	t0 = clk_real_ns();
	CHECK_MSG(a->ops->home(a, &err) == 0, "%s", err.msg);
	CHECK_MSG(since_s(t0) < 10.0, "homing took %.1f s", since_s(t0));
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 100, &err) == 0);
	arm_close(a);
	stats = peer_stop(&pr);
	/* One reset at connect, one after the alarm. */
	CHECK_MSG(stat_of(stats, "resets=") == 2, "%s", stats);
	free(stats);
}

/* A soft limit hit while moving: GRBL holds to a stop first (limits.c), keeping the position. */
TEST(gcode_soft_limit_in_motion_decelerates_then_alarms)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_STROKE, .id = 5 };
	struct arm *a;
	bl_err err;

	peer_start(&pr, "1", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 500, &err) == 0);
	/* 16 blocks of 3 mm: the bad line is read only when the first is done, in motion. */
	for (int i = 0; i < 16; i++)
		path_add(&p, (arm_point){ 100 + 3 * i, 100, 50 }, (arm_point){ 103 + 3 * i, 100, 50 }, 50);
	path_add(&p, (arm_point){ 148, 100, 50 }, (arm_point){ 148, 100, -50 }, 50);
	CHECK(a->ops->execute(a, &act, &p, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "ALARM:2");
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault && !st.moving);
	CHECK_MSG(st.pos_mm.x > 103 && st.pos_mm.x < 148, "x %.3f", st.pos_mm.x);
	CHECK_NEAR(st.pos_mm.z, 50, 1e-3);
	arm_path_free(&p);
	arm_close(a);
	free(peer_stop(&pr));
}

static volatile int test_signals;

static int count_test_signals(void)
{
	return test_signals;
}

struct exec_job {
	struct arm *a;
	arm_point to;
	double speed_mm_s;
	int rc;
	bl_err err;
	double took_s;
	int64_t end_ns; /* clk_real_ns when the move returned */
};

static void *exec_thread(void *arg)
{
	struct exec_job *j = arg;
	int64_t t0 = clk_real_ns();

	j->rc = move_to(j->a, j->to, j->speed_mm_s, &j->err);
	j->end_ns = clk_real_ns();
	j->took_s = (double)(j->end_ns - t0) / 1e9;
	return NULL;
}

TEST(gcode_hold_resume_and_reset)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct exec_job job;
	pthread_t th;
	struct arm *a;
	bl_err err;
	char *stats;

	/*
	 * Real time here. The moves are slow (100 mm at 50 mm/s, 100 mm at
	 * 25 mm/s) so that the hold and the reset land mid-move even when a
	 * loaded machine wakes this thread late.
	 */
	peer_start(&pr, "1", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 500, &err) == 0);
	/* Feed hold for 0.5 s in the middle: the move takes that much longer, and ends where it should. */
	job = (struct exec_job){ .a = a, .to = { 200, 100, 50 }, .speed_mm_s = 50 };
	pthread_create(&th, NULL, exec_thread, &job);
	sleep_ms(300);
	CHECK(arm_hold(a, &err) == 0);
	sleep_ms(500);
	CHECK(arm_resume(a, &err) == 0);
	pthread_join(th, NULL);
	CHECK_MSG(job.rc == 0, "%s", job.err.msg);
	CHECK_MSG(job.took_s > 2.4, "took %.2f s", job.took_s);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, 200, 1e-3);
	/* A soft reset mid-move stops at once; the move fails with GRBL's alarm 3. */
	job = (struct exec_job){ .a = a, .to = { 300, 100, 50 }, .speed_mm_s = 25 };
	pthread_create(&th, NULL, exec_thread, &job);
	sleep_ms(300);
	{
		int64_t stop_ns = clk_real_ns();

		CHECK(arm_stop(a, &err) == 0);
		pthread_join(th, NULL);
		CHECK_MSG((double)(job.end_ns - stop_ns) / 1e9 < 1.0, "the move ended %.2f s after "
			  "the reset", (double)(job.end_ns - stop_ns) / 1e9);
	}
	CHECK(job.rc == BL_ESAFETY);
	CHECK_STR_CONTAINS(job.err.msg, "ALARM:3 (reset while in motion");
	CHECK(job.took_s < 3.0);
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault);
	CHECK(st.pos_mm.x >= 200 && st.pos_mm.x < 300);
	/* A '?' sent while GRBL resets is lost (main.c clears every flag): asked again. */
	sleep_ms(100);
	CHECK(arm_stop(a, &err) == 0);
	CHECK_MSG(a->ops->status(a, &st, &err) == 0, "%s", err.msg);
	CHECK(st.fault);
	CHECK_MSG(a->ops->home(a, &err) == 0, "%s", err.msg);
	arm_close(a);
	stats = peer_stop(&pr);
	CHECK_MSG(stat_of(stats, "lost_statuses=") >= 1, "%s", stats);
	free(stats);
}

/*
 * A first signal: '!' at once, mid-action, and the hold confirmed by
 * "Hold:0" (report.c: Hold:1 while decelerating) at a bounded status rate;
 * the action ends paused, the rest of it still queued; '~' finishes it.
 */
TEST(gcode_a_signal_holds_at_once)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct exec_job job;
	pthread_t th;
	struct arm *a;
	bl_err err;
	char *stats;
	int64_t sig_ns;

	peer_start(&pr, "1", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 500, &err) == 0);
	a->signalled = count_test_signals;
	job = (struct exec_job){ .a = a, .to = { 250, 100, 50 }, .speed_mm_s = 50 };
	pthread_create(&th, NULL, exec_thread, &job);
	sleep_ms(400);
	sig_ns = clk_real_ns();
	test_signals = 1;
	pthread_join(th, NULL);
	CHECK_MSG(job.rc == BL_EPAUSED, "%d %s", job.rc, job.err.msg);
	CHECK_STR_CONTAINS(job.err.msg, "Hold:0");
	/* Not after the action (3 s): the hold is complete within a decelerating moment. */
	CHECK_MSG((double)(job.end_ns - sig_ns) / 1e9 < 1.0, "paused %.2f s after the signal",
		  (double)(job.end_ns - sig_ns) / 1e9);
	a->signalled = NULL;
	test_signals = 0;
	CHECK(a->ops->status(a, &st, &err) == 0 && st.held && !st.moving && !st.fault);
	CHECK(st.pos_mm.x > 100 && st.pos_mm.x < 250);
	CHECK(arm_resume(a, &err) == 0);
	for (int i = 0; i < 100 && a->ops->status(a, &st, &err) == 0 && (st.moving || st.held); i++)
		sleep_ms(50);
	CHECK_NEAR(st.pos_mm.x, 250, 1e-3);
	arm_close(a);
	stats = peer_stop(&pr);
	CHECK_MSG(stat_of(stats, "holds=") == 1, "%s", stats);
	/* At most 20 queries a second over the whole test (about 6 s), not thousands. */
	CHECK_MSG(stat_of(stats, "statuses=") < 250, "%s", stats);
	free(stats);
}

/*
 * A refused line mid-stream (GRBL's error:22, feed rate undefined: F0) is
 * told with its documented meaning, and only once GRBL has finished what it
 * had queued before it: the '?' that follows sees it Idle where the motion ended.
 */
TEST(gcode_refused_line_waits_for_the_queue)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm_path p = { 0 };
	struct arm_action act = { .kind = ARM_STROKE, .id = 6 };
	struct arm *a;
	bl_err err;

	peer_start(&pr, "1", NULL);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 500, &err) == 0);
	path_add(&p, (arm_point){ 100, 100, 50 }, (arm_point){ 150, 100, 50 }, 50);
	path_add(&p, (arm_point){ 150, 100, 50 }, (arm_point){ 160, 100, 50 }, 0);
	CHECK(a->ops->execute(a, &act, &p, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "error:22 (feed rate not set)");
	CHECK_STR_CONTAINS(err.msg, "GRBL, Idle at MPos -560.000,");
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.moving && !st.fault);
	CHECK_NEAR(st.pos_mm.x, 150, 1e-3);
	arm_path_free(&p);
	arm_close(a);
	free(peer_stop(&pr));
}

/*
 * The mapping between GRBL's machine space and brushloop's: checked at
 * connect against $130..$132 (grbl/system.c system_check_travel_limits), and
 * positions right whether $10 reports MPos or WPos (report.c, with WCO), and
 * whichever way $23 homes an axis (limits.c limits_go_home).
 */
TEST(gcode_coordinates_mapped_and_checked_at_connect)
{
	static const char *const short_x[] = { "--travel", "600,520,200", NULL };
	static const char *const wpos[] = { "--status-mask", "0", "--g54", "-300,-200,-20",
					    "--homing-dir", "3", NULL };
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	bl_err err;

	peer_start_with(&pr, "20", short_x);
	CHECK(open_gcode(&pr, &m, &err) == NULL);
	CHECK_STR_CONTAINS(err.msg, "arm.connection.grbl_offset_mm x 710.000");
	CHECK_STR_CONTAINS(err.msg, "outside its machine space -600.000..0 ($130=600.000)");
	CHECK(err.code == BL_EINVAL);
	free(peer_stop(&pr));

	peer_start_with(&pr, "20", wpos);
	if (!(a = open_homed(&pr, &m)))
		return;
	CHECK(a->ops->status(a, &st, &err) == 0 && st.homed);
	CHECK_NEAR(st.pos_mm.x, 10, 1e-3);
	CHECK_NEAR(st.pos_mm.y, 10, 1e-3);
	CHECK_NEAR(st.pos_mm.z, 100, 1e-3);
	CHECK(move_to(a, (arm_point){ 321, 123, 42 }, 500, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, 321, 1e-3);
	CHECK_NEAR(st.pos_mm.y, 123, 1e-3);
	CHECK_NEAR(st.pos_mm.z, 42, 1e-3);
	arm_close(a);
	free(peer_stop(&pr));
}

/* The machine file: the mapping is required for gcode, refused for modbus, strictly typed. */
TEST(gcode_machine_file_needs_the_mapping)
{
	static const struct {
		const char *conn, *want;
	} cases[] = {
		{ "\"backend\": \"gcode\", \"connection\": { \"port\": \"/dev/null\" }",
		  "grbl_offset_mm" },
		{ "\"backend\": \"gcode\", \"connection\": { \"port\": \"/dev/null\", "
		  "\"grbl_offset_mm\": [1, 2] }", "grbl_offset_mm" },
		{ "\"backend\": \"gcode\", \"connection\": { \"port\": \"/dev/null\", "
		  "\"grbl_offset_mm\": [1, \"2\", 3] }", "grbl_offset_mm" },
		{ "\"backend\": \"modbus\", \"connection\": { \"port\": \"/dev/null\", "
		  "\"grbl_offset_mm\": [1, 2, 3] }", "grbl_offset_mm" },
	};
	char src[4096], path[4200], *text = NULL;
	size_t len;
	bl_err err;
	struct machine m;

	snprintf(src, sizeof(src), "%s/examples/machine-modbus.json", hil_env("BRUSHLOOP_SRC"));
	CHECK(fs_read_file(src, 1 << 20, &text, &len, &err) == 0);
	for (size_t i = 0; text && i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *at = strstr(text, "\"backend\""), *end = at ? strstr(at, "}") : NULL;
		char *out = calloc(1, len + 512);
		FILE *f;

		if (!at || !end || !out) {
			CHECK(0);
			free(out);
			break;
		}
		sprintf(out, "%.*s%s%s", (int)(at - text), text, cases[i].conn, end + 1);
		snprintf(path, sizeof(path), "%s/m%zu.json", test_tmpdir(), i);
		f = fopen(path, "w");
		fputs(out, f);
		fclose(f);
		free(out);
		CHECK_MSG(machine_load(path, &m, &err) == BL_EINVAL, "case %zu loaded", i);
		CHECK_STR_CONTAINS(err.msg, cases[i].want);
	}
	free(text);
	/* And a good one loads, the offset read as written. */
	snprintf(path, sizeof(path), "%s/hil-tests/machine-gcode-shadow.json", hil_env("BRUSHLOOP_SRC"));
	CHECK_MSG(machine_load(path, &m, &err) == 0, "%s", err.msg);
	CHECK_NEAR(m.connection.grbl_offset_mm[0], 710, 1e-9);
}

TEST(gcode_without_homing_switches_and_wrong_peers)
{
	struct peer pr;
	struct machine m;
	struct hil_target t;
	struct arm *a;
	bl_err err;
	char *stats;

	peer_start(&pr, "20", "--no-homing");
	a = open_gcode(&pr, &m, &err);
	CHECK_MSG(a != NULL, "%s", err.msg);
	if (a) {
		/* $H answers error:5; the backend unlocks and trusts the position. */
		CHECK(a->ops->home(a, &err) == 0);
		CHECK(move_to(a, (arm_point){ 20, 20, 20 }, 100, &err) == 0);
		arm_close(a);
	}
	stats = peer_stop(&pr);
	CHECK(stat_of(stats, "resets=") == 1);
	free(stats);
	/* Nothing there: a clear error. */
	snprintf(pr.tty, sizeof(pr.tty), "%s/no-such-tty", test_tmpdir());
	CHECK(open_gcode(&pr, &m, &err) == NULL);
	CHECK_STR_CONTAINS(err.msg, "no such serial port");
	/* Our Modbus firmware is not a GRBL controller. */
	setenv("BRUSHLOOP_HIL_TARGET", "native", 1);
	hil_start(&t, NULL);
	snprintf(pr.tty, sizeof(pr.tty), "%s", t.tty);
	CHECK(open_gcode_to(&pr, &m, 100, &err) == NULL);
	CHECK_STR_CONTAINS(err.msg, "no GRBL banner");
	hil_stop(&t);
}

/*
 * A whole `brushloop run` through the gcode backend: the arm is grbl-peer
 * (machine time 50 times the wall clock), paint and camera the simulator's
 * following it (hil-tests/machine-gcode-shadow.json). GRBL boots locked: the
 * run homes it (a homing request where safety.confirm_homing says so) instead
 * of stopping on an "ALARM:0".
 */
TEST(a_small_painting_through_grbl)
{
	struct peer pr;
	char dir[4200], target[4200], journal[4300], *out = NULL, *err = NULL, *stats;
	const char *machine;
	int rc;

	peer_start(&pr, "50", NULL);
	machine = hil_machine_file("machine-gcode-shadow.json", "/tmp/brushloop-grbl", pr.tty);
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", hil_env("BRUSHLOOP_SRC"));
	{
		const char *argv[] = { hil_env("BRUSHLOOP"), "run", target, "--machine", machine,
				       "--out", dir, "--max-strokes", "6", "--colours", "2",
				       "--accept-nearest", "--quiet", NULL };

		rc = hil_run(argv, 100, &out, &err);
	}
	CHECK_MSG(rc == 0, "run exited %d: %s%s", rc, out ? out : "", err ? err : "");
	CHECK_STR_CONTAINS(out, "state: finished");
	free(out);
	free(err);
	snprintf(journal, sizeof(journal), "%s/journal.jsonl", dir);
	CHECK(hil_count(journal, "\"kind\":\"stroke\",\"segments\"") >= 6);
	CHECK(hil_count(journal, "\"result\":\"done\"") > 20);
	CHECK(hil_count(journal, "\"event\":\"fault\"") == 0);
	stats = peer_stop(&pr);
	CHECK_MSG(stat_of(stats, "overflows=") == 0 && stat_of(stats, "blocks=") > 50, "%s", stats);
	free(stats);
}

/* A first SIGINT mid-run: '!' at once, "Hold:0" confirmed, the run pauses (exit 3), no safety stop. */
TEST(a_signal_pauses_a_grbl_run)
{
	struct peer pr;
	char dir[4200], target[4200], journal[4300], log[4300], *stats;
	const char *machine;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = 0, done = 0;
	int64_t sig_ns;

	peer_start(&pr, "2", NULL);
	machine = hil_machine_file("machine-gcode-shadow.json", "/tmp/brushloop-grbl", pr.tty);
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	snprintf(journal, sizeof(journal), "%s/journal.jsonl", dir);
	snprintf(log, sizeof(log), "%s/run.log", test_tmpdir());
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", hil_env("BRUSHLOOP_SRC"));
	{
		const char *argv[] = { hil_env("BRUSHLOOP"), "run", target, "--machine", machine,
				       "--out", dir, "--max-strokes", "6", "--colours", "2",
				       "--accept-nearest", NULL };

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
		CHECK(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0);
		posix_spawn_file_actions_destroy(&fa);
	}
	/* Into the painting: some actions done, motion under way. */
	for (int i = 0; i < 600 && hil_count(journal, "\"result\":\"done\"") < 2; i++)
		sleep_ms(50);
	sleep_ms(150);
	sig_ns = clk_real_ns();
	kill(pid, SIGINT);
	for (int i = 0; i < 400 && !done; i++) {
		done = waitpid(pid, &status, WNOHANG) == pid;
		if (!done)
			sleep_ms(50);
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	CHECK_MSG(done && WIFEXITED(status) && WEXITSTATUS(status) == 3, "run ended %d", status);
	CHECK_MSG(since_s(sig_ns) < 8.0, "paused %.1f s after the signal", since_s(sig_ns));
	CHECK(hil_count(journal, "\"event\":\"held\"") == 1);
	CHECK(hil_count(journal, "\"event\":\"stop\"") == 0);
	CHECK(hil_count(journal, "\"event\":\"fault\"") == 0);
	stats = peer_stop(&pr);
	CHECK_MSG(stat_of(stats, "holds=") >= 1, "%s", stats);
	free(stats);
}

TEST_MAIN(T(gcode_streams_by_character_counting), T(gcode_ok_waits_for_the_planner),
	  T(gcode_alarm_is_a_fault_until_homed), T(gcode_soft_limit_in_motion_decelerates_then_alarms),
	  T(gcode_hold_resume_and_reset), T(gcode_a_signal_holds_at_once),
	  T(gcode_refused_line_waits_for_the_queue), T(gcode_coordinates_mapped_and_checked_at_connect),
	  T(gcode_machine_file_needs_the_mapping), T(gcode_without_homing_switches_and_wrong_peers),
	  T(a_small_painting_through_grbl), T(a_signal_pauses_a_grbl_run))
