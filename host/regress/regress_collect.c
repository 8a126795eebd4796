/* regress_collect.c: a suite's result from its run directories alone: every figure, the thresholds and the baseline judged figure by figure. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/fs.h"
#include "base/journal.h"
#include "base/json.h"
#include "engine/run.h"
#include "regress/regress.h"

/* The exit status `brushloop run` gave for each state a run ends in (docs/cli.md). */
static const struct {
	const char *state;
	int exit;
} state_exits[] = {
	{ "finished", 0 }, { "failed", 1 }, { "paused", 3 }, { "braked", 4 }, { "safety_stop", 5 },
};

static int exit_of(const char *state)
{
	for (size_t i = 0; i < sizeof(state_exits) / sizeof(state_exits[0]); i++)
		if (state && !strcmp(state, state_exits[i].state))
			return state_exits[i].exit;
	return -1; /* still running, or killed: no exit yet */
}

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = get(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The run's clock and its refills, from the journal: the last event's time, and each resume that refilled a well. */
struct journal_walk {
	double clock_s;
	int refills, in_resume;
};

static int walk_event(const cJSON *ev, void *ctx)
{
	struct journal_walk *w = ctx;
	const char *name = cJSON_GetStringValue(get(ev, "event"));

	w->clock_s = num(ev, "mono_ns", w->clock_s * 1e9) * 1e-9;
	if (name && !strcmp(name, "resume"))
		w->in_resume = 1;
	else if (name && !strcmp(name, "refilled") && w->in_resume) {
		w->refills++;
		w->in_resume = 0;
	}
	return 0;
}

/* The last line a case's log holds, for an error message ("" when none). */
static void log_tail(const char *dir, const char *id, char *out, size_t n)
{
	char p[REGRESS_PATH_MAX + 256], *text = NULL, *end;
	size_t len;

	out[0] = '\0';
	snprintf(p, sizeof(p), "%s/logs/%s.log", dir, id);
	if (fs_read_file(p, 1u << 20, &text, &len, NULL))
		return;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	end = strrchr(text, '\n');
	snprintf(out, n, "%s", end ? end + 1 : text);
	free(text);
}

static void add_num_or_null(cJSON *o, const char *k, double v, int have)
{
	if (have)
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static void add_failure(cJSON *fails, const char *figure, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add_failure(cJSON *fails, const char *figure, const char *kind, const char *fmt, ...)
{
	cJSON *f = cJSON_CreateObject();
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddStringToObject(f, "figure", figure);
	cJSON_AddStringToObject(f, "kind", kind);
	cJSON_AddStringToObject(f, "message", msg);
	cJSON_AddItemToArray(fails, f);
}

/* The case as the suite describes it. */
static cJSON *case_head(const struct regress_case *c, const char *run_dir)
{
	cJSON *o = cJSON_CreateObject(), *t = cJSON_CreateObject(), *b = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", c->id);
	cJSON_AddStringToObject(o, "group", c->group);
	cJSON_AddStringToObject(o, "target", c->target);
	cJSON_AddNumberToObject(o, "seed", (double)c->seed);
	cJSON_AddNumberToObject(o, "strokes", c->strokes);
	cJSON_AddStringToObject(o, "loop", regress_loop_names[c->loop]);
	cJSON_AddNumberToObject(o, "colours", c->colours);
	cJSON_AddBoolToObject(o, "accept_nearest", c->accept_nearest);
	cJSON_AddBoolToObject(o, "refill", c->refill);
	cJSON_AddStringToObject(o, "run_dir", run_dir);
	for (int f = 0; f < RF_N; f++) {
		if (c->lim.has_max[f])
			cJSON_AddNumberToObject(t, regress_figs[f].key, c->lim.max[f]);
		if (c->lim.has_tol[f])
			cJSON_AddNumberToObject(b, regress_figs[f].key, c->lim.tol[f]);
	}
	cJSON_AddBoolToObject(t, "finished", c->lim.finished);
	cJSON_AddItemToObject(t, "worse_than_baseline", b);
	cJSON_AddItemToObject(o, "thresholds", t);
	return o;
}

/* Why a case has no figures, or NULL when its run directory holds this case's run. */
static int case_error(const struct regress_case *c, const char *dir, const char *run_dir,
		      char *why, size_t n)
{
	char p[REGRESS_PATH_MAX + 256], tail[300];
	cJSON *run = NULL;
	int bad = 0;

	if (access(c->target, R_OK) != 0) {
		snprintf(why, n, "the target %s does not exist or cannot be read", c->target);
		return 1;
	}
	snprintf(p, sizeof(p), "%s/state.json", run_dir);
	if (access(p, F_OK) != 0) {
		log_tail(dir, c->id, tail, sizeof(tail));
		snprintf(why, n, "no run in %s: the case did not run%s%s", run_dir,
			 tail[0] ? ": " : "", tail);
		return 1;
	}
	snprintf(p, sizeof(p), "%s/run.json", run_dir);
	if (json_parse_file(p, &run, NULL) != 0) {
		snprintf(why, n, "%s: unreadable", p);
		return 1;
	}
	/* A directory left by another suite (or an edited one) is not this case's figures. */
	bad = num(run, "seed", -1) != (double)c->seed || num(run, "max_strokes", -1) != c->strokes ||
	      cJSON_IsTrue(get(run, "open_loop")) != (c->loop == RL_OPEN) ||
	      num(run, "colours", -1) != c->colours;
	cJSON_Delete(run);
	if (bad)
		snprintf(why, n, "%s holds another run (its seed, strokes, colours or loop differ "
				 "from the case's): remove it or give another --out", run_dir);
	return bad;
}

/* Every figure of a run; have[f] says which judged figures exist. */
static void figures(const cJSON *st, const char *run_dir, double v[RF_N], int have[RF_N],
		    cJSON *fig)
{
	const cJSON *canvas = get(st, "canvas"), *cost = get(st, "cost"), *m;
	struct journal_walk w = { 0 };
	char p[REGRESS_PATH_MAX + 32];
	double most = 0;
	int n = 0;

	v[RF_MEAN_DE00] = num(canvas, "mean_de00", NAN);
	v[RF_P95_DE00] = num(canvas, "p95_de00", NAN);
	v[RF_SCIELAB_1M] = num(canvas, "scielab_1m", NAN);
	v[RF_PIXEL_DE00] = num(canvas, "pixel_de00", NAN);
	v[RF_ARM_S] = num(cost, "arm_s", NAN);
	v[RF_PAINT_ML] = num(cost, "paint_ml", NAN);
	cJSON_ArrayForEach(m, get(st, "mixes")) {
		most = fmax(most, num(m, "mixes", 0));
		n++;
	}
	v[RF_MIXES_PER_COLOUR] = n ? most : NAN;
	for (int f = 0; f < RF_N; f++) {
		have[f] = isfinite(v[f]) && v[f] >= 0;
		add_num_or_null(fig, regress_figs[f].key, v[f], have[f]);
	}
	snprintf(p, sizeof(p), "%s/journal.jsonl", run_dir);
	journal_read(p, walk_event, &w, NULL, NULL);
	cJSON_AddNumberToObject(fig, "wall_s", num(st, "wall_s", 0));
	cJSON_AddNumberToObject(fig, "clock_h", w.clock_s / 3600);
	cJSON_AddNumberToObject(fig, "refills", w.refills);
	cJSON_AddNumberToObject(fig, "strokes_done", num(st, "strokes_done", 0));
	cJSON_AddNumberToObject(fig, "colours", n);
	cJSON_AddNumberToObject(fig, "verifications", num(cost, "verifications", 0));
	cJSON_AddNumberToObject(fig, "planner_calls", num(cost, "planner_calls", 0));
	cJSON_AddBoolToObject(fig, "verified", cJSON_IsTrue(get(canvas, "verified")));
}

static const cJSON *baseline_case(const cJSON *baseline, const char *id)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, get(baseline, "cases"))
		if (!strcmp(cJSON_GetStringValue(get(c, "id")) ?: "", id))
			return c;
	return NULL;
}

/* Figure by figure against the same case of the baseline; a figure worse by more than tolerated fails. */
static void judge_baseline(const struct regress_case *c, const cJSON *bc, const double v[RF_N],
			   const int have[RF_N], cJSON *out, cJSON *fails)
{
	const cJSON *bf = get(bc, "figures");
	cJSON *cmp = cJSON_AddObjectToObject(out, "baseline");

	for (int f = 0; f < RF_N; f++) {
		const char *k = regress_figs[f].key;
		const cJSON *was = get(bf, k);
		cJSON *e = cJSON_AddObjectToObject(cmp, k);
		double d;

		add_num_or_null(e, "was", cJSON_IsNumber(was) ? was->valuedouble : 0,
				cJSON_IsNumber(was));
		add_num_or_null(e, "now", v[f], have[f]);
		add_num_or_null(e, "tolerated", c->lim.tol[f], c->lim.has_tol[f]);
		if (!cJSON_IsNumber(was) || !have[f]) {
			cJSON_AddNullToObject(e, "delta");
			continue;
		}
		d = v[f] - was->valuedouble;
		cJSON_AddNumberToObject(e, "delta", d);
		/* A hair of slack for the decimal round trip through JSON. */
		if (c->lim.has_tol[f] && d > c->lim.tol[f] + 1e-9)
			add_failure(fails, k, "baseline",
				    "%s %.4g%s is %.4g worse than the baseline's %.4g (tolerated %.4g)",
				    k, v[f], regress_figs[f].unit, d, was->valuedouble, c->lim.tol[f]);
	}
}

/* Copies src to dst (a picture or a page for a CI to keep); 0 or -1. */
static int copy_file(const char *src, const char *dst)
{
	char *text = NULL;
	size_t len;
	int rc = -1;

	if (fs_read_file(src, 64u << 20, &text, &len, NULL) == 0)
		rc = fs_write_replace(dst, text, len, NULL) ? -1 : 0;
	free(text);
	return rc;
}

/* The last canvas picture the run's report drew (report/NNNNNN-WHAT-canvas.jpg, the largest NNNNNN: its last look), into last. */
static int last_look(const char *run_dir, char *last, size_t n)
{
	char p[REGRESS_PATH_MAX + REGRESS_ID_MAX + 16];
	struct dirent *e;
	DIR *d;

	last[0] = '\0';
	snprintf(p, sizeof(p), "%s/report", run_dir);
	if (!(d = opendir(p)))
		return -1;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len > 11 && !strcmp(e->d_name + len - 11, "-canvas.jpg") && strcmp(e->d_name, last) > 0 &&
		    len < n)
			snprintf(last, n, "%s", e->d_name);
	}
	closedir(d);
	return last[0] ? 0 : -1;
}

/*
 * What a CI shows beside a case: its canvas at the last look and the error
 * map over the same rectangle (as the report drew them), and its report,
 * copied into DIR/attachments/ under names of the case's own (a CI that
 * keeps one file of a name per test class must not mix them up); "attachments"
 * lists them relative to DIR. A run without a report has none.
 */
static void add_attachments(cJSON *o, const struct regress_case *c, const char *dir, const char *run_dir)
{
	static const char *const kinds[3] = { "canvas.jpg", "errmap.png", "report.html" };
	char canvas[256], src[3][REGRESS_PATH_MAX + REGRESS_ID_MAX + 300], dst[REGRESS_PATH_MAX + REGRESS_ID_MAX + 64];
	cJSON *list = cJSON_CreateArray();

	if (last_look(run_dir, canvas, sizeof(canvas)) == 0) {
		snprintf(src[0], sizeof(src[0]), "%s/report/%s", run_dir, canvas);
		snprintf(src[1], sizeof(src[1]), "%s/report/%.*s-map.png", run_dir,
			 (int)(strlen(canvas) - 11), canvas);
		snprintf(src[2], sizeof(src[2]), "%s/report.html", run_dir);
		snprintf(dst, sizeof(dst), "%s/attachments", dir);
		fs_mkdirs(dst, NULL);
		for (int k = 0; k < 3; k++) {
			snprintf(dst, sizeof(dst), "%s/attachments/%s-%s", dir, c->id, kinds[k]);
			if (copy_file(src[k], dst) == 0)
				cJSON_AddItemToArray(list, cJSON_CreateString(dst + strlen(dir) + 1));
		}
	}
	cJSON_AddItemToObject(o, "attachments", list);
}

static cJSON *judge_case(const struct regress_case *c, const char *dir, const cJSON *baseline)
{
	char run_dir[REGRESS_PATH_MAX + REGRESS_ID_MAX], why[1024];
	cJSON *o, *fig, *fails, *st = NULL;
	double v[RF_N];
	int have[RF_N], ex;
	const char *state;
	bl_err err = { 0 };

	snprintf(run_dir, sizeof(run_dir), "%s/%s", dir, c->id);
	o = case_head(c, run_dir);
	if (case_error(c, dir, run_dir, why, sizeof(why)) ||
	    (run_status(run_dir, &st, &err) && snprintf(why, sizeof(why), "%s", err.msg) >= 0)) {
		cJSON_AddStringToObject(o, "verdict", "error");
		cJSON_AddStringToObject(o, "error", why);
		return o;
	}
	state = cJSON_GetStringValue(get(st, "state"));
	ex = exit_of(state);
	cJSON_AddStringToObject(o, "state", state ? state : "");
	cJSON_AddStringToObject(o, "reason", cJSON_GetStringValue(get(st, "reason")) ?: "");
	add_num_or_null(o, "exit", ex, ex >= 0);
	fig = cJSON_AddObjectToObject(o, "figures");
	figures(st, run_dir, v, have, fig);
	cJSON_AddItemToObject(o, "mixes", cJSON_Duplicate(get(st, "mixes"), 1));
	fails = cJSON_AddArrayToObject(o, "failures");
	if (c->lim.finished && ex != 0) {
		const char *reason = cJSON_GetStringValue(get(st, "reason")) ?: "";
		char exs[24] = "none yet";

		if (ex >= 0)
			snprintf(exs, sizeof(exs), "%d", ex);
		add_failure(fails, "finished", "threshold",
			    "did not finish unattended: state %s%s%s (exit %s)", state ? state : "?",
			    *reason ? ": " : "", reason, exs);
	}
	for (int f = 0; f < RF_N; f++) {
		const char *k = regress_figs[f].key;

		if (!c->lim.has_max[f])
			continue;
		if (!have[f])
			add_failure(fails, k, "threshold", "%s: the run has no figure (threshold %.4g)",
				    k, c->lim.max[f]);
		else if (v[f] > c->lim.max[f])
			add_failure(fails, k, "threshold", "%s %.4g%s is above the threshold %.4g", k,
				    v[f], regress_figs[f].unit, c->lim.max[f]);
	}
	if (baseline) {
		const cJSON *bc = baseline_case(baseline, c->id);

		if (bc)
			judge_baseline(c, bc, v, have, o, fails);
		else
			cJSON_AddNullToObject(o, "baseline");
	}
	cJSON_AddStringToObject(o, "verdict", cJSON_GetArraySize(fails) ? "fail" : "pass");
	add_attachments(o, c, dir, run_dir);
	cJSON_Delete(st);
	return o;
}

int regress_collect(const struct regress_suite *s, const char *dir, const cJSON *baseline,
		    const char *baseline_file, cJSON **result, bl_err *err)
{
	cJSON *r = cJSON_CreateObject(), *cases, *tot;
	char digest[BL_DIGEST_HEX], path[REGRESS_PATH_MAX];
	int pass = 0, fail = 0, errs = 0, rc;
	double wall = 0;

	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* The baseline named, and which bytes it was: a result compared with "a baseline" says with which. */
	if (baseline && baseline_file &&
	    (rc = bl_digest_file(baseline_file, 1u << 30, digest, err))) {
		cJSON_Delete(r);
		return rc;
	}
	cJSON_AddStringToObject(r, "kind", "regress-result");
	cJSON_AddNumberToObject(r, "version", 1);
	cJSON_AddStringToObject(r, "suite", s->name);
	cJSON_AddStringToObject(r, "suite_file", s->path);
	cJSON_AddStringToObject(r, "dir", dir);
	cJSON_AddBoolToObject(r, "baseline", baseline != NULL);
	if (baseline && baseline_file) {
		cJSON *b = cJSON_AddObjectToObject(r, "baseline_file");

		cJSON_AddStringToObject(b, "path", realpath(baseline_file, path) ? path : baseline_file);
		cJSON_AddStringToObject(b, "sha256", digest);
	}
	cases = cJSON_AddArrayToObject(r, "cases");
	for (int i = 0; i < s->n; i++) {
		cJSON *c = judge_case(&s->cases[i], dir, baseline);
		const char *v = cJSON_GetStringValue(get(c, "verdict"));

		pass += !strcmp(v, "pass");
		fail += !strcmp(v, "fail");
		errs += !strcmp(v, "error");
		wall += num(get(c, "figures"), "wall_s", 0);
		cJSON_AddItemToArray(cases, c);
	}
	tot = cJSON_AddObjectToObject(r, "totals");
	cJSON_AddNumberToObject(tot, "cases", s->n);
	cJSON_AddNumberToObject(tot, "passed", pass);
	cJSON_AddNumberToObject(tot, "failed", fail);
	cJSON_AddNumberToObject(tot, "errors", errs);
	cJSON_AddNumberToObject(tot, "run_wall_s", wall);
	*result = r;
	return 0;
}

int regress_baseline_load(const char *path, cJSON **out, bl_err *err)
{
	json_obj o;
	const cJSON *c;
	size_t i = 0;
	int rc;

	if ((rc = json_parse_file(path, out, err)))
		return rc;
	/* Only kind and version are checked strictly: a result has many keys a comparison ignores. */
	if ((rc = json_obj_open(*out, path, "", &o, err)) ||
	    (rc = json_kind(&o, "regress-result", 1, err)) || !cJSON_IsArray(get(*out, "cases"))) {
		char why[BL_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", rc ? err->msg : "cases: missing or not an array");
		rc = bl_fail(err, BL_EINVAL,
			     "%s: not a regress result (kind \"regress-result\", version 1, "
			     "\"cases\"), as `brushloop regress --json` writes: %s",
			     path, why);
		goto free_out;
	}
	cJSON_ArrayForEach(c, get(*out, "cases")) {
		if (!cJSON_IsString(get(c, "id"))) {
			rc = bl_fail(err, BL_EINVAL, "%s: cases[%zu].id: must be a string", path, i);
			goto free_out;
		}
		i++;
	}
	return 0;
free_out:
	cJSON_Delete(*out);
	*out = NULL;
	return rc;
}

int regress_exit_status(const cJSON *result)
{
	const cJSON *t = get(result, "totals");

	return num(t, "passed", 0) == num(t, "cases", -1) ? 0 : 1;
}
