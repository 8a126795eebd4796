/* run_progress.c: the engine's journal events, the subtask names they carry, brakes said, and the progress line. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "engine/run_int.h"

int run_event(struct run *r, const char *event, cJSON *data, bl_err *err)
{
	return journal_event(&r->j, NULL, event, data, NULL, err);
}

void run_subtask_name(const struct run *r, size_t i, char *out, size_t n)
{
	const struct plan *p = r->st.round == 0 ? &r->plan : &r->corr;
	int id = i < p->n_subtasks ? p->subtasks[i].id : (int)i + 1;

	if (r->st.round == 0)
		snprintf(out, n, "s%d", id);
	else
		snprintf(out, n, "c%d.s%d", r->st.round, id);
}

int run_brake(struct run *r, enum run_brake b, bl_err *err)
{
	cJSON *d = cJSON_CreateObject();
	bl_err e2;

	snprintf(r->st.state, sizeof(r->st.state), "braked");
	snprintf(r->st.brake, sizeof(r->st.brake), "%s", run_brake_names[b]);
	snprintf(r->st.reason, sizeof(r->st.reason), "%s", r->st.brakes.reason);
	cJSON_AddStringToObject(d, "brake", run_brake_names[b]);
	cJSON_AddStringToObject(d, "reason", r->st.brakes.reason);
	/* The brake stops the run whatever happens; a journal that cannot say so is said with it. */
	if (run_event(r, "brake", d, &e2))
		return bl_fail(err, BL_EBRAKE, "brake (%s): %s (and it could not be journaled: %s)",
			       run_brake_names[b], r->st.brakes.reason, e2.msg);
	return bl_fail(err, BL_EBRAKE, "brake (%s): %s", run_brake_names[b], r->st.brakes.reason);
}

static const char *phase_name(const struct run *r)
{
	const struct plan *p = run_plan((struct run *)r);

	if (strcmp(r->st.state, "running"))
		return r->st.state;
	if (r->drying)
		return "drying";
	if (p->n_subtasks == 0)
		return "preparing"; /* homing, looking at the blank canvas, planning */
	if (r->st.next < p->n_subtasks)
		return plan_subtask_names[p->subtasks[r->st.next].type];
	return "final";
}

/*
 * The progress line: phase, subtask, strokes, ETA, the canvas's error. On a
 * terminal one live line rewritten at most five times a second; otherwise a
 * plain line at most every 5 s, and whenever forced (a checkpoint, the end).
 * The ETA is this process's wall time scaled by the strokes left, once a
 * twentieth of them are done.
 */
void run_progress(struct run *r, int force)
{
	int64_t now = clk_real_ns();
	const struct plan *p = run_plan(r);
	double el = (double)(now - r->wall0_ns) * 1e-9, eta = -1, de = -1;
	long done = r->st.strokes_done - r->strokes_at_start, left = r->st.strokes_total - r->st.strokes_done;
	char line[320], sub[32] = "-", eta_s[32], de_s[32];
	int fd = r->opt.progress_fd >= 0 ? r->opt.progress_fd : 2;
	int len;

	if (r->opt.quiet)
		return;
	if (!force && now - r->last_progress_ns < (r->opt.progress_live ? 200000000LL : 5000000000LL))
		return;
	r->last_progress_ns = now;
	if (r->st.next < p->n_subtasks)
		run_subtask_name(r, r->st.next, sub, sizeof(sub));
	if (done > 0 && left > 0 && done * 20 >= r->st.strokes_total && el > 0.5)
		eta = el * (double)left / (double)done;
	if (r->st.n_hist > 0)
		de = r->st.hist[r->st.n_hist - 1].mean_de00;
	if (eta < 0)
		snprintf(eta_s, sizeof(eta_s), left > 0 ? "-" : "0 s");
	else if (eta < 120)
		snprintf(eta_s, sizeof(eta_s), "%.0f s", eta);
	else
		snprintf(eta_s, sizeof(eta_s), "%.0f min", eta / 60.0);
	if (de < 0)
		snprintf(de_s, sizeof(de_s), "-");
	else
		snprintf(de_s, sizeof(de_s), "%.2f", de);
	if (p->n_subtasks == 0)
		len = snprintf(line, sizeof(line), "%s%-10s", r->opt.progress_live ? "\r" : "",
			       phase_name(r));
	else
		len = snprintf(line, sizeof(line),
			       "%s%-10s %-8s %s%zu/%zu  strokes %ld/%ld  ETA %s  canvas CIEDE2000 %s",
			       r->opt.progress_live ? "\r" : "", phase_name(r), sub,
			       r->st.round ? "correction " : "subtask ",
			       r->st.next < p->n_subtasks ? r->st.next + 1 : p->n_subtasks,
			       p->n_subtasks, r->st.strokes_done, r->st.strokes_total, eta_s, de_s);
	if (len <= 0 || len >= (int)sizeof(line) - 4)
		return;
	if (r->opt.progress_live) {
		len += snprintf(line + len, sizeof(line) - (size_t)len, "\033[K");
	} else {
		line[len++] = '\n';
		line[len] = '\0';
	}
	if (write(fd, line, (size_t)len) < 0) {
		/* progress is a courtesy: a closed terminal must not stop the run */
	}
}
