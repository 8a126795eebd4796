/* cie.h: CIE 1931 2-degree observer, illuminants D50 and D65, and reflectance to XYZ and CIELAB. */
#ifndef BL_COLOR_CIE_H
#define BL_COLOR_CIE_H

/*
 * Every spectrum in this module lives on one grid: 380..780 nm every 5 nm,
 * the abridged range and step of the CIE 15 tables. The simulator and the
 * calibration code resample measured spectra onto it once, so the colour of a
 * reflectance is always the same plain sum over the same 81 samples.
 */
#define CIE_N 81            /* samples, 380..780 nm every 5 nm */
#define CIE_WL0_NM 380.0
#define CIE_STEP_NM 5.0

/* CIE 1931 standard colorimetric observer (2 degree), CIE 015:2018 5 nm table. */
extern const double cie_xbar[CIE_N], cie_ybar[CIE_N], cie_zbar[CIE_N];

/* Relative spectral power of CIE illuminants D50 and D65, 100 at 560 nm. */
extern const double cie_d50[CIE_N], cie_d65[CIE_N];

/*
 * Resamples a spectrum given at arbitrary increasing wavelengths (nm) onto the
 * 81-sample grid by linear interpolation, holding the end values constant
 * outside the given range. With n <= 0 there is nothing to hold, and out is
 * all zero.
 */
void cie_resample(const double *wl_nm, const double *v, int n, double out[CIE_N]);

/*
 * Tristimulus XYZ (Y of the perfect white = 100) of a reflectance spectrum
 * (0..1, on the CIE grid) under an illuminant SPD (on the grid), 2-degree
 * observer.
 */
void cie_reflectance_to_xyz(const double refl[CIE_N], const double illum[CIE_N], double xyz[3]);

/* XYZ of the illuminant's perfect white (Y = 100). */
void cie_white_xyz(const double illum[CIE_N], double xyz[3]);

/*
 * Reflectance (0..1 on the grid) to CIELAB under D50 with the 2-degree
 * observer, normalised to the D50 white computed from these same tables, so a
 * perfect white reflector gives exactly L=100, a=0, b=0.
 */
void cie_reflectance_to_lab_d50(const double refl[CIE_N], double lab[3]);

#endif
