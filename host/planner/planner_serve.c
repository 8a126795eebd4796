/* planner_serve.c: `brushloop planner serve`: the built-in planner as a process speaking the planner protocol, knowing only what the request says. */
#include "planner/planner_serve.h"

#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "config/palette.h"
#include "plan/plan_image.h"
#include "plan/plan_mix.h"
#include "planner/planner_proto.h"

/* The request is the host's: big (a palette, the painting's plan), but bounded. */
#define SERVE_MAX_REQUEST (64u << 20)
#define SERVE_REQUEST_WAIT_MS 600000
#define SERVE_VERDICT_WAIT_MS 10000

/*
 * What a machine file needs beyond the planner's view, for the planner's
 * code to load it: none of it shapes a plan (the limits are made from the
 * view's working values, tolerances are left to the host's bar).
 */
static const char serve_rest[] =
	"{\"safety\": {\"confirm_first_motion\": false, \"confirm_homing\": false, \"operator_timeout_s\": 60,"
	" \"max_grant_s\": 3600, \"operator_kinds\": []},"
	" \"tolerances\": {\"mix_de00\": 2.0, \"paint_de00\": 6.0},"
	" \"unattended\": {\"accept_within_de00\": 5.0},"
	" \"camera\": {\"backend\": \"sim\", \"width\": 1280, \"height\": 720, \"average_frames\": 1,"
	" \"discard_frames\": 0, \"timeout_ms\": 2000, \"allow_auto\": false, \"max_pixels\": 40000000},"
	" \"costs\": {\"currency\": \"EUR\", \"arm_per_hour\": 0, \"per_verification\": 0,"
	" \"per_planner_call\": 0, \"paint_per_ml\": 0},"
	" \"brakes\": {\"attempts_per_subtask\": 4, \"stuck_repeats\": 3, \"no_progress_checkpoints\": 3,"
	" \"correction_rounds\": 2, \"wall_time_s\": 43200, \"arm_time_s\": 36000, \"cost_max\": 50,"
	" \"comm_errors\": 5, \"heartbeat_stale_s\": 30}}";

struct serve {
	char dir[CFG_PATH_MAX];
	struct machine m;
	struct palette pal;
	struct plan_mixer mixer;
	struct plan_target target;
	struct plan painting;
	struct plan_raster observed;
	color_lab looks[PLAN_MAX_COLOURS];
	double hiding[PLAN_MAX_COLOURS];
};

static double num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A count: a whole number from 0 to INT_MAX, else dflt (the admission judges what it then plans). */
static int count(const cJSON *o, const char *key, int dflt)
{
	long v;

	return json_whole(cJSON_GetObjectItemCaseSensitive(o, key), 0, INT_MAX, &v) ? (int)v : dflt;
}

/*
 * The view's working values as the machine file's painting envelope, and as
 * limits no wider than it (the planner never learns the host's): a plan made
 * here is the plan the host's own planner makes in process.
 */
static void limits_from_motion(cJSON *mf, const cJSON *mo, double surface_z)
{
	static const char *const working[] = { "stroke_speed_mm_s", "travel_speed_mm_s", "curve_accel_mm_s2",
					       "move_mm", "press_max_mm" };
	/* A value missing from the view reads 0, which the machine loader refuses by name. */
	double travel = num(mo, "travel_speed_mm_s", 0), stroke = num(mo, "stroke_speed_mm_s", 0);
	double speed = fmax(travel, stroke), accel = num(mo, "curve_accel_mm_s2", 0);
	double move = num(mo, "move_mm", 0), press = num(mo, "press_max_mm", 0);
	double lo = -9999.0; /* the floors other than the canvas shape no plan */
	cJSON *pa = cJSON_GetObjectItemCaseSensitive(mf, "painting");
	cJSON *l = cJSON_AddObjectToObject(mf, "limits"), *s = cJSON_AddObjectToObject(l, "soft");
	cJSON *h = cJSON_AddObjectToObject(l, "hard"), *z = cJSON_AddObjectToObject(l, "z_floor_mm");

	if (!cJSON_IsObject(pa)) {
		cJSON_DeleteItemFromObject(mf, "painting");
		pa = cJSON_AddObjectToObject(mf, "painting");
	}
	for (size_t i = 0; i < sizeof(working) / sizeof(working[0]); i++) {
		cJSON_DeleteItemFromObject(pa, working[i]);
		cJSON_AddNumberToObject(pa, working[i], num(mo, working[i], 0));
	}
	cJSON_AddNumberToObject(s, "speed_mm_s", speed);
	cJSON_AddNumberToObject(s, "accel_mm_s2", accel);
	cJSON_AddNumberToObject(s, "move_mm", move);
	cJSON_AddNumberToObject(h, "speed_mm_s", speed);
	cJSON_AddNumberToObject(h, "accel_mm_s2", accel);
	cJSON_AddNumberToObject(h, "move_mm", move);
	cJSON_AddNumberToObject(z, "canvas", surface_z - press);
	cJSON_AddNumberToObject(z, "well", lo);
	cJSON_AddNumberToObject(z, "cell", lo);
	cJSON_AddNumberToObject(z, "water", lo);
	cJSON_AddNumberToObject(z, "wipe", lo);
	cJSON_AddNumberToObject(z, "travel", lo);
	cJSON_AddNumberToObject(l, "max_stroke_points", 100000);
}

static int load_world(struct serve *s, const cJSON *req, bl_err *err)
{
	const cJSON *view = cJSON_GetObjectItemCaseSensitive(req, "machine");
	const cJSON *canvas = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(view, "zones"),
							      "canvas");
	cJSON *mf = cJSON_Duplicate(view, 1), *rest = cJSON_Parse(serve_rest), *it;
	char p[CFG_PATH_MAX + 32];
	int rc;

	if (!cJSON_IsObject(view) || !mf || !rest) {
		cJSON_Delete(mf);
		cJSON_Delete(rest);
		return bl_fail(err, BL_EINVAL, "request: no machine");
	}
	cJSON_DeleteItemFromObject(mf, "motion");
	limits_from_motion(mf, cJSON_GetObjectItemCaseSensitive(view, "motion"), num(canvas, "surface_z_mm", 0));
	while ((it = rest->child))
		cJSON_AddItemToObject(mf, it->string, cJSON_DetachItemViaPointer(rest, it));
	cJSON_Delete(rest);
	snprintf(p, sizeof(p), "%s/machine.json", s->dir);
	rc = json_write_file(p, mf, err);
	cJSON_Delete(mf);
	if (rc || (rc = machine_load(p, &s->m, err)))
		return rc;
	snprintf(p, sizeof(p), "%s/palette.json", s->dir);
	if ((rc = json_write_file(p, cJSON_GetObjectItemCaseSensitive(req, "palette"), err)) ||
	    (rc = palette_load(p, &s->pal, err)) || (rc = plan_mixer_init(&s->mixer, &s->pal, &s->m, err)))
		return rc;
	return plan_target_load(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(req, "files"), "target")),
				&s->m, &s->target, err);
}

/* observed.lab as docs/planner.md writes it: "LAB32 W H\n" and float32 L, a, b. */
static int load_lab(const char *path, struct plan_raster *r, bl_err *err)
{
	char *buf, *nl;
	size_t len;
	int w, h, rc;

	if (!path)
		return bl_fail(err, BL_EINVAL, "request: a correction without files.observed_lab");
	if ((rc = fs_read_file(path, 1u << 30, &buf, &len, err)))
		return rc;
	nl = memchr(buf, '\n', len < 64 ? len : 64);
	if (!nl || sscanf(buf, "LAB32 %d %d", &w, &h) != 2 || w < 1 || h < 1 || w > 100000 || h > 100000 ||
	    len - (size_t)(nl + 1 - buf) != (size_t)w * h * 3 * sizeof(float))
		rc = bl_fail(err, BL_EINVAL, "%s: not a LAB32 raster", path);
	else if ((rc = plan_raster_alloc(r, w, h, err)) == 0)
		memcpy(r->px, nl + 1, (size_t)w * h * 3 * sizeof(float));
	free(buf);
	return rc;
}

/* [L, a, b] into *out: 1 when it was one. */
static int lab_of(const cJSON *a, color_lab *out)
{
	if (cJSON_GetArraySize(a) != 3)
		return 0;
	out->L = cJSON_GetArrayItem(a, 0)->valuedouble;
	out->a = cJSON_GetArrayItem(a, 1)->valuedouble;
	out->b = cJSON_GetArrayItem(a, 2)->valuedouble;
	return 1;
}

static void read_options(struct serve *s, const cJSON *req, struct plan_options *po)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(req, "options"), *a;
	int k = 0;

	plan_options_default(po, &s->m);
	po->max_strokes = count(o, "max_strokes", po->max_strokes);
	po->colours = count(o, "colours", po->colours);
	po->opacity = num(o, "opacity", po->opacity);
	po->press_mm = num(o, "press_mm", po->press_mm);
	po->stroke_speed_mm_s = num(o, "stroke_speed_mm_s", po->stroke_speed_mm_s);
	po->travel_speed_mm_s = num(o, "travel_speed_mm_s", po->travel_speed_mm_s);
	po->cell_mm = num(o, "cell_mm", po->cell_mm);
	po->batch_strokes = count(o, "batch_strokes", po->batch_strokes);
	po->wash_ms = count(o, "wash_ms", po->wash_ms);
	po->seed = (unsigned long)num(o, "seed", (double)po->seed);
	lab_of(cJSON_GetObjectItemCaseSensitive(o, "canvas_lab"), &po->canvas_lab);
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "looks_lab"))
		if (k < PLAN_MAX_COLOURS && lab_of(a, &s->looks[k]))
			k++;
	po->looks = k ? s->looks : NULL;
	k = 0;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "hiding"))
		if (k < PLAN_MAX_COLOURS)
			s->hiding[k++] = a->valuedouble;
	po->hiding = k ? s->hiding : NULL;
}

/* The host holds subtasks to its own bar: a plan made without knowing it states none. */
static void drop_tolerances(cJSON *plan)
{
	cJSON *s;

	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(plan, "subtasks")) {
		cJSON_DeleteItemFromObjectCaseSensitive(s, "tolerance_de00");
		cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "expected"),
							"tolerance_de00");
	}
}

static int answer(struct serve *s, const cJSON *req, cJSON **out, bl_err *err)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "target"), *size;
	const char *phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "phase"));
	struct planner_request q = { 0 };
	struct plan_inputs in = { 0 };
	struct plan_options po;
	struct planner pl;
	struct plan p;
	int rc;

	if ((rc = load_world(s, req, err)))
		return rc;
	read_options(s, req, &po);
	in.machine = &s->m;
	in.solver = &s->mixer.solver;
	in.target = &s->target.lab;
	in.target_file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(files, "target"));
	in.target_hash = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "hash"));
	size = cJSON_GetObjectItemCaseSensitive(t, "size_px");
	{
		long w, h;

		/* A size the request cannot mean is none at all. */
		if (cJSON_GetArraySize(size) != 2 || !json_whole(cJSON_GetArrayItem(size, 0), 0, 1e6, &w) ||
		    !json_whole(cJSON_GetArrayItem(size, 1), 0, 1e6, &h))
			w = h = 0;
		in.target_w = (int)w;
		in.target_h = (int)h;
	}
	q.in = &in;
	q.opt = &po;
	q.round = count(req, "round", 0);
	q.phase = phase && !strcmp(phase, "correct") ? PLANNER_CORRECT : PLANNER_PLAN;
	if (q.phase == PLANNER_CORRECT) {
		if ((rc = plan_from_json(cJSON_GetObjectItemCaseSensitive(req, "painting"), "request.painting",
					 &s->painting, err)) ||
		    (rc = load_lab(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(files, "observed_lab")),
				   &s->observed, err)))
			return rc;
		q.painting = &s->painting;
		q.observed = &s->observed;
	}
	planner_builtin(&pl);
	if ((rc = pl.ops->propose(pl.ctx, &q, &p, NULL, NULL, err)))
		return rc;
	*out = cJSON_CreateObject();
	cJSON_AddStringToObject(*out, "type", "answer");
	cJSON_AddNumberToObject(*out, "id", num(req, "id", 0));
	cJSON_AddItemToObject(*out, "plan", plan_to_json(&p));
	drop_tolerances(cJSON_GetObjectItemCaseSensitive(*out, "plan"));
	plan_free(&p);
	return 0;
}

int planner_serve(int in_fd, int out_fd, bl_err *err)
{
	struct serve *s = calloc(1, sizeof(*s));
	struct planner_denial why;
	const char *tmp = getenv("TMPDIR");
	cJSON *req = NULL, *ans = NULL;
	char *line = NULL;
	size_t n;
	int rc;

	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	snprintf(s->dir, sizeof(s->dir), "%s/brushloop-serve-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(s->dir)) {
		rc = bl_fail(err, BL_EIO, "%s: cannot make a working directory", s->dir);
		goto out;
	}
	rc = planner_read_line(in_fd, SERVE_MAX_REQUEST, clk_real_ns() + (int64_t)SERVE_REQUEST_WAIT_MS * 1000000,
			       &line, &n, &why, err);
	if (rc == BL_EDENIED)
		rc = bl_fail(err, BL_EINVAL, "request: %s", why.message);
	if (rc || (rc = json_parse_text(line, "request", &req, err)) || (rc = answer(s, req, &ans, err)) ||
	    (rc = planner_write_line(out_fd, ans, clk_real_ns() + (int64_t)SERVE_REQUEST_WAIT_MS * 1000000, err)))
		goto out;
	free(line);
	line = NULL;
	/* The host's verdict, for the planner's own log (stderr): an answer refused is the host's to act on. */
	if (planner_read_line(in_fd, 1u << 20, clk_real_ns() + (int64_t)SERVE_VERDICT_WAIT_MS * 1000000, &line, &n,
			      &why, err) == 0)
		fprintf(stderr, "planner serve: verdict %s\n", line);
out:
	if (s->dir[0] && strstr(s->dir, "brushloop-serve-")) {
		char p[CFG_PATH_MAX + 32];

		snprintf(p, sizeof(p), "%s/machine.json", s->dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/palette.json", s->dir);
		unlink(p);
		rmdir(s->dir);
	}
	free(line);
	cJSON_Delete(req);
	cJSON_Delete(ans);
	plan_free(&s->painting);
	plan_raster_free(&s->observed);
	plan_target_free(&s->target);
	free(s);
	return rc;
}
