/* cc24.h: the X-Rite ColorChecker Classic 24 as X-Rite publishes it: the one table of its patches' names and CIELAB, for the built-in chart (calib) and the simulator's chart. */
#ifndef BL_COLOR_CC24_H
#define BL_COLOR_CC24_H

#define COLOR_CC24_N 24

/* Row by row from "dark skin" to "black 2", as X-Rite numbers the patches. */
extern const char *const color_cc24_names[COLOR_CC24_N];

/*
 * CIELAB, D50, CIE 1931 2-degree observer, for charts made from November
 * 2014 on, as in X-Rite's reference data file for the new formulation
 * (measured with an i1Pro 2, M0, no filter).
 */
extern const double color_cc24_lab[COLOR_CC24_N][3];

#endif
