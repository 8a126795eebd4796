/* prov.c: a calibration file's "session" object: written, read strictly, added by migration to files written before it existed. */
#include "base/prov.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char *const prov_verdict_names[] = { "pass", "forced", "unknown", NULL };

_Static_assert(sizeof(prov_verdict_names) / sizeof(prov_verdict_names[0]) == PROV_VERDICT_COUNT + 1,
	       "a name for every verdict");

void prov_now_iso(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

cJSON *prov_json(const struct prov *p, cJSON *settings, cJSON *figures)
{
	cJSON *j = cJSON_CreateObject();
	char now[32];

	if (!j) {
		cJSON_Delete(settings);
		cJSON_Delete(figures);
		return NULL;
	}
	prov_now_iso(now, sizeof(now));
	cJSON_AddStringToObject(j, "created", now);
	cJSON_AddStringToObject(j, "brushloop", BL_VERSION);
	cJSON_AddStringToObject(j, "source", p->source);
	cJSON_AddStringToObject(j, "source_sha256", p->source_sha256);
	cJSON_AddItemToObject(j, "settings", settings ? settings : cJSON_CreateObject());
	cJSON_AddItemToObject(j, "figures", figures ? figures : cJSON_CreateObject());
	cJSON_AddStringToObject(j, "verdict", prov_verdict_names[p->verdict]);
	cJSON_AddStringToObject(j, "why", p->why);
	return j;
}

int prov_read(json_obj *root, struct prov *p, bl_err *err)
{
	json_obj o;
	char version[64];
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = json_child(root, "session", JSON_REQUIRED, &o, err)) < 0 ||
	    (rc = json_str(&o, "created", JSON_REQUIRED, p->created, sizeof(p->created), err)) < 0 ||
	    (rc = json_str(&o, "brushloop", JSON_REQUIRED, version, sizeof(version), err)) < 0 ||
	    (rc = json_str(&o, "source", JSON_REQUIRED, p->source, sizeof(p->source), err)) < 0 ||
	    (rc = json_str(&o, "source_sha256", JSON_REQUIRED, p->source_sha256, sizeof(p->source_sha256), err)) < 0 ||
	    (rc = json_enum(&o, "verdict", JSON_REQUIRED, prov_verdict_names, &p->verdict, err)) < 0 ||
	    (rc = json_str(&o, "why", JSON_REQUIRED, p->why, sizeof(p->why), err)) < 0)
		return rc;
	/* The writer's settings and figures: a record for a person, nothing here acts on them. */
	json_take(&o, "settings");
	json_take(&o, "figures");
	if (p->created[0] && prov_age_h(p, 0) < -1e8)
		return json_fail(&o, "created", err, BL_EINVAL, "'%s' is not a UTC time "
				 "YYYY-MM-DDTHH:MM:SSZ", p->created);
	return json_end(&o, err);
}

int prov_migrate_add(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	cJSON *s = cJSON_CreateObject();

	(void)file;
	(void)ctx;
	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_AddStringToObject(s, "created", "");
	cJSON_AddStringToObject(s, "brushloop", "");
	cJSON_AddStringToObject(s, "source", "");
	cJSON_AddStringToObject(s, "source_sha256", "");
	cJSON_AddItemToObject(s, "settings", cJSON_CreateObject());
	cJSON_AddItemToObject(s, "figures", cJSON_CreateObject());
	cJSON_AddStringToObject(s, "verdict", "unknown");
	cJSON_AddStringToObject(s, "why", "written before brushloop recorded how its calibration files were made");
	return json_migrate_add(root, "session", s, err);
}

double prov_age_h(const struct prov *p, double now_s)
{
	struct tm tm;
	char *end;

	if (!p->created[0])
		return -1;
	memset(&tm, 0, sizeof(tm));
	end = strptime(p->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -1e9;
	if (now_s <= 0)
		now_s = (double)time(NULL);
	return (now_s - (double)timegm(&tm)) / 3600.0;
}
