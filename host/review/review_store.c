/* review_store.c: what the reviewer keeps in a run directory (review/references.json, review/canvas.lab), written atomically and read back strictly. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "review/review.h"

/*
 * canvas.lab is the planner's observed.lab format (docs/planner.md): "LAB32
 * W H\n", then W x H x 3 float32 little-endian. references.json names the
 * canvas's size and where it was agreed on, so a canvas.lab that is not the
 * one written with it is refused.
 */

static int paths(const char *dir, char *refs, char *lab, size_t n, bl_err *err)
{
	char sub[4096];
	int rc;

	if ((rc = fs_join(sub, sizeof(sub), dir, "review", err)) ||
	    (rc = fs_join(refs, n, sub, "references.json", err)) || (rc = fs_join(lab, n, sub, "canvas.lab", err)))
		return rc;
	return 0;
}

static cJSON *patches_json(const struct review_patches *p)
{
	cJSON *o = cJSON_CreateObject();

	json_add_vec(o, "raw", p->raw, 3);
	json_add_vec(o, "lab", (double[]){ p->lab.L, p->lab.a, p->lab.b }, 3);
	cJSON_AddNumberToObject(o, "t_s", p->t_s);
	return o;
}

int review_save(const struct review *rv, const char *dir, bl_err *err)
{
	char refs[4096], lab[4096], sub[4096], head[64];
	cJSON *o = cJSON_CreateObject(), *a;
	int rc;

	if (!o)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = paths(dir, refs, lab, sizeof(refs), err)) || (rc = fs_join(sub, sizeof(sub), dir, "review", err)) ||
	    (rc = fs_mkdirs(sub, err)))
		goto out;
	cJSON_AddStringToObject(o, "kind", "review");
	cJSON_AddNumberToObject(o, "version", 1);
	if (rv->start.ok) {
		cJSON_AddItemToObject(o, "start", patches_json(&rv->start));
		cJSON_AddStringToObject(cJSON_GetObjectItem(o, "start"), "frame", rv->start_frame);
	}
	if (rv->agreed.ok) {
		cJSON_AddItemToObject(o, "agreed", patches_json(&rv->agreed));
		cJSON_AddStringToObject(cJSON_GetObjectItem(o, "agreed"), "frame", rv->agreed_frame);
	}
	a = cJSON_AddArrayToObject(o, "digests");
	for (int i = 0; i < rv->n_digests; i++) {
		cJSON *d = cJSON_CreateObject();
		char hex[24];

		snprintf(hex, sizeof(hex), "%016" PRIx64, rv->digest[i]);
		cJSON_AddStringToObject(d, "frame", rv->digest_frame[i]);
		cJSON_AddStringToObject(d, "fnv1a64", hex);
		cJSON_AddItemToArray(a, d);
	}
	if (rv->canvas) {
		cJSON *c = cJSON_AddObjectToObject(o, "canvas");
		int hn = snprintf(head, sizeof(head), "LAB32 %d %d\n", rv->canvas_w, rv->canvas_h);
		size_t bytes = (size_t)rv->canvas_w * rv->canvas_h * 3 * sizeof(float);
		char *buf = malloc((size_t)hn + bytes);

		cJSON_AddNumberToObject(c, "round", rv->canvas_round);
		cJSON_AddNumberToObject(c, "subtask", (double)rv->canvas_sub);
		cJSON_AddNumberToObject(c, "w", rv->canvas_w);
		cJSON_AddNumberToObject(c, "h", rv->canvas_h);
		if (!buf) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(buf, head, (size_t)hn);
		memcpy(buf + hn, rv->canvas, bytes); /* little-endian hosts, as the format is */
		rc = fs_write_atomic(lab, buf, (size_t)hn + bytes, err);
		free(buf);
		if (rc)
			goto out;
	}
	rc = json_write_file(refs, o, err);
out:
	cJSON_Delete(o);
	return rc;
}

static int load_canvas(struct review *rv, json_obj *c, const char *lab, bl_err *err)
{
	char *buf = NULL, head[64];
	size_t len, bytes;
	int w = 0, h = 0, round = -1, hn, rc;
	double sub = -1;

	BL_TRY(json_i32(c, "round", JSON_REQUIRED, -1, 1000, &round, err));
	BL_TRY(json_num(c, "subtask", JSON_REQUIRED, -1, 1e9, &sub, err));
	BL_TRY(json_i32(c, "w", JSON_REQUIRED, 1, 10000, &w, err));
	BL_TRY(json_i32(c, "h", JSON_REQUIRED, 1, 10000, &h, err));
	BL_TRY(json_end(c, err));
	bytes = (size_t)w * h * 3 * sizeof(float);
	hn = snprintf(head, sizeof(head), "LAB32 %d %d\n", w, h);
	if ((rc = fs_read_file(lab, bytes + 64, &buf, &len, err)))
		return rc;
	if (len != (size_t)hn + bytes || memcmp(buf, head, (size_t)hn) != 0) {
		free(buf);
		return bl_fail(err, BL_EINVAL, "%s: not the %d x %d canvas references.json names", lab, w, h);
	}
	rc = review_baseline(rv, (const float *)(buf + hn), w, h, round, (long)sub, err);
	free(buf);
	return rc;
}

/* Reference patches kept under key (absent: none kept); t_s absent in an older file is the run's start. */
static int load_patches(json_obj *o, const char *key, struct review_patches *p, char frame[REVIEW_NAME_MAX],
			bl_err *err)
{
	double lab3[3];
	json_obj c;
	int rc;

	if ((rc = json_child(o, key, JSON_OPTIONAL, &c, err)))
		return rc < 0 ? rc : 0;
	p->t_s = 0.0;
	if ((rc = json_vec(&c, "raw", JSON_REQUIRED, 3, 0.0, 1.0, p->raw, err)) ||
	    (rc = json_vec(&c, "lab", JSON_REQUIRED, 3, -200.0, 200.0, lab3, err)) ||
	    (rc = json_num(&c, "t_s", JSON_OPTIONAL, 0.0, 1e9, &p->t_s, err)) ||
	    (rc = json_str(&c, "frame", JSON_REQUIRED, frame, REVIEW_NAME_MAX, err)) || (rc = json_end(&c, err)))
		return rc;
	p->lab = (color_lab){ lab3[0], lab3[1], lab3[2] };
	p->ok = 1;
	return 0;
}

int review_load(struct review *rv, const char *dir, bl_err *err)
{
	char refs[4096], lab[4096];
	cJSON *root = NULL;
	const cJSON *arr;
	json_obj o, c;
	size_t n = 0;
	int rc;

	if ((rc = paths(dir, refs, lab, sizeof(refs), err)))
		return rc;
	if (access(refs, F_OK) != 0)
		return 0;
	if ((rc = json_parse_file(refs, &root, err)) || (rc = json_obj_open(root, refs, "", &o, err)) ||
	    (rc = json_kind(&o, "review", 1, err)))
		goto out;
	if ((rc = load_patches(&o, "start", &rv->start, rv->start_frame, err)) ||
	    (rc = load_patches(&o, "agreed", &rv->agreed, rv->agreed_frame, err)))
		goto out;
	if ((rc = json_array(&o, "digests", JSON_REQUIRED, REVIEW_DIGESTS, &arr, &n, err)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		char hex[24], *end;

		if ((rc = json_item_obj(&o, "digests", cJSON_GetArrayItem(arr, (int)i), i, &c, err)) ||
		    (rc = json_str(&c, "frame", JSON_REQUIRED, rv->digest_frame[i], sizeof(rv->digest_frame[i]), err)) ||
		    (rc = json_str(&c, "fnv1a64", JSON_REQUIRED, hex, sizeof(hex), err)))
			goto out;
		rv->digest[i] = strtoull(hex, &end, 16);
		if (strlen(hex) != 16 || *end) {
			rc = json_fail(&c, "fnv1a64", err, BL_EINVAL, "'%s' is not 16 hexadecimal digits", hex);
			goto out;
		}
		if ((rc = json_end(&c, err)))
			goto out;
	}
	rv->n_digests = (int)n;
	if ((rc = json_child(&o, "canvas", JSON_OPTIONAL, &c, err)) < 0)
		goto out;
	if (rc == 0 && (rc = load_canvas(rv, &c, lab, err)))
		goto out;
	rc = json_end(&o, err);
out:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}
