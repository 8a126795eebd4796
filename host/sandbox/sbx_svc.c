/* sbx_svc.c: the sandbox's service thread: keeps the planner's stderr up to its cap, serves the broker, queues events. */
#include "sandbox/sbx_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sbx_queue(struct sbx_impl *s, const char *event, cJSON *data)
{
	struct sbx_event *e = calloc(1, sizeof(*e));

	if (!e) {
		cJSON_Delete(data);
		return;
	}
	snprintf(e->name, sizeof(e->name), "%s", event);
	e->data = data;
	pthread_mutex_lock(&s->lock);
	if (s->q_tail)
		s->q_tail->next = e;
	else
		s->q_head = e;
	s->q_tail = e;
	pthread_mutex_unlock(&s->lock);
}

/* Reads what stderr has; keeps it while there is room and drops the rest, so a planner writing without end costs no memory. 0 at EOF. */
static int drain_stderr(struct sbx_impl *s)
{
	char buf[65536];
	ssize_t r = read(s->err_fd, buf, sizeof(buf));

	if (r < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (r == 0)
		return 0;
	pthread_mutex_lock(&s->lock);
	size_t room = s->err_max - s->err_len;
	size_t keep = (size_t)r < room ? (size_t)r : room;
	memcpy(s->err_buf + s->err_len, buf, keep);
	s->err_len += keep;
	s->err_total += (unsigned long long)r;
	pthread_mutex_unlock(&s->lock);
	return 1;
}

void *sbx_service(void *arg)
{
	struct sbx_impl *s = arg;
	struct pollfd pfd[2 + 2 * EGRESS_MAX_CONNS + 1];
	int err_open = 1;

	for (;;) {
		int n = 0, nb;

		pfd[n++] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = err_open ? s->err_fd : -1, .events = POLLIN };
		nb = s->has_egress ? egress_poll_fds(s, pfd + n) : 0;
		if (poll(pfd, (nfds_t)(n + nb), 1000) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (err_open && pfd[1].revents && !drain_stderr(s))
			err_open = 0;
		if (s->has_egress)
			egress_poll_done(s, pfd + n, nb);
	}
	return NULL;
}
