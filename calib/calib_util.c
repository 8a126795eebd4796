/* calib_util.c: small helpers the calibration sessions share: Lab from XYZ as LittleCMS computes it, CIEDE2000, summaries, time stamps, a line fitted to points and where two meet. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "calib/calib.h"
#include "color/color.h"

/* LittleCMS's D50 (cmsD50_XYZ): the white the profile's PCS and brushloop's Lab share. */
static const double d50[3] = { 0.9642, 1.0, 0.8249 };

static double lab_f(double t)
{
	const double e = 216.0 / 24389.0, k = 24389.0 / 27.0;

	return t > e ? cbrt(t) : (k * t + 16.0) / 116.0;
}

void calib_xyz_to_lab(const double xyz[3], double lab[3])
{
	double fx = lab_f(xyz[0] / d50[0]), fy = lab_f(xyz[1] / d50[1]),
	       fz = lab_f(xyz[2] / d50[2]);

	lab[0] = 116.0 * fy - 16.0;
	lab[1] = 500.0 * (fx - fy);
	lab[2] = 200.0 * (fy - fz);
}

double calib_de00(const double a[3], const double b[3])
{
	color_lab x = { a[0], a[1], a[2] }, y = { b[0], b[1], b[2] };

	return color_de00(&x, &y);
}

void calib_figures_of(const double *de, const char (*names)[CALIB_NAME_MAX], int n,
		      struct calib_figures *f)
{
	double sum = 0.0;
	int worst = -1;

	memset(f, 0, sizeof(*f));
	f->n = 0;
	for (int i = 0; i < n; i++) {
		if (!(de[i] >= 0.0))
			continue;
		f->n++;
		sum += de[i];
		if (worst < 0 || de[i] > f->max_de00) {
			f->max_de00 = de[i];
			worst = i;
		}
	}
	f->mean_de00 = f->n ? sum / f->n : 0.0;
	if (worst >= 0 && names)
		snprintf(f->worst, sizeof(f->worst), "%s", names[worst]);
}

cJSON *calib_figures_json(const struct calib_figures *f)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddNumberToObject(j, "mean_de00", f->mean_de00);
	cJSON_AddNumberToObject(j, "max_de00", f->max_de00);
	cJSON_AddNumberToObject(j, "patches", f->n);
	if (f->worst[0])
		cJSON_AddStringToObject(j, "worst", f->worst);
	return j;
}

void calib_now_iso(char *out, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int calib_line_fit(const double (*p)[2], int n, double c[2], double d[2])
{
	double sxx = 0, syy = 0, sxy = 0, ang;

	if (n < 2)
		return 0;
	c[0] = c[1] = 0;
	for (int i = 0; i < n; i++) {
		c[0] += p[i][0] / n;
		c[1] += p[i][1] / n;
	}
	for (int i = 0; i < n; i++) {
		double x = p[i][0] - c[0], y = p[i][1] - c[1];

		sxx += x * x;
		syy += y * y;
		sxy += x * y;
	}
	ang = 0.5 * atan2(2 * sxy, sxx - syy);
	d[0] = cos(ang);
	d[1] = sin(ang);
	return 1;
}

int calib_lines_meet(const double c1[2], const double d1[2], const double c2[2], const double d2[2],
		     double out[2])
{
	double det = d1[0] * d2[1] - d1[1] * d2[0], t;

	if (fabs(det) < 1e-6)
		return 0;
	t = ((c2[0] - c1[0]) * d2[1] - (c2[1] - c1[1]) * d2[0]) / det;
	out[0] = c1[0] + t * d1[0];
	out[1] = c1[1] + t * d1[1];
	return 1;
}
