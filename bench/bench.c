/* bench.c: the table of built-in benchmarks and the helpers they share. */
#include "bench/bench.h"

#include <stdlib.h>

#include "base/clock.h"

const struct bench_case bench_cases[] = {
	{ "color.de2000_ns", "ns", 7, bench_color_de2000 },
	{ "config.machine_load_ms", "ms", 7, bench_config_load },
	{ "safety.check_stroke_1k_us", "us", 9, bench_safety_check_stroke },
	{ "safety.decision_json_us", "us", 7, bench_safety_decision_json },
	{ "safety.gate_check_4k_ms", "ms", 7, bench_safety_gate_check_4k },
	{ "safety.gate_check_100k_ms", "ms", 7, bench_safety_gate_check_100k },
	{ "journal.chain_line_us", "us", 7, bench_journal_chain_line },
	{ "journal.verify_line_us", "us", 7, bench_journal_verify_line },
	{ "mix.solve_ms", "ms", 7, bench_mix_solve },
	{ "vision.observe_1080p_ms", "ms", 15, bench_vision_observe },
	{ "vision.jpeg_decode_1080p_ms", "ms", 15, bench_vision_jpeg_decode },
	{ "vision.de_map_ms", "ms", 15, bench_vision_de_map },
	{ "calib.camera_session_ms", "ms", 7, bench_calib_camera },
	{ "arm.kin_scara_inverse_ns", "ns", 7, bench_arm_kin_scara },
	{ "sim.render_720p_ms", "ms", 21, bench_sim_render },
	{ "sim.overnight_s", "s", 3, bench_sim_overnight },
	{ "sim.night_real_s", "s", 3, bench_sim_night_real },
	{ "plan.strokes_2000_s", "s", 5, bench_plan_strokes },
	{ "serve.run_page_ttfb_ms", "ms", 21, bench_serve_run_page },
	{ "serve.event_after_change_ms", "ms", 11, bench_serve_event },
	{ "sandbox.start_ms", "ms", 21, bench_sandbox_start },
	{ "sandbox.start_cpu_ms", "ms", 21, bench_sandbox_start_cpu },
	{ "review.observe_ms", "ms", 15, bench_review_observe },
	{ "review.checkpoint_ms", "ms", 15, bench_review_checkpoint },
	{ "review.external_call_ms", "ms", 11, bench_review_external },
	{ NULL, NULL, 0, NULL },
};

int bench_phases;
struct prof_totals bench_phase_sum;
int bench_phase_runs;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0.0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_now_ms(void)
{
	return (double)clk_real_ns() * 1e-6;
}
