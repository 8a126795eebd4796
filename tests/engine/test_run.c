/* test_run.c: whole simulated runs: finished and verified, resumed after kill -9 and power loss with no dispense twice, status, bad input. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/fs.h"
#include "config/machine.h"
#include "engine/run_checks.h"
#include "test.h"

/* Small and quick: a flat graphic target, a stroke budget of 24. */
#define STROKES "24"


/* The run's JSON file name, parsed; NULL when it cannot be read or parsed. */
static cJSON *run_json(const char *dir, const char *name)
{
	char *text = run_file_text(dir, name);
	cJSON *o = text ? cJSON_Parse(text) : NULL;

	free(text);
	return o;
}

/* The run's state.json, parsed; NULL when it cannot be read or parsed. */
static cJSON *state_of(const char *dir)
{
	return run_json(dir, "state.json");
}

/* Each line of the run's journal, parsed (NULL when it does not parse), to fn; -1 without a journal. */
/* The action of a journal line if it is the gate allowing one, else NULL. */
static const cJSON *allowed_action(const cJSON *line)
{
	const cJSON *d = cJSON_GetObjectItem(line, "data");
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const char *verdict = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(d, "decision"), "decision"));

	return ev && !strcmp(ev, "decision") && verdict && !strcmp(verdict, "allow")
		       ? cJSON_GetObjectItem(d, "action")
		       : NULL;
}

/* The type of a journal line's allowed action, "" when it is none. */
static const char *allowed_type(const cJSON *line)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(allowed_action(line), "type"));

	return t ? t : "";
}

struct dispenses {
	long ids[4096];
	int n, rep;
};

static void count_dispense(const cJSON *line, void *ctx)
{
	struct dispenses *x = ctx;
	const cJSON *id = cJSON_GetObjectItem(allowed_action(line), "id");

	if (strcmp(allowed_type(line), "dispense") || !cJSON_IsNumber(id))
		return;
	for (int i = 0; i < x->n; i++)
		x->rep += x->ids[i] == (long)id->valuedouble;
	if (x->n < 4096)
		x->ids[x->n++] = (long)id->valuedouble;
}

/* How many dispense actions the gate allowed more than once (by action id and subtask). */
static int dispenses_repeated(const char *dir, int *n_dispenses)
{
	static struct dispenses x;

	memset(&x, 0, sizeof(x));
	if (test_journal_each(dir, count_dispense, &x))
		return -1;
	*n_dispenses = x.n;
	return x.rep;
}


/* Kills a child run with SIGKILL once its journal holds pat n times; 0 when it did. */
static int kill_at(pid_t pid, const char *dir, const char *pat, int n)
{
	int status;

	for (;;) {
		if (run_journal_count(dir, pat) >= n) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 0;
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			return -1;
		usleep(1000);
	}
}

/*
 * Starts brushloop with args in the background, its stderr to errfile (NULL:
 * thrown away), under a file-size limit of fsize bytes (0: none).
 */
static pid_t start_limited(const char *const *args, const char *errfile, long fsize)
{
	const char *bin = getenv("BRUSHLOOP");
	char *argv[32];
	int n = 0;
	pid_t pid;

	argv[n++] = (char *)bin;
	while (args[n - 1] && n < 31) {
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		int efd = errfile ? open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644) : fd;

		dup2(fd, 1);
		dup2(efd, 2);
		if (fsize > 0) {
			struct rlimit rl = { (rlim_t)fsize, (rlim_t)fsize };

			setrlimit(RLIMIT_FSIZE, &rl);
		}
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

/* Starts brushloop with args in the background, its stderr to errfile (NULL: thrown away). */
static pid_t start_err(const char *const *args, const char *errfile)
{
	return start_limited(args, errfile, 0);
}

/* Starts brushloop with args in the background, its output thrown away. */
static pid_t start(const char *const *args)
{
	return start_err(args, NULL);
}

/* A child's exit status (-1 when a signal ended it). */
static int wait_exit(pid_t pid)
{
	int status = 0;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}


/* A stroke the gate let run: its box (machine mm, grown by half its brush), colour and times (run clock, s). */
struct laid {
	double box[4], t_start, t_end;
	char colour[16];
};

static double brush_half(const char *name)
{
	/* The example machine's brushes (examples/machine-sim.json). */
	return !strcmp(name, "round-2") ? 1.0 : !strcmp(name, "round-6") ? 3.0 : 6.0;
}

/* The strokes of a journal as they are read: the colour of each subtask, the stroke allowed and not yet done. */
struct strokes_read {
	char sub_col[512][2][16];
	int nsub;
	struct laid *l, pend;
	long pend_id;
	int n;
};

static void read_stroke(const cJSON *o, void *ctx)
{
	struct strokes_read *x = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(o, "event"));
	const char *sub = cJSON_GetStringValue(cJSON_GetObjectItem(o, "subtask"));
	const cJSON *d = cJSON_GetObjectItem(o, "data"), *a = allowed_action(o);
	double t = cJSON_GetObjectItem(o, "mono_ns") ? cJSON_GetObjectItem(o, "mono_ns")->valuedouble / 1e9 : 0;

	if (ev && sub && !strcmp(ev, "subtask_start") && x->nsub < 512) {
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(d, "colour"));

		snprintf(x->sub_col[x->nsub][0], 16, "%s", sub);
		snprintf(x->sub_col[x->nsub][1], 16, "%s", c ? c : "");
		x->nsub++;
	} else if (ev && !strcmp(ev, "decision")) {
		const cJSON *pts = cJSON_GetObjectItem(a, "points_mm");

		x->pend_id = -1;
		if (!strcmp(allowed_type(o), "stroke") && cJSON_IsArray(pts)) {
			double h = brush_half(cJSON_GetStringValue(cJSON_GetObjectItem(a, "brush")));
			struct laid *p = &x->pend;
			const cJSON *q;

			memset(p, 0, sizeof(*p));
			p->box[0] = p->box[1] = 1e9;
			p->box[2] = p->box[3] = -1e9;
			cJSON_ArrayForEach(q, pts)
			{
				double px = cJSON_GetArrayItem(q, 0)->valuedouble, py = cJSON_GetArrayItem(q, 1)->valuedouble;

				p->box[0] = fmin(p->box[0], px - h), p->box[1] = fmin(p->box[1], py - h);
				p->box[2] = fmax(p->box[2], px + h), p->box[3] = fmax(p->box[3], py + h);
			}
			p->t_start = t;
			for (int i = x->nsub - 1; i >= 0; i--)
				if (sub && !strcmp(x->sub_col[i][0], sub)) {
					snprintf(p->colour, 16, "%s", x->sub_col[i][1]);
					break;
				}
			x->pend_id = (long)cJSON_GetObjectItem(a, "id")->valuedouble;
		}
	} else if (ev && !strcmp(ev, "executed") && x->pend_id >= 0 &&
		   (long)cJSON_GetObjectItem(d, "id")->valuedouble == x->pend_id && x->n < 8192) {
		x->pend.t_end = t;
		x->l[x->n++] = x->pend;
		x->pend_id = -1;
	}
}

/*
 * How many strokes were laid on another colour's stroke less than dry_s after
 * it (their boxes, grown by half their brushes, meet); -1 when unreadable.
 * The journal gives the colour of each subtask and the gate's allowed and
 * executed strokes with the run clock.
 */
static int wet_overlaps(const char *dir, double dry_s, int *n_strokes)
{
	static struct strokes_read x;
	struct laid *l;
	int bad = 0;

	memset(&x, 0, sizeof(x));
	x.pend_id = -1;
	x.l = l = calloc(8192, sizeof(*l));
	if (!l || test_journal_each(dir, read_stroke, &x)) {
		free(l);
		return -1;
	}
	for (int j = 0; j < x.n; j++)
		for (int i = 0; i < j; i++)
			if (strcmp(l[i].colour, l[j].colour) && l[j].t_start < l[i].t_end + dry_s - 1.0 &&
			    l[i].box[0] < l[j].box[2] && l[j].box[0] < l[i].box[2] && l[i].box[1] < l[j].box[3] &&
			    l[j].box[1] < l[i].box[3]) {
				bad++;
				break;
			}
	free(l);
	*n_strokes = x.n;
	return bad;
}

static double final_mean(const char *dir)
{
	cJSON *st = test_status(dir, NULL);
	const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "canvas"), "mean_de00");
	double v = cJSON_IsNumber(m) ? m->valuedouble : -1.0;

	cJSON_Delete(st);
	return v;
}

TEST(a_small_run_finishes_with_a_verified_canvas)
{
	const char *dir = test_tmp_path("whole");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
			       "--accept-nearest", "--quiet", NULL };
	char path[4200], *out = NULL;
	struct stat sb;
	cJSON *st;
	int n = 0;

	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "final-canvas.png");
	free(out);
	st = test_status(dir, NULL);
	CHECK(st != NULL);
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "finished"));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "canvas"), "verified")));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(st, "mixes")) >= 2);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "cost"), "verifications")->valuedouble > 5);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "heartbeat"), "stale")));
	/* What a person sees: pixel by pixel the canvas is further off than its 10 mm cells' means. */
	{
		const cJSON *c = cJSON_GetObjectItem(st, "canvas");
		double see = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "scielab_1m"));
		double px = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "pixel_de00"));
		double cells = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "mean_de00"));

		printf("final canvas: S-CIELAB 1 m %.2f, pixel %.2f, cells %.2f\n", see, px, cells);
		CHECK(see > 0 && see < 30);
		CHECK(px > cells && px < 30);
	}
	cJSON_Delete(st);
	for (const char *f = "run.json\0plan.json\0journal.jsonl\0state.json\0STATUS.md\0heartbeat\0"
			     "final-canvas.png\0final-target.png\0world.sim\0frames\0lamp.json\0";
	     *f; f += strlen(f) + 1) {
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		CHECK_MSG(stat(path, &sb) == 0, "%s missing", path);
	}
	CHECK(dispenses_repeated(dir, &n) == 0 && n > 0);
	CHECK(final_mean(dir) > 0 && final_mean(dir) < 20);
	/* Each colour's coat is learnt from its batches and kept in state.json, none to whole. */
	{
		cJSON *s = state_of(dir), *c;
		int learnt = 0;

		CHECK(s != NULL);
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(s, "colours")) {
			double coat = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "coat"));

			if (cJSON_GetNumberValue(cJSON_GetObjectItem(c, "coat_weight")) <= 0.0)
				continue;
			learnt++;
			CHECK_MSG(coat >= 0.15 && coat <= 1.2, "colour %s coat %.2f",
				  cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")), coat);
		}
		CHECK_MSG(learnt > 0, "no colour's coat was learnt");
		cJSON_Delete(s);
	}
	/* Wet paint is kept stroke by stroke: no stroke lands on another colour's stroke still wet (1200 s). */
	CHECK_MSG(wet_overlaps(dir, 1200.0, &n) == 0, "strokes laid on wet paint of another colour");
	CHECK(n > 10);
	/* The lamp followed from the first frame: its reference, its drift journaled, STATUS.md says it. */
	{
		char *text = NULL;

		snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
		CHECK(fs_read_file(path, 1 << 28, &text, NULL, NULL) == 0);
		CHECK(text && strstr(text, "\"event\":\"lamp_reference\",\"data\":{\"board_points\""));
		CHECK(text && strstr(text, "\"event\":\"lamp\""));
		free(text);
		text = NULL;
		snprintf(path, sizeof(path), "%s/STATUS.md", dir);
		CHECK(fs_read_file(path, 1 << 20, &text, NULL, NULL) == 0);
		CHECK_STR_CONTAINS(text, "- **lamp**: the light in the last frame is");
		CHECK_STR_CONTAINS(text, "- **what a person sees** (the final canvas against the target at "
					 "1 px/mm): S-CIELAB seen from 1 m ");
		free(text);
	}
}

TEST(open_loop_runs_the_same_plan_without_looking)
{
	const char *dir = test_tmp_path("open");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
			       "--open-loop", "--quiet", NULL };
	char path[4200], *text = NULL;

	CHECK(test_brushloop(args, NULL, NULL) == 0);
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	CHECK(fs_read_file(path, 1 << 28, &text, NULL, NULL) == 0);
	CHECK(text && !strstr(text, "\"event\":\"mix_measured\""));
	CHECK(text && !strstr(text, "\"event\":\"correction_planned\""));
	CHECK(text && strstr(text, "\"event\":\"mix_open_loop\""));
	free(text);
	CHECK(final_mean(dir) > 0);
}

/* The moments of the kill case: from the first events to the corrections (an uninterrupted run journals about 540 lines). */
static const long kill_lines[] = { 3, 40, 130, 260, 420 };
#define N_KILLS ((int)(sizeof(kill_lines) / sizeof(kill_lines[0])))

/* The final mean of the uninterrupted run the kills are taken from. */
struct killed {
	double ref;
};

/*
 * A kill -9 at journal line kill_lines[i] of the uninterrupted run, as the copy made at that
 * moment holds it, resumed to the end: no dispense twice, no done subtask started over, no
 * stroke counted twice, the canvas within 3 CIEDE2000 of the uninterrupted run's.
 */
static void resume_killed(int i, void *ctx)
{
	const struct killed *k = ctx;
	long lines = kill_lines[i];
	char name[32];
	const char *dir;
	double got;
	int n = 0, rc;

	snprintf(name, sizeof(name), "kill-%ld", lines);
	dir = test_tmp_path(name);
	{
		const char *rargs[] = { "resume", dir, "--quiet", NULL };

		rc = test_brushloop(rargs, NULL, NULL);
	}
	CHECK_MSG(rc == 0, "resume after a kill at journal line %ld exited %d", lines, rc);
	CHECK_MSG(dispenses_repeated(dir, &n) == 0, "a dispense ran twice after a kill at line %ld",
		  lines);
	CHECK_MSG(run_done_subtasks_worked_again(dir) == 0, "a done subtask started over after a kill at "
		  "line %ld", lines);
	{
		/* A stroke that ran before the kill is counted once, not again by the resume. */
		cJSON *st = test_status(dir, NULL);
		const cJSON *done = cJSON_GetObjectItem(st, "strokes_done");
		const cJSON *total = cJSON_GetObjectItem(st, "strokes_total");

		CHECK_MSG(cJSON_IsNumber(done) && cJSON_IsNumber(total) &&
			  done->valuedouble <= total->valuedouble,
			  "kill at line %ld: %g strokes done of %g", lines,
			  cJSON_IsNumber(done) ? done->valuedouble : -1.0,
			  cJSON_IsNumber(total) ? total->valuedouble : -1.0);
		cJSON_Delete(st);
	}
	got = final_mean(dir);
	/* Stated tolerance: within 3 CIEDE2000 of the uninterrupted run's mean. */
	CHECK_MSG(k->ref > 0 && got > 0 && got < k->ref + 3.0 && got > k->ref - 3.0,
		  "kill at line %ld: final mean %.2f, uninterrupted %.2f", lines, got, k->ref);
}

/*
 * The directory of a run stopped (SIGSTOP, waited for) copied to dest: what a kill -9 at
 * that moment leaves, as every write the run made is in its files and nothing else is
 * (the lock is a flock, which a copy does not hold). 0 when copied.
 */
static int copy_stopped(pid_t pid, const char *dir, const char *dest)
{
	const char *cp[] = { "cp", "-a", dir, dest, NULL };
	char *err = NULL;
	int status = 0, rc;

	if (kill(pid, SIGSTOP) || waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status)) {
		fprintf(stderr, "the run did not stop (wait status %d)\n", status);
		return -1;
	}
	rc = test_spawn(cp, NULL, NULL, &err);
	kill(pid, SIGCONT);
	if (rc)
		fprintf(stderr, "cp -a %s %s: exit %d: %s\n", dir, dest, rc, err ? err : "");
	free(err);
	return rc;
}

/*
 * One uninterrupted run, stopped at five moments in its progress (journal lines, not wall
 * time: the same points on a loaded machine and under sanitizers) and its directory copied
 * there: each copy is what a kill -9 at that moment leaves. Each is resumed to the end
 * (two at a time) and compared with the uninterrupted run.
 */
TEST(kill_9_at_five_moments_then_resume)
{
	char dir[4096];
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
			       "--accept-nearest", "--quiet", NULL };
	struct killed k = { -1.0 };
	int copied = 0, exited = 0, status = 0;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s", test_tmp_path("reference"));
	pid = start(args);
	CHECK(pid > 0);
	for (int i = 0; i < N_KILLS && pid > 0 && !exited; i++) {
		char name[32];

		while (run_journal_lines(dir) < kill_lines[i]) {
			if (waitpid(pid, &status, WNOHANG) == pid) {
				exited = 1;
				break;
			}
			usleep(2000);
		}
		snprintf(name, sizeof(name), "kill-%ld", kill_lines[i]);
		CHECK_MSG(!exited, "the run ended before its journal had %ld lines", kill_lines[i]);
		if (!exited) {
			int rc = copy_stopped(pid, dir, test_tmp_path(name));

			CHECK_MSG(rc == 0, "no copy of the run at journal line %ld", kill_lines[i]);
			copied += rc == 0;
		}
	}
	if (pid > 0 && !exited)
		waitpid(pid, &status, 0);
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the uninterrupted run ended %d",
		  status);
	k.ref = final_mean(dir);
	if (copied == N_KILLS)
		test_parallel(N_KILLS, 2, resume_killed, &k);
}

/* The moments of the power-loss case: right after the world's 3rd, ... 160th action. */
static const int power_after[] = { 3, 17, 40, 90, 160 };
#define N_POWER ((int)(sizeof(power_after) / sizeof(power_after[0])))

/* The uninterrupted run (job 0), or a fresh run whose power fails after action power_after[i - 1], resumed. */
static void power_loss_then_resume(int i, void *ctx)
{
	char name[32], fault[64];
	const char *dir;
	int n = 0;

	if (i == 0) {
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", test_tmp_path("reference"), "--max-strokes",
				       STROKES, "--accept-nearest", "--quiet", NULL };

		CHECK_MSG(test_brushloop(args, NULL, NULL) == 0, "the uninterrupted run failed");
		return;
	}
	snprintf(name, sizeof(name), "power-%d", power_after[i - 1]);
	snprintf(fault, sizeof(fault), "power_loss_after=%d", power_after[i - 1]);
	dir = test_tmp_path(name);
	{
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
				       "--accept-nearest", "--quiet", "--fault", fault, NULL };

		CHECK_MSG(test_brushloop(args, NULL, NULL) == 86, "power loss after %d",
			  power_after[i - 1]);
	}
	{
		const char *args[] = { "resume", dir, "--quiet", NULL };

		CHECK_MSG(test_brushloop(args, NULL, NULL) == 0, "resume after power loss %d",
			  power_after[i - 1]);
	}
	CHECK(dispenses_repeated(dir, &n) == 0);
}

/*
 * Each moment its own fresh run (the loss is the simulator's, at an exact action), resumed to
 * the end: no dispense twice, the canvas within 3 CIEDE2000 of the uninterrupted run's. The
 * six runs go two at a time.
 */
TEST(power_loss_at_five_moments_then_resume)
{
	double ref;

	test_parallel(N_POWER + 1, 2, power_loss_then_resume, NULL);
	ref = final_mean(test_tmp_path("reference"));
	CHECK_MSG(ref > 0, "no final mean of the uninterrupted run");
	for (int i = 0; i < N_POWER; i++) {
		char name[32];
		double got;

		snprintf(name, sizeof(name), "power-%d", power_after[i]);
		got = final_mean(test_tmp_path(name));
		CHECK_MSG(got > 0 && fabs(got - ref) < 3.0, "power loss after %d: %.2f vs %.2f",
			  power_after[i], got, ref);
	}
}

/*
 * Open loop: a kill just after a mix's dispense set is planned, then resume:
 * the set is finished, never planned again; no cell ever holds more than it
 * takes (top-ups sized to the room left).
 */
TEST(open_loop_dispenses_each_mix_once_across_a_kill)
{
	const char *dir = test_tmp_path("open-kill");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--open-loop",
			       "--quiet", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	pid_t pid = start(args);

	CHECK(pid > 0);
	/* In the second mix's set, once its first dispense was allowed (the set is on disk by then). */
	CHECK_MSG(kill_at(pid, dir, "\"type\":\"dispense\"", 5) == 0, "the run ended first");
	CHECK(test_brushloop(rargs, NULL, NULL) == 0);
	CHECK(run_done_subtasks_worked_again(dir) == 0);
	{
		int planned = run_journal_count(dir, "\"event\":\"dispense_planned\"");
		int mixes = run_journal_count(dir, "\"event\":\"mix_open_loop\"");

		/* One set a mix (top-ups are mixes too): the interrupted one finished, not planned again. */
		CHECK_MSG(planned == mixes, "%d dispense sets planned for %d open-loop mixes", planned,
			  mixes);
	}
	run_check_cells_within_capacity(dir);
}


/* A tolerance no mix reaches, and no rule that accepts without a person (unattended.accept_within_de00 0). */
static void tight_mixes(cJSON *m)
{
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "tolerances"), "mix_de00"), 0.3);
	/* A tolerance tighter than the camera repeats (0.31 on the simulator): no camera check. */
	cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "camera"), "repeat_observations", 0);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"),
						 "accept_within_de00"), 0.0);
}

/* A tolerance no mix reaches, and a rule that accepts any reached colour within 50. */
static void tight_mixes_accepted(cJSON *m)
{
	tight_mixes(m);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"),
						 "accept_within_de00"), 50.0);
}

/* A tolerance no mix reaches, and a rule that accepts nothing beyond it. */
static void tight_mixes_accepted_at_tolerance(cJSON *m)
{
	tight_mixes(m);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"),
						 "accept_within_de00"), 0.3);
}

/*
 * unattended.accept_within_de00: a colour that misses its tolerance but lies
 * within the rule is accepted without a person, journaled and listed in
 * STATUS.md, and the run finishes; beyond the rule it waits for a person.
 */
TEST(a_colour_within_accept_within_is_accepted_and_listed_one_beyond_waits)
{
	const char *dir = test_tmp_path("accept-within");
	const char *far = test_tmp_path("accept-beyond");
	char machine[4200], *md;
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--machine", machine, NULL };
	int rc;

	CHECK(run_machine_edited("m-accept.json", tight_mixes_accepted, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 0, "a run whose colours all lie within accept_within_de00 exited %d, not 0", rc);
	CHECK(run_journal_count(dir, "\"event\":\"mix_accepted_within\"") >= 1);
	CHECK(run_journal_count(dir, "\"event\":\"mix_escalated\"") == 0);
	md = run_file_text(dir, "STATUS.md");
	CHECK(md != NULL);
	CHECK_MSG(md && strstr(md, "## Accepted without a person (unattended.accept_within_de00 50)"),
		  "STATUS.md does not list the accepted colours");
	CHECK(md && strstr(md, "| c1 | "));
	free(md);

	CHECK(run_machine_edited("m-beyond.json", tight_mixes_accepted_at_tolerance, machine,
			     sizeof(machine)) == 0);
	args[3] = far;
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "a run whose colours lie beyond accept_within_de00 exited %d, not 3", rc);
	CHECK(run_journal_count(far, "\"event\":\"mix_accepted_within\"") == 0);
	CHECK(run_journal_count(far, "\"event\":\"mix_escalated\"") >= 1);
	md = run_file_text(far, "STATUS.md");
	CHECK(md && !strstr(md, "Accepted without a person"));
	CHECK(md && strstr(md, "could not be mixed within"));
	free(md);
}

/* The verdicts of the accepted colour's batches (first pass): passed and all. */
struct accepted_batches {
	const char *subtask[8]; /* the accepted colour's paint subtasks, from plan.json */
	int n_subtasks;
	int passed, judged;
	double worst;
};

static void read_accepted_batches(const cJSON *line, void *ctx)
{
	struct accepted_batches *a = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const char *sub = cJSON_GetStringValue(cJSON_GetObjectItem(line, "subtask"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");

	if (!ev || !sub || strcmp(ev, "verified"))
		return;
	for (int i = 0; i < a->n_subtasks; i++)
		if (!strcmp(sub, a->subtask[i])) {
			double v = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "observed_vs_predicted_de00"));

			a->judged++;
			a->passed += !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "verdict")), "pass");
			a->worst = v > a->worst ? v : a->worst;
		}
}

/*
 * A mix accepted far from its target (the yellow well dry, white measured
 * 11.4 from a cream) is painted as what the camera measured in its cell: its
 * batches are judged against that paint and pass. Judged against the plan's
 * cream, the first batch failed 10.2 from its prediction three times and
 * braked the run as stuck.
 */
/*
 * The second judge would rightly stop this run at the dry well's first mix: its
 * cell measures far from what the mixing model predicts for what the run
 * believes went in (rule mix_model). The accepted mix's batches are under test here.
 */
static void no_review(cJSON *m)
{
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(m, "review"), "enabled", cJSON_CreateFalse());
}

TEST(an_accepted_mix_is_painted_and_judged_as_it_measured)
{
	const char *dir = test_tmp_path("accepted");
	char machine[4200];
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "60", "--quiet",
			       "--fault", "dry_well=w4", "--accept-nearest", "--machine", machine, NULL };
	struct accepted_batches a = { .worst = 0.0 };
	char names[8][16], colour[16] = "";
	cJSON *st, *plan;
	int rc;

	CHECK(run_machine_edited("m-no-review.json", no_review, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 0, "the run with an accepted mix exited %d, not 0", rc);
	st = state_of(dir);
	for (int c = 0; st && c < cJSON_GetArraySize(cJSON_GetObjectItem(st, "colours")); c++) {
		const cJSON *col = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "colours"), c);

		if (cJSON_IsTrue(cJSON_GetObjectItem(col, "accepted")) &&
		    cJSON_GetNumberValue(cJSON_GetObjectItem(col, "measured_de00")) > 6.0)
			snprintf(colour, sizeof(colour), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(col, "name")));
	}
	CHECK_MSG(colour[0], "no colour was accepted further from its target than a batch's tolerance");
	plan = run_json(dir, "plan.json");
	for (int i = 0; plan && colour[0] && i < cJSON_GetArraySize(cJSON_GetObjectItem(plan, "subtasks")); i++) {
		const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(plan, "subtasks"), i);

		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "type")), "paint") &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "colour")), colour) && a.n_subtasks < 8) {
			snprintf(names[a.n_subtasks], sizeof(names[0]), "s%d",
				 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "id")));
			a.subtask[a.n_subtasks] = names[a.n_subtasks];
			a.n_subtasks++;
		}
	}
	CHECK(test_journal_each(dir, read_accepted_batches, &a) == 0);
	fprintf(stderr, "accepted colour: %d batches, %d verdicts, %d passed, worst %.2f\n", a.n_subtasks,
		a.judged, a.passed, a.worst);
	CHECK_MSG(a.judged > 0, "no batch of the accepted colour was judged");
	CHECK_MSG(a.passed == a.judged, "%d of %d verdicts on the accepted colour's batches failed (worst %.2f)",
		  a.judged - a.passed, a.judged, a.worst);
	cJSON_Delete(plan);
	cJSON_Delete(st);
}

/* Every stir asks a person. */
static void stirs_ask(cJSON *m)
{
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "safety"), "operator_kinds"),
			     cJSON_CreateString("stir"));
}

/*
 * Runs the small target on the example machine changed by edit (mixes
 * reaching their tolerance or not, --accept-nearest), which must pause with
 * exit 3; returns STATUS.md (malloc'd, NULL when missing).
 */
static char *paused_run(const char *dir, const char *machine_name, void (*edit)(cJSON *m))
{
	char machine[4200], *md = NULL;
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", "--refill-ok", "--machine", machine, NULL };
	int rc;

	CHECK(run_machine_edited(machine_name, edit, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "a run on %s exited %d, not 3 (paused)", machine_name, rc);
	md = run_file_text(dir, "STATUS.md");
	CHECK(md != NULL);
	return md;
}

/*
 * A mix that cannot reach its tolerance waits for the operator; answered,
 * resume retries what was deferred. Killed during that retry and resumed
 * again, nothing done before is started over.
 */
TEST(a_kill_while_deferred_work_is_retried_starts_nothing_done_over)
{
	const char *dir = test_tmp_path("deferred-kill");
	char machine[4200];
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--machine", machine, NULL };
	const char *accept[] = { "resume", dir, "--quiet", "--accept-mix", "all", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	int rc, starts = 0;
	pid_t pid;

	CHECK(run_machine_edited("m-tight.json", tight_mixes, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "the run with a tolerance no mix reaches exited %d, not 3", rc);
	pid = start(accept);
	CHECK(pid > 0);
	/* Killed as the retry starts its second subtask. */
	starts = run_journal_count(dir, "\"event\":\"subtask_start\"");
	CHECK_MSG(kill_at(pid, dir, "\"event\":\"subtask_start\"", starts + 2) == 0,
		  "the resume ended first");
	rc = test_brushloop(rargs, NULL, NULL);
	CHECK_MSG(rc == 0, "resume after the kill exited %d", rc);
	CHECK(run_done_subtasks_worked_again(dir) == 0);
}

/* text with its first `from` replaced by `to` (malloc'd), or NULL when text has none. */
static char *replaced(const char *text, const char *from, const char *to)
{
	const char *p = strstr(text, from);
	size_t n = strlen(text) + strlen(to) + 1;
	char *out = p ? malloc(n) : NULL;

	if (out)
		snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
	return out;
}

/*
 * A state.json damaged so that it no longer fits its plan (a retry of
 * actions the subtask has not, more colours than planned), or emptied, is
 * refused on resume with exit 2 naming the key, never a crash.
 */
/*
 * A state.json its reader refuses (a well the machine lacks, a negative
 * coat, no state at all) is refused naming the key; one that reads but does
 * not fit the plan (a retry of an action it lacks, a subtask past its end)
 * differs from the state the journal saved at the line it names, and is
 * rebuilt from the journal (state_rebuilt), never trusted.
 */
TEST(a_damaged_state_is_refused_on_resume)
{
	static const char *const unfit[][2] = {
		{ "\"retry\":\t{\n\t\t\"active\":\tfalse,\n\t\t\"subtask\":\t0,\n\t\t\"attempt\":\t0,\n\t\t\"id0\":\t0,\n\t\t\"actions\":\t[]",
		  "\"retry\":\t{\n\t\t\"active\":\ttrue,\n\t\t\"subtask\":\t1,\n\t\t\"attempt\":\t1,\n\t\t\"id0\":\t0,\n\t\t\"actions\":\t[9999999]" },
		{ "\"next\":\t", "\"next\":\t9000" },
	};
	static const char *const damage[][3] = {
		{ "\"well\":\t\"w2\"", "\"well\":\t\"w9\"", "wells[1].well" },
		{ "\"coat\":\t", "\"coat\":\t-", "colours[0].coat" },
	};
	const char *dir = test_tmp_path("damaged");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--fault", "power_loss_after=40", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char path[4200], *text = NULL, *err = NULL;

	CHECK(test_brushloop(args, NULL, NULL) == 86);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	CHECK(fs_read_file(path, 1 << 26, &text, NULL, NULL) == 0);
	for (size_t i = 0; text && i < sizeof(unfit) / sizeof(unfit[0]); i++) {
		const char *on[] = { "resume", dir, "--quiet", "--fault", i ? "power_loss_after=60" : "power_loss_after=50", NULL };
		char *bad = replaced(text, unfit[i][0], unfit[i][1]);

		CHECK_MSG(bad && fs_write_atomic(path, bad, strlen(bad), NULL) == 0, "unfit case %zu", i);
		free(bad);
		CHECK_MSG(test_brushloop(on, NULL, NULL) == 86, "unfit case %zu: not resumed", i);
		CHECK(run_journal_count(dir, "\"why\":\"state.json differs from the state the journal saved\"") == (int)i + 1);
		free(text);
		text = NULL;
		CHECK(fs_read_file(path, 1 << 26, &text, NULL, NULL) == 0);
	}
	for (size_t i = 0; text && i < sizeof(damage) / sizeof(damage[0]); i++) {
		char *bad = replaced(text, damage[i][0], damage[i][1]);

		CHECK_MSG(bad && fs_write_atomic(path, bad, strlen(bad), NULL) == 0, "case %zu: no %s",
			  i, damage[i][2]);
		free(bad);
		CHECK_MSG(test_brushloop(rargs, NULL, &err) == 2, "case %zu (%s) not refused", i,
			  damage[i][2]);
		CHECK_STR_CONTAINS(err, damage[i][2]);
		free(err);
		err = NULL;
	}
	{
		CHECK(fs_write_atomic(path, "{}", 2, NULL) == 0);
		CHECK(test_brushloop(rargs, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "state.json");
		free(err);
	}
	free(text);
}

/*
 * The machine file says every stir asks a person: the first mix's stir is
 * filed, the run pauses with exit 3, and STATUS.md names the request and
 * how to answer it (a request the mixing loop made, not only a stroke's);
 * once answered, it is no longer listed.
 */
TEST(a_state_from_before_coats_were_learnt_resumes)
{
	const char *dir = test_tmp_path("nocoat");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", "--fault", "power_loss_after=60", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char path[4200], *text = NULL, *out = NULL;
	cJSON *st, *c;
	int stripped = 0;

	CHECK(test_brushloop(args, NULL, NULL) == 86);
	st = state_of(dir);
	CHECK(st != NULL);
	/* As an older brushloop wrote it: version 1, no coat in any colour. */
	cJSON_ReplaceItemInObject(st, "version", cJSON_CreateNumber(1));
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(st, "colours")) {
		stripped += cJSON_GetObjectItem(c, "coat") != NULL;
		cJSON_DeleteItemFromObject(c, "coat");
		cJSON_DeleteItemFromObject(c, "coat_weight");
	}
	CHECK(stripped > 0);
	text = cJSON_Print(st);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	cJSON_Delete(st);
	CHECK(text && fs_write_atomic(path, text, strlen(text), NULL) == 0);
	free(text);
	CHECK(test_brushloop(rargs, &out, NULL) == 0);
	free(out);
	st = test_status(dir, NULL);
	CHECK(st && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "finished"));
	cJSON_Delete(st);
}

TEST(a_mix_action_that_waits_for_the_operator_is_listed)
{
	const char *dir = test_tmp_path("stir-asks");
	char path[4200], *md = paused_run(dir, "m-stir.json", stirs_ask);
	int rc;

	snprintf(path, sizeof(path), "%s/STATUS.md", dir);
	CHECK_STR_CONTAINS(md, "## Waiting for the operator\n\n- request r000001 ");
	CHECK_STR_CONTAINS(md, "brushloop approve");
	CHECK(md && !strstr(md, "Nothing."));
	free(md);
	md = NULL;
	/* Answered and resumed: the next stir asks; only that one is listed as waiting. */
	{
		const char *approve[] = { "approve", dir, "r000001", NULL };
		const char *resume[] = { "resume", dir, "--quiet", NULL };

		CHECK(test_brushloop(approve, NULL, NULL) == 0);
		rc = test_brushloop(resume, NULL, NULL);
		CHECK_MSG(rc == 3, "resumed after the answer, the run exited %d, not 3", rc);
	}
	CHECK(fs_read_file(path, 1 << 20, &md, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(md, "## Waiting for the operator\n\n- request r000002 ");
	CHECK_MSG(md && !strstr(md, "request r000001"), "STATUS.md still lists the answered r000001");
	free(md);
}

/* White in a small well: a 24-stroke run draws more than it holds. */
static void small_white_well(cJSON *m)
{
	cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "zones"), "wells"), 0);

	cJSON_ReplaceItemInObjectCaseSensitive(w, "capacity_ml", cJSON_CreateNumber(1.3));
}

/*
 * Wells that cannot supply the plan refuse the run before anything moves or
 * is written, naming each well and the ml it lacks; --refill-ok starts it.
 */
TEST(a_run_its_wells_cannot_supply_is_refused_before_it_starts)
{
	const char *dir = test_tmp_path("supply");
	char machine[4200], *err = NULL;
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--machine", machine, NULL };
	struct stat sb;
	int rc;

	CHECK(run_machine_edited("m-supply.json", small_white_well, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, &err);
	CHECK_MSG(rc == 2, "a run its white well cannot supply exited %d, not 2", rc);
	CHECK_STR_CONTAINS(err, "the wells cannot supply the plan");
	CHECK_STR_CONTAINS(err, "well w1 (white) holds 1.3 ml");
	CHECK_STR_CONTAINS(err, "ml to add");
	CHECK_STR_CONTAINS(err, "--refill-ok");
	CHECK_MSG(!strstr(err, "well w2 "), "a well that suffices is named: %s", err);
	free(err);
	CHECK_MSG(stat(dir, &sb) != 0, "the refused run left %s behind", dir);
}

/*
 * The run counts the paint in each well and pauses before a mix would draw
 * one below its reserve (a pump draws air from an empty well, and only the
 * mix's colour would show it, too late); a person refills it and says so.
 */
TEST(a_well_that_runs_low_pauses_for_a_refill)
{
	const char *dir = test_tmp_path("refill");
	char *md = paused_run(dir, "m-small-white.json", small_white_well), *err = NULL;
	const char *again[] = { "resume", dir, "--quiet", NULL };
	const char *bad[] = { "resume", dir, "--quiet", "--refilled", "w1,w99", NULL };
	const char *refilled[] = { "resume", dir, "--quiet", "--refilled", "w1", NULL };
	cJSON *st;
	int rc, n = 0;

	CHECK_STR_CONTAINS(md, "- well w1 (white) is nearly empty");
	CHECK_STR_CONTAINS(md, "--refilled w1");
	free(md);
	st = test_status(dir, NULL);
	{
		const cJSON *w1 = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "wells"), 0);
		const cJSON *left = cJSON_GetObjectItem(w1, "left_ml");

		/* Never drawn below its reserve (half a millilitre here). */
		CHECK_MSG(cJSON_IsNumber(left) && left->valuedouble >= 0.5 - 1e-9, "w1 left %g ml",
			  cJSON_IsNumber(left) ? left->valuedouble : -1.0);
	}
	cJSON_Delete(st);
	/* Not refilled: still waiting. A well the machine does not have: refused, nothing changed. */
	CHECK(test_brushloop(again, NULL, NULL) == 3);
	CHECK(test_brushloop(bad, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "no well 'w99'");
	free(err);
	CHECK(run_journal_count(dir, "\"event\":\"refilled\"") == 0);
	rc = test_brushloop(refilled, NULL, NULL);
	CHECK_MSG(rc == 0, "resumed after the refill, the run exited %d", rc);
	CHECK(run_journal_count(dir, "\"event\":\"refilled\"") == 1);
	CHECK(dispenses_repeated(dir, &n) == 0 && n > 0);
	st = test_status(dir, NULL);
	CHECK(st && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "finished"));
	cJSON_Delete(st);
}

/* What the journal says of top-ups: each cell's verified units, and whether each top-up kept them. */
struct topups {
	char cell[16];          /* the cell the last mix_cell named */
	int topping_up;         /* that mix_cell said the cell is topped up */
	char verified[32][16];  /* cells holding a verified mix */
	cJSON *units[32];       /* their units when verified */
	int n_verified;
	int topups;             /* topping_up: a batch's colour needed more paint */
	int seen, kept;         /* dispenses into a verified cell, and those in its verified ratio */
	int measure_next;       /* the next mix_measured is the first top-up's */
	double first_de00, tol_de00;
};

/* Whether units b hold the same paints as units a in the same ratio. */
static int same_ratio(const cJSON *a, const cJSON *b)
{
	double ta = 0, tb = 0;
	const cJSON *it;

	if (!a || !b || cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
		return 0;
	cJSON_ArrayForEach(it, a)
		ta += it->valuedouble;
	cJSON_ArrayForEach(it, b) {
		if (!cJSON_GetObjectItemCaseSensitive(a, it->string))
			return 0;
		tb += it->valuedouble;
	}
	if (ta <= 0 || tb <= 0)
		return 0;
	cJSON_ArrayForEach(it, b)
		if (fabs(it->valuedouble * ta -
			 cJSON_GetObjectItemCaseSensitive(a, it->string)->valuedouble * tb) > 1e-9)
			return 0;
	return 1;
}

static void read_topups(const cJSON *line, void *ctx)
{
	struct topups *t = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");

	if (!ev || !d)
		return;
	if (!strcmp(ev, "topping_up")) {
		t->measure_next = ++t->topups == 1;
	} else if (!strcmp(ev, "mix_cell")) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(d, "why"));
		const char *cell = cJSON_GetStringValue(cJSON_GetObjectItem(d, "cell"));
		size_t n = cell ? strnlen(cell, sizeof(t->cell) - 1) : 0;

		/* Copies by length: snprintf between members of *t trips -Wrestrict. */
		memcpy(t->cell, cell ? cell : "", n);
		t->cell[n] = '\0';
		t->topping_up = why && strstr(why, "topped up");
	} else if (!strcmp(ev, "mix_verified") && t->n_verified < 32) {
		memcpy(t->verified[t->n_verified], t->cell, sizeof(t->cell));
		t->units[t->n_verified++] = cJSON_Duplicate(cJSON_GetObjectItem(d, "cell"), 1);
	} else if (!strcmp(ev, "dispense_planned") && t->topping_up) {
		/* The first dispense into a topped-up cell: the top-up itself. */
		t->topping_up = 0;
		for (int i = t->n_verified - 1; i >= 0; i--)
			if (!strcmp(t->verified[i], t->cell)) {
				t->seen++;
				t->kept += same_ratio(t->units[i], cJSON_GetObjectItem(d, "units"));
				break;
			}
	} else if (!strcmp(ev, "mix_measured") && t->measure_next) {
		t->measure_next = 0;
		t->first_de00 = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "de00"));
		t->tol_de00 = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "tolerance_de00"));
	}
}

/*
 * A pale tint (29 white to 1 blue, verified) topped up as its strokes use it
 * keeps its colour: whatever goes into its verified cell is the verified
 * ratio in whole units, or it is mixed afresh in a clean cell when one ratio
 * does not fit (a 14:1 of its own for the small volume, as before, measured
 * 2.9 and then worse), and the first top-up measures within tolerance.
 */
TEST(a_verified_tint_topped_up_keeps_its_colour)
{
	const char *dir = test_tmp_path("tint-topup");
	char tint[4096];
	const char *args[] = { "run", tint, "--out", dir, "--max-strokes", "60", "--quiet", NULL };
	struct topups t = { 0 };
	int rc;

	snprintf(tint, sizeof(tint), "%s/tests/engine/data/pale-tint.png", getenv("BRUSHLOOP_SRC"));
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 0, "the pale tint's run exited %d", rc);
	CHECK(test_journal_each(dir, read_topups, &t) == 0);
	CHECK_MSG(t.topups > 0, "no colour was topped up: the test paints too little");
	CHECK_MSG(t.kept == t.seen, "%d of %d top-ups changed the verified ratio", t.seen - t.kept,
		  t.seen);
	CHECK_MSG(t.tol_de00 > 0 && t.first_de00 <= t.tol_de00,
		  "the first top-up measured %.2f against a tolerance of %.2f", t.first_de00, t.tol_de00);
	for (int i = 0; i < t.n_verified; i++)
		cJSON_Delete(t.units[i]);
}

/* Two mixing cells: the pale tint's two colours take both, and no clean cell is left for a top-up. */
static void two_cells(cJSON *m)
{
	cJSON *cells = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "zones"), "mixing_cells");

	while (cJSON_GetArraySize(cells) > 2)
		cJSON_DeleteItemFromArray(cells, 2);
}

static void count_no_clean_cell(const cJSON *line, void *ctx)
{
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(line, "data"), "why"));
	const cJSON *topup = cJSON_GetObjectItem(line, "data");

	if (ev && !strcmp(ev, "mix_cell") && why && strstr(why, "no clean cell is left"))
		(*(int *)ctx)++;
	if (ev && !strcmp(ev, "topup_same_ratio") && cJSON_IsTrue(cJSON_GetObjectItem(topup, "scaled_to_room")))
		(*(int *)ctx)++;
	if (ev && !strcmp(ev, "topup_not_possible"))
		(*(int *)ctx)++;
}

/*
 * With no clean cell left, a top-up goes on in the colour's own cell and
 * never overfills it: its ratio scaled to the room the cell has
 * (mixing.cell_max_ml), or nothing (the batch paints with what the cell
 * holds), or over the film a brush leaves a mix that fits the room, the loop
 * then only adding to it. It once mixed a whole recipe on the paint left
 * (4.5 ml in a 3 ml cell), and the state it saved could not be read back to
 * resume.
 */
TEST(with_no_clean_cell_left_a_top_up_never_overfills_its_cell)
{
	const char *dir = test_tmp_path("two-cells");
	char tint[4096], machine[4096];
	const char *args[] = { "run", tint, "--machine", machine, "--out", dir, "--max-strokes", "60", "--quiet",
			       NULL };
	int rc, paths = 0;

	snprintf(tint, sizeof(tint), "%s/tests/engine/data/pale-tint.png", getenv("BRUSHLOOP_SRC"));
	CHECK(run_machine_edited("m-two-cells.json", two_cells, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 0, "the two-cell run exited %d", rc);
	CHECK(test_journal_each(dir, count_no_clean_cell, &paths) == 0);
	CHECK_MSG(paths > 0, "no top-up found its cell without a clean one: the test paints too little");
	run_check_cells_within_capacity(dir);
	{
		/* The state as saved reads back: a resume could start from it. */
		cJSON *status = test_status(dir, &rc);

		CHECK_MSG(rc == 0, "status of the two-cell run exited %d", rc);
		cJSON_Delete(status);
	}
}

/* What the journal shows after the operator substituted a colour. */
struct substituted {
	int seen;                   /* mix_substituted lines */
	double planned[3], lab[3];  /* the colour as planned, and as the operator named it */
	int aimed_at_plan;          /* mixes measured after it against the planned colour */
	int aimed_at_lab, passed;   /* ... against the substitute, and within tolerance */
};

static int lab_is(const cJSON *a, const double v[3])
{
	for (int i = 0; i < 3; i++)
		if (!cJSON_IsNumber(cJSON_GetArrayItem(a, i)) ||
		    fabs(cJSON_GetArrayItem(a, i)->valuedouble - v[i]) > 1e-6)
			return 0;
	return cJSON_GetArraySize(a) == 3;
}

static void read_substituted(const cJSON *line, void *ctx)
{
	struct substituted *s = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");

	if (!ev)
		return;
	if (!strcmp(ev, "mix_substituted")) {
		s->seen++;
		for (int i = 0; i < 3; i++) {
			s->planned[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "planned_lab"), i)->valuedouble;
			s->lab[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "lab"), i)->valuedouble;
		}
	} else if (s->seen && !strcmp(ev, "mix_measured")) {
		const cJSON *t = cJSON_GetObjectItem(d, "target_lab");

		s->aimed_at_plan += lab_is(t, s->planned);
		if (lab_is(t, s->lab)) {
			s->aimed_at_lab++;
			s->passed += !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "verdict")), "pass");
		}
	}
}

/*
 * A colour the loop cannot mix (its yellow well ran dry: the pump drew air)
 * waits for the operator, who may name another colour to mix in its place:
 * it is mixed in a clean cell, verified, painted, and every later mix of it
 * (the corrections' top-ups too) aims at the substitute. A mistyped answer is
 * refused with exit 2 before anything moves or is written.
 */
TEST(an_operator_substitutes_a_colour_the_loop_cannot_mix)
{
	const char *dir = test_tmp_path("substitute");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "60", "--quiet",
			       "--fault", "dry_well=w4", NULL };
	char spec[64], other[16], name[32], *md, *state0, *journal0, *err = NULL;
	struct substituted sub = { 0 };
	const char *waiting = NULL;
	cJSON *st, *plan_st = NULL;
	double want[3] = { 0 };
	char cell[64] = "all";
	int rc, k = -1;

	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "the run with a dry well exited %d, not 3 (waiting)", rc);
	st = state_of(dir);
	CHECK(st != NULL);
	for (int c = 0; st && c < cJSON_GetArraySize(cJSON_GetObjectItem(st, "colours")); c++) {
		const cJSON *col = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "colours"), c);

		if (cJSON_IsTrue(cJSON_GetObjectItem(col, "escalated")) && !waiting) {
			snprintf(name, sizeof(name), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(col, "name")));
			snprintf(cell, sizeof(cell), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(col, "cell")) ?: "");
			waiting = name;
			k = c;
		}
	}
	CHECK_MSG(waiting != NULL, "no colour waits for the operator");
	if (!waiting) {
		cJSON_Delete(st);
		return;
	}
	md = run_file_text(dir, "STATUS.md");
	snprintf(spec, sizeof(spec), "--substitute %s=lab:L,a,b", waiting);
	CHECK_STR_CONTAINS(md, spec);
	free(md);
	/* In its place: the plan's first colour (its lightest, white on this target), or its second. */
	snprintf(other, sizeof(other), "%s", k == 0 ? "c2" : "c1");
	{
		const cJSON *cols;

		plan_st = run_json(dir, "plan.json");
		cols = cJSON_GetObjectItem(plan_st, "colours");
		for (int c = 0; c < cJSON_GetArraySize(cols); c++)
			if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cols, c), "name")),
				    other))
				for (int i = 0; i < 3; i++)
					want[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cols, c),
											 "lab"), i)->valuedouble;
	}
	CHECK(want[0] > 0.0);

	/* Mistyped answers: refused, naming what is wrong; nothing moves, nothing is written. */
	state0 = run_file_text(dir, "state.json");
	journal0 = run_file_text(dir, "journal.jsonl");
	{
		static const char *const bad[][2] = {
			{ "c99=c1", "no colour 'c99'" },
			{ "=c1", "expected COLOUR=NEW" },
			{ "WAIT=lab:nan,0,0", "not finite" },
			{ "WAIT=lab:5,0,0", "beyond the palette's reach" },
			{ "WAIT=WAIT", "in place of itself" },
			{ "OTHER=lab:50,0,0", "does not wait for the operator" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char a[128], *p;
			const char *rargs[] = { "resume", dir, "--quiet", "--substitute", a, NULL };

			snprintf(a, sizeof(a), "%s", bad[i][0]);
			/* WAIT and OTHER stand for the waiting colour and one that does not wait. */
			while ((p = strstr(a, "WAIT")) || (p = strstr(a, "OTHER"))) {
				char rest[128];
				int n = *p == 'W' ? 4 : 5;

				snprintf(rest, sizeof(rest), "%s", p + n);
				snprintf(p, sizeof(a) - (size_t)(p - a), "%s%s", *p == 'W' ? waiting : other, rest);
			}
			rc = test_brushloop(rargs, NULL, &err);
			CHECK_MSG(rc == 2, "--substitute %s exited %d, not 2", a, rc);
			CHECK_STR_CONTAINS(err, bad[i][1]);
			free(err);
			err = NULL;
		}
	}
	{
		char both[64];
		const char *unknown[] = { "resume", dir, "--quiet", "--accept-mix", "c99", NULL };
		const char *twice[] = { "resume", dir, "--quiet", "--accept-mix", "all", "--substitute", both, NULL };

		snprintf(both, sizeof(both), "%s=%s", waiting, other);
		CHECK(test_brushloop(unknown, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "no colour 'c99'");
		free(err);
		CHECK(test_brushloop(twice, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "give it one answer");
		free(err);
		err = NULL;
	}
	{
		char *s1 = run_file_text(dir, "state.json"), *j1 = run_file_text(dir, "journal.jsonl");

		CHECK_MSG(s1 && state0 && !strcmp(s1, state0), "a refused answer changed state.json");
		CHECK_MSG(j1 && journal0 && !strcmp(j1, journal0), "a refused answer wrote to the journal");
		free(s1);
		free(j1);
	}
	free(state0);
	free(journal0);

	/*
	 * The answer: the waiting colour mixed as the other one, the dry well
	 * refilled, and the waiting colour's cell emptied and cleaned (the dry
	 * well's failed mixes used up the clean cells: a substitute is never
	 * mixed over what a used cell holds). Killed after two more mixes are
	 * measured, the run is resumed with no answer: the substitute is in
	 * state.json and holds.
	 */
	{
		const char *rargs[] = { "resume", dir, "--quiet", "--substitute", spec, "--refilled", "w4",
					"--emptied", cell, NULL };
		const char *again[] = { "resume", dir, "--quiet", NULL };
		int measured = run_journal_count(dir, "\"event\":\"mix_measured\"");
		pid_t pid;

		snprintf(spec, sizeof(spec), "%s=%s", waiting, other);
		pid = start(rargs);
		CHECK(pid > 0);
		CHECK_MSG(kill_at(pid, dir, "\"event\":\"mix_measured\"", measured + 2) == 0,
			  "resume --substitute %s ended before it was killed", spec);
		rc = test_brushloop(again, NULL, NULL);
		if (rc == 3) {
			/*
			 * Another colour may wait too: the dry well's failed mixes
			 * used up the clean cells, and a cell's mix that adding cannot
			 * mend is a person's to decide. The operator takes the nearest.
			 */
			const char *accept[] = { "resume", dir, "--quiet", "--accept-mix", "all", NULL };

			rc = test_brushloop(accept, NULL, NULL);
		}
		CHECK_MSG(rc == 0, "resumed after the kill, the run exited %d", rc);
	}
	CHECK(test_journal_each(dir, read_substituted, &sub) == 0);
	fprintf(stderr, "%s substituted by %s: %d mixes measured against the substitute (%d within "
		"tolerance), %d against the planned colour\n", waiting, other, sub.aimed_at_lab,
		sub.passed, sub.aimed_at_plan);
	CHECK(sub.seen == 1);
	CHECK(sub.lab[0] == want[0] && sub.lab[1] == want[1] && sub.lab[2] == want[2]);
	CHECK_MSG(sub.passed >= 1, "no mix of the substitute was verified");
	CHECK_MSG(sub.aimed_at_plan == 0, "%d mixes still aimed at the planned colour", sub.aimed_at_plan);
	cJSON_Delete(st);
	st = test_status(dir, NULL);
	CHECK(st && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "finished"));
	{
		const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "mixes"), k);

		CHECK(m && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(m, "colour")), waiting));
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "verified")));
		CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(m, "escalated")));
		CHECK(lab_is(cJSON_GetObjectItem(m, "substitute"), want));
	}
	CHECK(dispenses_repeated(dir, &rc) == 0);
	cJSON_Delete(st);
	cJSON_Delete(plan_st);
}

static double cost_of(const cJSON *e, const char *which, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, which), key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1.0;
}

/*
 * Before a run: every category of cost expected and bounded (the bound holds
 * retries, so it is never below what is expected); an open-loop run plans
 * once and looks only at its checkpoints.
 */
TEST(estimate_gives_every_cost_and_a_bound_above_it)
{
	static const char *const keys[] = { "arm_s", "verifications", "planner_calls", "paint_ml" };
	const char *closed[] = { "estimate", test_src_path(TEST_TARGET), "--max-strokes", STROKES, "--json", NULL };
	const char *open[] = { "estimate", test_src_path(TEST_TARGET), "--max-strokes", STROKES, "--open-loop", "--json", NULL };
	char *out = NULL;
	cJSON *e, *eo;

	CHECK(test_brushloop(closed, &out, NULL) == 0);
	e = out ? cJSON_Parse(out) : NULL;
	free(out);
	out = NULL;
	CHECK(test_brushloop(open, &out, NULL) == 0);
	eo = out ? cJSON_Parse(out) : NULL;
	free(out);
	CHECK(e != NULL && eo != NULL);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		CHECK_MSG(cost_of(e, "expected", keys[k]) > 0, "expected %s %g", keys[k],
			  cost_of(e, "expected", keys[k]));
		CHECK_MSG(cost_of(e, "upper_bound", keys[k]) >= cost_of(e, "expected", keys[k]),
			  "%s: bound %g below expected %g", keys[k], cost_of(e, "upper_bound", keys[k]),
			  cost_of(e, "expected", keys[k]));
	}
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "expected"), "priced"),
				  "total")->valuedouble > 0);
	CHECK(cost_of(eo, "expected", "planner_calls") == 1);
	CHECK(cost_of(e, "expected", "planner_calls") > 1);
	CHECK(cost_of(eo, "expected", "verifications") < cost_of(e, "expected", "verifications"));
	/* The example machine's 30 ml wells hold what a short run draws. */
	{
		const cJSON *w;

		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(e, "wells")) > 0);
		cJSON_ArrayForEach(w, cJSON_GetObjectItem(e, "wells"))
			CHECK(cJSON_GetObjectItem(w, "refills")->valuedouble == 0);
	}
	cJSON_Delete(e);
	cJSON_Delete(eo);
}

/*
 * The estimate prices the plan a run paints: it plans over the machine's
 * canvas as its camera reads it (zones.canvas.lab), the run over the canvas
 * it observes; on the example machine both plans have the same colours,
 * mixes and batches. (Over the planner's default canvas, L* 95, flat-shapes
 * at 300 strokes was priced at 6 colours and 11 mixes where the run mixed 7 and 14.)
 */
TEST(the_estimate_prices_the_plan_a_run_paints)
{
	const char *dir = test_tmp_path("estimate-plan");
	const char *est[] = { "estimate", test_src_path(TEST_TARGET), "--max-strokes", "60", "--json", NULL };
	const char *run[] = { "run", test_src_path(TEST_TARGET), "--max-strokes", "60", "--open-loop", "--quiet", "--out", dir,
			      NULL };
	char *out = NULL;
	cJSON *e, *p;
	int n[3] = { 0 };

	CHECK(test_brushloop(est, &out, NULL) == 0);
	e = out ? cJSON_Parse(out) : NULL;
	free(out);
	CHECK(test_brushloop(run, NULL, NULL) == 0);
	p = run_json(dir, "plan.json");
	CHECK(e != NULL && p != NULL);
	if (!e || !p)
		goto out;
	for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(p, "subtasks")); i++) {
		const char *t = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "subtasks"), i), "type"));

		n[0] += t && !strcmp(t, "mix");
		n[1] += t && !strcmp(t, "paint");
	}
	n[2] = cJSON_GetArraySize(cJSON_GetObjectItem(p, "colours"));
	fprintf(stderr, "run's plan: %d colours, %d mixes, %d batches; estimate's: %g, %g, %g\n", n[2],
		n[0], n[1], cJSON_GetObjectItem(e, "colours")->valuedouble,
		cJSON_GetObjectItem(e, "mixes")->valuedouble,
		cJSON_GetObjectItem(e, "paint_batches")->valuedouble);
	CHECK(cJSON_GetObjectItem(e, "colours")->valuedouble == n[2]);
	CHECK(cJSON_GetObjectItem(e, "mixes")->valuedouble == n[0]);
	CHECK(cJSON_GetObjectItem(e, "paint_batches")->valuedouble == n[1]);
	/*
	 * The run kept the estimate its supply check priced for the report: it is
	 * what `estimate` prices from the run directory's own copies, as the
	 * report would price them without it.
	 */
	{
		char t[4200], m[4200], pal[4200], *again = NULL;
		const char *args[] = { "estimate", t, "--machine", m, "--palette", pal, "--max-strokes", "60",
				       "--open-loop", "--json", NULL };
		cJSON *kept = run_json(dir, "report/estimate.json"), *fresh;

		snprintf(t, sizeof(t), "%s/target.png", dir);
		snprintf(m, sizeof(m), "%s/machine.json", dir);
		snprintf(pal, sizeof(pal), "%s/palette.json", dir);
		CHECK(test_brushloop(args, &again, NULL) == 0);
		fresh = again ? cJSON_Parse(again) : NULL;
		CHECK_MSG(kept != NULL, "the run kept no report/estimate.json");
		CHECK_MSG(kept && fresh && cJSON_Compare(kept, fresh, 1), "the kept estimate is not the run's own: %s",
			  again ? again : "");
		free(again);
		cJSON_Delete(kept);
		cJSON_Delete(fresh);
	}
out:
	cJSON_Delete(e);
	cJSON_Delete(p);
}

/* A well too small for what the plan draws is named before the run, with its refills. */
TEST(estimate_names_the_wells_a_run_must_refill)
{
	char machine[4200], *out = NULL;
	const char *args[] = { "estimate", test_src_path(TEST_TARGET), "--max-strokes", STROKES, "--machine", machine, NULL };

	CHECK(run_machine_edited("m-small-white-est.json", small_white_well, machine, sizeof(machine)) == 0);
	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "refill: w1 (white) expected ");
	free(out);
}

TEST(bad_input_is_refused_with_exit_2)
{
	const char *dir = test_tmp_path("bad");
	char *err = NULL;

	{
		const char *args[] = { "run", "/nonexistent.png", "--out", dir, NULL };

		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "/nonexistent.png");
		free(err);
	}
	{
		const char *args[] = { "run", NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 2);
	}
	{
		const char *args[] = { "estimate", "/nonexistent.png", NULL };

		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "/nonexistent.png");
		free(err);
	}
	{
		/* --refilled answers a paused run; a new run has nothing to answer. */
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--refilled", "w1", NULL };

		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "--refilled");
		free(err);
	}
	{
		const char *args[] = { "status", test_tmpdir(), NULL };

		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "not a run directory");
		free(err);
	}
	{
		/* A run directory with files in it is somebody's run: never painted over. */
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", test_tmpdir(), "--quiet", NULL };

		test_write_file("something", "x");
		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "not empty");
		free(err);
	}
	{
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--max-strokes", "0", NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 2);
	}
	{
		/* A target that does not decode: refused naming it, and nothing is written. */
		char bad[4200];
		const char *out = test_tmp_path("bad-target");
		const char *args[] = { "run", bad, "--out", out, "--quiet", NULL };
		struct stat sb;

		snprintf(bad, sizeof(bad), "%s/cut.png", test_tmpdir());
		test_write_file("cut.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "cut.png");
		free(err);
		CHECK_MSG(stat(out, &sb) != 0, "%s was created for a target that does not decode", out);
	}
	{
		/*
		 * The example machine copied elsewhere: its calibration's relative
		 * paths name files that are not there. Refused naming the profile,
		 * nothing written, so the same command works once it is fixed.
		 */
		char machine[4200], p[4200], *text = NULL;
		const char *out = test_tmp_path("no-profile");
		const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", out, "--quiet", "--machine", machine, NULL };
		struct stat sb;

		snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
		CHECK(fs_read_file(p, 1 << 20, &text, NULL, NULL) == 0);
		test_write_file("m-moved.json", text);
		free(text);
		snprintf(machine, sizeof(machine), "%s/m-moved.json", test_tmpdir());
		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "sim-camera.icc");
		free(err);
		CHECK_MSG(stat(out, &sb) != 0, "%s was created for a machine whose profile is missing", out);
	}
}

/*
 * Two resumes of one stopped run started at once: one drives it, the other
 * is refused with exit 2 naming the first's pid. No dispense runs twice and
 * the journal holds one resume.
 */
TEST(two_resumes_at_once_one_runs)
{
	const char *dir = test_tmp_path("two-resumes");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", "--fault", "power_loss_after=40", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char errs[2][4200], want[64], *text;
	pid_t pid[2];
	int rc[2], n = 0, winner;

	CHECK(test_brushloop(args, NULL, NULL) == 86);
	for (int k = 0; k < 2; k++) {
		snprintf(errs[k], sizeof(errs[k]), "%s/resume-%d.err", test_tmpdir(), k);
		pid[k] = start_err(rargs, errs[k]);
		CHECK(pid[k] > 0);
	}
	for (int k = 0; k < 2; k++)
		rc[k] = wait_exit(pid[k]);
	CHECK_MSG((rc[0] == 0 && rc[1] == 2) || (rc[0] == 2 && rc[1] == 0),
		  "two resumes at once exited %d and %d, not 0 and 2", rc[0], rc[1]);
	winner = rc[0] == 0 ? 0 : 1;
	snprintf(want, sizeof(want), "in use by process %ld", (long)pid[winner]);
	CHECK(fs_read_file(errs[1 - winner], 1 << 20, &text, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(text, want);
	free(text);
	CHECK_MSG(dispenses_repeated(dir, &n) == 0, "a dispense ran twice with two resumes");
	CHECK(n > 0);
	CHECK_MSG(run_journal_count(dir, "\"event\":\"resume\"") == 1, "%d resumes journaled",
		  run_journal_count(dir, "\"event\":\"resume\""));
	CHECK(run_done_subtasks_worked_again(dir) == 0);
}

/*
 * Beside a run that is still going (and one stopped with SIGSTOP), resume
 * and sim exec on its directory are refused with exit 2 naming its pid;
 * status keeps working. The run then finishes with no dispense twice.
 */
TEST(a_running_run_owns_its_directory)
{
	const char *dir = test_tmp_path("owned");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	const char *sargs[] = { "status", dir, "--json", NULL };
	char actions[4200], want[64], *err = NULL;
	const char *xargs[] = { "sim", "exec", actions, "--run", dir, NULL };
	pid_t pid = start(args);
	int n = 0;

	CHECK(pid > 0);
	snprintf(actions, sizeof(actions), "%s/examples/actions/every-kind.json", getenv("BRUSHLOOP_SRC"));
	snprintf(want, sizeof(want), "in use by process %ld", (long)pid);
	while (run_journal_lines(dir) < 40 && waitpid(pid, NULL, WNOHANG) == 0)
		usleep(2000);
	for (int stopped = 0; stopped < 2; stopped++) {
		if (stopped)
			kill(pid, SIGSTOP);
		CHECK_MSG(test_brushloop(rargs, NULL, &err) == 2, "a resume beside a %s run was not "
			  "refused", stopped ? "stopped" : "running");
		CHECK_STR_CONTAINS(err, want);
		free(err);
		CHECK_MSG(test_brushloop(xargs, NULL, &err) == 2, "sim exec --run beside a %s run was "
			  "not refused", stopped ? "stopped" : "running");
		CHECK_STR_CONTAINS(err, want);
		free(err);
		err = NULL;
		CHECK(test_brushloop(sargs, NULL, NULL) == 0);
	}
	kill(pid, SIGCONT);
	CHECK_MSG(wait_exit(pid) == 0, "the run did not finish after the refused resumes");
	CHECK(dispenses_repeated(dir, &n) == 0);
	CHECK(run_journal_count(dir, "\"event\":\"resume\"") == 0);
}

/* The run's state.json says state, and STATUS.md says it too. */
static void check_state(const char *dir, const char *state, const char *why)
{
	cJSON *st = state_of(dir);
	const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(st, "state"));
	char *md = run_file_text(dir, "STATUS.md"), want[64];

	CHECK_MSG(got && !strcmp(got, state), "%s: state.json says '%s', not '%s'", why,
		  got ? got : "(none)", state);
	snprintf(want, sizeof(want), "**state**: %s", state);
	CHECK_STR_CONTAINS(md, want);
	free(md);
	cJSON_Delete(st);
}

/* SIGHUP (a closed terminal or ssh session) is a clean pause like SIGTERM; resume finishes. */
TEST(sighup_pauses_the_run_cleanly)
{
	const char *dir = test_tmp_path("sighup");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	pid_t pid = start(args);
	int rc, n = 0;

	CHECK(pid > 0);
	while (run_journal_lines(dir) < 60 && waitpid(pid, NULL, WNOHANG) == 0)
		usleep(2000);
	kill(pid, SIGHUP);
	rc = wait_exit(pid);
	CHECK_MSG(rc == 3, "a run sent SIGHUP exited %d, not 3 (paused)", rc);
	check_state(dir, "paused", "after SIGHUP");
	CHECK(test_brushloop(rargs, NULL, NULL) == 0);
	CHECK(dispenses_repeated(dir, &n) == 0);
}

/*
 * Under a file-size limit of 4 MB (the simulator's world passes it part
 * way through the run): SIGXFSZ does not kill the run; the write fails with
 * EFBIG, a storage error: the run pauses at once (exit 3) saying so, nothing
 * counted as a camera or arm error, no arm action retried. Resumed without
 * the limit, it finishes with no dispense twice.
 */
TEST(a_file_size_limit_pauses_the_run_cleanly)
{
	const char *dir = test_tmp_path("fsize");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char errfile[4200], *text = NULL;
	cJSON *st;
	int rc, n = 0;
	pid_t pid;

	snprintf(errfile, sizeof(errfile), "%s/fsize.err", test_tmpdir());
	pid = start_limited(args, errfile, 4000L << 10);
	CHECK(pid > 0);
	rc = wait_exit(pid);
	CHECK_MSG(rc == 3, "a run past its file-size limit exited %d, not 3 (paused)", rc);
	CHECK(fs_read_file(errfile, 1 << 20, &text, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(text, "storage error");
	CHECK_STR_CONTAINS(text, "File too large");
	free(text);
	st = state_of(dir);
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "paused");
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason")), "storage error");
	cJSON_Delete(st);
	CHECK_MSG(run_journal_count(dir, "\"event\":\"arm_error\"") == 0 &&
		  run_journal_count(dir, "\"event\":\"camera_error\"") == 0,
		  "a storage error was counted as the arm's or the camera's");
	CHECK(run_journal_count(dir, "\"type\":\"dispense\"") > 0);
	rc = test_brushloop(rargs, NULL, NULL);
	CHECK_MSG(rc == 0, "the resume without the limit exited %d", rc);
	CHECK(dispenses_repeated(dir, &n) == 0);
	CHECK(run_done_subtasks_worked_again(dir) == 0);
}

TEST_MAIN(T(a_verified_tint_topped_up_keeps_its_colour), T(with_no_clean_cell_left_a_top_up_never_overfills_its_cell), T(two_resumes_at_once_one_runs), T(a_running_run_owns_its_directory),
	  T(sighup_pauses_the_run_cleanly), T(a_file_size_limit_pauses_the_run_cleanly),
	  T(a_run_its_wells_cannot_supply_is_refused_before_it_starts),
	  T(a_colour_within_accept_within_is_accepted_and_listed_one_beyond_waits),
	  T(a_small_run_finishes_with_a_verified_canvas), T(open_loop_runs_the_same_plan_without_looking),
	  T(open_loop_dispenses_each_mix_once_across_a_kill),
	  T(a_kill_while_deferred_work_is_retried_starts_nothing_done_over),
	  T(a_damaged_state_is_refused_on_resume), T(a_state_from_before_coats_were_learnt_resumes),
	  T(a_mix_action_that_waits_for_the_operator_is_listed),
	  T(a_well_that_runs_low_pauses_for_a_refill),
	  T(an_operator_substitutes_a_colour_the_loop_cannot_mix),
	  T(an_accepted_mix_is_painted_and_judged_as_it_measured),
	  T(estimate_gives_every_cost_and_a_bound_above_it),
	  T(estimate_names_the_wells_a_run_must_refill), T(the_estimate_prices_the_plan_a_run_paints),
	  T(kill_9_at_five_moments_then_resume), T(power_loss_at_five_moments_then_resume),
	  T(bad_input_is_refused_with_exit_2))
