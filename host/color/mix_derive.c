/* mix_derive.c: two-constant Kubelka-Munk K and S per band from measured masstone and tint spectra, and palettes as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "color/cie.h"
#include "color/mix_impl.h"

#define MAX_SAMPLES 4096
#define MAX_REPEATS 8

/* The repeats of one measured patch: reflectance 0..1 at the file's wavelengths. */
struct patch {
	int n;
	double *r[MAX_REPEATS];
};

struct spectra_file {
	const char *path;
	int n_wl;
	double wl[MAX_SAMPLES];
	int n;                                  /* distinct patches */
	char name[MIX_MAX_PAINTS][CFG_NAME_MAX];/* masstones: the paint; mixes: the tinted paint */
	char base[MIX_MAX_PAINTS][CFG_NAME_MAX];/* mixes: the other component (the white) */
	double frac[MIX_MAX_PAINTS];            /* mixes: paint / (paint + base) by weight */
	struct patch p[MIX_MAX_PAINTS];
};

/* Frees the repeats; the file is left empty, so a second call (after a failed load) does nothing. */
static void spectra_free(struct spectra_file *f)
{
	for (int i = 0; i < f->n; i++) {
		for (int j = 0; j < f->p[i].n; j++)
			free(f->p[i].r[j]);
		f->p[i].n = 0;
	}
	f->n = 0;
}

/* Reads an array of finite numbers within [lo, hi] into out (at most max). */
static int read_numbers(json_obj *o, const char *key, double lo, double hi, double scale,
			double *out, int max, int *n, bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc = json_array(o, key, JSON_REQUIRED, (size_t)max, &arr, &count, err);

	if (rc)
		return rc;
	cJSON_ArrayForEach(it, arr) {
		char k[64];

		snprintf(k, sizeof(k), "%s[%zu]", key, i);
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
			return json_fail(o, k, err, BL_EINVAL, "must be a finite number");
		if (it->valuedouble < lo || it->valuedouble > hi)
			return json_fail(o, k, err, BL_EINVAL, "%g is outside %g..%g",
					 it->valuedouble, lo, hi);
		out[i++] = it->valuedouble * scale;
	}
	*n = (int)count;
	return 0;
}

static int find_patch(struct spectra_file *f, const char *name, const char *base, double frac)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->name[i], name) == 0 && strcmp(f->base[i], base) == 0 &&
		    fabs(f->frac[i] - frac) < 1e-9)
			return i;
	return -1;
}

/* The two components of a mix: which is the paint and which the white it was let down with. */
static int read_components(json_obj *o, const char *white, char *paint, char *base,
			   double *frac, bl_err *err)
{
	json_obj c;
	const cJSON *it;
	double w[2];
	int n = 0, rc;

	rc = json_child(o, "components", JSON_REQUIRED, &c, err);
	if (rc)
		return rc;
	if (c.nkeys != 2)
		return json_fail(&c, NULL, err, BL_EINVAL,
				 "a tint has two components (the paint and the white), not %d",
				 c.nkeys);
	for (it = c.node->child; it; it = it->next) {
		char *dst;

		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble <= 0.0)
			return json_fail(&c, it->string, err, BL_EINVAL,
					 "must be a positive weight");
		if (strlen(it->string) >= CFG_NAME_MAX)
			return json_fail(&c, it->string, err, BL_EINVAL, "paint name too long");
		dst = strcmp(it->string, white) == 0 ? base : paint;
		if (dst[0])
			return json_fail(&c, it->string, err, BL_EINVAL,
					 "a tint mixes one paint with '%s'", white);
		snprintf(dst, CFG_NAME_MAX, "%s", it->string);
		w[dst == paint ? 0 : 1] = it->valuedouble;
		json_take(&c, it->string);
		n++;
	}
	if (!base[0])
		return json_fail(&c, NULL, err, BL_EINVAL, "names no '%s' to tint with", white);
	*frac = w[0] / (w[0] + w[1]);
	(void)n;
	return json_end(&c, err);
}

/*
 * Reads a Kimera-format file: a list whose first entry holds the wavelengths
 * and every other entry one measurement. kind is "masstone" or "mix".
 */
static int spectra_load(const char *path, const char *kind, const char *white,
			struct spectra_file *f, bl_err *err)
{
	cJSON *doc, *it;
	int rc, i = 0;

	memset(f, 0, sizeof(*f));
	f->path = path;
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	if (!cJSON_IsArray(doc)) {
		rc = bl_fail(err, BL_EINVAL, "%s: must be a list of measurements", path);
		goto out_free_doc;
	}
	cJSON_ArrayForEach(it, doc) {
		char at[32], type[32], name[128], paint[CFG_NAME_MAX] = "", base[CFG_NAME_MAX] = "";
		double frac = 0.0;
		json_obj o;
		int n, k;

		snprintf(at, sizeof(at), "[%d]", i);
		rc = json_obj_open(it, path, at, &o, err);
		if (rc == 0)
			rc = json_str(&o, "type", JSON_REQUIRED, type, sizeof(type), err);
		if (rc)
			goto out_free_doc;
		if (i == 0) {
			if (strcmp(type, "wavelengths") != 0) {
				rc = json_fail(&o, "type", err, BL_EINVAL,
					       "the first entry holds the wavelengths, not '%s'", type);
				goto out_free_doc;
			}
			rc = read_numbers(&o, "values", 200.0, 2000.0, 1.0, f->wl, MAX_SAMPLES,
					  &f->n_wl, err);
			if (rc == 0 && f->n_wl < 3)
				rc = json_fail(&o, "values", err, BL_EINVAL, "needs 3 wavelengths or more");
			for (int j = 1; rc == 0 && j < f->n_wl; j++)
				if (f->wl[j] <= f->wl[j - 1])
					rc = json_fail(&o, "values", err, BL_EINVAL,
						       "must increase (%g follows %g)", f->wl[j],
						       f->wl[j - 1]);
			if (rc == 0)
				rc = json_end(&o, err);
			if (rc)
				goto out_free_doc;
			i++;
			continue;
		}
		if (strcmp(type, kind) != 0) {
			rc = json_fail(&o, "type", err, BL_EINVAL, "is '%s', this file holds '%s'",
				       type, kind);
			goto out_free_doc;
		}
		rc = json_str(&o, "name", JSON_REQUIRED, name, sizeof(name), err);
		if (rc)
			goto out_free_doc;
		if (strcmp(kind, "mix") == 0) {
			rc = read_components(&o, white, paint, base, &frac, err);
		} else if (!name[0] || strlen(name) >= CFG_NAME_MAX) {
			rc = json_fail(&o, "name", err, BL_EINVAL, "must be 1..%d characters",
				       CFG_NAME_MAX - 1);
		} else {
			snprintf(paint, sizeof(paint), "%s", name);
		}
		if (rc)
			goto out_free_doc;
		k = find_patch(f, paint, base, frac);
		if (k < 0) {
			if (f->n == MIX_MAX_PAINTS) {
				rc = json_fail(&o, NULL, err, BL_EINVAL, "more than %d patches",
					       MIX_MAX_PAINTS);
				goto out_free_doc;
			}
			k = f->n++;
			snprintf(f->name[k], CFG_NAME_MAX, "%s", paint);
			snprintf(f->base[k], CFG_NAME_MAX, "%s", base);
			f->frac[k] = frac;
		}
		if (f->p[k].n == MAX_REPEATS) {
			rc = json_fail(&o, NULL, err, BL_EINVAL, "more than %d repeats of '%s'",
				       MAX_REPEATS, paint);
			goto out_free_doc;
		}
		f->p[k].r[f->p[k].n] = malloc(sizeof(double) * (size_t)f->n_wl);
		if (!f->p[k].r[f->p[k].n]) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free_doc;
		}
		f->p[k].n++;
		/* Percent; a little over 100 happens with fluorescence or calibration. */
		rc = read_numbers(&o, "reflectance", 0.0, 150.0, 0.01, f->p[k].r[f->p[k].n - 1],
				  MAX_SAMPLES, &n, err);
		if (rc == 0 && n != f->n_wl)
			rc = json_fail(&o, "reflectance", err, BL_EINVAL,
				       "has %d values for %d wavelengths", n, f->n_wl);
		if (rc == 0)
			rc = json_end(&o, err);
		if (rc)
			goto out_free_doc;
		i++;
	}
	if (i < 2)
		rc = bl_fail(err, BL_EINVAL, "%s: holds no measurements", path);
out_free_doc:
	cJSON_Delete(doc);
	if (rc)
		spectra_free(f);
	return rc;
}

/* Mean over repeats at the file's wavelengths. */
static void patch_mean(const struct spectra_file *f, int k, double *out)
{
	for (int j = 0; j < f->n_wl; j++) {
		double s = 0.0;

		for (int r = 0; r < f->p[k].n; r++)
			s += f->p[k].r[r][j];
		out[j] = s / f->p[k].n;
	}
}

/* Lab through the CIE code at full resolution: the reference every fit is judged against. */
static void spectrum_lab(const struct spectra_file *f, const double *r, double lab[3])
{
	double grid[CIE_N];

	cie_resample(f->wl, r, f->n_wl, grid);
	cie_reflectance_to_lab_d50(grid, lab);
}

/*
 * Band value of a finely sampled spectrum: a triangular bandpass of half
 * width one band step, as a spectrometer with that resolution would read.
 */
static void to_bands(const struct spectra_file *f, const double *r, const double *wl_b, int nb,
		     double step, double *out)
{
	for (int b = 0; b < nb; b++) {
		double sw = 0.0, s = 0.0;

		for (int j = 0; j < f->n_wl; j++) {
			double w = 1.0 - fabs(f->wl[j] - wl_b[b]) / step;

			if (w <= 0.0)
				continue;
			sw += w;
			s += w * r[j];
		}
		if (sw > 0.0) {
			out[b] = s / sw;
		} else {
			/* Outside the measured range: hold the nearest end, as cie_resample does. */
			out[b] = wl_b[b] < f->wl[0] ? r[0] : r[f->n_wl - 1];
		}
	}
}

/*
 * Band values that keep the spectrum's colour: the bandpass values moved by
 * the least amount (in the least-squares sense) that makes the model's XYZ of
 * the bands equal the XYZ of the full measured spectrum. The model then
 * reproduces a measurement's colour however coarse its bands; without this,
 * 10 nm bands cost up to 0.3 CIEDE2000 on saturated paints.
 */
static void to_bands_exact(const struct spectra_file *f, const double *r,
			   const struct mix_model *grid, double step, double *out)
{
	double full[CIE_N], xyz[3], white[3], d[3], a[9] = { 0 };
	const double *w[3] = { grid->wx, grid->wy, grid->wz };
	int nb = grid->n_bands;

	to_bands(f, r, grid->wl_nm, nb, step, out);
	cie_resample(f->wl, r, f->n_wl, full);
	cie_reflectance_to_xyz(full, cie_d50, xyz);
	cie_white_xyz(cie_d50, white);
	for (int c = 0; c < 3; c++) {
		d[c] = xyz[c] / white[c];
		for (int b = 0; b < nb; b++)
			d[c] -= w[c][b] * out[b];
		for (int e = 0; e < 3; e++)
			for (int b = 0; b < nb; b++)
				a[c * 3 + e] += w[c][b] * w[e][b];
	}
	if (mix_spd_solve(a, d, 3) != 0)
		return;
	for (int b = 0; b < nb; b++) {
		double v = out[b];

		for (int c = 0; c < 3; c++)
			v += w[c][b] * d[c];
		out[b] = v < 1e-4 ? 1e-4 : v > 0.99 ? 0.99 : v;
	}
}

/*
 * K/S per band of a patch: of the averaged spectrum (the estimate), and the
 * standard error of the mean from the repeats.
 */
static void patch_ratio(const struct spectra_file *f, int k, const struct mix_model *grid,
			double step, double *mean, double *se)
{
	double band[MIX_MAX_BANDS], sum[MIX_MAX_BANDS] = { 0 }, sq[MIX_MAX_BANDS] = { 0 };
	double avg[MAX_SAMPLES];
	int n = f->p[k].n, nb = grid->n_bands;

	patch_mean(f, k, avg);
	to_bands_exact(f, avg, grid, step, band);
	for (int b = 0; b < nb; b++)
		mean[b] = mix_km_ratio(band[b]);
	for (int r = 0; r < n; r++) {
		to_bands(f, f->p[k].r[r], grid->wl_nm, nb, step, band);
		for (int b = 0; b < nb; b++) {
			double q = mix_km_ratio(band[b]);

			sum[b] += q;
			sq[b] += q * q;
		}
	}
	for (int b = 0; b < nb; b++) {
		double m = sum[b] / n, var = n > 1 ? (sq[b] - n * m * m) / (n - 1) : 0.0;

		se[b] = sqrt(var > 0.0 ? var / n : 0.0);
	}
}

/*
 * Smooths log S over the bands: minimises sum w_b (y_b - d_b)^2 + lambda
 * sum (y_{b+1} - y_b)^2. Where the data cannot tell S (the paint and its
 * tint look alike there), w_b is near 0 and S is carried over flat from the
 * neighbouring bands that can.
 */
static int smooth_log(const double *d, const double *w, int nb, double lambda, double *y)
{
	double a[MIX_MAX_BANDS * MIX_MAX_BANDS] = { 0 };
	double sw = 0.0, mean = 0.0;

	for (int b = 0; b < nb; b++) {
		sw += w[b];
		mean += w[b] * d[b];
	}
	if (sw <= 0.0)
		return -1;
	mean /= sw;
	for (int b = 0; b < nb; b++) {
		/* A faint pull to the mean keeps the system definite if whole stretches lack data. */
		a[b * nb + b] += w[b] + 1e-6 * sw;
		y[b] = w[b] * d[b] + 1e-6 * sw * mean;
		if (b + 1 < nb) {
			a[b * nb + b] += lambda;
			a[(b + 1) * nb + b + 1] += lambda;
			a[b * nb + b + 1] -= lambda;
			a[(b + 1) * nb + b] -= lambda;
		}
	}
	return mix_spd_solve(a, y, nb);
}

void mix_derive_defaults(struct mix_derive_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->wl_min_nm = 400.0;
	o->wl_max_nm = 700.0;
	o->step_nm = 10.0;
	o->reliable_min_nm = 410.0;
	o->reliable_max_nm = 680.0;
	snprintf(o->name, sizeof(o->name), "derived");
	snprintf(o->well_prefix, sizeof(o->well_prefix), "w");
}

/* Relative error floor of one band's S: differences of K/S below this are not trusted. */
#define S_REL_FLOOR 0.05
/*
 * Roughness penalty of log S between neighbouring bands, against data weights
 * of at most 1 / S_REL_FLOOR^2 = 400: a step of 0.1 in log S between bands
 * costs as much as a band's S 3% off its data at full weight. Enough to carry
 * S across bands the data cannot tell, too little to bend it where they can
 * (the tints are reproduced within 0.12 CIEDE2000 on 10 nm bands).
 */
#define S_SMOOTH 40.0
/* Weight kept by bands where the instrument's light was weak. */
#define WEAK_END_WEIGHT 0.1

/* What a derivation works on: the band grid, both files of spectra, the white's K. */
struct derive {
	const struct mix_derive_opts *o;
	const char *masstone_path, *tints_path;
	struct spectra_file *ms, *tf;
	struct mix_model *m;
	double wl_b[MIX_MAX_BANDS], kw[MIX_MAX_BANDS], sew[MIX_MAX_BANDS];
	int nb, wi;
};

static const char *const derive_white = "white";

/* The band grid of the options: 3 to MIX_MAX_BANDS bands. */
static int derive_grid(struct derive *x, bl_err *err)
{
	const struct mix_derive_opts *o = x->o;

	if (!(o->step_nm > 0.0) || !(o->wl_max_nm > o->wl_min_nm))
		return bl_fail(err, BL_EINVAL, "band grid %g..%g nm step %g is empty", o->wl_min_nm,
			       o->wl_max_nm, o->step_nm);
	x->nb = (int)floor((o->wl_max_nm - o->wl_min_nm) / o->step_nm + 1e-9) + 1;
	if (x->nb < 3 || x->nb > MIX_MAX_BANDS)
		return bl_fail(err, BL_EINVAL, "band grid %g..%g nm step %g gives %d bands (3..%d)",
			       o->wl_min_nm, o->wl_max_nm, o->step_nm, x->nb, MIX_MAX_BANDS);
	for (int b = 0; b < x->nb; b++)
		x->wl_b[b] = o->wl_min_nm + b * o->step_nm;
	return 0;
}

/* Both files of spectra, loaded (freed by the caller on error too), with a white covering the bands. */
static int derive_load(struct derive *x, bl_err *err)
{
	const struct mix_derive_opts *o = x->o;
	const struct spectra_file *ms, *tf;
	int rc;

	x->m->n_bands = x->nb;
	memcpy(x->m->wl_nm, x->wl_b, sizeof(double) * (size_t)x->nb);
	mix_model_weights(x->m);
	if ((rc = spectra_load(x->masstone_path, "masstone", derive_white, x->ms, err)) ||
	    (rc = spectra_load(x->tints_path, "mix", derive_white, x->tf, err)))
		return rc;
	ms = x->ms;
	tf = x->tf;
	x->wi = -1;
	for (int i = 0; i < ms->n; i++)
		if (strcmp(ms->name[i], derive_white) == 0)
			x->wi = i;
	if (x->wi < 0)
		return bl_fail(err, BL_EINVAL, "%s: no masstone of '%s', the paint tints are mixed with",
			       x->masstone_path, derive_white);
	if (ms->wl[0] > o->wl_min_nm || ms->wl[ms->n_wl - 1] < o->wl_max_nm || tf->wl[0] > o->wl_min_nm ||
	    tf->wl[tf->n_wl - 1] < o->wl_max_nm)
		return bl_fail(err, BL_EINVAL, "the measurements (%g..%g nm) do not cover the bands %g..%g nm",
			       ms->wl[0], ms->wl[ms->n_wl - 1], o->wl_min_nm, o->wl_max_nm);
	return 0;
}

/* The tint of paint i with the white: its entry in the tints file, exactly one. */
static int derive_tint_of(const struct derive *x, int i, int *t, bl_err *err)
{
	*t = -1;
	for (int j = 0; j < x->tf->n; j++)
		if (strcmp(x->tf->name[j], x->ms->name[i]) == 0) {
			if (*t >= 0)
				return bl_fail(err, BL_EINVAL, "%s: '%s' is tinted at two ratios; give one",
					       x->tints_path, x->ms->name[i]);
			*t = j;
		}
	if (*t < 0)
		return bl_fail(err, BL_EINVAL, "%s: no tint of '%s' with %s: its S cannot be told",
			       x->tints_path, x->ms->name[i], derive_white);
	return 0;
}

/*
 * Paint i's K and S from its masstone and tint t. Per band, the tint's K/S
 * is (cp Kp + cw Kw) / (cp Sp + cw), and Kp = qp Sp from the masstone, so
 * Sp = cw (qt - Kw) / cp (qp - qt), smoothed across bands by its weights.
 */
static int derive_paint(const struct derive *x, int i, int t, struct palette_paint *pp, bl_err *err)
{
	double qp[MIX_MAX_BANDS], sep[MIX_MAX_BANDS], qt[MIX_MAX_BANDS], set[MIX_MAX_BANDS];
	double d[MIX_MAX_BANDS], w[MIX_MAX_BANDS], y[MIX_MAX_BANDS];
	double cp = x->tf->frac[t], cw = 1.0 - cp;

	patch_ratio(x->ms, i, x->m, x->o->step_nm, qp, sep);
	patch_ratio(x->tf, t, x->m, x->o->step_nm, qt, set);
	for (int b = 0; b < x->nb; b++) {
		double num = qt[b] - x->kw[b], den = qp[b] - qt[b], rel;

		if (num <= 0.0 || den <= 0.0) {
			d[b] = 0.0;
			w[b] = 0.0;
			continue;
		}
		d[b] = log(cw * num / (cp * den));
		rel = (set[b] * set[b] + x->sew[b] * x->sew[b]) / (num * num) +
		      (sep[b] * sep[b] + set[b] * set[b]) / (den * den) + S_REL_FLOOR * S_REL_FLOOR;
		w[b] = 1.0 / rel;
		if (x->wl_b[b] < x->o->reliable_min_nm || x->wl_b[b] > x->o->reliable_max_nm)
			w[b] *= WEAK_END_WEIGHT;
	}
	if (smooth_log(d, w, x->nb, S_SMOOTH, y) < 0)
		return bl_fail(err, BL_EINVAL, "'%s': its tint is no lighter than its masstone at any band",
			       x->ms->name[i]);
	for (int b = 0; b < x->nb; b++) {
		pp->s[b] = exp(y[b]);
		pp->k[b] = qp[b] * pp->s[b];
	}
	return 0;
}

/* Every paint: the white S = 1 by definition of the scale, K from its masstone; the others from their tints. */
static int derive_paints(struct derive *x, struct palette *out, struct mix_derive_report *report, bl_err *err)
{
	const struct spectra_file *ms = x->ms;
	int rc;

	patch_ratio(ms, x->wi, x->m, x->o->step_nm, x->kw, x->sew);
	for (int i = 0; i < ms->n; i++) {
		struct palette_paint *pp = &out->paints[i];
		int t;

		snprintf(pp->name, sizeof(pp->name), "%s", ms->name[i]);
		snprintf(pp->well, sizeof(pp->well), "%s%d", x->o->well_prefix, i + 1);
		pp->has_spectral = 1;
		if (i == x->wi) {
			for (int b = 0; b < x->nb; b++) {
				pp->k[b] = x->kw[b];
				pp->s[b] = 1.0;
			}
			continue;
		}
		if ((rc = derive_tint_of(x, i, &t, err)) || (rc = derive_paint(x, i, t, pp, err)))
			return rc;
		if (report) {
			double avg[MAX_SAMPLES];

			patch_mean(x->tf, t, avg);
			spectrum_lab(x->tf, avg, report->tint_lab[i]);
			report->tint_fraction[i] = x->tf->frac[t];
		}
	}
	return 0;
}

/* How closely the derived model reproduces each masstone and tint, and how far its repeats spread. */
static int derive_report(struct derive *x, const struct palette *p, struct mix_derive_report *report,
			 bl_err *err)
{
	const struct spectra_file *ms = x->ms;
	int rc = mix_model_from_palette(p, x->m, err);

	if (rc)
		return rc;
	report->n_paints = ms->n;
	for (int i = 0; i < ms->n; i++) {
		double avg[MAX_SAMPLES], amt[2];
		int idx[2] = { i, x->wi };
		color_lab pred, meas;

		snprintf(report->name[i], CFG_NAME_MAX, "%s", ms->name[i]);
		patch_mean(ms, i, avg);
		spectrum_lab(ms, avg, report->masstone_lab[i]);
		amt[0] = 1.0;
		mix_predict_sparse(x->m, NULL, 1, idx, amt, &pred, NULL);
		meas = (color_lab){ report->masstone_lab[i][0], report->masstone_lab[i][1],
				    report->masstone_lab[i][2] };
		report->masstone_de00[i] = color_de00(&pred, &meas);
		for (int r = 0; r < ms->p[i].n; r++) {
			double lab[3];
			color_lab c;

			spectrum_lab(ms, ms->p[i].r[r], lab);
			c = (color_lab){ lab[0], lab[1], lab[2] };
			if (color_de00(&c, &meas) > report->repeat_de00[i])
				report->repeat_de00[i] = color_de00(&c, &meas);
		}
		if (i == x->wi)
			continue;
		amt[0] = report->tint_fraction[i];
		amt[1] = 1.0 - amt[0];
		mix_predict_sparse(x->m, NULL, 2, idx, amt, &pred, NULL);
		meas = (color_lab){ report->tint_lab[i][0], report->tint_lab[i][1], report->tint_lab[i][2] };
		report->tint_de00[i] = color_de00(&pred, &meas);
	}
	return 0;
}

int mix_derive_kimera(const char *masstone_path, const char *tints_path,
		      const struct mix_derive_opts *o, struct palette *out,
		      struct mix_derive_report *report, bl_err *err)
{
	struct derive x = { .o = o, .masstone_path = masstone_path, .tints_path = tints_path };
	int rc;

	memset(out, 0, sizeof(*out));
	if (report)
		memset(report, 0, sizeof(*report));
	if ((rc = derive_grid(&x, err)))
		return rc;
	x.ms = calloc(1, sizeof(*x.ms));
	x.tf = calloc(1, sizeof(*x.tf));
	x.m = calloc(1, sizeof(*x.m));
	if (!x.ms || !x.tf || !x.m) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = derive_load(&x, err)))
		goto out_spectra;
	snprintf(out->name, sizeof(out->name), "%s", o->name);
	snprintf(out->notice, sizeof(out->notice), "%s", o->notice);
	snprintf(out->white, sizeof(out->white), "%s", derive_white);
	out->n_bands = x.nb;
	memcpy(out->wavelengths_nm, x.wl_b, sizeof(double) * (size_t)x.nb);
	out->n_paints = x.ms->n;
	if ((rc = derive_paints(&x, out, report, err)))
		goto out_spectra;
	if (report && (rc = derive_report(&x, out, report, err)))
		goto out_spectra;
	rc = 0;
out_spectra:
	spectra_free(x.ms);
	spectra_free(x.tf);
out_free:
	free(x.ms);
	free(x.tf);
	free(x.m);
	return rc;
}

/* 6 significant digits: the file stays readable and the same on every machine. */
static double round6(double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.6g", v);
	return strtod(buf, NULL);
}

static cJSON *add_vec6(cJSON *obj, const char *key, const double *v, int n)
{
	double r[MIX_MAX_BANDS];

	for (int i = 0; i < n; i++)
		r[i] = round6(v[i]);
	return json_add_vec(obj, key, r, n);
}

cJSON *mix_palette_to_json(const struct palette *p)
{
	cJSON *root = cJSON_CreateObject(), *paints;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "kind", "palette");
	cJSON_AddNumberToObject(root, "version", 1);
	cJSON_AddStringToObject(root, "name", p->name);
	if (p->notice[0])
		cJSON_AddStringToObject(root, "notice", p->notice);
	if (p->white[0])
		cJSON_AddStringToObject(root, "white", p->white);
	if (p->n_bands)
		json_add_vec(root, "wavelengths_nm", p->wavelengths_nm, p->n_bands);
	paints = cJSON_AddArrayToObject(root, "paints");
	if (!paints)
		goto out_fail;
	for (int i = 0; i < p->n_paints; i++) {
		const struct palette_paint *pp = &p->paints[i];
		cJSON *o = cJSON_CreateObject(), *x;

		if (!o || !cJSON_AddItemToArray(paints, o)) {
			cJSON_Delete(o);
			goto out_fail;
		}
		cJSON_AddStringToObject(o, "name", pp->name);
		if (pp->pigment[0])
			cJSON_AddStringToObject(o, "pigment", pp->pigment);
		cJSON_AddStringToObject(o, "well", pp->well);
		if (pp->has_spectral) {
			x = cJSON_AddObjectToObject(o, "spectral");
			if (!x || !add_vec6(x, "k", pp->k, p->n_bands) ||
			    !add_vec6(x, "s", pp->s, p->n_bands))
				goto out_fail;
		} else {
			cJSON *tints;

			x = cJSON_AddObjectToObject(o, "measured");
			if (!x || !add_vec6(x, "masstone_lab", pp->masstone_lab, 3))
				goto out_fail;
			if (!pp->n_tints)
				continue;
			tints = cJSON_AddArrayToObject(x, "tints");
			for (int t = 0; tints && t < pp->n_tints; t++) {
				cJSON *ti = cJSON_CreateObject();

				if (!ti || !cJSON_AddItemToArray(tints, ti)) {
					cJSON_Delete(ti);
					goto out_fail;
				}
				cJSON_AddNumberToObject(ti, "paint_fraction",
							round6(pp->tints[t].paint_fraction));
				add_vec6(ti, "lab", pp->tints[t].lab, 3);
			}
			if (!tints)
				goto out_fail;
		}
	}
	return root;
out_fail:
	cJSON_Delete(root);
	return NULL;
}
