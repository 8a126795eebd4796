/* rec_arm.c: a recording arm backend (a test fake at the hardware boundary): it moves nothing, it writes down what reached it. */
#include "rec_arm.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm/arm_backend.h"
#include "base/fs.h"
#include "safety/gate.h"

static void note(struct rec_state *s, const char *what)
{
	if (s->log_path)
		fs_append_line(s->log_path, what, NULL);
}

static int rec_home(struct arm *a, bl_err *err)
{
	struct rec_state *s = a->priv;

	s->n_home++;
	note(s, "home");
	return 0;
}

static int rec_execute(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		       bl_err *err)
{
	struct rec_state *s = a->priv;
	char line[64];

	s->n_execute++;
	s->last_kind = (int)act->kind;
	s->last.n = 0;
	if (path->n > s->last.cap) {
		struct arm_segment *ns = realloc(s->last.seg, path->n * sizeof(*ns));

		if (!ns)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		s->last.seg = ns;
		s->last.cap = path->n;
	}
	if (path->n)
		memcpy(s->last.seg, path->seg, path->n * sizeof(*path->seg));
	s->last.n = path->n;
	snprintf(line, sizeof(line), "execute %s %zu", arm_kind_names[act->kind], path->n);
	note(s, line);
	if (s->execute_ms > 0) {
		/* A long motion: a real backend's wait loop wakes on the signal pipe. */
		int64_t end = clk_real_ns() + (int64_t)s->execute_ms * 1000000;

		s->moving = 1;
		while (clk_real_ns() < end && gate_signals_count() == 0) {
			struct pollfd p = { gate_signals_fd(), POLLIN, 0 };

			poll(&p, p.fd >= 0 ? 1 : 0, 5);
		}
		if (gate_signals_count() == 0)
			s->moving = 0;
	}
	if (s->fault_during_execute) {
		s->fault = 1;
		snprintf(s->fault_msg, sizeof(s->fault_msg), "limit switch X+ tripped");
		return bl_fail(err, BL_ESAFETY, "limit switch X+ tripped");
	}
	if (s->execute_rc)
		return bl_fail(err, s->execute_rc, "recording arm told to fail");
	if (path->n)
		s->pos = path->seg[path->n - 1].to;
	return 0;
}

static int rec_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	struct rec_state *s = a->priv;

	memset(st, 0, sizeof(*st));
	st->pos_mm = s->pos;
	st->homed = 1;
	if (s->moving && s->hold_ns && clk_real_ns() - s->hold_ns >= (int64_t)s->settle_ms * 1000000)
		s->moving = 0;
	st->moving = s->moving;
	st->held = s->hold_ns != 0;
	st->fault = s->fault;
	st->estop = s->estop;
	snprintf(st->fault_msg, sizeof(st->fault_msg), "%s", s->fault_msg);
	return 0;
}

static int rec_hold(struct arm *a, bl_err *err)
{
	struct rec_state *s = a->priv;

	s->n_hold++;
	s->hold_ns = clk_real_ns();
	note(s, "hold");
	return 0;
}

static int rec_resume(struct arm *a, bl_err *err)
{
	struct rec_state *s = a->priv;

	s->n_resume++;
	s->hold_ns = 0;
	note(s, "resume");
	return 0;
}

static int rec_stop(struct arm *a, bl_err *err)
{
	struct rec_state *s = a->priv;

	s->n_stop++;
	s->moving = 0;
	note(s, "stop");
	return 0;
}

static void rec_close(struct arm *a)
{
	struct rec_state *s = a->priv;

	arm_path_free(&s->last);
	free(a);
}

static const struct arm_ops rec_ops = {
	.name = "recording",
	.home = rec_home,
	.execute = rec_execute,
	.status = rec_status,
	.hold = rec_hold,
	.resume = rec_resume,
	.stop = rec_stop,
	.close = rec_close,
};

struct arm *rec_arm_open(const struct machine *m, clk *c, struct rec_state *st)
{
	struct arm *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->ops = &rec_ops;
	a->priv = st;
	a->m = m;
	a->clock = c;
	if (st->pos.x == 0 && st->pos.y == 0 && st->pos.z == 0)
		st->pos = (arm_point){ m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	return a;
}
