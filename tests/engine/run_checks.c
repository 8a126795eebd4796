/* run_checks.c: checks on a finished run directory that several engine test files make. */
#include "engine/run_checks.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/digest.h"
#include "base/fs.h"
#include "base/strbuf.h"
#include "config/machine.h"
#include "test.h"

#define CELLS_MAX 64

/* A run's cells as its journal fills and empties them. */
struct cell_replay {
	const struct machine *m;
	char name[CELLS_MAX][CFG_NAME_MAX];
	double ml[CELLS_MAX];
	int n;
	double most_ml;     /* the most any cell held */
	char most_cell[CFG_NAME_MAX];
	long most_seq;      /* the journal line where it did */
};

static double *cell_ml(struct cell_replay *c, const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], name))
			return &c->ml[i];
	if (c->n == CELLS_MAX)
		return NULL;
	snprintf(c->name[c->n], sizeof(c->name[0]), "%s", name);
	c->ml[c->n] = 0.0;
	return &c->ml[c->n++];
}

static void replay_line(const cJSON *line, void *ctx)
{
	struct cell_replay *c = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");
	const cJSON *a = cJSON_GetObjectItem(d, "action");
	const char *cell = cJSON_GetStringValue(cJSON_GetObjectItem(a, "cell"));
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(a, "type"));
	const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "decision"),
								       "decision"));
	double *ml;

	if (ev && !strcmp(ev, "mix_cell") && cJSON_GetStringValue(cJSON_GetObjectItem(d, "discarded"))) {
		if ((ml = cell_ml(c, cJSON_GetStringValue(cJSON_GetObjectItem(d, "discarded")))))
			*ml = 0.0;
		return;
	}
	/* A person emptied and cleaned it (resume --emptied). */
	if (ev && !strcmp(ev, "cell_emptied") && cJSON_GetStringValue(cJSON_GetObjectItem(d, "cell"))) {
		if ((ml = cell_ml(c, cJSON_GetStringValue(cJSON_GetObjectItem(d, "cell")))))
			*ml = 0.0;
		return;
	}
	if (!ev || strcmp(ev, "decision") || !cell || !kind || !verdict || strcmp(verdict, "allow") ||
	    !(ml = cell_ml(c, cell)))
		return;
	if (!strcmp(kind, "dispense")) {
		*ml += cJSON_GetNumberValue(cJSON_GetObjectItem(a, "units")) * c->m->mixing.dispense_unit_ml;
		if (*ml > c->most_ml) {
			c->most_ml = *ml;
			snprintf(c->most_cell, sizeof(c->most_cell), "%s", cell);
			c->most_seq = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(line, "seq"));
		}
	} else if (!strcmp(kind, "dip")) {
		const struct machine_brush *b =
			machine_find_brush(c->m, cJSON_GetStringValue(cJSON_GetObjectItem(a, "brush")));

		*ml = b && *ml > b->load_ml ? *ml - b->load_ml : 0.0;
	}
}

/* The journal of run dir replayed: the most any cell held, at which line (c->most_*); -1 when it cannot be read. */
static int replay_cells(const char *dir, struct cell_replay *c, struct machine *m)
{
	char path[4200];
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/machine.json", dir);
	if (machine_load(path, m, &err))
		return -1;
	c->m = m;
	return test_journal_each(dir, replay_line, c);
}

void run_check_dir_cells(const char *dir)
{
	struct cell_replay c = { 0 };
	struct machine m;

	if (replay_cells(dir, &c, &m))
		return; /* not a run's directory (no machine copy, no journal) */
	CHECK_MSG(c.most_ml <= m.mixing.cell_max_ml + 1e-9,
		  "%s: the cell %s held %.2f ml at journal line %ld, more than mixing.cell_max_ml %.2f", dir,
		  c.most_cell, c.most_ml, c.most_seq, m.mixing.cell_max_ml);
}

void run_check_cells_within_capacity(const char *dir)
{
	struct cell_replay c = { 0 };
	char path[4200];
	struct machine m;
	bl_err err = { 0 };
	const cJSON *it;
	cJSON *st;

	snprintf(path, sizeof(path), "%s/machine.json", dir);
	CHECK_MSG(machine_load(path, &m, &err) == 0, "%s", err.msg);
	c.m = &m;
	CHECK(test_journal_each(dir, replay_line, &c) == 0);
	CHECK_MSG(c.n > 0, "%s: the journal dispensed into no cell", dir);
	CHECK_MSG(c.most_ml <= m.mixing.cell_max_ml + 1e-9,
		  "%s: the cell %s held %.2f ml at journal line %ld, more than mixing.cell_max_ml %.2f", dir,
		  c.most_cell, c.most_ml, c.most_seq, m.mixing.cell_max_ml);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = NULL;
	{
		char *text = test_read_file(path);

		st = text ? cJSON_Parse(text) : NULL;
		free(text);
	}
	CHECK_MSG(st != NULL, "%s cannot be read", path);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "colours")) {
		const cJSON *ml = cJSON_GetObjectItem(it, "cell_ml");

		CHECK_MSG(cJSON_IsNumber(ml) && ml->valuedouble <= m.mixing.cell_max_ml + 1e-9,
			  "state.json: a cell holds %.2f ml, more than mixing.cell_max_ml %.2f",
			  cJSON_IsNumber(ml) ? ml->valuedouble : -1.0, m.mixing.cell_max_ml);
	}
	cJSON_Delete(st);
}

pid_t run_bg(const char *const *args, int out_fd, const char *errfile)
{
	const char *bin = getenv("BRUSHLOOP");
	char *argv[40];
	int n = 0;
	pid_t pid;

	argv[n++] = (char *)bin;
	while (n < 39 && args[n - 1]) {
		argv[n] = (char *)args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		int efd = errfile ? open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644) : null;

		dup2(out_fd >= 0 ? out_fd : null, 1);
		dup2(efd, 2);
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

int run_wait(pid_t pid)
{
	int status = 0;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

long run_journal_lines(const char *dir)
{
	char path[4200], buf[65536];
	long n = 0;
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < k; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

int run_wait_lines(pid_t pid, const char *dir, long n)
{
	while (run_journal_lines(dir) < n) {
		siginfo_t si;

		/* Exited (a zombie not yet reaped): WNOWAIT leaves it for run_wait. */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid)
			return run_journal_lines(dir) >= n;
		usleep(2000);
	}
	return 1;
}

struct repeats {
	long ids[8192];
	int n, rep;
};

static void note_dispense(const cJSON *line, void *ctx)
{
	struct repeats *x = ctx;
	const cJSON *d = cJSON_GetObjectItem(line, "data");
	const cJSON *a = cJSON_GetObjectItem(d, "action");
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(a, "type"));
	const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "decision"),
								       "decision"));
	const cJSON *id = cJSON_GetObjectItem(a, "id");

	if (!ev || strcmp(ev, "decision") || !kind || strcmp(kind, "dispense") || !verdict ||
	    strcmp(verdict, "allow") || !cJSON_IsNumber(id))
		return;
	for (int i = 0; i < x->n; i++)
		x->rep += x->ids[i] == (long)id->valuedouble;
	if (x->n < 8192)
		x->ids[x->n++] = (long)id->valuedouble;
}

int run_dispenses_repeated(const char *dir, int *n)
{
	static struct repeats x;

	memset(&x, 0, sizeof(x));
	if (test_journal_each(dir, note_dispense, &x))
		return -1;
	if (n)
		*n = x.n;
	return x.rep;
}

struct worked_again {
	const char *dir;
	char done[512][24];
	int n_done, again;
};

static void check_worked_again(const cJSON *line, void *ctx)
{
	struct worked_again *x = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const char *sub = cJSON_GetStringValue(cJSON_GetObjectItem(line, "subtask"));
	const char *status = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(line, "data"), "status"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");
	const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "decision"),
								       "decision"));
	const char *type = ev && !strcmp(ev, "decision") && verdict && !strcmp(verdict, "allow") ?
			   cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "action"), "type")) : NULL;
	int work, is_done = 0;

	if (!ev || !sub || !*sub)
		return;
	for (int i = 0; i < x->n_done; i++)
		is_done |= !strcmp(x->done[i], sub);
	if (!strcmp(ev, "subtask_end") && status && !strcmp(status, "done") && !is_done &&
	    x->n_done < 512)
		snprintf(x->done[x->n_done++], sizeof(x->done[0]), "%s", sub);
	work = !strcmp(ev, "subtask_start") || !strcmp(ev, "dispense_planned") ||
	       (type && (!strcmp(type, "stroke") || !strcmp(type, "dispense")));
	if (work && is_done) {
		fprintf(stderr, "%s: %s after %s was done\n", x->dir, ev, sub);
		x->again++;
	}
}

/*
 * Work done again for a subtask the journal already called done (in its
 * round: correction rounds name theirs c1.s3, ...): the subtask started, a
 * mix's dispense set planned, or a stroke or dispense the gate allowed. A
 * resume must never start a finished subtask over.
 */
int run_done_subtasks_worked_again(const char *dir)
{
	static struct worked_again x;

	memset(&x, 0, sizeof(x));
	x.dir = dir;
	return test_journal_each(dir, check_worked_again, &x) ? -1 : x.again;
}


int run_machine_edited(const char *name, void (*edit)(cJSON *m), char *out, size_t n)
{
	char p[4096], *text = NULL, *json;
	cJSON *m, *cal;

	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	if (fs_read_file(p, 1 << 20, &text, NULL, NULL))
		return -1;
	m = cJSON_Parse(text);
	free(text);
	if (!m)
		return -1;
	edit(m);
	cal = cJSON_GetObjectItem(m, "calibration");
	snprintf(p, sizeof(p), "%s/examples/calibration/sim-camera.icc", getenv("BRUSHLOOP_SRC"));
	cJSON_ReplaceItemInObjectCaseSensitive(cal, "camera_profile", cJSON_CreateString(p));
	snprintf(p, sizeof(p), "%s/examples/calibration/sim-light.json", getenv("BRUSHLOOP_SRC"));
	cJSON_ReplaceItemInObjectCaseSensitive(cal, "light_map", cJSON_CreateString(p));
	json = cJSON_Print(m);
	test_write_file(name, json);
	snprintf(out, n, "%s/%s", test_tmpdir(), name);
	free(json);
	cJSON_Delete(m);
	return 0;
}

char *run_file_text(const char *dir, const char *name)
{
	char path[4200], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fs_read_file(path, 1 << 28, &text, NULL, NULL))
		return NULL;
	return text;
}

int run_journal_count(const char *dir, const char *pat)
{
	char *text = run_file_text(dir, "journal.jsonl");
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, pat)); p++)
		n++;
	free(text);
	return n;
}

int run_journal_rechain(const char *dir)
{
	char path[4200], prev[BL_DIGEST_HEX], *text = run_file_text(dir, "journal.jsonl"), *save = NULL;
	strbuf out;
	int rc = 0;

	if (!text)
		return -1;
	memset(prev, '0', BL_DIGEST_HEX - 1);
	prev[BL_DIGEST_HEX - 1] = '\0';
	sb_init(&out);
	for (char *line = strtok_r(text, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, "\"prev\":\"");

		/* Each line names the one before as it is now: the chain of a journal written so. */
		if (p && strlen(p) > 8 + BL_DIGEST_HEX - 1)
			memcpy(p + 8, prev, BL_DIGEST_HEX - 1);
		rc = bl_digest_hex(line, strlen(line), prev, NULL);
		sb_printf(&out, "%s\n", line);
	}
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	if (rc == 0 && (!out.s || fs_write_atomic(path, out.s, out.len, NULL)))
		rc = -1;
	sb_free(&out);
	free(text);
	return rc;
}
