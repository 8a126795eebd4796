/* calib_session.h: the bench calibration sessions (camera, canvas, arm, paints): the machine, the frame (a file, or captured through the rig), each session's steps told to the operator, its pass or fail against the machine's thresholds, and what it writes. */
#ifndef BL_CALIB_CALIB_SESSION_H
#define BL_CALIB_CALIB_SESSION_H

#include <cJSON.h>
#include <stdio.h>

#include "base/prov.h"
#include "calib/calib.h"
#include "config/machine.h"
#include "config/palette.h"
#include "rig/rig.h"
#include "vision/image.h"

struct meas_profile;

/* What every session is given. */
struct calib_session {
	const char *machine_path;  /* the machine file (the caller resolves the default) */
	const char *frame;         /* work on this frame file; NULL: capture one */
	const char *output;        /* where the result goes; NULL: the machine file's calibration key */
	const char *truth;         /* a simulator truth file of the frame, or NULL */
	int force;                 /* write a result that fails */
	struct rig_options ro;     /* the simulator's seed and world when capturing from it */
	FILE *say;                 /* the operator's steps; NULL says nothing (--json) */
};

/* The frame a session works on, and the truth about it when there is one. */
struct calib_frame {
	struct img im;
	char name[CFG_PATH_MAX + 64];
	cJSON *truth;              /* --truth FILE, or the simulator's own */
	char truth_name[CFG_PATH_MAX + 64];
	double time_s;             /* simulated time of the frame, -1 when unknown */
	char sha256[BL_DIGEST_HEX]; /* of the frame file, or of a captured frame's pixels (RGB rows) */
};

void calib_frame_free(struct calib_frame *f);

/* What a session writes about its frame: from which frame (and its digest), its verdict and why. */
void calib_frame_prov(const struct calib_frame *f, int pass, const char *why, struct prov *p);

/*
 * Before a session replaces the file at path: the one there is kept as
 * path.prev (the one before it goes), so a calibration that turns out worse
 * can be put back by hand.
 */
int calib_keep_previous(const char *path, bl_err *err);

/*
 * Before any capture or measurement: path (what: "-o", "--ti3", a machine
 * key) can be written: its folder exists and takes files, and it is no
 * folder itself. Found only at the end, a bad path costs the whole session.
 */
int calib_output_check(const char *what, const char *path, bl_err *err);

/* The machine as its file alone places the canvas (an arm registration is what calib arm makes). */
int calib_session_machine(const struct calib_session *s, struct machine **m, bl_err *err);

/*
 * The frame a session works on: s->frame, else one captured from the
 * machine's camera through the rig (controls locked, camera.average_frames
 * averaged; the simulator shows scene, with card when not NULL, and tells
 * its truth); a real camera waits for the operator after prompt.
 */
struct sim_card;
int calib_session_frame(const struct calib_session *s, const struct machine *m, int scene,
			const struct sim_card *card, const char *prompt, struct calib_frame *f, bl_err *err);

/* A paint card file as the simulator shows it: on the machine's canvas, centred. */
int calib_sim_card(const char *card_path, const struct machine *m, struct sim_card *out, bl_err *err);

/*
 * Each session below: run fills its struct (free it with its _free whatever
 * run returned). 0 when it ran to its verdict (pass says which; a result
 * that fails is written only with s->force, an arm registration never), or
 * an error: BL_EINVAL for bad input or a frame where something was not found
 * (with m loaded and out still NULL: neither s->output nor the machine file
 * names where the result goes).
 */

struct calib_camera_session {
	/* given */
	const char *chart_name;    /* colorchecker24 or a chart file */
	const char *flat_path;     /* a flat frame for the light, or NULL */
	const char *light_path;    /* write the light map here (needs flat_path), or NULL */
	const char *ti3_path;      /* write the measurements as ArgyllCMS's .ti3 here, or NULL */
	const char *check_path;    /* check this profile on the frame (written: only the picture), or NULL */
	const double *corners_px;  /* the chart's 4 corners, or NULL to find them */
	struct calib_camera_opts co; /* model, icc_version, light; the rest is filled here */
	/* filled */
	struct machine *m;
	struct calib_chart *chart;
	struct calib_camera_result *r;
	struct calib_frame fs;
	struct img flat;
	char flat_label[CFG_PATH_MAX + 16]; /* "--flat PATH", for messages */
	const char *out;           /* the profile's path; with check_path, the patch-error picture's */
	struct calib_profile_check *check; /* with check_path: the profile on this chart */
	char check_png[CFG_PATH_MAX + 16]; /* the picture's default path: check_path + ".check.png" */
	int has_drift;
	struct calib_drift drift;  /* against the profile it replaces */
	int pass, written;
	int light_written;         /* the light map, and its figures */
	int lm_cols, lm_rows, lm_known;
	double lm_lo, lm_hi;
};
int calib_camera_session_run(struct calib_camera_session *cs, const struct calib_session *s, bl_err *err);
void calib_camera_session_free(struct calib_camera_session *cs);

struct calib_canvas_session {
	/* given */
	const double *corners_px;  /* 4 corners, or NULL for the markers */
	double size_mm[2];         /* 0: the machine's canvas */
	/* filled */
	struct machine *m;
	struct calib_frame fs;
	struct calib_canvas_result r;
	const char *out;
	double truth_mean_mm, truth_max_mm; /* -1 without a truth */
	int pass, written;
};
int calib_canvas_session_run(struct calib_canvas_session *cs, const struct calib_session *s, bl_err *err);
void calib_canvas_session_free(struct calib_canvas_session *cs);

struct calib_registration {
	/* given */
	const char *points;        /* point pairs file, or NULL for the guided session */
	int model;                 /* CALIB_ARM_SIMILARITY or CALIB_ARM_AFFINE */
	int by_hand;
	int n_targets;             /* 0: the default targets */
	const double *targets;     /* canvas mm, n_targets pairs */
	const char *run_dir;       /* the guided session's journal (default calib-arm.run) */
	/* filled */
	struct machine *m;
	struct calib_arm *a;
	const char *out;
	int pass;
};
int calib_registration_run(struct calib_registration *as, const struct calib_session *s, bl_err *err);
void calib_registration_free(struct calib_registration *as);

struct calib_paints_session {
	/* given */
	const char *palette_path, *card_path;
	int layout;                /* write the card instead of measuring it */
	int n_tints;
	const double *tints;
	const char *svg;           /* layout: the card as SVG too */
	const char *profile;       /* the camera profile; NULL: the machine file's */
	/* filled */
	struct machine *m;
	struct palette *pal;
	struct calib_card *card;
	struct calib_paints_result *r;
	struct meas_profile *prof;
	struct calib_frame fs;
	int pass, written;
};
int calib_paints_session_run(struct calib_paints_session *ps, const struct calib_session *s, bl_err *err);
void calib_paints_session_free(struct calib_paints_session *ps);

#endif
