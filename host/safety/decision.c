/* decision.c: gate decisions as records: reason names, deterministic JSON, parse failures turned into reasons, whole-file checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "safety/gate.h"

const char *const gate_reason_names[] = {
	[GATE_R_OK] = "ok",
	[GATE_R_NOT_JSON] = "not_json",
	[GATE_R_BAD_FILE] = "bad_file",
	[GATE_R_UNKNOWN_KIND] = "unknown_kind",
	[GATE_R_UNKNOWN_FIELD] = "unknown_field",
	[GATE_R_MISSING_FIELD] = "missing_field",
	[GATE_R_DUPLICATE_FIELD] = "duplicate_field",
	[GATE_R_BAD_TYPE] = "bad_type",
	[GATE_R_NOT_FINITE] = "not_finite",
	[GATE_R_OUT_OF_RANGE] = "out_of_range",
	[GATE_R_NEGATIVE_AMOUNT] = "negative_amount",
	[GATE_R_ABSURD_SIZE] = "absurd_size",
	[GATE_R_BAD_VALUE] = "bad_value",
	[GATE_R_MALFORMED] = "malformed",
	[GATE_R_BAD_POSITION] = "bad_position",
	[GATE_R_UNKNOWN_REFERENCE] = "unknown_reference",
	[GATE_R_TOO_MANY_POINTS] = "too_many_points",
	[GATE_R_PAINT_AMOUNT] = "paint_amount",
	[GATE_R_TOO_DEEP] = "too_deep",
	[GATE_R_SPEED_HARD] = "speed_hard",
	[GATE_R_OUTSIDE_WORK_AREA] = "outside_work_area",
	[GATE_R_KEEP_OUT] = "keep_out",
	[GATE_R_BELOW_FLOOR] = "below_floor",
	[GATE_R_UNDECLARED_ZONE] = "undeclared_zone",
	[GATE_R_OFF_CANVAS] = "off_canvas",
	[GATE_R_OUTSIDE_BOUNDS] = "outside_bounds",
	[GATE_R_MOVE_HARD] = "move_hard",
	[GATE_R_ACCEL_HARD] = "accel_hard",
	[GATE_R_TOLERANCE] = "tolerance_too_loose",
	[GATE_R_FAULT] = "fault",
	[GATE_R_SPEED_SOFT] = "speed_soft",
	[GATE_R_MOVE_SOFT] = "move_soft",
	[GATE_R_ACCEL_SOFT] = "accel_soft",
	[GATE_R_OVERRIDE_LIMITS] = "override_limits",
	[GATE_R_OPERATOR_KIND] = "operator_kind",
	[GATE_R_HOMING] = "homing",
	[GATE_R_FIRST_MOTION] = "first_motion",
	[GATE_R_AFTER_FAULT] = "after_fault",
	[GATE_R_COUNT] = NULL,
};

const char *const gate_verdict_names[] = { "allow", "needs_operator", "deny", NULL };

enum gate_verdict gate_reason_verdict(enum gate_reason r)
{
	if (r == GATE_R_OK)
		return GATE_ALLOW;
	if (r >= GATE_R_SPEED_SOFT && r < GATE_R_COUNT)
		return GATE_OPERATOR;
	return GATE_DENY;
}

int gate_reason_grantable(enum gate_reason r)
{
	/* A grant stands in for a person watching limits, never for a person clearing a fault,
	 * overriding limits or confirming the first motion on real hardware. */
	return r == GATE_R_SPEED_SOFT || r == GATE_R_MOVE_SOFT || r == GATE_R_ACCEL_SOFT ||
	       r == GATE_R_OPERATOR_KIND;
}

const struct gate_finding *gate_decision_primary(const struct gate_decision *d)
{
	for (int i = 0; i < d->n_findings; i++)
		if (gate_reason_verdict(d->findings[i].reason) == d->verdict &&
		    d->verdict != GATE_ALLOW)
			return &d->findings[i];
	return NULL;
}

/* Millimetres and the like printed to a micrometre: the same figures print the same bytes. */
static double tidy(double v)
{
	double r = round(v * 1000.0) / 1000.0;

	return r == 0.0 ? 0.0 : r; /* no "-0" */
}

static void add_point(cJSON *o, const char *key, const arm_point *p)
{
	const double v[3] = { tidy(p->x), tidy(p->y), tidy(p->z) };

	json_add_vec(o, key, v, 3);
}

cJSON *gate_decision_to_json(const struct gate_decision *d, enum gate_view view)
{
	const struct gate_finding *pf = gate_decision_primary(d);
	cJSON *o = cJSON_CreateObject(), *arr;

	if (!o)
		return NULL;
	if (d->index >= 0)
		cJSON_AddNumberToObject(o, "index", (double)d->index);
	if (d->action_id >= 0)
		cJSON_AddNumberToObject(o, "id", (double)d->action_id);
	if (d->kind >= 0 && d->kind < ARM_KIND_COUNT)
		cJSON_AddStringToObject(o, "kind", arm_kind_names[d->kind]);
	cJSON_AddStringToObject(o, "decision", gate_verdict_names[d->verdict]);
	cJSON_AddStringToObject(o, "reason", pf ? gate_reason_names[pf->reason] : "ok");
	if (pf) {
		cJSON_AddStringToObject(o, "field", pf->field);
		cJSON_AddStringToObject(o, "message",
					view == GATE_VIEW_OPERATOR ? pf->detail : pf->message);
	}
	arr = cJSON_AddArrayToObject(o, "findings");
	for (int i = 0; i < d->n_findings; i++) {
		const struct gate_finding *f = &d->findings[i];
		cJSON *fo = cJSON_CreateObject();

		cJSON_AddStringToObject(fo, "reason", gate_reason_names[f->reason]);
		cJSON_AddStringToObject(fo, "decision",
					gate_verdict_names[gate_reason_verdict(f->reason)]);
		cJSON_AddStringToObject(fo, "field", f->field);
		if (f->segment >= 0)
			cJSON_AddNumberToObject(fo, "segment", (double)f->segment);
		cJSON_AddStringToObject(fo, "message", f->message);
		if (view == GATE_VIEW_OPERATOR) {
			cJSON_AddStringToObject(fo, "detail", f->detail);
			if (f->has_figures) {
				cJSON_AddNumberToObject(fo, "value", tidy(f->value));
				cJSON_AddNumberToObject(fo, "limit", tidy(f->limit));
			}
		}
		cJSON_AddItemToArray(arr, fo);
	}
	if (d->n_dropped)
		cJSON_AddNumberToObject(o, "more_findings", d->n_dropped);
	if (d->has_path) {
		cJSON *p = cJSON_AddObjectToObject(o, "path"), *z;

		add_point(p, "from_mm", &d->from);
		add_point(p, "to_mm", &d->to);
		cJSON_AddNumberToObject(p, "segments", (double)d->n_segments);
		cJSON_AddNumberToObject(p, "length_mm", tidy(d->length_mm));
		cJSON_AddNumberToObject(p, "longest_mm", tidy(d->longest_mm));
		cJSON_AddNumberToObject(p, "speed_mm_s", tidy(d->speed_mm_s));
		cJSON_AddNumberToObject(p, "peak_accel_mm_s2", tidy(d->peak_accel_mm_s2));
		z = cJSON_AddArrayToObject(p, "zones");
		for (int k = 0; k < ARM_ZONE_COUNT; k++)
			if (d->zones_entered & (1u << k))
				cJSON_AddItemToArray(z, cJSON_CreateString(arm_zone_names[k]));
	}
	if (d->request_id[0])
		cJSON_AddStringToObject(o, "request", d->request_id);
	if (d->grant_id[0])
		cJSON_AddStringToObject(o, "grant", d->grant_id);
	if (d->executed)
		cJSON_AddBoolToObject(o, "executed", 1);
	return o;
}

char *gate_decision_print(const struct gate_decision *d, enum gate_view view)
{
	cJSON *o = gate_decision_to_json(d, view);
	char *s, *out;

	if (!o)
		return NULL;
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		return NULL;
	out = strdup(s);
	cJSON_free(s);
	return out;
}

static void set_one(struct gate_decision *d, enum gate_reason r, const char *field,
		    const char *message)
{
	struct gate_finding *f = &d->findings[0];

	d->verdict = gate_reason_verdict(r);
	d->n_findings = 1;
	memset(f, 0, sizeof(*f));
	f->reason = r;
	f->segment = -1;
	snprintf(f->field, sizeof(f->field), "%s", field);
	snprintf(f->message, sizeof(f->message), "%s", message);
	snprintf(f->detail, sizeof(f->detail), "%s", message);
}

void gate_decide_file(enum gate_reason r, const char *message, struct gate_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->index = -1;
	d->action_id = -1;
	d->kind = -1;
	set_one(d, r, "", message);
}

/* The raw node a field path names inside item ("points_mm[2][0]", "bounds_mm.min[1]"); NULL when absent. */
static const cJSON *raw_node(const cJSON *item, const char *field)
{
	char buf[GATE_FIELD_MAX], *save = NULL, *tok;
	const cJSON *cur = item;

	snprintf(buf, sizeof(buf), "%s", field);
	for (tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
		char *br = strchr(tok, '[');

		if (br)
			*br = '\0';
		cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, tok) : NULL;
		while (br && cur) {
			char *end;
			long i = strtol(br + 1, &end, 10);

			cur = cJSON_IsArray(cur) && *end == ']' ? cJSON_GetArrayItem(cur, (int)i) : NULL;
			br = strchr(end, '[');
		}
	}
	return tok ? NULL : cur;
}

/* Which reason a parse message stands for; msg is the text after "PATH: ", raw the offending value. */
static enum gate_reason classify(const char *field, const char *msg, const cJSON *raw)
{
	const char *base = strrchr(field, '.');

	base = base ? base + 1 : field;
	if (strstr(msg, "unknown key"))
		return GATE_R_UNKNOWN_FIELD;
	if (strstr(msg, "appears more than once"))
		return GATE_R_DUPLICATE_FIELD;
	if (strncmp(msg, "missing", 7) == 0)
		return GATE_R_MISSING_FIELD;
	if (strcmp(base, "type") == 0 && strstr(msg, "is not one of"))
		return GATE_R_UNKNOWN_KIND;
	if (strstr(msg, "finite number"))
		return cJSON_IsNumber(raw) || !raw ? GATE_R_NOT_FINITE : GATE_R_BAD_TYPE;
	if (strstr(msg, "must be a number") || strstr(msg, "must be an integer") ||
	    strstr(msg, "must be a string") || strstr(msg, "must be true or false") ||
	    strstr(msg, "must be an object") || strstr(msg, "must be an array") ||
	    strstr(msg, "must be [x, y, z]"))
		return GATE_R_BAD_TYPE;
	if (strstr(msg, "has more than") || strstr(msg, "characters, longer than") ||
	    strstr(msg, " keys"))
		return GATE_R_ABSURD_SIZE;
	if (strstr(msg, "is absurd"))
		return GATE_R_OUT_OF_RANGE;
	if (strstr(msg, "out of range")) {
		/* Paint and time amounts below zero are their own case: a negative dispense is not a typo of scale. */
		if (cJSON_IsNumber(raw) && raw->valuedouble < 0.0 &&
		    (strcmp(base, "units") == 0 || strcmp(base, "depth_mm") == 0 ||
		     strcmp(base, "ms") == 0))
			return GATE_R_NEGATIVE_AMOUNT;
		return GATE_R_OUT_OF_RANGE;
	}
	if (strstr(msg, "must be") || strstr(msg, "needs at least") || strstr(msg, "lies below") ||
	    strstr(msg, "control character") || strstr(msg, "UTF-8") ||
	    strstr(msg, "is not one of"))
		return GATE_R_BAD_VALUE;
	return GATE_R_MALFORMED;
}

void gate_decide_malformed(const char *file, long index, const cJSON *item,
			   const bl_err *parse_err, struct gate_decision *d)
{
	const char *msg = parse_err && parse_err->msg[0] ? parse_err->msg : "malformed action";
	char path[GATE_FIELD_MAX * 2], field[GATE_FIELD_MAX], planner[GATE_MSG_MAX];
	const char *rest = msg, *sep;
	size_t flen = file ? strlen(file) : 0;
	const cJSON *t;

	memset(d, 0, sizeof(*d));
	d->index = index;
	d->action_id = -1;
	d->kind = -1;
	/* What the raw item says about itself, when it says it plainly. */
	if (cJSON_IsObject(item)) {
		t = cJSON_GetObjectItemCaseSensitive(item, "type");
		if (cJSON_IsString(t))
			for (int k = 0; arm_kind_names[k]; k++)
				if (strcmp(arm_kind_names[k], t->valuestring) == 0)
					d->kind = k;
		t = cJSON_GetObjectItemCaseSensitive(item, "id");
		if (cJSON_IsNumber(t) && t->valuedouble >= 0 && t->valuedouble <= 1e12 &&
		    t->valuedouble == floor(t->valuedouble))
			d->action_id = (long)t->valuedouble;
	}
	/* "FILE: PATH: message": the file is known, the path is the field. */
	if (flen && strncmp(rest, file, flen) == 0 && strncmp(rest + flen, ": ", 2) == 0)
		rest += flen + 2;
	sep = strstr(rest, ": ");
	path[0] = '\0';
	if (sep && (size_t)(sep - rest) < sizeof(path)) {
		memcpy(path, rest, (size_t)(sep - rest));
		path[sep - rest] = '\0';
		rest = sep + 2;
	}
	/* The field relative to the action: "actions[3].points_mm[2][0]" -> "points_mm[2][0]". */
	{
		const char *p = path;

		if (strncmp(p, "actions[", 8) == 0) {
			const char *close = strchr(p, ']');

			p = close ? close + 1 : p;
			if (*p == '.')
				p++;
		}
		snprintf(field, sizeof(field), "%s", p);
	}
	set_one(d, classify(field, rest, field[0] ? raw_node(item, field) : NULL), field, "");
	snprintf(planner, sizeof(planner), "%s%s%s", field[0] ? field : "", field[0] ? ": " : "",
		 rest);
	snprintf(d->findings[0].message, sizeof(d->findings[0].message), "%s", planner);
	snprintf(d->findings[0].detail, sizeof(d->findings[0].detail), "%s", msg);
}

/* ---- whole files ---- */

struct file_walk {
	const struct machine *m;
	const char *path;
	arm_point pos;
	gate_decision_fn fn;
	void *ctx;
	long index;
	struct gate_decision d;
	struct arm_path p;
};

static int check_items(struct file_walk *w, const cJSON *arr, bl_err *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		struct arm_action a;
		bl_err perr = { 0 };
		int rc = arm_action_parse(it, w->path, (size_t)w->index, &a, &perr);

		if (rc) {
			gate_decide_malformed(w->path, w->index, it, &perr, &w->d);
		} else {
			rc = gate_check(w->m, &w->pos, &a, NULL, &w->p, &w->d, err);
			arm_action_release(&a);
			if (rc)
				return rc;
			w->d.index = w->index;
			if (w->d.verdict != GATE_DENY && w->d.has_path)
				w->pos = w->d.to;
		}
		w->index++;
		rc = w->fn(w->ctx, &w->d, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* A plan's format belongs to the planner: take every "actions" array, in document order. */
static int walk_plan(struct file_walk *w, const cJSON *node, int *found, bl_err *err)
{
	const cJSON *c;

	for (c = node->child; c; c = c->next) {
		int rc;

		if (c->string && strcmp(c->string, "actions") == 0 && cJSON_IsArray(c)) {
			*found = 1;
			rc = check_items(w, c, err);
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			rc = walk_plan(w, c, found, err);
		} else {
			rc = 0;
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int file_fail(struct file_walk *w, enum gate_reason r, const char *msg, bl_err *err)
{
	gate_decide_file(r, msg, &w->d);
	return w->fn(w->ctx, &w->d, err);
}

/*
 * A run's journal: the actions the engine made while it ran (a mix's
 * dispenses and stir, a retry's strokes, dips sent to a colour's new cell),
 * each step journaled before the gate saw any of it, in journal order.
 * Only the engine's steps count: a planner's answer is the plan's business.
 */
static int is_step(const cJSON *ev)
{
	return cJSON_IsString(ev) &&
	       (strcmp(ev->valuestring, "dispense_planned") == 0 || strcmp(ev->valuestring, "actions_planned") == 0);
}

static int walk_journal(struct file_walk *w, char *text, int *found, bl_err *err)
{
	char *line = text, *nl;
	long n = 0;

	for (; *line; line = nl ? nl + 1 : line + strlen(line)) {
		const cJSON *ev, *data;
		cJSON *doc = NULL;
		bl_err perr = { 0 };
		char where[64];
		int rc = 0;

		nl = strchr(line, '\n');
		n++;
		if (!nl)
			break; /* a last line cut short by a power cut: the journal's reader drops it too */
		*nl = '\0';
		snprintf(where, sizeof(where), "line %ld", n);
		if (json_parse_text(line, where, &doc, &perr))
			return file_fail(w, GATE_R_NOT_JSON, perr.msg, err);
		ev = cJSON_GetObjectItemCaseSensitive(doc, "event");
		data = cJSON_GetObjectItemCaseSensitive(doc, "data");
		if (is_step(ev) && cJSON_IsObject(data))
			rc = walk_plan(w, data, found, err);
		cJSON_Delete(doc);
		if (rc)
			return rc;
	}
	return 0;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

int gate_check_file(const struct machine *m, const char *path, const arm_point *start,
		    gate_decision_fn fn, void *ctx, bl_err *err)
{
	struct file_walk *w;
	char *text = NULL;
	size_t len;
	cJSON *doc = NULL;
	const cJSON *kind;
	bl_err perr = { 0 };
	int rc;

	rc = fs_read_file(path, JSON_MAX_FILE_BYTES, &text, &len, err);
	if (rc)
		return rc;
	w = calloc(1, sizeof(*w));
	if (!w) {
		free(text);
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
	}
	w->m = m;
	w->path = path;
	w->pos = *start;
	w->fn = fn;
	w->ctx = ctx;
	if (strlen(text) != len) {
		rc = file_fail(w, GATE_R_NOT_JSON, "not valid JSON: contains a NUL byte", err);
		goto out_free;
	}
	if (has_suffix(path, ".jsonl")) {
		int found = 0;

		rc = walk_journal(w, text, &found, err);
		if (rc == 0 && !found)
			rc = file_fail(w, GATE_R_BAD_FILE, "the journal holds no step of actions the engine made", err);
		goto out_free;
	}
	if (json_parse_text(text, path, &doc, &perr)) {
		rc = file_fail(w, GATE_R_NOT_JSON, perr.msg, err);
		goto out_free;
	}
	kind = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "kind") : NULL;
	if (cJSON_IsString(kind) && strcmp(kind->valuestring, "plan") == 0) {
		int found = 0;

		rc = walk_plan(w, doc, &found, err);
		if (rc == 0 && !found)
			rc = file_fail(w, GATE_R_BAD_FILE, "the plan has no \"actions\" to check", err);
		goto out_free;
	}
	{
		json_obj root;
		long long version;
		const cJSON *arr;
		char k[32];
		size_t n;

		if (json_obj_open(doc, path, "", &root, &perr) ||
		    json_str(&root, "kind", JSON_REQUIRED, k, sizeof(k), &perr)) {
			rc = file_fail(w, GATE_R_BAD_FILE, perr.msg, err);
			goto out_free;
		}
		if (strcmp(k, "actions") != 0) {
			json_fail(&root, "kind", &perr, BL_EINVAL,
				  "is '%s', expected 'actions' or 'plan'", k);
			rc = file_fail(w, GATE_R_BAD_FILE, perr.msg, err);
			goto out_free;
		}
		if (json_version(&root, 1, 1, &version, &perr) ||
		    json_array(&root, "actions", JSON_REQUIRED, 1000000, &arr, &n, &perr) ||
		    json_end(&root, &perr)) {
			rc = file_fail(w, GATE_R_BAD_FILE, perr.msg, err);
			goto out_free;
		}
		rc = check_items(w, arr, err);
	}
out_free:
	arm_path_free(&w->p);
	cJSON_Delete(doc);
	free(text);
	free(w);
	return rc;
}
