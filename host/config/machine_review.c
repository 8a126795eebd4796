/* machine_review.c: the machine file's review section (the built-in reviewer's thresholds, what a disagreement does) and reviewer section (an external reviewer), and the sandbox keys the reviewer and the planner share. */
#include <string.h>

#include "base/json.h"
#include "config/machine.h"
#include "config/machine_int.h"

const char *const machine_review_action_names[] = { "pause", "brake", NULL };
_Static_assert(sizeof(machine_review_action_names) / sizeof(machine_review_action_names[0]) ==
		       MACHINE_REVIEW_ACTION_COUNT + 1,
	       "a disagreement action without a name");

int machine_load_sandbox_keys(json_obj *o, double *cpu_s, long *memory_mb, int *tmpfs_mb, char *egress,
			      size_t egress_n, bl_err *err)
{
	const cJSON *eg;
	double mb = 0;

	BL_TRY(json_num(o, "cpu_s", JSON_OPTIONAL, 1.0, 86400.0, cpu_s, err));
	BL_TRY(json_num(o, "memory_mb", JSON_OPTIONAL, 64, 1048576, &mb, err));
	*memory_mb = (long)mb;
	BL_TRY(json_i32(o, "tmpfs_mb", JSON_OPTIONAL, 1, 65536, tmpfs_mb, err));
	/* Read here as text; the sandbox module's strict reader checks it before a run starts. */
	if ((eg = json_take(o, "egress"))) {
		char *s = cJSON_PrintUnformatted(eg);

		if (!s || strlen(s) >= egress_n) {
			cJSON_free(s);
			return json_fail(o, "egress", err, BL_EINVAL, "is longer than %zu bytes", egress_n - 1);
		}
		memcpy(egress, s, strlen(s) + 1);
		cJSON_free(s);
	}
	return 0;
}

/*
 * The defaults are set from the generated and real sets at default settings
 * (docs/review.md says what they measured): none of those runs disagreed.
 */
int machine_load_review(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_review *v = &m->review;
	json_obj o;
	int rc;

	v->enabled = 1;
	v->on_disagreement = MACHINE_REVIEW_PAUSE;
	v->frame_min_change = 0.05;
	v->marker_shift_px = 4.0;
	v->lamp_change = 0.25;
	v->lamp_drift_per_h = 0.05;
	v->reference_de00 = 3.0;
	v->min_landed = 0.1;
	v->unpainted_change_de00 = 6.0;
	v->mix_model_de00 = 12.0;
	if ((rc = json_child(root, "review", JSON_OPTIONAL, &o, err)))
		return rc < 0 ? rc : 0;
	BL_TRY(json_bool(&o, "enabled", JSON_OPTIONAL, &v->enabled, err));
	BL_TRY(json_enum(&o, "on_disagreement", JSON_OPTIONAL, machine_review_action_names, &v->on_disagreement,
			 err));
	BL_TRY(json_num(&o, "frame_min_change", JSON_OPTIONAL, 0.0, 50.0, &v->frame_min_change, err));
	BL_TRY(json_num(&o, "marker_shift_px", JSON_OPTIONAL, 0.1, 500.0, &v->marker_shift_px, err));
	BL_TRY(json_num(&o, "lamp_change", JSON_OPTIONAL, 0.01, 10.0, &v->lamp_change, err));
	BL_TRY(json_num(&o, "lamp_drift_per_h", JSON_OPTIONAL, 0.001, 10.0, &v->lamp_drift_per_h, err));
	BL_TRY(json_num(&o, "reference_de00", JSON_OPTIONAL, 0.1, 100.0, &v->reference_de00, err));
	BL_TRY(json_num(&o, "min_landed", JSON_OPTIONAL, 0.0, 1.0, &v->min_landed, err));
	BL_TRY(json_num(&o, "unpainted_change_de00", JSON_OPTIONAL, 0.1, 100.0, &v->unpainted_change_de00, err));
	BL_TRY(json_num(&o, "mix_model_de00", JSON_OPTIONAL, 0.1, 100.0, &v->mix_model_de00, err));
	return json_end(&o, err);
}

/* After costs: a call's price defaults to the built-in planner's. */
int machine_load_reviewer(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_reviewer *x = &m->reviewer;
	json_obj o;
	double kb = 64;
	int rc;

	x->answer_deadline_s = 30.0;
	x->max_answer_kb = 64;
	m->costs.per_review_call = m->costs.per_planner_call;
	if ((rc = json_child(root, "reviewer", JSON_OPTIONAL, &o, err)))
		return rc < 0 ? rc : 0;
	BL_TRY(json_str(&o, "command", JSON_OPTIONAL, x->command, sizeof(x->command), err));
	BL_TRY(json_num(&o, "answer_deadline_s", JSON_OPTIONAL, 0.1, 3600.0, &x->answer_deadline_s, err));
	BL_TRY(json_num(&o, "max_answer_kb", JSON_OPTIONAL, 1, 65536, &kb, err));
	x->max_answer_kb = (long)kb;
	BL_TRY(json_num(&o, "price_per_call", JSON_OPTIONAL, 0.0, 1e6, &m->costs.per_review_call, err));
	BL_TRY(machine_load_sandbox_keys(&o, &x->cpu_s, &x->memory_mb, &x->tmpfs_mb, x->egress_json,
					 sizeof(x->egress_json), err));
	return json_end(&o, err);
}
