/* light.c: light maps (read, written, interpolated), the lamp followed on the bare board, both divided out of frames in linear light. */
#include "vision/light.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "vision/measure.h"
#include "vision/station.h"

void vis_light_free(struct vis_light *l)
{
	free(l->gain);
	free(l->inv_gain);
	l->gain = NULL;
	l->inv_gain = NULL;
}

static const json_migrate_fn light_steps[] = { prov_migrate_add };
const struct json_format vis_light_format = { "light-map", 2, 1, light_steps };

static cJSON *light_json(const struct vis_light *l, cJSON *settings, cJSON *figures)
{
	cJSON *o = cJSON_CreateObject(), *g;

	if (!o) {
		cJSON_Delete(settings);
		cJSON_Delete(figures);
		return NULL;
	}
	cJSON_AddStringToObject(o, "kind", "light-map");
	cJSON_AddNumberToObject(o, "version", vis_light_format.version);
	cJSON_AddItemToObject(o, "session", prov_json(&l->prov, settings, figures));
	cJSON_AddNumberToObject(o, "width", l->width);
	cJSON_AddNumberToObject(o, "height", l->height);
	cJSON_AddNumberToObject(o, "cols", l->cols);
	cJSON_AddNumberToObject(o, "rows", l->rows);
	g = cJSON_AddArrayToObject(o, "gain");
	for (int i = 0; g && i < l->cols * l->rows; i++)
		cJSON_AddItemToArray(g, cJSON_CreateNumber(round(1e4 * l->gain[i]) / 1e4));
	return o;
}

int vis_light_save(const char *path, const struct vis_light *l, cJSON *settings, cJSON *figures,
		   bl_err *err)
{
	cJSON *o = light_json(l, settings, figures);
	int rc;

	if (!o)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = json_write_file(path, o, err);
	cJSON_Delete(o);
	return rc;
}

static int light_divisors(struct vis_light *l, bl_err *err);

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
	if ((rc = json_format_open(root, path, &vis_light_format, NULL, &o, err)) < 0 ||
	    (rc = prov_read(&o, &l->prov, err)) < 0 ||
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
	/* vis_light_apply divides by the gain where it is known: known nowhere is no map. */
	while (i > 0 && l->gain[i - 1] == 0.0f)
		i--;
	if (i == 0) {
		rc = json_fail(&o, "gain", err, BL_EINVAL, "every value is 0: the map knows the light "
			       "nowhere (make it again with `brushloop calib camera --light-map`)");
		goto out;
	}
	rc = json_end(&o, err);
	if (rc >= 0 && (long)l->width * l->height <= VIS_LIGHT_DIVISORS_MAX_PX)
		rc = light_divisors(l, err);
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

/*
 * The map's gain along row y, for every x: the same bilinear weights as
 * vis_light_at, gathered a row at a time (the two grid rows first, then
 * across), so a frame costs a few operations a pixel, not four clamped
 * lookups. s and w are scratch of l->cols each.
 */
static void light_row(const struct vis_light *l, int y, int width, float *s, float *w, float *out)
{
	double gy = (y + 0.5) * l->rows / l->height - 0.5, fy;
	int r0 = (int)floor(gy), ra, rb;

	fy = gy - r0;
	ra = r0 < 0 ? 0 : r0 >= l->rows ? l->rows - 1 : r0;
	rb = r0 + 1 < 0 ? 0 : r0 + 1 >= l->rows ? l->rows - 1 : r0 + 1;
	for (int c = 0; c < l->cols; c++) {
		float ga = l->gain[ra * l->cols + c], gb = l->gain[rb * l->cols + c];
		double sum = 0.0, wsum = 0.0;

		/* A cell the map does not know (0) weighs nothing, as in vis_light_at. */
		if (ga > 0.0f && fy < 1.0) {
			sum += (1.0 - fy) * ga;
			wsum += 1.0 - fy;
		}
		if (gb > 0.0f && fy > 0.0) {
			sum += fy * gb;
			wsum += fy;
		}
		s[c] = (float)sum;
		w[c] = (float)wsum;
	}
	for (int x = 0; x < width; x++) {
		double gx = (x + 0.5) * l->cols / l->width - 0.5, fx;
		int c0 = (int)floor(gx), ca, cb;
		double sum, wsum;

		fx = gx - c0;
		ca = c0 < 0 ? 0 : c0 >= l->cols ? l->cols - 1 : c0;
		cb = c0 + 1 < 0 ? 0 : c0 + 1 >= l->cols ? l->cols - 1 : c0 + 1;
		sum = (1.0 - fx) * s[ca] + fx * s[cb];
		wsum = (1.0 - fx) * w[ca] + fx * w[cb];
		out[x] = wsum > 0.0 ? (float)(sum / wsum) : 0.0f;
	}
}

/* 1 / the gain at every pixel, 0 where the map knows nothing: what vis_light_apply divides by. */
static int light_divisors(struct vis_light *l, bl_err *err)
{
	float *s = malloc(((size_t)l->width + 2 * (size_t)l->cols) * sizeof(float));

	l->inv_gain = malloc((size_t)l->width * l->height * sizeof(float));
	if (!s || !l->inv_gain) {
		free(s);
		return bl_fail(err, BL_ENOMEM, "%s: out of memory for the light's divisors", l->file);
	}
	for (int y = 0; y < l->height; y++) {
		float *inv = l->inv_gain + (size_t)y * l->width;

		light_row(l, y, l->width, s + l->width, s + l->width + l->cols, s);
		for (int x = 0; x < l->width; x++)
			inv[x] = s[x] > 0.0f ? 1.0f / s[x] : 0.0f;
	}
	free(s);
	return 0;
}

int vis_light_apply(const struct vis_light *l, const double lamp[3], struct img *im, bl_err *err)
{
	enum { ENC = 4096 };
	static const double unchanged[3] = { 1.0, 1.0, 1.0 };
	float dec[256], inv_lamp[3], *row_gain, *scratch;
	unsigned char *enc;
	int rc = 0;

	if (l && (im->w != l->width || im->h != l->height))
		return bl_fail(err, BL_EINVAL, "%s: a light map for %dx%d frames, but this frame is %dx%d",
			       l->file, l->width, l->height, im->w, im->h);
	if (!lamp)
		lamp = unchanged;
	for (int k = 0; k < 3; k++)
		if (!(lamp[k] > 0.0) || !isfinite(lamp[k]))
			return bl_fail(err, BL_EINVAL, "the lamp's ratio %g is not a light", lamp[k]);
	if (!l && lamp == unchanged)
		return 0;
	enc = malloc(ENC + 1);
	row_gain = malloc(((size_t)im->w + 2 * (l ? (size_t)l->cols : 0)) * sizeof(float));
	if (!enc || !row_gain) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	scratch = row_gain + im->w;
	for (int i = 0; i < 256; i++)
		dec[i] = (float)meas_srgb_to_linear(i / 255.0);
	for (int i = 0; i <= ENC; i++)
		enc[i] = (unsigned char)lround(255.0 * meas_linear_to_srgb((double)i / ENC));
	for (int k = 0; k < 3; k++)
		inv_lamp[k] = (float)(1.0 / lamp[k]);
	for (int x = 0; x < im->w && !(l && l->inv_gain); x++)
		row_gain[x] = 1.0f;
	for (int y = 0; y < im->h; y++) {
		unsigned char *row = im->px + (size_t)y * im->w * 3;
		const float *inv = row_gain;

		/* The divisors as loaded, or this row's worked out as light_divisors does. */
		if (l && l->inv_gain) {
			inv = l->inv_gain + (size_t)y * im->w;
		} else if (l) {
			light_row(l, y, im->w, scratch, scratch + l->cols, row_gain);
			for (int x = 0; x < im->w; x++)
				row_gain[x] = row_gain[x] > 0.0f ? 1.0f / row_gain[x] : 0.0f;
		}
		for (int x = 0; x < im->w; x++) {
			float ig = inv[x];

			if (ig <= 0.0f)
				continue;
			for (int k = 0; k < 3; k++) {
				/* v >= 0, so adding a half and truncating rounds it as lround did. */
				float v = dec[row[3 * x + k]] * ig * inv_lamp[k];

				row[3 * x + k] = v >= 1.0f ? 255 : enc[(int)(v * ENC + 0.5f)];
			}
		}
	}
out_free:
	free(row_gain);
	free(enc);
	return rc;
}

/* ---- the lamp ---- */

#define LAMP_GRID_MM 20.0   /* board points every 20 mm of the table */
#define LAMP_MARGIN_MM 12.0 /* kept off anything the machine file places */
#define LAMP_HALF_PX 2      /* a point is read as the mean of a 5 x 5 px box */
#define LAMP_MIN_POINTS 12

/*
 * Mean linear R, G, B of the box about (u, v) px; 0 when it leaves the frame
 * or is clipped or black. A mean, not a median: 8-bit codes would quantise a
 * median to steps coarser than the lamp's drift over an hour.
 */
static int box_rgb(const struct img *im, double u, double v, float out[3])
{
	int cx = (int)lround(u), cy = (int)lround(v), k = 0;
	double sum[3] = { 0, 0, 0 };

	if (cx - LAMP_HALF_PX < 0 || cy - LAMP_HALF_PX < 0 || cx + LAMP_HALF_PX >= im->w ||
	    cy + LAMP_HALF_PX >= im->h)
		return 0;
	for (int y = cy - LAMP_HALF_PX; y <= cy + LAMP_HALF_PX; y++)
		for (int x = cx - LAMP_HALF_PX; x <= cx + LAMP_HALF_PX; x++) {
			const unsigned char *p = im->px + 3 * ((size_t)y * im->w + x);

			for (int c = 0; c < 3; c++) {
				if (p[c] >= 254 || p[c] <= 2)
					return 0;
				sum[c] += meas_srgb_to_linear(p[c] / 255.0);
			}
			k++;
		}
	for (int c = 0; c < 3; c++)
		out[c] = (float)(sum[c] / k);
	return 1;
}

static int near_station(const struct machine_station *st, double x, double y)
{
	return st->radius_mm > 0.0 &&
	       hypot(x - st->center_mm[0], y - st->center_mm[1]) < st->radius_mm + LAMP_MARGIN_MM;
}

/* Whether table point (x, y) mm is bare board: nothing the machine file places lies there. */
static int bare_board(const struct machine *m, const struct vis_markers *mk, double x, double y)
{
	const double *s = m->canvas.size_mm;
	double reach = vis_marker_reach_mm(mk) + LAMP_MARGIN_MM;
	struct canvas_pt p = xform_to_canvas(&m->xf, (struct machine_pt){ x, y });

	if (p.x > -LAMP_MARGIN_MM && p.x < s[0] + LAMP_MARGIN_MM && p.y > -LAMP_MARGIN_MM &&
	    p.y < s[1] + LAMP_MARGIN_MM)
		return 0;
	for (int k = 0; k < 4; k++) {
		double c[2];

		vis_marker_centre(mk, k, c);
		if (fabs(p.x - c[0]) < reach && fabs(p.y - c[1]) < reach)
			return 0;
	}
	for (int i = 0; i < m->n_wells; i++)
		if (near_station(&m->wells[i], x, y))
			return 0;
	for (int i = 0; i < m->n_cells; i++)
		if (near_station(&m->cells[i], x, y))
			return 0;
	if (near_station(&m->water, x, y) || near_station(&m->wipe, x, y))
		return 0;
	for (int i = 0; i < m->n_keep_out; i++) {
		const struct machine_box *b = &m->keep_out[i];

		if (x > b->min_mm[0] - LAMP_MARGIN_MM && x < b->max_mm[0] + LAMP_MARGIN_MM &&
		    y > b->min_mm[1] - LAMP_MARGIN_MM && y < b->max_mm[1] + LAMP_MARGIN_MM)
			return 0;
	}
	return 1;
}

int vis_lamp_reference(struct vis_lamp *lp, const struct img *frame, const char *name,
		       const struct vis_geometry *g, const struct machine *m, bl_err *err)
{
	struct vis_markers mk;
	int nx, ny, seen = 0, stride = 1, rc;

	memset(lp, 0, sizeof(*lp));
	lp->width = frame->w;
	lp->height = frame->h;
	vis_markers_from_machine(m, &mk);
	/* Over the table, farther than the arm reaches too: the camera sees the board beyond it. */
	nx = (int)floor((m->work_max_mm[0] - m->work_min_mm[0]) / LAMP_GRID_MM) + 4;
	ny = (int)floor((m->work_max_mm[1] - m->work_min_mm[1]) / LAMP_GRID_MM) + 4;
	/* Twice over the grid: count the board points seen, then keep every stride-th, spread over all of it. */
	for (int pass = 0; pass < 2; pass++) {
		int k = 0;

		for (int j = 0; j < ny; j++)
			for (int i = 0; i < nx; i++) {
				double xy[2] = { m->work_min_mm[0] + (i - 1.5) * LAMP_GRID_MM,
						 m->work_min_mm[1] + (j - 1.5) * LAMP_GRID_MM };
				double px[2];
				float rgb[3];

				if (!bare_board(m, &mk, xy[0], xy[1]))
					continue;
				if ((rc = vis_table_to_px(g, m, xy, px, 1, err)))
					return rc;
				if (!box_rgb(frame, px[0], px[1], rgb) || k++ % stride ||
				    !pass || lp->n == VIS_LAMP_MAX_POINTS)
					continue;
				lp->px[lp->n][0] = (float)px[0];
				lp->px[lp->n][1] = (float)px[1];
				memcpy(lp->ref[lp->n], rgb, sizeof(rgb));
				lp->n++;
			}
		seen = k;
		stride = (seen + VIS_LAMP_MAX_POINTS - 1) / VIS_LAMP_MAX_POINTS;
		stride = stride < 1 ? 1 : stride;
	}
	if (lp->n < LAMP_MIN_POINTS)
		return bl_fail(err, BL_EINVAL, "%s: only %d points of bare board seen (%d needed to follow "
			       "the lamp)", name, lp->n, LAMP_MIN_POINTS);
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

int vis_lamp_ratio(const struct vis_lamp *lp, const struct img *frame, const char *name,
		   double ratio[3], bl_err *err)
{
	double q[3][VIS_LAMP_MAX_POINTS];
	int n = 0;

	if (frame->w != lp->width || frame->h != lp->height)
		return bl_fail(err, BL_EINVAL, "%s: the lamp was followed in %dx%d frames, but this one is "
			       "%dx%d", name, lp->width, lp->height, frame->w, frame->h);
	for (int i = 0; i < lp->n; i++) {
		float rgb[3];

		if (!box_rgb(frame, lp->px[i][0], lp->px[i][1], rgb))
			continue;
		for (int c = 0; c < 3; c++)
			q[c][n] = rgb[c] / lp->ref[i][c];
		n++;
	}
	if (n < LAMP_MIN_POINTS || 2 * n < lp->n)
		return bl_fail(err, BL_EIO, "%s: only %d of the %d board points that follow the lamp can "
			       "be read", name, n, lp->n);
	for (int c = 0; c < 3; c++) {
		qsort(q[c], (size_t)n, sizeof(double), cmp_double);
		ratio[c] = n % 2 ? q[c][n / 2] : 0.5 * (q[c][n / 2 - 1] + q[c][n / 2]);
	}
	return 0;
}

cJSON *vis_lamp_json(const struct vis_lamp *lp)
{
	cJSON *o = cJSON_CreateObject(), *pts;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "lamp");
	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddNumberToObject(o, "width", lp->width);
	cJSON_AddNumberToObject(o, "height", lp->height);
	pts = cJSON_AddArrayToObject(o, "points");
	for (int i = 0; pts && i < lp->n; i++) {
		/* x, y px and linear R, G, B; seven decimals keep a dark board's ratio to 1e-4. */
		double v[5] = { lp->px[i][0], lp->px[i][1], lp->ref[i][0], lp->ref[i][1], lp->ref[i][2] };
		cJSON *a = cJSON_CreateArray();

		for (int k = 0; a && k < 5; k++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(round(v[k] * 1e7) / 1e7));
		cJSON_AddItemToArray(pts, a);
	}
	return o;
}

int vis_lamp_from_json(const cJSON *root, const char *name, struct vis_lamp *lp, bl_err *err)
{
	json_obj o;
	const cJSON *arr, *it;
	size_t n, i = 0;
	int rc;

	memset(lp, 0, sizeof(*lp));
	if ((rc = json_obj_open(root, name, "", &o, err)) < 0 ||
	    (rc = json_kind(&o, "lamp", 1, err)) < 0 ||
	    (rc = json_i32(&o, "width", JSON_REQUIRED, 1, 65536, &lp->width, err)) < 0 ||
	    (rc = json_i32(&o, "height", JSON_REQUIRED, 1, 65536, &lp->height, err)) < 0 ||
	    (rc = json_array(&o, "points", JSON_REQUIRED, VIS_LAMP_MAX_POINTS, &arr, &n, err)) < 0)
		return rc;
	if (n < LAMP_MIN_POINTS)
		return json_fail(&o, "points", err, BL_EINVAL, "%zu points, at least %d needed", n,
				 LAMP_MIN_POINTS);
	cJSON_ArrayForEach(it, arr) {
		double v[5];
		int k = 0;
		const cJSON *x;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 5)
			return json_fail(&o, "points", err, BL_EINVAL, "item %zu is not [x, y, R, G, B]", i);
		cJSON_ArrayForEach(x, it) {
			if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble))
				return json_fail(&o, "points", err, BL_EINVAL, "item %zu has a value that is "
						 "not a finite number", i);
			v[k++] = x->valuedouble;
		}
		if (v[0] < 0 || v[0] >= lp->width || v[1] < 0 || v[1] >= lp->height)
			return json_fail(&o, "points", err, BL_EINVAL, "item %zu lies outside the %dx%d "
					 "frame", i, lp->width, lp->height);
		for (k = 2; k < 5; k++)
			if (!(v[k] > 0.0 && v[k] <= 1.0))
				return json_fail(&o, "points", err, BL_EINVAL, "item %zu: a linear value %g "
						 "outside (0, 1]", i, v[k]);
		lp->px[i][0] = (float)v[0];
		lp->px[i][1] = (float)v[1];
		for (k = 0; k < 3; k++)
			lp->ref[i][k] = (float)v[2 + k];
		i++;
	}
	lp->n = (int)n;
	return json_end(&o, err);
}
