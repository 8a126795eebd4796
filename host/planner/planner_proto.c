/* planner_proto.c: the planner protocol's messages: the request, the strict reading of an answer, the verdict, and lines read and written against a deadline. */
#include "planner/planner_proto.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"


static int denied(struct planner_denial *why, enum planner_reason r, const char *field, const char *fmt,
		  ...) __attribute__((format(printf, 4, 5)));
static int denied(struct planner_denial *why, enum planner_reason r, const char *field, const char *fmt,
		  ...)
{
	va_list ap;

	memset(why, 0, sizeof(*why));
	why->reason = r;
	why->subtask = why->action = -1;
	snprintf(why->field, sizeof(why->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(why->message, sizeof(why->message), fmt, ap);
	va_end(ap);
	memcpy(why->detail, why->message, sizeof(why->detail));
	return BL_EDENIED;
}

static cJSON *lab_json(const color_lab *c)
{
	return cJSON_CreateDoubleArray((const double[]){ c->L, c->a, c->b }, 3);
}

static void add_options(cJSON *o, const struct planner_request *q)
{
	const struct plan_options *po = q->opt;
	cJSON *op = cJSON_AddObjectToObject(o, "options");
	int n = q->painting ? q->painting->n_colours : 0;

	cJSON_AddNumberToObject(op, "max_strokes", po->max_strokes);
	cJSON_AddNumberToObject(op, "colours", po->colours);
	cJSON_AddItemToObject(op, "canvas_lab", lab_json(&po->canvas_lab));
	cJSON_AddNumberToObject(op, "opacity", po->opacity);
	cJSON_AddNumberToObject(op, "press_mm", po->press_mm);
	cJSON_AddNumberToObject(op, "stroke_speed_mm_s", po->stroke_speed_mm_s);
	cJSON_AddNumberToObject(op, "travel_speed_mm_s", po->travel_speed_mm_s);
	cJSON_AddNumberToObject(op, "cell_mm", po->cell_mm);
	cJSON_AddNumberToObject(op, "batch_strokes", po->batch_strokes);
	cJSON_AddNumberToObject(op, "wash_ms", po->wash_ms);
	cJSON_AddNumberToObject(op, "seed", (double)po->seed);
	/* What each colour was seen to do on this canvas: a correction round's knowledge, not a secret. */
	if (po->looks && n > 0) {
		cJSON *a = cJSON_AddArrayToObject(op, "looks_lab");

		for (int k = 0; k < n; k++)
			cJSON_AddItemToArray(a, lab_json(&po->looks[k]));
	}
	if (po->hiding && n > 0)
		cJSON_AddItemToObject(op, "hiding", cJSON_CreateDoubleArray(po->hiding, n));
}

static void add_world(cJSON *o, const struct planner_world *w)
{
	cJSON *f = cJSON_AddObjectToObject(o, "files");
	char p[CFG_PATH_MAX + 8];

	snprintf(p, sizeof(p), "/in/%s", w->target_name);
	cJSON_AddStringToObject(f, "target", p);
	if (w->has_observed) {
		cJSON_AddStringToObject(f, "observed_png", "/in/observed.png");
		cJSON_AddStringToObject(f, "observed_lab", "/in/observed.lab");
	}
	if (w->error_map)
		cJSON_AddItemToObject(o, "error_map", cJSON_Duplicate(w->error_map, 1));
	if (w->machine_view)
		cJSON_AddItemToObject(o, "machine", cJSON_Duplicate(w->machine_view, 1));
	if (w->palette)
		cJSON_AddItemToObject(o, "palette", cJSON_Duplicate(w->palette, 1));
	if (w->wells)
		cJSON_AddItemToObject(o, "wells", cJSON_Duplicate(w->wells, 1));
	if (w->budgets)
		cJSON_AddItemToObject(o, "budgets", cJSON_Duplicate(w->budgets, 1));
}

cJSON *planner_request_json(const struct planner_request *q, long id, const struct planner_limits *lim)
{
	cJSON *o = cJSON_CreateObject(), *t, *l;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", "request");
	cJSON_AddNumberToObject(o, "protocol", PLANNER_PROTOCOL);
	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddStringToObject(o, "phase", planner_phase_names[q->phase]);
	cJSON_AddNumberToObject(o, "round", q->round);
	t = cJSON_AddObjectToObject(o, "target");
	cJSON_AddStringToObject(t, "hash", q->in->target_hash ? q->in->target_hash : "");
	cJSON_AddItemToObject(t, "size_px", cJSON_CreateIntArray((const int[]){ q->in->target_w, q->in->target_h }, 2));
	add_options(o, q);
	if (q->phase == PLANNER_CORRECT && q->painting) {
		/* Its header and colours: what a correction keeps. The subtasks are done and stay home. */
		cJSON *pj = plan_to_json(q->painting);

		cJSON_ReplaceItemInObject(pj, "subtasks", cJSON_CreateArray());
		cJSON_AddItemToObject(o, "painting", pj);
	}
	if (q->world)
		add_world(o, q->world);
	l = cJSON_AddObjectToObject(o, "limits");
	cJSON_AddNumberToObject(l, "max_answer_bytes", (double)lim->max_answer_bytes);
	cJSON_AddNumberToObject(l, "answer_deadline_ms", lim->answer_deadline_ms);
	return o;
}

cJSON *planner_verdict_json(long id, const struct planner_denial *why)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", "verdict");
	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddBoolToObject(o, "admitted", why == NULL);
	if (why)
		cJSON_AddItemToObject(o, "why", planner_denial_json(why, GATE_VIEW_PLANNER));
	return o;
}

/* A subtask that does not state its threshold is verified against the machine's bar. */
static void default_tolerances(cJSON *plan, const struct machine *m)
{
	cJSON *subs = cJSON_GetObjectItemCaseSensitive(plan, "subtasks"), *s;

	cJSON_ArrayForEach(s, subs) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "type"));
		int mix = type && strcmp(type, "mix") == 0;
		cJSON *holder = mix ? s : cJSON_GetObjectItemCaseSensitive(s, "expected");

		if (!cJSON_IsObject(holder) || cJSON_GetObjectItemCaseSensitive(holder, "tolerance_de00"))
			continue;
		cJSON_AddNumberToObject(holder, "tolerance_de00",
					mix ? m->tolerances.mix_de00 : m->tolerances.paint_de00);
	}
}

/* Everything but type, id and plan is the planner's claim about itself. */
static cJSON *take_claims(cJSON *doc)
{
	cJSON *claims = cJSON_CreateObject(), *it = doc->child, *next;

	for (; it; it = next) {
		next = it->next;
		if (!strcmp(it->string, "type") || !strcmp(it->string, "id") || !strcmp(it->string, "plan"))
			continue;
		cJSON_AddItemToObject(claims, it->string, cJSON_DetachItemViaPointer(doc, it));
	}
	{
		char *s = cJSON_PrintUnformatted(claims);
		size_t n = s ? strlen(s) : 0;

		/* A claim is journaled, not kept whole: it costs the journal no more than this. */
		if (n > PLANNER_CLAIMS_MAX) {
			cJSON_Delete(claims);
			claims = cJSON_CreateObject();
			cJSON_AddNumberToObject(claims, "cut_bytes", (double)n);
		}
		cJSON_free(s);
	}
	return claims;
}

int planner_answer_parse(const char *text, size_t n, const struct planner_request *q, long id,
			 struct plan *out, cJSON **claims, struct planner_denial *why, bl_err *err)
{
	const cJSON *type, *jid;
	cJSON *doc = NULL, *plan, *cl;
	bl_err perr = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (claims)
		*claims = NULL;
	if (strlen(text) != n)
		return denied(why, PLANNER_R_MALFORMED, "", "the answer is not JSON: it holds a NUL byte");
	if (json_parse_text(text, "answer", &doc, &perr))
		return denied(why, PLANNER_R_MALFORMED, "", "%s", perr.msg);
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return denied(why, PLANNER_R_MALFORMED, "", "the answer is not a JSON object");
	}
	type = cJSON_GetObjectItemCaseSensitive(doc, "type");
	jid = cJSON_GetObjectItemCaseSensitive(doc, "id");
	plan = cJSON_GetObjectItemCaseSensitive(doc, "plan");
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "answer"))
		rc = denied(why, PLANNER_R_MALFORMED, "type", "answer: type: must be \"answer\"");
	else if (!cJSON_IsNumber(jid) || jid->valuedouble != (double)id)
		rc = denied(why, PLANNER_R_MALFORMED, "id", "answer: id: must be the request's, %ld", id);
	else if (!cJSON_IsObject(plan))
		rc = denied(why, PLANNER_R_MALFORMED, "plan", "answer: plan: must be an object");
	else
		rc = 0;
	cl = take_claims(doc);
	if (claims)
		*claims = cl;
	else
		cJSON_Delete(cl);
	if (rc == 0) {
		default_tolerances(plan, q->in->machine);
		if ((rc = plan_from_json(plan, "answer.plan", out, &perr)) == BL_ENOMEM)
			rc = bl_fail(err, BL_ENOMEM, "out of memory reading an answer");
		else if (rc)
			rc = denied(why, PLANNER_R_MALFORMED, "plan", "%s", perr.msg);
	}
	cJSON_Delete(doc);
	return rc;
}

static int remaining_ms(int64_t deadline_ns)
{
	int64_t left = deadline_ns - clk_real_ns();

	return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

int planner_read_line(int fd, size_t max, int64_t deadline_ns, char **out, size_t *n,
		      struct planner_denial *why, bl_err *err)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1), *nl = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!buf)
		return bl_fail(err, BL_ENOMEM, "out of memory reading the planner");
	while (!nl) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ms = remaining_ms(deadline_ns), pr;
		ssize_t got;

		if (ms == 0 || (pr = poll(&p, 1, ms)) == 0) {
			rc = denied(why, PLANNER_R_LATE, "", "no answer within the deadline");
			break;
		}
		if (pr < 0 && errno == EINTR)
			continue;
		if (len == cap) {
			char *nb = cap > max ? NULL : realloc(buf, 2 * cap + 1);

			if (!nb) {
				rc = cap > max ? denied(why, PLANNER_R_TOO_LARGE, "", "the answer is longer than the size limit")
					       : bl_fail(err, BL_ENOMEM, "out of memory reading the planner");
				break;
			}
			buf = nb;
			cap *= 2;
		}
		got = pr < 0 ? -1 : read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = denied(why, PLANNER_R_GONE, "", "the planner closed its end before a whole answer");
			break;
		}
		nl = memchr(buf + len, '\n', (size_t)got);
		len += (size_t)got;
		if ((nl ? (size_t)(nl - buf) : len) > max) {
			rc = denied(why, PLANNER_R_TOO_LARGE, "", "the answer is longer than the size limit");
			break;
		}
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*nl = '\0';
	*out = buf;
	*n = (size_t)(nl - buf);
	return 0;
}

int planner_write_line(int fd, const cJSON *msg, int64_t deadline_ns, bl_err *err)
{
	char *s = cJSON_PrintUnformatted(msg);
	size_t len, off = 0;
	int rc = 0;

	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory writing to the planner");
	len = strlen(s);
	s[len++] = '\n'; /* cJSON's buffer has room for its NUL, which the newline takes */
	while (off < len && rc == 0) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int ms = remaining_ms(deadline_ns), pr = ms ? poll(&p, 1, ms) : 0;
		ssize_t put;

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			rc = bl_fail(err, BL_EIO, "the planner did not take the request within the deadline");
			break;
		}
		put = send(fd, s + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (put < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (put < 0)
			rc = bl_fail(err, BL_EIO, "writing to the planner: %s", strerror(errno));
		else
			off += (size_t)put;
	}
	cJSON_free(s);
	return rc;
}

/* The sections of a machine file a planner sees as they are: geometry, mixing and painting. */
static const char *const view_keys[] = { "kind", "version", "name", "work_area", "travel_z_mm", "zones",
					 "brushes", "mixing", "painting" };

cJSON *planner_machine_view(const cJSON *machine_file, const struct machine *m, const struct plan_options *o)
{
	cJSON *v = cJSON_CreateObject(), *arm, *mo;
	const cJSON *src_arm = cJSON_GetObjectItemCaseSensitive(machine_file, "arm");

	if (!v)
		return NULL;
	for (size_t i = 0; i < sizeof(view_keys) / sizeof(view_keys[0]); i++) {
		const cJSON *it = cJSON_GetObjectItemCaseSensitive(machine_file, view_keys[i]);

		if (it)
			cJSON_AddItemToObject(v, view_keys[i], cJSON_Duplicate(it, 1));
	}
	/* The arm as geometry: how it moves and where home is, not how the host reaches it. */
	arm = cJSON_AddObjectToObject(v, "arm");
	cJSON_AddStringToObject(arm, "backend", "sim");
	if (cJSON_GetObjectItemCaseSensitive(src_arm, "kinematics"))
		cJSON_AddItemToObject(arm, "kinematics",
				      cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(src_arm, "kinematics"), 1));
	cJSON_AddItemToObject(arm, "home_mm", cJSON_CreateDoubleArray(m->home_mm, 3));
	mo = cJSON_AddObjectToObject(v, "motion");
	cJSON_AddNumberToObject(mo, "travel_speed_mm_s", o->travel_speed_mm_s);
	cJSON_AddNumberToObject(mo, "stroke_speed_mm_s", o->stroke_speed_mm_s);
	cJSON_AddNumberToObject(mo, "curve_accel_mm_s2", m->painting.curve_accel_mm_s2);
	cJSON_AddNumberToObject(mo, "move_mm", m->painting.move_mm);
	cJSON_AddNumberToObject(mo, "press_max_mm", m->painting.press_max_mm);
	return v;
}
