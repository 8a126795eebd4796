/* journal.c: an append-only journal: fsync'd JSON lines chained by digest, one writer proven before every append, torn last lines cut off. */
#include "base/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/prof.h"

/* A journal of a long night stays far below this; a bigger one is not ours. */
#define JOURNAL_MAX_BYTES (512u << 20)
/* No journal has more lines than bytes: a seq beyond is not one this journal wrote. */
#define JOURNAL_MAX_SEQ ((double)JOURNAL_MAX_BYTES)
/* What the first line names as the line before it. */
static const char genesis[BL_DIGEST_HEX] = "0000000000000000000000000000000000000000000000000000000000000000";

static int journal_write(struct journal *j, const char *src, const char *subtask, const char *event,
			 cJSON *data, long *seq_out, bl_err *err);

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- reading the chain ---- */

/* Where a scan stands: the last line's digest and seq, the lines from before the chain. */
struct scan {
	const char *run;          /* the run every line must name ("" : none) */
	journal_line_fn fn;
	void *ctx;
	struct journal_info *info;
	const char *name;         /* the file, for messages */
};

static int bad_line(const struct scan *s, long line, bl_err *err, const char *why)
{
	return bl_fail(err, BL_EINVAL, "%s: line %ld %s: this is not the journal its run wrote "
		       "(edited, cut in the middle, another run's, or put together from pieces), so "
		       "nothing that trusts it goes on", s->name, line, why);
}

/* One line that came before the chain (a journal of an older brushloop): only at the start. */
static int legacy_line(struct scan *s, const cJSON *ev, long line, const char *dg, bl_err *err)
{
	struct journal_info *in = s->info;
	long seq;

	if (in->chained)
		return bad_line(s, line, err, "has no \"prev\" after lines that have");
	in->legacy++;
	if (json_whole(cJSON_GetObjectItemCaseSensitive(ev, "seq"), 1, JOURNAL_MAX_SEQ, &seq) &&
	    seq > in->seq)
		in->seq = seq;
	return s->fn && cJSON_IsObject(ev) ? s->fn(ev, line, dg, s->ctx, err) : 0;
}

/* One line of the chain: this run's, the next seq, naming the line before by its digest. */
static int chained_line(struct scan *s, const cJSON *ev, long line, const char *dg, const char *text,
			size_t upto, bl_err *err)
{
	struct journal_info *in = s->info;
	const char *run = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "run"));
	const char *prev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "prev"));
	long seq;

	if (!prev || strlen(prev) != BL_DIGEST_HEX - 1)
		return bad_line(s, line, err, "names no digest of the line before it (\"prev\")");
	if (strcmp(run ? run : "", s->run)) {
		char why[160];

		snprintf(why, sizeof(why), "is of run '%.40s', and this run is '%.40s'", run ? run : "",
			 s->run);
		return bad_line(s, line, err, why);
	}
	if (!json_whole(cJSON_GetObjectItemCaseSensitive(ev, "seq"), 1, JOURNAL_MAX_SEQ, &seq) ||
	    seq != in->seq + 1) {
		char why[96];

		snprintf(why, sizeof(why), "has not the seq %ld that follows the line before", in->seq + 1);
		return bad_line(s, line, err, why);
	}
	if (strcmp(prev, in->last))
		return bad_line(s, line, err, "names another line before it than the one there (its "
				"\"prev\" digest differs)");
	if (!in->chained && in->legacy) {
		/* The lines from before the chain are pinned by the line that adopted them. */
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "data");
		const char *evn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));
		const char *ls = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "legacy_sha256"));
		char want[BL_DIGEST_HEX];
		int rc;

		if ((rc = bl_digest_hex(text, upto, want, err)))
			return rc;
		if (!evn || strcmp(evn, "journal_chained") || !ls || strcmp(ls, want))
			return bad_line(s, line, err, "follows lines from before the chain, and does not "
					"adopt them (a journal_chained line with their digest)");
	}
	in->chained = 1;
	in->seq = seq;
	return s->fn ? s->fn(ev, line, dg, s->ctx, err) : 0;
}

/* Scans text (len bytes): every complete line checked; a last line with no newline is torn. */
static int scan_text(struct scan *s, const char *text, size_t len, bl_err *err)
{
	struct journal_info *in = s->info;
	size_t at = 0;
	long line = 0;
	int rc = 0;

	memset(in, 0, sizeof(*in));
	memcpy(in->last, genesis, sizeof(genesis));
	while (at < len && rc == 0) {
		const char *p = text + at, *nl = memchr(p, '\n', len - at);
		char dg[BL_DIGEST_HEX];
		cJSON *ev;

		if (!nl) {
			in->torn_bytes = (long)(len - at); /* never fsync'd whole: it did not happen */
			break;
		}
		line++;
		if ((rc = bl_digest_hex(p, (size_t)(nl - p), dg, err)))
			break;
		{
			const char *end = NULL;

			ev = cJSON_ParseWithLengthOpts(p, (size_t)(nl - p), &end, 0);
			if (ev && end != nl) { /* more after the object: not one line's event */
				cJSON_Delete(ev);
				ev = NULL;
			}
		}
		if (!cJSON_IsObject(ev) && in->chained)
			rc = bad_line(s, line, err, "is not a JSON object");
		else if (!cJSON_IsObject(ev) || !cJSON_GetObjectItemCaseSensitive(ev, "prev"))
			rc = legacy_line(s, ev, line, dg, err); /* an older brushloop's, a torn one it kept */
		else
			rc = chained_line(s, ev, line, dg, text, at, err);
		cJSON_Delete(ev);
		memcpy(in->last, dg, sizeof(dg));
		in->lines = line;
		at = (size_t)(nl - text) + 1;
		in->bytes = (long)at;
	}
	return rc;
}

int journal_verify_text(const char *text, size_t len, const char *name, const char *run,
			journal_line_fn fn, void *ctx, struct journal_info *info, bl_err *err)
{
	struct scan s = { run ? run : "", fn, ctx, info, name };

	return scan_text(&s, text, len, err);
}

int journal_verify(const char *path, const char *run, journal_line_fn fn, void *ctx,
		   struct journal_info *info, bl_err *err)
{
	char *text;
	size_t len;
	int rc = fs_read_file(path, JOURNAL_MAX_BYTES, &text, &len, err);

	if (rc)
		return rc;
	rc = journal_verify_text(text, len, path, run, fn, ctx, info, err);
	free(text);
	return rc;
}

/* ---- opening for writing ---- */

int journal_open_run(struct journal *j, const char *path, const char *run, int flags,
		     journal_line_fn fn, void *ctx, clk *clock, bl_err *err)
{
	struct journal_info in = { 0 };
	struct stat st;
	int rc;

	memset(j, 0, sizeof(*j));
	j->fd = -1;
	j->clock = clock;
	memcpy(in.last, genesis, sizeof(genesis)); /* a journal made afresh: its first line follows none */
	if (snprintf(j->path, sizeof(j->path), "%s", path) >= (int)sizeof(j->path))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	if (snprintf(j->run, sizeof(j->run), "%s", run ? run : "") >= (int)sizeof(j->run))
		return bl_fail(err, BL_EINVAL, "a run id is at most %zu characters", sizeof(j->run) - 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISREG(st.st_mode))
			return bl_fail(err, BL_EINVAL, "%s: not a regular file (a link, a pipe?): a "
				       "journal is a file of its run", path);
		if ((rc = journal_verify(path, j->run, fn, ctx, &in, err)))
			return rc;
	} else if (errno != ENOENT) {
		return bl_fail(err, BL_EIO, "%s: %s", path, strerror(errno));
	} else if (flags & JOURNAL_EXISTING) {
		return bl_fail(err, BL_EINVAL, "%s is missing: the journal is the record of what the run "
			       "did (the arm may have moved, paint may be dispensed), and a run is "
			       "never started over without it; restore it, or start a new run in "
			       "another directory", path);
	}
	j->seq = in.seq;
	memcpy(j->last, in.last, sizeof(j->last));
	j->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (j->fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot open: %s", path, strerror(errno));
	/* A torn last line was never written whole: cut off, so the chain goes on from the last line. */
	if (in.torn_bytes && (ftruncate(j->fd, in.bytes) < 0 || fdatasync(j->fd) < 0))
		return bl_fail(err, fs_write_code(errno), "%s: cannot cut off a torn line: %s", path,
			       strerror(errno));
	if (fstat(j->fd, &st) < 0)
		return bl_fail(err, BL_EIO, "%s: %s", path, strerror(errno));
	j->dev = st.st_dev;
	j->ino = st.st_ino;
	j->end = st.st_size;
	j->torn = in.torn_bytes > 0;
	if (in.legacy && !in.chained) {
		/* An older brushloop's journal: its lines pinned by their digest, the chain from here. */
		char *text = NULL;
		size_t len = 0;
		char dg[BL_DIGEST_HEX];
		cJSON *d;

		if ((rc = fs_read_file(path, JOURNAL_MAX_BYTES, &text, &len, err)) ||
		    (rc = bl_digest_hex(text, len, dg, err))) {
			free(text);
			return rc;
		}
		free(text);
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "legacy_lines", (double)in.legacy);
		cJSON_AddStringToObject(d, "legacy_sha256", dg);
		if ((rc = journal_write(j, "journal", "", "journal_chained", d, NULL, err)))
			return rc;
	}
	/* Noted once, when the torn line is cut off. */
	if (j->torn) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddNumberToObject(d, "torn_bytes", (double)in.torn_bytes);
		return journal_write(j, "journal", "", "journal_torn_line_ignored", d, NULL, err);
	}
	return 0;
}

int journal_open(struct journal *j, const char *path, clk *clock, bl_err *err)
{
	return journal_open_run(j, path, NULL, 0, NULL, NULL, clock, err);
}

void journal_set_subtask(struct journal *j, const char *subtask)
{
	snprintf(j->subtask, sizeof(j->subtask), "%s", subtask ? subtask : "");
}

int journal_event(struct journal *j, const char *subtask, const char *event, cJSON *data,
		  long *seq_out, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_JOURNAL);
	int rc = journal_write(j, "engine", subtask, event, data, seq_out, err);

	prof_leave(prev);
	return rc;
}

int journal_event_from(struct journal *j, const char *src, const char *event, cJSON *data,
		       long *seq_out, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_JOURNAL);
	int rc = journal_write(j, src, NULL, event, data, seq_out, err);

	prof_leave(prev);
	return rc;
}

/*
 * The file at the journal's path is the one this process opened, and it
 * ends where this process last wrote: nobody replaced it, and nobody else
 * appended. Otherwise another process drives the run (or did something to
 * it), and this one writes nothing more.
 */
static int still_ours(struct journal *j, bl_err *err)
{
	struct stat fd_st, path_st;

	if (!j->lost && fstat(j->fd, &fd_st) == 0 && stat(j->path, &path_st) == 0 &&
	    fd_st.st_dev == j->dev && fd_st.st_ino == j->ino && path_st.st_dev == j->dev &&
	    path_st.st_ino == j->ino && fd_st.st_size == j->end)
		return 0;
	j->lost = 1;
	return bl_fail(err, BL_ESAFETY, "%s is no longer the journal this process writes (replaced, "
		       "removed, or written by another process): another may drive the run, so this "
		       "one stops here and moves nothing more", j->path);
}

static int journal_write(struct journal *j, const char *src, const char *subtask, const char *event,
			 cJSON *data, long *seq_out, bl_err *err)
{
	cJSON *ev = cJSON_CreateObject();
	char *line = NULL, dg[BL_DIGEST_HEX];
	size_t n;
	int rc = 0;

	if (j->fd < 0 || !ev || (rc = still_ours(j, err))) {
		cJSON_Delete(data);
		cJSON_Delete(ev);
		return rc ? rc : !ev ? bl_fail(err, BL_ENOMEM, "out of memory")
				     : bl_fail(err, BL_EIO, "%s: the journal is not open", j->path);
	}
	cJSON_AddNumberToObject(ev, "seq", (double)(j->seq + 1));
	if (j->run[0])
		cJSON_AddStringToObject(ev, "run", j->run);
	cJSON_AddStringToObject(ev, "prev", j->last);
	cJSON_AddNumberToObject(ev, "wall_ms", (double)clk_wall_ms());
	cJSON_AddNumberToObject(ev, "mono_ns", (double)clk_now_ns(j->clock));
	cJSON_AddStringToObject(ev, "src", src);
	cJSON_AddStringToObject(ev, "subtask", subtask ? subtask : j->subtask);
	cJSON_AddStringToObject(ev, "event", event);
	if (data)
		cJSON_AddItemToObject(ev, "data", data);
	line = cJSON_PrintUnformatted(ev);
	cJSON_Delete(ev);
	if (!line)
		return bl_fail(err, BL_ENOMEM, "out of memory printing a journal event");
	n = strlen(line);
	if ((rc = bl_digest_hex(line, n, dg, err))) {
		cJSON_free(line);
		return rc;
	}
	/* Line and newline in one write, then fdatasync: the event is on disk before we go on. */
	{
		char *buf = malloc(n + 1);

		if (!buf) {
			cJSON_free(line);
			return bl_fail(err, BL_ENOMEM, "out of memory");
		}
		memcpy(buf, line, n);
		buf[n] = '\n';
		if (write_all(j->fd, buf, n + 1) < 0 || fdatasync(j->fd) < 0)
			rc = bl_fail(err, BL_ESTORAGE, "%s: append failed: %s", j->path, strerror(errno));
		free(buf);
	}
	cJSON_free(line);
	if (rc == 0) {
		j->seq++;
		j->end += (off_t)(n + 1);
		memcpy(j->last, dg, sizeof(dg));
		if (seq_out)
			*seq_out = j->seq;
	} else {
		/* Part of a line may be on disk: where it ends is not known, so nothing more is written. */
		j->lost = 1;
	}
	return rc;
}

void journal_close(struct journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
}

int journal_read(const char *path, journal_fn fn, void *ctx, long *bad_lines, bl_err *err)
{
	char *text, *p, *nl;
	size_t len;
	long bad = 0;
	int rc = fs_read_file(path, JOURNAL_MAX_BYTES, &text, &len, err);

	if (rc)
		return rc;
	for (p = text; p < text + len; p = nl + 1) {
		cJSON *ev;
		int stop;

		nl = memchr(p, '\n', (size_t)(text + len - p));
		if (!nl)
			nl = text + len; /* torn last line: parsed like any other, usually fails */
		*nl = '\0';
		if (nl == p)
			continue;
		ev = cJSON_ParseWithOpts(p, NULL, 1);
		if (!cJSON_IsObject(ev)) {
			cJSON_Delete(ev);
			bad++;
			continue;
		}
		stop = fn ? fn(ev, ctx) : 0;
		cJSON_Delete(ev);
		if (stop)
			break;
	}
	free(text);
	if (bad_lines)
		*bad_lines = bad;
	return 0;
}
