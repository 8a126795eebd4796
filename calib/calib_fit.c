/* calib_fit.c: camera models from code values to XYZ (tone curves with a matrix, an affine map or root-polynomial terms) and their least-squares fit in CIEDE2000's local metric. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "color/mix.h"

const char *const calib_model_names[] = { "matrix", "affine", "root-polynomial", NULL };

#define MAX_PARAMS 24
#define LOG_GAMMA_MAX 1.0 /* gamma within e^-1 .. e^1 */

static int n_terms(int kind)
{
	return kind == CALIB_MODEL_ROOTPOLY ? 6 : 3;
}

static int n_params(int kind)
{
	return 3 + 3 * n_terms(kind) + (kind == CALIB_MODEL_AFFINE ? 3 : 0);
}

double calib_tone(double gamma, double v)
{
	const double d = CALIB_TOE_V, g = 2.4 * gamma;

	if (v <= 0.0)
		return 0.0;
	if (v >= d)
		return pow((v + 0.055) / 1.055, g);
	/* The toe is linear (ICC parametric type 4), meeting the power at d. */
	return v * pow((d + 0.055) / 1.055, g) / d;
}

static void terms_of(int kind, const double gamma[3], const double v[3], double t[6])
{
	for (int c = 0; c < 3; c++)
		t[c] = calib_tone(gamma[c], v[c]);
	if (kind == CALIB_MODEL_ROOTPOLY) {
		t[3] = sqrt(t[0] * t[1]);
		t[4] = sqrt(t[1] * t[2]);
		t[5] = sqrt(t[0] * t[2]);
	}
}

void calib_model_xyz(const struct calib_cam_model *m, const double v[3], double xyz[3])
{
	double t[6];
	int k = n_terms(m->kind);

	terms_of(m->kind, m->gamma, v, t);
	for (int r = 0; r < 3; r++) {
		double s = m->kind == CALIB_MODEL_AFFINE ? m->offset[r] : 0.0;

		for (int j = 0; j < k; j++)
			s += m->m[r][j] * t[j];
		xyz[r] = s;
	}
}

void calib_model_lab(const struct calib_cam_model *m, const double v[3], double lab[3])
{
	double xyz[3];

	calib_model_xyz(m, v, xyz);
	calib_xyz_to_lab(xyz, lab);
}

static void unpack(int kind, const double *p, struct calib_cam_model *m)
{
	int k = n_terms(kind), i = 3;

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	for (int c = 0; c < 3; c++)
		m->gamma[c] = exp(fmax(-LOG_GAMMA_MAX, fmin(LOG_GAMMA_MAX, p[c])));
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < k; j++)
			m->m[r][j] = p[i++];
	if (kind == CALIB_MODEL_AFFINE)
		for (int r = 0; r < 3; r++)
			m->offset[r] = p[i++];
}

struct fit_ctx {
	int kind;
	int n;                     /* patches used */
	const double (*v)[3];
	const double (*lab)[3];
	const int *idx;
	double (*u)[3][3];         /* CIEDE2000 metric factor at each reference */
};

static void residuals(const struct fit_ctx *f, const double *p, double *r)
{
	struct calib_cam_model m;

	unpack(f->kind, p, &m);
	for (int i = 0; i < f->n; i++) {
		int k = f->idx[i];
		double lab[3], d[3];

		calib_model_lab(&m, f->v[k], lab);
		for (int c = 0; c < 3; c++)
			d[c] = lab[c] - f->lab[k][c];
		for (int a = 0; a < 3; a++)
			r[3 * i + a] = f->u[i][a][0] * d[0] + f->u[i][a][1] * d[1] +
				       f->u[i][a][2] * d[2];
	}
}

static double sumsq(const double *r, int m)
{
	double s = 0.0;

	for (int i = 0; i < m; i++)
		s += r[i] * r[i];
	return s;
}

/* Solves the symmetric positive definite system a x = b (n x n, row-major) by Cholesky; 0 when not positive definite. */
static int cholesky_solve(double *a, const double *b, double *x, int n)
{
	for (int j = 0; j < n; j++) {
		double s = a[j * n + j];

		for (int k = 0; k < j; k++)
			s -= a[j * n + k] * a[j * n + k];
		if (!(s > 0.0))
			return 0;
		a[j * n + j] = sqrt(s);
		for (int i = j + 1; i < n; i++) {
			double t = a[i * n + j];

			for (int k = 0; k < j; k++)
				t -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = t / a[j * n + j];
		}
	}
	for (int i = 0; i < n; i++) {
		double t = b[i];

		for (int k = 0; k < i; k++)
			t -= a[i * n + k] * x[k];
		x[i] = t / a[i * n + i];
	}
	for (int i = n - 1; i >= 0; i--) {
		double t = x[i];

		for (int k = i + 1; k < n; k++)
			t -= a[k * n + i] * x[k];
		x[i] = t / a[i * n + i];
	}
	return 1;
}

/* Linear least squares for the matrix at gamma 1, weighted to relative error: the starting point. */
static int initial_guess(const struct fit_ctx *f, double *p)
{
	int kind = f->kind, k = n_terms(kind) + (kind == CALIB_MODEL_AFFINE ? 1 : 0);
	double gamma[3] = { 1.0, 1.0, 1.0 };

	memset(p, 0, sizeof(double) * MAX_PARAMS);
	for (int r = 0; r < 3; r++) {
		double ata[7 * 7] = { 0 }, atb[7] = { 0 }, x[7];

		for (int i = 0; i < f->n; i++) {
			int q = f->idx[i];
			double t[7], xyz[3], lab[3], w;
			color_lab cl;
			color_xyz cx;

			terms_of(kind, gamma, f->v[q], t);
			if (kind == CALIB_MODEL_AFFINE)
				t[3] = 1.0;
			memcpy(lab, f->lab[q], sizeof(lab));
			cl = (color_lab){ lab[0], lab[1], lab[2] };
			color_lab_to_xyz(&cl, &cx);
			xyz[0] = cx.X / 100.0;
			xyz[1] = cx.Y / 100.0;
			xyz[2] = cx.Z / 100.0;
			w = 1.0 / (xyz[1] + 0.02);
			w *= w;
			for (int a = 0; a < k; a++) {
				atb[a] += w * t[a] * xyz[r];
				for (int b = 0; b < k; b++)
					ata[a * k + b] += w * t[a] * t[b];
			}
		}
		for (int a = 0; a < k; a++)
			ata[a * k + a] += 1e-9 * (1.0 + ata[a * k + a]);
		if (!cholesky_solve(ata, atb, x, k))
			return 0;
		for (int j = 0; j < n_terms(kind); j++)
			p[3 + r * n_terms(kind) + j] = x[j];
		if (kind == CALIB_MODEL_AFFINE)
			p[3 + 3 * n_terms(kind) + r] = x[3];
	}
	return 1;
}

/* Levenberg-Marquardt with a forward-difference Jacobian; the problems are small (<= 21 parameters). */
static int levmar(const struct fit_ctx *f, double *p, int np)
{
	int m = 3 * f->n, rc = 0;
	double *r = malloc(sizeof(double) * (size_t)m * (size_t)(np + 2));
	double *jac, *rt, lambda = 1e-3, cost;

	if (!r)
		return -1;
	jac = r + m;
	rt = jac + (size_t)m * np;
	residuals(f, p, r);
	cost = sumsq(r, m);
	for (int it = 0; it < 300; it++) {
		double jtj[MAX_PARAMS * MAX_PARAMS], jtr[MAX_PARAMS], a[MAX_PARAMS * MAX_PARAMS];
		double step[MAX_PARAMS], trial[MAX_PARAMS], tcost;
		int improved = 0;

		for (int j = 0; j < np; j++) {
			double save = p[j], h = 1e-6 * fmax(1.0, fabs(p[j]));

			p[j] = save + h;
			residuals(f, p, rt);
			p[j] = save;
			for (int i = 0; i < m; i++)
				jac[(size_t)i * np + j] = (rt[i] - r[i]) / h;
		}
		for (int a1 = 0; a1 < np; a1++) {
			double s = 0.0;

			for (int i = 0; i < m; i++)
				s += jac[(size_t)i * np + a1] * r[i];
			jtr[a1] = -s;
			for (int b1 = a1; b1 < np; b1++) {
				double t = 0.0;

				for (int i = 0; i < m; i++)
					t += jac[(size_t)i * np + a1] * jac[(size_t)i * np + b1];
				jtj[a1 * np + b1] = jtj[b1 * np + a1] = t;
			}
		}
		while (lambda < 1e12) {
			memcpy(a, jtj, sizeof(double) * (size_t)np * np);
			for (int j = 0; j < np; j++)
				a[j * np + j] += lambda * (jtj[j * np + j] + 1e-12);
			if (cholesky_solve(a, jtr, step, np)) {
				for (int j = 0; j < np; j++)
					trial[j] = p[j] + step[j];
				for (int c = 0; c < 3; c++)
					trial[c] = fmax(-LOG_GAMMA_MAX, fmin(LOG_GAMMA_MAX, trial[c]));
				residuals(f, trial, rt);
				tcost = sumsq(rt, m);
				if (isfinite(tcost) && tcost < cost) {
					double gain = (cost - tcost) / fmax(cost, 1e-300);

					memcpy(p, trial, sizeof(double) * np);
					memcpy(r, rt, sizeof(double) * m);
					cost = tcost;
					lambda = fmax(lambda * 0.3, 1e-12);
					improved = 1;
					if (gain < 1e-10)
						goto out_done;
					break;
				}
			}
			lambda *= 10.0;
		}
		if (!improved)
			break;
	}
out_done:
	free(r);
	return rc;
}

int calib_model_fit(int kind, int n, const double (*v)[3], const double (*lab)[3],
		    const unsigned char *use, struct calib_cam_model *out, bl_err *err)
{
	struct fit_ctx f = { .kind = kind, .v = v, .lab = lab };
	double p[MAX_PARAMS];
	int *idx, np = n_params(kind), rc = 0;

	if (kind < 0 || kind >= CALIB_MODEL_COUNT)
		return bl_fail(err, BL_EINVAL, "unknown camera model %d", kind);
	idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
	f.u = malloc(sizeof(*f.u) * (size_t)(n > 0 ? n : 1));
	if (!idx || !f.u) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	for (int i = 0; i < n; i++)
		if (!use || use[i]) {
			color_lab c = { lab[i][0], lab[i][1], lab[i][2] };

			mix_de00_metric(&c, f.u[f.n]);
			idx[f.n++] = i;
		}
	f.idx = idx;
	/* Three residuals a patch; keep a few more than there are parameters. */
	if (3 * f.n < np + 6) {
		rc = bl_fail(err, BL_EINVAL, "the %s model needs at least %d patches, %d given",
			     calib_model_names[kind], (np + 6 + 2) / 3, f.n);
		goto out_free;
	}
	if (!initial_guess(&f, p)) {
		rc = bl_fail(err, BL_EINVAL, "the patches' colours do not determine a %s model "
			     "(too few distinct colours)", calib_model_names[kind]);
		goto out_free;
	}
	if (levmar(&f, p, np) < 0) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	unpack(kind, p, out);
out_free:
	free(idx);
	free(f.u);
	return rc;
}
