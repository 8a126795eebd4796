/* prof.h: where a process's time goes: wall and CPU seconds per phase of a run, for `brushloop bench --phases`. */
#ifndef BL_BASE_PROF_H
#define BL_BASE_PROF_H

/*
 * The phases a simulated night is made of, each (id, name). Time is charged
 * to the innermost phase entered, so the phases add up to the whole; time
 * in none is "other". Off unless prof_enable(1): then each switch costs two
 * clock reads (a few hundred ns), too little to change what it measures.
 * One thread enters and leaves phases (the run's); the CPU seconds are the
 * process's, so work a phase hands to helper threads counts in it.
 */
#define PROF_PHASES(X)                                                                            \
	X(OTHER, "other")       /* in no phase below: the loop, the executor's bookkeeping */     \
	X(PLAN, "plan")         /* planning and pricing: plans, corrections, the estimate */      \
	X(EXECUTE, "execute")   /* the simulated arm and paint, the world saved after each step */ \
	X(RENDER, "render")     /* the simulated camera shading a frame */                         \
	X(ENCODE, "encode")     /* the simulated camera's JPEG encoding */                         \
	X(DECODE, "decode")     /* JPEG decoding of a captured frame */                            \
	X(MEASURE, "measure")   /* averaging, light, rectification, Lab, verdicts */               \
	X(FRAMES, "frames")     /* the averaged frames saved in frames/ */                         \
	X(JOURNAL, "journal")   /* journal lines written and synced */                             \
	X(STATE, "state")       /* state.json written */                                           \
	X(STATUS, "status")     /* STATUS.md and the heartbeat */                                  \
	X(REPORT, "report")     /* report.html and its pictures */

#define PROF_ENUM(id, name) PROF_##id,
enum prof_phase { PROF_PHASES(PROF_ENUM) PROF_COUNT };
#undef PROF_ENUM

extern const char *const prof_phase_names[PROF_COUNT];

struct prof_totals {
	double wall_s[PROF_COUNT];
	double cpu_s[PROF_COUNT];
};

/* Starts (on) or stops counting; starting clears the totals. */
void prof_enable(int on);

/* Enters phase p; returns the phase it interrupts, to give back to prof_leave. */
enum prof_phase prof_enter(enum prof_phase p);

/* Leaves the phase entered last, back to prev (what prof_enter returned). */
void prof_leave(enum prof_phase prev);

/* The totals so far (the phase under way charged up to now). */
void prof_read(struct prof_totals *t);

#endif
