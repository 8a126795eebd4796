/* report_int.h: the report's insides: what it reads from a run directory, the pictures it draws, the page's pieces. */
#ifndef BL_REPORT_REPORT_INT_H
#define BL_REPORT_REPORT_INT_H

#include <cJSON.h>

#include "base/strbuf.h"
#include "color/color.h"
#include "config/machine.h"
#include "plan/plan.h"
#include "report/report.h"

#define REPORT_PATH_MAX 4200

/*
 * A run as its files tell it. The lists are JSON made here (not the files'
 * own objects), each item with what its section shows:
 *   obs:    observations of the whole canvas: {"what": blank|checkpoint|final,
 *           "subtask", "seq", "t_s", "frame", "mean", "p95", "predicted",
 *           "verdict", "canvas", "map"} (the last two: pictures in report/)
 *   mixes:  per colour of the plan, {"colour", "lab", "accepted_by" (when
 *           a rule, a flag or a person accepted it short of its tolerance),
 *           "attempts": [the mix_measured data with "subtask", "seq", "t_s",
 *           "thumb" (its frame's thumbnail in report/)]}
 *   looks:  every look at the whole canvas, on the run clock: obs's
 *           (references) and each paint batch's verification, {"what":
 *           "paint batch", "subtask", "seq", "t_s", "frame", "mean", "p95":
 *           -1}; the last one's "canvas" and "map" are drawn too
 *   spans:  the subtasks on the run clock: {"subtask", "type", "colour",
 *           "round", "t0", "t1", "status", "verdict"}
 *   notes:  the operator's business: {"seq", "t_s", "subtask", "event",
 *           "kind", "text"}
 */
struct report {
	char dir[4096];
	cJSON *status;        /* run_status: state, reason, cost, wells, history */
	cJSON *run;           /* run.json */
	cJSON *estimate;      /* run_estimate of the run's own inputs (cached in report/estimate.json) */
	double estimate_s;    /* spent pricing it now */
	struct machine m;     /* machine.json */
	struct plan plan;     /* plan.json (empty when the run stopped before it had one) */
	int have_plan;
	int box[4];           /* the picture's rectangle on the canvas, x, y, w, h in mm (1 px/mm), the plan's or as it would place it */
	double cell_mm;       /* the error maps' cells: the plan's, or the planner's default */
	char target[256];     /* the target's copy in the run directory */
	cJSON *obs, *looks, *mixes, *spans, *notes;
	cJSON *refills;       /* {"w1": ml the operator's refills added, ...} */
	cJSON *requests;      /* approvals/: [{"id", "status", "kind", "why", "answer", "by", "wall_ms", "preview"}] */
	long events;          /* journal lines read */
	long bad_lines;       /* journal lines that did not parse (torn by a crash) */
	long reviews, review_disagreed, review_overruled; /* the second judge's reviews (docs/review.md) */
	double t_end_s;       /* the run clock at the last event */
	int images, drawn;    /* pictures the page shows, and drawn now */
	const char *missing;  /* set by report_img_tag when a picture named is absent */
	char missing_buf[REPORT_PATH_MAX];
};

/* report_read.c: every file the report rests on, read and checked; BL_EINVAL names the first bad one. */
int report_load(struct report *r, const char *dir, bl_err *err);
void report_free(struct report *r);
/* A number of o's key, or dflt when absent or not a number. */
double report_num(const cJSON *o, const char *key, double dflt);
/* A string of o's key, or "" when absent. */
const char *report_str(const cJSON *o, const char *key);

/*
 * report_img.c: the pictures the page embeds, drawn into report/ once: the
 * target, the canvas and its CIEDE2000 map at every observation (each over
 * the picture's rectangle at 1 px/mm), the mix frames' thumbnails, the legend.
 */
int report_images(struct report *r, bl_err *err);

/* report_svg.c: plots drawn as inline SVG. */
void report_svg_mix(strbuf *sb, const cJSON *attempts, double tolerance);
/* The canvas's mean and 95th percentile at each look (looks' "t_s", "mean", "p95"; -1: not measured). */
void report_svg_history(strbuf *sb, const cJSON *looks, double t_end_s);
/* Horizontal bars: per row a value, an expected mark and a limit (either may be negative: none). */
struct report_bar {
	const char *label;
	double value, expected, limit;
	unsigned char rgb[3];
	char note[64];
};
void report_svg_bars(strbuf *sb, const struct report_bar *rows, int n, const char *unit);
void report_svg_timeline(strbuf *sb, const struct report *r);

/* report_html.c helpers shared with the plots. */
void report_esc(strbuf *sb, const char *s);
/* A Lab colour as sRGB bytes (out of gamut clipped). */
void report_lab_rgb(const double lab[3], unsigned char rgb[3]);
/* The Lab of a JSON array of three numbers (0 when it is not one); 0 or -1. */
int report_lab(const cJSON *arr, double lab[3]);

#endif
