/* test_mix_loop.c: correction from measurements: the update rule, the one-step loop's decisions, and its state on disk. */
#include "base/json.h"
#include "base/rng.h"
#include "mix_fixture.h"

/*
 * A unit test of the update rule, not of the simulator: the "real" paints
 * here are the controller's own model with each paint's K and S perturbed
 * (strength, the balance of K against S, a tilt of K across the spectrum),
 * as a new batch differs from its data sheet. Measurements are that model's
 * prediction plus noise. The simulator's richer physics is exercised by
 * `mix trial`, not here.
 */
static void perturbed_batch(const struct mix_model *m, struct mix_model *truth, uint64_t seed,
			    double strength)
{
	rng r;

	*truth = *m;
	rng_init(&r, seed);
	for (int i = 0; i < m->n_paints; i++) {
		double g = strength * rng_normal(&r), ks = 0.1 * rng_normal(&r);
		double tilt = 0.1 * rng_normal(&r);

		for (int b = 0; b < m->n_bands; b++) {
			double x = (m->wl_nm[b] - 550.0) / 150.0;

			truth->k[i][b] *= exp(g + ks + tilt * x);
			truth->s[i][b] *= exp(g - ks);
		}
	}
}

static color_lab measure(const struct mix_model *truth, const int *have, rng *r, double noise)
{
	double amt[MIX_MAX_PAINTS];
	color_lab c;

	for (int i = 0; i < truth->n_paints; i++)
		amt[i] = have[i];
	mix_predict(truth, NULL, amt, &c);
	c.L += noise * rng_normal(r);
	c.a += noise * rng_normal(r);
	c.b += noise * rng_normal(r);
	return c;
}

/*
 * The world for mix_run in these tests: a cell and a "camera" that reports
 * the perturbed model's colour of what the cell holds, plus noise. A fake at
 * the boundary, for testing the loop's rule; the simulator replaces it in
 * `mix trial`.
 */
struct fake_world {
	const struct mix_model *truth;
	int cell[MIX_MAX_PAINTS];
	rng r;
	double noise;
	int fresh, dispenses, measures;
	char first_op[16];     /* the first operation called */
	int pause_on_dispense; /* answer the n-th dispense with BL_EPAUSED (0: never) */
};

static void note_op(struct fake_world *w, const char *op)
{
	if (!w->first_op[0])
		snprintf(w->first_op, sizeof(w->first_op), "%s", op);
}

static int fw_fresh(void *ctx, bl_err *err)
{
	struct fake_world *w = ctx;

	(void)err;
	note_op(w, "fresh");
	memset(w->cell, 0, sizeof(w->cell));
	w->fresh++;
	return 0;
}

static int fw_dispense(void *ctx, const int *units, bl_err *err)
{
	struct fake_world *w = ctx;

	note_op(w, "dispense");
	if (w->pause_on_dispense && w->dispenses + 1 == w->pause_on_dispense)
		return bl_fail(err, BL_EPAUSED, "waiting for an operator");
	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		w->cell[i] += units[i];
	w->dispenses++;
	return 0;
}

static int fw_measure(void *ctx, color_lab *out, bl_err *err)
{
	struct fake_world *w = ctx;

	(void)err;
	note_op(w, "measure");
	*out = measure(w->truth, w->cell, &w->r, w->noise);
	w->measures++;
	return 0;
}

static void fake_ops(struct fake_world *w, const struct mix_model *truth, uint64_t seed,
		     double noise, struct mix_ops *ops)
{
	memset(w, 0, sizeof(*w));
	w->truth = truth;
	w->noise = noise;
	rng_init(&w->r, seed);
	memset(ops, 0, sizeof(*ops));
	ops->ctx = w;
	ops->fresh_cell = fw_fresh;
	ops->dispense = fw_dispense;
	ops->measure = fw_measure;
}

/*
 * 50 targets drawn by mix_trial from the nominal model's gamut, one learning
 * state for the whole trial, the machine's limit of 4 attempts, noise 0.3 a
 * channel: median 1 and 95th percentile at most 3 measurements. A target may
 * end unreached only with a reason and only if the batch itself cannot mix
 * it (its gamut is not the data's: the perturbed model's nearest colour is
 * more than 1.5 away). The uncorrected baseline (the nominal model's first
 * recipe) leaves at least a quarter beyond the tolerance, so the perturbation
 * is real.
 */
TEST(correction_converges_on_a_perturbed_batch)
{
	static struct mix_model m, truth;
	struct mix_limits lim;
	struct mix_trial_stats st;
	struct fake_world w;
	struct mix_ops ops;
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	perturbed_batch(&m, &truth, 3, 0.25);
	fake_ops(&w, &truth, 17, 0.3, &ops);
	CHECK(mix_trial(&m, &lim, &ops, 50, 1, 1, &st, &err) == 0);
	printf("50 targets: attempts median %.0f, p95 %.0f, max %d; unreached %d; uncorrected "
	       "beyond tolerance %d (median %.2f, p95 %.2f); final median %.2f; cells %d; paint "
	       "%.1f ml against %.1f ideal\n",
	       st.attempts_median, st.attempts_p95, st.attempts_max, st.unreached,
	       st.uncorrected_unreached, st.uncorrected_de00_median, st.uncorrected_de00_p95,
	       st.final_de00_median, st.cells, st.used_ml, st.ideal_ml);
	for (int i = 0; i < st.n_reasons; i++)
		printf("  %s\n", st.reasons[i]);
	CHECK(st.targets == 50 && st.reached + st.unreached == 50);
	CHECK(st.unreached <= 6 && st.n_reasons == st.unreached);
	for (int i = 0; i < st.n_reasons; i++) {
		struct mix_solution sol;

		CHECK(strlen(st.reasons[i]) > 40);
		CHECK(mix_solve(&truth, NULL, &st.unreached_target[i], &lim, &sol, &err) == 0);
		CHECK_MSG(sol.nearest_de00 > 1.5, "target %d was reachable by the batch (%.2f)", i,
			  sol.nearest_de00);
	}
	CHECK(st.attempts_median <= 2);
	CHECK(st.attempts_p95 <= 3);
	CHECK(st.uncorrected_unreached >= 12);
	CHECK(st.used_ml >= st.ideal_ml);
	/* Every cell the loop started (and every baseline) began with a clean cell. */
	CHECK(w.fresh == 50 + st.cells);
	{
		cJSON *j = mix_trial_json(&st), *a = cJSON_GetObjectItem(j, "attempts");
		cJSON *u = cJSON_GetObjectItem(j, "uncorrected");

		CHECK(cJSON_GetObjectItem(a, "median")->valuedouble == st.attempts_median);
		CHECK(cJSON_IsNumber(cJSON_GetObjectItem(a, "p95")));
		CHECK(cJSON_GetObjectItem(a, "max")->valueint == st.attempts_max);
		CHECK(cJSON_GetObjectItem(j, "unreached")->valueint == st.unreached);
		CHECK(cJSON_GetObjectItem(u, "unreached")->valueint == st.uncorrected_unreached);
		CHECK(cJSON_IsObject(cJSON_GetObjectItem(u, "attempts")));
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unreached_reasons")) == st.n_reasons);
		cJSON_Delete(j);
	}
}

/*
 * A run that stopped after dispensing resumes by measuring the cell: the
 * paint is never dispensed twice. A pause from the world passes through with
 * the job as it was before the action.
 */
TEST(run_resumes_without_repeating_a_dispense)
{
	static struct mix_model m, truth;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job, saved;
	struct mix_action act, last;
	struct fake_world w;
	struct mix_ops ops;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab target;
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	perturbed_batch(&m, &truth, 21, 0.3);
	amt[m.white] = 12;
	amt[mix_model_find(&m, "magenta")] = 2;
	amt[mix_model_find(&m, "yellow oxide")] = 1;
	mix_predict(&truth, NULL, amt, &target);
	mix_learn_init(&learn, m.n_paints);
	fake_ops(&w, &truth, 5, 0.2, &ops);
	/* Begun, dispensed, persisted; then the process died. */
	CHECK(mix_begin(&m, &learn, &job, &target, &lim, &act, &err) == 0);
	CHECK(ops.fresh_cell(ops.ctx, &err) == 0 && ops.dispense(ops.ctx, act.units, &err) == 0);
	mix_apply(&job, &act);
	w.first_op[0] = '\0';
	w.dispenses = 0;
	CHECK(mix_run(&m, &learn, &job, &target, &lim, &ops, &last, &err) == 0);
	CHECK(strcmp(w.first_op, "measure") == 0);
	CHECK(job.finished && job.cells >= 1);
	CHECK(w.measures == job.attempts);
	/* A pause on the second dispense: returned as is, the job not advanced past it. */
	mix_learn_init(&learn, m.n_paints);
	fake_ops(&w, &truth, 6, 3.0, &ops);
	w.pause_on_dispense = 2;
	memset(&job, 0, sizeof(job));
	lim.tol_de00 = 0.3;
	if (mix_run(&m, &learn, &job, &target, &lim, &ops, &last, &err) == BL_EPAUSED) {
		printf("paused after the first measurement: %s\n", mix_action_names[last.kind]);
		/* The job says what the cell holds, even when it was emptied for a fresh start. */
		CHECK(w.dispenses == 1 && job.attempts == 1);
		CHECK(memcmp(job.have, w.cell, sizeof(job.have)) == 0);
		saved = job;
		/* Resumed: a dispense was not done, so it is done now, exactly once. */
		w.pause_on_dispense = 0;
		CHECK(mix_run(&m, &learn, &job, &target, &lim, &ops, &last, &err) == 0);
		CHECK(job.dispensed_units > saved.dispensed_units);
		CHECK(job.finished);
	} else {
		/* Reached or given up at the first measurement: nothing was left to pause on. */
		CHECK(job.finished && w.dispenses == 1);
	}
}

/*
 * The gains learnt from a few tints of a stronger blue carry to mixes never
 * measured: the model's error on other blue tints falls by at least 70%.
 */
TEST(learning_carries_to_unmeasured_mixes)
{
	static struct mix_model m, truth;
	static struct mix_learn learn;
	int blue, white, have[MIX_MAX_PAINTS] = { 0 };
	double before = 0.0, after = 0.0;
	bl_err err;
	rng r;

	fx_model(&m);
	blue = mix_model_find(&m, "blue green shade");
	white = m.white;
	truth = m;
	for (int b = 0; b < m.n_bands; b++) {
		truth.k[blue][b] *= 1.4;
		truth.s[blue][b] *= 1.4;
	}
	mix_learn_init(&learn, m.n_paints);
	rng_init(&r, 2);
	for (int k = 1; k <= 3; k++) {
		color_lab meas;

		memset(have, 0, sizeof(have));
		have[blue] = k;
		have[white] = 20;
		meas = measure(&truth, have, &r, 0.0);
		CHECK(mix_learn_observe(&m, &learn, have, &meas, &err) == 0);
	}
	printf("learnt blue log_k %.3f log_s %.3f, white log_k %.3f log_s %.3f (truth: blue +%.3f)\n",
	       learn.log_k[blue], learn.log_s[blue], learn.log_k[white], learn.log_s[white],
	       log(1.4));
	CHECK(learn.log_k[blue] - learn.log_k[white] > 0.15);
	for (int w = 5; w <= 25; w += 5) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		color_lab t, p0, p1;

		amt[blue] = 2;
		amt[white] = w;
		amt[mix_model_find(&m, "cold yellow")] = 3;
		mix_predict(&truth, NULL, amt, &t);
		mix_predict(&m, NULL, amt, &p0);
		mix_predict(&m, &learn, amt, &p1);
		before += color_de00(&p0, &t);
		after += color_de00(&p1, &t);
	}
	printf("error on unmeasured mixes: %.2f before learning, %.2f after (sum of 5)\n", before,
	       after);
	CHECK(after < 0.3 * before);
}

/* A cell of 5 black and 20 white, measured as the model predicts it, mixing for a pale yellow. */
static void dark_cell_pale_target(struct mix_model *m, struct mix_learn *learn, struct mix_limits *lim,
				  struct mix_job *job, color_lab *meas)
{
	double amt[MIX_MAX_PAINTS] = { 0 };
	int black, white = 0, yellow;

	fx_model(m);
	fx_limits(lim);
	mix_learn_init(learn, m->n_paints);
	black = mix_model_find(m, "black");
	white = m->white;
	yellow = mix_model_find(m, "cold yellow");
	amt[white] = 10;
	amt[yellow] = 2;
	memset(job, 0, sizeof(*job));
	mix_predict(m, NULL, amt, &job->target);
	job->lim = *lim;
	job->cells = 1;
	job->have[black] = 5;
	job->have[white] = 20;
	memset(amt, 0, sizeof(amt));
	amt[black] = 5;
	amt[white] = 20;
	mix_predict(m, NULL, amt, meas);
}

/* A dark cell for a pale target: adding cannot get there, so a fresh cell, with the waste either way. */
TEST(fresh_cell_when_adding_cannot_reach)
{
	static struct mix_model m;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job;
	struct mix_action act;
	color_lab meas;
	bl_err err;
	int black, yellow;

	dark_cell_pale_target(&m, &learn, &lim, &job, &meas);
	black = mix_model_find(&m, "black");
	yellow = mix_model_find(&m, "cold yellow");
	CHECK(mix_step(&m, &learn, &job, &meas, &act, &err) == 0);
	printf("%s: %s; waste adding %.2f, fresh %.2f ml\n", mix_action_names[act.kind], act.reason,
	       act.waste_add_ml, act.waste_fresh_ml);
	CHECK(act.kind == MIX_ACT_FRESH);
	CHECK_STR_CONTAINS(act.reason, "cannot be reached by adding");
	CHECK(!act.add_reaches);
	CHECK(act.units[black] == 0 && act.units[yellow] > 0);
	/* Starting over throws away the 2.5 ml in the cell. */
	CHECK(act.waste_fresh_ml >= 2.5 - 1e-9);
	CHECK(act.predicted_de00 <= lim.tol_de00);
	mix_apply(&job, &act);
	CHECK(job.cells == 2 && job.discarded_units == 25);
	CHECK(job.have[black] == 0 && job.have[yellow] == act.units[yellow]);
}

/*
 * The same dark cell with no clean cell left (job.same_cell): a fresh mix
 * goes on the 25 units the cell holds, so it fits the 5 units of room left,
 * and once it is carried out those 25 units stay out of the cell's room.
 */
TEST(a_fresh_mix_with_no_clean_cell_fits_the_room_left)
{
	static struct mix_model m;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job;
	struct mix_action act;
	color_lab meas;
	bl_err err;
	int total = 0;

	dark_cell_pale_target(&m, &learn, &lim, &job, &meas);
	lim.max_units = job.lim.max_units = 30;
	job.same_cell = 1;
	CHECK(mix_step(&m, &learn, &job, &meas, &act, &err) == 0);
	printf("%s: %s\n", mix_action_names[act.kind], act.reason);
	for (int i = 0; i < m.n_paints; i++)
		total += act.kind == MIX_ACT_FRESH ? act.units[i] : act.kind == MIX_ACT_ADD ? job.have[i] + act.units[i] : 0;
	CHECK_MSG(act.kind != MIX_ACT_DONE, "a cell 49 off is done");
	CHECK_MSG(total <= 30 - 25, "%s of %d units into a cell of 30 holding 25", mix_action_names[act.kind], total);
}

/* Measured within tolerance: done. Out of gamut: give up at once, naming the nearest colour. */
TEST(done_and_out_of_gamut)
{
	static struct mix_model m;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job;
	struct mix_action act;
	color_lab target = { 60.0, 10.0, 30.0 }, wild = { 50.0, 90.0, 90.0 };
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	mix_learn_init(&learn, m.n_paints);
	CHECK(mix_begin(&m, &learn, &job, &target, &lim, &act, &err) == 0);
	CHECK(act.kind == MIX_ACT_FRESH && act.total_after >= lim.min_units);
	mix_apply(&job, &act);
	CHECK(mix_step(&m, &learn, &job, &target, &act, &err) == 0);
	CHECK(act.kind == MIX_ACT_DONE && job.finished);
	CHECK(mix_step(&m, &learn, &job, &target, &act, &err) == BL_EINVAL);
	CHECK(mix_begin(&m, &learn, &job, &wild, &lim, &act, &err) == 0);
	CHECK(act.kind == MIX_ACT_GIVE_UP);
	CHECK_STR_CONTAINS(act.reason, "out of gamut");
	CHECK_STR_CONTAINS(act.reason, "nearest reachable colour is lab:");
}

/* A tolerance below the camera's noise and only two attempts: the loop stops and says why. */
TEST(attempt_limit_gives_up)
{
	static struct mix_model m;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job;
	struct mix_action act;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab target;
	bl_err err;
	rng r;
	int steps = 0;

	fx_model(&m);
	fx_limits(&lim);
	lim.max_attempts = 2;
	lim.tol_de00 = 0.5;
	amt[m.white] = 7;
	amt[mix_model_find(&m, "green")] = 2;
	mix_predict(&m, NULL, amt, &target);
	mix_learn_init(&learn, m.n_paints);
	rng_init(&r, 4);
	CHECK(mix_begin(&m, &learn, &job, &target, &lim, &act, &err) == 0);
	while (act.kind == MIX_ACT_FRESH || act.kind == MIX_ACT_ADD) {
		color_lab meas;

		mix_apply(&job, &act);
		meas = measure(&m, job.have, &r, 1.5);
		CHECK(mix_step(&m, &learn, &job, &meas, &act, &err) == 0);
		printf("step %d: %s: %s\n", ++steps, mix_action_names[act.kind], act.reason);
	}
	CHECK(steps == 2);
	CHECK(act.kind == MIX_ACT_GIVE_UP);
	CHECK_STR_CONTAINS(act.reason, "attempt limit");
}

/* A run persists the learning and the job as JSON; a resumed loop decides exactly as before. */
TEST(state_round_trips_and_resumes)
{
	static struct mix_model m, truth;
	static struct mix_learn learn, learn2;
	struct mix_limits lim;
	struct mix_job job, job2;
	struct mix_action act, a1, a2;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab target, meas;
	cJSON *lj, *jj;
	char *text;
	bl_err err;
	rng r;

	fx_model(&m);
	fx_limits(&lim);
	lim.exclude = (uint64_t)1 << mix_model_find(&m, "violet");
	perturbed_batch(&m, &truth, 5, 0.3);
	amt[m.white] = 9;
	amt[mix_model_find(&m, "red oxide")] = 2;
	amt[mix_model_find(&m, "yellow oxide")] = 3;
	mix_predict(&truth, NULL, amt, &target);
	mix_learn_init(&learn, m.n_paints);
	rng_init(&r, 8);
	CHECK(mix_begin(&m, &learn, &job, &target, &lim, &act, &err) == 0);
	CHECK(act.kind == MIX_ACT_FRESH);
	mix_apply(&job, &act);
	meas = measure(&truth, job.have, &r, 0.2);
	CHECK(mix_step(&m, &learn, &job, &meas, &act, &err) == 0);
	printf("after one step: %s (%s)\n", mix_action_names[act.kind], act.reason);
	if (act.kind == MIX_ACT_FRESH || act.kind == MIX_ACT_ADD)
		mix_apply(&job, &act);
	lj = mix_learn_json(&m, &learn);
	jj = mix_job_json(&m, &job);
	text = cJSON_Print(lj);
	cJSON_Delete(lj);
	lj = cJSON_Parse(text);
	cJSON_free(text);
	CHECK(mix_learn_from_json(&m, lj, "learn.json", &learn2, &err) == 0);
	CHECK(mix_job_from_json(&m, jj, "job.json", &job2, &err) == 0);
	CHECK(learn2.n_obs == learn.n_obs && job2.attempts == job.attempts);
	CHECK(memcmp(job2.have, job.have, sizeof(job.have)) == 0);
	CHECK(job2.lim.exclude == job.lim.exclude && job2.cells == job.cells);
	for (int i = 0; i < m.n_paints; i++) {
		CHECK_NEAR(learn2.log_k[i], learn.log_k[i], 1e-12);
		CHECK_NEAR(learn2.log_s[i], learn.log_s[i], 1e-12);
	}
	if (!job.finished) {
		meas = measure(&truth, job.have, &r, 0.2);
		CHECK(mix_step(&m, &learn, &job, &meas, &a1, &err) == 0);
		CHECK(mix_step(&m, &learn2, &job2, &meas, &a2, &err) == 0);
		CHECK(a1.kind == a2.kind);
		CHECK(memcmp(a1.units, a2.units, sizeof(a1.units)) == 0);
		CHECK_NEAR(a1.predicted_de00, a2.predicted_de00, 1e-6);
	}
	cJSON_Delete(lj);
	cJSON_Delete(jj);
	/* State naming a paint the palette lacks is refused. */
	lj = cJSON_Parse("{\"gains\": {\"unobtainium\": {\"log_k\": 0, \"log_s\": 0}}, "
			 "\"observations\": []}");
	CHECK(mix_learn_from_json(&m, lj, "learn.json", &learn2, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "unobtainium");
	cJSON_Delete(lj);
}

/* A NaN measurement or an empty cell is refused, and nothing is learnt or counted. */
/*
 * A job a caller persisted before mix_run began it (all zero: no cell, no
 * limits yet) is read back as written and begun by mix_run; a begun job with
 * no limits is refused. (A run killed between the two read its own state back
 * as an error.)
 */
TEST(a_job_not_begun_round_trips)
{
	static struct mix_model m;
	struct mix_job job, back;
	cJSON *j, *lim;
	bl_err err;

	fx_model(&m);
	memset(&job, 0, sizeof(job));
	j = mix_job_json(&m, &job);
	CHECK_MSG(mix_job_from_json(&m, j, "state.json", &back, &err) == 0, "%s", err.msg);
	CHECK(back.cells == 0 && !back.finished && back.lim.unit_ml == 0.0);
	CHECK(memcmp(&back, &job, sizeof(job)) == 0);
	cJSON_ReplaceItemInObject(j, "cells", cJSON_CreateNumber(1));
	CHECK(mix_job_from_json(&m, j, "state.json", &back, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "unit_ml");
	lim = cJSON_GetObjectItem(j, "limits");
	cJSON_ReplaceItemInObject(j, "cells", cJSON_CreateNumber(0));
	cJSON_ReplaceItemInObject(lim, "unit_ml", cJSON_CreateNumber(-1));
	CHECK(mix_job_from_json(&m, j, "state.json", &back, &err) == BL_EINVAL);
	cJSON_Delete(j);
}

TEST(step_refuses_bad_measurements)
{
	static struct mix_model m;
	static struct mix_learn learn;
	struct mix_limits lim;
	struct mix_job job;
	struct mix_action act;
	color_lab target = { 60.0, 10.0, 30.0 }, bad = { 50.0, NAN, 0.0 };
	bl_err err;

	fx_model(&m);
	fx_limits(&lim);
	mix_learn_init(&learn, m.n_paints);
	CHECK(mix_begin(&m, &learn, &job, &target, &lim, &act, &err) == 0);
	CHECK(mix_step(&m, &learn, &job, &target, &act, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "empty");
	mix_apply(&job, &act);
	CHECK(mix_step(&m, &learn, &job, &bad, &act, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not finite");
	CHECK(job.attempts == 0 && learn.n_obs == 0);
}

/*
 * A paint that never reaches the cell (its well ran dry: the pump drew air)
 * is learnt as far as learning goes, and that learning reads back: a run
 * paused after it must resume. Beyond those bounds a gain is refused.
 */
TEST(a_paint_learnt_to_its_bound_reads_back)
{
	static struct mix_model m;
	static struct mix_learn learn, back;
	int units[MIX_MAX_PAINTS] = { 0 };
	double amt[MIX_MAX_PAINTS] = { 0 };
	int yellow;
	color_lab white;
	cJSON *lj, *g;
	bl_err err;

	fx_model(&m);
	yellow = mix_model_find(&m, "yellow oxide");
	CHECK(yellow >= 0);
	amt[m.white] = 29;
	mix_predict(&m, NULL, amt, &white);
	mix_learn_init(&learn, m.n_paints);
	units[m.white] = 29;
	for (int k = 1; k <= 6; k++) {
		/* k units of yellow dispensed each time, and the camera sees white. */
		units[yellow] = k;
		CHECK(mix_learn_observe(&m, &learn, units, &white, &err) == 0);
	}
	printf("yellow oxide learnt at log_k %.3f log_s %.3f\n", learn.log_k[yellow],
	       learn.log_s[yellow]);
	CHECK_MSG(learn.log_k[yellow] < -2.0, "log_k %.3f: the test wants a gain past the old bound",
		  learn.log_k[yellow]);
	CHECK(learn.log_k[yellow] >= -(MIX_LEARN_STRENGTH_MAX + MIX_LEARN_BALANCE_MAX) - 1e-12);
	lj = mix_learn_json(&m, &learn);
	CHECK_MSG(mix_learn_from_json(&m, lj, "state.json", &back, &err) == 0, "%s", err.msg);
	CHECK_NEAR(back.log_k[yellow], learn.log_k[yellow], 1e-12);
	CHECK_NEAR(back.log_s[yellow], learn.log_s[yellow], 1e-12);
	g = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(lj, "gains"), "yellow oxide"),
				"log_k");
	CHECK(g != NULL);
	cJSON_SetNumberValue(g, -(MIX_LEARN_STRENGTH_MAX + MIX_LEARN_BALANCE_MAX) - 0.1);
	CHECK(mix_learn_from_json(&m, lj, "state.json", &back, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "log_k");
	cJSON_Delete(lj);
}

TEST_MAIN(T(correction_converges_on_a_perturbed_batch), T(run_resumes_without_repeating_a_dispense),
	  T(learning_carries_to_unmeasured_mixes),
	  T(fresh_cell_when_adding_cannot_reach), T(a_fresh_mix_with_no_clean_cell_fits_the_room_left), T(done_and_out_of_gamut),
	  T(attempt_limit_gives_up), T(state_round_trips_and_resumes),
	  T(step_refuses_bad_measurements), T(a_job_not_begun_round_trips),
	  T(a_paint_learnt_to_its_bound_reads_back))
