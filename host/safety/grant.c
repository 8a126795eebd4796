/* grant.c: time-limited, scoped permissions in RUN_DIR/grants.json: parsing, matching a decision, adding and revoking under a lock. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hostport.h"
#include "base/json.h"
#include "config/machine.h"
#include "safety/operator.h"

#define ZB(z) (1u << (z))
#define PALETTE (ZB(ARM_ZONE_WELL) | ZB(ARM_ZONE_CELL) | ZB(ARM_ZONE_WATER) | ZB(ARM_ZONE_WIPE))
#define MAX_GRANTS 256
/* Longest grant anyone may write, whatever the machine says (the gate holds it to safety.max_grant_s). */
#define MAX_GRANT_S (30.0 * 86400.0)

static int zone_bits(const char *name, unsigned *bits)
{
	if (strcmp(name, "palette") == 0) {
		*bits = PALETTE;
		return 0;
	}
	for (int k = 0; arm_zone_names[k]; k++) {
		if (strcmp(name, arm_zone_names[k]) == 0) {
			*bits = ZB(k);
			return 0;
		}
	}
	return -1;
}

static int kind_bit(const char *name, unsigned *bits)
{
	for (int k = 0; arm_kind_names[k]; k++) {
		if (strcmp(name, arm_kind_names[k]) == 0) {
			*bits = ZB(k);
			return 0;
		}
	}
	return -1;
}

static int parse_list(const char *what, const char *list, int (*one)(const char *, unsigned *),
		      const char *choices, unsigned *out, bl_err *err)
{
	char buf[256], *save = NULL, *tok;

	*out = 0;
	if (!list || !*list)
		return bl_fail(err, BL_EINVAL, "%s: give at least one of: %s", what, choices);
	if (strlen(list) >= sizeof(buf))
		return bl_fail(err, BL_EINVAL, "%s: list too long", what);
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned b;

		if (one(tok, &b) < 0)
			return bl_fail(err, BL_EINVAL, "%s: '%s' is not one of: %s", what, tok,
				       choices);
		*out |= b;
	}
	if (!*out)
		return bl_fail(err, BL_EINVAL, "%s: give at least one of: %s", what, choices);
	return 0;
}

int gate_parse_zones(const char *list, unsigned *zones, bl_err *err)
{
	return parse_list("--zone", list, zone_bits,
			  "travel, canvas, well, cell, water, wipe, palette", zones, err);
}

int gate_parse_kinds(const char *list, unsigned *kinds, bl_err *err)
{
	return parse_list("--kinds", list, kind_bit,
			  "home, move, jog, stroke, dip, dispense, stir, wipe, wash, park", kinds, err);
}

int gate_parse_duration(const char *text, double *seconds, bl_err *err)
{
	const char *p = text;
	double total = 0.0;
	int parts = 0;

	if (!text || !*text)
		return bl_fail(err, BL_EINVAL, "--for: give a duration such as 15m, 90s or 2h");
	while (*p) {
		char *end;
		double v, unit = 1.0;

		if (*p < '0' || *p > '9')
			goto bad;
		errno = 0;
		v = strtod(p, &end);
		if (end == p || errno || !isfinite(v))
			goto bad;
		p = end;
		if (*p == 's') {
			p++;
		} else if (*p == 'm') {
			unit = 60.0;
			p++;
		} else if (*p == 'h') {
			unit = 3600.0;
			p++;
		} else if (*p) {
			goto bad;
		} else if (parts) {
			goto bad; /* "1h30" is ambiguous */
		}
		total += v * unit;
		parts++;
	}
	if (!(total > 0.0) || total > MAX_GRANT_S)
		return bl_fail(err, BL_EINVAL, "--for: '%s' must be more than 0 and at most 30 days",
			       text);
	*seconds = total;
	return 0;
bad:
	return bl_fail(err, BL_EINVAL,
		       "--for: '%s' is not a duration (write 15m, 90s, 2h or 1h30m)", text);
}

static int grants_path(const char *run_dir, char *out, size_t n, bl_err *err)
{
	return fs_join(out, n, run_dir, "grants.json", err);
}

static int load_names(json_obj *o, const char *key, int (*one)(const char *, unsigned *),
		      unsigned *out, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	int rc = json_array(o, key, JSON_REQUIRED, 32, &arr, &n, err);

	if (rc)
		return rc;
	*out = 0;
	cJSON_ArrayForEach(it, arr) {
		unsigned b;
		char k[48];

		snprintf(k, sizeof(k), "%s[%zu]", key, i++);
		if (!cJSON_IsString(it) || one(it->valuestring, &b) < 0)
			return json_fail(o, k, err, BL_EINVAL, "is not a %s name",
					 one == zone_bits ? "zone" : "action kind");
		*out |= b;
	}
	if (!*out)
		return json_fail(o, key, err, BL_EINVAL, "must name at least one");
	return 0;
}

/* "host:port" as the egress policy reads it: a host name and a port 1..65535; the broker checks the rest. */
static int egress_dest_ok(const char *dest)
{
	char host[256];
	int port;

	return hostport_split(dest, host, sizeof(host), &port) == 0 && hostport_name_ok(host, 63);
}

/* What a motion grant allows: the kinds, where the tool may go down, how fast. */
static int load_motion(json_obj *o, struct gate_grant *g, bl_err *err)
{
	int rc;

	if ((rc = load_names(o, "kinds", kind_bit, &g->kinds, err)) ||
	    (rc = load_names(o, "zones", zone_bits, &g->zones, err)) ||
	    (rc = json_num(o, "max_speed_mm_s", JSON_REQUIRED, 0.0, ARM_MAX_SPEED_MM_S,
			   &g->max_speed_mm_s, err)))
		return rc;
	if (g->max_speed_mm_s <= 0.0)
		return json_fail(o, "max_speed_mm_s", err, BL_EINVAL, "must be positive");
	return 0;
}

static int load_grant(json_obj *o, struct gate_grant *g, bl_err *err)
{
	long long wall;
	int rc;

	memset(g, 0, sizeof(*g));
	if ((rc = json_str(o, "id", JSON_REQUIRED, g->id, sizeof(g->id), err)))
		return rc;
	if (!g->id[0])
		return json_fail(o, "id", err, BL_EINVAL, "must not be empty");
	/* An egress grant names its destination and nothing of motion (json_end refuses the rest). */
	rc = json_str(o, "egress", JSON_OPTIONAL, g->egress, sizeof(g->egress), err);
	if (rc < 0)
		return rc;
	if (rc == 0 && !egress_dest_ok(g->egress))
		return json_fail(o, "egress", err, BL_EINVAL, "'%s' is not host:port", g->egress);
	if ((rc == 1 && (rc = load_motion(o, g, err))) ||
	    (rc = json_num(o, "for_s", JSON_REQUIRED, 0.0, MAX_GRANT_S, &g->for_s, err)) ||
	    (rc = json_int(o, "issued_wall_ms", JSON_REQUIRED, 0, INT64_MAX / 2, &wall, err)) ||
	    (rc = json_str(o, "by", JSON_REQUIRED, g->by, sizeof(g->by), err)) ||
	    (rc = json_bool(o, "revoked", JSON_OPTIONAL, &g->revoked, err)) < 0)
		return rc;
	if (g->for_s <= 0.0)
		return json_fail(o, "for_s", err, BL_EINVAL, "must be positive");
	g->issued_wall_ms = wall;
	return json_end(o, err);
}

static int load_doc(const char *path, const cJSON *doc, struct gate_grants *out, bl_err *err)
{
	const cJSON *arr, *it;
	json_obj root;
	size_t n, i = 0;
	int rc;

	if ((rc = json_obj_open(doc, path, "", &root, err)) ||
	    (rc = json_kind(&root, "grants", 1, err)) ||
	    (rc = json_array(&root, "grants", JSON_REQUIRED, MAX_GRANTS, &arr, &n, err)) ||
	    (rc = json_end(&root, err)))
		return rc;
	out->g = calloc(n ? n : 1, sizeof(*out->g));
	if (!out->g)
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
	cJSON_ArrayForEach(it, arr) {
		json_obj o;
		bl_err gerr = { 0 };
		int dup = 0;

		if (json_item_obj(&root, "grants", it, i, &o, &gerr) == 0 &&
		    load_grant(&o, &out->g[out->n], &gerr) == 0) {
			for (size_t k = 0; k < out->n; k++)
				dup |= strcmp(out->g[k].id, out->g[out->n].id) == 0;
			if (!dup) {
				out->n++;
				i++;
				continue;
			}
			json_fail(&o, "id", &gerr, BL_EINVAL, "'%s' is used twice",
				  out->g[out->n].id);
		}
		/* One bad entry is reported and skipped; the others still hold. */
		if (out->n_bad < sizeof(out->bad) / sizeof(out->bad[0]))
			snprintf(out->bad[out->n_bad], sizeof(out->bad[0]), "%s", gerr.msg);
		out->n_bad++;
		i++;
	}
	return 0;
}

int gate_grants_load(const char *run_dir, struct gate_grants *out, bl_err *err)
{
	char path[PATH_MAX];
	cJSON *doc;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = grants_path(run_dir, path, sizeof(path), err);
	if (rc)
		return rc;
	if (access(path, F_OK) != 0)
		return 0;
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = load_doc(path, doc, out, err);
	cJSON_Delete(doc);
	if (rc)
		gate_grants_free(out);
	return rc;
}

void gate_grants_free(struct gate_grants *gs)
{
	free(gs->g);
	gs->g = NULL;
	gs->n = 0;
}

static cJSON *names_json(unsigned bits, const char *const *names, int count, int palette)
{
	cJSON *a = cJSON_CreateArray();

	if (palette && (bits & PALETTE) == PALETTE) {
		cJSON_AddItemToArray(a, cJSON_CreateString("palette"));
		bits &= ~PALETTE;
	}
	for (int k = 0; k < count; k++)
		if (bits & ZB(k))
			cJSON_AddItemToArray(a, cJSON_CreateString(names[k]));
	return a;
}

static cJSON *grant_json(const struct gate_grant *g)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "id", g->id);
	if (g->egress[0]) {
		cJSON_AddStringToObject(o, "egress", g->egress);
	} else {
		cJSON_AddItemToObject(o, "kinds", names_json(g->kinds, arm_kind_names, ARM_KIND_COUNT, 0));
		cJSON_AddItemToObject(o, "zones", names_json(g->zones, arm_zone_names, ARM_ZONE_COUNT, 1));
		cJSON_AddNumberToObject(o, "max_speed_mm_s", g->max_speed_mm_s);
	}
	cJSON_AddNumberToObject(o, "for_s", g->for_s);
	cJSON_AddNumberToObject(o, "issued_wall_ms", (double)g->issued_wall_ms);
	cJSON_AddStringToObject(o, "by", g->by);
	if (g->revoked)
		cJSON_AddBoolToObject(o, "revoked", 1);
	return o;
}

/* Read-modify-write of grants.json under an exclusive lock on RUN_DIR/grants.lock. */
static int locked_update(const char *run_dir, int (*edit)(struct gate_grants *, void *, bl_err *),
			 void *ctx, bl_err *err)
{
	char lock[PATH_MAX], path[PATH_MAX];
	struct gate_grants gs;
	cJSON *doc, *arr;
	int fd, rc;

	if ((rc = fs_join(lock, sizeof(lock), run_dir, "grants.lock", err)) ||
	    (rc = grants_path(run_dir, path, sizeof(path), err)))
		return rc;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot open: %s", lock, strerror(errno));
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			rc = bl_fail(err, BL_EIO, "%s: cannot lock: %s", lock, strerror(errno));
			goto out_close;
		}
	}
	rc = gate_grants_load(run_dir, &gs, err);
	if (rc) {
		bl_err_prefix(err, "will not rewrite a grants file that does not load; fix or remove it");
		goto out_close;
	}
	if (gs.n_bad) {
		rc = bl_fail(err, BL_EINVAL,
			     "%s has %zu malformed grant(s) (first: %s); fix or remove them first",
			     path, gs.n_bad, gs.bad[0]);
		goto out_free;
	}
	rc = edit(&gs, ctx, err);
	if (rc)
		goto out_free;
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "kind", "grants");
	cJSON_AddNumberToObject(doc, "version", 1);
	arr = cJSON_AddArrayToObject(doc, "grants");
	for (size_t i = 0; i < gs.n; i++)
		cJSON_AddItemToArray(arr, grant_json(&gs.g[i]));
	rc = json_write_file(path, doc, err);
	cJSON_Delete(doc);
out_free:
	gate_grants_free(&gs);
out_close:
	close(fd); /* releases the lock */
	return rc;
}

static int add_edit(struct gate_grants *gs, void *ctx, bl_err *err)
{
	struct gate_grant *g = ctx, *ng;
	long max = 0;

	if (gs->n >= MAX_GRANTS)
		return bl_fail(err, BL_EINVAL, "grants.json holds %d grants already; revoke some",
			       MAX_GRANTS);
	for (size_t i = 0; i < gs->n; i++) {
		char *end;
		long v = gs->g[i].id[0] == 'g' ? strtol(gs->g[i].id + 1, &end, 10) : 0;

		if (v > max)
			max = v;
	}
	snprintf(g->id, sizeof(g->id), "g%ld", max + 1);
	ng = realloc(gs->g, (gs->n + 1) * sizeof(*ng));
	if (!ng)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	gs->g = ng;
	gs->g[gs->n++] = *g;
	return 0;
}

int gate_grant_add(const char *run_dir, struct gate_grant *g, bl_err *err)
{
	return locked_update(run_dir, add_edit, g, err);
}

static int revoke_edit(struct gate_grants *gs, void *ctx, bl_err *err)
{
	const char *id = ctx;

	for (size_t i = 0; i < gs->n; i++) {
		if (strcmp(gs->g[i].id, id) == 0) {
			if (gs->g[i].revoked)
				return bl_fail(err, BL_EINVAL, "grant %s was revoked already", id);
			gs->g[i].revoked = 1;
			return 0;
		}
	}
	return bl_fail(err, BL_EINVAL, "there is no grant '%s'", id);
}

int gate_grant_revoke(const char *run_dir, const char *id, bl_err *err)
{
	return locked_update(run_dir, revoke_edit, (void *)id, err);
}

int gate_grant_validate(const struct machine *m, const struct gate_grant *g, bl_err *err)
{
	if (g->for_s > m->safety.max_grant_s)
		return bl_fail(err, BL_EINVAL,
			       "grant %s: lasts %g s, longer than safety.max_grant_s %g s of %s",
			       g->id, g->for_s, m->safety.max_grant_s, m->file);
	/* The machine file opens the broker; a grant only widens what goes through it. */
	if (g->egress[0] && !m->planner.egress_json[0])
		return bl_fail(err, BL_EINVAL,
			       "grant %s: opens %s to the planner, but %s gives the planner no planner.egress "
			       "(no broker, no network at all)", g->id, g->egress, m->file);
	if (!g->egress[0] && g->max_speed_mm_s > m->limits.hard.speed_mm_s)
		return bl_fail(err, BL_EINVAL,
			       "grant %s: max speed %g mm/s is above limits.hard.speed_mm_s %g mm/s of %s",
			       g->id, g->max_speed_mm_s, m->limits.hard.speed_mm_s, m->file);
	return 0;
}

cJSON *gate_grant_json(const struct gate_grant *g, int64_t now_ms)
{
	cJSON *o = cJSON_CreateObject(), *k, *z;
	double left = gate_grant_wall_left_s(g, now_ms);

	cJSON_AddStringToObject(o, "id", g->id);
	/* The shape grants.json gives it: an egress grant names a destination and nothing of motion. */
	if (g->egress[0]) {
		cJSON_AddStringToObject(o, "egress", g->egress);
	} else {
		k = cJSON_AddArrayToObject(o, "kinds");
		z = cJSON_AddArrayToObject(o, "zones");
		for (int i = 0; i < ARM_KIND_COUNT; i++)
			if (g->kinds & (1u << i))
				cJSON_AddItemToArray(k, cJSON_CreateString(arm_kind_names[i]));
		for (int i = 0; i < ARM_ZONE_COUNT; i++)
			if (g->zones & (1u << i))
				cJSON_AddItemToArray(z, cJSON_CreateString(arm_zone_names[i]));
		cJSON_AddNumberToObject(o, "max_speed_mm_s", g->max_speed_mm_s);
	}
	cJSON_AddNumberToObject(o, "for_s", g->for_s);
	cJSON_AddNumberToObject(o, "issued_wall_ms", (double)g->issued_wall_ms);
	cJSON_AddStringToObject(o, "by", g->by);
	cJSON_AddStringToObject(o, "state", g->revoked ? "revoked" : left > 0 ? "active" : "expired");
	cJSON_AddNumberToObject(o, "wall_s_left", left);
	return o;
}

double gate_grant_wall_left_s(const struct gate_grant *g, int64_t now_ms)
{
	double left = g->for_s - (double)(now_ms - g->issued_wall_ms) / 1000.0;

	return g->revoked || !(left > 0.0) ? 0.0 : left;
}

/* What the text grants: an egress destination, or motion (kinds, zones, a max speed). */
static int give_scope(const struct gate_grant_text *t, struct gate_grant *g, bl_err *err)
{
	char *end;
	int rc;

	if (t->egress) {
		if (t->kinds || t->zones || t->max_speed)
			return bl_fail(err, BL_EINVAL,
				       "an egress grant takes no kinds, zones or max speed: it opens a destination, not motion");
		if (!egress_dest_ok(t->egress) || strlen(t->egress) >= sizeof(g->egress))
			return bl_fail(err, BL_EINVAL, "--egress %s: give host:port (api.example.org:443)",
				       t->egress);
		snprintf(g->egress, sizeof(g->egress), "%s", t->egress);
		return 0;
	}
	if (!t->kinds || !t->zones || !t->max_speed)
		return bl_fail(err, BL_EINVAL, "a grant needs kinds, zones, a max speed and a duration");
	if ((rc = gate_parse_kinds(t->kinds, &g->kinds, err)) ||
	    (rc = gate_parse_zones(t->zones, &g->zones, err)))
		return rc;
	errno = 0;
	g->max_speed_mm_s = strtod(t->max_speed, &end);
	if (errno || end == t->max_speed || *end || !isfinite(g->max_speed_mm_s) ||
	    g->max_speed_mm_s <= 0.0)
		return bl_fail(err, BL_EINVAL, "--max-speed %s: must be a positive number of mm/s",
			       t->max_speed);
	return 0;
}

int gate_grant_give(const char *run_dir, const struct gate_grant_text *t, struct gate_grant *g,
		    bl_err *err)
{
	int rc = 0;

	memset(g, 0, sizeof(*g));
	if (!t->for_)
		return bl_fail(err, BL_EINVAL, "a grant needs a duration");
	if ((rc = give_scope(t, g, err)) || (rc = gate_parse_duration(t->for_, &g->for_s, err)))
		return rc;
	g->issued_wall_ms = clk_wall_ms();
	snprintf(g->by, sizeof(g->by), "%s", t->by ? t->by : "unknown");
	/* With the run's machine at hand, refuse now what the gate would ignore later. */
	if (t->machine_path) {
		struct machine *m = calloc(1, sizeof(*m));

		if (!m)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		rc = machine_load(t->machine_path, m, err);
		if (rc == 0)
			rc = gate_grant_validate(m, g, err);
		free(m);
		if (rc)
			return rc;
	}
	return gate_grant_add(run_dir, g, err);
}

int gate_grant_covers(const struct gate_grant *g, const struct gate_decision *d)
{
	if (g->revoked || g->egress[0] || d->verdict != GATE_OPERATOR || d->kind < 0)
		return 0;
	if (!(g->kinds & ZB(d->kind)))
		return 0;
	/* Where the tool goes down must be granted; travel above the floors is part of every grant. */
	if (d->zones_entered & ~(g->zones | ZB(ARM_ZONE_TRAVEL)))
		return 0;
	if (d->speed_mm_s > g->max_speed_mm_s)
		return 0;
	for (int i = 0; i < d->n_findings; i++)
		if (gate_reason_verdict(d->findings[i].reason) == GATE_OPERATOR &&
		    !gate_reason_grantable(d->findings[i].reason))
			return 0;
	return d->n_dropped == 0;
}
