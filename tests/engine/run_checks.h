/* run_checks.h: checks on a finished run directory that several engine test files make. */
#ifndef BL_TEST_RUN_CHECKS_H
#define BL_TEST_RUN_CHECKS_H

/*
 * No mixing cell of the run in dir ever held more than its machine's
 * mixing.cell_max_ml: its journal replayed (each dispense the gate allowed
 * in, each dip out by its brush's load_ml, a discarded cell or one a person
 * emptied (cell_emptied) empty), and
 * state.json's cell_ml at the end.
 */
void run_check_cells_within_capacity(const char *dir);
/*
 * The same replay for any directory that may be a run's (skipped when it
 * holds no machine.json and journal): test.c runs it over every run
 * directory a case leaves, so every whole-run test fails on a cell over
 * mixing.cell_max_ml at any journal line.
 */
void run_check_dir_cells(const char *dir);

#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

/*
 * Starts brushloop with args (NULL-terminated, no argv[0]) in the
 * background: stdout to out_fd (-1: /dev/null), stderr to the file errfile
 * (NULL: /dev/null). Returns its pid.
 */
pid_t run_bg(const char *const *args, int out_fd, const char *errfile);
/* Waits for a child: its exit status, or 128 + the signal that ended it (-1: no such child). */
int run_wait(pid_t pid);
/* The run's file name, read whole (malloc'd; NULL when it cannot be read). */
char *run_file_text(const char *dir, const char *name);
/* How many times pat stands in dir's journal (0 when there is none yet). */
int run_journal_count(const char *dir, const char *pat);
/*
 * Makes the chain of dir's journal whole again after a test edited its
 * lines (each line's "prev" set to the digest of the line before as it now
 * is): a journal consistent in itself, to show what else a resume checks.
 * 0, or -1 when it cannot be read or written.
 */
int run_journal_rechain(const char *dir);
/* Lines in dir/journal.jsonl (0 when there is none). */
long run_journal_lines(const char *dir);
/* Waits until dir's journal has at least n lines or pid has exited; 1 when it has them. */
int run_wait_lines(pid_t pid, const char *dir, long n);
/* Dispenses the gate allowed more than once (the same action id) in dir's journal; *n gets how many it allowed. */
int run_dispenses_repeated(const char *dir, int *n);
/*
 * Work done again for a subtask the journal already called done (in its
 * round: correction rounds name theirs c1.s3, ...): the subtask started, a
 * mix's dispense set planned, or a stroke or dispense the gate allowed. A
 * resume must never start a finished subtask over. -1 when unreadable.
 */
int run_done_subtasks_worked_again(const char *dir);
/*
 * The example machine changed by edit, with its calibration files named
 * by absolute path, written as name in the test's directory; its path in
 * out. 0, or -1 when it cannot be made.
 */
int run_machine_edited(const char *name, void (*edit)(cJSON *m), char *out, size_t n);

#endif
