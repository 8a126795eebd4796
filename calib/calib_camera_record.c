/* calib_camera_record.c: the camera session's record kept beside its profile (PROFILE.json, kind camera-session): what the profile was made from and its verdict, and the drift of a later chart against it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/prov.h"
#include "calib/calib.h"

static const json_migrate_fn record_steps[] = { prov_migrate_add };
const struct json_format calib_camera_record_format = { "camera-session", 2, 1, record_steps };

int calib_camera_record_save(const char *path, const struct calib_camera_result *r, const struct prov *pv,
			     cJSON *settings, double time_s, bl_err *err)
{
	cJSON *j = cJSON_CreateObject(), *arr, *fig = cJSON_CreateObject();
	char now[32];
	int rc;

	if (!j || !fig) {
		cJSON_Delete(j);
		cJSON_Delete(fig);
		cJSON_Delete(settings);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	calib_now_iso(now, sizeof(now));
	cJSON_AddStringToObject(j, "kind", "camera-session");
	cJSON_AddNumberToObject(j, "version", calib_camera_record_format.version);
	cJSON_AddItemToObject(fig, "fit", calib_figures_json(&r->fit));
	cJSON_AddItemToObject(fig, "held_out", calib_figures_json(&r->held_out));
	cJSON_AddItemToObject(fig, "srgb", calib_figures_json(&r->srgb));
	cJSON_AddNumberToObject(fig, "exposure_stops", r->exposure_stops);
	cJSON_AddNumberToObject(fig, "blur_px", r->blur_px);
	cJSON_AddItemToObject(j, "session", prov_json(pv, settings, fig));
	cJSON_AddStringToObject(j, "created", now);
	if (time_s >= 0)
		cJSON_AddNumberToObject(j, "time_s", time_s);
	cJSON_AddStringToObject(j, "frame", pv->source);
	cJSON_AddStringToObject(j, "model", calib_model_names[r->model]);
	cJSON_AddStringToObject(j, "light", calib_light_names[r->light_source]);
	cJSON_AddItemToObject(j, "fit", calib_figures_json(&r->fit));
	cJSON_AddItemToObject(j, "held_out", calib_figures_json(&r->held_out));
	arr = cJSON_AddArrayToObject(j, "patches");
	for (int i = 0; arr && i < r->n; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p)
			break;
		cJSON_AddStringToObject(p, "name", r->p[i].name);
		json_add_vec(p, "code", r->p[i].v, 3);
		json_add_vec(p, "ref_lab", r->p[i].ref_lab, 3);
		cJSON_AddItemToArray(arr, p);
	}
	rc = json_write_file(path, j, err);
	cJSON_Delete(j);
	return rc;
}

struct rec_patch {
	char name[CALIB_NAME_MAX];
	double v[3], ref[3];
};

static int record_load(const char *path, struct rec_patch **out, int *n, double *time_s,
		       char *created, size_t created_n, struct prov *pv, bl_err *err)
{
	cJSON *root;
	json_obj o, po;
	const cJSON *arr, *it;
	size_t count, i = 0;
	struct rec_patch *p = NULL;
	char s[512];
	int rc;

	*out = NULL;
	*n = 0;
	*time_s = -1;
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_format_open(root, path, &calib_camera_record_format, NULL, &o, err)) < 0 ||
	    (rc = prov_read(&o, pv, err)) < 0 ||
	    (rc = json_str(&o, "created", JSON_REQUIRED, created, created_n, err)) < 0 ||
	    (rc = json_num(&o, "time_s", JSON_OPTIONAL, 0, 1e9, time_s, err)) < 0 ||
	    (rc = json_str(&o, "frame", JSON_REQUIRED, s, sizeof(s), err)) < 0 ||
	    (rc = json_str(&o, "model", JSON_REQUIRED, s, sizeof(s), err)) < 0 ||
	    (rc = json_str(&o, "light", JSON_REQUIRED, s, sizeof(s), err)) < 0 ||
	    (rc = json_array(&o, "patches", JSON_REQUIRED, CALIB_MAX_PATCHES, &arr, &count,
			     err)) < 0)
		goto out_free;
	json_take(&o, "fit");
	json_take(&o, "held_out");
	p = calloc(count ? count : 1, sizeof(*p));
	if (!p) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		if ((rc = json_item_obj(&o, "patches", it, i, &po, err)) < 0 ||
		    (rc = json_str(&po, "name", JSON_REQUIRED, p[i].name, CALIB_NAME_MAX, err)) < 0 ||
		    (rc = json_vec(&po, "code", JSON_REQUIRED, 3, 0.0, 1.0, p[i].v, err)) < 0 ||
		    (rc = json_vec(&po, "ref_lab", JSON_REQUIRED, 3, -200, 200, p[i].ref, err)) < 0 ||
		    (rc = json_end(&po, err)) < 0)
			goto out_free;
		i++;
	}
	if ((rc = json_end(&o, err)) < 0)
		goto out_free;
	*out = p;
	*n = (int)count;
	p = NULL;
	rc = 0;
out_free:
	free(p);
	cJSON_Delete(root);
	return rc;
}

/* Seconds since the epoch of a UTC ISO 8601 stamp as calib_now_iso writes it; -1 when unreadable. */
static double iso_seconds(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%d-%d-%dT%d:%d:%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm);
}

int calib_camera_drift(const struct calib_camera_result *now, const char *record_path,
		       const unsigned char *icc, size_t icc_len, double threshold, double time_s,
		       struct calib_drift *d, bl_err *err)
{
	struct rec_patch *prev;
	struct prov pv;
	struct meas_profile *prof = NULL;
	double t_prev, de_now[CALIB_MAX_PATCHES], de_change[CALIB_MAX_PATCHES];
	double g_now = 0, g_prev = 0;
	char names[CALIB_MAX_PATCHES][CALIB_NAME_MAX], created[64];
	int n, m = 0, rc;

	memset(d, 0, sizeof(*d));
	rc = record_load(record_path, &prev, &n, &t_prev, created, sizeof(created), &pv, err);
	if (rc)
		return rc;
	rc = meas_profile_open_mem(icc, icc_len, "the previous profile", &prof, err);
	if (rc)
		goto out_free;
	for (int i = 0; i < now->n; i++) {
		const struct calib_patch *p = &now->p[i];

		for (int k = 0; k < n; k++) {
			color_lab a, b;
			double la[3], lb[3];

			if (strcmp(prev[k].name, p->name) != 0)
				continue;
			meas_profile_lab(prof, p->v, &a);
			meas_profile_lab(prof, prev[k].v, &b);
			la[0] = a.L;
			la[1] = a.a;
			la[2] = a.b;
			lb[0] = b.L;
			lb[1] = b.a;
			lb[2] = b.b;
			de_now[m] = calib_de00(la, p->ref_lab);
			de_change[m] = calib_de00(la, lb);
			memcpy(names[m], p->name, CALIB_NAME_MAX);
			/* The neutral patches say how much the light itself changed. */
			if (hypot(p->ref_lab[1], p->ref_lab[2]) < 4.0 && p->ref_lab[0] > 30) {
				g_now += meas_srgb_to_linear(p->v[1]);
				g_prev += meas_srgb_to_linear(prev[k].v[1]);
			}
			m++;
			break;
		}
	}
	if (m == 0) {
		rc = bl_fail(err, BL_EINVAL, "%s: no patch in common with this chart", record_path);
		goto out_free;
	}
	calib_figures_of(de_now, (const char (*)[CALIB_NAME_MAX])names, m, &d->previous_now);
	calib_figures_of(de_change, (const char (*)[CALIB_NAME_MAX])names, m, &d->change);
	d->intensity_change = g_prev > 0 ? g_now / g_prev - 1.0 : 0.0;
	if (time_s >= 0 && t_prev >= 0) {
		d->hours = (time_s - t_prev) / 3600.0;
	} else {
		double a = iso_seconds(created), b = (double)time(NULL);

		d->hours = a >= 0 ? (b - a) / 3600.0 : -1;
	}
	d->recalibrate = d->previous_now.mean_de00 > threshold;
out_free:
	meas_profile_close(prof);
	free(prev);
	return rc;
}

cJSON *calib_drift_json(const struct calib_drift *d)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddNumberToObject(j, "hours", d->hours);
	cJSON_AddItemToObject(j, "previous_profile_now", calib_figures_json(&d->previous_now));
	cJSON_AddItemToObject(j, "change", calib_figures_json(&d->change));
	cJSON_AddNumberToObject(j, "intensity_change", d->intensity_change);
	cJSON_AddBoolToObject(j, "recalibrate", d->recalibrate);
	return j;
}

int calib_camera_record_prov(const char *record_path, struct prov *pv, bl_err *err)
{
	struct rec_patch *p = NULL;
	char created[32];
	double t;
	int n, rc = record_load(record_path, &p, &n, &t, created, sizeof(created), pv, err);

	free(p);
	return rc;
}
