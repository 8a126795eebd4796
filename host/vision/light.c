/* light.c: light maps: read, written, interpolated and divided out of frames in linear light. */
#include "vision/light.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "vision/measure.h"

void vis_light_free(struct vis_light *l)
{
	free(l->gain);
	l->gain = NULL;
}

cJSON *vis_light_json(const struct vis_light *l)
{
	cJSON *o = cJSON_CreateObject(), *g;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "light-map");
	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddNumberToObject(o, "width", l->width);
	cJSON_AddNumberToObject(o, "height", l->height);
	cJSON_AddNumberToObject(o, "cols", l->cols);
	cJSON_AddNumberToObject(o, "rows", l->rows);
	g = cJSON_AddArrayToObject(o, "gain");
	for (int i = 0; g && i < l->cols * l->rows; i++)
		cJSON_AddItemToArray(g, cJSON_CreateNumber(round(1e4 * l->gain[i]) / 1e4));
	return o;
}

int vis_light_save(const char *path, const struct vis_light *l, bl_err *err)
{
	cJSON *o = vis_light_json(l);
	int rc;

	if (!o)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = json_write_file(path, o, err);
	cJSON_Delete(o);
	return rc;
}

int vis_light_load(const char *path, struct vis_light *l, bl_err *err)
{
	cJSON *root;
	json_obj o;
	const cJSON *arr, *it;
	size_t n, i = 0;
	int rc;

	memset(l, 0, sizeof(*l));
	snprintf(l->file, sizeof(l->file), "%s", path);
	if ((rc = json_parse_file(path, &root, err)))
		return rc;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0 ||
	    (rc = json_kind(&o, "light-map", 1, err)) < 0 ||
	    (rc = json_i32(&o, "width", JSON_REQUIRED, 1, 65536, &l->width, err)) < 0 ||
	    (rc = json_i32(&o, "height", JSON_REQUIRED, 1, 65536, &l->height, err)) < 0 ||
	    (rc = json_i32(&o, "cols", JSON_REQUIRED, 1, 1024, &l->cols, err)) < 0 ||
	    (rc = json_i32(&o, "rows", JSON_REQUIRED, 1, 1024, &l->rows, err)) < 0 ||
	    (rc = json_array(&o, "gain", JSON_REQUIRED, 1024 * 1024, &arr, &n, err)) < 0)
		goto out;
	if (n != (size_t)l->cols * l->rows) {
		rc = json_fail(&o, "gain", err, BL_EINVAL, "%zu values for a %d x %d grid", n, l->cols,
			       l->rows);
		goto out;
	}
	l->gain = calloc(n, sizeof(*l->gain));
	if (!l->gain) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(it, arr) {
		/* 0: unknown there; a known gain is a light between a tenth and ten times the chart's. */
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
		    (it->valuedouble != 0.0 && (it->valuedouble < 0.1 || it->valuedouble > 10.0))) {
			rc = json_fail(&o, "gain", err, BL_EINVAL,
				       "item %zu is not 0 or a gain in 0.1..10", i);
			goto out;
		}
		l->gain[i++] = (float)it->valuedouble;
	}
	rc = json_end(&o, err);
out:
	cJSON_Delete(root);
	if (rc < 0)
		vis_light_free(l);
	return rc < 0 ? rc : 0;
}

double vis_light_at(const struct vis_light *l, double x, double y)
{
	/* Cell centres at ((c + 0.5) * width / cols, ...); pixel centres at integers (vision's convention). */
	double gx = (x + 0.5) * l->cols / l->width - 0.5, gy = (y + 0.5) * l->rows / l->height - 0.5;
	int c0 = (int)floor(gx), r0 = (int)floor(gy);
	double fx = gx - c0, fy = gy - r0, sum = 0.0, wsum = 0.0;

	for (int dr = 0; dr < 2; dr++)
		for (int dc = 0; dc < 2; dc++) {
			int c = c0 + dc, r = r0 + dr;
			double w = (dc ? fx : 1.0 - fx) * (dr ? fy : 1.0 - fy);
			float g;

			c = c < 0 ? 0 : c >= l->cols ? l->cols - 1 : c;
			r = r < 0 ? 0 : r >= l->rows ? l->rows - 1 : r;
			g = l->gain[r * l->cols + c];
			if (g > 0.0f && w > 0.0) {
				sum += w * g;
				wsum += w;
			}
		}
	return wsum > 0.0 ? sum / wsum : 0.0;
}

int vis_light_apply(const struct vis_light *l, struct img *im, bl_err *err)
{
	enum { ENC = 4096 };
	float dec[256];
	unsigned char *enc = malloc(ENC + 1);

	if (im->w != l->width || im->h != l->height) {
		free(enc);
		return bl_fail(err, BL_EINVAL, "%s: a light map for %dx%d frames, but this frame is %dx%d",
			       l->file, l->width, l->height, im->w, im->h);
	}
	if (!enc)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 0; i < 256; i++)
		dec[i] = (float)meas_srgb_to_linear(i / 255.0);
	for (int i = 0; i <= ENC; i++)
		enc[i] = (unsigned char)lround(255.0 * meas_linear_to_srgb((double)i / ENC));
	for (int y = 0; y < im->h; y++) {
		unsigned char *row = im->px + (size_t)y * im->w * 3;

		for (int x = 0; x < im->w; x++) {
			double g = vis_light_at(l, x, y);

			if (g <= 0.0)
				continue;
			for (int k = 0; k < 3; k++) {
				double v = dec[row[3 * x + k]] / g;

				row[3 * x + k] = v >= 1.0 ? 255 : enc[(int)lround(v * ENC)];
			}
		}
	}
	free(enc);
	return 0;
}
