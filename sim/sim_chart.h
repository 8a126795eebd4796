/* sim_chart.h: the simulator's ColorChecker 24: patch names, X-Rite's published CIELAB, and smooth spectra fitted to it. */
#ifndef BL_SIM_SIM_CHART_H
#define BL_SIM_SIM_CHART_H

#include "sim/sim_paint.h"

#define SIM_CHART_N 24

/* Row by row from "dark skin" to "black 2", as X-Rite numbers the patches. */
extern const char *const sim_chart_names[SIM_CHART_N];

/* CIELAB (D50, 2 degree) for charts made after November 2014. */
extern const double sim_chart_lab[SIM_CHART_N][3];

/* Measured reflectance of each patch on the simulator's 31 bands, fitted once (within 0.05 CIEDE2000). */
const double (*sim_chart_spectra(void))[SIM_NB];

#endif
