/* test_run_edges.c: a run at the edges: one owner whatever happens to run.lock or the journal, every signal that ends a process pauses it cleanly, names shown escaped, an impossible --out refused before anything is written. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/fs.h"
#include "engine/run_checks.h"
#include "test.h"


/* Sends sig to a run (or resume) with args once its journal has grown by lines; its exit status. */
static int signalled(const char *const *args, const char *dir, long lines, int sig)
{
	long from = run_journal_lines(dir);
	pid_t pid = run_bg(args, -1, NULL);

	CHECK(pid > 0);
	CHECK_MSG(run_wait_lines(pid, dir, from + lines), "the run ended before signal %d", sig);
	kill(pid, sig);
	return run_wait(pid);
}

/*
 * SIGQUIT, SIGUSR1 and SIGALRM (which killed a run on c35509f with STATUS.md
 * still saying running) each pause it: exit 3, state.json and STATUS.md say
 * paused by a signal. A resume whose stdout is a pipe nobody reads any more
 * finishes with 0, not 141 (SIGPIPE); nothing was dispensed twice.
 */
TEST(stop_signals_pause_the_run_and_a_closed_stdout_ends_nothing)
{
	const char *dir = test_tmp_path("signals");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	static const int sigs[] = { SIGQUIT, SIGUSR1, SIGALRM };
	int fds[2], rc, n = 0;
	pid_t pid;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		char *md, *st;

		rc = signalled(i ? rargs : args, dir, 40, sigs[i]);
		CHECK_MSG(rc == 3, "signal %s: exit %d, not 3 (paused)", strsignal(sigs[i]), rc);
		md = run_file_text(dir, "STATUS.md");
		st = run_file_text(dir, "state.json");
		CHECK_STR_CONTAINS(md, "**state**: paused: paused by a signal");
		CHECK_STR_CONTAINS(st, "\"state\":\t\"paused\"");
		free(md);
		free(st);
	}
	CHECK(pipe(fds) == 0);
	close(fds[0]); /* nobody reads what the resume prints */
	pid = run_bg(rargs, fds[1], NULL);
	close(fds[1]);
	rc = run_wait(pid);
	CHECK_MSG(rc == 0, "a resume printing into a closed pipe exited %d, not 0", rc);
	CHECK(run_dispenses_repeated(dir, &n) == 0 && n > 0);
}

/* No byte of text holds a raw ESC, U+202E or a newline inside a name. */
static void check_escaped(const char *what, const char *text)
{
	CHECK_MSG(text && !strchr(text, '\x1b'), "%s holds a raw escape sequence", what);
	CHECK_MSG(text && !strstr(text, "\xe2\x80\xae"), "%s holds a raw U+202E", what);
	CHECK_MSG(text && !strstr(text, "out\nline"), "%s breaks a name over two lines", what);
}

/*
 * A target whose file name holds an escape sequence and an --out with a
 * newline and U+202E: the terminal (stderr, stdout) and STATUS.md show them
 * escaped (\x1b, \n, \u202e), never raw as on c35509f.
 */
TEST(names_are_printed_with_control_and_bidi_characters_escaped)
{
	char target[4200], dir[4200], *png = NULL, *out = NULL, *err = NULL, *md;
	size_t len = 0;
	const char *args[] = { "run", target, "--out", dir, "--max-strokes", "24", "--fault",
			       "power_loss_after=20", NULL };
	const char *rargs[] = { "resume", dir, "--refilled", "no-such-well", NULL };

	snprintf(target, sizeof(target), "%s/t\x1b[31mred.png", test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/out\nline\xe2\x80\xae" "gnp.exe", test_tmpdir());
	CHECK(fs_read_file(test_src_path(TEST_TARGET), 1 << 24, &png, &len, NULL) == 0);
	CHECK(png && fs_write_atomic(target, png, len, NULL) == 0);
	free(png);
	CHECK(test_brushloop(args, &out, &err) == 86);
	check_escaped("run's stderr", err);
	CHECK_STR_CONTAINS(err, "t\\x1b[31mred.png");
	CHECK_STR_CONTAINS(err, "out\\nline\\u202egnp.exe");
	free(out);
	free(err);
	md = run_file_text(dir, "STATUS.md");
	CHECK(md != NULL);
	check_escaped("STATUS.md", md);
	CHECK_STR_CONTAINS(md, "out\\nline\\u202egnp.exe");
	CHECK_STR_CONTAINS(md, "t\\x1b[31mred.png");
	free(md);
	/* A refused resume prints where the run stands, and the error. */
	CHECK(test_brushloop(rargs, &out, &err) == 2);
	check_escaped("resume's stdout", out);
	check_escaped("resume's stderr", err);
	CHECK_STR_CONTAINS(out, "run directory: ");
	CHECK_STR_CONTAINS(out, "out\\nline\\u202egnp.exe");
	free(out);
	free(err);
}

/* A path of n bytes under the test's directory, in parts of at most 200 bytes; the first part's path in first. */
static void long_path(char *out, size_t size, size_t n, char *first, size_t fsize)
{
	size_t k = (size_t)snprintf(out, size, "%s/", test_tmpdir());

	snprintf(first, fsize, "%s/", test_tmpdir());
	while (k < n && k + 1 < size) {
		out[k] = (k % 201 == 200) ? '/' : 'd';
		k++;
	}
	out[k] = '\0';
	snprintf(first + strlen(first), fsize - strlen(first), "%.*s", 150, out + strlen(first));
	if (strchr(first + strlen(test_tmpdir()) + 1, '/'))
		*strchr(first + strlen(test_tmpdir()) + 1, '/') = '\0';
}

/*
 * An --out of 3,800 bytes (a run's files would pass the path limit), one
 * with a part longer than a name may be, and one under a plain file: each
 * refused with exit 2 before anything is made, the reason in the message
 * whole (on c35509f the long one left a half-made directory and an error
 * cut off before its reason).
 */
TEST(an_impossible_out_is_refused_before_anything_is_written)
{
	static char dir[8192], first[4200];
	char longname[400], file[4200], under[4300], *err = NULL;
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--quiet", NULL };
	struct stat sb;

	long_path(dir, sizeof(dir), 3800, first, sizeof(first));
	CHECK(strlen(dir) == 3800);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "--out: the path is 3800 bytes");
	CHECK_STR_CONTAINS(err, "choose a shorter one");
	CHECK_MSG(stat(first, &sb) != 0 && errno == ENOENT, "%s was made", first);
	free(err);

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	snprintf(dir, sizeof(dir), "%s/%s", test_tmpdir(), longname);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "longer than the 255 bytes a name may have");
	free(err);

	snprintf(file, sizeof(file), "%s/plain-file", test_tmpdir());
	CHECK(fs_write_atomic(file, "x", 1, NULL) == 0);
	snprintf(under, sizeof(under), "%s/run", file);
	snprintf(dir, sizeof(dir), "%s", under);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "is a file, not a directory");
	free(err);
}


/*
 * run.lock deleted, then replaced by an empty file, while a run is alive:
 * each resume is refused (exit 2, in use), the run finishes alone, nothing
 * dispensed twice, one process_end. On c35509f both exited 0, 24 dispenses
 * ran twice and 809 journal seqs repeated.
 */
TEST(a_deleted_or_replaced_run_lock_unseats_nobody)
{
	const char *dir = test_tmp_path("lock-gone");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char lock[4200], *err = NULL;
	pid_t pid = run_bg(args, -1, NULL);
	int rc, n = 0;

	CHECK(pid > 0);
	CHECK(run_wait_lines(pid, dir, 40));
	snprintf(lock, sizeof(lock), "%s/run.lock", dir);
	for (int replaced = 0; replaced < 2; replaced++) {
		/* Deleted; then (still gone: a refused resume writes nothing) replaced by an empty file. */
		if (replaced)
			CHECK(fs_write_atomic(lock, "", 0, NULL) == 0);
		else
			CHECK(unlink(lock) == 0);
		rc = test_brushloop(rargs, NULL, &err);
		CHECK_MSG(rc == 2, "run.lock %s: a second resume exited %d, not 2", replaced ? "replaced" : "deleted", rc);
		CHECK_STR_CONTAINS(err, "is in use by");
		free(err);
		err = NULL;
	}
	rc = run_wait(pid);
	CHECK_MSG(rc == 0, "the run exited %d", rc);
	CHECK(run_dispenses_repeated(dir, &n) == 0 && n > 0);
	CHECK_MSG(run_journal_count(dir, "\"event\":\"process_end\"") == 1, "%d process_end",
		  run_journal_count(dir, "\"event\":\"process_end\""));
	CHECK(run_journal_count(dir, "\"event\":\"resume\"") == 0);
}

/*
 * Another process appends a line to the journal of a live run (held with
 * SIGSTOP meanwhile): before its next append the run sees the file is not
 * as it left it and stops with exit 5, writing nothing more (no line after
 * the other's; state.json names a line of its own, before the other's).
 * On c35509f it went on writing.
 */
TEST(a_journal_another_process_wrote_stops_the_run_with_exit_5)
{
	const char *dir = test_tmp_path("journal-other");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--accept-nearest", NULL };
	char path[4200], *state = NULL, *text, *last;
	pid_t pid = run_bg(args, -1, NULL);
	int rc;

	CHECK(pid > 0);
	CHECK(run_wait_lines(pid, dir, 40));
	kill(pid, SIGSTOP);
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	{
		FILE *f = fopen(path, "a");

		CHECK(f && fputs("{\"seq\":1,\"event\":\"another_writer\"}\n", f) >= 0);
		if (f)
			fclose(f);
	}
	kill(pid, SIGCONT);
	rc = run_wait(pid);
	CHECK_MSG(rc == 5, "the run exited %d, not 5 (safety stop)", rc);
	text = run_file_text(dir, "journal.jsonl");
	last = text ? strrchr(text, '{') : NULL;
	CHECK_MSG(last && !strcmp(last, "{\"seq\":1,\"event\":\"another_writer\"}\n"),
		  "the run wrote after the other process's line: %.200s", last ? last : "");
	free(text);
	{
		/* Its last save may have been under way when it was held: that line is its own. */
		long lines = run_journal_lines(dir);
		cJSON *st;
		const cJSON *line;

		free(state);
		state = run_file_text(dir, "state.json");
		st = cJSON_Parse(state ? state : "");
		line = cJSON_GetObjectItem(st, "journal_line");
		CHECK_MSG(cJSON_IsNumber(line) && line->valuedouble < (double)lines,
			  "state.json names line %g, the other process's line is %ld", cJSON_GetNumberValue(line), lines);
		cJSON_Delete(st);
	}
	free(state);
}

/*
 * kill -9 at four random moments (a journal line drawn at random past the
 * last kill's; the seed printed, BL_TEST_SEED to draw it again), of the run
 * and of each resume: the last resume finishes, the chained journal opens
 * every time, and no dispense ran twice nor a finished subtask again.
 */
TEST(kill_9_at_random_moments_resumes_with_no_dispense_twice)
{
	const char *dir = test_tmp_path("kill-random");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--accept-nearest", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	const char *env = getenv("BL_TEST_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	int rc, n = 0, kills = 0;

	fprintf(stderr, "kill_9_at_random_moments: BL_TEST_SEED=%u\n", seed);
	srand(seed);
	for (int k = 0; k < 4; k++) {
		long at = run_journal_lines(dir) + 5 + rand() % 60;
		pid_t pid = run_bg(k ? rargs : args, -1, NULL);

		CHECK(pid > 0);
		if (!run_wait_lines(pid, dir, at)) {
			/* It finished before that line: nothing left to kill. */
			CHECK_MSG(run_wait(pid) == 0, "process %d ended before line %ld, not finished", k, at);
			break;
		}
		kill(pid, SIGKILL);
		run_wait(pid);
		kills++;
	}
	rc = test_brushloop(rargs, NULL, NULL);
	CHECK_MSG(rc == 0 || (rc == 2 && !kills), "the last resume exited %d after %d kills", rc, kills);
	CHECK(run_dispenses_repeated(dir, &n) == 0 && n > 0);
	CHECK(run_done_subtasks_worked_again(dir) == 0);
}

TEST_MAIN(T(kill_9_at_random_moments_resumes_with_no_dispense_twice),
	  T(a_deleted_or_replaced_run_lock_unseats_nobody),
	  T(a_journal_another_process_wrote_stops_the_run_with_exit_5),
	  T(stop_signals_pause_the_run_and_a_closed_stdout_ends_nothing),
	  T(names_are_printed_with_control_and_bidi_characters_escaped),
	  T(an_impossible_out_is_refused_before_anything_is_written))
