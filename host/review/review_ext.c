/* review_ext.c: an external reviewer: a lab's own process, started in the planner's sandbox afresh for every review, one request and one answer line (docs/reviewer.md); it can only withhold agreement. */
#include "review/review_ext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "planner/planner_ext.h"
#include "planner/planner_proto.h"

/* After the answer, how long a reviewer may take to end by itself before it is killed. */
#define REVIEW_EXIT_GRACE_MS 500

struct review_ext {
	struct review_ext_config cfg;
	struct planner_ext_cmd cmd;  /* as an external planner's: words, no shell, the files it names */
	long id;
};

int review_ext_open(const struct review_ext_config *cfg, struct review_ext **out, bl_err *err)
{
	struct review_ext *x = calloc(1, sizeof(*x));
	int rc;

	*out = NULL;
	if (!x)
		return bl_fail(err, BL_ENOMEM, "out of memory for the reviewer");
	x->cfg = *cfg;
	if ((rc = planner_ext_cmd_init(&x->cmd, cfg->command, NULL, err))) {
		bl_err_prefix(err, "the reviewer command");
		free(x);
		return rc;
	}
	*out = x;
	return 0;
}

void review_ext_close(struct review_ext *x)
{
	if (!x)
		return;
	planner_ext_cmd_free(&x->cmd);
	free(x);
}

/* Agreement withheld because there was no answer (or not one): why in the reviewer's words, failure its name. */
static void withheld(struct review_ext_answer *a, const char *failure, const char *why)
{
	a->answered = 0;
	a->agree = 0;
	snprintf(a->failure, sizeof(a->failure), "%s", failure);
	snprintf(a->reason, sizeof(a->reason), "%s", why);
}

/*
 * {"type": "answer", "id": ID, "agree": BOOL, "reason": TEXT}: anything
 * else is the reviewer's claim (an "approval", a verdict of its own), kept
 * for the journal and never read.
 */
static void parse_answer(const char *line, size_t n, long id, struct review_ext_answer *a)
{
	cJSON *doc = NULL, *claims, *it, *next;
	const cJSON *type, *jid, *agree, *reason;
	bl_err e = { 0 };

	if (strlen(line) != n || json_parse_text(line, "answer", &doc, &e) || !cJSON_IsObject(doc)) {
		withheld(a, "malformed", e.msg[0] ? e.msg : "the answer is not a JSON object");
		cJSON_Delete(doc);
		return;
	}
	type = cJSON_GetObjectItemCaseSensitive(doc, "type");
	jid = cJSON_GetObjectItemCaseSensitive(doc, "id");
	agree = cJSON_GetObjectItemCaseSensitive(doc, "agree");
	reason = cJSON_GetObjectItemCaseSensitive(doc, "reason");
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "answer"))
		withheld(a, "malformed", "answer: type: must be \"answer\"");
	else if (!cJSON_IsNumber(jid) || jid->valuedouble != (double)id)
		withheld(a, "malformed", "answer: id: must be the request's");
	else if (!cJSON_IsBool(agree))
		withheld(a, "malformed", "answer: agree: must be true or false");
	else if (!cJSON_IsString(reason) || json_text_check(reason->valuestring, a->reason, sizeof(a->reason)))
		withheld(a, "malformed", "answer: reason: must be printable text");
	else {
		a->answered = 1;
		a->agree = cJSON_IsTrue(agree);
		snprintf(a->reason, sizeof(a->reason), "%s", reason->valuestring);
	}
	claims = cJSON_CreateObject();
	for (it = doc->child; it; it = next) {
		next = it->next;
		if (strcmp(it->string, "type") && strcmp(it->string, "id") && strcmp(it->string, "agree") &&
		    strcmp(it->string, "reason"))
			cJSON_AddItemToObject(claims, it->string, cJSON_DetachItemViaPointer(doc, it));
	}
	{
		char *s = cJSON_PrintUnformatted(claims);

		/* A claim is journaled, not kept whole. */
		if (s && strlen(s) > PLANNER_CLAIMS_MAX) {
			cJSON_Delete(claims);
			claims = cJSON_CreateObject();
			cJSON_AddNumberToObject(claims, "cut_bytes", (double)strlen(s));
		}
		cJSON_free(s);
	}
	if (claims->child)
		a->claims = claims;
	else
		cJSON_Delete(claims);
	cJSON_Delete(doc);
}

int review_ext_ask(struct review_ext *x, cJSON *req, const char *in_dir, struct review_ext_answer *a, bl_err *err)
{
	struct sbx_policy pol = { 0 };
	struct sbx_proc proc;
	struct planner_denial why;
	int64_t t0 = clk_real_ns(), deadline;
	char *line = NULL;
	size_t n = 0;
	cJSON *l;
	int rc, st;
	bl_err serr = { 0 };

	memset(a, 0, sizeof(*a));
	x->id++;
	cJSON_AddStringToObject(req, "type", "review");
	cJSON_AddNumberToObject(req, "protocol", REVIEW_PROTOCOL);
	cJSON_AddNumberToObject(req, "id", (double)x->id);
	l = cJSON_AddObjectToObject(req, "limits");
	cJSON_AddNumberToObject(l, "max_answer_bytes", (double)x->cfg.max_answer_bytes);
	cJSON_AddNumberToObject(l, "answer_deadline_ms", x->cfg.answer_deadline_ms);
	pol.argv = x->cmd.argv;
	pol.files = x->cmd.files;
	pol.n_files = x->cmd.n_files;
	pol.in_dir = in_dir;
	pol.cpu_s = x->cfg.cpu_s;
	pol.as_mb = x->cfg.as_mb;
	pol.tmpfs_mb = x->cfg.tmpfs_mb;
	pol.egress = x->cfg.egress;
	pol.log = x->cfg.log;
	pol.log_ctx = x->cfg.log_ctx;
	/* A fresh sandbox each review: nothing of one call lives on into the next. */
	if (sbx_start(&pol, &proc, &serr)) {
		withheld(a, "failed", serr.msg);
		a->wall_s = (double)(clk_real_ns() - t0) * 1e-9;
		return 0;
	}
	deadline = t0 + (int64_t)x->cfg.answer_deadline_ms * 1000000;
	if (planner_write_line(proc.fd, req, deadline, &serr)) {
		withheld(a, "gone", "the reviewer did not take the request");
	} else if ((rc = planner_read_line(proc.fd, x->cfg.max_answer_bytes, deadline, &line, &n, &why, err))) {
		if (rc != BL_EDENIED) {
			sbx_stop(&proc, NULL, &serr);
			return rc;
		}
		withheld(a, planner_reason_names[why.reason], why.message);
	} else {
		parse_answer(line, n, x->id, a);
	}
	free(line);
	/* Only one line is read: whatever else it sends (a flood) dies with its sandbox. */
	sbx_wait(&proc, REVIEW_EXIT_GRACE_MS, &st);
	sbx_stop(&proc, NULL, &serr);
	a->wall_s = (double)(clk_real_ns() - t0) * 1e-9;
	return 0;
}

cJSON *review_ext_answer_json(const struct review_ext_answer *a)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "answered", a->answered);
	cJSON_AddBoolToObject(o, "agree", a->agree);
	if (a->failure[0])
		cJSON_AddStringToObject(o, "failure", a->failure);
	cJSON_AddStringToObject(o, "reason", a->reason);
	cJSON_AddNumberToObject(o, "wall_s", (double)(int64_t)(a->wall_s * 1000) / 1000);
	if (a->claims)
		cJSON_AddItemToObject(o, "claims", cJSON_Duplicate(a->claims, 1));
	return o;
}

void review_ext_answer_free(struct review_ext_answer *a)
{
	cJSON_Delete(a->claims);
	a->claims = NULL;
}
