/* run.h: the run engine: a painting run from a target to a verified canvas, on disk in a run directory, resumable after any crash. */
#ifndef BL_ENGINE_RUN_H
#define BL_ENGINE_RUN_H

#include <stdint.h>

#include <cJSON.h>

#include "base/err.h"
#include "vision/light.h"

#define RUN_MAX_FAULTS 16
/* The run directory's folder report.html draws its pictures into, where a run also keeps its supply check's estimate. */
#define RUN_REPORT_DIR "report"
#define RUN_MAX_SUBSTITUTES 32

struct machine;
struct meas_profile;

/*
 * What the calibration files a machine names gave a run: from the one
 * validator `config check` uses too (calib_for_run, in calib/, above the
 * engine), which has already warned of what warnings says.
 */
struct run_calibration {
	struct meas_profile *profile;  /* always set: the camera profile, or sRGB when none is named */
	int has_light;
	struct vis_light light;        /* calibration.light_map */
	int too_old;                   /* files older than calibration.max_age_h */
	char warnings[1024];           /* forced results, old files ("" none) */
	cJSON *files;                  /* {KEY: {"file", "sha256", "verdict", "created"}}, for run.json */
};

/* How a run is started (run_start) or continued (run_resume: only the switches marked so count). */
struct run_options {
	const char *target;        /* the picture to paint */
	const char *machine_path;  /* machine file (copied into the run directory) */
	const char *palette_path;  /* palette file (copied too) */
	const char *out_dir;       /* the run directory: created, must be empty or absent */
	uint64_t seed;             /* simulator seed */
	int open_loop;             /* the same plan, no verification and no correction */
	int max_strokes;           /* planner's stroke budget (0: as many as the arm-time budget buys) */
	double arm_hours;          /* run: the night's arm-time budget, h (0: the machine's painting.arm_hours) */
	int colours;               /* planner's colour count (0: as many as the target needs) */
	int n_faults;              /* simulator fault overrides "KEY=VALUE" (run and resume) */
	const char *faults[RUN_MAX_FAULTS];
	int quiet;                 /* run and resume: no progress lines */
	int progress_fd;           /* run and resume: where progress goes (-1: stderr) */
	int progress_live;         /* run and resume: a live line (terminal) rather than plain lines */
	int attended;              /* run and resume: ask at the terminal instead of deferring */
	int accept_nearest;        /* run: the operator accepts beforehand the nearest mix the loop reaches */
	int refill_ok;             /* run: start although the wells cannot supply the plan (it pauses to refill) */
	const char *accept_mix;    /* resume: colours whose nearest reachable mix the operator accepts ("c3,c5", "all") */
	const char *refilled;      /* resume: wells the operator has refilled ("w1,w3", "all") */
	const char *emptied;       /* resume: mixing cells the operator has emptied and cleaned ("m3,m12", "all") */
	int n_substitute;          /* resume: colours the operator substitutes, "c3=lab:80,0,10" or "c3=c1" */
	const char *substitute[RUN_MAX_SUBSTITUTES];
	const char *answered_by;   /* resume: who gives these answers, journaled with the resume (NULL: not said) */
	int accept_changed;        /* resume: go on with a changed machine, palette or target (journaled) */
	long stop_after_actions;   /* tests: pause as if signalled after this many arm actions (0: never) */
	const char *planner;       /* run: "COMMAND ARGS" of an external planner (NULL: the machine's planner.command, else the built-in) */
	const char *reviewer;      /* run: "COMMAND ARGS" of an external reviewer (NULL: the machine's reviewer.command, if any) */
	int on_disagreement;       /* run: 1 + enum machine_review_action when the second judge disagrees (0: review.on_disagreement) */
	int overrule_review;       /* resume: a person has looked at the reviewer's disagreement and the run's verdict stands */
	/*
	 * What the engine needs from the parts above it (it includes none of
	 * them: HACKING.md's layers), handed in by whoever starts or resumes a
	 * run. calibration (calib_for_run) is required; report (report_for_run)
	 * draws report.html when the process's run ends (NULL: none). A
	 * calibration that fails may leave *out partly filled: the engine frees
	 * what it holds.
	 */
	int (*calibration)(const struct machine *m, struct run_calibration *out, bl_err *err);
	int (*report)(const char *dir, bl_err *err);
};

void run_options_init(struct run_options *o);

/*
 * The plan for o sized to its arm-time budget (*strokes, the estimate's)
 * and, unless o->refill_ok, whether the machine's wells, full, hold the
 * paint it is expected to need (the estimate's, retries included) and the
 * reserve a pump cannot draw: 0, or BL_EINVAL naming every well that falls
 * short and the ml it lacks. *estimate (may be NULL) gets the estimate it
 * priced (run_estimate's), the caller's to free, when it returns 0.
 */
int run_supply_check(const struct run_options *o, const struct machine *m, int *strokes,
		     cJSON **estimate, bl_err *err);

/*
 * Plans target, creates the run directory and paints until the plan and its
 * corrections are done. Returns 0 (finished, the final canvas verified),
 * BL_EPAUSED (waiting for an operator, or a signal), BL_EBRAKE (a brake; the
 * reason is in STATUS.md), BL_ESAFETY, or an error. Whatever it returns, the
 * run directory says where it stands.
 */
int run_start(const struct run_options *o, bl_err *err);

/* Continues the run in dir from state.json and the journal. Returns as run_start. */
int run_resume(const char *dir, const struct run_options *o, bl_err *err);

/*
 * Makes this process the one that drives run directory dir (run, resume,
 * sim exec --run): an flock on dir/run.lock, held while *fd is open and
 * released by the kernel on any death. A second driver gets BL_EINVAL naming
 * the holder's pid. status, approve and grant only read or add their own
 * files and take no lock.
 */
int run_dir_own(const char *dir, int *fd, bl_err *err);

/*
 * Where a run stands, from its files alone (it may be running): {"state",
 * "phase", "subtask", "canvas": {"mean_de00", "p95_de00"}, "mixes", "cost",
 * "heartbeat": {"age_s", "stale"}, ...}.
 */
int run_status(const char *dir, cJSON **out, bl_err *err);

/*
 * A run that says it is running but whose heartbeat is stale: a banner at the
 * top of its STATUS.md, for the person who reads it (the engine rewrites
 * STATUS.md whole, so a live run replaces it).
 */
int run_status_mark_stale(const char *dir, double age_s, double limit_s, bl_err *err);

/* What painting target would take, priced with the machine's rates (see docs/run.md). */
int run_estimate(const struct run_options *o, cJSON **out, bl_err *err);

#endif
