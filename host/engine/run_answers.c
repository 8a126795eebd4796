/* run_answers.c: what a resume reads back and checks (run.json, the state against its plan), and the operator's answers on its command line. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "engine/run_int.h"

/*
 * The operator's substitutes in the plans under way: a substituted colour is
 * mixed as, predicted as and corrected with the colour the operator named.
 * plan.json keeps what was planned; state.json keeps the substitutes, so
 * every process of the run applies them after loading its plans.
 */
void run_apply_substitutes(struct run *r)
{
	struct plan *plans[2] = { &r->plan, &r->corr };

	for (int c = 0; c < r->st.n_colours && c < r->plan.n_colours; c++) {
		if (!r->st.colours[c].substituted)
			continue;
		for (int k = 0; k < 2; k++) {
			struct plan *p = plans[k];

			/* want too: a correction round's top-ups are solved from it. */
			if (c < p->n_colours)
				p->colours[c].lab = p->colours[c].want = r->st.colours[c].substitute;
			for (size_t i = 0; i < p->n_subtasks; i++)
				if (p->subtasks[i].type == PLAN_MIX && p->subtasks[i].colour == c)
					p->subtasks[i].mix.lab = r->st.colours[c].substitute;
		}
	}
}

/*
 * Version 1 had no run id: a run of a brushloop from before the journal was
 * chained. Its id is "" here, and a resume gives it one (run_id_adopt).
 */
static int run_json_v1_to_v2(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	(void)file;
	(void)ctx;
	return json_migrate_add(root, "id", cJSON_CreateString(""), err);
}

static const json_migrate_fn run_json_steps[] = { run_json_v1_to_v2 };
const struct json_format run_json_format = { "run", 2, 1, run_json_steps };

int run_json_read(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX], copy[128], file[CFG_PATH_MAX], hash[17];
	cJSON *root;
	json_obj o, t;
	double seed;
	int rc;

	if ((rc = run_path(r, "run.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &root, err)))
		return rc;
	if ((rc = json_format_open(root, p, &run_json_format, NULL, &o, err)) < 0 ||
	    (rc = json_str(&o, "id", JSON_REQUIRED, r->id, sizeof(r->id), err)) < 0 ||
	    (rc = json_child(&o, "target", JSON_REQUIRED, &t, err)) < 0 ||
	    (rc = json_str(&t, "file", JSON_REQUIRED, file, sizeof(file), err)) < 0 ||
	    (rc = json_str(&t, "copy", JSON_REQUIRED, copy, sizeof(copy), err)) < 0 ||
	    (rc = json_str(&t, "hash", JSON_REQUIRED, hash, sizeof(hash), err)) < 0 ||
	    (rc = json_end(&t, err)) < 0 ||
	    (rc = json_num(&o, "seed", JSON_REQUIRED, 0, 1.8e19, &seed, err)) < 0 ||
	    (rc = json_bool(&o, "open_loop", JSON_REQUIRED, &r->opt.open_loop, err)) < 0 ||
	    (rc = json_bool(&o, "accept_nearest", JSON_REQUIRED, &r->opt.accept_nearest, err)) < 0 ||
	    (rc = json_i32(&o, "max_strokes", JSON_REQUIRED, 0, PLAN_MAX_STROKES, &r->opt.max_strokes, err)) < 0 ||
	    (rc = json_i32(&o, "colours", JSON_REQUIRED, 0, PLAN_MAX_COLOURS, &r->opt.colours, err)) < 0)
		goto out;
	if ((rc = json_str(&o, "planner", JSON_OPTIONAL, r->planner_cmd, sizeof(r->planner_cmd), err)) < 0 ||
	    (rc = json_num(&o, "arm_hours", JSON_OPTIONAL, 0.01, 240, &r->opt.arm_hours, err)) < 0 ||
	    (rc = json_i32(&o, "budget_strokes", JSON_OPTIONAL, 1, PLAN_MAX_STROKES, &r->budget_strokes, err)) < 0 ||
	    (rc = json_str(&o, "reviewer", JSON_OPTIONAL, r->reviewer_cmd, sizeof(r->reviewer_cmd), err)) < 0)
		goto out;
	{
		int act = -1;

		if ((rc = json_enum(&o, "on_disagreement", JSON_OPTIONAL, machine_review_action_names, &act, err)) < 0)
			goto out;
		r->opt.on_disagreement = act + 1;
	}
	json_take(&o, "created_wall_ms");
	json_take(&o, "versions");
	json_take(&o, "machine"); /* machine.json is the copy that is loaded */
	json_take(&o, "palette");
	json_take(&o, "inputs"); /* run_inputs_verify compares them */
	json_take(&o, "calibration"); /* a record of the files the run started with */
	if ((rc = json_end(&o, err)) < 0)
		goto out;
	/* "" (a run from before ids) or RUN_ID_LEN hex digits. */
	if (r->id[0] && (strlen(r->id) != RUN_ID_LEN || strspn(r->id, "0123456789abcdef") != RUN_ID_LEN)) {
		rc = json_fail(&o, "id", err, BL_EINVAL, "'%.40s' is not a run id (%d hex digits)", r->id,
			       RUN_ID_LEN);
		goto out;
	}
	r->st.seed = (uint64_t)seed;
	rc = run_path(r, copy, r->target_copy, sizeof(r->target_copy), err);
out:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

/* Whether a list of colours from the command line ("c3,c5" or "all") names colour name. */
static int list_names(const char *list, const char *name)
{
	char buf[512], *save = NULL;

	if (!list)
		return 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, "all") || !strcmp(t, name))
			return 1;
	return 0;
}

/* Colours the operator accepted on the command line (answers_check read the names). */
int run_answers_accept(struct run *r, const char *list, bl_err *err)
{
	for (int c = 0; c < r->plan.n_colours; c++) {
		struct run_colour *col = &r->st.colours[c];
		int rc;

		if (!list_names(list, r->plan.colours[c].name) || !col->escalated || col->accepted)
			continue;
		/* The operator's decision is journaled, or not taken. */
		if ((rc = run_event(r, "mix_accepted", cJSON_CreateString(r->plan.colours[c].name), err)))
			return rc;
		col->accepted = 1;
	}
	return 0;
}

/* A plan colour by name: its index, or -1. */
static int colour_index(const struct plan *p, const char *name)
{
	for (int c = 0; c < p->n_colours; c++)
		if (!strcmp(p->colours[c].name, name))
			return c;
	return -1;
}

/*
 * One --substitute "cK=COLOUR", checked before anything moves or is written:
 * colour cK, whose mix waits for the operator, is to be mixed instead as
 * COLOUR (lab:/srgb:/#rrggbb, or another colour of the plan by name: mixed
 * as that one is). COLOUR must be within the palette's reach in whole units,
 * as the loop dispenses, or the loop would only give up again: the message
 * names the nearest it mixes.
 */
static int substitute_check(struct run *r, const char *spec, struct run_substitute *out,
			    bl_err *err)
{
	char name[CFG_NAME_MAX];
	const char *eq = strchr(spec, '=');
	const struct run_colour *col;
	struct mix_solution sol;
	int other, rc;

	if (!eq || eq == spec || !eq[1] || (size_t)(eq - spec) >= sizeof(name))
		return bl_fail(err, BL_EINVAL, "--substitute '%s': expected COLOUR=NEW, as c3=lab:80,0,10 "
			       "or c3=c1", spec);
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = '\0';
	out->spec = spec;
	if ((out->colour = colour_index(&r->plan, name)) < 0)
		return bl_fail(err, BL_EINVAL, "--substitute %s: the plan has no colour '%s'", spec, name);
	col = &r->st.colours[out->colour];
	if (!col->escalated || col->accepted)
		return bl_fail(err, BL_EINVAL, "--substitute %s: colour %s does not wait for the operator "
			       "(only a mix the loop gave up on is substituted)", spec, name);
	if ((other = colour_index(&r->plan, eq + 1)) >= 0) {
		if (other == out->colour)
			return bl_fail(err, BL_EINVAL, "--substitute %s: a colour in place of itself", spec);
		out->lab = r->plan.colours[other].lab;
	} else if ((rc = color_parse(eq + 1, &out->lab, err))) {
		return bl_err_prefix(err, "--substitute %s", spec);
	}
	if ((rc = mix_solve(&r->mixer.model, &r->st.learn, &out->lab, &r->mixer.lim, &sol, err)))
		return bl_err_prefix(err, "--substitute %s", spec);
	if (!(sol.recipe.de00 <= r->mixer.lim.tol_de00))
		return bl_fail(err, BL_EINVAL, "--substitute %s: lab:%.2f,%.2f,%.2f is beyond the "
			       "palette's reach (the nearest it mixes is lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 "
			       "away; tolerance %.2f)", spec, out->lab.L, out->lab.a, out->lab.b,
			       sol.recipe.predicted.L, sol.recipe.predicted.a, sol.recipe.predicted.b,
			       sol.recipe.de00, r->mixer.lim.tol_de00);
	out->predicted_de00 = sol.recipe.de00;
	return 0;
}

/* Takes a checked substitute: journaled, or not taken. The colour's mix is then tried again. */
int run_substitute_take(struct run *r, const struct run_substitute *sb, bl_err *err)
{
	struct run_colour *col = &r->st.colours[sb->colour];
	const color_lab *was = &r->plan.colours[sb->colour].lab;
	cJSON *d = cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(d, "colour", r->plan.colours[sb->colour].name);
	cJSON_AddStringToObject(d, "as", strchr(sb->spec, '=') + 1);
	cJSON_AddItemToObject(d, "planned_lab", cJSON_CreateDoubleArray((double[]){ was->L, was->a, was->b }, 3));
	cJSON_AddItemToObject(d, "lab", cJSON_CreateDoubleArray((double[]){ sb->lab.L, sb->lab.a, sb->lab.b }, 3));
	cJSON_AddNumberToObject(d, "predicted_de00", sb->predicted_de00);
	if ((rc = run_event(r, "mix_substituted", d, err)))
		return rc;
	col->substituted = 1;
	col->substitute = sb->lab;
	col->escalated = 0;
	/* A top-up that gave up leaves its colour verified: the substitute is mixed fresh, not into it. */
	col->verified = 0;
	run_apply_substitutes(r);
	return 0;
}

/*
 * The operator's answers on the command line, checked before the arm is
 * homed or a line is journaled, so a mistyped answer changes nothing; subs
 * receives the substitutes, checked.
 */
int run_answers_check(struct run *r, const struct run_options *o, struct run_substitute *subs,
			 bl_err *err)
{
	char buf[512], *save = NULL;

	if (o->accept_mix) {
		snprintf(buf, sizeof(buf), "%s", o->accept_mix);
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (strcmp(t, "all") && colour_index(&r->plan, t) < 0)
				return bl_fail(err, BL_EINVAL, "--accept-mix: the plan has no colour '%s'", t);
	}
	for (int i = 0; i < o->n_substitute; i++) {
		int rc = substitute_check(r, o->substitute[i], &subs[i], err);

		if (rc)
			return rc;
		for (int k = 0; k < i; k++)
			if (subs[k].colour == subs[i].colour)
				return bl_fail(err, BL_EINVAL, "--substitute %s: colour %s is substituted "
					       "twice", o->substitute[i], r->plan.colours[subs[i].colour].name);
		if (list_names(o->accept_mix, r->plan.colours[subs[i].colour].name))
			return bl_fail(err, BL_EINVAL, "--substitute %s: --accept-mix %s answers colour %s "
				       "too; give it one answer", o->substitute[i], o->accept_mix,
				       r->plan.colours[subs[i].colour].name);
	}
	return 0;
}

/*
 * state.json read back is well formed; here it must also fit the plan it
 * goes with, or a damaged file would index past the plan's subtasks,
 * actions, colours or cells.
 */
int run_state_fits_plan(struct run *r, bl_err *err)
{
	const struct plan *p = run_plan(r);
	const struct run_state *st = &r->st;

	if (st->n_sub != p->n_subtasks)
		return bl_fail(err, BL_EINVAL, "%s/state.json: %zu subtasks, but the plan under way has "
			       "%zu", r->dir_shown, st->n_sub, p->n_subtasks);
	if (st->next > p->n_subtasks)
		return bl_fail(err, BL_EINVAL, "%s/state.json: next: %zu, beyond the plan's %zu subtasks",
			       r->dir_shown, st->next, p->n_subtasks);
	if (st->n_colours != r->plan.n_colours)
		return bl_fail(err, BL_EINVAL, "%s/state.json: colours: %d, but the plan has %zu", r->dir_shown,
			       st->n_colours, (size_t)r->plan.n_colours);
	for (size_t i = 0; i < st->n_sub; i++)
		if (st->sub[i].action_next < 0 || (size_t)st->sub[i].action_next > p->subtasks[i].n_actions)
			return bl_fail(err, BL_EINVAL, "%s/state.json: subtasks[%zu].action_next: %ld, "
				       "beyond its %zu actions", r->dir_shown, i, st->sub[i].action_next,
				       p->subtasks[i].n_actions);
	if (st->retry.active) {
		if (st->retry.sub >= p->n_subtasks)
			return bl_fail(err, BL_EINVAL, "%s/state.json: retry.subtask: %zu, beyond the "
				       "plan's %zu subtasks", r->dir_shown, st->retry.sub, p->n_subtasks);
		for (int i = 0; i < st->retry.n; i++)
			if (st->retry.idx[i] < 0 ||
			    (size_t)st->retry.idx[i] >= p->subtasks[st->retry.sub].n_actions)
				return bl_fail(err, BL_EINVAL, "%s/state.json: retry.actions[%d]: %d, beyond "
					       "the subtask's %zu actions", r->dir_shown, i, st->retry.idx[i],
					       p->subtasks[st->retry.sub].n_actions);
	}
	if (st->pending.active && !machine_find_cell(&r->m, st->pending.cell))
		return bl_fail(err, BL_EINVAL, "%s/state.json: pending.cell: '%s' is no mixing cell of "
			       "the machine", r->dir_shown, st->pending.cell);
	return 0;
}
