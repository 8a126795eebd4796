/* test_corpus.c: the hostile and malformed action files of tests/safety/corpus, each against its expected decision and reason, and their replay. */
#include <dirent.h>

#include "safety/gate.h"
#include "safety_test.h"
#include "base/strbuf.h"

#define MAX_CASES 256

struct expect {
	char file[128];
	char decision[16];
	char reason[32];
	int seen;
};

static int load_expected(struct expect *e)
{
	char *text = slurp(src_path("tests/safety/corpus/EXPECTED")), *save = NULL, *line;
	int n = 0;

	if (!text) {
		fprintf(stderr, "cannot read corpus/EXPECTED\n");
		exit(1);
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || !line[0])
			continue;
		if (n == MAX_CASES ||
		    sscanf(line, "%127s %15s %31s", e[n].file, e[n].decision, e[n].reason) != 3) {
			fprintf(stderr, "EXPECTED: bad line '%s'\n", line);
			exit(1);
		}
		n++;
	}
	free(text);
	return n;
}

struct collect {
	int worst;
	struct gate_decision first_worst;
	int n;
	int bad_field_msgs;   /* findings whose planner message does not name their field */
	int leaks;            /* planner messages that contain the limit they were checked against */
	strbuf json;          /* every decision, operator view, for the replay */
};

static int collect(void *ctx, const struct gate_decision *d, bl_err *err)
{
	struct collect *c = ctx;
	char *s;

	(void)err;
	if (c->n == 0 || (int)d->verdict > c->worst) {
		c->worst = (int)d->verdict;
		c->first_worst = *d;
	}
	c->n++;
	for (int i = 0; i < d->n_findings; i++) {
		const struct gate_finding *f = &d->findings[i];

		if (f->field[0] && !strstr(f->message, f->field)) {
			fprintf(stderr, "message '%s' does not name field '%s'\n", f->message, f->field);
			c->bad_field_msgs++;
		}
		if (f->has_figures) {
			char lim[64];

			snprintf(lim, sizeof(lim), "%g", f->limit);
			if (strstr(f->message, lim)) {
				fprintf(stderr, "planner message '%s' leaks limit %s\n", f->message, lim);
				c->leaks++;
			}
		}
	}
	s = gate_decision_print(d, GATE_VIEW_OPERATOR);
	sb_printf(&c->json, "%s\n", s ? s : "(null)");
	free(s);
	return 0;
}

/* Runs the whole corpus; returns every decision's JSON, one a line. */
static char *run_corpus(struct expect *e, int n, int check)
{
	const struct machine *m = test_machine();
	const arm_point home = { m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	strbuf all;

	sb_init(&all);
	for (int i = 0; i < n; i++) {
		char path[4096];
		struct collect c;
		bl_err err = { 0 };
		const struct gate_finding *pf;
		const char *reason;
		int rc;

		memset(&c, 0, sizeof(c));
		sb_init(&c.json);
		snprintf(path, sizeof(path), "%s/%s", src_path("tests/safety/corpus"), e[i].file);
		rc = gate_check_file(m, path, &home, collect, &c, &err);
		if (check) {
			CHECK_MSG(rc == 0, "%s: %s", e[i].file, err.msg);
			CHECK_MSG(c.n > 0, "%s: no decision", e[i].file);
		}
		pf = gate_decision_primary(&c.first_worst);
		reason = pf ? gate_reason_names[pf->reason] : "ok";
		if (check) {
			CHECK_MSG(strcmp(gate_verdict_names[c.worst], e[i].decision) == 0 &&
					  strcmp(reason, e[i].reason) == 0,
				  "%s: expected %s %s, got %s %s (%s)", e[i].file, e[i].decision,
				  e[i].reason, gate_verdict_names[c.worst], reason,
				  pf ? pf->detail : "");
			CHECK_MSG(c.bad_field_msgs == 0, "%s: messages without their field", e[i].file);
			CHECK_MSG(c.leaks == 0, "%s: planner messages leak limits", e[i].file);
		}
		sb_printf(&all, "%s\n%s", e[i].file, c.json.s ? c.json.s : "");
		sb_free(&c.json);
	}
	return sb_take(&all);
}

TEST(corpus_decisions_match_expected)
{
	static struct expect e[MAX_CASES];
	int n = load_expected(e);
	char *out;

	CHECK_MSG(n >= 40, "the corpus has %d cases; at least 40 are asked for", n);
	out = run_corpus(e, n, 1);
	CHECK(out != NULL);
	free(out);
}

TEST(corpus_files_all_listed)
{
	static struct expect e[MAX_CASES];
	int n = load_expected(e), files = 0;
	DIR *d = opendir(src_path("tests/safety/corpus"));
	struct dirent *de;

	CHECK(d != NULL);
	while (d && (de = readdir(d))) {
		int found = 0;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "EXPECTED") == 0)
			continue;
		files++;
		for (int i = 0; i < n; i++)
			if (strcmp(e[i].file, de->d_name) == 0) {
				e[i].seen++;
				found = 1;
			}
		CHECK_MSG(found, "corpus file %s has no line in EXPECTED", de->d_name);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++)
		CHECK_MSG(e[i].seen == 1, "EXPECTED names %s, which is not in the corpus", e[i].file);
	CHECK(files == n);
}

/* Every rule of the gate that a file can trigger is in the corpus at least once. */
TEST(corpus_covers_every_rule)
{
	static struct expect e[MAX_CASES];
	static const char *const rules[] = {
		"not_json", "bad_file", "unknown_kind", "unknown_field", "missing_field",
		"duplicate_field", "bad_type", "not_finite", "out_of_range", "negative_amount",
		"absurd_size", "bad_value", "unknown_reference", "too_many_points", "paint_amount",
		"too_deep", "speed_hard", "outside_work_area", "keep_out", "below_floor",
		"undeclared_zone", "off_canvas", "outside_bounds", "move_hard", "accel_hard",
		"speed_soft", "move_soft", "accel_soft", "override_limits", "operator_kind", "homing",
		"ok", NULL,
	};
	int n = load_expected(e);

	for (int r = 0; rules[r]; r++) {
		int found = 0;

		for (int i = 0; i < n; i++)
			found |= strcmp(e[i].reason, rules[r]) == 0;
		CHECK_MSG(found, "no corpus case for rule %s", rules[r]);
	}
}

/* The same actions against the same machine give the same decisions, byte for byte. */
TEST(corpus_replay_is_byte_identical)
{
	static struct expect e[MAX_CASES];
	int n = load_expected(e);
	char *a = run_corpus(e, n, 0), *b = run_corpus(e, n, 0);

	CHECK(a && b);
	CHECK(a && b && strlen(a) > 1000);
	CHECK_MSG(a && b && strcmp(a, b) == 0, "two runs of the corpus differ");
	free(a);
	free(b);
}

/* And through the CLI, in fresh processes: the same bytes on stdout. */
TEST(cli_replay_is_byte_identical)
{
	const char *files[] = { "deny_mixed_batch.json", "deny_accel_hard_tight_curve.json",
				"op_move_soft.json", "malformed_inf_point.json", NULL };

	for (int i = 0; files[i]; i++) {
		char path[4096], mpath[4096];
		char *o1 = NULL, *o2 = NULL;
		int r1, r2;

		snprintf(path, sizeof(path), "%s/%s", src_path("tests/safety/corpus"), files[i]);
		snprintf(mpath, sizeof(mpath), "%s", src_path("tests/safety/machine.json"));
		{
			const char *args[] = { "gate", "check", path, "--machine", mpath, "--json", NULL };

			r1 = test_brushloop(args, &o1, NULL);
			r2 = test_brushloop(args, &o2, NULL);
		}
		CHECK(r1 == r2 && r1 >= 0);
		CHECK_MSG(o1 && o2 && strcmp(o1, o2) == 0, "%s: CLI output differs between runs",
			  files[i]);
		CHECK(o1 && strstr(o1, "\"decisions\""));
		free(o1);
		free(o2);
	}
}

TEST_MAIN(T(corpus_decisions_match_expected), T(corpus_files_all_listed),
	  T(corpus_covers_every_rule), T(corpus_replay_is_byte_identical),
	  T(cli_replay_is_byte_identical))
