/* run_int.h: the run engine's insides shared by its files: the run, its state on disk, observation and mixing. */
#ifndef BL_ENGINE_RUN_INT_H
#define BL_ENGINE_RUN_INT_H

#include <limits.h>
#include <stdint.h>

#include "base/digest.h"
#include "base/journal.h"
#include "color/mix.h"
#include "config/machine.h"
#include "config/palette.h"
#include "engine/brakes.h"
#include "engine/run.h"
#include "engine/run_state.h"
#include "plan/plan.h"
#include "plan/plan_image.h"
#include "plan/plan_mix.h"
#include "planner/planner.h"
#include "review/review.h"
#include "review/review_ext.h"
#include "rig/rig.h"
#include "safety/gate.h"
#include "sandbox/sbx.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

#define RUN_PATH_MAX 4096
/*
 * The longest path a run directory may have: its files are named by paths
 * of at most CFG_PATH_MAX - 1 bytes (the machine copy, the simulator's
 * world), the deepest of them (approvals/r000001.answer.json.ignored-MS.json,
 * a temp file beside it) under 64 bytes below it.
 */
#define RUN_DIR_MAX (CFG_PATH_MAX - 64)

/* The files a run writes once and reads back (plan.json, corrections-N.json), bound by digest. */
#define RUN_MAX_BOUND 64
/* A run's id: 32 lowercase hex digits (128 random bits), in run.json, every journal line and state.json. */
#define RUN_ID_LEN 32

/*
 * What the verified journal says happened, gathered in the one pass that
 * checks its chain (run_trust.c): the record a resume trusts over any file.
 */
struct run_record {
	/*
	 * A subtask began, or an arm action other than homing and parking ran. The run
	 * homes, parks and looks at the blank canvas before it plans, and journals
	 * run_start before its first state.json: a run stopped there has touched no
	 * paint, so planning it again repeats nothing physical.
	 */
	int progress;
	int executed;       /* any arm action ran, homing included (the world was saved) */
	long max_action_id; /* the largest action id the gate decided on (-1: none) */
	cJSON *state;       /* the state as the journal's state_saved lines leave it (NULL: none) */
	long state_line;    /* the last state_saved line */
	char state_digest[BL_DIGEST_HEX];
	long want_line;     /* the line state.json names ... */
	char want_digest[BL_DIGEST_HEX];
	int want_seen;      /* ... 1: found with that digest, a state_saved line; -1: another digest or event */
	int n_bound;
	struct run_bound {
		char file[64];
		char sha256[BL_DIGEST_HEX];
		long line;
	} bound[RUN_MAX_BOUND];
};

/* A run in one process. */
struct run {
	char dir[RUN_PATH_MAX];
	char id[RUN_ID_LEN + 16]; /* run.json's id ("": a run from before ids, until adopted) */
	clk pre_clock;           /* the clock of events journaled before the rig is open: none (0) */
	cJSON *saved_state;      /* state.json as last saved, without its journal keys: what the next save diffs */
	struct run_record rec;   /* the journal's record (a resume) */
	char dir_shown[512];     /* dir as messages and STATUS.md show it (bl_name_shown) */
	int lock_fd;             /* RUN_LOCK held: this process owns the directory (-1: not yet) */
	char target_copy[RUN_PATH_MAX];
	struct machine m;        /* as copied into the run directory */
	struct palette pal;
	struct plan_mixer mixer;
	struct planner planner;  /* the built-in planner */
	struct planner ext;      /* an external planner (run --planner, machine planner.command); ops NULL: none */
	struct egress_policy egress; /* its planner.egress */
	char planner_cmd[CFG_PLANNER_CMD_MAX]; /* run --planner, kept in run.json ("": the machine's, if any) */
	struct plan plan;        /* round 0 */
	struct plan corr;        /* the correction plan under way (round >= 1) */
	struct plan_target target;  /* Lab on the planner's grid */
	struct img target_img;   /* the target as decoded, for the canvas comparisons */
	struct rig rig;
	int rig_open;
	struct gate *gate;
	struct journal j;
	struct meas_profile *profile;
	struct vis_light light;  /* calibration.light_map, divided out of every frame */
	int have_light;
	struct vis_lamp *lamp;   /* the board in the run's first frame (lamp.json): the lamp followed from it */
	int lamp_off;            /* the board cannot be seen: the lamp is not followed */
	double lamp_now[3];      /* the light in the last frame against the first, R, G, B */
	double lamp_logged[3];   /* as last journaled */
	struct img first_raw;    /* the first frame as the camera gave it, until the lamp's reference is taken */
	int canvas_checked;      /* calibration.canvas checked against the corner markers at this process's first look */
	cJSON *calib_used;       /* the calibration files loaded: their digests, for run.json */
	struct run_state st;
	struct run_options opt;
	int64_t wall0_ns;        /* this process's start, real clock */
	int64_t heartbeat_ns;    /* the heartbeat's last touch, real clock (0: not yet) */
	double clock_off_s;      /* added to a real clock so the run clock goes on across processes */
	int drying;              /* waiting for paint to dry (progress shows it) */
	double wall_s0;          /* st.wall_s when this process started */
	int64_t last_progress_ns;
	long strokes_at_start;   /* strokes done when this process began (the ETA's rate is this process's) */
	long frames_saved;
	int64_t last_status_ns;  /* STATUS.md rewritten at most every 2 s between subtasks */
	int status_now;          /* rewrite it at the next save */
	unsigned char *last_rgb; /* the last rectified canvas (for operator previews) */
	float *last_lab;         /* the last canvas observation, Lab, last_w x last_h */
	float *before_lab;       /* the canvas before the paint pass under way (NULL: not seen) */
	/*
	 * Whose base before_lab is (round, subtask), and whether it was seen
	 * part way through the batch (a process resumed mid-batch or mid-retry):
	 * such a base judges the batch but teaches nothing.
	 */
	int before_round;
	size_t before_sub;
	int before_partial;
	float *alpha;            /* the batch under way's footprint in the planner's model (plan_batch_alpha) */
	int alpha_w, alpha_h, alpha_round;
	size_t alpha_sub;
	int last_w, last_h;
	float *target_lab;       /* the target as Lab at target_w x target_h (the picture's box), once */
	float *target_other;     /* the target not aimed at: as mapped, or as it is (NULL: nothing to map) */
	int target_w, target_h;
	struct plan_gamut gamut; /* the target's darks mapped into the paints' reach (plan_gamut.c) */
	int budget_stopped;      /* the arm-time budget was spent: the rest is left unpainted */
	int budget_strokes;      /* the plan's strokes as the budget sized them (run.json; 0: not sized) */
	/* The second judge (run_review.c). */
	struct review rv;        /* the built-in reviewer (review.enabled) */
	struct review_ext *rx;   /* the external reviewer (reviewer.command, run --reviewer), NULL: none */
	struct egress_policy rx_egress; /* its reviewer.egress */
	char reviewer_cmd[CFG_PLANNER_CMD_MAX]; /* run --reviewer, kept in run.json ("": the machine's, if any) */
	struct img review_raw;   /* the last observation's average as the camera gave it (before the light is divided out) */
	float *rv_cover, *rv_paint; /* what the strokes since the canvas agreed on covered (0..1), and their paint's Lab */
	float *rv_painted_s;     /* per pixel, when a stroke last covered it (run clock, s; -1: not in this process) */
	double rv_baseline_s;    /* when the canvas was agreed on (run clock, s; -1: not in this process) */
	int rv_w, rv_h;
	long rv_strokes;
	double rv_paint_ml;
	int rv_sure;             /* this process saw every stroke since that canvas */
	int review_overruled;    /* resume --overrule-review: the pending disagreement is settled by a person */
};

/* An error no retry helps (memory, or storage refusing a write): never counted as the camera's or the arm's. */
static inline int run_error_final(int rc)
{
	return rc == BL_ENOMEM || rc == BL_ESTORAGE;
}

/* The plan under way. */
static inline struct plan *run_plan(struct run *r)
{
	return r->st.round == 0 ? &r->plan : &r->corr;
}

/* ---- run_dir.c: the run directory, STATUS.md, the heartbeat ---- */
/* The file whose flock makes a process the one owner of a run directory. */
#define RUN_LOCK "run.lock"
/* The paint a machine well holds, by the palette ("" when none). */
const char *run_well_paint(const struct run *r, int well);
int run_path(const struct run *r, const char *name, char *out, size_t n, bl_err *err);
/* The loop core (run_loop.c): subtasks until the plan ends or a pause, a brake or an error. */
int run_drive(struct run *r, int homed, bl_err *err);
/* How a loop's end (rc) leaves the run: paused, braked, failed or finished, on disk. */
int run_settle(struct run *r, int rc, bl_err *err);
/* Deferred work whose subtask is done or gone is dropped (a resume's first step). */
void run_prune_deferred(struct run *r);

int run_status_write(struct run *r, bl_err *err);   /* STATUS.md */
/*
 * Whether dir's path can hold a run (at most RUN_DIR_MAX bytes, no part
 * longer than a name may be); what names it in the message ("--out").
 */
int run_dir_fits(const struct run *r, const char *what, bl_err *err);
/* run_dir_fits, and the nearest directory of the path that exists may be written: asked before anything is. */
int run_out_possible(const struct run *r, bl_err *err);

/* ---- run_answers.c: what a resume reads back, the operator's answers ---- */
/* An operator's substitute, checked: colour c is to be mixed as lab. */
struct run_substitute {
	int colour;
	color_lab lab;
	double predicted_de00;
	const char *spec;
};

/* run.json read back strictly: the run's id, options, seed and target copy. */
int run_json_read(struct run *r, bl_err *err);
/* run.json's kind, version and the steps that migrate older ones. */
extern const struct json_format run_json_format;
/*
 * state.json read back is well formed; this checks it fits the plan it goes
 * with (subtasks, actions, colours, cells), or BL_EINVAL naming the key.
 */
int run_state_fits_plan(struct run *r, bl_err *err);
/* The operator's substitutes in the plans under way (plan.json keeps what was planned). */
void run_apply_substitutes(struct run *r);
/*
 * The operator's answers on the command line (--accept-mix, --substitute),
 * checked before anything moves or is journaled; subs receives the checked
 * substitutes, one per o->substitute.
 */
int run_answers_check(struct run *r, const struct run_options *o, struct run_substitute *subs, bl_err *err);
/* Colours the operator accepted (list: "c3,c5" or "all"), journaled. */
int run_answers_accept(struct run *r, const char *list, bl_err *err);
/* Takes a checked substitute: journaled, or not taken. The colour's mix is then tried again. */
int run_substitute_take(struct run *r, const struct run_substitute *sb, bl_err *err);

/* ---- run_correct.c: the plans asked for, correction rounds ---- */
/* The planner's inputs and options for this run (its machine, mixer, target, --max-strokes, --colours). */
void run_plan_inputs(struct run *r, struct plan_inputs *in);
void run_plan_options(const struct run *r, struct plan_options *po);

/* ---- run_budget.c: the night's arm-time budget ---- */
/* The budget, s: run --arm-hours, else painting.arm_hours; never past brakes.arm_time_s. */
double run_budget_s(const struct run *r);
/* The arm time a plan whose own motion takes plan_arm_s is expected to take on its machine. */
double run_expected_arm_s(int open_loop, double plan_arm_s);
/*
 * r->plan made for in and po with as many strokes as fit in the budget by
 * the expected arm time (at most r->opt.max_strokes when given), and the
 * plan's own arm time. r->m, r->mixer and r->target are loaded.
 */
int run_budget_plan(struct run *r, const struct plan_inputs *in, struct plan_options *po,
		    double *plan_arm_s, bl_err *err);
/* The strokes of a plan's painting subtasks. */
long run_plan_strokes(const struct plan *p);
/* Loads correction round round's plan (corrections-N.json) into r->corr; round 0 has none. */
int run_correction_load(struct run *r, int round, bl_err *err);
/* Plans corrective strokes from the last observation; 1 when there is nothing left to correct. */
int run_correction_plan(struct run *r, bl_err *err);

/* ---- run_trust.c: what a resume trusts ---- */
/* Adds "inputs" to run.json: the SHA-256 of the run's machine.json, palette.json and target copy. */
int run_inputs_add(const struct run *r, cJSON *run_json, bl_err *err);
/*
 * Compares the copies with run.json's hashes: a change is refused (BL_EINVAL
 * naming each file and, for JSON, the keys that differ, old -> new) unless
 * opt.accept_changed, which journals the differences (inputs_changed) and
 * makes the copies as they are now the run's.
 */
int run_inputs_verify(struct run *r, bl_err *err);
/*
 * Opens the run's journal (r->j) with the run's id, verifying its chain
 * from the first line (journal_open_run; existing: a missing one is
 * refused), and gathers its record into r->rec in the same pass.
 */
int run_journal_open(struct run *r, int existing, bl_err *err);
/*
 * What a resume trusts before it reads anything else of the run: no link
 * leads out of its directory (run_links_inside), a run from before ids is
 * given one (run.json rewritten), the journal is verified and opened
 * (run_journal_open: a missing one refused), and the inputs are the ones
 * the run started with (run_inputs_verify).
 */
int run_trust_open(struct run *r, bl_err *err);
void run_record_free(struct run_record *rec);
/*
 * From the record: a missing plan.json (or state.json the journal cannot
 * rebuild) while the journal shows the run under way, a plan.json or
 * corrections-N.json whose digest is not the one the run journaled when it
 * wrote it (file_written), or a missing world.sim (the simulator's canvas)
 * after arm actions: BL_EINVAL naming it, never a fresh start.
 */
int run_files_present(struct run *r, bl_err *err);
/*
 * Loads the state a resume goes on from: state.json when it reflects the
 * journal's last saved state (read strictly: a damaged one is refused); the
 * journal's own (its state_saved lines) when state.json is missing, behind
 * or differs, journaled as state_rebuilt. A state of another run, or one
 * ahead of the journal or naming a line the journal does not have, is
 * refused naming both. 1 when there is no state at all (a run stopped
 * before its first), else 0 or an error.
 */
int run_state_trusted(struct run *r, bl_err *err);
/* Takes next_action_id from the journal when the journal is ahead of state.json (journaled). */
int run_state_catch_up(struct run *r, bl_err *err);
/*
 * Every entry of the run directory that is a symbolic link leading out of
 * it (approvals/ or world.sim linked to another run's) is refused, BL_EINVAL
 * naming it and where it leads.
 */
int run_links_inside(const struct run *r, bl_err *err);
/* Journals that the run wrote file name (in its directory), with its SHA-256: a resume checks it (file_written). */
int run_file_written(struct run *r, const char *name, bl_err *err);
/* A new run's id: RUN_ID_LEN random hex digits. */
int run_id_new(char *out, size_t n, bl_err *err);

/* ---- run_observe.c: the camera, through the calibrated pipeline ---- */

/* A canvas observation: Lab over the whole canvas, 1 px/mm, plan orientation (y along machine y). */
struct run_canvas {
	int w, h;      /* px = mm */
	float *lab;    /* w * h * 3 */
	char frame[RUN_PATH_MAX]; /* frames/ file the verdict rests on */
};
void run_canvas_free(struct run_canvas *c);
int run_observe_canvas(struct run *r, const char *what, struct run_canvas *out, bl_err *err);
/*
 * Before the first paint (run_repeat.c): the blank canvas and the first
 * mixing cell observed camera.repeat_observations times; their spread (the
 * canvas's 10 mm cells at the 95th percentile, the cell) is journaled
 * (camera_check) and, beyond camera.repeat_max_fraction of
 * tolerances.mix_de00, refuses an unattended run (BL_EINVAL naming it) or
 * warns an attended one.
 */
int run_camera_check(struct run *r, bl_err *err);
/* Loads the lamp's reference of a run that has one (lamp.json), for a resumed run. */
int run_lamp_load(struct run *r, bl_err *err);
/* The stirred content of a mixing cell. */
int run_observe_cell(struct run *r, const char *cell, color_lab *out, char *frame, size_t n,
		     bl_err *err);
/* Mean Lab of canvas mm box [x0, x1) x [y0, y1) (plan canvas mm) in an observation. */
int run_canvas_mean(const struct run_canvas *c, double x0, double y0, double x1, double y1,
		    color_lab *out);
/*
 * The observation against the target over the picture: mean and p95
 * CIEDE2000 on the plan's grid; against the picture as it is (original), or
 * as mapped into the paints' reach, which the run aims at.
 */
int run_canvas_vs_target(struct run *r, const struct run_canvas *c, int original, double *mean,
			 double *p95, bl_err *err);
/*
 * What of the target lies beyond the paints (r->gamut), and with
 * painting.map_gamut the planner's target (r->target) mapped into their
 * reach: the plan, the corrections and the checkpoints then aim at it. The
 * morning figures are against the picture as it is and as mapped.
 */
int run_gamut_map(struct run *r, bl_err *err);
/* The distance the morning figure is seen from (canvas.scielab_1m). */
#define RUN_VIEW_DISTANCE_MM 1000.0
/* The observation against the target as a person sees it: per pixel and S-CIELAB from 1 m. */
int run_canvas_seen(struct run *r, const struct run_canvas *c, int original, double *pixel_de00,
		    double *scielab, bl_err *err);
/* The observation over the picture's rectangle as a planner raster (for plan_correct). */
int run_canvas_to_raster(const struct run *r, const struct run_canvas *c, struct plan_raster *out,
			 bl_err *err);
/* The final canvas as PNG (sRGB) beside the target. */
int run_canvas_save_png(const struct run_canvas *c, const char *path, bl_err *err);

/* ---- run_progress.c: engine events, brakes, the progress line ---- */
/* Journals an engine event in the current subtask; data consumed. Errors are fatal to the run. */
int run_event(struct run *r, const char *event, cJSON *data, bl_err *err);
/* The brake fired: state "braked" with its reason. */
int run_brake(struct run *r, enum run_brake b, bl_err *err);
void run_progress(struct run *r, int force);
void run_subtask_name(const struct run *r, size_t i, char *out, size_t n);

/* ---- run_paint.c: paint batches, verified and retried ---- */
/* A verified subtask's end condition over plan cells (paint, checkpoint): adds cells and verified_by to expected. */
void run_cells_expected(const struct plan_subtask *s, cJSON *e);
/* Executes one action of a plan, with the colour's actual cell where it dips. */
int run_plan_action(struct run *r, const struct plan_subtask *s, const struct arm_action *a,
		    bl_err *err);

/* ---- run_verify.c: a subtask's cells observed against their prediction ---- */
/* Observes the canvas, records it in the history; verdict: mean CIEDE2000 of s's cells against their prediction. */
int run_observe_record(struct run *r, const struct plan_subtask *s, const char *what,
		       struct run_canvas *c, double *verdict, bl_err *err);
/*
 * CIEDE2000 of s's cells observed in c against what they should be: before
 * (the canvas seen before the batch, NULL: the planner's prediction) moved
 * by the batch's share towards its colour; per_cell (n_cells, or NULL) gets
 * each cell's (-1 where c has none). Returns their mean (0: none seen).
 */
double run_cells_verdict(const struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
			 const float *before, double *per_cell);
/* The film of paint a brush does not pick up off a mixing cell's floor, ml. */
#define RUN_CELL_FILM_ML 0.2
/*
 * The Lab colour k's paint is expected to have before the canvas taught its
 * look: the plan's (or the operator's substitute), except for a mix accepted
 * off its target (by a person or unattended.accept_within_de00), which is what
 * the camera measured in its cell. Judged against the plan's colour, each of
 * its batches would fail by the distance that was accepted.
 */
color_lab run_colour_paint(const struct run *r, int k);
/* Learns from an observation of s how its colour looks on the canvas (cells it repainted nearly whole). */
void run_learn_canvas(struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
		      const float *before);
/* Learns how much s's colour repaints against the plan's share (cells it repainted in part). */
void run_learn_hiding(struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
		      const float *before);

/* ---- run_planner.c: the planner, asked and answered ---- */
/*
 * The run's planners: the built-in, and the external one when run --planner
 * or the machine's planner.command names it (its egress policy parsed, the
 * sandbox probed: BL_EINVAL when it cannot be made, and it is never run).
 */
int run_planner_open(struct run *r, bl_err *err);
/*
 * Asks the run's planner (q->in, q->opt filled by the caller; seen: the
 * canvas observed for a correction, NULL for the painting), counts the call
 * and its wall time in the cost, and admits the answer (planner_admit);
 * journals planner_answer, or planner_denied with the reason, and the
 * planner's claims. An external planner's answer refused (or its budget
 * spent) falls back to the built-in one (planner_fallback) or pauses the run
 * (BL_EPAUSED with the reason), as planner.on_failure says. A built-in
 * answer refused is BL_EINVAL naming the reason: out holds nothing.
 */
int run_planner_ask(struct run *r, const struct planner_request *q, const struct run_canvas *seen,
		    struct plan *out, bl_err *err);
/* The built-in planner alone, as run_planner_ask does. */
int run_planner_ask_builtin(struct run *r, const struct planner_request *q, struct plan *out, bl_err *err);

/* ---- run_review.c: the second judge ---- */
/* Opens the reviewer: its references from review/ in the run directory, the external reviewer (sandbox probed). */
int run_review_open(struct run *r, bl_err *err);
void run_review_close(struct run *r);
/* Every observation: the average as the camera gave it (before the light is divided out), kept for the reviewer. */
int run_review_raw(struct run *r, const struct img *avg, bl_err *err);
/* Every observation, located: seen the same average with the light divided out, g where the canvas lies. */
int run_review_observed(struct run *r, const struct img *seen, const struct vis_geometry *g, const char *frame,
			bl_err *err);
/* The canvas the next checkpoint's changes are judged from (the blank one: sub -1), saved in review/. */
int run_review_baseline(struct run *r, const struct run_canvas *c, long sub, bl_err *err);
/* A paint batch's pass is done: its footprint and paint join what the next checkpoint judges. */
void run_review_painted(struct run *r, const struct plan_subtask *s);
/*
 * A checkpoint's verdict (verdict against s's tolerance, on canvas c) and a
 * mix's (the colour's last measurement), reviewed: 0 when the reviewer agrees
 * (or a person overruled it), else journaled with both judges' figures and
 * BL_EPAUSED or BL_EBRAKE as review.on_disagreement (or run --on-disagreement) says.
 */
int run_review_checkpoint(struct run *r, const struct plan_subtask *s, const struct run_canvas *c, double verdict,
			  bl_err *err);
int run_review_mix(struct run *r, const struct plan_subtask *s, bl_err *err);

/* ---- run_mix.c ---- */
/* A mix (or top-up) of s's colour, its outcome in sub. */
int run_mix(struct run *r, const struct plan_subtask *s, struct run_sub *sub, bl_err *err);
/* The mix subtask a top-up of colour repeats (st.topup_ml of it); -1 when the plans have none. */
int run_mix_topup_subtask(struct run *r, int colour, struct plan_subtask *out);
/* ---- run_cells.c: wells and mixing cells ---- */
/* The machine's cell (well) of that name by index; -1 when it has none. */
int run_cell_index(const struct machine *m, const char *name);
int run_well_index(const struct machine *m, const char *name);
/* What mixing cell cell holds now, ml: the colour in it (st.colours' cell_ml); a clean cell, 0. */
double run_cell_held_ml(const struct run *r, const char *cell);
/*
 * The one place that decides how much may go into a mixing cell: 0 when
 * what it holds and ml more stay within mixing.cell_max_ml, else BL_EPAUSED
 * saying so. Every dispense passes it (op_dispense for a whole set, each
 * dispense before it runs); a cell cleaned (resume --emptied) holds 0 again.
 */
int run_cell_admit(const struct run *r, const char *cell, double ml, bl_err *err);
/* resume --emptied CELLS ("m3,m12", "all"): a person cleaned them; each is clean again, its colour's paint gone (journaled). */
int run_cells_emptied(struct run *r, const char *list, bl_err *err);
/* Completes a dispense set a crash interrupted (never repeating one that may have run). */
int run_mix_finish_pending(struct run *r, bl_err *err);
/*
 * Before a dispense set (units per palette paint): every well it draws on
 * holds what it needs and a reserve. If not, journals `well_low`, marks the
 * run paused for a refill and returns BL_EPAUSED naming the well, what is
 * left and what is needed.
 */
int run_wells_check(struct run *r, const int *units, bl_err *err);
/*
 * What well w must keep: a pump cannot draw its last film, and the count
 * drifts by every unit's spread (sim.dispense_sd on the simulator): a
 * twentieth of the well, at least half a millilitre.
 */
double run_well_reserve_ml(const struct machine *m, int w);
/* resume --refilled WELLS ("w1,w3", "all"): the operator refilled them; the simulator's too. */
int run_wells_refilled(struct run *r, const char *list, bl_err *err);

#endif
