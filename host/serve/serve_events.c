/* serve_events.c: a run's page kept live by server-sent events: the run once, then what changed each time one of its files is renamed into place or appended to. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "base/clock.h"
#include "serve/serve_int.h"

#define SERVE_EVENT_MIN_MS 100   /* at most ten events a second: a journal grows by many lines a second */
#define SERVE_EVENT_IDLE_MS 5000 /* the run again at least this often (the heartbeat's age moves) */
#define SERVE_POLL_MS 500        /* how soon a stream sees the server stop */

static int stream_slot(struct serve *s, int delta)
{
	int ok = 1;

	pthread_mutex_lock(&s->lock);
	if (delta > 0 && s->streams >= SERVE_STREAMS_MAX)
		ok = 0;
	else
		s->streams += delta;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/*
 * What changed from a to b, as a JSON merge patch (RFC 7396: an object holds
 * the members that changed, null for one removed), except that an array
 * whose items changed becomes {"@len": its length, "INDEX": item, ...} with
 * only the items that differ; NULL when nothing changed.
 */
static cJSON *diff(const cJSON *a, const cJSON *b)
{
	cJSON *p;
	const cJSON *it;

	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		p = cJSON_CreateObject();
		cJSON_ArrayForEach(it, b) {
			const cJSON *was = cJSON_GetObjectItemCaseSensitive(a, it->string);
			cJSON *d = was ? diff(was, it) : cJSON_Duplicate(it, 1);

			if (d)
				cJSON_AddItemToObject(p, it->string, d);
		}
		cJSON_ArrayForEach(it, a)
			if (!cJSON_GetObjectItemCaseSensitive(b, it->string))
				cJSON_AddNullToObject(p, it->string);
	} else if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
		int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b), i = 0;

		p = cJSON_CreateObject();
		cJSON_ArrayForEach(it, b) {
			const cJSON *was = i < na ? cJSON_GetArrayItem(a, i) : NULL;

			if (!was || !cJSON_Compare(was, it, 1)) {
				char k[16];

				snprintf(k, sizeof(k), "%d", i);
				cJSON_AddItemToObject(p, k, cJSON_Duplicate(it, 1));
			}
			i++;
		}
		if (!p->child && na == nb) {
			cJSON_Delete(p);
			return NULL;
		}
		cJSON_AddNumberToObject(p, "@len", nb);
		return p;
	} else if (cJSON_IsObject(b) && !cJSON_IsObject(a)) {
		/* An object where there was none: the client takes it whole (it merges objects). */
		return cJSON_Duplicate(b, 1);
	} else {
		return cJSON_Compare(a, b, 1) ? NULL : cJSON_Duplicate(b, 1);
	}
	if (!p->child) {
		cJSON_Delete(p);
		return NULL;
	}
	return p;
}

/* The journal lines of run after seq *last (the page keeps its last 40), and the last seq sent. */
static cJSON *journal_after(const cJSON *run, double *last)
{
	cJSON *add = cJSON_CreateArray();
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(run, "journal")) {
		const cJSON *seq = cJSON_GetObjectItem(e, "seq");

		if (cJSON_IsNumber(seq) && seq->valuedouble > *last) {
			cJSON_AddItemToArray(add, cJSON_Duplicate(e, 1));
			*last = seq->valuedouble;
		}
	}
	return add;
}

/*
 * The run's page in one event: the whole run first ("run"), then only what
 * changed since the last event ("patch": diff's form, and "journal_add", the
 * journal's new lines); *sent holds what the client has.
 */
static int send_run(struct serve *s, char **out, const struct serve_run *r, cJSON **sent,
		    double *journal_seq)
{
	cJSON *o = NULL, *p, *body;
	char *text;
	int rc;

	if (serve_run_json(s, r, &o, NULL))
		return -1;
	cJSON_AddBoolToObject(o, "read_only", s->o.read_only);
	if (!*sent) {
		*journal_seq = -1;
		cJSON_Delete(journal_after(o, journal_seq));
		body = o;
	} else {
		cJSON *add = journal_after(o, journal_seq);
		cJSON *j = cJSON_DetachItemFromObject(o, "journal"), *was = cJSON_DetachItemFromObject(*sent, "journal");

		p = diff(*sent, o);
		if (!p)
			p = cJSON_CreateObject();
		if (cJSON_GetArraySize(add))
			cJSON_AddItemToObject(p, "journal_add", add);
		else
			cJSON_Delete(add);
		cJSON_AddItemToObject(o, "journal", j);
		cJSON_Delete(was);
		body = p;
	}
	cJSON_AddNumberToObject(body, "sent_wall_ms", (double)clk_wall_ms());
	text = cJSON_PrintUnformatted(body);
	if (body != o)
		cJSON_Delete(body);
	cJSON_DeleteItemFromObject(o, "sent_wall_ms");
	rc = -1;
	/* One line of JSON: an event's data never holds a raw newline. */
	if (text && asprintf(out, "event: %s\ndata: %s\n\n", *sent ? "patch" : "run", text) > 0) {
		cJSON_Delete(*sent);
		*sent = o;
		o = NULL;
		rc = 0;
	}
	cJSON_Delete(o);
	free(text);
	return rc;
}

/* Watches the run directory and its approvals; what is renamed in, written, appended or removed wakes the stream. */
static void watch(int fd, const struct serve_run *r, int *approvals_wd)
{
	char p[SERVE_PATH_MAX];
	const uint32_t mask = IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_ATTRIB;

	if (*approvals_wd >= 0)
		return;
	snprintf(p, sizeof(p), "%s/approvals", r->dir);
	*approvals_wd = inotify_add_watch(fd, p, mask | IN_DONT_FOLLOW | IN_ONLYDIR);
}

/* One page's stream: what it watches, what the client has, and the event being sent. */
struct serve_stream {
	struct serve *s;
	struct serve_run r;
	int fd, awd, dirty;
	int64_t last_ms;
	cJSON *sent;        /* the run as the client has it */
	double journal_seq; /* the last journal line it has */
	char *text;         /* the event being sent, from off */
	size_t off, len;
};

/*
 * libmicrohttpd's reader for the stream (thread per connection: it may wait):
 * the rest of the event being sent, else waits for the next and returns its
 * start; the end of the stream when the server stops or the run cannot be
 * read. A client that went is seen when its event fails to go, at least
 * every SERVE_EVENT_IDLE_MS.
 */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct serve_stream *st = cls;
	size_t n;

	while (st->off >= st->len) {
		struct pollfd p = { st->fd, POLLIN, 0 };
		int64_t now = clk_real_ns() / 1000000;
		char ev[4096];

		if (st->s->stopping)
			return MHD_CONTENT_READER_END_OF_STREAM;
		watch(st->fd, &st->r, &st->awd);
		if (st->dirty && now - st->last_ms >= SERVE_EVENT_MIN_MS) {
			free(st->text);
			st->text = NULL;
			st->off = st->len = 0;
			if (send_run(st->s, &st->text, &st->r, &st->sent, &st->journal_seq))
				return MHD_CONTENT_READER_END_WITH_ERROR;
			st->len = strlen(st->text);
			st->last_ms = now;
			st->dirty = 0;
			break;
		}
		/* Changes pile up while a run is sent: they are read (and dropped) after, then sent once. */
		if (poll(&p, 1, st->dirty ? SERVE_EVENT_MIN_MS : SERVE_POLL_MS) > 0) {
			while (read(st->fd, ev, sizeof(ev)) > 0)
				;
			st->dirty = 1;
		}
		if (clk_real_ns() / 1000000 - st->last_ms >= SERVE_EVENT_IDLE_MS)
			st->dirty = 1;
	}
	n = st->len - st->off < max ? st->len - st->off : max;
	memcpy(buf, st->text + st->off, n);
	st->off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct serve_stream *st = cls;

	cJSON_Delete(st->sent);
	free(st->text);
	close(st->fd);
	stream_slot(st->s, -1);
	free(st);
}

int serve_run_events(struct serve *s, struct serve_req *c, const struct serve_run *r)
{
	const uint32_t mask = IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_ATTRIB;
	struct serve_stream *st;
	struct MHD_Response *resp;

	if (!stream_slot(s, 1))
		return serve_send_error(c, 503, "too many live pages open (at most %d)", SERVE_STREAMS_MAX);
	st = calloc(1, sizeof(*st));
	if (!st) {
		stream_slot(s, -1);
		return serve_send_error(c, 500, "out of memory");
	}
	*st = (struct serve_stream){ .s = s, .r = *r, .awd = -1, .dirty = 1, .journal_seq = -1 };
	st->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (st->fd < 0 || inotify_add_watch(st->fd, r->dir, mask | IN_DONT_FOLLOW | IN_ONLYDIR) < 0) {
		int e = errno;

		if (st->fd >= 0)
			close(st->fd);
		free(st);
		stream_slot(s, -1);
		return serve_send_error(c, 500, "cannot watch run %s: %s", r->name, strerror(e));
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
	if (!resp) {
		stream_free(st);
		return serve_send_error(c, 500, "out of memory");
	}
	/* Ended by the connection's close, not chunked: an event is the bytes on the wire, whatever reads them. */
	MHD_set_response_options(resp, MHD_RF_HTTP_1_0_SERVER, MHD_RO_END);
	return serve_queue(c, 200, serve_response_headers(resp, "text/event-stream", "Cache-Control: no-store\r\n"));
}
