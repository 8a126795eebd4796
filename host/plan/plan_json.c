/* plan_json.c: plan.json (schema in docs/plan.md): a strict loader and a saver that round-trip byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plan/plan.h"

/* Most of anything a plan may list: refused before anything is allocated. */
#define PLAN_MAX_SUBTASKS 1000000
#define PLAN_MAX_ACTIONS 100000
#define PLAN_MAX_CELLS 1000000

static void add_lab(cJSON *o, const char *key, const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	json_add_vec(o, key, v, 3);
}

static cJSON *recipe_json(const struct plan_recipe *r)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a && i < r->n; i++) {
		cJSON *it = cJSON_CreateObject();

		cJSON_AddStringToObject(it, "paint", r->item[i].paint);
		cJSON_AddStringToObject(it, "well", r->item[i].well);
		cJSON_AddNumberToObject(it, "units", r->item[i].units);
		cJSON_AddItemToArray(a, it);
	}
	return a;
}

static cJSON *cells_json(const struct plan_subtask *s)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < s->n_cells; i++) {
		const struct plan_cell *c = &s->cells[i];
		cJSON *it = cJSON_CreateObject();
		const double rc[2] = { c->col, c->row };

		json_add_vec(it, "cell", rc, 2);
		cJSON_AddNumberToObject(it, "coverage", c->coverage);
		if (s->type == PLAN_PAINT)
			cJSON_AddNumberToObject(it, "repaint", c->repaint);
		add_lab(it, "lab", &c->lab);
		cJSON_AddItemToArray(a, it);
	}
	return a;
}

static cJSON *subtask_json(const struct plan *p, const struct plan_subtask *s)
{
	cJSON *o = cJSON_CreateObject(), *acts, *ex;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "id", s->id);
	cJSON_AddStringToObject(o, "type", plan_subtask_names[s->type]);
	if (plan_kind_coloured(s->type))
		cJSON_AddStringToObject(o, "colour", p->colours[s->colour].name);
	switch (s->type) {
	case PLAN_MIX:
		add_lab(o, "target_lab", &p->colours[s->colour].lab);
		cJSON_AddNumberToObject(o, "volume_ml", s->volume_ml);
		cJSON_AddItemToObject(o, "recipe", recipe_json(&s->mix.recipe));
		add_lab(o, "predicted_lab", &s->mix.lab);
		cJSON_AddNumberToObject(o, "tolerance_de00", s->tolerance_de00);
		break;
	case PLAN_PAINT:
		cJSON_AddNumberToObject(o, "batch", s->batch);
		cJSON_AddStringToObject(o, "brush", s->brush);
		cJSON_AddNumberToObject(o, "strokes", s->n_strokes);
		json_add_vec(o, "region_mm", s->region_mm, 4);
		ex = cJSON_AddObjectToObject(o, "expected");
		cJSON_AddNumberToObject(ex, "tolerance_de00", s->tolerance_de00);
		cJSON_AddItemToObject(ex, "cells", cells_json(s));
		break;
	case PLAN_CHECKPOINT:
		ex = cJSON_AddObjectToObject(o, "expected");
		cJSON_AddNumberToObject(ex, "predicted_mean_de00", s->predicted_mean_de00);
		cJSON_AddNumberToObject(ex, "tolerance_de00", s->tolerance_de00);
		cJSON_AddItemToObject(ex, "cells", cells_json(s));
		break;
	case PLAN_SUBTASK_COUNT:
		break;
	}
	acts = cJSON_AddArrayToObject(o, "actions");
	for (size_t i = 0; acts && i < s->n_actions; i++)
		cJSON_AddItemToArray(acts, arm_action_to_json(&s->actions[i]));
	return o;
}

cJSON *plan_to_json(const struct plan *p)
{
	cJSON *o = cJSON_CreateObject(), *t, *m, *md, *g, *pr, *cols, *subs, *unf;
	const double size[2] = { p->target_w, p->target_h };

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "plan");
	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddBoolToObject(o, "correction", p->correction);
	t = cJSON_AddObjectToObject(o, "target");
	cJSON_AddStringToObject(t, "file", p->target_file);
	cJSON_AddStringToObject(t, "hash", p->target_hash);
	json_add_vec(t, "size_px", size, 2);
	json_add_vec(t, "rect_mm", p->image_mm, 4);
	m = cJSON_AddObjectToObject(o, "machine");
	cJSON_AddStringToObject(m, "name", p->machine_name);
	json_add_vec(m, "canvas_origin_mm", p->canvas_origin_mm, 2);
	json_add_vec(m, "canvas_size_mm", p->canvas_size_mm, 2);
	cJSON_AddNumberToObject(m, "canvas_surface_z_mm", p->canvas_surface_z_mm);
	/* Only a registered machine's plan carries its map: the placement follows from canvas_origin_mm. */
	if (p->xf.registered)
		xform_json_add(m, "canvas_to_machine", &p->xf);
	md = cJSON_AddObjectToObject(o, "model");
	add_lab(md, "canvas_lab", &p->canvas_lab);
	cJSON_AddNumberToObject(md, "opacity", p->opacity);
	g = cJSON_AddObjectToObject(o, "grid");
	cJSON_AddNumberToObject(g, "cell_mm", p->cell_mm);
	cJSON_AddNumberToObject(g, "cols", p->grid_cols);
	cJSON_AddNumberToObject(g, "rows", p->grid_rows);
	pr = cJSON_AddObjectToObject(o, "predicted");
	cJSON_AddNumberToObject(pr, "mean_de00", p->mean_de00);
	cJSON_AddNumberToObject(pr, "p95_de00", p->p95_de00);
	cJSON_AddNumberToObject(o, "strokes", p->n_strokes);
	cJSON_AddNumberToObject(o, "arm_time_s", p->arm_time_s);
	cols = cJSON_AddArrayToObject(o, "colours");
	for (int i = 0; cols && i < p->n_colours; i++) {
		const struct plan_colour *c = &p->colours[i];
		cJSON *it = cJSON_CreateObject();

		cJSON_AddStringToObject(it, "name", c->name);
		add_lab(it, "want_lab", &c->want);
		add_lab(it, "lab", &c->lab);
		cJSON_AddStringToObject(it, "cell", c->cell);
		cJSON_AddNumberToObject(it, "paint_ml", c->paint_ml);
		cJSON_AddNumberToObject(it, "strokes", c->strokes);
		cJSON_AddNumberToObject(it, "stroke_mm", c->stroke_mm);
		cJSON_AddItemToArray(cols, it);
	}
	subs = cJSON_AddArrayToObject(o, "subtasks");
	for (size_t i = 0; subs && i < p->n_subtasks; i++)
		cJSON_AddItemToArray(subs, subtask_json(p, &p->subtasks[i]));
	unf = cJSON_AddArrayToObject(o, "unfixable");
	for (size_t i = 0; unf && i < p->n_unfixable; i++) {
		const struct plan_unfixable *u = &p->unfixable[i];
		cJSON *it = cJSON_CreateObject();
		const double rc[2] = { u->col, u->row };

		json_add_vec(it, "cell", rc, 2);
		add_lab(it, "target_lab", &u->target);
		add_lab(it, "best_lab", &u->best);
		cJSON_AddNumberToObject(it, "de00", u->de00);
		cJSON_AddItemToArray(unf, it);
	}
	return o;
}

int plan_save(const char *path, const struct plan *p, bl_err *err)
{
	cJSON *root = plan_to_json(p);
	int rc;

	if (!root)
		return bl_fail(err, BL_ENOMEM, "%s: out of memory writing the plan", path);
	rc = json_write_file(path, root, err);
	cJSON_Delete(root);
	return rc;
}

/* ---- loading --------------------------------------------------------- */

static int read_lab(json_obj *o, const char *key, color_lab *c, bl_err *err)
{
	double v[3];

	BL_TRY(json_vec(o, key, JSON_REQUIRED, 3, -500.0, 500.0, v, err));
	if (v[0] < 0.0 || v[0] > 100.0)
		return json_fail(o, key, err, BL_EINVAL, "L=%g is outside 0..100", v[0]);
	c->L = v[0];
	c->a = v[1];
	c->b = v[2];
	return 0;
}

static int find_colour(json_obj *o, const struct plan *p, int *out, bl_err *err)
{
	char name[CFG_NAME_MAX];

	BL_TRY(json_str(o, "colour", JSON_REQUIRED, name, sizeof(name), err));
	for (int i = 0; i < p->n_colours; i++)
		if (strcmp(p->colours[i].name, name) == 0) {
			*out = i;
			return 0;
		}
	return json_fail(o, "colour", err, BL_EINVAL, "'%s' is not among the plan's colours", name);
}

static int read_cells(json_obj *o, const struct plan *p, struct plan_subtask *s, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;

	BL_TRY(json_array(o, "cells", JSON_REQUIRED, PLAN_MAX_CELLS, &arr, &n, err));
	s->cells = calloc(n ? n : 1, sizeof(*s->cells));
	if (!s->cells)
		return json_fail(o, "cells", err, BL_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, arr) {
		struct plan_cell *c = &s->cells[i];
		json_obj co;
		double rc[2];

		BL_TRY(json_item_obj(o, "cells", it, i, &co, err));
		BL_TRY(json_vec(&co, "cell", JSON_REQUIRED, 2, 0, 1e6, rc, err));
		if (rc[0] != (int)rc[0] || rc[1] != (int)rc[1] || rc[0] >= p->grid_cols ||
		    rc[1] >= p->grid_rows)
			return json_fail(&co, "cell", err, BL_EINVAL,
					 "[%g, %g] is not a cell of the %d x %d grid", rc[0], rc[1],
					 p->grid_cols, p->grid_rows);
		c->col = (int)rc[0];
		c->row = (int)rc[1];
		BL_TRY(json_num(&co, "coverage", JSON_REQUIRED, 0.0, 1.0, &c->coverage, err));
		c->repaint = c->coverage;
		BL_TRY(json_num(&co, "repaint", s->type == PLAN_PAINT ? JSON_REQUIRED : JSON_OPTIONAL,
				0.0, 1.0, &c->repaint, err));
		BL_TRY(read_lab(&co, "lab", &c->lab, err));
		BL_TRY(json_end(&co, err));
		s->n_cells = ++i;
	}
	return 0;
}

static int read_recipe(json_obj *o, struct plan_recipe *r, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;

	BL_TRY(json_array(o, "recipe", JSON_REQUIRED, PLAN_MAX_RECIPE, &arr, &n, err));
	if (n == 0)
		return json_fail(o, "recipe", err, BL_EINVAL, "a mix needs at least one paint");
	cJSON_ArrayForEach(it, arr) {
		struct plan_recipe_item *ri = &r->item[i];
		json_obj io;

		BL_TRY(json_item_obj(o, "recipe", it, i, &io, err));
		BL_TRY(json_str(&io, "paint", JSON_REQUIRED, ri->paint, sizeof(ri->paint), err));
		BL_TRY(json_str(&io, "well", JSON_REQUIRED, ri->well, sizeof(ri->well), err));
		BL_TRY(json_i32(&io, "units", JSON_REQUIRED, 1, ARM_MAX_UNITS, &ri->units, err));
		BL_TRY(json_end(&io, err));
		r->n = (int)++i;
	}
	return 0;
}

static int read_subtask(json_obj *o, struct plan *p, struct plan_subtask *s, bl_err *err)
{
	const cJSON *arr, *it;
	json_obj ex;
	char file[CFG_PATH_MAX + 64];
	size_t n, i = 0;
	int type;
	long long id;

	s->colour = -1;
	s->batch = -1;
	BL_TRY(json_int(o, "id", JSON_REQUIRED, 1, 1000000000LL, &id, err));
	s->id = (int)id;
	BL_TRY(json_enum(o, "type", JSON_REQUIRED, plan_subtask_names, &type, err));
	s->type = (enum plan_subtask_type)type;
	if (plan_kind_coloured(s->type))
		BL_TRY(find_colour(o, p, &s->colour, err));
	switch (s->type) {
	case PLAN_MIX: {
		color_lab target;

		BL_TRY(read_lab(o, "target_lab", &target, err));
		if (target.L != p->colours[s->colour].lab.L || target.a != p->colours[s->colour].lab.a ||
		    target.b != p->colours[s->colour].lab.b)
			return json_fail(o, "target_lab", err, BL_EINVAL,
					 "differs from the lab of colour '%s'",
					 p->colours[s->colour].name);
		BL_TRY(json_num(o, "volume_ml", JSON_REQUIRED, 0.0, 1000.0, &s->volume_ml, err));
		BL_TRY(read_recipe(o, &s->mix.recipe, err));
		BL_TRY(read_lab(o, "predicted_lab", &s->mix.lab, err));
		BL_TRY(json_num(o, "tolerance_de00", JSON_REQUIRED, 0.0, 100.0, &s->tolerance_de00, err));
		break;
	}
	case PLAN_PAINT:
		BL_TRY(json_i32(o, "batch", JSON_REQUIRED, 0, 100000000, &s->batch, err));
		BL_TRY(json_str(o, "brush", JSON_REQUIRED, s->brush, sizeof(s->brush), err));
		BL_TRY(json_i32(o, "strokes", JSON_REQUIRED, 0, PLAN_MAX_STROKES, &s->n_strokes, err));
		BL_TRY(json_vec(o, "region_mm", JSON_REQUIRED, 4, -ARM_MAX_COORD_MM, ARM_MAX_COORD_MM,
			     s->region_mm, err));
		BL_TRY(json_child(o, "expected", JSON_REQUIRED, &ex, err));
		BL_TRY(json_num(&ex, "tolerance_de00", JSON_REQUIRED, 0.0, 100.0, &s->tolerance_de00, err));
		BL_TRY(read_cells(&ex, p, s, err));
		BL_TRY(json_end(&ex, err));
		break;
	case PLAN_CHECKPOINT:
		BL_TRY(json_child(o, "expected", JSON_REQUIRED, &ex, err));
		BL_TRY(json_num(&ex, "predicted_mean_de00", JSON_REQUIRED, 0.0, 1000.0,
			     &s->predicted_mean_de00, err));
		BL_TRY(json_num(&ex, "tolerance_de00", JSON_REQUIRED, 0.0, 100.0, &s->tolerance_de00, err));
		BL_TRY(read_cells(&ex, p, s, err));
		BL_TRY(json_end(&ex, err));
		break;
	case PLAN_SUBTASK_COUNT: /* json_enum reads no such name */
		break;
	}
	if (s->tolerance_de00 <= 0.0)
		return json_fail(o, "tolerance_de00", err, BL_EINVAL, "must be positive");
	BL_TRY(json_array(o, "actions", JSON_REQUIRED, PLAN_MAX_ACTIONS, &arr, &n, err));
	s->actions = calloc(n ? n : 1, sizeof(*s->actions));
	if (!s->actions)
		return json_fail(o, "actions", err, BL_ENOMEM, "out of memory");
	/* The actions are in exactly the form an actions file holds; messages name the subtask. */
	snprintf(file, sizeof(file), "%s: %s", o->file, o->path);
	cJSON_ArrayForEach(it, arr) {
		BL_TRY(arm_action_parse(it, file, i, &s->actions[i], err));
		s->n_actions = ++i;
		if (s->actions[i - 1].kind == ARM_STROKE && s->type != PLAN_PAINT)
			return json_fail(o, "actions", err, BL_EINVAL,
					 "a %s subtask must not paint strokes",
					 plan_subtask_names[s->type]);
	}
	return json_end(o, err);
}

static int read_plan(json_obj *root, const char *file, struct plan *p, bl_err *err)
{
	json_obj t, m, md, g, pr;
	const cJSON *arr, *it;
	double size[2];
	size_t n, i;

	BL_TRY(json_kind(root, "plan", 1, err));
	BL_TRY(json_bool(root, "correction", JSON_REQUIRED, &p->correction, err));
	BL_TRY(json_child(root, "target", JSON_REQUIRED, &t, err));
	BL_TRY(json_str(&t, "file", JSON_REQUIRED, p->target_file, sizeof(p->target_file), err));
	BL_TRY(json_str(&t, "hash", JSON_REQUIRED, p->target_hash, sizeof(p->target_hash), err));
	BL_TRY(json_vec(&t, "size_px", JSON_REQUIRED, 2, 1, 1e6, size, err));
	p->target_w = (int)size[0];
	p->target_h = (int)size[1];
	BL_TRY(json_vec(&t, "rect_mm", JSON_REQUIRED, 4, 0.0, ARM_MAX_COORD_MM, p->image_mm, err));
	BL_TRY(json_end(&t, err));
	BL_TRY(json_child(root, "machine", JSON_REQUIRED, &m, err));
	BL_TRY(json_str(&m, "name", JSON_REQUIRED, p->machine_name, sizeof(p->machine_name), err));
	BL_TRY(json_vec(&m, "canvas_origin_mm", JSON_REQUIRED, 2, -ARM_MAX_COORD_MM, ARM_MAX_COORD_MM,
		     p->canvas_origin_mm, err));
	BL_TRY(json_vec(&m, "canvas_size_mm", JSON_REQUIRED, 2, 0.0, ARM_MAX_COORD_MM,
		     p->canvas_size_mm, err));
	BL_TRY(json_num(&m, "canvas_surface_z_mm", JSON_REQUIRED, -ARM_MAX_COORD_MM, ARM_MAX_COORD_MM,
		     &p->canvas_surface_z_mm, err));
	xform_place(&p->xf, p->canvas_origin_mm, 0.0);
	BL_TRY(xform_json_read(&m, "canvas_to_machine", JSON_OPTIONAL, &p->xf, err));
	BL_TRY(json_end(&m, err));
	BL_TRY(json_child(root, "model", JSON_REQUIRED, &md, err));
	BL_TRY(read_lab(&md, "canvas_lab", &p->canvas_lab, err));
	BL_TRY(json_num(&md, "opacity", JSON_REQUIRED, 0.0, 1.0, &p->opacity, err));
	BL_TRY(json_end(&md, err));
	BL_TRY(json_child(root, "grid", JSON_REQUIRED, &g, err));
	BL_TRY(json_num(&g, "cell_mm", JSON_REQUIRED, 0.5, 1000.0, &p->cell_mm, err));
	BL_TRY(json_i32(&g, "cols", JSON_REQUIRED, 1, 100000, &p->grid_cols, err));
	BL_TRY(json_i32(&g, "rows", JSON_REQUIRED, 1, 100000, &p->grid_rows, err));
	BL_TRY(json_end(&g, err));
	BL_TRY(json_child(root, "predicted", JSON_REQUIRED, &pr, err));
	BL_TRY(json_num(&pr, "mean_de00", JSON_REQUIRED, 0.0, 1000.0, &p->mean_de00, err));
	BL_TRY(json_num(&pr, "p95_de00", JSON_REQUIRED, 0.0, 1000.0, &p->p95_de00, err));
	BL_TRY(json_end(&pr, err));
	BL_TRY(json_i32(root, "strokes", JSON_REQUIRED, 0, PLAN_MAX_STROKES, &p->n_strokes, err));
	BL_TRY(json_num(root, "arm_time_s", JSON_REQUIRED, 0.0, 1e9, &p->arm_time_s, err));

	BL_TRY(json_array(root, "colours", JSON_REQUIRED, PLAN_MAX_COLOURS, &arr, &n, err));
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct plan_colour *c = &p->colours[i];
		json_obj co;

		BL_TRY(json_item_obj(root, "colours", it, i, &co, err));
		BL_TRY(json_str(&co, "name", JSON_REQUIRED, c->name, sizeof(c->name), err));
		for (size_t k = 0; k < i; k++)
			if (strcmp(p->colours[k].name, c->name) == 0)
				return json_fail(&co, "name", err, BL_EINVAL, "'%s' is used twice",
						 c->name);
		BL_TRY(read_lab(&co, "want_lab", &c->want, err));
		BL_TRY(read_lab(&co, "lab", &c->lab, err));
		BL_TRY(json_str(&co, "cell", JSON_REQUIRED, c->cell, sizeof(c->cell), err));
		BL_TRY(json_num(&co, "paint_ml", JSON_REQUIRED, 0.0, 1e6, &c->paint_ml, err));
		BL_TRY(json_i32(&co, "strokes", JSON_REQUIRED, 0, PLAN_MAX_STROKES, &c->strokes, err));
		BL_TRY(json_num(&co, "stroke_mm", JSON_REQUIRED, 0.0, 1e9, &c->stroke_mm, err));
		BL_TRY(json_end(&co, err));
		p->n_colours = (int)++i;
	}

	BL_TRY(json_array(root, "subtasks", JSON_REQUIRED, PLAN_MAX_SUBTASKS, &arr, &n, err));
	p->subtasks = calloc(n ? n : 1, sizeof(*p->subtasks));
	if (!p->subtasks)
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", file);
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		json_obj so;

		BL_TRY(json_item_obj(root, "subtasks", it, i, &so, err));
		p->n_subtasks = i + 1;
		BL_TRY(read_subtask(&so, p, &p->subtasks[i], err));
		for (size_t k = 0; k < i; k++)
			if (p->subtasks[k].id == p->subtasks[i].id)
				return json_fail(&so, "id", err, BL_EINVAL, "%d is used twice",
						 p->subtasks[i].id);
		i++;
	}

	BL_TRY(json_array(root, "unfixable", JSON_REQUIRED, PLAN_MAX_CELLS, &arr, &n, err));
	p->unfixable = calloc(n ? n : 1, sizeof(*p->unfixable));
	if (!p->unfixable)
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", file);
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct plan_unfixable *u = &p->unfixable[i];
		json_obj uo;
		double rc[2];

		BL_TRY(json_item_obj(root, "unfixable", it, i, &uo, err));
		BL_TRY(json_vec(&uo, "cell", JSON_REQUIRED, 2, 0, 1e6, rc, err));
		u->col = (int)rc[0];
		u->row = (int)rc[1];
		BL_TRY(read_lab(&uo, "target_lab", &u->target, err));
		BL_TRY(read_lab(&uo, "best_lab", &u->best, err));
		BL_TRY(json_num(&uo, "de00", JSON_REQUIRED, 0.0, 1000.0, &u->de00, err));
		BL_TRY(json_end(&uo, err));
		p->n_unfixable = ++i;
	}
	return json_end(root, err);
}

int plan_from_json(const cJSON *node, const char *file, struct plan *out, bl_err *err)
{
	json_obj root;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = json_obj_open(node, file, "", &root, err);
	if (rc == 0)
		rc = read_plan(&root, file, out, err);
	if (rc)
		plan_free(out);
	return rc;
}

int plan_load(const char *path, struct plan *out, bl_err *err)
{
	cJSON *doc;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = plan_from_json(doc, path, out, err);
	cJSON_Delete(doc);
	return rc;
}
