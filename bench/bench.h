/* bench.h: built-in benchmarks for `brushloop bench`: each measures one figure, the runner reports the median. */
#ifndef BL_BENCH_BENCH_H
#define BL_BENCH_BENCH_H

#include "base/err.h"
#include "base/prof.h"

struct bench_case {
	const char *name;  /* part.figure_unit, e.g. "sim.render_720p_ms" */
	const char *unit;  /* "ms", "s", "ns", ... */
	int runs;          /* default number of runs; the median is reported */
	/*
	 * One measurement: fills *value in unit. Setup that is not part of the figure goes
	 * outside the timed region. quick (`bench --quick`): the smallest inputs that still
	 * take the benchmark's whole code path, to show it runs; its value is no figure.
	 */
	int (*run)(double *value, int quick, bl_err *err);
};

/* Every benchmark, ending with a zeroed entry. Parts add theirs here. */
extern const struct bench_case bench_cases[];

/*
 * `bench --phases`: the night benchmarks count where their runs' time goes
 * (base/prof.h) into bench_phase_sum, each run's figures scaled as its own
 * figure is, and bench_phase_runs counts them; the runner prints and clears
 * them after each benchmark.
 */
extern int bench_phases;
extern struct prof_totals bench_phase_sum;
extern int bench_phase_runs;

/* Median of n values (sorts them in place). */
double bench_median(double *v, int n);

/* Real monotonic time in ms, for timing inside a benchmark. */
double bench_now_ms(void);

/* The benchmarks of each part. */
int bench_color_de2000(double *value, int quick, bl_err *err);
int bench_config_load(double *value, int quick, bl_err *err);
int bench_safety_check_stroke(double *value, int quick, bl_err *err);
int bench_journal_chain_line(double *value, int quick, bl_err *err);
int bench_journal_verify_line(double *value, int quick, bl_err *err);
int bench_safety_decision_json(double *value, int quick, bl_err *err);
int bench_safety_gate_check_4k(double *value, int quick, bl_err *err);
int bench_safety_gate_check_100k(double *value, int quick, bl_err *err);
int bench_mix_solve(double *value, int quick, bl_err *err);
int bench_vision_observe(double *value, int quick, bl_err *err);
int bench_vision_jpeg_decode(double *value, int quick, bl_err *err);
int bench_vision_de_map(double *value, int quick, bl_err *err);
int bench_calib_camera(double *value, int quick, bl_err *err);
int bench_arm_kin_scara(double *value, int quick, bl_err *err);
int bench_sim_render(double *value, int quick, bl_err *err);
int bench_sim_overnight(double *value, int quick, bl_err *err);
int bench_sim_night_real(double *value, int quick, bl_err *err);
int bench_plan_strokes(double *value, int quick, bl_err *err);
int bench_serve_run_page(double *value, int quick, bl_err *err);
int bench_serve_event(double *value, int quick, bl_err *err);
/* A fresh sandbox per phase: start, one line answered, teardown (wall, and the host's CPU with its children's). */
int bench_sandbox_start(double *value, int quick, bl_err *err);
int bench_sandbox_start_cpu(double *value, int quick, bl_err *err);
/* The second judge: an observation's bookkeeping, a checkpoint's rules, one external reviewer's call. */
int bench_review_observe(double *value, int quick, bl_err *err);
int bench_review_checkpoint(double *value, int quick, bl_err *err);
int bench_review_external(double *value, int quick, bl_err *err);

#endif
