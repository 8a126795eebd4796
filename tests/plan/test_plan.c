/* test_plan.c: the planner: strokes inside the canvas, every action through the gate, plan.json round trip, determinism, order, quality against the grid baseline, corrections, strict loading. */
#include <cJSON.h>
#include <unistd.h>

#include "arm/action.h"
#include "base/fs.h"
#include "base/json.h"
#include "plan/plan_int.h"
#include "plan_fixture.h"
#include "safety/gate.h"
#include "test.h"

/* Small targets keep the suite fast; the planner works on its own grid whatever the size. */
#define TW 400
#define TH 320

static struct plan *cached_plan(void)
{
	static struct plan p;
	static int made;
	bl_err err = { 0 };

	if (!made) {
		if (fixture_plan(0, TW, TH, 300, 0, &p, &err)) {
			fprintf(stderr, "planning failed: %s\n", err.msg);
			exit(1);
		}
		made = 1;
	}
	return &p;
}

static size_t count_kind(const struct plan *p, enum arm_kind k)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n_subtasks; i++)
		for (size_t a = 0; a < p->subtasks[i].n_actions; a++)
			n += p->subtasks[i].actions[a].kind == k;
	return n;
}

TEST(strokes_inside_canvas)
{
	struct plan *p = cached_plan();
	struct machine *m = fixture_machine();
	bl_err err = { 0 };
	size_t outside = 0, strokes = 0;

	CHECK(p->n_strokes > 0);
	CHECK_MSG(plan_check(p, m, &err) == 0, "%s", err.msg);
	for (size_t i = 0; i < p->n_subtasks; i++)
		for (size_t k = 0; k < p->subtasks[i].n_actions; k++) {
			const struct arm_action *a = &p->subtasks[i].actions[k];
			const struct machine_brush *br;

			if (a->kind != ARM_STROKE)
				continue;
			strokes++;
			br = machine_find_brush(m, a->brush);
			CHECK(br != NULL);
			if (!br)
				continue;
			for (size_t q = 0; q < a->n_points; q++) {
				/* The brush's whole width stays on the canvas, and inside the picture. */
				struct canvas_pt c = xform_to_canvas(&m->xf, (struct machine_pt){ a->points[q].x,
												  a->points[q].y });
				double x = c.x, y = c.y, h = 0.5 * br->width_mm - 0.011;

				outside += x < p->image_mm[0] + h || y < p->image_mm[1] + h ||
					   x > p->image_mm[0] + p->image_mm[2] - h ||
					   y > p->image_mm[1] + p->image_mm[3] - h ||
					   a->points[q].z < m->limits.z_floor.canvas_mm ||
					   a->points[q].z > m->canvas.surface_z_mm;
			}
		}
	CHECK_MSG(outside == 0, "%zu stroke points let the brush leave the picture", outside);
	CHECK((int)strokes == p->n_strokes);
	CHECK(p->image_mm[0] >= 0 && p->image_mm[0] + p->image_mm[2] <= m->canvas.size_mm[0] + 1e-9);
}

static void check_gate(const struct plan *p, const char *what)
{
	struct machine *m = fixture_machine();
	struct gate_context ctx = { 0, 0 };
	struct arm_path path = { 0 };
	arm_point at = { m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	size_t refused = 0, actions = 0, tol_refused = 0;
	bl_err err = { 0 };

	for (size_t i = 0; i < p->n_subtasks; i++) {
		const struct plan_subtask *s = &p->subtasks[i];
		struct gate_decision d;

		if (gate_check_tolerance(m, s->type == PLAN_MIX ? "mix" : "paint", s->tolerance_de00,
					 &d) != GATE_ALLOW)
			tol_refused++;
		for (size_t k = 0; k < s->n_actions; k++) {
			CHECK(gate_check(m, &at, &s->actions[k], &ctx, &path, &d, &err) == 0);
			actions++;
			if (d.verdict != GATE_ALLOW) {
				const struct gate_finding *f = gate_decision_primary(&d);

				if (refused++ < 5)
					fprintf(stderr, "%s: subtask %d action %ld (%s): %s\n", what, s->id,
						s->actions[k].id, arm_kind_names[s->actions[k].kind],
						f ? f->detail : "?");
				continue;
			}
			if (path.n)
				at = path.seg[path.n - 1].to;
		}
	}
	arm_path_free(&path);
	CHECK(actions > 0);
	CHECK_MSG(refused == 0, "%s: %zu of %zu actions not allowed", what, refused, actions);
	CHECK_MSG(tol_refused == 0, "%s: %zu tolerances refused", what, tol_refused);
}

TEST(actions_pass_gate)
{
	struct plan q;
	bl_err err = { 0 };

	check_gate(cached_plan(), "autumn-tree");
	/* A different picture and the finest detail: tight curves, many short strokes. */
	CHECK_MSG(fixture_plan(3, TW, TH, 400, 0, &q, &err) == 0, "%s", err.msg);
	check_gate(&q, "fine-detail");
	plan_free(&q);
}

static char *plan_text(const struct plan *p)
{
	cJSON *j = plan_to_json(p);
	char *s = j ? cJSON_Print(j) : NULL;

	cJSON_Delete(j);
	return s;
}

TEST(json_round_trip)
{
	struct plan *p = cached_plan(), q, r;
	const char *dir = test_tmpdir();
	char a[512], b[512], *ta = NULL, *tb = NULL;
	size_t la = 0, lb = 0;
	bl_err err = { 0 };

	snprintf(a, sizeof(a), "%s/plan.json", dir);
	snprintf(b, sizeof(b), "%s/again.json", dir);
	CHECK_MSG(plan_save(a, p, &err) == 0, "%s", err.msg);
	CHECK_MSG(plan_load(a, &q, &err) == 0, "%s", err.msg);
	CHECK_MSG(plan_save(b, &q, &err) == 0, "%s", err.msg);
	CHECK(fs_read_file(a, JSON_MAX_FILE_BYTES, &ta, &la, &err) == 0);
	CHECK(fs_read_file(b, JSON_MAX_FILE_BYTES, &tb, &lb, &err) == 0);
	CHECK_MSG(ta && tb && la == lb && memcmp(ta, tb, la) == 0,
		  "load + save changed the file (%zu vs %zu bytes)", la, lb);
	CHECK(q.n_subtasks == p->n_subtasks && q.n_strokes == p->n_strokes &&
	      q.n_colours == p->n_colours);
	/* And once more: a loaded plan is checked and predicted like a fresh one. */
	CHECK_MSG(plan_load(b, &r, &err) == 0, "%s", err.msg);
	CHECK(plan_check(&r, fixture_machine(), &err) == 0);
	free(ta);
	free(tb);
	plan_free(&q);
	plan_free(&r);
}

TEST(same_inputs_same_plan)
{
	struct plan q;
	bl_err err = { 0 };
	char *a, *b;

	CHECK_MSG(fixture_plan(0, TW, TH, 300, 0, &q, &err) == 0, "%s", err.msg);
	a = plan_text(cached_plan());
	b = plan_text(&q);
	CHECK(a && b && strcmp(a, b) == 0);
	cJSON_free(a);
	cJSON_free(b);
	plan_free(&q);
}

TEST(order_and_subtasks)
{
	struct plan *p = cached_plan();
	struct machine *m = fixture_machine();
	int mixed[PLAN_MAX_COLOURS] = { 0 }, last_colour = -1, checkpoints = 0, paints = 0;
	double last_l = 1e9;
	char last_brush[CFG_NAME_MAX] = "";

	CHECK(p->n_colours >= 3);
	for (size_t i = 0; i < p->n_subtasks; i++) {
		const struct plan_subtask *s = &p->subtasks[i];

		CHECK(s->id == (int)i + 1);
		if (s->type == PLAN_MIX) {
			CHECK(s->tolerance_de00 == m->tolerances.mix_de00);
			CHECK(s->mix.recipe.n >= 1);
			CHECK(s->volume_ml >= m->mixing.cell_min_ml - 1e-9 &&
			      s->volume_ml <= m->mixing.cell_max_ml + 1e-9);
			mixed[s->colour] = 1;
			continue;
		}
		if (s->type == PLAN_CHECKPOINT) {
			checkpoints++;
			CHECK(s->n_cells == (size_t)p->grid_cols * p->grid_rows);
			last_l = 1e9; /* a new pass starts light again */
			last_brush[0] = 0;
			continue;
		}
		paints++;
		/* A colour is mixed before it is painted; light colours go before dark ones in a pass. */
		CHECK_MSG(mixed[s->colour], "subtask %d paints colour %d before it is mixed", s->id,
			  s->colour);
		if (s->colour != last_colour && strcmp(last_brush, s->brush) == 0)
			CHECK_MSG(p->colours[s->colour].lab.L <= last_l + 1e-9,
				  "subtask %d: colour L %.1f after %.1f", s->id,
				  p->colours[s->colour].lab.L, last_l);
		last_l = p->colours[s->colour].lab.L;
		last_colour = s->colour;
		snprintf(last_brush, sizeof(last_brush), "%s", s->brush);
		CHECK(s->tolerance_de00 == m->tolerances.paint_de00);
		CHECK_MSG(s->n_cells >= 1, "subtask %d expects nothing", s->id);
		CHECK(s->region_mm[0] < s->region_mm[2] && s->region_mm[1] < s->region_mm[3]);
		/* Each batch loads the brush first and ends out of the camera's view. */
		CHECK(s->n_actions >= 3 && s->actions[0].kind != ARM_STROKE);
		CHECK(s->actions[s->n_actions - 1].kind == ARM_PARK);
		{
			const struct machine_brush *br = machine_find_brush(m, s->brush);
			double left = 0.0;
			int strokes = 0;

			for (size_t k = 0; k < s->n_actions; k++) {
				const struct arm_action *a = &s->actions[k];

				if (a->kind == ARM_DIP) {
					CHECK(strcmp(a->cell, p->colours[s->colour].cell) == 0);
					left = br->reload_mm;
				} else if (a->kind == ARM_STROKE) {
					double len = 0.0;

					for (size_t q = 1; q < a->n_points; q++)
						len += hypot(a->points[q].x - a->points[q - 1].x,
							     a->points[q].y - a->points[q - 1].y);
					/* Never longer than one load lasts, within the 0.01 mm rounding. */
					CHECK_MSG(len <= left + 0.1, "subtask %d: %.1f mm on a load with %.1f left",
						  s->id, len, left);
					left -= len;
					strokes++;
				}
			}
			CHECK(strokes == s->n_strokes);
		}
	}
	CHECK(paints > 0);
	CHECK(checkpoints >= 2);
	CHECK(p->subtasks[p->n_subtasks - 1].type == PLAN_CHECKPOINT);
	/* Washing between colours: at least once a (pass, colour) group. */
	CHECK(count_kind(p, ARM_WASH) >= (size_t)p->n_colours);
	CHECK(p->arm_time_s > 0);
	CHECK(plan_paint_ml(p) > 0);
}

TEST(prediction_reproduces)
{
	struct plan *p = cached_plan();
	struct plan_raster t;
	double mean = -1, p95 = -1;
	bl_err err = { 0 };

	CHECK(fixture_target(0, TW, TH, &t) == 0);
	/* The plan as written (actions, colours) predicts what the planner reported. */
	CHECK_MSG(plan_predict(p, fixture_machine(), &t, 0.0, NULL, &mean, &p95, &err) == 0, "%s",
		  err.msg);
	CHECK_NEAR(mean, p->mean_de00, 0.1);
	CHECK_NEAR(p95, p->p95_de00, 0.5);
	CHECK(p->mean_de00 < p->p95_de00);
	plan_raster_free(&t);
}

TEST(beats_grid_baseline)
{
	/* The planner must be clearly better than strokes on a grid, at every budget. */
	static const int targets[] = { 1, 4 }, budgets[] = { 100, 300 };

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			struct plan a, b;
			bl_err err = { 0 };

			CHECK(fixture_plan(targets[i], TW, TH, budgets[j], 0, &a, &err) == 0);
			CHECK(fixture_plan(targets[i], TW, TH, budgets[j], 1, &b, &err) == 0);
			CHECK_MSG(a.mean_de00 < 0.85 * b.mean_de00, "%s at %d strokes: planner %.2f, grid %.2f",
				  target_names[targets[i]], budgets[j], a.mean_de00, b.mean_de00);
			CHECK(a.n_strokes <= budgets[j] && b.n_strokes <= budgets[j]);
			plan_free(&a);
			plan_free(&b);
		}
}

TEST(more_strokes_better)
{
	struct plan a, b;
	bl_err err = { 0 };

	CHECK(fixture_plan(4, TW, TH, 60, 0, &a, &err) == 0);
	CHECK(fixture_plan(4, TW, TH, 600, 0, &b, &err) == 0);
	CHECK_MSG(b.mean_de00 < a.mean_de00, "600 strokes %.2f, 60 strokes %.2f", b.mean_de00,
		  a.mean_de00);
	CHECK(a.n_strokes <= 60);
	plan_free(&a);
	plan_free(&b);
}

TEST(blank_target_needs_nothing)
{
	struct machine *m = fixture_machine();
	struct plan_raster r;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	struct plan p;
	bl_err err = { 0 };

	plan_options_default(&o, m);
	CHECK(plan_raster_alloc(&r, 64, 48, &err) == 0);
	for (int i = 0; i < 64 * 48; i++) {
		r.px[3 * i] = (float)o.canvas_lab.L;
		r.px[3 * i + 1] = (float)o.canvas_lab.a;
		r.px[3 * i + 2] = (float)o.canvas_lab.b;
	}
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &r;
	CHECK_MSG(plan_make(&in, &o, &p, &err) == 0, "%s", err.msg);
	CHECK(p.n_strokes == 0 && p.n_colours == 0 && p.n_subtasks == 0);
	CHECK(p.mean_de00 < 0.5);
	plan_free(&p);
	plan_raster_free(&r);
}

/*
 * A machine with fewer mixing cells than the automatic choice starts from
 * (three) still gets a painting, in as many colours as it has cells: a
 * two-cell machine once got an empty plan, as if the target were blank.
 */
TEST(a_machine_of_one_or_two_cells_gets_a_painting)
{
	struct machine m = *fixture_machine();
	struct plan_raster r;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	bl_err err = { 0 };

	CHECK(fixture_target(0, TW, TH, &r) == 0);
	for (int cells = 1; cells <= 2; cells++) {
		struct plan p;

		m.n_cells = cells;
		plan_options_default(&o, &m);
		o.max_strokes = 60;
		in.machine = &m;
		in.solver = &fake_solver;
		in.target = &r;
		CHECK_MSG(plan_make(&in, &o, &p, &err) == 0, "%s", err.msg);
		CHECK_MSG(p.n_colours >= 1 && p.n_colours <= cells && p.n_strokes > 0,
			  "%d cells: %d colours, %d strokes", cells, p.n_colours, p.n_strokes);
		plan_free(&p);
	}
	plan_raster_free(&r);
}

TEST(bad_options_refused)
{
	struct machine *m = fixture_machine();
	struct plan_raster r;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	struct plan p;
	bl_err err = { 0 };

	CHECK(fixture_target(1, 80, 64, &r) == 0);
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &r;
	plan_options_default(&o, m);
	o.colours = m->n_cells + 1;
	CHECK(plan_make(&in, &o, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "mixing cells");
	plan_options_default(&o, m);
	o.max_strokes = -1;
	CHECK(plan_make(&in, &o, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "--max-strokes");
	plan_options_default(&o, m);
	in.target_w = 1;
	in.target_h = 1;
	CHECK(plan_make(&in, &o, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "1 x 1 px");
	plan_raster_free(&r);
}

/* A canvas painted perfectly but for a square painted wrong. */
TEST(correction_paints_the_damage)
{
	struct plan *p = cached_plan(), c;
	struct machine *m = fixture_machine();
	struct plan_raster t, obs;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	bl_err err = { 0 };
	int x0, y0, x1, y1, inside = 0, total = 0;

	CHECK(fixture_target(0, TW, TH, &t) == 0);
	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	/* A 60 x 40 mm smudge of grey over the grass left of the fallen leaves (mm from the picture's corner). */
	x0 = 5;
	y0 = (int)p->image_mm[3] - 70;
	x1 = x0 + 60;
	y1 = y0 + 40;
	for (int y = (int)(y0 * TH / p->image_mm[3]); y < (int)(y1 * TH / p->image_mm[3]); y++)
		for (int x = (int)(x0 * TW / p->image_mm[2]); x < (int)(x1 * TW / p->image_mm[2]); x++) {
			float *px = obs.px + 3 * ((size_t)y * obs.w + x);

			px[0] = 50.0f;
			px[1] = 0.0f;
			px[2] = 0.0f;
		}
	plan_options_default(&o, m);
	o.max_strokes = 200;
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &t;
	CHECK_MSG(plan_correct(p, &in, &obs, &o, &c, &err) == 0, "%s", err.msg);
	CHECK(c.correction == 1);
	CHECK(c.n_strokes > 0);
	CHECK(c.n_unfixable == 0);
	CHECK(plan_check(&c, m, &err) == 0);
	for (size_t i = 0; i < c.n_subtasks; i++)
		for (size_t k = 0; k < c.subtasks[i].n_actions; k++) {
			const struct arm_action *a = &c.subtasks[i].actions[k];

			if (a->kind != ARM_STROKE)
				continue;
			for (size_t q = 0; q < a->n_points; q++) {
				struct canvas_pt cp = xform_to_canvas(&m->xf, (struct machine_pt){ a->points[q].x,
												  a->points[q].y });
				double x = cp.x - p->image_mm[0], y = cp.y - p->image_mm[1];

				total++;
				inside += x > x0 - 15 && x < x1 + 15 && y > y0 - 15 && y < y1 + 15;
			}
		}
	CHECK_MSG(inside == total, "%d of %d corrective points near the damage", inside, total);
	/* The corrected canvas is predicted close to the target again. */
	CHECK_MSG(c.mean_de00 < 2.0, "corrected canvas predicted at %.2f", c.mean_de00);
	plan_free(&c);
	plan_raster_free(&obs);
	plan_raster_free(&t);
}

TEST(correction_names_unfixable_cells)
{
	struct plan *p = cached_plan(), c;
	struct machine *m = fixture_machine();
	struct plan_raster t, obs;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	bl_err err = { 0 };

	CHECK(fixture_target(0, TW, TH, &t) == 0);
	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	/* The target now asks for a saturated violet patch that none of the plan's colours is near. */
	for (int y = 0; y < TH / 5; y++)
		for (int x = 0; x < TW / 5; x++) {
			float *px = t.px + 3 * ((size_t)y * TW + x);

			px[0] = 30.0f;
			px[1] = 60.0f;
			px[2] = -70.0f;
		}
	plan_options_default(&o, m);
	o.max_strokes = 100;
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &t;
	CHECK_MSG(plan_correct(p, &in, &obs, &o, &c, &err) == 0, "%s", err.msg);
	CHECK(c.n_unfixable > 0);
	for (size_t i = 0; i < c.n_unfixable; i++) {
		CHECK(c.unfixable[i].de00 > m->tolerances.paint_de00);
		/* Only cells in the violet corner (the picture's top-left fifth). */
		CHECK(c.unfixable[i].col * p->cell_mm <= p->image_mm[2] / 5 + p->cell_mm);
		CHECK(c.unfixable[i].row * p->cell_mm <= p->image_mm[3] / 5 + p->cell_mm);
	}
	plan_free(&c);
	plan_raster_free(&obs);
	plan_raster_free(&t);
}


/*
 * The stroke placer over a 120 x 80 mm grid at a pixel a millimetre, grey
 * paints only: target and start canvas L* by column (x), colours of L* cols[],
 * strokes placed with o.by_cell as given. Fills the painted canvas's L* by
 * pixel; 0 or -1.
 */
static int place_grey(float (*target_l)(int x), float (*start_l)(int x), const double *cols,
		      int n_cols, int by_cell, float *painted, int *strokes)
{
	struct machine *m = fixture_machine();
	struct pm_grid g = { .w = 120, .h = 80, .px_mm = 1.0, .w_mm = 120, .h_mm = 80 };
	struct pm_target t = { 0 };
	struct pm_strokes st = { 0 };
	struct pm_footprint fp;
	struct plan_colour pc[4];
	struct plan_options o;
	size_t n = (size_t)g.w * g.h;
	float *lab = malloc(n * 3 * sizeof(float)), *canvas = malloc(n * 3 * sizeof(float));
	bl_err err = { 0 };
	int rc = -1;

	memset(pc, 0, sizeof(pc));
	for (int k = 0; k < n_cols; k++)
		pc[k].lab = (color_lab){ cols[k], 0.0, 0.0 };
	plan_options_default(&o, m);
	o.max_strokes = 60;
	o.by_cell = by_cell;
	if (!lab || !canvas || pm_fp_init(&fp, &g, &err))
		goto out;
	for (size_t i = 0; i < n; i++) {
		int x = (int)(i % (size_t)g.w);

		lab[3 * i] = target_l(x);
		canvas[3 * i] = start_l(x);
		lab[3 * i + 1] = lab[3 * i + 2] = canvas[3 * i + 1] = canvas[3 * i + 2] = 0.0f;
	}
	if (pm_target_init(&t, &g, lab, &err) ||
	    pm_place_strokes(&g, &t, canvas, NULL, m, pc, n_cols, &o, &st, &err))
		goto out_fp;
	*strokes = (int)st.n;
	for (size_t k = 0; k < st.n; k++) {
		float c[3] = { (float)cols[st.s[k].colour], 0.0f, 0.0f };

		if (pm_fp_stroke(&fp, &g, st.s[k].xy, st.s[k].n, m->brushes[st.s[k].brush].width_mm,
				 o.opacity, &err))
			goto out_fp;
		pm_fp_apply(&fp, canvas, c);
	}
	for (size_t i = 0; i < n; i++)
		painted[i] = canvas[3 * i];
	rc = 0;
out_fp:
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	pm_fp_free(&fp);
out:
	pm_strokes_free(&st);
	pm_target_free(&t);
	free(lab);
	free(canvas);
	return rc;
}

/* Mean over the 10 mm cells of |L* of the cell's mean - want|. */
static double cells_off(const float *l, double want)
{
	double off = 0.0;

	for (int cy = 0; cy < 8; cy++)
		for (int cx = 0; cx < 12; cx++) {
			double sum = 0.0;

			for (int y = 10 * cy; y < 10 * cy + 10; y++)
				for (int x = 10 * cx; x < 10 * cx + 10; x++)
					sum += l[y * 120 + x];
			off += fabs(sum / 100.0 - want) / 96.0;
		}
	return off;
}

static float stripes(int x) { return x % 2 ? 90.0f : 20.0f; }
static float light(int x) { (void)x; return 90.0f; }
static float lines(int x) { return x % 4 == 0 ? 20.0f : 95.0f; }
static float lines_dim(int x) { return x % 4 == 0 ? 20.0f : 85.0f; }

TEST(corrections_judge_a_cell_by_its_mean)
{
	static float l[120 * 80];
	const double dark_grey[] = { 20.0, 55.0 }, dark_white[] = { 20.0, 95.0 };
	double off_px, off_cell, line_px = 0.0, line_cell = 0.0;
	int n_px = -1, n_cell = -1;

	/*
	 * Stripes of L* 20 and 90 a millimetre wide, finer than any brush, over
	 * a light canvas: each 10 mm cell's mean is 35 from the target's 55, and
	 * a mid grey brings it there, but it takes from one stripe nearly what it
	 * gives the other. Judged by cells too, the grey paints them (6 off
	 * where pixel by pixel leaves them 18 off).
	 */
	CHECK(place_grey(stripes, light, dark_grey, 2, 0, l, &n_px) == 0);
	off_px = cells_off(l, 55.0);
	CHECK(place_grey(stripes, light, dark_grey, 2, 1, l, &n_cell) == 0);
	off_cell = cells_off(l, 55.0);
	fprintf(stderr, "stripes: pixel by pixel %d strokes, cells off by %.1f L*; by cell %d, %.1f\n",
		n_px, off_px, n_cell, off_cell);
	CHECK_MSG(off_cell < 10.0, "by cell the cells are still off by %.1f L*", off_cell);
	CHECK_MSG(off_px > 2.0 * off_cell, "pixel by pixel %.1f, by cell %.1f", off_px, off_cell);

	/*
	 * Dark lines a millimetre wide every 4 mm on a ground 10 L* too dim: white
	 * would bring the cells' means nearer only by covering the lines, which a
	 * brush cannot paint back. A stroke is worth the lesser of what it does
	 * for the cells' means and for the pixels, so the lines stay (judged by
	 * the cells' means alone, they were painted over to L* 53).
	 */
	CHECK(place_grey(lines, lines_dim, dark_white, 2, 1, l, &n_cell) == 0);
	for (int y = 0; y < 80; y++)
		for (int x = 0; x < 120; x += 4)
			line_cell += l[y * 120 + x] / (80.0 * 30.0);
	CHECK(place_grey(lines, lines_dim, dark_white, 2, 0, l, &n_px) == 0);
	for (int y = 0; y < 80; y++)
		for (int x = 0; x < 120; x += 4)
			line_px += l[y * 120 + x] / (80.0 * 30.0);
	fprintf(stderr, "lines: by cell %d strokes, lines at L* %.1f; pixel by pixel %d, %.1f\n",
		n_cell, line_cell, n_px, line_px);
	CHECK_MSG(line_cell < 30.0, "by cell the lines were painted over (L* %.1f)", line_cell);
}

/* The observed canvas: the target with L* raised by dl over a 60 x 40 mm patch of the grass. */
static void lighter_patch(const struct plan *p, struct plan_raster *obs, float dl)
{
	int x0 = 5, y0 = (int)p->image_mm[3] - 70, x1 = x0 + 60, y1 = y0 + 40;

	for (int y = (int)(y0 * TH / p->image_mm[3]); y < (int)(y1 * TH / p->image_mm[3]); y++)
		for (int x = (int)(x0 * TW / p->image_mm[2]); x < (int)(x1 * TW / p->image_mm[2]); x++)
			obs->px[3 * ((size_t)y * obs->w + x)] += dl;
}

static int correct_with(struct plan_raster *obs, const color_lab *looks, const double *hiding,
			struct plan *c)
{
	struct plan *p = cached_plan();
	struct machine *m = fixture_machine();
	struct plan_raster t;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	bl_err err = { 0 };
	int rc;

	if (fixture_target(0, TW, TH, &t))
		return -1;
	plan_options_default(&o, m);
	o.max_strokes = 100;
	o.looks = looks;
	o.hiding = hiding;
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &t;
	rc = plan_correct(p, &in, obs, &o, c, &err);
	if (rc)
		fprintf(stderr, "%s\n", err.msg);
	plan_raster_free(&t);
	return rc;
}

TEST(correction_opens_cells_off_by_half_the_tolerance)
{
	struct plan *p = cached_plan(), c;
	struct plan_raster obs;

	/* A patch off by about 4 CIEDE2000 (between half the tolerance of 6 and the whole): corrected. */
	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	lighter_patch(p, &obs, 5.0f);
	CHECK(correct_with(&obs, NULL, NULL, &c) == 0);
	CHECK_MSG(c.n_strokes > 0, "no strokes for a patch off by 5 L*");
	CHECK(c.n_unfixable == 0);
	plan_free(&c);
	plan_raster_free(&obs);
	/* Off by about 1.5 (under half the tolerance): left alone. */
	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	lighter_patch(p, &obs, 1.5f);
	CHECK(correct_with(&obs, NULL, NULL, &c) == 0);
	CHECK_MSG(c.n_strokes == 0, "%d strokes for a patch off by 1.5 L*", c.n_strokes);
	plan_free(&c);
	plan_raster_free(&obs);
}

TEST(correction_places_strokes_with_the_colours_looks)
{
	struct plan *p = cached_plan(), c;
	struct plan_raster obs;
	color_lab looks[PLAN_MAX_COLOURS];

	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	lighter_patch(p, &obs, 8.0f);
	/* With the colours as mixed, the patch is repainted... */
	CHECK(correct_with(&obs, NULL, NULL, &c) == 0);
	CHECK(c.n_strokes > 0);
	plan_free(&c);
	/* ...but if every colour shows on this canvas as 30 L* lighter, no stroke would bring it closer. */
	for (int k = 0; k < p->n_colours; k++) {
		looks[k] = p->colours[k].lab;
		looks[k].L = fmin(100.0, looks[k].L + 30.0);
	}
	CHECK(correct_with(&obs, looks, NULL, &c) == 0);
	CHECK_MSG(c.n_strokes == 0, "%d strokes placed with looks that make it worse", c.n_strokes);
	/* The corrective plan keeps the colours as mixed: looks only place and predict strokes. */
	for (int k = 0; k < p->n_colours; k++)
		CHECK(color_de00(&c.colours[k].lab, &p->colours[k].lab) < 1e-9);
	plan_free(&c);
	plan_raster_free(&obs);
}

TEST(correction_lays_each_colour_at_its_coat)
{
	struct plan *p = cached_plan(), full, thin;
	struct plan_raster obs;
	double hiding[PLAN_MAX_COLOURS];

	CHECK(fixture_target(0, TW, TH, &obs) == 0);
	lighter_patch(p, &obs, 8.0f);
	CHECK(correct_with(&obs, NULL, NULL, &full) == 0);
	/* Colours that move a cell a third of the way to themselves, as a pale paint over a pale ground. */
	for (int k = 0; k < p->n_colours; k++)
		hiding[k] = 0.35;
	CHECK(correct_with(&obs, NULL, hiding, &thin) == 0);
	fprintf(stderr, "full hiding: %d strokes, predicted %.2f; a third: %d strokes, predicted %.2f\n",
		full.n_strokes, full.mean_de00, thin.n_strokes, thin.mean_de00);
	CHECK(full.n_strokes > 0 && thin.n_strokes > 0);
	/* Both are predicted to close the patch... */
	CHECK(full.mean_de00 < 1.0 && thin.mean_de00 < 1.0);
	/* ...but at a third of a coat each stroke does less, and it takes more of them (coats). */
	CHECK_MSG(thin.n_strokes > full.n_strokes + full.n_strokes / 2,
		  "%d strokes at a third of a coat, %d at a whole", thin.n_strokes, full.n_strokes);
	plan_free(&full);
	plan_free(&thin);
	plan_raster_free(&obs);
}

/* Edits the saved plan's JSON with fn and expects the loader to refuse it naming want. */
static void refuse(const char *want, void (*fn)(cJSON *))
{
	cJSON *j = plan_to_json(cached_plan());
	struct plan q;
	bl_err err = { 0 };
	char *text;
	const char *path;

	fn(j);
	text = cJSON_Print(j);
	path = test_write_file("edited.json", text);
	CHECK(plan_load(path, &q, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, want);
	cJSON_free(text);
	cJSON_Delete(j);
}

static cJSON *first_sub(cJSON *j, const char *type)
{
	cJSON *s;

	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "subtasks"))
		if (strcmp(cJSON_GetObjectItem(s, "type")->valuestring, type) == 0)
			return s;
	return NULL;
}

static void e_unknown_key(cJSON *j) { cJSON_AddNumberToObject(j, "speed", 1); }
static void e_version(cJSON *j) { cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(2)); }
static void e_colour(cJSON *j)
{
	cJSON_ReplaceItemInObject(first_sub(j, "paint"), "colour", cJSON_CreateString("c99"));
}
static void e_tolerance(cJSON *j)
{
	cJSON_ReplaceItemInObject(first_sub(j, "mix"), "tolerance_de00", cJSON_CreateNumber(-1));
}
static void e_action(cJSON *j)
{
	cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(first_sub(j, "paint"), "actions"), 1);

	cJSON_ReplaceItemInObject(a, "speed_mm_s", cJSON_CreateString("fast"));
}
static void e_cell(cJSON *j)
{
	cJSON *cells = cJSON_GetObjectItem(cJSON_GetObjectItem(first_sub(j, "paint"), "expected"), "cells");

	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cells, 0), "cell",
				  cJSON_CreateIntArray((const int[]){ 9999, 0 }, 2));
}
static void e_missing(cJSON *j) { cJSON_DeleteItemFromObject(j, "grid"); }
static void e_target_lab(cJSON *j)
{
	cJSON_ReplaceItemInObject(first_sub(j, "mix"), "target_lab",
				  cJSON_CreateDoubleArray((const double[]){ 50, 0, 0 }, 3));
}

TEST(loader_is_strict)
{
	refuse("speed: unknown key", e_unknown_key);
	refuse("version: schema version 2 is not supported", e_version);
	refuse("colour: 'c99' is not among the plan's colours", e_colour);
	refuse("tolerance_de00", e_tolerance);
	refuse("actions[1].speed_mm_s", e_action);
	refuse("is not a cell of the", e_cell);
	refuse("grid: missing required key", e_missing);
	refuse("target_lab: differs from the lab of colour", e_target_lab);
}

TEST(dip_from_mixing_cell)
{
	struct machine *m = fixture_machine();
	struct arm_action a;
	struct arm_path path = { 0 };
	arm_point at = { 100, 100, 30 };
	cJSON *j = cJSON_Parse("{\"type\": \"dip\", \"brush\": \"round-6\", \"cell\": \"m2\", "
			       "\"depth_mm\": 2, \"speed_mm_s\": 100}");
	cJSON *both = cJSON_Parse("{\"type\": \"dip\", \"brush\": \"round-6\", \"cell\": \"m2\", "
				  "\"well\": \"w1\", \"depth_mm\": 2, \"speed_mm_s\": 100}");
	bl_err err = { 0 };
	int in_cell = 0;

	CHECK_MSG(arm_action_parse(j, "t.json", 0, &a, &err) == 0, "%s", err.msg);
	CHECK(strcmp(a.cell, "m2") == 0 && a.well[0] == 0);
	CHECK(a.zones == ((1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CELL)));
	CHECK(arm_motion(m, &at, &a, &path, &err) == 0);
	for (size_t i = 0; i < path.n; i++)
		if (path.seg[i].flags & ARM_SEG_LOADS) {
			in_cell = path.seg[i].zone == ARM_ZONE_CELL;
			CHECK_NEAR(path.seg[i].to.z, machine_find_cell(m, "m2")->surface_z_mm - 2, 1e-9);
		}
	CHECK(in_cell);
	{
		cJSON *back = arm_action_to_json(&a);

		CHECK(cJSON_GetObjectItem(back, "cell") && !cJSON_GetObjectItem(back, "well"));
		cJSON_Delete(back);
	}
	arm_action_release(&a);
	CHECK(arm_action_parse(both, "t.json", 0, &a, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "exactly one of");
	arm_path_free(&path);
	cJSON_Delete(j);
	cJSON_Delete(both);
}

TEST_MAIN(T(strokes_inside_canvas), T(actions_pass_gate), T(json_round_trip),
	  T(same_inputs_same_plan), T(order_and_subtasks), T(prediction_reproduces),
	  T(beats_grid_baseline), T(more_strokes_better), T(blank_target_needs_nothing),
	  T(a_machine_of_one_or_two_cells_gets_a_painting),
	  T(bad_options_refused), T(correction_paints_the_damage),
	  T(correction_names_unfixable_cells), T(corrections_judge_a_cell_by_its_mean),
	  T(correction_opens_cells_off_by_half_the_tolerance),
	  T(correction_places_strokes_with_the_colours_looks),
	  T(correction_lays_each_colour_at_its_coat), T(loader_is_strict), T(dip_from_mixing_cell))
