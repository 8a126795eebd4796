/* regress_run.c: running a suite's cases on this machine as `brushloop run` children, N at once, resumable, with a progress line and an ETA. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "engine/run.h"
#include "regress/regress.h"

/* A run paused for a refill is resumed at most this often (bench/run-figures' limit). */
#define REFILLS_MAX 20

enum step { STEP_NONE, STEP_RUN, STEP_RESUME, STEP_REFILL };

struct slot {
	pid_t pid;
	int ci;          /* case index */
	int refills;     /* this session */
	double start_s;  /* when the case's first step began */
};

/* What a case needs next, from its run directory alone. */
static enum step next_step(const struct regress_case *c, const char *dir, int refills)
{
	char p[REGRESS_PATH_MAX + 16];
	cJSON *st = NULL;
	const char *state, *reason;
	enum step s = STEP_NONE;
	bl_err err = { 0 };

	if (access(c->target, R_OK) != 0)
		return STEP_NONE; /* collect says why */
	snprintf(p, sizeof(p), "%s/run.json", dir);
	if (access(p, F_OK) != 0)
		return access(dir, F_OK) == 0 && rmdir(dir) != 0 ? STEP_NONE : STEP_RUN;
	snprintf(p, sizeof(p), "%s/state.json", dir);
	if (access(p, F_OK) != 0 || run_status(dir, &st, &err) != 0)
		return STEP_RESUME; /* stopped before it had a plan: resume plans it */
	state = cJSON_GetStringValue(cJSON_GetObjectItem(st, "state"));
	reason = cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason"));
	if (state && !strcmp(state, "running"))
		s = STEP_RESUME; /* the suite (and its runs) were killed */
	else if (state && !strcmp(state, "paused") && reason &&
		 !strncmp(reason, "paused by a signal", 18))
		s = STEP_RESUME; /* the suite was interrupted and passed the signal on */
	else if (state && !strcmp(state, "paused") && c->refill && reason &&
		 strstr(reason, "--refilled") && refills < REFILLS_MAX)
		s = STEP_REFILL;
	cJSON_Delete(st);
	return s;
}

/* Starts one step of a case in a child, its output appended to OUT/logs/ID.log. */
static pid_t spawn(const struct regress_case *c, enum step step, const struct regress_run_options *o,
		   const char *dir, bl_err *err)
{
	char log[REGRESS_PATH_MAX + 256], sb[24], kb[24], cb[24];
	const char *argv[REGRESS_ARGV_MAX];
	pid_t parent = getpid(), pid;
	int fd;

	if (step == STEP_RUN) {
		regress_case_argv(c, o->bin, dir, sb, kb, cb, argv);
	} else {
		int n = 0;

		argv[n++] = o->bin;
		argv[n++] = "resume";
		argv[n++] = dir;
		if (step == STEP_REFILL) {
			argv[n++] = "--refilled";
			argv[n++] = "all";
		}
		argv[n++] = "--quiet";
		argv[n] = NULL;
	}
	snprintf(log, sizeof(log), "%s/logs/%s.log", o->out_dir, c->id);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return bl_fail(err, BL_EIO, "%s: %s", log, strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(fd);
		return bl_fail(err, BL_EIO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		/* A suite killed outright takes its runs with it: none goes on writing a directory the next suite resumes. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		/* Its own process group: a Ctrl-C reaches the suite, which passes it on once (a run takes a second signal as a safety stop). */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(o->bin, (char *const *)argv);
		dprintf(2, "brushloop regress: cannot run %s: %s\n", o->bin, strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

static double now_s(void)
{
	return (double)clk_real_ns() * 1e-9;
}

static void fmt_time(char *out, size_t n, double s)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
}

struct progress {
	int total, before, cannot, done, running, nonzero, jobs;
	double t0, case_s; /* case_s: wall time of the cases finished this session, summed */
	int live;
	int shown; /* done as last printed: a case done is printed once its slot has the next */
};

/* "regress: 3 of 8 done (2 already done, 0 cannot run), 2 running, 0:41 elapsed, ETA 1:10". */
static void progress_print(const struct progress *p)
{
	char el[32], eta[32];
	int fresh = p->done - p->before - p->cannot, left = p->total - p->done;

	fmt_time(el, sizeof(el), now_s() - p->t0);
	if (fresh > 0)
		fmt_time(eta, sizeof(eta), p->case_s / fresh * left / p->jobs);
	else
		snprintf(eta, sizeof(eta), "unknown");
	fprintf(stderr, "%sregress: %d of %d done (%d already done, %d cannot run%s), %d running, "
			"%s elapsed, ETA %s%s",
		p->live ? "\r\033[K" : "", p->done, p->total, p->before, p->cannot,
		p->nonzero ? ", some exited non-zero" : "", p->running, el, left ? eta : "0:00",
		p->live ? "" : "\n");
}

static void case_dir(const struct regress_run_options *o, const struct regress_case *c, char *dir, size_t n)
{
	snprintf(dir, n, "%s/%s", o->out_dir, c->id);
}

/*
 * The child pid of a slot ended with status: its case refilled and started
 * again when it paused for paint, else counted done. 0, or the code of a
 * step that could not start.
 */
static int reaped(const struct regress_suite *s, const struct regress_run_options *o, struct slot *slots,
		  struct progress *pr, pid_t pid, int status, bl_err *err)
{
	for (int j = 0; j < o->jobs; j++) {
		const struct regress_case *c = &s->cases[slots[j].ci];
		char dir[REGRESS_PATH_MAX + REGRESS_ID_MAX];
		enum step next;
		int rc;

		if (slots[j].pid != pid)
			continue;
		case_dir(o, c, dir, sizeof(dir));
		next = next_step(c, dir, slots[j].refills);
		if (next == STEP_REFILL && !signals_seen) {
			slots[j].refills++;
			if ((slots[j].pid = spawn(c, next, o, dir, err)) < 0) {
				rc = slots[j].pid;
				slots[j].pid = 0;
				pr->running--;
				return rc;
			}
			return 0;
		}
		/* Done (a run that could not go on, killed again or not, is judged as it stands). */
		pr->nonzero |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
		pr->case_s += now_s() - slots[j].start_s;
		pr->running--;
		pr->done++;
		slots[j].pid = 0;
		return 0;
	}
	return 0;
}

int regress_run(const struct regress_suite *s, const struct regress_run_options *o, bl_err *err)
{
	struct slot *slots = calloc((size_t)o->jobs, sizeof(*slots));
	int *queue = calloc((size_t)s->n + 1, sizeof(int)), nq = 0, qi = 0, rc = 0;
	char logs[REGRESS_PATH_MAX + 8];
	struct progress pr = { .total = s->n, .jobs = o->jobs, .t0 = now_s(), .live = isatty(2) };
	double last_print = 0;
	int forwarded = 0;
	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;

	sigemptyset(&sa.sa_mask);
	signals_seen = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (!slots || !queue) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto free_all;
	}
	snprintf(logs, sizeof(logs), "%s/logs", o->out_dir);
	if ((rc = fs_mkdirs(logs, err)))
		goto free_all;
	for (int i = 0; i < s->n; i++) {
		char dir[REGRESS_PATH_MAX + REGRESS_ID_MAX];

		case_dir(o, &s->cases[i], dir, sizeof(dir));
		if (access(s->cases[i].target, R_OK) != 0)
			pr.cannot++;
		else if (next_step(&s->cases[i], dir, 0) == STEP_NONE)
			pr.before++;
		else
			queue[nq++] = i;
	}
	pr.done = pr.before + pr.cannot;
	if (!o->quiet && nq == 0)
		progress_print(&pr); /* nothing to run: say so */
	pr.shown = nq ? -1 : pr.done; /* the first line once the slots are filled */
	while (qi < nq || pr.running) {
		int status;
		pid_t pid;

		/* Interrupted: every run is told once for each signal the suite got, and no new case starts. */
		while (forwarded < signals_seen) {
			forwarded++;
			qi = nq;
			for (int j = 0; j < o->jobs; j++)
				if (slots[j].pid > 0)
					kill(slots[j].pid, SIGTERM);
		}
		/* Fill the free slots. */
		for (int j = 0; j < o->jobs && qi < nq; j++) {
			char dir[REGRESS_PATH_MAX + REGRESS_ID_MAX];
			const struct regress_case *c;

			if (slots[j].pid)
				continue;
			c = &s->cases[queue[qi++]];
			case_dir(o, c, dir, sizeof(dir));
			slots[j] = (struct slot){ .ci = (int)(c - s->cases), .start_s = now_s() };
			slots[j].pid = spawn(c, next_step(c, dir, 0), o, dir, err);
			if (slots[j].pid < 0) {
				rc = slots[j].pid;
				slots[j].pid = 0;
				goto wait_all;
			}
			pr.running++;
		}
		if (!o->quiet && (pr.shown != pr.done || now_s() - last_print >= (pr.live ? 1.0 : 30.0))) {
			progress_print(&pr);
			pr.shown = pr.done;
			last_print = now_s();
		}
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0) {
			struct timespec ts = { 0, 200 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			rc = bl_fail(err, BL_EIO, "waitpid: %s", strerror(errno));
			goto free_all;
		}
		if ((rc = reaped(s, o, slots, &pr, pid, status, err)))
			goto wait_all;
	}
	if (!o->quiet && pr.shown != pr.done)
		progress_print(&pr); /* the last case done: no slot to fill */
	if (!o->quiet && pr.live)
		fputc('\n', stderr);
	if (signals_seen)
		rc = bl_fail(err, BL_EPAUSED,
			     "interrupted: the runs under way were paused; the same command goes on "
			     "where they stopped");
	goto free_all;
wait_all:
	/* A step could not start: let the ones running finish, then say why. */
	while (pr.running > 0 && wait(NULL) > 0)
		pr.running--;
free_all:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(slots);
	free(queue);
	return rc;
}
