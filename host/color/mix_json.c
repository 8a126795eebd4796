/* mix_json.c: the mixing state as JSON (what a run persists and journals) and recipe text parsing. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "color/mix_impl.h"

#define MAX_UNITS 1000000 /* absurd amounts are typos, not recipes */

cJSON *mix_units_json(const struct mix_model *m, const int *units)
{
	cJSON *o = cJSON_CreateObject();

	for (int i = 0; o && i < m->n_paints; i++)
		if (units[i] > 0)
			cJSON_AddNumberToObject(o, m->name[i], units[i]);
	return o;
}

static cJSON *lab_vec(cJSON *parent, const char *key, const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	return json_add_vec(parent, key, v, 3);
}

cJSON *mix_action_json(const struct mix_model *m, const struct mix_action *act)
{
	cJSON *o = cJSON_CreateObject(), *w;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "action", mix_action_names[act->kind]);
	if (act->kind == MIX_ACT_FRESH || act->kind == MIX_ACT_ADD)
		cJSON_AddItemToObject(o, "dispense", mix_units_json(m, act->units));
	cJSON_AddItemToObject(o, "cell", mix_units_json(m, act->cell_units));
	cJSON_AddNumberToObject(o, "cell_units", act->total_after);
	lab_vec(o, "predicted_lab", &act->predicted);
	cJSON_AddNumberToObject(o, "predicted_de00", act->predicted_de00);
	if (act->measured_de00 >= 0.0)
		cJSON_AddNumberToObject(o, "measured_de00", act->measured_de00);
	if (act->add_de00 >= 0.0)
		cJSON_AddNumberToObject(o, "add_de00", act->add_de00);
	cJSON_AddBoolToObject(o, "add_reaches", act->add_reaches);
	w = cJSON_AddObjectToObject(o, "waste_ml");
	if (w) {
		if (act->waste_add_ml >= 0.0)
			cJSON_AddNumberToObject(w, "add", act->waste_add_ml);
		else
			cJSON_AddNullToObject(w, "add");
		if (act->waste_fresh_ml >= 0.0)
			cJSON_AddNumberToObject(w, "fresh", act->waste_fresh_ml);
		else
			cJSON_AddNullToObject(w, "fresh");
	}
	cJSON_AddStringToObject(o, "reason", act->reason);
	return o;
}

int mix_units_from_json(const struct mix_model *m, json_obj *parent, const char *key,
			   int *units, bl_err *err)
{
	json_obj o;
	int rc = json_child(parent, key, JSON_REQUIRED, &o, err);

	if (rc)
		return rc;
	memset(units, 0, sizeof(int) * MIX_MAX_PAINTS);
	for (const cJSON *it = o.node->child; it; it = it->next) {
		int i = mix_model_find(m, it->string);
		double v = it->valuedouble;

		if (i < 0)
			return json_fail(&o, it->string, err, BL_EINVAL, "is not a paint of the palette");
		if (!cJSON_IsNumber(it) || !isfinite(v) || v < 0.0 || v > MAX_UNITS || v != floor(v))
			return json_fail(&o, it->string, err, BL_EINVAL,
					 "must be a whole number of units, 0..%d", MAX_UNITS);
		units[i] = (int)v;
		json_take(&o, it->string);
	}
	return json_end(&o, err);
}

static int lab_from_json(json_obj *o, const char *key, int flags, color_lab *c, bl_err *err)
{
	double v[3];
	int rc = json_vec(o, key, flags, 3, -200.0, 200.0, v, err);

	if (rc)
		return rc;
	if (v[0] < 0.0 || v[0] > 100.0)
		return json_fail(o, key, err, BL_EINVAL, "L=%g is outside 0..100", v[0]);
	*c = (color_lab){ v[0], v[1], v[2] };
	return 0;
}

cJSON *mix_learn_json(const struct mix_model *m, const struct mix_learn *l)
{
	cJSON *o = cJSON_CreateObject(), *g, *obs;

	if (!o)
		return NULL;
	g = cJSON_AddObjectToObject(o, "gains");
	for (int i = 0; g && i < m->n_paints; i++) {
		cJSON *p;

		if (l->log_k[i] == 0.0 && l->log_s[i] == 0.0)
			continue;
		p = cJSON_AddObjectToObject(g, m->name[i]);
		if (p) {
			cJSON_AddNumberToObject(p, "log_k", l->log_k[i]);
			cJSON_AddNumberToObject(p, "log_s", l->log_s[i]);
		}
	}
	obs = cJSON_AddArrayToObject(o, "observations");
	for (int k = 0; obs && k < l->n_obs; k++) {
		const struct mix_obs *ob = &l->obs[k];
		cJSON *e = cJSON_CreateObject(), *u;

		if (!e || !cJSON_AddItemToArray(obs, e)) {
			cJSON_Delete(e);
			break;
		}
		u = cJSON_AddObjectToObject(e, "units");
		for (int j = 0; u && j < ob->n; j++)
			cJSON_AddNumberToObject(u, m->name[ob->idx[j]], ob->units[j]);
		lab_vec(e, "measured_lab", &ob->measured);
	}
	return o;
}

int mix_learn_from_json(const struct mix_model *m, const cJSON *node, const char *file,
			struct mix_learn *l, bl_err *err)
{
	const double gain_max = MIX_LEARN_STRENGTH_MAX + MIX_LEARN_BALANCE_MAX;
	json_obj root, gains;
	const cJSON *arr, *it;
	size_t n, k = 0;
	int rc;

	mix_learn_init(l, m->n_paints);
	rc = json_obj_open(node, file, "", &root, err);
	if (rc)
		return rc;
	rc = json_child(&root, "gains", JSON_REQUIRED, &gains, err);
	if (rc)
		return rc;
	for (it = gains.node->child; it; it = it->next) {
		int i = mix_model_find(m, it->string);
		json_obj p;

		if (i < 0)
			return json_fail(&gains, it->string, err, BL_EINVAL,
					 "is not a paint of the palette");
		rc = json_child(&gains, it->string, JSON_REQUIRED, &p, err);
		/* As far as learning may take a gain, and no further: a run's own state reads back. */
		if (rc == 0)
			rc = json_num(&p, "log_k", JSON_REQUIRED, -gain_max, gain_max, &l->log_k[i], err);
		if (rc == 0)
			rc = json_num(&p, "log_s", JSON_REQUIRED, -gain_max, gain_max, &l->log_s[i], err);
		if (rc == 0)
			rc = json_end(&p, err);
		if (rc)
			return rc;
	}
	rc = json_end(&gains, err);
	if (rc == 0)
		rc = json_array(&root, "observations", JSON_REQUIRED, MIX_LEARN_MAX_OBS, &arr, &n, err);
	if (rc)
		return rc;
	cJSON_ArrayForEach(it, arr) {
		struct mix_obs *ob = &l->obs[k];
		int units[MIX_MAX_PAINTS];
		json_obj e;

		rc = json_item_obj(&root, "observations", it, k, &e, err);
		if (rc == 0)
			rc = mix_units_from_json(m, &e, "units", units, err);
		if (rc == 0)
			rc = lab_from_json(&e, "measured_lab", JSON_REQUIRED, &ob->measured, err);
		if (rc == 0)
			rc = json_end(&e, err);
		if (rc)
			return rc;
		for (int i = 0; i < m->n_paints; i++) {
			if (!units[i])
				continue;
			if (ob->n == MIX_RECIPE_MAX)
				return json_fail(&e, "units", err, BL_EINVAL, "more than %d paints",
						 MIX_RECIPE_MAX);
			ob->idx[ob->n] = i;
			ob->units[ob->n++] = units[i];
		}
		if (ob->n == 0)
			return json_fail(&e, "units", err, BL_EINVAL, "an observed cell holds paint");
		k++;
	}
	l->n_obs = (int)n;
	return json_end(&root, err);
}

cJSON *mix_job_json(const struct mix_model *m, const struct mix_job *job)
{
	cJSON *o = cJSON_CreateObject(), *lim;

	if (!o)
		return NULL;
	lab_vec(o, "target_lab", &job->target);
	lim = cJSON_AddObjectToObject(o, "limits");
	if (lim) {
		cJSON_AddNumberToObject(lim, "unit_ml", job->lim.unit_ml);
		cJSON_AddNumberToObject(lim, "min_units", job->lim.min_units);
		cJSON_AddNumberToObject(lim, "max_units", job->lim.max_units);
		cJSON_AddNumberToObject(lim, "max_paints", job->lim.max_paints);
		cJSON_AddNumberToObject(lim, "tol_de00", job->lim.tol_de00);
		cJSON_AddNumberToObject(lim, "aim_de00", job->lim.aim_de00);
		cJSON_AddNumberToObject(lim, "max_attempts", job->lim.max_attempts);
		if (job->lim.exclude) {
			cJSON *ex = cJSON_AddArrayToObject(lim, "exclude");

			for (int i = 0; ex && i < m->n_paints; i++)
				if (job->lim.exclude >> i & 1)
					cJSON_AddItemToArray(ex, cJSON_CreateString(m->name[i]));
		}
	}
	cJSON_AddItemToObject(o, "have", mix_units_json(m, job->have));
	cJSON_AddNumberToObject(o, "attempts", job->attempts);
	cJSON_AddNumberToObject(o, "cells", job->cells);
	cJSON_AddNumberToObject(o, "dispensed_units", job->dispensed_units);
	cJSON_AddNumberToObject(o, "discarded_units", job->discarded_units);
	cJSON_AddNumberToObject(o, "first_units", job->first_units);
	if (job->has_bias)
		lab_vec(o, "bias_lab", &job->bias);
	cJSON_AddBoolToObject(o, "finished", job->finished);
	return o;
}

int mix_job_from_json(const struct mix_model *m, const cJSON *node, const char *file,
		      struct mix_job *job, bl_err *err)
{
	json_obj root, lim;
	const cJSON *ex, *it;
	long long v;
	double bias[3];
	size_t n, k = 0;
	int rc, begun;

	memset(job, 0, sizeof(*job));
	rc = json_obj_open(node, file, "", &root, err);
	/*
	 * A job not begun (no cell yet, not finished) is what a caller persists
	 * before mix_run begins it, which sets its limits: they may still be all
	 * zero, and are read as written. A begun job's limits are checked.
	 */
	if (rc == 0)
		rc = json_i32(&root, "cells", JSON_REQUIRED, 0, 1000, &job->cells, err);
	if (rc == 0)
		rc = json_bool(&root, "finished", JSON_REQUIRED, &job->finished, err);
	begun = job->cells > 0 || job->finished;
	if (rc == 0)
		rc = lab_from_json(&root, "target_lab", JSON_REQUIRED, &job->target, err);
	if (rc == 0)
		rc = json_child(&root, "limits", JSON_REQUIRED, &lim, err);
	if (rc == 0)
		rc = json_num(&lim, "unit_ml", JSON_REQUIRED, begun ? 1e-6 : 0.0, 1e6,
			      &job->lim.unit_ml, err);
	if (rc == 0)
		rc = json_i32(&lim, "min_units", JSON_REQUIRED, begun, MAX_UNITS, &job->lim.min_units,
			      err);
	if (rc == 0)
		rc = json_i32(&lim, "max_units", JSON_REQUIRED, begun, MAX_UNITS, &job->lim.max_units,
			      err);
	if (rc == 0)
		rc = json_i32(&lim, "max_paints", JSON_REQUIRED, begun, MIX_RECIPE_MAX,
			      &job->lim.max_paints, err);
	if (rc == 0)
		rc = json_num(&lim, "tol_de00", JSON_REQUIRED, begun ? 0.01 : 0.0, 100.0,
			      &job->lim.tol_de00, err);
	if (rc == 0)
		rc = json_num(&lim, "aim_de00", JSON_REQUIRED, 0.0, 100.0, &job->lim.aim_de00, err);
	if (rc == 0)
		rc = json_i32(&lim, "max_attempts", JSON_REQUIRED, begun, 1000,
			      &job->lim.max_attempts, err);
	if (rc == 0)
		rc = json_array(&lim, "exclude", JSON_OPTIONAL, MIX_MAX_PAINTS, &ex, &n, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		cJSON_ArrayForEach(it, ex) {
			int i = cJSON_IsString(it) ? mix_model_find(m, it->valuestring) : -1;

			if (i < 0)
				return json_fail(&lim, "exclude", err, BL_EINVAL,
						 "item %zu is not a paint of the palette", k);
			job->lim.exclude |= (uint64_t)1 << i;
			k++;
		}
	}
	rc = json_end(&lim, err);
	if (rc == 0 && job->lim.min_units > job->lim.max_units)
		rc = json_fail(&lim, "min_units", err, BL_EINVAL, "%d exceeds max_units %d",
			       job->lim.min_units, job->lim.max_units);
	if (rc == 0)
		rc = mix_units_from_json(m, &root, "have", job->have, err);
	if (rc == 0)
		rc = json_i32(&root, "attempts", JSON_REQUIRED, 0, 1000, &job->attempts, err);
	if (rc == 0)
		rc = json_int(&root, "dispensed_units", JSON_REQUIRED, 0, 1000LL * MAX_UNITS, &v, err);
	if (rc == 0) {
		job->dispensed_units = (int)v;
		rc = json_int(&root, "discarded_units", JSON_REQUIRED, 0, 1000LL * MAX_UNITS, &v,
			      err);
	}
	if (rc == 0) {
		job->discarded_units = (int)v;
		rc = json_i32(&root, "first_units", JSON_REQUIRED, 0, MAX_UNITS, &job->first_units,
			      err);
	}
	if (rc == 0) {
		rc = json_vec(&root, "bias_lab", JSON_OPTIONAL, 3, -200.0, 200.0, bias, err);
		if (rc == 0) {
			job->bias = (color_lab){ bias[0], bias[1], bias[2] };
			job->has_bias = 1;
		}
		rc = rc > 0 ? 0 : rc;
	}
	if (rc == 0)
		rc = json_end(&root, err);
	return rc;
}

int mix_parse_units(const struct mix_model *m, const char *text, int *units, bl_err *err)
{
	const char *p = text;
	int seen[MIX_MAX_PAINTS] = { 0 }, n = 0;

	memset(units, 0, sizeof(int) * MIX_MAX_PAINTS);
	if (!*text)
		return bl_fail(err, BL_EINVAL, "'%s': empty; write NAME:UNITS,NAME:UNITS", text);
	while (*p) {
		const char *end = strchr(p, ','), *colon = NULL;
		char name[CFG_NAME_MAX], num[32], *stop;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		long v;
		int i;

		/* The last ':' of the item, so a paint's name may hold one. */
		for (const char *q = p; q < p + len; q++)
			if (*q == ':')
				colon = q;
		if (!colon || colon == p || colon + 1 == p + len)
			return bl_fail(err, BL_EINVAL,
				       "'%.*s' in '%s' is not NAME:UNITS", (int)len, p, text);
		if ((size_t)(colon - p) >= sizeof(name) || (size_t)(p + len - colon - 1) >= sizeof(num))
			return bl_fail(err, BL_EINVAL, "'%.*s' in '%s' is too long", (int)len, p,
				       text);
		snprintf(name, sizeof(name), "%.*s", (int)(colon - p), p);
		snprintf(num, sizeof(num), "%.*s", (int)(p + len - colon - 1), colon + 1);
		i = mix_model_find(m, name);
		if (i < 0)
			return bl_fail(err, BL_EINVAL, "'%s' is not a paint of the palette", name);
		if (seen[i])
			return bl_fail(err, BL_EINVAL, "'%s' is named twice in '%s'", name, text);
		seen[i] = 1;
		if (num[0] == '-')
			return bl_fail(err, BL_EINVAL,
				       "'%s': %s units is negative: paint can only be added", name, num);
		errno = 0;
		v = strtol(num, &stop, 10);
		if (stop == num || *stop || errno == ERANGE || !isdigit((unsigned char)num[0]))
			return bl_fail(err, BL_EINVAL,
				       "'%s': units '%s' must be a whole number of dispense units, 0 or more",
				       name, num);
		if (v > MAX_UNITS)
			return bl_fail(err, BL_EINVAL, "'%s': %ld units is absurd (at most %d)", name,
				       v, MAX_UNITS);
		units[i] = (int)v;
		n++;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return bl_fail(err, BL_EINVAL, "'%s' ends with a comma", text);
	}
	return n > 0 ? 0 : bl_fail(err, BL_EINVAL, "'%s' names no paint", text);
}
