/* run_paint.c: a plan's paint batch on the machine: its strokes through the gate, verified by the camera, looked at again, retried over the cells still off, then braked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"

/* ---- wet paint ---- */

static long pass_len(const struct run *r, const struct plan_subtask *s);
static struct arm_action pass_action(const struct run *r, const struct plan_subtask *s, long k);

static int boxes_meet(const double *a, const double *b)
{
	return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

/*
 * The canvas box a stroke's paint covers: its polyline grown by half its
 * brush and a millimetre. 0, or -1 for an action that lays no paint.
 */
static int stroke_box(const struct run *r, const struct arm_action *a, double box[4])
{
	const struct machine_brush *b = machine_find_brush(&r->m, a->brush);
	double half = (b ? 0.5 * b->width_mm : 0.0) + 1.0;

	if (a->kind != ARM_STROKE || a->n_points == 0)
		return -1;
	box[0] = box[1] = INFINITY;
	box[2] = box[3] = -INFINITY;
	for (size_t i = 0; i < a->n_points; i++) {
		struct canvas_pt c = xform_to_canvas(&r->plan.xf, (struct machine_pt){ a->points[i].x,
											  a->points[i].y });

		box[0] = fmin(box[0], c.x - half);
		box[1] = fmin(box[1], c.y - half);
		box[2] = fmax(box[2], c.x + half);
		box[3] = fmax(box[3], c.y + half);
	}
	return 0;
}

/*
 * Stroke a laid paint over its box until now. Wet paint is kept stroke by
 * stroke, not as the batch's region: a batch's strokes (a correction round's
 * above all) are scattered over the canvas, and their region meets nearly
 * every other colour's, where the strokes themselves seldom do.
 */
static void note_wet(struct run *r, const struct plan_subtask *s, const struct arm_action *a)
{
	struct run_state *st = &r->st;
	double now = run_clock_s(r), dry = r->m.painting.dry_s, box[4];
	int k = 0;

	if (dry <= 0.0)
		return;
	if (stroke_box(r, a, box))
		memcpy(box, s->region_mm, sizeof(box));
	for (int i = 0; i < st->n_wet; i++) {
		if (st->wet[i].colour == s->colour && !memcmp(st->wet[i].region_mm, box, sizeof(box))) {
			st->wet[i].t_s = now; /* the same stroke again (a retry) */
			return;
		}
		if (st->wet[i].t_s + dry > now)
			st->wet[k++] = st->wet[i];
	}
	st->n_wet = k;
	if (st->n_wet == RUN_MAX_WET) {
		/* Full (strokes laid faster than they dry): the oldest joins the box of its colour's next. */
		int j = 1;

		while (j < st->n_wet && st->wet[j].colour != st->wet[0].colour)
			j++;
		if (j < st->n_wet) {
			double *o = st->wet[0].region_mm, *n = st->wet[j].region_mm;

			n[0] = fmin(n[0], o[0]), n[1] = fmin(n[1], o[1]);
			n[2] = fmax(n[2], o[2]), n[3] = fmax(n[3], o[3]);
		}
		memmove(st->wet, st->wet + 1, sizeof(st->wet[0]) * (RUN_MAX_WET - 1));
		st->n_wet--;
	}
	st->wet[st->n_wet].colour = s->colour;
	memcpy(st->wet[st->n_wet].region_mm, box, sizeof(box));
	st->wet[st->n_wet].t_s = now;
	st->n_wet++;
}

/*
 * Wet paint mixes with what is laid on it (a light colour over a wet dark one
 * comes out a muddy mix): before painting over another colour's wet paint,
 * wait until it is dry, polling all the while (signals, heartbeat, budgets).
 */
static int wait_dry(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	const struct run_state *st = &r->st;
	double until = -1e300, now = run_clock_s(r), dry = r->m.painting.dry_s;
	long n = pass_len(r, s);
	int colours = 0, rc;
	cJSON *d;

	if (dry <= 0.0)
		return 0;
	for (int i = 0; i < st->n_wet; i++) {
		int meets = 0;

		if (st->wet[i].colour == s->colour || st->wet[i].t_s + dry <= now)
			continue;
		/* The strokes of the pass still to paint, each against the wet stroke. */
		for (long k = r->st.sub[r->st.next].action_next; k < n && !meets; k++) {
			struct arm_action a = pass_action(r, s, k);
			double box[4];

			meets = stroke_box(r, &a, box) == 0 && boxes_meet(st->wet[i].region_mm, box);
		}
		if (meets) {
			until = fmax(until, st->wet[i].t_s + dry);
			colours++;
		}
	}
	if (until <= now)
		return 0;
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "wait_s", until - now);
	cJSON_AddNumberToObject(d, "wet_batches", colours);
	cJSON_AddNumberToObject(d, "dry_s", dry);
	if ((rc = run_event(r, "waiting_to_dry", d, err)))
		return rc;
	r->drying = 1;
	while ((now = run_clock_s(r)) < until) {
		/* A virtual clock jumps; a real one is slept on a second at a time, polling. */
		clk_sleep_ns(r->rig.clock, (int64_t)(fmin(until - now, 1.0) * 1e9) + 1);
		if ((rc = run_poll(r, err))) {
			r->drying = 0;
			return rc;
		}
	}
	r->drying = 0;
	return 0;
}

/* ---- paint in the cell ---- */

/*
 * The dips of a pass need paint in the colour's cell: the plan sized its mixes
 * for its own strokes, not for retries and longer correction rounds. When the
 * cell (as dispensed less what the dips took) holds too little, the colour is
 * topped up in its own cell first, through the mixing loop, verified like any
 * mix (st.topup_ml says a top-up is under way, for a resume).
 */
static int ensure_paint(struct run *r, const struct plan_subtask *s, long from, bl_err *err)
{
	struct run_colour *col = &r->st.colours[s->colour];
	const struct machine_brush *br = machine_find_brush(&r->m, s->brush);
	double need = 0.0, room;
	long n = pass_len(r, s);
	struct plan_subtask mix;
	struct run_sub scratch = { 0 };
	cJSON *d;
	int rc;

	for (long k = from; k < n; k++)
		if (pass_action(r, s, k).kind == ARM_DIP)
			need += br ? br->load_ml : 0.0;
	if (r->st.topup_ml <= 0.0 && (need <= 0.0 || col->cell_ml >= need + RUN_CELL_FILM_ML))
		return 0;
	if (r->st.topup_ml <= 0.0) {
		room = r->m.mixing.cell_max_ml - fmax(col->cell_ml, 0.0);
		r->st.topup_ml = fmin(room, fmax(r->m.mixing.cell_min_ml,
						need + RUN_CELL_FILM_ML - fmax(col->cell_ml, 0.0)));
		if (r->st.topup_ml <= 0.0) {
			r->st.topup_ml = 0.0;
			return 0;
		}
	}
	if (run_mix_topup_subtask(r, s->colour, &mix)) {
		r->st.topup_ml = 0.0;
		return 0; /* no mix planned for the colour: nothing to top up with */
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "colour", run_plan(r)->colours[s->colour].name);
	cJSON_AddNumberToObject(d, "cell_ml", col->cell_ml);
	cJSON_AddNumberToObject(d, "needed_ml", need);
	cJSON_AddNumberToObject(d, "topup_ml", r->st.topup_ml);
	if ((rc = run_event(r, "topping_up", d, err)) || (rc = run_state_save(r, err)))
		return rc;
	scratch.verdict_de00 = -1.0;
	rc = run_mix(r, &mix, &scratch, err);
	if (rc)
		return rc;
	r->st.topup_ml = 0.0;
	return run_state_save(r, err);
}

/* ---- acting ---- */

/* A dip goes to its colour's cell, which a fresh mix may have moved from the plan's. */
static void dip_cell(const struct run *r, const struct plan_subtask *s, struct arm_action *a)
{
	if (a->kind == ARM_DIP && a->cell[0] && r->st.colours[s->colour].cell[0])
		snprintf(a->cell, sizeof(a->cell), "%s", r->st.colours[s->colour].cell);
}

int run_plan_action(struct run *r, const struct plan_subtask *s, const struct arm_action *a0,
		    bl_err *err)
{
	struct arm_action a = *a0;
	struct gate_decision d;
	int rc;

	dip_cell(r, s, &a);
	rc = run_act(r, &a, &d, err);
	if (rc)
		return rc;
	if (a.kind == ARM_DIP && a.cell[0]) {
		const struct machine_brush *b = machine_find_brush(&r->m, a.brush);

		struct run_colour *col = &r->st.colours[s->colour];

		/* An estimate: dips can take more than it put in, never below empty. */
		col->cell_ml = fmax(0.0, col->cell_ml - (b ? b->load_ml : 0.0));
	}
	if (a.kind == ARM_STROKE)
		r->st.strokes_done++;
	return 0;
}

/* The batch's actions this pass: all of them, or the retry's. */
static int retrying(const struct run *r)
{
	return r->st.retry.active && r->st.retry.sub == r->st.next;
}

static long pass_len(const struct run *r, const struct plan_subtask *s)
{
	return retrying(r) ? r->st.retry.n : (long)s->n_actions;
}

/* Action k of this pass (a shallow copy: the points stay the plan's), with its id. */
static struct arm_action pass_action(const struct run *r, const struct plan_subtask *s, long k)
{
	struct arm_action a;

	if (!retrying(r))
		return s->actions[k];
	a = s->actions[r->st.retry.idx[k]];
	a.id = r->st.retry.id0 + k;
	return a;
}

/*
 * A pass the plan does not hold as it will run (a retry's strokes, dips sent
 * to the colour's new cell) is journaled whole before its first action.
 */
static int journal_pass(struct run *r, const struct plan_subtask *s, long n, bl_err *err)
{
	struct arm_action *a = calloc((size_t)n + 1, sizeof(*a));
	int differs = retrying(r), rc = 0;
	cJSON *d;

	if (!a)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (long k = 0; k < n; k++) {
		a[k] = pass_action(r, s, k);
		dip_cell(r, s, &a[k]);
		/* Not retrying, the pass is the plan's actions in order. */
		if (!differs && a[k].kind == ARM_DIP && strcmp(a[k].cell, s->actions[k].cell) != 0)
			differs = 1;
	}
	if (differs) {
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "retry", retrying(r) ? r->st.retry.attempt : 0);
		rc = run_actions_planned(r, "actions_planned", retrying(r) ? "retry" : "pass", a, (size_t)n,
					 d, err);
	}
	free(a);
	return rc;
}

/* Whether a stroke's path (machine mm) comes within half its brush of a marked grid cell. */
static int stroke_crosses(const struct run *r, const struct arm_action *a,
			  const unsigned char *marked)
{
	const struct plan *p = &r->plan;
	const struct machine_brush *b = machine_find_brush(&r->m, a->brush);
	double half = b ? 0.5 * b->width_mm : 0.0;

	for (size_t i = 0; i + 1 < a->n_points || (i == 0 && a->n_points == 1); i++) {
		const arm_point *p0 = &a->points[i], *p1 = &a->points[i + 1 < a->n_points ? i + 1 : i];
		double len = hypot(p1->x - p0->x, p1->y - p0->y);
		int steps = (int)ceil(len) + 1;

		for (int k = 0; k <= steps; k++) {
			double t = (double)k / steps;
			struct canvas_pt c = xform_to_canvas(
				&p->xf, (struct machine_pt){ p0->x + t * (p1->x - p0->x),
							     p0->y + t * (p1->y - p0->y) });
			double x = c.x, y = c.y;
			int c0 = (int)floor((x - half - p->image_mm[0]) / p->cell_mm);
			int c1 = (int)floor((x + half - p->image_mm[0]) / p->cell_mm);
			int r0 = (int)floor((y - half - p->image_mm[1]) / p->cell_mm);
			int r1 = (int)floor((y + half - p->image_mm[1]) / p->cell_mm);

			for (int row = r0 < 0 ? 0 : r0; row <= r1 && row < p->grid_rows; row++)
				for (int col = c0 < 0 ? 0 : c0; col <= c1 && col < p->grid_cols; col++)
					if (marked[(size_t)row * p->grid_cols + col])
						return 1;
		}
	}
	return 0;
}

/*
 * The retry of a batch: its strokes that cross a cell still beyond the
 * tolerance, each after the dip that loaded it in the first pass, then what
 * ended the batch (wash, wipe, park). Every stroke when none crosses one.
 */
static int plan_retry(struct run *r, const struct plan_subtask *s, const double *per_cell,
		      int *n_strokes, int *n_cells, bl_err *err)
{
	const struct plan *p = &r->plan;
	struct run_retry *t = &r->st.retry;
	unsigned char *marked = calloc((size_t)p->grid_cols * p->grid_rows + 1, 1);
	unsigned char *pick = calloc(s->n_actions + 1, 1);
	int *idx = calloc(s->n_actions + 1, sizeof(*idx));
	long last_stroke = -1;
	int n = 0, any = 0, attempt = retrying(r) ? t->attempt + 1 : 1;

	if (!marked || !pick || !idx) {
		free(marked);
		free(pick);
		free(idx);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	*n_cells = 0;
	for (size_t i = 0; i < s->n_cells; i++)
		if (per_cell[i] > s->tolerance_de00 && s->cells[i].col < p->grid_cols &&
		    s->cells[i].row < p->grid_rows) {
			marked[(size_t)s->cells[i].row * p->grid_cols + s->cells[i].col] = 1;
			(*n_cells)++;
		}
	for (size_t i = 0; i < s->n_actions; i++)
		if (s->actions[i].kind == ARM_STROKE && stroke_crosses(r, &s->actions[i], marked))
			pick[i] = 1, any = 1;
	/* No cell off any more (what the pass taught changed the aim): nothing to repaint, only to look. */
	for (size_t i = 0; *n_cells > 0 && i < s->n_actions; i++)
		if (s->actions[i].kind == ARM_STROKE && (pick[i] || !any))
			pick[i] = 1, last_stroke = (long)i;
	if (last_stroke < 0)
		last_stroke = (long)s->n_actions; /* and no wash, wipe or park either */
	*n_strokes = 0;
	{
		long dip = -1;

		for (size_t i = 0; i < s->n_actions; i++) {
			enum arm_kind k = s->actions[i].kind;

			if (k == ARM_DIP) {
				dip = (long)i;
			} else if (k == ARM_STROKE) {
				if (!pick[i])
					continue;
				if (dip >= 0)
					idx[n++] = (int)dip;
				dip = -1;
				idx[n++] = (int)i;
				(*n_strokes)++;
			} else if ((long)i > last_stroke) {
				idx[n++] = (int)i;
			}
		}
	}
	free(marked);
	free(pick);
	run_retry_clear(t);
	t->active = 1;
	t->sub = r->st.next;
	t->attempt = attempt;
	t->id0 = r->st.next_action_id;
	r->st.next_action_id += n;
	t->n = n;
	t->idx = idx;
	r->st.strokes_total += *n_strokes;
	return 0;
}

/*
 * The canvas before a batch, to judge it on the change it makes: the last
 * observation (every batch and checkpoint ends with one), or a fresh one in a
 * process that has not looked yet. A retry keeps its first pass's base. A
 * first pass resumed part way, or a retry in a process that did not see the
 * first pass begin, takes the canvas as it is now: where strokes already laid
 * the paint, its cells are expected to stay paint. (The planner's prediction
 * would not do: a batch deferred for the operator is painted after the
 * colours planned to go over it.) Such a base judges, but teaches nothing.
 */
static int snapshot_before(struct run *r, const struct plan_subtask *s, const char *name, bl_err *err)
{
	struct run_sub *sub = &r->st.sub[r->st.next];
	int partial = retrying(r) || sub->action_next > 0;
	size_t bytes;
	float *keep;

	if (retrying(r) && r->before_lab && r->before_round == r->st.round &&
	    r->before_sub == r->st.next)
		return 0;
	free(r->before_lab);
	r->before_lab = NULL;
	if (r->st.open_loop)
		return 0;
	if (!r->last_lab) {
		struct run_canvas c = { 0 };
		char what[48];
		int rc;

		snprintf(what, sizeof(what), "%s-before", name);
		if ((rc = run_observe_canvas(r, what, &c, err)))
			return rc;
		run_canvas_free(&c);
	}
	(void)s;
	bytes = (size_t)r->last_w * r->last_h * 3 * sizeof(float);
	keep = malloc(bytes);
	if (!keep)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	memcpy(keep, r->last_lab, bytes);
	r->before_lab = keep;
	r->before_round = r->st.round;
	r->before_sub = r->st.next;
	r->before_partial = partial;
	return 0;
}

/* The batch's footprint on the canvas raster, once a subtask (the observation's size: the canvas at 1 px/mm). */
static int batch_footprint(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	int w = (int)lround(r->m.canvas.size_mm[0]), h = (int)lround(r->m.canvas.size_mm[1]);
	int rc;

	if (r->alpha && r->alpha_round == r->st.round && r->alpha_sub == r->st.next)
		return 0;
	free(r->alpha);
	r->alpha = malloc((size_t)w * h * sizeof(*r->alpha));
	if (!r->alpha)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = plan_batch_alpha(run_plan(r), &r->m, s, r->alpha, w, h, err))) {
		free(r->alpha);
		r->alpha = NULL;
		return rc;
	}
	r->alpha_w = w;
	r->alpha_h = h;
	r->alpha_round = r->st.round;
	r->alpha_sub = r->st.next;
	return 0;
}

/* Resuming a pass a crash interrupted: look first, never repeat a stroke that may have run. */
static int resume_pass(struct run *r, const struct plan_subtask *s, const char *name, bl_err *err)
{
	struct run_sub *sub = &r->st.sub[r->st.next];
	struct run_canvas c = { 0 };
	long k = sub->action_next, n = pass_len(r, s);
	struct arm_action a = pass_action(r, s, k < n ? k : 0);
	int seen = k < n ? run_journal_allowed(r, name, a.id) : 0;
	double verdict = 0.0;
	cJSON *dj = cJSON_CreateObject();
	int rc;

	if (!r->st.open_loop && (rc = run_observe_record(r, s, "reobserve", &c, &verdict, err))) {
		cJSON_Delete(dj);
		return rc;
	}
	run_canvas_free(&c);
	cJSON_AddNumberToObject(dj, "action_next", (double)k);
	cJSON_AddNumberToObject(dj, "action_id", (double)a.id);
	cJSON_AddNumberToObject(dj, "retry", retrying(r) ? r->st.retry.attempt : 0);
	cJSON_AddStringToObject(dj, "last_action", seen == 2 ? "done" : seen ? "unknown" : "not run");
	if (!r->st.open_loop)
		cJSON_AddNumberToObject(dj, "observed_de00", verdict);
	if (seen && k < n && !arm_kind_repeatable(a.kind)) {
		sub->action_next++;
		if (a.kind == ARM_STROKE)
			r->st.strokes_done++;
		cJSON_AddStringToObject(dj, "decision", "the interrupted stroke is not repeated");
	}
	if ((rc = run_event(r, "batch_resumed", dj, err)))
		return rc;
	/* The brush was loaded before the crash: load it again before the next stroke. */
	for (long i = sub->action_next - 1; i >= 0; i--) {
		struct arm_action d = pass_action(r, s, i);

		if (d.kind == ARM_DIP) {
			if (sub->action_next < n && pass_action(r, s, sub->action_next).kind == ARM_STROKE) {
				d.id = r->st.next_action_id++;
				dip_cell(r, s, &d);
				if ((rc = run_actions_planned(r, "actions_planned", "redip", &d, 1, NULL, err)) ||
				    (rc = run_plan_action(r, s, &d, err)))
					return rc;
			}
			break;
		}
	}
	r->st.batch_unknown = 0;
	return 0;
}

/* The verdict of a pass as a journal event; per_cell filled when given. */
static int verify(struct run *r, const struct plan_subtask *s, const char *what, double *verdict,
		  double *per_cell, int learn, bl_err *err)
{
	struct run_canvas c = { 0 };
	cJSON *dj;
	int rc = run_observe_record(r, s, what, &c, verdict, err);

	if (rc)
		return rc;
	if (per_cell)
		run_cells_verdict(r, s, &c, r->before_lab, per_cell);
	dj = cJSON_CreateObject();
	cJSON_AddNumberToObject(dj, "observed_vs_predicted_de00", *verdict);
	{
		const struct run_colour *col = &r->st.colours[s->colour];

		json_add_vec(dj, "colour_canvas_offset",
			     (double[]){ col->canvas_offset.L, col->canvas_offset.a, col->canvas_offset.b }, 3);
		cJSON_AddNumberToObject(dj, "colour_canvas_cells", (double)col->canvas_cells);
		cJSON_AddNumberToObject(dj, "colour_hide", col->hide_weight > 0.0 ? col->hide : 1.0);
		if (col->coat_weight > 0.0)
			cJSON_AddNumberToObject(dj, "colour_coat", col->coat);
	}
	cJSON_AddNumberToObject(dj, "tolerance_de00", s->tolerance_de00);
	cJSON_AddNumberToObject(dj, "canvas_mean_de00", r->st.hist[r->st.n_hist - 1].mean_de00);
	cJSON_AddNumberToObject(dj, "retry", retrying(r) ? r->st.retry.attempt : 0);
	cJSON_AddStringToObject(dj, "verdict", *verdict <= s->tolerance_de00 ? "pass" : "fail");
	cJSON_AddStringToObject(dj, "frame", strrchr(c.frame, '/') + 1);
	/* Judged first, then learnt from: an end condition never moves while its subtask runs. */
	if ((learn || *verdict <= s->tolerance_de00) && !r->before_partial) {
		run_learn_canvas(r, s, &c, r->before_lab);
		run_learn_hiding(r, s, &c, r->before_lab);
	}
	run_canvas_free(&c);
	return run_event(r, "verified", dj, err);
}

/* The batch waits for its colour's mix, which only the operator can settle now. */
static int wait_for_mix(struct run *r, const struct plan_subtask *s, struct run_sub *sub, bl_err *err)
{
	sub->status = RUN_SUB_DEFERRED;
	snprintf(sub->note, sizeof(sub->note), "waits for colour %s's mix (operator)",
		 run_plan(r)->colours[s->colour].name);
	return run_event(r, "deferred", cJSON_CreateString(sub->note), err);
}

/*
 * A batch observed beyond its tolerance twice (verdict; prev the verdict
 * before this pass): an attempt for the brakes, which may stop the run
 * (BL_EBRAKE), else a retry pass planned over the cells still off.
 */
static int batch_failed(struct run *r, const struct plan_subtask *s, const char *name, double prev,
			double verdict, double *per_cell, bl_err *err)
{
	struct run_sub *sub = &r->st.sub[r->st.next];
	char why[200], key[96];
	enum run_brake b;
	int n_strokes = 0, n_cells = 0, rc;
	cJSON *dj;

	/*
	 * The same failure is this batch failing again without getting
	 * clearly closer (a tenth, or half a unit): retrying does not help,
	 * it is stuck. A retry that got closer starts the count again;
	 * other batches are other failures.
	 */
	if (retrying(r) && prev >= 0.0 && prev - verdict >= fmax(0.5, 0.1 * prev))
		snprintf(key, sizeof(key), "paint batch %s got closer on retry %d", name,
			 r->st.retry.attempt);
	else
		snprintf(key, sizeof(key), "paint batch %s not verified, retrying does not "
			 "bring it closer", name);
	snprintf(why, sizeof(why), "paint batch %s observed %.1f from its prediction "
		 "(tolerance %.1f)%s", name, verdict, s->tolerance_de00,
		 retrying(r) ? " after retrying" : "");
	b = run_brakes_failure(&r->st.brakes, &r->m.brakes, key, why);
	sub->attempts++;
	snprintf(sub->note, sizeof(sub->note), "%.2f from its prediction after %d attempt%s",
		 verdict, sub->attempts, sub->attempts == 1 ? "" : "s");
	if (b != RUN_BRAKE_NONE) {
		sub->status = RUN_SUB_FAILED;
		return run_brake(r, b, err);
	}
	/* What the failed pass taught (learnt after judging) sets the retry's aim: cells off from it. */
	{
		struct run_canvas last = { r->last_w, r->last_h, r->last_lab, "" };

		if (r->last_lab)
			run_cells_verdict(r, s, &last, r->before_lab, per_cell);
	}
	if ((rc = plan_retry(r, s, per_cell, &n_strokes, &n_cells, err)))
		return rc;
	sub->action_next = 0;
	dj = cJSON_CreateObject();
	cJSON_AddNumberToObject(dj, "attempt", r->st.retry.attempt);
	cJSON_AddNumberToObject(dj, "observed_vs_predicted_de00", verdict);
	cJSON_AddNumberToObject(dj, "cells_off", n_cells);
	cJSON_AddNumberToObject(dj, "strokes", n_strokes);
	cJSON_AddNumberToObject(dj, "actions", r->st.retry.n);
	if ((rc = run_event(r, "batch_retry", dj, err)))
		return rc;
	return run_state_save(r, err);
}

static int paint_run(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	struct run_sub *sub = &r->st.sub[r->st.next];
	struct run_colour *col = &r->st.colours[s->colour];
	struct gate_decision d;
	double verdict, prev, *per_cell = NULL;
	char name[32];
	int rc;

	run_subtask_name(r, r->st.next, name, sizeof(name));
	if (col->escalated && !col->accepted)
		return wait_for_mix(r, s, sub, err);
	if ((rc = run_tolerance(r, "paint", s->tolerance_de00, &d, err)))
		return rc;
	if (r->st.retry.active && !retrying(r))
		run_retry_clear(&r->st.retry); /* left by a subtask that is over */
	if (!r->st.open_loop && (rc = batch_footprint(r, s, err)))
		return rc;
	per_cell = calloc(s->n_cells + 1, sizeof(*per_cell));
	if (!per_cell)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (;;) {
		long n = pass_len(r, s);

		if (r->st.batch_unknown && sub->action_next > 0 && (rc = resume_pass(r, s, name, err)))
			goto out;
		r->st.batch_unknown = 0;
		if (sub->action_next < n && (rc = ensure_paint(r, s, sub->action_next, err)))
			goto out;
		if (col->escalated && !col->accepted) {
			/* The top-up could not be mixed: the batch waits for the operator like the colour. */
			rc = wait_for_mix(r, s, sub, err);
			goto out;
		}
		if (sub->action_next < n && (rc = wait_dry(r, s, err)))
			goto out;
		if ((rc = snapshot_before(r, s, name, err)))
			goto out;
		if (sub->action_next == 0 && (rc = journal_pass(r, s, n, err)))
			goto out;
		/* action_next moves on before the save: state.json names the next to run, never one done. */
		while (sub->action_next < n) {
			struct arm_action a = pass_action(r, s, sub->action_next);

			r->st.batch_unknown = 1;
			rc = run_plan_action(r, s, &a, err);
			if (rc == BL_EDEFERRED) {
				sub->status = RUN_SUB_DEFERRED;
				if (retrying(r)) {
					/* Run again later, it verifies what the first pass left and plans a retry anew. */
					run_retry_clear(&r->st.retry);
					sub->action_next = (long)s->n_actions;
				}
				snprintf(sub->note, sizeof(sub->note), "an action waits for the operator (%s)",
					 r->st.deferred[r->st.n_deferred - 1].request);
				r->st.batch_unknown = 0;
				rc = run_state_save(r, err);
				goto out;
			}
			if (rc)
				goto out;
			if (a.kind == ARM_STROKE)
				note_wet(r, s, &a);
			sub->action_next++;
			if ((rc = run_state_save(r, err)))
				goto out;
		}
		r->st.batch_unknown = 0;
		if (r->st.open_loop) {
			sub->status = RUN_SUB_DONE;
			break;
		}
		run_review_painted(r, s);
		prev = sub->verdict_de00;
		if ((rc = verify(r, s, name, &verdict, NULL, 0, err)))
			goto out;
		sub->verdict_de00 = verdict;
		if (verdict > s->tolerance_de00) {
			/* A fresh look before blaming the paint: one frame can be off (noise, the arm in view). */
			char what[48];

			snprintf(what, sizeof(what), "%s-again", name);
			if ((rc = verify(r, s, what, &verdict, per_cell, 1, err)))
				goto out;
			sub->verdict_de00 = verdict;
		}
		if (verdict <= s->tolerance_de00) {
			run_brakes_success(&r->st.brakes);
			sub->status = RUN_SUB_DONE;
			if (retrying(r))
				snprintf(sub->note, sizeof(sub->note), "verified after %d retr%s",
					 r->st.retry.attempt, r->st.retry.attempt == 1 ? "y" : "ies");
			break;
		}
		/* Failed twice: counted by the brakes, then painted again where it is still off. */
		if ((rc = batch_failed(r, s, name, prev, verdict, per_cell, err)))
			goto out;
	}
	run_retry_clear(&r->st.retry);
	rc = 0;
out:
	free(per_cell);
	return rc;
}

void run_cells_expected(const struct plan_subtask *s, cJSON *e)
{
	cJSON_AddNumberToObject(e, "cells", (double)s->n_cells);
	cJSON_AddStringToObject(e, "verified_by", "mean CIEDE2000 of the observed cells against their predicted Lab");
}

static void paint_expected(const struct plan *p, const struct plan_subtask *s, cJSON *d, cJSON *e)
{
	cJSON_AddStringToObject(d, "colour", p->colours[s->colour].name);
	cJSON_AddNumberToObject(d, "strokes", s->n_strokes);
	json_add_vec(d, "region_mm", s->region_mm, 4);
	run_cells_expected(s, e);
}

static void paint_what(const struct plan *p, const struct plan_subtask *s, char *buf, size_t n)
{
	snprintf(buf, n, "paint batch %d of colour %s (%d strokes, %s)", s->batch, p->colours[s->colour].name,
		 s->n_strokes, s->brush);
}

const struct run_kind run_kind_paint = {
	.run = paint_run,
	.expected = paint_expected,
	.what = paint_what,
	.paints = 1,
};
