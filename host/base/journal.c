/* journal.c: an append-only journal: fsync'd JSON lines, a sequence that survives resumes, torn lines tolerated. */
#include "base/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/prof.h"

/* A journal of a long night stays far below this; a bigger one is not ours. */
#define JOURNAL_MAX_BYTES (512u << 20)

static int journal_write(struct journal *j, const char *src, const char *subtask, const char *event,
			 cJSON *data, long *seq_out, bl_err *err);

struct scan {
	long last_seq;
};

static int note_seq(const cJSON *ev, void *ctx)
{
	struct scan *s = ctx;
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");

	if (cJSON_IsNumber(seq) && seq->valuedouble > s->last_seq)
		s->last_seq = (long)seq->valuedouble;
	return 0;
}

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

int journal_open(struct journal *j, const char *path, clk *clock, bl_err *err)
{
	struct scan s = { 0 };
	struct stat st;
	long bad = 0;
	int rc;

	memset(j, 0, sizeof(*j));
	j->fd = -1;
	j->clock = clock;
	if (snprintf(j->path, sizeof(j->path), "%s", path) >= (int)sizeof(j->path))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	if (stat(path, &st) == 0) {
		rc = journal_read(path, note_seq, &s, &bad, err);
		if (rc)
			return rc;
	}
	j->seq = s.last_seq;
	j->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (j->fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot open: %s", path, strerror(errno));
	/* A torn last line has no newline: end it, so the next event starts clean. */
	if (fstat(j->fd, &st) == 0 && st.st_size > 0) {
		char last;
		int rfd = open(path, O_RDONLY | O_CLOEXEC);

		if (rfd >= 0 && pread(rfd, &last, 1, st.st_size - 1) == 1 && last != '\n') {
			j->torn = 1;
			if (write_all(j->fd, "\n", 1) < 0 || fdatasync(j->fd) < 0) {
				close(rfd);
				return bl_fail(err, BL_EIO, "%s: cannot end a torn line: %s", path,
					       strerror(errno));
			}
		}
		if (rfd >= 0)
			close(rfd);
	}
	/* Noted once, when the torn line is ended; later opens see it as an old bad line. */
	if (j->torn) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddNumberToObject(d, "unreadable_lines", (double)bad);
		return journal_write(j, "journal", "", "journal_torn_line_ignored", d, NULL, err);
	}
	return 0;
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

static int journal_write(struct journal *j, const char *src, const char *subtask, const char *event,
			 cJSON *data, long *seq_out, bl_err *err)
{
	cJSON *ev = cJSON_CreateObject();
	char *line = NULL;
	size_t n;
	int rc = 0;

	if (j->fd < 0) {
		cJSON_Delete(data);
		cJSON_Delete(ev);
		return bl_fail(err, BL_EIO, "%s: the journal is not open", j->path);
	}
	if (!ev) {
		cJSON_Delete(data);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	cJSON_AddNumberToObject(ev, "seq", (double)(j->seq + 1));
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
		if (seq_out)
			*seq_out = j->seq;
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
