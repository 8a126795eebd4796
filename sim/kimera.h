/* kimera.h: the measured Kimera paint spectra as a C table generated at build time from calib/data/kimera-spectral (MIT, miciwan 2024). */
#ifndef BL_SIM_KIMERA_H
#define BL_SIM_KIMERA_H

#define SIM_KIMERA_MAX_WL 170

/* Repeated measurements of one sample: their mean and standard deviation (reflectance 0..1). */
struct sim_kimera_meas {
	int repeats;
	double mean[SIM_KIMERA_MAX_WL];
	double sd[SIM_KIMERA_MAX_WL];
};

/* One paint: its masstone and its tint with the set's white (white itself has no tint). */
struct sim_kimera_paint {
	const char *name;
	double tint_paint_w, tint_white_w; /* parts by weight of the paint and of white in the tint */
	struct sim_kimera_meas masstone;
	struct sim_kimera_meas tint;
};

extern const int sim_kimera_n_wl;
extern const double sim_kimera_wl_nm[SIM_KIMERA_MAX_WL];
extern const int sim_kimera_n_paints;                /* white first */
extern const struct sim_kimera_paint sim_kimera_paints[];

#endif
