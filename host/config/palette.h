/* palette.h: the palette file (schema v1): paints, their wells and their optical data. */
#ifndef BL_CONFIG_PALETTE_H
#define BL_CONFIG_PALETTE_H

#include "base/err.h"
#include "config/machine.h"

#define PALETTE_MAX_PAINTS 32
#define PALETTE_MAX_BANDS 81
#define PALETTE_MAX_TINTS 8
#define PALETTE_NOTICE_MAX 2048 /* room for a full MIT notice */

/* A tint: the paint mixed with the palette's white, measured as Lab D50. */
struct palette_tint {
	double paint_fraction; /* paint / (paint + white) by weight, in (0, 1) */
	double lab[3];
};

struct palette_paint {
	char name[CFG_NAME_MAX];
	char pigment[CFG_NAME_MAX]; /* Colour Index code, e.g. PB15:3 ("" when unknown) */
	char well[CFG_NAME_MAX];    /* the machine's well it sits in */
	int has_spectral;           /* K and S per band (Kubelka-Munk, S of white = 1) */
	double k[PALETTE_MAX_BANDS];
	double s[PALETTE_MAX_BANDS];
	int has_measured;           /* camera- or colorimeter-measured colours only */
	double masstone_lab[3];
	int n_tints;
	struct palette_tint tints[PALETTE_MAX_TINTS];
};

struct palette {
	char file[CFG_PATH_MAX];
	char name[64];
	char notice[PALETTE_NOTICE_MAX]; /* licence of data derived from others' measurements */
	char white[CFG_NAME_MAX];   /* the paint tints are mixed with ("" when no tints) */
	int n_bands;
	double wavelengths_nm[PALETTE_MAX_BANDS];
	int n_paints;
	struct palette_paint paints[PALETTE_MAX_PAINTS];
};

/* Loads and validates a palette file; every message names the file and key path. */
int palette_load(const char *path, struct palette *p, bl_err *err);

/* Checks the palette against a machine: every well exists and holds one paint. */
int palette_check_machine(const struct palette *p, const struct machine *m, bl_err *err);

/* Index of the paint with this name, or -1. */
int palette_find(const struct palette *p, const char *name);

/* A normalised, human-readable summary (for `config check`); returns a malloc'd string. */
char *palette_summary(const struct palette *p);

#endif
