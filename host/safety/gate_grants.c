/* gate_grants.c: what the gate takes from its run's journal: grants on clocks that survive processes (the run's clock, the wall clock, every grant's start and expiry) and the requests it filed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "safety/gate_int.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

void gate_tell_once(struct gate *g, const char *event, const char *msg)
{
	uint64_t h = hash_str(msg) ^ hash_str(event);
	uint64_t *nt;

	for (size_t i = 0; i < g->n_told; i++)
		if (g->told[i] == h)
			return;
	nt = realloc(g->told, (g->n_told + 1) * sizeof(*nt));
	if (!nt)
		return;
	g->told = nt;
	g->told[g->n_told++] = h;
	log_warn("%s", msg);
	gate_journal(g, event, gate_body_str("message", msg), NULL);
}

int64_t gate_run_ns(struct gate *g)
{
	return clk_now_ns(g->clock) + g->run_off_ns;
}

/* The wall clock, never behind what the journal already holds. */
static int64_t wall_ms(struct gate *g)
{
	int64_t now = clk_wall_ms();

	return now > g->wall_floor_ms ? now : g->wall_floor_ms;
}

static struct seen_grant *lookup(struct gate *g, const char *id, int64_t issued_wall_ms)
{
	for (size_t i = 0; i < g->n_seen; i++)
		if (strcmp(g->seen[i].id, id) == 0 && g->seen[i].issued_wall_ms == issued_wall_ms)
			return &g->seen[i];
	return NULL;
}

static struct seen_grant *add_seen(struct gate *g, const char *id, int64_t issued_wall_ms,
				   int64_t seen_run_ns)
{
	struct seen_grant *ns = realloc(g->seen, (g->n_seen + 1) * sizeof(*ns));

	if (!ns)
		return NULL;
	g->seen = ns;
	ns = &g->seen[g->n_seen++];
	memset(ns, 0, sizeof(*ns));
	snprintf(ns->id, sizeof(ns->id), "%s", id);
	ns->issued_wall_ms = issued_wall_ms;
	ns->seen_run_ns = seen_run_ns;
	return ns;
}

/* ---- what earlier processes left in the journal ---- */

struct restore {
	struct gate *g;
	int64_t run_ns, wall_ms; /* the latest of each the journal holds */
};

static double num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A time in the journal as a whole number of ns or ms; dflt when it is none (1e300 is none). */
static int64_t whole(const cJSON *o, const char *key, int64_t dflt)
{
	long v;

	return json_whole(cJSON_GetObjectItemCaseSensitive(o, key), -4e18, 4e18, &v) ? (int64_t)v : dflt;
}

int gate_request_noted(struct gate *g, const char *id, const char *digest, bl_err *err)
{
	struct journaled_request *n = realloc(g->reqs, (g->n_reqs + 1) * sizeof(*n));

	if (!n)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	g->reqs = n;
	n = &g->reqs[g->n_reqs++];
	snprintf(n->id, sizeof(n->id), "%s", id);
	snprintf(n->digest, sizeof(n->digest), "%s", digest ? digest : "");
	return 0;
}

int gate_request_journaled(const struct gate *g, const struct gate_request *r)
{
	char dg[BL_DIGEST_HEX];

	if (gate_request_digest(r, dg, NULL))
		return 0;
	for (size_t i = g->n_reqs; i-- > 0;)
		if (!strcmp(g->reqs[i].id, r->id))
			/* A journal of a brushloop from before the digest was journaled names the id alone. */
			return !g->reqs[i].digest[0] || !strcmp(g->reqs[i].digest, dg);
	return 0;
}

static int restore_event(const cJSON *ev, void *ctx)
{
	struct restore *rs = ctx;
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(ev, "src"),
		    *name = cJSON_GetObjectItemCaseSensitive(ev, "event"),
		    *data = cJSON_GetObjectItemCaseSensitive(ev, "data"), *id;
	int64_t t = whole(ev, "mono_ns", 0), w = whole(ev, "wall_ms", 0), issued;
	struct seen_grant *s;

	if (t > rs->run_ns)
		rs->run_ns = t;
	if (w > rs->wall_ms)
		rs->wall_ms = w;
	if (!cJSON_IsString(src) || strcmp(src->valuestring, "gate") || !cJSON_IsString(name) ||
	    !cJSON_IsObject(data))
		return 0;
	if (!strcmp(name->valuestring, "request")) {
		const char *rid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "request"));
		const char *dg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "digest"));

		if (rid && strlen(rid) < GATE_ID_MAX && (!dg || strlen(dg) == BL_DIGEST_HEX - 1))
			gate_request_noted(rs->g, rid, dg, NULL);
		return 0;
	}
	/* The gate's own events carry the run's clock: a process whose clock began at 0 wrote it. */
	t = whole(data, "run_ns", 0);
	if (t > rs->run_ns)
		rs->run_ns = t;
	id = cJSON_GetObjectItemCaseSensitive(data, "grant");
	issued = whole(data, "issued_wall_ms", -1);
	if (!cJSON_IsString(id) || strlen(id->valuestring) >= GATE_ID_MAX || issued < 0)
		return 0;
	s = lookup(rs->g, id->valuestring, issued);
	if (!strcmp(name->valuestring, "grant") && !s) {
		/* Journals from before run_ns said where the lifetime ends instead. */
		double seen_ns = num(data, "seen_run_ns",
				     (num(data, "expires_run_s", 0) - num(data, "for_s", 0)) * 1e9);

		add_seen(rs->g, id->valuestring, issued, (int64_t)fmax(-4e18, fmin(4e18, seen_ns)));
	} else if (!strcmp(name->valuestring, "grant_expired")) {
		if (!s)
			s = add_seen(rs->g, id->valuestring, issued, 0);
		if (s)
			s->expired = 1;
	}
	return 0;
}

int gate_grants_restore(struct gate *g, bl_err *err)
{
	struct restore rs = { g, 0, 0 };
	long bad = 0;
	int64_t now = clk_now_ns(g->clock);
	int rc = journal_read(g->cfg.journal->path, restore_event, &rs, &bad, err);

	if (rc)
		return bl_err_prefix(err, "the gate reads the journal for the grants it has seen");
	/* A clock that began again (a new process on real hardware after a reboot, a simulator
	 * without its world file) goes on from where the run had got to. */
	g->run_off_ns = rs.run_ns > now ? rs.run_ns - now : 0;
	g->wall_floor_ms = rs.wall_ms;
	return 0;
}

/* ---- grants in force ---- */

static struct seen_grant *seen(struct gate *g, const struct gate_grant *gr)
{
	struct seen_grant *s = lookup(g, gr->id, gr->issued_wall_ms);
	cJSON *b;

	if (s)
		return s;
	s = add_seen(g, gr->id, gr->issued_wall_ms, gate_run_ns(g));
	if (!s)
		return NULL;
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "grant", gr->id);
	cJSON_AddNumberToObject(b, "for_s", gr->for_s);
	cJSON_AddNumberToObject(b, "max_speed_mm_s", gr->max_speed_mm_s);
	cJSON_AddNumberToObject(b, "issued_wall_ms", (double)gr->issued_wall_ms);
	cJSON_AddStringToObject(b, "by", gr->by);
	cJSON_AddNumberToObject(b, "seen_run_ns", (double)s->seen_run_ns);
	cJSON_AddNumberToObject(b, "run_ns", (double)s->seen_run_ns);
	cJSON_AddNumberToObject(b, "expires_run_s", (double)s->seen_run_ns * 1e-9 + gr->for_s);
	gate_journal(g, "grant", b, NULL);
	return s;
}

/* A grant issued later than now (beyond the skew) would void its wall-clock cap: refused, and starts no lifetime. */
static int from_future(struct gate *g, const struct gate_grant *gr)
{
	char msg[256];

	if (gr->issued_wall_ms <= wall_ms(g) + GATE_GRANT_SKEW_MS)
		return 0;
	snprintf(msg, sizeof(msg), "grant %s: issued_wall_ms %lld lies more than %d s ahead of the "
		 "wall clock: a grant from the future is refused", gr->id,
		 (long long)gr->issued_wall_ms, GATE_GRANT_SKEW_MS / 1000);
	gate_tell_once(g, "grant_refused", msg);
	return 1;
}

/* Whether grant gr is still in force by the run's clock and by the wall clock; once expired, for good. */
static int in_force(struct gate *g, const struct gate_grant *gr, struct seen_grant *s)
{
	int64_t run_ns = gate_run_ns(g) - s->seen_run_ns;
	int64_t wall = wall_ms(g) - gr->issued_wall_ms;
	cJSON *b;

	if (s->expired)
		return 0;
	if ((double)run_ns * 1e-9 <= gr->for_s && (double)wall * 1e-3 <= gr->for_s)
		return 1;
	s->expired = 1;
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "grant", gr->id);
	cJSON_AddNumberToObject(b, "issued_wall_ms", (double)gr->issued_wall_ms);
	cJSON_AddNumberToObject(b, "run_s_since_seen", (double)run_ns * 1e-9);
	cJSON_AddNumberToObject(b, "wall_s_since_issued", (double)wall * 1e-3);
	cJSON_AddNumberToObject(b, "run_ns", (double)gate_run_ns(g));
	gate_journal(g, "grant_expired", b, NULL);
	return 0;
}

void gate_grants_refresh(struct gate *g)
{
	char path[PATH_MAX];
	struct stat st;
	bl_err e = { 0 };

	if (fs_join(path, sizeof(path), g->run_dir, "grants.json", NULL))
		return;
	if (stat(path, &st) < 0) {
		gate_grants_free(&g->grants);
		g->grants_read = 0;
		return;
	}
	if (g->grants_read && st.st_ino == g->grants_st.st_ino &&
	    st.st_size == g->grants_st.st_size &&
	    st.st_mtim.tv_sec == g->grants_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == g->grants_st.st_mtim.tv_nsec)
		return;
	gate_grants_free(&g->grants);
	g->grants_st = st;
	g->grants_read = 1;
	if (gate_grants_load(g->run_dir, &g->grants, &e)) {
		gate_tell_once(g, "grant_invalid", e.msg);
		return;
	}
	for (size_t i = 0; i < g->grants.n_bad && i < sizeof(g->grants.bad) / sizeof(g->grants.bad[0]);
	     i++)
		gate_tell_once(g, "grant_invalid", g->grants.bad[i]);
	for (size_t i = 0; i < g->grants.n; i++) {
		const struct gate_grant *gr = &g->grants.g[i];

		/* An egress grant is the planner's broker's to apply (planner_ext.c), never motion. */
		if (gr->revoked || gr->egress[0])
			continue;
		if (gate_grant_validate(g->m, gr, &e)) {
			gate_tell_once(g, "grant_invalid", e.msg);
			continue;
		}
		if (!from_future(g, gr))
			seen(g, gr);
	}
}

int gate_grants_find(struct gate *g, const struct gate_decision *d, char *id, size_t n)
{
	gate_grants_refresh(g);
	for (size_t i = 0; i < g->grants.n; i++) {
		const struct gate_grant *gr = &g->grants.g[i];
		struct seen_grant *s;

		if (gr->revoked || gr->egress[0] || gate_grant_validate(g->m, gr, NULL) || from_future(g, gr))
			continue;
		s = seen(g, gr);
		if (!s || !in_force(g, gr, s))
			continue;
		if (gate_grant_covers(gr, d)) {
			snprintf(id, n, "%s", gr->id);
			return 1;
		}
	}
	return 0;
}
