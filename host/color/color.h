/* color.h: colour arithmetic: CIELAB (D50) as the internal space, sRGB and XYZ through LittleCMS 2, CIEDE2000. */
#ifndef BL_COLOR_COLOR_H
#define BL_COLOR_COLOR_H

#include "base/err.h"

/* CIELAB under D50 with the 1931 2-degree observer: brushloop's internal colour space. */
typedef struct color_lab {
	double L, a, b;
} color_lab;

/* CIE XYZ under D50, Y of the perfect white = 100. */
typedef struct color_xyz {
	double X, Y, Z;
} color_xyz;

/* sRGB with 0..255 channels (not rounded; values outside 0..255 are out of gamut). */
typedef struct color_rgb {
	double r, g, b;
} color_rgb;

/* CIEDE2000 with weighting factors kL, kC, kH (1, 1, 1 for the standard formula). */
double color_de2000(const color_lab *x, const color_lab *y, double kl, double kc, double kh);

/* Standard CIEDE2000 (kL = kC = kH = 1). */
static inline double color_de00(const color_lab *x, const color_lab *y)
{
	return color_de2000(x, y, 1.0, 1.0, 1.0);
}

/* Standard CIEDE2000 without lcms2, for maps of many cells: equal to color_de00 within 1e-9. */
double color_de00_fast(double L1, double a1, double b1, double L2, double a2, double b2);

/*
 * Parses "lab:L,a,b", "srgb:R,G,B" (0-255) or "#rrggbb" into Lab. The message
 * names the text and what is wrong; NaN, infinities and out-of-range values
 * are refused.
 */
int color_parse(const char *text, color_lab *out, bl_err *err);

/* sRGB (0..255) to Lab D50, through LittleCMS's sRGB profile. */
int color_srgb_to_lab(const color_rgb *rgb, color_lab *out, bl_err *err);

/* Lab D50 to sRGB (0..255, unclipped); *in_gamut tells whether all channels lie in 0..255. */
int color_lab_to_srgb(const color_lab *lab, color_rgb *out, int *in_gamut, bl_err *err);

/* Lab D50 <-> XYZ D50 (Y of white = 100). */
void color_lab_to_xyz(const color_lab *lab, color_xyz *out);
void color_xyz_to_lab(const color_xyz *xyz, color_lab *out);

/* Converts many sRGB8 pixels (packed RGB) to Lab at once: one lcms2 call, not one per pixel. */
int color_srgb8_to_lab_many(const unsigned char *rgb, color_lab *out, unsigned long n, bl_err *err);

/* Clips an sRGB colour to 0..255 and rounds it into 8-bit channels. */
void color_rgb_to_u8(const color_rgb *rgb, unsigned char out[3]);

#endif
