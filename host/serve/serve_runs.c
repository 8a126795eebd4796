/* serve_runs.c: the runs the console serves and what each says: status, plan and state, requests, grants, journal, the error map. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "color/color.h"
#include "engine/run.h"
#include "safety/operator.h"
#include "serve/serve_int.h"
#include "vision/image.h"
#include "vision/measure.h"

#define SERVE_JOURNAL_TAIL 40      /* journal lines on a run's page */
#define SERVE_TAIL_BYTES (64 << 10) /* read from the journal's end for them */

static int is_run_dir(const char *dir)
{
	char p[SERVE_PATH_MAX];
	struct stat st;

	return snprintf(p, sizeof(p), "%s/run.json", dir) < (int)sizeof(p) && lstat(p, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

int serve_run_find(struct serve *s, const char *name, struct serve_run *out, bl_err *err)
{
	struct stat st;

	if (serve_path_ok(name, err) || strchr(name, '/'))
		return bl_fail(err, BL_EINVAL, "no such run");
	for (int i = 0; i < s->n_named; i++)
		if (!strcmp(s->named[i].name, name)) {
			*out = s->named[i];
			return 0;
		}
	/* Under --runs: a directory (not a link to one) holding run.json. */
	if (s->runs_dir[0] &&
	    snprintf(out->dir, sizeof(out->dir), "%s/%s", s->runs_dir, name) < (int)sizeof(out->dir) &&
	    lstat(out->dir, &st) == 0 && S_ISDIR(st.st_mode) && is_run_dir(out->dir)) {
		snprintf(out->name, sizeof(out->name), "%s", name);
		return 0;
	}
	return bl_fail(err, BL_EINVAL, "no such run: %s", name);
}

/* The first file of a run whose name starts with prefix (target.png, final-target.jpg), or "". */
static void file_named(const char *dir, const char *prefix, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	out[0] = '\0';
	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, prefix, strlen(prefix)) && !strstr(e->d_name, ".tmp.") &&
		    serve_path_ok(e->d_name, NULL) == 0) {
			snprintf(out, n, "%s", e->d_name);
			break;
		}
	closedir(d);
}

/* A file's URL with its modification time, so a replaced picture is fetched again; NULL when absent. */
static void add_file(cJSON *o, const char *key, const struct serve_run *r, const char *name)
{
	char p[SERVE_PATH_MAX], url[SERVE_PATH_MAX + 64];
	struct stat st;

	if (!name[0] || snprintf(p, sizeof(p), "%s/%s", r->dir, name) >= (int)sizeof(p) ||
	    lstat(p, &st) || !S_ISREG(st.st_mode)) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	snprintf(url, sizeof(url), "/files/%s/%s?v=%lld.%09ld", r->name, name, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	cJSON_AddStringToObject(o, key, url);
}

static void add_files(cJSON *o, const struct serve_run *r)
{
	cJSON *f = cJSON_AddObjectToObject(o, "files");
	char name[256];

	file_named(r->dir, "target.", name, sizeof(name));
	add_file(f, "target", r, name);
	add_file(f, "canvas", r, "canvas-latest.png");
	add_file(f, "final", r, "final-canvas.png");
	add_file(f, "report", r, "report.html");
	add_file(f, "status_md", r, "STATUS.md");
}

/* The requests waiting for an answer, as `pending --json` shows them, each with its preview's URL. */
static cJSON *requests_json(const struct serve_run *r, int *waiting)
{
	struct gate_request *l = NULL;
	size_t n = 0, bad = 0;
	cJSON *arr = cJSON_CreateArray();

	*waiting = 0;
	if (gate_requests_list(r->dir, &l, &n, &bad, NULL, NULL))
		return arr;
	for (size_t i = 0; i < n; i++) {
		cJSON *o;
		char url[SERVE_PATH_MAX];

		if (!gate_request_waiting(&l[i]))
			continue;
		++*waiting;
		o = gate_request_json(&l[i]);
		if (l[i].preview[0]) {
			snprintf(url, sizeof(url), "/files/%s/approvals/%s", r->name, l[i].preview);
			cJSON_AddStringToObject(o, "preview_url", url);
		}
		cJSON_AddItemToArray(arr, o);
	}
	gate_requests_free(l, n);
	return arr;
}

static cJSON *grants_json(const struct serve_run *r)
{
	struct gate_grants gs;
	cJSON *arr = cJSON_CreateArray();
	int64_t now = clk_wall_ms();

	if (gate_grants_load(r->dir, &gs, NULL))
		return arr;
	for (size_t i = 0; i < gs.n; i++)
		cJSON_AddItemToArray(arr, gate_grant_json(&gs.g[i], now));
	gate_grants_free(&gs);
	return arr;
}

/* The journal's last lines, read from its end (a torn last line is left out). */
static cJSON *journal_tail(const struct serve_run *r)
{
	char p[SERVE_PATH_MAX], *buf = NULL, *line, *save = NULL;
	cJSON *arr = cJSON_CreateArray(), *all = cJSON_CreateArray();
	struct stat st;
	off_t from;
	ssize_t got;
	int fd;

	snprintf(p, sizeof(p), "%s/journal.jsonl", r->dir);
	fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out;
	from = st.st_size > SERVE_TAIL_BYTES ? st.st_size - SERVE_TAIL_BYTES : 0;
	buf = malloc(SERVE_TAIL_BYTES + 1);
	if (!buf || (got = pread(fd, buf, SERVE_TAIL_BYTES, from)) < 0)
		goto out;
	buf[got] = '\0';
	line = from ? strchr(buf, '\n') : buf; /* a line cut by where the read began is dropped */
	for (line = line ? strtok_r(line, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *e = cJSON_Parse(line);

		if (e)
			cJSON_AddItemToArray(all, e);
	}
	for (int i = cJSON_GetArraySize(all) - SERVE_JOURNAL_TAIL; i < cJSON_GetArraySize(all); i++)
		if (i >= 0)
			cJSON_AddItemToArray(arr, cJSON_Duplicate(cJSON_GetArrayItem(all, i), 1));
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	cJSON_Delete(all);
	return arr;
}

static cJSON *json_of(const struct serve_run *r, const char *name)
{
	char p[SERVE_PATH_MAX];
	cJSON *o = NULL;

	snprintf(p, sizeof(p), "%s/%s", r->dir, name);
	if (json_parse_file(p, &o, NULL))
		return NULL;
	return o;
}

static void add_hex(cJSON *o, const char *key, const cJSON *lab)
{
	color_lab l;
	color_rgb rgb;
	unsigned char u[3];
	char hex[8];

	if (cJSON_GetArraySize(lab) != 3)
		return;
	l.L = cJSON_GetArrayItem(lab, 0)->valuedouble;
	l.a = cJSON_GetArrayItem(lab, 1)->valuedouble;
	l.b = cJSON_GetArrayItem(lab, 2)->valuedouble;
	if (color_lab_to_srgb(&l, &rgb, NULL, NULL))
		return;
	color_rgb_to_u8(&rgb, u);
	snprintf(hex, sizeof(hex), "#%02x%02x%02x", u[0], u[1], u[2]);
	cJSON_AddStringToObject(o, key, hex);
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static const char *str(const cJSON *o, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

	return v ? v : "";
}

/* Copies keys of src (those it has) into dst. */
static void copy_keys(cJSON *dst, const cJSON *src, const char *const *keys)
{
	for (; *keys; keys++) {
		const cJSON *v = cJSON_GetObjectItem(src, *keys);

		if (v)
			cJSON_AddItemToObject(dst, *keys, cJSON_Duplicate(v, 1));
	}
}

/* The plan's subtasks with where state.json says each stands, and its colours with what was mixed. */
static void add_plan_state(cJSON *o, const struct serve_run *r)
{
	cJSON *plan = json_of(r, "plan.json"), *st = json_of(r, "state.json");
	cJSON *subs = cJSON_AddArrayToObject(o, "subtask_table"), *cols = cJSON_AddArrayToObject(o, "colours");
	const cJSON *ps = cJSON_GetObjectItem(plan, "subtasks"), *ss = cJSON_GetObjectItem(st, "subtasks");
	const cJSON *pc = cJSON_GetObjectItem(plan, "colours"), *sc = cJSON_GetObjectItem(st, "colours");

	for (int i = 0; i < cJSON_GetArraySize(ss); i++) {
		const cJSON *s = cJSON_GetArrayItem(ss, i), *p = cJSON_GetArrayItem(ps, i);
		cJSON *e = cJSON_CreateObject();

		copy_keys(e, s, (const char *const[]){ "name", "status", "attempts", "verdict_de00", "note", NULL });
		copy_keys(e, p, (const char *const[]){ "type", "colour", "strokes", NULL });
		cJSON_AddItemToArray(subs, e);
	}
	for (int i = 0; i < cJSON_GetArraySize(pc); i++) {
		const cJSON *p = cJSON_GetArrayItem(pc, i), *s = cJSON_GetArrayItem(sc, i);
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "name", str(p, "name"));
		cJSON_AddStringToObject(e, "cell", str(s ? s : p, "cell"));
		add_hex(e, "want", cJSON_GetObjectItem(p, "want_lab"));
		add_hex(e, "planned", cJSON_GetObjectItem(p, "lab"));
		if (num(s, "measured_de00") >= 0) /* -1: not measured yet */
			add_hex(e, "measured", cJSON_GetObjectItem(s, "measured_lab"));
		cJSON_AddItemToObject(e, "want_lab", cJSON_Duplicate(cJSON_GetObjectItem(p, "want_lab"), 1));
		cJSON_AddItemToObject(e, "measured_lab", cJSON_Duplicate(cJSON_GetObjectItem(s, "measured_lab"), 1));
		copy_keys(e, s, (const char *const[]){ "measured_de00", "mixes", "attempts", NULL });
		cJSON_AddNumberToObject(e, "paint_ml", num(s, "dispensed_ml"));
		cJSON_AddBoolToObject(e, "verified", cJSON_IsTrue(cJSON_GetObjectItem(s, "verified")));
		cJSON_AddBoolToObject(e, "escalated", cJSON_IsTrue(cJSON_GetObjectItem(s, "escalated")));
		cJSON_AddBoolToObject(e, "accepted", cJSON_IsTrue(cJSON_GetObjectItem(s, "accepted")));
		cJSON_AddBoolToObject(e, "accepted_within", cJSON_IsTrue(cJSON_GetObjectItem(s, "accepted_within")));
		cJSON_AddItemToArray(cols, e);
	}
	cJSON_Delete(plan);
	cJSON_Delete(st);
}

static void *estimate_make(void *arg)
{
	struct serve_estimate *e = arg;
	struct serve_run r;
	struct run_options o;
	char target[SERVE_PATH_MAX], machine[SERVE_PATH_MAX], palette[SERVE_PATH_MAX], name[256];
	cJSON *est = NULL, *rj;

	snprintf(r.dir, sizeof(r.dir), "%s", e->dir);
	snprintf(r.name, sizeof(r.name), "%s", e->name);
	rj = json_of(&r, "run.json");
	file_named(r.dir, "target.", name, sizeof(name));
	run_options_init(&o);
	snprintf(target, sizeof(target), "%s/%s", r.dir, name);
	snprintf(machine, sizeof(machine), "%s/machine.json", r.dir);
	snprintf(palette, sizeof(palette), "%s/palette.json", r.dir);
	o.target = target;
	o.machine_path = machine;
	o.palette_path = palette;
	{
		long v;

		/*
		 * What run.json says, when it can be an option's value (else the
		 * planner's default); the strokes the run's budget bought, when it
		 * was sized: the plan it painted.
		 */
		o.max_strokes = json_whole(cJSON_GetObjectItem(rj, "max_strokes"), 0, 100000, &v) ? (int)v : 0;
		if (json_whole(cJSON_GetObjectItem(rj, "budget_strokes"), 1, 100000, &v))
			o.max_strokes = (int)v;
		o.colours = json_whole(cJSON_GetObjectItem(rj, "colours"), 0, 32, &v) ? (int)v : 0;
	}
	o.arm_hours = num(rj, "arm_hours") >= 0.01 && num(rj, "arm_hours") <= 240 ? num(rj, "arm_hours") : 0;
	o.open_loop = cJSON_IsTrue(cJSON_GetObjectItem(rj, "open_loop"));
	cJSON_Delete(rj);
	if (!name[0] || run_estimate(&o, &est, NULL))
		est = cJSON_CreateNull(); /* not known: kept so, not tried on every request */
	pthread_mutex_lock(&e->s->lock);
	e->json = est;
	e->done = 1;
	pthread_mutex_unlock(&e->s->lock);
	return NULL;
}

/*
 * What `brushloop estimate` says for the run's target, machine and palette:
 * made once a run, aside (planning takes seconds); null until it is there.
 */
static cJSON *estimate_of(struct serve *s, const struct serve_run *r)
{
	struct serve_estimate *e = NULL;
	cJSON *copy = NULL;

	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->n_est && !e; i++)
		if (!strcmp(s->est[i].name, r->name))
			e = &s->est[i];
	if (!e && s->n_est < SERVE_MAX_RUNS && !s->stopping) {
		e = &s->est[s->n_est];
		snprintf(e->name, sizeof(e->name), "%s", r->name);
		snprintf(e->dir, sizeof(e->dir), "%s", r->dir);
		e->s = s;
		if (pthread_create(&e->thread, NULL, estimate_make, e) == 0)
			s->n_est++;
		else
			e = NULL;
	} else if (e && e->done) {
		copy = cJSON_Duplicate(e->json, 1);
		/* Done: its thread (stack and all) goes now, not when the console stops. */
		if (!e->joined) {
			pthread_join(e->thread, NULL);
			e->joined = 1;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return copy ? copy : cJSON_CreateNull();
}

void serve_estimates_stop(struct serve *s)
{
	for (int i = 0; i < s->n_est; i++) {
		if (!s->est[i].joined)
			pthread_join(s->est[i].thread, NULL);
		cJSON_Delete(s->est[i].json);
	}
	s->n_est = 0;
}

/* o's key as src's number, or null when src has none. */
static void copy_or_null(cJSON *o, const char *key, const cJSON *src, const char *src_key)
{
	const cJSON *v = cJSON_GetObjectItem(src, src_key);

	if (cJSON_IsNumber(v))
		cJSON_AddNumberToObject(o, key, v->valuedouble);
	else
		cJSON_AddNullToObject(o, key);
}

/*
 * How the subtasks of the plan under way stand, by status ("done", "skipped",
 * "deferred", ...), and how many wait for a person: the requests pending,
 * the subtasks deferred and the colours no mix reached.
 */
static void add_counts(cJSON *o, const struct serve_run *r)
{
	cJSON *st = json_of(r, "state.json"), *by = cJSON_AddObjectToObject(o, "subtask_counts");
	const cJSON *it;
	int deferred = 0, colours = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "subtasks")) {
		const char *status = str(it, "status");
		cJSON *n = cJSON_GetObjectItem(by, status);

		if (!*status)
			continue;
		if (n)
			cJSON_SetNumberValue(n, n->valuedouble + 1);
		else
			cJSON_AddNumberToObject(by, status, 1);
		deferred += !strcmp(status, "deferred");
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "colours"))
		colours += cJSON_IsTrue(cJSON_GetObjectItem(it, "escalated")) &&
			   !cJSON_IsTrue(cJSON_GetObjectItem(it, "accepted"));
	cJSON_AddNumberToObject(o, "subtasks_waiting", deferred);
	cJSON_AddNumberToObject(o, "colours_waiting", colours);
	cJSON_Delete(st);
}

/* The few figures both pages show of a run. */
static cJSON *summary(const struct serve_run *r, cJSON **status_out)
{
	cJSON *o = cJSON_CreateObject(), *st = NULL;
	bl_err err = { 0 };
	int waiting = 0;

	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "dir", r->dir);
	if (run_status(r->dir, &st, &err)) {
		cJSON_AddStringToObject(o, "state", "unreadable");
		cJSON_AddStringToObject(o, "reason", err.msg);
	} else {
		cJSON *canvas = cJSON_GetObjectItem(st, "canvas"), *cost = cJSON_GetObjectItem(st, "cost");
		cJSON *hb = cJSON_GetObjectItem(st, "heartbeat");

		copy_keys(o, st, (const char *const[]){ "state", "reason", "round", "subtasks_done", "subtasks",
							"strokes_done", "strokes_total", NULL });
		/* Figures the run does not have yet (never observed, no heartbeat) are null, never 0. */
		copy_or_null(o, "mean_de00", canvas, "mean_de00");
		copy_or_null(o, "p95_de00", canvas, "p95_de00");
		cJSON_AddNumberToObject(o, "cost", num(cJSON_GetObjectItem(cost, "priced"), "total"));
		cJSON_AddStringToObject(o, "currency", str(cost, "currency"));
		copy_or_null(o, "heartbeat_age_s", hb, "age_s");
		cJSON_AddBoolToObject(o, "stale", cJSON_IsTrue(cJSON_GetObjectItem(hb, "stale")));
	}
	cJSON_AddItemToObject(o, "requests", requests_json(r, &waiting));
	cJSON_AddNumberToObject(o, "waiting", waiting);
	add_counts(o, r);
	add_files(o, r);
	if (status_out)
		*status_out = st;
	else
		cJSON_Delete(st);
	return o;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct serve_run *)a)->name, ((const struct serve_run *)b)->name);
}

int serve_runs_json(struct serve *s, cJSON **out, bl_err *err)
{
	struct serve_run *list = calloc(SERVE_MAX_RUNS, sizeof(*list));
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "runs");
	int n = 0;

	if (!list)
		return cJSON_Delete(o), bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 0; i < s->n_named; i++)
		list[n++] = s->named[i];
	if (s->runs_dir[0]) {
		DIR *d = opendir(s->runs_dir);
		struct dirent *e;

		while (d && (e = readdir(d)) && n < SERVE_MAX_RUNS)
			if (serve_run_find(s, e->d_name, &list[n], NULL) == 0)
				n++;
		if (d)
			closedir(d);
	}
	qsort(list, (size_t)n, sizeof(*list), name_cmp);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, summary(&list[i], NULL));
	free(list);
	*out = o;
	return 0;
}

int serve_run_json(struct serve *s, const struct serve_run *r, cJSON **out, bl_err *err)
{
	cJSON *st = NULL, *o = summary(r, &st);

	cJSON_AddItemToObject(o, "status", st ? st : cJSON_CreateNull());
	add_plan_state(o, r);
	cJSON_AddItemToObject(o, "grants", grants_json(r));
	cJSON_AddItemToObject(o, "journal", journal_tail(r));
	cJSON_AddItemToObject(o, "estimate", estimate_of(s, r));
	cJSON_AddNumberToObject(o, "resume_pid", (double)serve_child_of(s, r->name));
	*out = o;
	return 0;
}

/*
 * canvas-latest.png (the canvas at 1 px/mm at the run's last look) cut to the
 * plan's target rectangle, the ground the error map covers, into *cut; the
 * whole canvas when there is no plan yet (*cell_mm 0). BL_EINVAL when the
 * run has not looked at its canvas yet.
 */
static int latest_cut(const struct serve_run *r, struct img *cut, double *cell_mm, bl_err *err)
{
	char p[SERVE_PATH_MAX];
	struct img canvas = { 0 };
	cJSON *plan = json_of(r, "plan.json");
	const cJSON *rect = cJSON_GetObjectItem(cJSON_GetObjectItem(plan, "target"), "rect_mm");
	int x0 = 0, y0 = 0, w = 0, h = 0, rc;

	*cell_mm = num(cJSON_GetObjectItem(plan, "grid"), "cell_mm");
	if (cJSON_GetArraySize(rect) == 4) {
		x0 = (int)(cJSON_GetArrayItem(rect, 0)->valuedouble + 0.5);
		y0 = (int)(cJSON_GetArrayItem(rect, 1)->valuedouble + 0.5);
		w = (int)(cJSON_GetArrayItem(rect, 2)->valuedouble + 0.5);
		h = (int)(cJSON_GetArrayItem(rect, 3)->valuedouble + 0.5);
	}
	cJSON_Delete(plan);
	snprintf(p, sizeof(p), "%s/canvas-latest.png", r->dir);
	if (access(p, R_OK))
		return bl_fail(err, BL_EINVAL, "run %s has not looked at its canvas yet", r->name);
	if ((rc = img_load(p, 1 << 24, &canvas, err)))
		return rc;
	if (!w) {
		*cut = canvas;
		*cell_mm = 0;
		return 0;
	}
	if (x0 < 0 || y0 < 0 || w <= 0 || h <= 0 || x0 + w > canvas.w || y0 + h > canvas.h)
		rc = bl_fail(err, BL_EINVAL, "run %s: the target's rectangle is outside canvas-latest.png", r->name);
	else if ((rc = img_alloc(cut, w, h, err)) == 0)
		for (int y = 0; y < h; y++)
			memcpy(cut->px + (size_t)y * w * 3, canvas.px + ((size_t)(y0 + y) * canvas.w + x0) * 3,
			       (size_t)w * 3);
	img_free(&canvas);
	return rc;
}

int serve_run_canvas_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err)
{
	struct img cut = { 0 };
	double cell_mm;
	int rc;

	*n = 0;
	if ((rc = latest_cut(r, &cut, &cell_mm, err)))
		return rc;
	rc = img_encode_png(&cut, png, n, err);
	img_free(&cut);
	if (rc)
		*n = 1; /* there was a canvas: the failure is the server's */
	return rc;
}

int serve_run_errmap_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err)
{
	char p[SERVE_PATH_MAX], name[256];
	struct img canvas = { 0 }, target = { 0 }, cells = { 0 }, pic = { 0 };
	struct meas_map map = { 0 };
	double cell_mm = 0;
	color_lab *obs = NULL;
	float *ol = NULL, *tl = NULL;
	int w, h, rc;

	*n = 0;
	file_named(r->dir, "target.", name, sizeof(name));
	if ((rc = latest_cut(r, &canvas, &cell_mm, err)))
		return rc;
	if (cell_mm <= 0 || !name[0]) {
		img_free(&canvas);
		return bl_fail(err, BL_EINVAL, "run %s has no plan yet: nothing to map against", r->name);
	}
	w = canvas.w;
	h = canvas.h;
	snprintf(p, sizeof(p), "%s/%s", r->dir, name);
	if ((rc = img_load(p, 1 << 26, &target, err)))
		goto out;
	obs = malloc((size_t)w * h * sizeof(*obs));
	ol = malloc((size_t)w * h * 3 * sizeof(float));
	tl = malloc((size_t)w * h * 3 * sizeof(float));
	if (!obs || !ol || !tl) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = color_srgb8_to_lab_many(canvas.px, obs, (unsigned long)w * h, err)))
		goto out;
	for (size_t i = 0; i < (size_t)w * h; i++) {
		ol[3 * i] = (float)obs[i].L;
		ol[3 * i + 1] = (float)obs[i].a;
		ol[3 * i + 2] = (float)obs[i].b;
	}
	/* Drawn at 1 px/mm and cut to the rectangle, cells the edge cuts cut too: the same ground as canvas.png. */
	if ((rc = meas_target_lab(&target, name, w, h, tl, err)) ||
	    (rc = meas_de_map(ol, tl, w, h, 1.0, cell_mm, 1, &map, err)) ||
	    (rc = meas_map_image(&map, (int)(cell_mm + 0.5), &cells, err)) || (rc = img_alloc(&pic, w, h, err)))
		goto out;
	for (int y = 0; y < h; y++)
		memcpy(pic.px + (size_t)y * w * 3, cells.px + (size_t)y * cells.w * 3, (size_t)w * 3);
	rc = img_encode_png(&pic, png, n, err);
out:
	img_free(&canvas);
	img_free(&target);
	img_free(&cells);
	img_free(&pic);
	meas_map_free(&map);
	free(obs);
	free(ol);
	free(tl);
	if (rc)
		*n = 1; /* there was something to map: the failure is the server's */
	return rc;
}
