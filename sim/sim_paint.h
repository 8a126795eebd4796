/* sim_paint.h: the simulator's paint optics: two-constant Kubelka-Munk over 31 bands derived from the measured Kimera spectra, with Saunderson's surface correction. */
#ifndef BL_SIM_SIM_PAINT_H
#define BL_SIM_SIM_PAINT_H

#include "base/err.h"
#include "base/rng.h"

/* The simulator's spectral grid: 400..700 nm every 10 nm. */
#define SIM_NB 31
#define SIM_WL0_NM 400.0
#define SIM_STEP_NM 10.0

#define SIM_MAX_PAINTS 16

/*
 * Saunderson's correction for a paint surface of refractive index about 1.5,
 * seen in a 45/0 geometry that excludes the specular reflection (as the
 * handheld spectrophotometer that measured the Kimera set, and as a camera
 * looking down on a side-lit table): k1 is the surface's reflectance for
 * light arriving from outside, k2 for diffuse light from inside.
 */
#define SIM_SAUNDERSON_K1 0.04
#define SIM_SAUNDERSON_K2 0.60

/*
 * Absolute scale of the relative coefficients: a film of paint X mm thick has
 * K*X*SIM_S_PER_MM and S*X*SIM_S_PER_MM, where S of white is 1. At 25/mm a
 * 0.03 mm film of white over black reads about L* 52: a thin stroke of white
 * does not hide black, as with real acrylics.
 */
#define SIM_S_PER_MM 25.0

struct sim_paint {
	char name[32];
	double k[SIM_NB], s[SIM_NB]; /* relative absorption and scattering, S of white = 1 */
};

struct sim_paintset {
	int n;          /* paints; [0] is white */
	struct sim_paint p[SIM_MAX_PAINTS];
};

/* How well the derived constants reproduce the measurements of one paint. */
struct sim_derive_fit {
	double masstone_de00;  /* CIEDE2000, derived masstone vs measured */
	double tint_de00;      /* derived tint vs measured (0 for white) */
	double tint_rms;       /* RMS reflectance difference of the tint over the 31 bands */
};

/* Wavelength of band i, nm. */
static inline double sim_band_nm(int i) { return SIM_WL0_NM + SIM_STEP_NM * i; }

/*
 * Derives every Kimera paint's K and S from its masstone and its tint with
 * white (S of white = 1), by this module's own fit: per band from the two
 * measurements, weighted by how well each band is conditioned (from the
 * spread of the repeats), with a smoothness prior across bands where the two
 * measurements say little. fit, if not NULL, gets one entry per paint.
 */
int sim_paints_derive(struct sim_paintset *ps, struct sim_derive_fit *fit, bl_err *err);

/* Perturbs every paint's K and S by a smooth seeded factor of relative spread sd (a new batch). */
void sim_paints_perturb(struct sim_paintset *ps, rng *r, double sd);

/* Index of the paint with this name, or -1. */
int sim_paint_find(const struct sim_paintset *ps, const char *name);

/* Measured (outside) reflectance from internal reflectance, and back (Saunderson). */
double sim_saunderson(double r_internal);
double sim_saunderson_inv(double r_measured);

/* K/S of an internal reflectance of an opaque layer, and the opaque reflectance of a K/S. */
double sim_km_ks(double r_internal);
double sim_km_rinf(double ks);

/*
 * Sums amount[i] * K_i and amount[i] * S_i over the paints (amount in any
 * unit: volume fractions for a mixture, film thickness in mm for a layer).
 */
void sim_mix_ks(const struct sim_paintset *ps, const double *amount, double k[SIM_NB],
		double s[SIM_NB]);

/*
 * Internal reflectance of a layer with optical thicknesses kx = K*X and
 * sx = S*X (dimensionless) over a background of internal reflectance rg:
 * Kubelka's hyperbolic solution, which tends to the opaque R-infinity as the
 * layer thickens and to rg as it vanishes.
 */
double sim_km_layer(double kx, double sx, double rg);

/* CIELAB (D50, 2 degree) of a measured reflectance given on the simulator grid. */
void sim_measured_lab(const double r_meas[SIM_NB], double lab[3]);

/* Resamples a spectrum on the simulator grid to the CIE 5 nm grid (ends held). */
void sim_to_cie_grid(const double v[SIM_NB], double out[81]);

/* A Kimera measurement (mean of the repeats) on the simulator grid; tint = 0 masstone, 1 tint. */
void sim_kimera_on_grid(int paint, int tint, double out[SIM_NB]);

#endif
