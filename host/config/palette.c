/* palette.c: loading and strict validation of palette files (schema v1). */
#include "config/palette.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"

/* Reads an array of exactly n numbers of any length up to PALETTE_MAX_BANDS. */
static int load_bands(json_obj *o, const char *key, int n, double lo, double hi, double *out,
		      bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;

	BL_TRY(json_array(o, key, JSON_REQUIRED, PALETTE_MAX_BANDS, &arr, &count, err));
	if ((int)count != n)
		return json_fail(o, key, err, BL_EINVAL, "has %zu values, wavelengths_nm has %d",
				 count, n);
	cJSON_ArrayForEach(it, arr) {
		char k[64];

		snprintf(k, sizeof(k), "%s[%zu]", key, i);
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
			return json_fail(o, k, err, BL_EINVAL, "must be a finite number");
		if (it->valuedouble < lo || it->valuedouble > hi)
			return json_fail(o, k, err, BL_EINVAL, "%g is out of range [%g, %g]",
					 it->valuedouble, lo, hi);
		out[i++] = it->valuedouble;
	}
	return 0;
}

static int load_wavelengths(json_obj *root, struct palette *p, bl_err *err)
{
	const cJSON *arr;
	size_t n;
	int rc = json_array(root, "wavelengths_nm", JSON_OPTIONAL, PALETTE_MAX_BANDS, &arr, &n, err);

	if (rc)
		return rc;
	if (n < 3)
		return json_fail(root, "wavelengths_nm", err, BL_EINVAL, "needs at least 3 bands");
	BL_TRY(load_bands(root, "wavelengths_nm", (int)n, 300.0, 1000.0, p->wavelengths_nm, err));
	for (size_t i = 1; i < n; i++)
		if (p->wavelengths_nm[i] <= p->wavelengths_nm[i - 1])
			return json_fail(root, "wavelengths_nm", err, BL_EINVAL,
					 "must increase strictly (%g follows %g)",
					 p->wavelengths_nm[i], p->wavelengths_nm[i - 1]);
	p->n_bands = (int)n;
	return 0;
}

static int load_lab(json_obj *o, const char *key, double lab[3], bl_err *err)
{
	BL_TRY(json_vec(o, key, JSON_REQUIRED, 3, -200.0, 200.0, lab, err));
	if (lab[0] < 0.0 || lab[0] > 100.0)
		return json_fail(o, key, err, BL_EINVAL, "L=%g is outside 0..100", lab[0]);
	return 0;
}

static int load_measured(json_obj *paint, struct palette_paint *pp, bl_err *err)
{
	const cJSON *arr, *it;
	json_obj o, t;
	size_t n, i = 0;
	int rc;

	BL_TRY(json_child(paint, "measured", JSON_REQUIRED, &o, err));
	BL_TRY(load_lab(&o, "masstone_lab", pp->masstone_lab, err));
	rc = json_array(&o, "tints", JSON_OPTIONAL, PALETTE_MAX_TINTS, &arr, &n, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		cJSON_ArrayForEach(it, arr) {
			struct palette_tint *pt = &pp->tints[i];

			BL_TRY(json_item_obj(&o, "tints", it, i, &t, err));
			BL_TRY(json_num(&t, "paint_fraction", JSON_REQUIRED, 0.0, 1.0,
				     &pt->paint_fraction, err));
			if (pt->paint_fraction <= 0.0 || pt->paint_fraction >= 1.0)
				return json_fail(&t, "paint_fraction", err, BL_EINVAL,
						 "%g must lie strictly between 0 and 1",
						 pt->paint_fraction);
			BL_TRY(load_lab(&t, "lab", pt->lab, err));
			BL_TRY(json_end(&t, err));
			i++;
		}
		pp->n_tints = (int)n;
	}
	pp->has_measured = 1;
	return json_end(&o, err);
}

static int load_spectral(json_obj *paint, const struct palette *p, struct palette_paint *pp,
			 bl_err *err)
{
	json_obj o;

	if (p->n_bands == 0)
		return json_fail(paint, "spectral", err, BL_EINVAL,
				 "spectral data needs wavelengths_nm at the top level");
	BL_TRY(json_child(paint, "spectral", JSON_REQUIRED, &o, err));
	/* K and S of real paints relative to white's S = 1 stay well below 1e4. */
	BL_TRY(load_bands(&o, "k", p->n_bands, 0.0, 1e4, pp->k, err));
	BL_TRY(load_bands(&o, "s", p->n_bands, 0.0, 1e4, pp->s, err));
	/* A paint needs some scattering or some absorption to have a colour at all. */
	for (int b = 0; b < p->n_bands; b++)
		if (pp->s[b] <= 0.0 && pp->k[b] <= 0.0)
			return json_fail(&o, "k", err, BL_EINVAL, "k and s are both 0 at %g nm",
					 p->wavelengths_nm[b]);
	pp->has_spectral = 1;
	return json_end(&o, err);
}

static int load_paint(json_obj *root, const cJSON *item, size_t i, struct palette *p,
		      bl_err *err)
{
	struct palette_paint *pp = &p->paints[i];
	int has_s, has_m;
	json_obj o;

	BL_TRY(json_item_obj(root, "paints", item, i, &o, err));
	BL_TRY(json_str(&o, "name", JSON_REQUIRED, pp->name, sizeof(pp->name), err));
	if (!pp->name[0])
		return json_fail(&o, "name", err, BL_EINVAL, "must not be empty");
	for (size_t j = 0; j < i; j++)
		if (strcmp(p->paints[j].name, pp->name) == 0)
			return json_fail(&o, "name", err, BL_EINVAL, "'%s' is used twice", pp->name);
	BL_TRY(json_str(&o, "pigment", JSON_OPTIONAL, pp->pigment, sizeof(pp->pigment), err));
	BL_TRY(json_str(&o, "well", JSON_REQUIRED, pp->well, sizeof(pp->well), err));
	has_s = cJSON_HasObjectItem(o.node, "spectral");
	has_m = cJSON_HasObjectItem(o.node, "measured");
	if (has_s && has_m)
		return json_fail(&o, NULL, err, BL_EINVAL,
				 "give \"spectral\" or \"measured\" optical data, not both");
	if (!has_s && !has_m)
		return json_fail(&o, NULL, err, BL_EINVAL,
				 "needs optical data: \"spectral\" (k, s) or \"measured\" (masstone_lab, tints)");
	if (has_s)
		BL_TRY(load_spectral(&o, p, pp, err));
	else
		BL_TRY(load_measured(&o, pp, err));
	return json_end(&o, err);
}

static int load_root(json_obj *root, struct palette *p, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	int need_white = 0;

	BL_TRY(json_kind(root, "palette", 1, err));
	BL_TRY(json_str(root, "name", JSON_REQUIRED, p->name, sizeof(p->name), err));
	BL_TRY(json_str(root, "notice", JSON_OPTIONAL, p->notice, sizeof(p->notice), err));
	BL_TRY(json_str(root, "white", JSON_OPTIONAL, p->white, sizeof(p->white), err));
	BL_TRY(load_wavelengths(root, p, err));
	BL_TRY(json_array(root, "paints", JSON_REQUIRED, PALETTE_MAX_PAINTS, &arr, &n, err));
	if (n == 0)
		return json_fail(root, "paints", err, BL_EINVAL, "needs at least one paint");
	cJSON_ArrayForEach(it, arr) {
		BL_TRY(load_paint(root, it, i, p, err));
		if (p->paints[i].n_tints)
			need_white = 1;
		i++;
	}
	p->n_paints = (int)n;
	if (p->white[0] && palette_find(p, p->white) < 0)
		return json_fail(root, "white", err, BL_EINVAL, "'%s' is not one of the paints",
				 p->white);
	if (need_white && !p->white[0])
		return json_fail(root, "white", err, BL_EINVAL,
				 "missing: tints are mixed with a white, name it here");
	if (p->n_bands && !need_white) {
		int any = 0;

		for (int k = 0; k < p->n_paints; k++)
			any |= p->paints[k].has_spectral;
		if (!any)
			return json_fail(root, "wavelengths_nm", err, BL_EINVAL,
					 "no paint has spectral data; remove this key");
	}
	return json_end(root, err);
}

int palette_load(const char *path, struct palette *p, bl_err *err)
{
	cJSON *doc;
	json_obj root;
	int rc;

	memset(p, 0, sizeof(*p));
	if (strlen(path) >= sizeof(p->file))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	snprintf(p->file, sizeof(p->file), "%s", path);
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = json_obj_open(doc, p->file, "", &root, err);
	if (rc == 0)
		rc = load_root(&root, p, err);
	cJSON_Delete(doc);
	return rc;
}

int palette_find(const struct palette *p, const char *name)
{
	for (int i = 0; i < p->n_paints; i++)
		if (strcmp(p->paints[i].name, name) == 0)
			return i;
	return -1;
}

int palette_check_machine(const struct palette *p, const struct machine *m, bl_err *err)
{
	for (int i = 0; i < p->n_paints; i++) {
		const struct palette_paint *pp = &p->paints[i];

		if (!machine_find_well(m, pp->well))
			return bl_fail(err, BL_EINVAL,
				       "%s: paints[%d].well: '%s' is not a well of machine %s", p->file,
				       i, pp->well, m->file);
		for (int j = 0; j < i; j++)
			if (strcmp(p->paints[j].well, pp->well) == 0)
				return bl_fail(err, BL_EINVAL,
					       "%s: paints[%d].well: well '%s' already holds '%s'",
					       p->file, i, pp->well, p->paints[j].name);
	}
	return 0;
}

char *palette_summary(const struct palette *p)
{
	strbuf sb;

	sb_init(&sb);
	sb_printf(&sb, "palette '%s' (%s): %d paints", p->name, p->file, p->n_paints);
	if (p->n_bands)
		sb_printf(&sb, ", %d bands %g..%g nm", p->n_bands, p->wavelengths_nm[0],
			  p->wavelengths_nm[p->n_bands - 1]);
	sb_printf(&sb, "\n");
	for (int i = 0; i < p->n_paints; i++) {
		const struct palette_paint *pp = &p->paints[i];

		sb_printf(&sb, "  %-20s %-10s well %-8s %s\n", pp->name,
			  pp->pigment[0] ? pp->pigment : "-", pp->well,
			  pp->has_spectral ? "spectral K,S" : "measured colours");
	}
	return sb_take(&sb);
}
