/* serve_events.c: a run's page kept live by server-sent events: the run again each time one of its files is renamed into place or appended to. */
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

static int send_run(struct serve *s, struct mg_connection *c, const struct serve_run *r)
{
	cJSON *o = NULL;
	char *text;
	int rc;

	if (serve_run_json(s, r, &o, NULL))
		return -1;
	cJSON_AddBoolToObject(o, "read_only", s->o.read_only);
	cJSON_AddNumberToObject(o, "sent_wall_ms", (double)clk_wall_ms());
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return -1;
	/* One line of JSON: an event's data never holds a raw newline. */
	rc = mg_printf(c, "event: run\ndata: %s\n\n", text) > 0 ? 0 : -1;
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

int serve_run_events(struct serve *s, struct mg_connection *c, const struct serve_run *r)
{
	const uint32_t mask = IN_MOVED_TO | IN_CLOSE_WRITE | IN_MODIFY | IN_CREATE | IN_DELETE | IN_ATTRIB;
	int fd, awd = -1;
	int64_t last_ms = 0;

	if (!stream_slot(s, 1))
		return serve_send_error(c, 503, "too many live pages open (at most %d)", SERVE_STREAMS_MAX);
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 || inotify_add_watch(fd, r->dir, mask | IN_DONT_FOLLOW | IN_ONLYDIR) < 0) {
		if (fd >= 0)
			close(fd);
		stream_slot(s, -1);
		return serve_send_error(c, 500, "cannot watch run %s: %s", r->name, strerror(errno));
	}
	mg_printf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
		     "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n");
	/* Changes pile up while a run is sent: they are read (and dropped) after, then sent once. */
	for (int dirty = 1; !s->stopping;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t now = clk_real_ns() / 1000000;
		char buf[4096];

		watch(fd, r, &awd);
		if (dirty && now - last_ms >= SERVE_EVENT_MIN_MS) {
			if (send_run(s, c, r))
				break; /* the client went */
			last_ms = now;
			dirty = 0;
		}
		if (poll(&p, 1, dirty ? SERVE_EVENT_MIN_MS : SERVE_POLL_MS) > 0) {
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			dirty = 1;
		}
		if (clk_real_ns() / 1000000 - last_ms >= SERVE_EVENT_IDLE_MS)
			dirty = 1;
	}
	close(fd);
	stream_slot(s, -1);
	return 0;
}
