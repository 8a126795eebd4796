/* test_hil_gcode.c: the gcode backend against a GRBL-protocol peer on a pty: character counting, real-time commands, alarms. */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arm/arm_backend.h"
#include "arm/arm_gcode.h"
#include "base/clock.h"
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

static void peer_start(struct peer *pr, const char *speedup, const char *extra)
{
	const char *argv[12] = { hil_env("BRUSHLOOP_GRBL_PEER"), "--pty", pr->tty, "--stats",
				 pr->stats, "--speedup", speedup };
	int n = 7;

	snprintf(pr->tty, sizeof(pr->tty), "%s/ttyGRBL", test_tmpdir());
	snprintf(pr->stats, sizeof(pr->stats), "%s/grbl.stats", test_tmpdir());
	if (extra) {
		argv[n++] = extra;
		argv[n++] = "1";
	}
	argv[n] = NULL;
	if (posix_spawn(&pr->pid, argv[0], NULL, NULL, (char *const *)argv, environ) != 0) {
		fprintf(stderr, "cannot start %s\n", argv[0]);
		exit(1);
	}
	for (int i = 0; i < 1000 && access(pr->tty, F_OK) != 0; i++)
		sleep_ms(5);
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
	/* GRBL with homing switches starts locked. */
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault && !st.homed);
	CHECK(move_to(a, last, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "not homed");
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(a->ops->status(a, &st, &err) == 0 && !st.fault && st.homed);
	CHECK_NEAR(st.pos_mm.z, 100, 1e-3);
	CHECK(move_to(a, last, 200, &err) == 0);
	for (int i = 1; i <= 1000; i++) {
		arm_point to = { 100 + 0.3 * i, 100 + (i % 2) * 0.5, 50 };

		path_add(&p, last, to, 100);
		last = to;
	}
	/* A dwell too, as G4. */
	p.seg = realloc(p.seg, (p.n + 1) * sizeof(*p.seg));
	memset(&p.seg[p.n], 0, sizeof(p.seg[0]));
	p.seg[p.n].from = p.seg[p.n].to = last;
	p.seg[p.n].flags = ARM_SEG_DWELL;
	p.seg[p.n].dwell_ms = 100;
	p.n++;
	rc = a->ops->execute(a, &act, &p, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(a->ops->status(a, &st, &err) == 0);
	CHECK_NEAR(st.pos_mm.x, last.x, 1e-3);
	CHECK_NEAR(st.pos_mm.y, last.y, 1e-3);
	CHECK(!st.moving && !st.held);
	arm_path_free(&p);
	arm_close(a);
	stats = peer_stop(&pr);
	/* Never overflowed GRBL's 128 bytes, yet kept several lines in it. */
	CHECK_MSG(stat_of(stats, "overflows=") == 0, "%s", stats);
	CHECK_MSG(stat_of(stats, "max_rx=") > 80 && stat_of(stats, "max_rx=") <= 127, "%s", stats);
	/* $H, G21 G90, the first move, 1000 segments and the dwell. */
	CHECK_MSG(stat_of(stats, "lines=") == 1004, "%s", stats);
	free(stats);
}

TEST(gcode_alarm_is_a_fault_until_homed)
{
	struct peer pr;
	struct machine m;
	struct arm_status st;
	struct arm *a;
	bl_err err;

	peer_start(&pr, "20", NULL);
	a = open_gcode(&pr, &m, &err);
	CHECK_MSG(a != NULL, "%s", err.msg);
	if (!a)
		return;
	CHECK(a->ops->home(a, &err) == 0);
	/* Beyond the controller's travel: its soft limit alarms. */
	CHECK(move_to(a, (arm_point){ 100, 100, -45 }, 100, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "ALARM:2 (soft limit");
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault);
	CHECK_STR_CONTAINS(st.fault_msg, "needs an operator");
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 100, &err) == BL_ESAFETY);
	CHECK(a->ops->home(a, &err) == 0);
	CHECK(move_to(a, (arm_point){ 100, 100, 50 }, 100, &err) == 0);
	arm_close(a);
	free(peer_stop(&pr));
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

	/*
	 * Real time here. The moves are slow (100 mm at 50 mm/s, 100 mm at
	 * 25 mm/s) so that the hold and the reset land mid-move even when a
	 * loaded machine wakes this thread late.
	 */
	peer_start(&pr, "1", NULL);
	a = open_gcode(&pr, &m, &err);
	CHECK_MSG(a != NULL, "%s", err.msg);
	if (!a)
		return;
	CHECK(a->ops->home(a, &err) == 0);
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
	CHECK_STR_CONTAINS(job.err.msg, "ALARM:3 (reset while in motion)");
	CHECK(job.took_s < 3.0);
	CHECK(a->ops->status(a, &st, &err) == 0 && st.fault);
	CHECK(st.pos_mm.x >= 200 && st.pos_mm.x < 300);
	CHECK(a->ops->home(a, &err) == 0);
	arm_close(a);
	free(peer_stop(&pr));
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

TEST_MAIN(T(gcode_streams_by_character_counting), T(gcode_alarm_is_a_fault_until_homed),
	  T(gcode_hold_resume_and_reset), T(gcode_without_homing_switches_and_wrong_peers))
