/* calib_chart.c: colour charts: the built-in X-Rite ColorChecker 24 and chart files a user brings. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "color/cc24.h"

/*
 * X-Rite ColorChecker Classic, charts made from November 2014 on: the one
 * table of color/cc24.h, which the simulator's chart is fitted to too. The
 * same numbers are in calib/data/colorchecker24.json (a test keeps the two
 * equal).
 */
static const char *const cc24_source =
	"X-Rite ColorChecker Classic reference values for charts made from November 2014 on "
	"(X-Rite's published data file: CIELAB D50, CIE 1931 2-degree observer, i1Pro 2, M0)";

const char *const calib_chart_builtin_names[] = { "colorchecker24", NULL };

int calib_chart_builtin(const char *name, struct calib_chart *c, bl_err *err)
{
	if (strcmp(name, "colorchecker24") != 0)
		return bl_fail(err, BL_EINVAL, "no built-in chart '%s' (built in: colorchecker24; "
			       "or give a chart file)", name);
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "colorchecker24");
	snprintf(c->source, sizeof(c->source), "%s", cc24_source);
	c->cols = 6;
	c->rows = 4;
	c->n = COLOR_CC24_N;
	c->patch_fraction = 0.8;
	c->dark_frame = 1;
	for (int i = 0; i < COLOR_CC24_N; i++) {
		snprintf(c->patch[i], CALIB_NAME_MAX, "%s", color_cc24_names[i]);
		memcpy(c->lab[i], color_cc24_lab[i], sizeof(c->lab[i]));
	}
	return 0;
}

int calib_chart_load(const char *path, struct calib_chart *c, bl_err *err)
{
	cJSON *root;
	json_obj o, po;
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	c->patch_fraction = 0.8;
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0 ||
	    (rc = json_kind(&o, "chart", 1, err)) < 0 ||
	    (rc = json_str(&o, "name", JSON_REQUIRED, c->name, sizeof(c->name), err)) < 0 ||
	    (rc = json_str(&o, "source", JSON_REQUIRED, c->source, sizeof(c->source), err)) < 0 ||
	    (rc = json_i32(&o, "cols", JSON_REQUIRED, 2, 40, &c->cols, err)) < 0 ||
	    (rc = json_i32(&o, "rows", JSON_REQUIRED, 2, 40, &c->rows, err)) < 0 ||
	    (rc = json_num(&o, "patch_fraction", JSON_OPTIONAL, 0.3, 0.98, &c->patch_fraction,
			   err)) < 0 ||
	    (rc = json_bool(&o, "dark_frame", JSON_REQUIRED, &c->dark_frame, err)) < 0 ||
	    (rc = json_array(&o, "patches", JSON_REQUIRED, CALIB_MAX_PATCHES, &arr, &count, err)) < 0)
		goto out_free;
	c->n = c->cols * c->rows;
	if (c->n > CALIB_MAX_PATCHES) {
		rc = json_fail(&o, "rows", err, BL_EINVAL, "%d x %d patches: at most %d", c->cols,
			       c->rows, CALIB_MAX_PATCHES);
		goto out_free;
	}
	if ((int)count != c->n) {
		rc = json_fail(&o, "patches", err, BL_EINVAL, "%zu patches for a %d x %d grid (%d)",
			       count, c->cols, c->rows, c->n);
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		if ((rc = json_item_obj(&o, "patches", it, i, &po, err)) < 0 ||
		    (rc = json_str(&po, "name", JSON_REQUIRED, c->patch[i], CALIB_NAME_MAX, err)) < 0 ||
		    (rc = json_vec(&po, "lab", JSON_REQUIRED, 3, -200.0, 200.0, c->lab[i], err)) < 0 ||
		    (rc = json_end(&po, err)) < 0)
			goto out_free;
		if (c->lab[i][0] < 0.0 || c->lab[i][0] > 100.0) {
			rc = json_fail(&po, "lab", err, BL_EINVAL, "L %g is outside 0..100",
				       c->lab[i][0]);
			goto out_free;
		}
		if (!c->patch[i][0]) {
			rc = json_fail(&po, "name", err, BL_EINVAL, "empty");
			goto out_free;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(c->patch[k], c->patch[i]) == 0) {
				rc = json_fail(&po, "name", err, BL_EINVAL, "'%s' is named twice",
					       c->patch[i]);
				goto out_free;
			}
		i++;
	}
	rc = json_end(&o, err);
out_free:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

int calib_chart_open(const char *name_or_path, struct calib_chart *c, bl_err *err)
{
	FILE *f;
	int ch;

	for (int i = 0; calib_chart_builtin_names[i]; i++)
		if (strcmp(name_or_path, calib_chart_builtin_names[i]) == 0)
			return calib_chart_builtin(name_or_path, c, err);
	/* A JSON chart file starts with its object; ArgyllCMS's CGATS with a word (CTI3, IT8.7/2). */
	f = fopen(name_or_path, "rb");
	if (!f)
		return calib_chart_load(name_or_path, c, err); /* which names the file and why */
	while ((ch = fgetc(f)) != EOF && isspace(ch))
		;
	fclose(f);
	return ch == '{' ? calib_chart_load(name_or_path, c, err) : calib_chart_load_cgats(name_or_path, c, err);
}

cJSON *calib_chart_json(const struct calib_chart *c)
{
	cJSON *j = cJSON_CreateObject(), *arr;

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "kind", "chart");
	cJSON_AddNumberToObject(j, "version", 1);
	cJSON_AddStringToObject(j, "name", c->name);
	cJSON_AddStringToObject(j, "source", c->source);
	cJSON_AddNumberToObject(j, "cols", c->cols);
	cJSON_AddNumberToObject(j, "rows", c->rows);
	cJSON_AddNumberToObject(j, "patch_fraction", c->patch_fraction);
	cJSON_AddBoolToObject(j, "dark_frame", c->dark_frame);
	arr = cJSON_AddArrayToObject(j, "patches");
	for (int i = 0; arr && i < c->n; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p)
			break;
		cJSON_AddStringToObject(p, "name", c->patch[i]);
		json_add_vec(p, "lab", c->lab[i], 3);
		cJSON_AddItemToArray(arr, p);
	}
	return j;
}
