/* review.h: the second judge: a table of rules that looks at a verdict's evidence by another path than the one that made it (the frame, the markers, the lamp, a reference patch, the paint), and can only withhold agreement. */
#ifndef BL_REVIEW_REVIEW_H
#define BL_REVIEW_REVIEW_H

#include <stdint.h>

#include <cJSON.h>

#include "base/err.h"
#include "color/color.h"
#include "color/mix.h"
#include "config/machine.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/measure.h"

/*
 * Where a verdict is reviewed: every checkpoint (the canvas, and the batches
 * painted since the last checkpoint the reviewer agreed with) and every mix
 * verdict (a colour verified or accepted from its cell's measurement).
 */
enum review_point { REVIEW_AT_CHECKPOINT, REVIEW_AT_MIX, REVIEW_POINT_COUNT };
extern const char *const review_point_names[]; /* "checkpoint", "mix" */

#define REVIEW_DIGESTS 16     /* earlier frames a new one is compared with */
#define REVIEW_NAME_MAX 96    /* a frame's name (frames/NNNNNN-what.jpg) */

/*
 * The reference patches: the paper inside the corner markers other than the
 * origin's (a square of S/3 about each centre), printed on the table beside
 * the canvas, where no paint goes: what they read is the light and the
 * camera, nothing else.
 */
struct review_patches {
	int ok;              /* read (the run's geometry puts them inside the frame) */
	double raw[3];       /* linear RGB of the frame as the camera gave it, 0..1 */
	color_lab lab;       /* through the run's pipeline: the light divided out, the camera profile */
	double t_s;          /* the run clock when read, s */
};

/*
 * What the reviewer keeps: of the last observation (review_observed), the
 * references taken at the run's first, and the canvas of the last checkpoint
 * it agreed with. The references and the canvas outlive a process in the run
 * directory's review/ (review_load, review_save).
 */
struct review {
	const struct machine *m;
	struct vis_markers markers;
	/* The last observation. */
	struct img raw;              /* its averaged frame as the camera gave it */
	char frame[REVIEW_NAME_MAX]; /* its name in the run directory */
	double change_levels;        /* mean |difference| from the observation before, code values (-1: none before) */
	char repeat_of[REVIEW_NAME_MAX]; /* an earlier frame whose pixels it repeats exactly ("": none) */
	double corners_px[8];        /* where the run's geometry put the canvas corners */
	struct review_patches now;
	double clock_s;              /* the run clock of the observation being made, s: the caller's to set */
	/* Earlier observations: digests of their pixels (newest last). */
	int n_digests;
	uint64_t digest[REVIEW_DIGESTS];
	char digest_frame[REVIEW_DIGESTS][REVIEW_NAME_MAX];
	/* The references: the patches at the run's first observation that read them. */
	struct review_patches start;
	char start_frame[REVIEW_NAME_MAX];
	/* The patches at the last review that agreed (the lamp's sudden changes are judged from them). */
	struct review_patches agreed;
	char agreed_frame[REVIEW_NAME_MAX];
	/* The canvas (Lab, 1 px/mm) at the last checkpoint agreed with, or the blank canvas. */
	float *canvas;
	int canvas_w, canvas_h;
	int canvas_round;            /* its round and subtask (-1: the blank canvas before the plan) */
	long canvas_sub;
};

void review_init(struct review *rv, const struct machine *m);
void review_free(struct review *rv);

/*
 * Every observation the run makes (canvas or cell): raw the averaged frame
 * as the camera gave it, seen the same with the light divided out (what the
 * run measures), g where the run's geometry puts the canvas in it, p the
 * camera profile, frame its name. Digests the pixels, compares them with the
 * observation before, reads the reference patches; the first patches read
 * become the references.
 */
int review_observed(struct review *rv, const struct img *raw, const struct img *seen,
		    const struct vis_geometry *g, const struct meas_profile *p, const char *frame,
		    bl_err *err);

/* The review of the last observation agreed: its patches are what the lamp's next change is judged from. */
void review_agreed(struct review *rv);

/* The canvas a checkpoint agreed on (or the blank one) becomes what the next checkpoint's changes are judged from. */
int review_baseline(struct review *rv, const float *lab, int w, int h, int round, long sub, bl_err *err);

/* The evidence of a checkpoint: the canvas now and what was painted since the baseline. */
struct review_canvas {
	int w, h;                    /* the baseline's size: the canvas at 1 px/mm */
	const float *now;            /* Lab, w * h * 3 */
	/*
	 * Per pixel, how much the strokes since the baseline covered it in the
	 * planner's model (its footprints, 0..1), and the Lab of the paint laid
	 * there last (w * h * 3). sure: the strokes whose paint is expected are
	 * all there (a process that saw every one); otherwise the footprints are
	 * the plan's batches that ran, the paint unknown (NULL).
	 */
	const float *cover;
	const float *paint;
	/*
	 * Per pixel, 1 where paint laid before the baseline may still have been
	 * wet then (painting.dry_s): wet acrylic reads lighter and darkens as it
	 * dries, a change no stroke since made (NULL: none).
	 */
	const float *settle;
	long strokes;                /* strokes painted since the baseline */
	double paint_ml;             /* paint the brushes took up for them, ml */
};

/* The evidence of a mix verdict: what the cell holds and what the camera measured in it. */
struct review_mix {
	const struct mix_model *model;
	const struct mix_learn *learn; /* what the run learnt of its paints (NULL: the model alone) */
	const int *units;              /* per model paint, in the cell */
	color_lab measured;
	color_lab target;
};

/* One rule's finding. */
struct review_finding {
	const char *rule;            /* its name (review_rules) */
	int judged;                  /* 0: the evidence did not allow it (why says) */
	int agree;
	double figure, threshold;
	char why[240];
};

#define REVIEW_MAX_RULES 8
struct review_result {
	enum review_point point;
	int agree;                   /* every judged rule agrees */
	int n;
	struct review_finding f[REVIEW_MAX_RULES];
};

/*
 * Judges the last observation (and, at a checkpoint, c; at a mix, x) by
 * every rule of the table that applies at point, with the machine's
 * thresholds (review.* in the machine file).
 */
int review_judge(struct review *rv, enum review_point point, const struct review_canvas *c,
		 const struct review_mix *x, struct review_result *out, bl_err *err);

/* {"point", "agree", "rules": [{"rule", "judged", "agree", "figure", "threshold", "why"}]} */
cJSON *review_result_json(const struct review_result *res);

/* The first finding that disagrees, in words ("" when all agree). */
void review_result_why(const struct review_result *res, char *buf, size_t n);

/* The rule table, for docs and tests: name, what it checks, its threshold's machine-file key. */
struct review_rule_info {
	const char *name, *checks, *key;
	unsigned points;             /* 1 << REVIEW_AT_* */
};
int review_rule_count(void);
const struct review_rule_info *review_rule_info(int i);

/* review/ in run directory dir: the references and the canvas agreed on, read back (absent: nothing yet) and written. */
int review_load(struct review *rv, const char *dir, bl_err *err);
int review_save(const struct review *rv, const char *dir, bl_err *err);

#endif
