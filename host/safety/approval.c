/* approval.c: approval requests and answers as files under RUN_DIR/approvals, so a paused or running gate can be answered from another process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "safety/operator.h"

/* Answers are version 2: version 1 named no digest, so it cannot be shown to answer anything. */
#define ANSWER_VERSION 2

const char *const gate_req_status_names[] = { "pending", "used", "refused", "timed_out",
					      "superseded", NULL };

int gate_approvals_dir(const char *run_dir, char *out, size_t n, bl_err *err)
{
	return fs_join(out, n, run_dir, "approvals", err);
}

/* A request id is 'r' and six digits; anything else in the directory is not ours. */
static int parse_id(const char *name, long *num, const char *suffix)
{
	char *end;
	long v;

	if (name[0] != 'r' || name[1] < '0' || name[1] > '9')
		return 0;
	v = strtol(name + 1, &end, 10);
	if (end - name != 7 || strcmp(end, suffix) != 0)
		return 0;
	*num = v;
	return 1;
}

static int valid_id(const char *id)
{
	long n;

	return id && parse_id(id, &n, "");
}

static int id_path(const char *run_dir, const char *id, const char *suffix, char *out, size_t n,
		   bl_err *err)
{
	char dir[PATH_MAX], name[GATE_ID_MAX + 24];

	if (!valid_id(id))
		return bl_fail(err, BL_EINVAL, "'%s' is not a request id (r and six digits)",
			       id ? id : "");
	if (gate_approvals_dir(run_dir, dir, sizeof(dir), err))
		return BL_EINVAL;
	snprintf(name, sizeof(name), "%s%s", id, suffix);
	return fs_join(out, n, dir, name, err);
}

int gate_request_new_id(const char *run_dir, char *id, size_t n, bl_err *err)
{
	char dir[PATH_MAX];
	struct dirent *e;
	long max = 0, v;
	DIR *dh;
	int rc = gate_approvals_dir(run_dir, dir, sizeof(dir), err);

	if (rc)
		return rc;
	dh = opendir(dir);
	if (!dh)
		return bl_fail(err, BL_EIO, "%s: cannot list: %s", dir, strerror(errno));
	while ((e = readdir(dh)))
		if (parse_id(e->d_name, &v, ".json") && v > max)
			max = v;
	closedir(dh);
	if (max >= 999999)
		return bl_fail(err, BL_EIO, "%s: request ids are used up", dir);
	snprintf(id, n, "r%06ld", max + 1);
	return 0;
}

int gate_request_from_decision(const struct gate_decision *d, const struct arm_action *a,
			       struct gate_request *r, bl_err *err)
{
	cJSON *aj = arm_action_to_json(a);
	char *s = aj ? cJSON_PrintUnformatted(aj) : NULL;

	memset(r, 0, sizeof(*r));
	cJSON_Delete(aj);
	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory printing an action");
	r->action_json = strdup(s);
	cJSON_free(s);
	if (!r->action_json)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	r->status = GATE_REQ_PENDING;
	r->created_wall_ms = clk_wall_ms();
	r->index = d->index;
	r->action_id = d->action_id;
	r->kind = d->kind;
	r->from = d->from;
	r->to = d->to;
	r->speed_mm_s = d->speed_mm_s;
	r->length_mm = d->length_mm;
	r->n_segments = d->n_segments;
	r->zones = d->zones_entered;
	for (int i = 0; i < d->n_findings; i++) {
		const struct gate_finding *f = &d->findings[i];
		struct gate_why *w;

		if (gate_reason_verdict(f->reason) != GATE_OPERATOR)
			continue;
		w = &r->why[r->n_why++];
		w->reason = f->reason;
		snprintf(w->field, sizeof(w->field), "%s", f->field);
		snprintf(w->detail, sizeof(w->detail), "%s", f->detail);
	}
	return 0;
}

static void add_point(cJSON *o, const char *key, const arm_point *p)
{
	const double v[3] = { p->x, p->y, p->z };

	json_add_vec(o, key, v, 3);
}

int gate_request_digest(const struct gate_request *r, char out[BL_DIGEST_HEX], bl_err *err)
{
	strbuf sb;
	int rc;

	/* One field a line, in a fixed order: the same request always hashes the same. */
	sb_init(&sb);
	sb_printf(&sb, "brushloop approval request\nid %s\ncreated_wall_ms %lld\naction %s\n", r->id,
		  (long long)r->created_wall_ms, r->action_json ? r->action_json : "");
	for (int i = 0; i < r->n_why; i++)
		sb_printf(&sb, "why %s\t%s\t%s\n", gate_reason_names[r->why[i].reason], r->why[i].field,
			  r->why[i].detail);
	if (!sb.s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = bl_digest_hex(sb.s, sb.len, out, err);
	sb_free(&sb);
	return rc;
}

/* Adds the request's digest to o (nothing when it cannot be computed: out of memory). */
static void add_digest(cJSON *o, const struct gate_request *r)
{
	char dg[BL_DIGEST_HEX];

	if (gate_request_digest(r, dg, NULL) == 0)
		cJSON_AddStringToObject(o, "digest", dg);
}

cJSON *gate_request_json(const struct gate_request *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "status", gate_req_status_names[r->status]);
	if (r->answered)
		cJSON_AddStringToObject(o, "answer", r->approved ? "yes" : "no");
	cJSON_AddStringToObject(o, "kind", r->kind >= 0 ? arm_kind_names[r->kind] : "");
	if (r->action_id >= 0)
		cJSON_AddNumberToObject(o, "action_id", (double)r->action_id);
	cJSON_AddNumberToObject(o, "action_index", (double)r->index);
	gate_request_add_motion(o, r);
	cJSON_AddNumberToObject(o, "created_wall_ms", (double)r->created_wall_ms);
	add_digest(o, r);
	if (r->answer_ignored[0])
		cJSON_AddStringToObject(o, "answer_ignored", r->answer_ignored);
	return o;
}

void gate_request_add_motion(cJSON *o, const struct gate_request *r)
{
	cJSON *why, *zones;

	add_point(o, "from_mm", &r->from);
	add_point(o, "to_mm", &r->to);
	cJSON_AddNumberToObject(o, "speed_mm_s", r->speed_mm_s);
	zones = cJSON_AddArrayToObject(o, "zones");
	for (int k = 0; k < ARM_ZONE_COUNT; k++)
		if (r->zones & (1u << k))
			cJSON_AddItemToArray(zones, cJSON_CreateString(arm_zone_names[k]));
	why = cJSON_AddArrayToObject(o, "why");
	for (int i = 0; i < r->n_why; i++) {
		cJSON *w = cJSON_CreateObject();

		cJSON_AddStringToObject(w, "reason", gate_reason_names[r->why[i].reason]);
		cJSON_AddStringToObject(w, "field", r->why[i].field);
		cJSON_AddStringToObject(w, "detail", r->why[i].detail);
		cJSON_AddItemToArray(why, w);
	}
	if (r->preview[0])
		cJSON_AddStringToObject(o, "preview", r->preview);
}

int gate_request_write(const char *run_dir, const struct gate_request *r,
		       const struct gate_decision *d, bl_err *err)
{
	char path[PATH_MAX];
	cJSON *o, *action;
	int rc = id_path(run_dir, r->id, ".json", path, sizeof(path), err);

	if (rc)
		return rc;
	action = cJSON_Parse(r->action_json);
	o = cJSON_CreateObject();
	if (!o || !action) {
		cJSON_Delete(o);
		cJSON_Delete(action);
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
	}
	cJSON_AddStringToObject(o, "kind", "approval_request");
	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "status", gate_req_status_names[r->status]);
	cJSON_AddNumberToObject(o, "created_wall_ms", (double)r->created_wall_ms);
	cJSON_AddNumberToObject(o, "action_index", (double)r->index);
	cJSON_AddItemToObject(o, "action", action);
	gate_request_add_motion(o, r);
	cJSON_AddNumberToObject(o, "length_mm", r->length_mm);
	cJSON_AddNumberToObject(o, "segments", (double)r->n_segments);
	add_digest(o, r); /* for people: an answer names it; the gate computes it again */
	if (d)
		cJSON_AddItemToObject(o, "decision", gate_decision_to_json(d, GATE_VIEW_OPERATOR));
	rc = json_write_file(path, o, err);
	cJSON_Delete(o);
	return rc;
}

static int read_point(json_obj *o, const char *key, arm_point *p, bl_err *err)
{
	double v[3];
	int rc = json_vec(o, key, JSON_REQUIRED, 3, -1e9, 1e9, v, err);

	if (rc == 0) {
		p->x = v[0];
		p->y = v[1];
		p->z = v[2];
	}
	return rc;
}

static int find_name(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

/* Why answer file (version ver, digest dg, written at wall) answers nothing of request r, or 0 when it answers it. */
static int answer_binds(const struct gate_request *r, long long ver, const char *dg,
			long long wall, char *why, size_t n, bl_err *err)
{
	char want[BL_DIGEST_HEX];
	int rc;

	if (ver < ANSWER_VERSION) {
		snprintf(why, n, "it is in the old format (version %lld), which names no digest of the "
			 "action it approves: answer again", ver);
		return 1;
	}
	if ((rc = gate_request_digest(r, want, err)))
		return rc;
	if (strcmp(dg, want) != 0) {
		snprintf(why, n, "it approves digest %.16s..., not this request's %.16s... (another "
			 "action or other reasons, or written before the request existed)", dg, want);
		return 1;
	}
	if (wall < r->created_wall_ms) {
		snprintf(why, n, "it was written at wall_ms %lld, before the request was filed "
			 "(created_wall_ms %lld)", wall, (long long)r->created_wall_ms);
		return 1;
	}
	return 0;
}

static int load_answer(const char *run_dir, struct gate_request *r, bl_err *err)
{
	char path[PATH_MAX], id[GATE_ID_MAX], ans[8], kind[32], dg[BL_DIGEST_HEX] = "";
	long long wall, version;
	cJSON *doc;
	json_obj o;
	int rc = id_path(run_dir, r->id, ".answer.json", path, sizeof(path), err);

	if (rc)
		return rc;
	if (access(path, F_OK) != 0)
		return 0;
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	if ((rc = json_obj_open(doc, path, "", &o, err)) ||
	    (rc = json_str(&o, "kind", JSON_REQUIRED, kind, sizeof(kind), err)) ||
	    (rc = json_version(&o, 1, ANSWER_VERSION, &version, err)) ||
	    (rc = json_str(&o, "id", JSON_REQUIRED, id, sizeof(id), err)) ||
	    (rc = json_str(&o, "answer", JSON_REQUIRED, ans, sizeof(ans), err)) ||
	    (rc = json_int(&o, "wall_ms", JSON_REQUIRED, 0, INT64_MAX / 2, &wall, err)) ||
	    (rc = json_str(&o, "by", JSON_REQUIRED, r->answer_by, sizeof(r->answer_by), err)) ||
	    (rc = json_str(&o, "digest", version >= 2 ? JSON_REQUIRED : JSON_OPTIONAL, dg, sizeof(dg),
			   err)) < 0 ||
	    (rc = json_end(&o, err)))
		goto out;
	if (strcmp(kind, "approval_answer") != 0)
		rc = json_fail(&o, "kind", err, BL_EINVAL, "is '%s', expected 'approval_answer'",
			       kind);
	else if (strcmp(id, r->id) != 0)
		rc = json_fail(&o, "id", err, BL_EINVAL, "is '%s', but the file is for '%s'", id,
			       r->id);
	else if (strcmp(ans, "yes") != 0 && strcmp(ans, "no") != 0)
		rc = json_fail(&o, "answer", err, BL_EINVAL, "must be \"yes\" or \"no\"");
	if (rc)
		goto out;
	rc = answer_binds(r, version, dg, wall, r->answer_ignored, sizeof(r->answer_ignored), err);
	if (rc == 0) {
		r->answered = 1;
		r->approved = strcmp(ans, "yes") == 0;
		r->answer_wall_ms = wall;
	} else if (rc > 0) {
		r->answer_by[0] = '\0'; /* nobody answered this request */
		rc = 0;
	}
out:
	cJSON_Delete(doc);
	return rc;
}

static int load_fields(json_obj *o, struct gate_request *r, bl_err *err)
{
	const cJSON *arr, *it, *action;
	char status[16];
	long long v;
	size_t n, i = 0;
	int rc, k;

	if ((rc = json_kind(o, "approval_request", 1, err)))
		return rc;
	{
		char id[GATE_ID_MAX];

		if ((rc = json_str(o, "id", JSON_REQUIRED, id, sizeof(id), err)))
			return rc;
		if (strcmp(id, r->id) != 0)
			return json_fail(o, "id", err, BL_EINVAL, "is '%s', but the file is for '%s'",
					 id, r->id);
	}
	if ((rc = json_str(o, "status", JSON_REQUIRED, status, sizeof(status), err)))
		return rc;
	k = find_name(gate_req_status_names, status);
	if (k < 0)
		return json_fail(o, "status", err, BL_EINVAL, "'%s' is not a request status", status);
	r->status = (enum gate_req_status)k;
	if ((rc = json_int(o, "created_wall_ms", JSON_REQUIRED, 0, INT64_MAX / 2, &v, err)))
		return rc;
	r->created_wall_ms = v;
	if ((rc = json_int(o, "action_index", JSON_REQUIRED, -1, 1000000000LL, &v, err)))
		return rc;
	r->index = (long)v;
	action = json_take(o, "action");
	if (!cJSON_IsObject(action))
		return json_fail(o, "action", err, BL_EINVAL, "must be an action object");
	{
		struct arm_action a;
		char *s;

		/* The action must still be one: a hand-edited request cannot smuggle in another shape. */
		if ((rc = arm_action_parse(action, o->file, 0, &a, err)))
			return rc;
		r->kind = (int)a.kind;
		r->action_id = a.id;
		arm_action_release(&a);
		s = cJSON_PrintUnformatted(action);
		if (!s)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		r->action_json = strdup(s);
		cJSON_free(s);
		if (!r->action_json)
			return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	if ((rc = read_point(o, "from_mm", &r->from, err)) ||
	    (rc = read_point(o, "to_mm", &r->to, err)) ||
	    (rc = json_num(o, "speed_mm_s", JSON_REQUIRED, 0, 1e9, &r->speed_mm_s, err)) ||
	    (rc = json_num(o, "length_mm", JSON_REQUIRED, 0, 1e12, &r->length_mm, err)) ||
	    (rc = json_int(o, "segments", JSON_REQUIRED, 0, 1000000000LL, &v, err)))
		return rc;
	r->n_segments = (size_t)v;
	if ((rc = json_array(o, "zones", JSON_REQUIRED, ARM_ZONE_COUNT, &arr, &n, err)))
		return rc;
	cJSON_ArrayForEach(it, arr) {
		k = cJSON_IsString(it) ? find_name(arm_zone_names, it->valuestring) : -1;
		if (k < 0)
			return json_fail(o, "zones", err, BL_EINVAL, "holds something not a zone name");
		r->zones |= 1u << k;
	}
	if ((rc = json_array(o, "why", JSON_REQUIRED, GATE_MAX_REASONS, &arr, &n, err)))
		return rc;
	cJSON_ArrayForEach(it, arr) {
		struct gate_why *w = &r->why[i];
		char reason[32];
		json_obj wo;

		if ((rc = json_item_obj(o, "why", it, i, &wo, err)) ||
		    (rc = json_str(&wo, "reason", JSON_REQUIRED, reason, sizeof(reason), err)) ||
		    (rc = json_str(&wo, "field", JSON_REQUIRED, w->field, sizeof(w->field), err)) ||
		    (rc = json_str(&wo, "detail", JSON_REQUIRED, w->detail, sizeof(w->detail), err)) ||
		    (rc = json_end(&wo, err)))
			return rc;
		k = find_name(gate_reason_names, reason);
		if (k < 0)
			return json_fail(&wo, "reason", err, BL_EINVAL, "'%s' is not a reason code",
					 reason);
		w->reason = (enum gate_reason)k;
		i++;
	}
	r->n_why = (int)n;
	if ((rc = json_str(o, "preview", JSON_OPTIONAL, r->preview, sizeof(r->preview), err)) < 0)
		return rc;
	json_take(o, "decision"); /* for people; the fields above are what the gate acts on */
	json_take(o, "digest");   /* likewise: computed again from those fields */
	return json_end(o, err);
}

int gate_request_load(const char *run_dir, const char *id, struct gate_request *r, bl_err *err)
{
	char path[PATH_MAX];
	cJSON *doc;
	json_obj o;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = id_path(run_dir, id, ".json", path, sizeof(path), err);
	if (rc)
		return rc;
	snprintf(r->id, sizeof(r->id), "%s", id);
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = json_obj_open(doc, path, "", &o, err);
	if (rc == 0)
		rc = load_fields(&o, r, err);
	cJSON_Delete(doc);
	if (rc == 0)
		rc = load_answer(run_dir, r, err);
	if (rc)
		gate_request_free(r);
	return rc;
}

void gate_request_free(struct gate_request *r)
{
	free(r->action_json);
	r->action_json = NULL;
}

static int cmp_req(const void *a, const void *b)
{
	return strcmp(((const struct gate_request *)a)->id, ((const struct gate_request *)b)->id);
}

int gate_requests_list(const char *run_dir, struct gate_request **out, size_t *n, size_t *n_bad,
		       bl_err *bad_err, bl_err *err)
{
	char dir[PATH_MAX];
	struct gate_request *l = NULL;
	size_t cap = 0, cnt = 0, bad = 0;
	struct dirent *e;
	DIR *dh;
	long v;
	int rc = gate_approvals_dir(run_dir, dir, sizeof(dir), err);

	*out = NULL;
	*n = 0;
	if (n_bad)
		*n_bad = 0;
	if (rc)
		return rc;
	dh = opendir(dir);
	if (!dh) {
		if (errno == ENOENT)
			return 0; /* no request was ever filed */
		return bl_fail(err, BL_EIO, "%s: cannot list: %s", dir, strerror(errno));
	}
	while ((e = readdir(dh))) {
		char id[GATE_ID_MAX];
		bl_err lerr = { 0 };

		if (!parse_id(e->d_name, &v, ".json"))
			continue;
		snprintf(id, sizeof(id), "r%06ld", v);
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct gate_request *nl = realloc(l, nc * sizeof(*nl));

			if (!nl) {
				closedir(dh);
				gate_requests_free(l, cnt);
				return bl_fail(err, BL_ENOMEM, "out of memory listing %s", dir);
			}
			l = nl;
			cap = nc;
		}
		if (gate_request_load(run_dir, id, &l[cnt], &lerr)) {
			if (bad == 0 && bad_err)
				*bad_err = lerr;
			bad++;
			continue;
		}
		cnt++;
	}
	closedir(dh);
	if (cnt)
		qsort(l, cnt, sizeof(*l), cmp_req);
	*out = l;
	*n = cnt;
	if (n_bad)
		*n_bad = bad;
	return 0;
}

void gate_requests_free(struct gate_request *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gate_request_free(&l[i]);
	free(l);
}

int gate_request_waiting(const struct gate_request *r)
{
	return r->status == GATE_REQ_PENDING && !r->answered;
}

/* Writes data to path only if path does not exist yet: temp file, fsync, link, so two answers never both land. */
static int create_once(const char *path, const char *data, bl_err *err)
{
	char tmp[PATH_MAX];
	size_t len = strlen(data);
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot create: %s", tmp, strerror(errno));
	if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0)
		rc = bl_fail(err, BL_EIO, "%s: write failed: %s", tmp, strerror(errno));
	if (close(fd) < 0 && rc == 0)
		rc = bl_fail(err, BL_EIO, "%s: close failed: %s", tmp, strerror(errno));
	if (rc == 0 && link(tmp, path) < 0)
		rc = errno == EEXIST ? bl_fail(err, BL_EINVAL, "%s: exists already", path)
				     : bl_fail(err, BL_EIO, "%s: cannot create: %s", path,
					       strerror(errno));
	unlink(tmp);
	if (rc == 0) {
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				fsync(fd);
				close(fd);
			}
		}
	}
	return rc;
}

/* An answer file that answers nothing moves aside (kept for the record) so a real answer can land. */
static int move_aside(const char *path, bl_err *err)
{
	char aside[PATH_MAX];
	size_t n = strlen(path) - strlen(".json");

	if (snprintf(aside, sizeof(aside), "%.*s.ignored-%lld.json", (int)n, path,
		     (long long)clk_wall_ms()) >= (int)sizeof(aside))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	if (rename(path, aside) < 0 && errno != ENOENT)
		return bl_fail(err, BL_EIO, "%s: cannot move aside: %s", path, strerror(errno));
	return 0;
}

int gate_request_answer(const char *run_dir, const char *id, int approve, const char *by,
			bl_err *err)
{
	struct gate_request r;
	char path[PATH_MAX], dg[BL_DIGEST_HEX], *text;
	int64_t now;
	cJSON *o;
	int rc = gate_request_load(run_dir, id, &r, err);

	if (rc)
		return rc;
	if (r.answered) {
		rc = bl_fail(err, BL_EINVAL, "request %s was answered already (%s, by %s)", id,
			     r.approved ? "yes" : "no", r.answer_by);
		goto out_req;
	}
	if (r.status != GATE_REQ_PENDING) {
		rc = bl_fail(err, BL_EINVAL, "request %s is no longer pending (%s)", id,
			     gate_req_status_names[r.status]);
		goto out_req;
	}
	rc = id_path(run_dir, id, ".answer.json", path, sizeof(path), err);
	if (rc || (rc = gate_request_digest(&r, dg, err)))
		goto out_req;
	if (r.answer_ignored[0] && (rc = move_aside(path, err)))
		goto out_req;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", "approval_answer");
	cJSON_AddNumberToObject(o, "version", ANSWER_VERSION);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "answer", approve ? "yes" : "no");
	/* Never older than the request, whatever the clock did since it was filed. */
	now = clk_wall_ms();
	cJSON_AddNumberToObject(o, "wall_ms", (double)(now > r.created_wall_ms ? now : r.created_wall_ms));
	cJSON_AddStringToObject(o, "by", by ? by : "unknown");
	cJSON_AddStringToObject(o, "digest", dg);
	text = cJSON_Print(o);
	cJSON_Delete(o);
	if (!text) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_req;
	}
	rc = create_once(path, text, err);
	if (rc == BL_EINVAL)
		bl_fail(err, BL_EINVAL, "request %s was answered already", id);
	cJSON_free(text);
out_req:
	gate_request_free(&r);
	return rc;
}
