/* sim_chart.h: the simulator's ColorChecker 24: smooth spectra fitted to X-Rite's published CIELAB (color/cc24.h). */
#ifndef BL_SIM_SIM_CHART_H
#define BL_SIM_SIM_CHART_H

#include "color/cc24.h"
#include "sim/sim_paint.h"

/* The patches, in color_cc24_names' order. */
#define SIM_CHART_N COLOR_CC24_N

/* Measured reflectance of each patch on the simulator's 31 bands, fitted once (within 0.05 CIEDE2000). */
const double (*sim_chart_spectra(void))[SIM_NB];

#endif
