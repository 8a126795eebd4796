/* calib_arm.c: the canvas-to-arm registration: fitting a similarity or affine map to touched points, the arm calibration file and its strict loader. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"

#define MIN_SPREAD_MM 5.0 /* points closer than this to a line do not fix a plane map */
#define MAX_ABS_MM XFORM_MAX_ABS_MM

/* Solves the 3x3 normal equations a x = b in place (Gaussian elimination); 0 when singular. */
static int solve3(double a[3][3], double b[3])
{
	for (int p = 0; p < 3; p++) {
		int piv = p;

		for (int q = p + 1; q < 3; q++)
			if (fabs(a[q][p]) > fabs(a[piv][p]))
				piv = q;
		if (fabs(a[piv][p]) < 1e-12)
			return 0;
		for (int k = 0; k < 3; k++) {
			double t = a[p][k];

			a[p][k] = a[piv][k];
			a[piv][k] = t;
		}
		{
			double t = b[p];

			b[p] = b[piv];
			b[piv] = t;
		}
		for (int q = p + 1; q < 3; q++) {
			double f = a[q][p] / a[p][p];

			for (int k = p; k < 3; k++)
				a[q][k] -= f * a[p][k];
			b[q] -= f * b[p];
		}
	}
	for (int p = 2; p >= 0; p--) {
		double s = b[p];

		for (int k = p + 1; k < 3; k++)
			s -= a[p][k] * b[k];
		b[p] = s / a[p][p];
	}
	return 1;
}

/* Least squares of v ~ c0 + c1 x + c2 y over the points. */
static int plane_fit(int n, const double (*p)[2], const double *v, double c[3])
{
	double a[3][3] = { { 0 } };

	c[0] = c[1] = c[2] = 0;
	for (int i = 0; i < n; i++) {
		double t[3] = { 1, p[i][0], p[i][1] };

		for (int j = 0; j < 3; j++) {
			c[j] += t[j] * v[i];
			for (int k = 0; k < 3; k++)
				a[j][k] += t[j] * t[k];
		}
	}
	return solve3(a, c);
}

/* Best similarity (rotation, uniform scale, translation; mirrored when sign < 0) by linear least squares. */
static double similarity(int n, const double (*p)[2], const arm_point *q, int sign, double a[2][3])
{
	double mx = 0, my = 0, qx = 0, qy = 0, sxx = 0, num_re = 0, num_im = 0, ss = 0;

	for (int i = 0; i < n; i++) {
		mx += p[i][0] / n;
		my += p[i][1] / n;
		qx += q[i].x / n;
		qy += q[i].y / n;
	}
	for (int i = 0; i < n; i++) {
		double x = p[i][0] - mx, y = sign * (p[i][1] - my), u = q[i].x - qx, v = q[i].y - qy;

		/* (u + iv) ~ (re + i im)(x + iy) */
		sxx += x * x + y * y;
		num_re += u * x + v * y;
		num_im += v * x - u * y;
	}
	{
		double re = num_re / sxx, im = num_im / sxx;

		a[0][0] = re;
		a[0][1] = -im * sign;
		a[1][0] = im;
		a[1][1] = re * sign;
		a[0][2] = qx - a[0][0] * mx - a[0][1] * my;
		a[1][2] = qy - a[1][0] * mx - a[1][1] * my;
	}
	for (int i = 0; i < n; i++) {
		double ex = a[0][0] * p[i][0] + a[0][1] * p[i][1] + a[0][2] - q[i].x;
		double ey = a[1][0] * p[i][0] + a[1][1] * p[i][1] + a[1][2] - q[i].y;

		ss += ex * ex + ey * ey;
	}
	return ss;
}

int calib_arm_fit(int model, int n, const double (*canvas_mm)[2], const arm_point *arm_mm,
		  struct calib_arm *out, bl_err *err)
{
	double mx = 0, my = 0, cxx = 0, cyy = 0, cxy = 0, spread, ss = 0;
	double *v = NULL;

	memset(out, 0, sizeof(*out));
	if (model != CALIB_ARM_SIMILARITY && model != CALIB_ARM_AFFINE)
		return bl_fail(err, BL_EINVAL, "unknown arm model %d", model);
	if (n < 4)
		return bl_fail(err, BL_EINVAL, "%d point%s: the arm registration needs at least 4 "
			       "(3 fix the map, the rest check it)", n, n == 1 ? "" : "s");
	if (n > CALIB_ARM_MAX_POINTS)
		return bl_fail(err, BL_EINVAL, "%d points: at most %d", n, CALIB_ARM_MAX_POINTS);
	for (int i = 0; i < n; i++) {
		const double c[5] = { canvas_mm[i][0], canvas_mm[i][1], arm_mm[i].x, arm_mm[i].y,
				      arm_mm[i].z };

		for (int k = 0; k < 5; k++)
			if (!isfinite(c[k]) || fabs(c[k]) > MAX_ABS_MM)
				return bl_fail(err, BL_EINVAL, "point %d: %g is not a coordinate in mm",
					       i + 1, c[k]);
		mx += canvas_mm[i][0] / n;
		my += canvas_mm[i][1] / n;
	}
	{
		/* A place touched twice (the same canvas point or the same arm position) counts once. */
		int distinct = 0, dup = -1, of = -1;

		for (int i = 0; i < n; i++) {
			int seen = -1;

			for (int j = 0; j < i && seen < 0; j++)
				if (hypot(canvas_mm[i][0] - canvas_mm[j][0], canvas_mm[i][1] - canvas_mm[j][1]) < CALIB_ARM_SAME_MM ||
				    hypot(arm_mm[i].x - arm_mm[j].x, arm_mm[i].y - arm_mm[j].y) < CALIB_ARM_SAME_MM)
					seen = j;
			if (seen < 0)
				distinct++;
			else if (dup < 0) {
				dup = i;
				of = seen;
			}
		}
		if (distinct < 4)
			return bl_fail(err, BL_EINVAL, "%d points but %d distinct places (point %d repeats "
				       "point %d within %g mm): the arm registration needs at least 4 (3 fix "
				       "the map, the rest check it)", n, distinct, dup + 1, of + 1,
				       CALIB_ARM_SAME_MM);
	}
	for (int i = 0; i < n; i++) {
		double x = canvas_mm[i][0] - mx, y = canvas_mm[i][1] - my;

		cxx += x * x / n;
		cyy += y * y / n;
		cxy += x * y / n;
	}
	/* The smaller principal spread: how far the points stand off their best line. */
	spread = sqrt(fmax(0.0, 0.5 * (cxx + cyy) - sqrt(0.25 * (cxx - cyy) * (cxx - cyy) + cxy * cxy)));
	if (spread < MIN_SPREAD_MM)
		return bl_fail(err, BL_EINVAL, "the canvas points lie on a line (spread %.2f mm off "
			       "it): touch points spread over the canvas, not along one edge", spread);
	out->model = model;
	if (model == CALIB_ARM_SIMILARITY) {
		double a1[2][3], a2[2][3], s1 = similarity(n, canvas_mm, arm_mm, 1, a1),
					   s2 = similarity(n, canvas_mm, arm_mm, -1, a2);

		memcpy(out->a, s1 <= s2 ? a1 : a2, sizeof(out->a));
	} else {
		v = malloc(sizeof(double) * (size_t)n);
		if (!v)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		for (int r = 0; r < 2; r++) {
			double c[3];

			for (int i = 0; i < n; i++)
				v[i] = r == 0 ? arm_mm[i].x : arm_mm[i].y;
			if (!plane_fit(n, canvas_mm, v, c)) {
				free(v);
				return bl_fail(err, BL_EINVAL, "the canvas points do not fix an affine map");
			}
			out->a[r][0] = c[1];
			out->a[r][1] = c[2];
			out->a[r][2] = c[0];
		}
		free(v);
		v = NULL;
	}
	{
		double det = out->a[0][0] * out->a[1][1] - out->a[0][1] * out->a[1][0];
		double sx = hypot(out->a[0][0], out->a[1][0]), sy = hypot(out->a[0][1], out->a[1][1]);

		out->scale = sqrt(fabs(det));
		out->rotation_deg = atan2(out->a[1][0], out->a[0][0]) * 180.0 / M_PI;
		if (!(sx > 0.5 && sx < 2.0 && sy > 0.5 && sy < 2.0))
			return bl_fail(err, BL_EINVAL, "the fit scales the canvas by %.3f x %.3f: canvas "
				       "and arm points are not in the same units, or were paired wrongly",
				       sx, sy);
	}
	v = malloc(sizeof(double) * (size_t)n);
	if (!v)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		v[i] = arm_mm[i].z;
	if (!plane_fit(n, canvas_mm, v, out->z)) {
		free(v);
		return bl_fail(err, BL_EINVAL, "the canvas points do not fix the surface's plane");
	}
	out->n = n;
	for (int i = 0; i < n; i++) {
		arm_point p;
		double ez;

		memcpy(out->canvas_mm[i], canvas_mm[i], sizeof(out->canvas_mm[i]));
		out->arm_mm[i] = arm_mm[i];
		calib_arm_to_machine(out, canvas_mm[i][0], canvas_mm[i][1], 0.0, &p);
		out->residual_mm[i] = hypot(p.x - arm_mm[i].x, p.y - arm_mm[i].y);
		ss += out->residual_mm[i] * out->residual_mm[i];
		out->max_mm = fmax(out->max_mm, out->residual_mm[i]);
		ez = p.z - arm_mm[i].z;
		out->z_rms_mm += ez * ez / n;
	}
	free(v);
	out->rms_mm = sqrt(ss / n);
	out->z_rms_mm = sqrt(out->z_rms_mm);
	calib_now_iso(out->created, sizeof(out->created));
	return 0;
}

void calib_arm_to_machine(const struct calib_arm *c, double x_mm, double y_mm, double dz_mm,
			  arm_point *out)
{
	out->x = c->a[0][0] * x_mm + c->a[0][1] * y_mm + c->a[0][2];
	out->y = c->a[1][0] * x_mm + c->a[1][1] * y_mm + c->a[1][2];
	out->z = c->z[0] + c->z[1] * x_mm + c->z[2] * y_mm + dz_mm;
}

void calib_arm_to_canvas(const struct calib_arm *c, double mx_mm, double my_mm, double *x_mm,
			 double *y_mm)
{
	double det = c->a[0][0] * c->a[1][1] - c->a[0][1] * c->a[1][0];
	double u = mx_mm - c->a[0][2], v = my_mm - c->a[1][2];

	*x_mm = (c->a[1][1] * u - c->a[0][1] * v) / det;
	*y_mm = (-c->a[1][0] * u + c->a[0][0] * v) / det;
}

cJSON *calib_arm_json(const struct calib_arm *c)
{
	cJSON *j = cJSON_CreateObject(), *m, *arr;
	double det = c->a[0][0] * c->a[1][1] - c->a[0][1] * c->a[1][0];

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "kind", "arm-calibration");
	cJSON_AddNumberToObject(j, "version", xform_reg_format.version);
	cJSON_AddStringToObject(j, "created", c->created);
	cJSON_AddStringToObject(j, "model", calib_arm_model_names[c->model]);
	m = cJSON_AddArrayToObject(j, "canvas_to_machine");
	if (m) {
		cJSON_AddItemToArray(m, cJSON_CreateDoubleArray(c->a[0], 3));
		cJSON_AddItemToArray(m, cJSON_CreateDoubleArray(c->a[1], 3));
	}
	json_add_vec(j, "surface_z", c->z, 3);
	cJSON_AddNumberToObject(j, "scale", c->scale);
	cJSON_AddNumberToObject(j, "rotation_deg", c->rotation_deg);
	cJSON_AddBoolToObject(j, "mirrored", det < 0);
	cJSON_AddNumberToObject(j, "rms_mm", c->rms_mm);
	cJSON_AddNumberToObject(j, "max_mm", c->max_mm);
	cJSON_AddNumberToObject(j, "z_rms_mm", c->z_rms_mm);
	arr = cJSON_AddArrayToObject(j, "points");
	for (int i = 0; arr && i < c->n; i++) {
		cJSON *p = cJSON_CreateObject();
		const double a[3] = { c->arm_mm[i].x, c->arm_mm[i].y, c->arm_mm[i].z };

		if (!p)
			break;
		json_add_vec(p, "canvas_mm", c->canvas_mm[i], 2);
		json_add_vec(p, "arm_mm", a, 3);
		cJSON_AddNumberToObject(p, "residual_mm", c->residual_mm[i]);
		cJSON_AddItemToArray(arr, p);
	}
	return j;
}

int calib_arm_save(const char *path, const struct calib_arm *c, cJSON *settings, bl_err *err)
{
	cJSON *j = calib_arm_json(c), *fig = cJSON_CreateObject();
	int rc;

	if (!j || !fig) {
		cJSON_Delete(j);
		cJSON_Delete(fig);
		cJSON_Delete(settings);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	cJSON_AddNumberToObject(fig, "points", c->n);
	cJSON_AddNumberToObject(fig, "rms_mm", c->rms_mm);
	cJSON_AddNumberToObject(fig, "max_mm", c->max_mm);
	cJSON_AddItemToObject(j, "session", prov_json(&c->prov, settings, fig));
	rc = json_write_file(path, j, err);
	cJSON_Delete(j);
	return rc;
}

int calib_arm_load(const char *path, struct calib_arm *c, bl_err *err)
{
	/* The file has one reader, config's, which machine_load uses too: the fit keeps its arm_point view. */
	struct xform_reg *f = malloc(sizeof(*f));
	int rc;

	memset(c, 0, sizeof(*c));
	if (!f)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = xform_reg_load(path, f, err);
	if (rc == 0) {
		c->model = f->model;
		memcpy(c->a, f->a, sizeof(c->a));
		memcpy(c->z, f->z, sizeof(c->z));
		c->scale = f->scale;
		c->rotation_deg = f->rotation_deg;
		c->n = f->n;
		for (int i = 0; i < f->n; i++) {
			memcpy(c->canvas_mm[i], f->canvas_mm[i], sizeof(c->canvas_mm[i]));
			c->arm_mm[i] = (arm_point){ f->arm_mm[i][0], f->arm_mm[i][1], f->arm_mm[i][2] };
			c->residual_mm[i] = f->residual_mm[i];
		}
		c->rms_mm = f->rms_mm;
		c->max_mm = f->max_mm;
		c->prov = f->prov;
		c->z_rms_mm = f->z_rms_mm;
		memcpy(c->created, f->created, sizeof(c->created));
	}
	free(f);
	return rc;
}

int calib_arm_points_load(const char *path, int *n, double (*canvas_mm)[2], arm_point *arm_mm,
			  bl_err *err)
{
	cJSON *root;
	json_obj o, po;
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc;

	*n = 0;
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0 ||
	    (rc = json_kind(&o, "arm-points", 1, err)) < 0 ||
	    (rc = json_array(&o, "points", JSON_REQUIRED, CALIB_ARM_MAX_POINTS, &arr, &count, err)) < 0)
		goto out_free;
	cJSON_ArrayForEach(it, arr) {
		double a[3];

		if ((rc = json_item_obj(&o, "points", it, i, &po, err)) < 0 ||
		    (rc = json_vec(&po, "canvas_mm", JSON_REQUIRED, 2, -MAX_ABS_MM, MAX_ABS_MM,
				   canvas_mm[i], err)) < 0 ||
		    (rc = json_vec(&po, "arm_mm", JSON_REQUIRED, 3, -MAX_ABS_MM, MAX_ABS_MM, a, err)) < 0 ||
		    (rc = json_end(&po, err)) < 0)
			goto out_free;
		arm_mm[i] = (arm_point){ a[0], a[1], a[2] };
		i++;
	}
	if ((rc = json_end(&o, err)) < 0)
		goto out_free;
	*n = (int)count;
	rc = 0;
out_free:
	cJSON_Delete(root);
	return rc;
}

int calib_arm_default_targets(const struct machine *m, double (*canvas_mm)[2])
{
	const double W = m->canvas.size_mm[0], H = m->canvas.size_mm[1];
	const double in = fmin(20.0, 0.2 * fmin(W, H));
	const double pts[5][2] = { { in, in }, { W - in, in }, { W - in, H - in }, { in, H - in },
				   { 0.5 * W, 0.5 * H } };

	memcpy(canvas_mm, pts, sizeof(pts));
	return 5;
}
