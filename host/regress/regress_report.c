/* regress_report.c: a suite result for a person (the summary table) and for CI systems (JUnit XML). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "regress/regress.h"

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* A count of cases from result.json: -1 when it holds none a count can be. */
static int tally(const cJSON *v)
{
	long n;

	return json_whole(v, 0, INT_MAX, &n) ? (int)n : -1;
}

static const char *str(const cJSON *o, const char *k)
{
	return cJSON_GetStringValue(get(o, k)) ?: "";
}

/*
 * path (absolute) relative to the current folder, as the CI that reads the
 * JUnit file finds files: Jenkins under its workspace, GitLab under
 * $CI_PROJECT_DIR, both where the job's commands run. A path that is not
 * absolute, or a folder that cannot be found, is left as it is.
 */
static void relative(const char *path, char *out, size_t n)
{
	char cwd[PATH_MAX];
	size_t common = 0;
	int up = 0;

	if (path[0] != '/' || !getcwd(cwd, sizeof(cwd))) {
		snprintf(out, n, "%s", path);
		return;
	}
	/* The longest leading run of whole components the two share. */
	for (size_t i = 0;; i++) {
		int end_c = cwd[i] == '\0', end_p = path[i] == '\0' || path[i] == '/';

		if (end_c && end_p) {
			common = i;
			break;
		}
		if (cwd[i] != path[i])
			break;
		if (cwd[i] == '/')
			common = i;
	}
	if (!strcmp(cwd, "/"))
		common = 0;
	for (const char *q = cwd + common; *q; q++)
		up += *q == '/';
	out[0] = '\0';
	for (int k = 0; k < up; k++)
		snprintf(out + strlen(out), n - strlen(out), "../");
	snprintf(out + strlen(out), n - strlen(out), "%s", path[common] == '/' ? path + common + 1 : path + common);
	if (!out[0])
		snprintf(out, n, ".");
}

/* The text sb holds, written atomically to path (sb is emptied). */
static int write_text(strbuf *sb, const char *path, bl_err *err)
{
	char *text = sb_take(sb);
	int rc;

	if (!text)
		return bl_fail(err, BL_ENOMEM, "out of memory writing %s", path);
	rc = fs_write_atomic(path, text, strlen(text), err);
	free(text);
	return rc;
}

/* A number in a column of width w with d decimals, or "-" when the run has none. */
static void col(FILE *f, const cJSON *o, const char *k, int w, int d)
{
	const cJSON *v = get(o, k);

	if (cJSON_IsNumber(v))
		fprintf(f, " %*.*f", w, d, v->valuedouble);
	else
		fprintf(f, " %*s", w, "-");
}

void regress_print_table(const cJSON *result, FILE *f)
{
	const cJSON *c, *t = get(result, "totals");
	int idw = 4, base = cJSON_IsTrue(get(result, "baseline"));

	cJSON_ArrayForEach(c, get(result, "cases"))
		if ((int)strlen(str(c, "id")) > idw)
			idw = (int)strlen(str(c, "id"));
	fprintf(f, "%-*s %-7s %-11s %4s %6s %6s %6s %8s %8s %7s %7s %7s %7s%s\n", idw, "case",
		"verdict", "state", "exit", "mean", "p95", "see 1m", "arm s", "paint ml", "mix/col", "wall s", "clock h",
		"refills", base ? "  mean vs base" : "");
	cJSON_ArrayForEach(c, get(result, "cases")) {
		const cJSON *fig = get(c, "figures"), *b = get(get(c, "baseline"), "mean_de00");

		fprintf(f, "%-*s %-7s %-11s", idw, str(c, "id"), str(c, "verdict"),
			*str(c, "state") ? str(c, "state") : "-");
		col(f, c, "exit", 4, 0);
		col(f, fig, "mean_de00", 6, 2);
		col(f, fig, "p95_de00", 6, 2);
		col(f, fig, "scielab_1m", 6, 2);
		col(f, fig, "arm_s", 8, 0);
		col(f, fig, "paint_ml", 8, 2);
		col(f, fig, "mixes_per_colour", 7, 0);
		col(f, fig, "wall_s", 7, 1);
		col(f, fig, "clock_h", 7, 2);
		col(f, fig, "refills", 7, 0);
		if (base) {
			if (cJSON_IsNumber(get(b, "delta")))
				fprintf(f, "  %+13.2f", get(b, "delta")->valuedouble);
			else
				fprintf(f, "  %13s", "-");
		}
		fputc('\n', f);
	}
	cJSON_ArrayForEach(c, get(result, "cases")) {
		const cJSON *e;

		if (*str(c, "error"))
			fprintf(f, "ERROR %s: %s\n", str(c, "id"), str(c, "error"));
		cJSON_ArrayForEach(e, get(c, "failures"))
			fprintf(f, "FAIL  %s: %s\n", str(c, "id"), str(e, "message"));
	}
	fprintf(f, "%d cases: %d passed, %d failed, %d errors\n",
		tally(get(t, "cases")), tally(get(t, "passed")),
		tally(get(t, "failed")), tally(get(t, "errors")));
}

/* <property name="KEY" value="V"/> of a number, string or boolean (null and absent: none). */
static void junit_property(strbuf *sb, const char *key, const cJSON *v)
{
	if (!v || (!cJSON_IsNumber(v) && !cJSON_IsString(v) && !cJSON_IsBool(v)))
		return;
	sb_printf(sb, "        <property name=\"");
	sb_xml(sb, key);
	sb_printf(sb, "\" value=\"");
	if (cJSON_IsNumber(v))
		sb_printf(sb, "%.6g", v->valuedouble);
	else if (cJSON_IsBool(v))
		sb_printf(sb, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else
		sb_xml(sb, v->valuestring);
	sb_printf(sb, "\"/>\n");
}

/* Every figure of a case, a line each, for the body of its failure. */
static void figures_text(strbuf *sb, const cJSON *c)
{
	const cJSON *it;

	sb_printf(sb, "state: %s (exit ", str(c, "state"));
	if (cJSON_IsNumber(get(c, "exit")))
		sb_printf(sb, "%d", (int)get(c, "exit")->valuedouble);
	else
		sb_printf(sb, "none");
	sb_printf(sb, "): %s\n", str(c, "reason"));
	cJSON_ArrayForEach(it, get(c, "figures")) {
		if (cJSON_IsNumber(it))
			sb_printf(sb, "%s: %.6g\n", it->string, it->valuedouble);
		else
			sb_printf(sb, "%s: %s\n", it->string, cJSON_IsTrue(it) ? "true"
							    : cJSON_IsFalse(it) ? "false" : "none");
	}
	{
		char rel[PATH_MAX + 256];

		relative(str(c, "run_dir"), rel, sizeof(rel));
		sb_printf(sb, "run directory: %s\n", rel);
	}
}

/* A testcase's properties: what the case is (seed, loop, strokes...) and every figure it has. */
static void junit_properties(strbuf *sb, const cJSON *c)
{
	/* The case's keys, and the names they go by (its --colours is not the figure "colours", the plan's). */
	static const char *const keys[][2] = {
		{ "group", "group" }, { "target", "target" }, { "seed", "seed" }, { "strokes", "strokes" },
		{ "loop", "loop" }, { "colours", "colours_asked" }, { "accept_nearest", "accept_nearest" },
		{ "refill", "refill" }, { "state", "state" }, { "exit", "exit" },
	};
	const cJSON *it;

	sb_printf(sb, "      <properties>\n");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		junit_property(sb, keys[i][1], get(c, keys[i][0]));
	cJSON_ArrayForEach(it, get(c, "figures"))
		junit_property(sb, it->string, it);
	sb_printf(sb, "      </properties>\n");
}

/* system-out: the run directory and each attachment on a line of its own, [[ATTACHMENT|path]], paths relative. */
static void junit_out(strbuf *sb, const cJSON *result, const cJSON *c)
{
	char p[PATH_MAX + 256], rel[PATH_MAX + 256];
	const cJSON *a;

	relative(str(c, "run_dir"), rel, sizeof(rel));
	sb_printf(sb, "      <system-out>run directory: ");
	sb_xml(sb, rel);
	cJSON_ArrayForEach(a, get(c, "attachments")) {
		snprintf(p, sizeof(p), "%s/%s", str(result, "dir"), cJSON_GetStringValue(a) ?: "");
		relative(p, rel, sizeof(rel));
		sb_printf(sb, "&#10;[[ATTACHMENT|");
		sb_xml(sb, rel);
		sb_printf(sb, "]]");
	}
	sb_printf(sb, "&#10;</system-out>\n");
}

static void junit_case(strbuf *sb, const cJSON *result, const cJSON *c)
{
	const cJSON *e, *fails = get(c, "failures");
	strbuf msg, body;
	int thr = 0, bas = 0;

	sb_printf(sb, "    <testcase classname=\"");
	sb_xml(sb, str(result, "suite"));
	if (*str(c, "group")) {
		sb_printf(sb, ".");
		sb_xml(sb, str(c, "group"));
	}
	sb_printf(sb, "\" name=\"");
	sb_xml(sb, str(c, "id"));
	sb_printf(sb, "\" time=\"%.3f\">\n",
		  cJSON_GetNumberValue(get(get(c, "figures"), "wall_s")) > 0
			  ? cJSON_GetNumberValue(get(get(c, "figures"), "wall_s"))
			  : 0.0);
	junit_properties(sb, c);
	if (*str(c, "error")) {
		sb_printf(sb, "      <error type=\"error\" message=\"");
		sb_xml(sb, str(c, "error"));
		sb_printf(sb, "\"/>\n");
	} else if (cJSON_GetArraySize(fails)) {
		sb_init(&msg);
		sb_init(&body);
		cJSON_ArrayForEach(e, fails) {
			sb_printf(&msg, "%s%s", msg.len ? "; " : "", str(e, "message"));
			thr |= !strcmp(str(e, "kind"), "threshold");
			bas |= !strcmp(str(e, "kind"), "baseline");
		}
		figures_text(&body, c);
		sb_printf(sb, "      <failure type=\"%s\" message=\"",
			  thr && bas ? "threshold,baseline" : thr ? "threshold" : "baseline");
		sb_xml(sb, msg.s ? msg.s : "");
		sb_printf(sb, "\">");
		sb_xml(sb, body.s ? body.s : "");
		sb_printf(sb, "</failure>\n");
		sb_free(&msg);
		sb_free(&body);
	}
	junit_out(sb, result, c);
	sb_printf(sb, "    </testcase>\n");
}

int regress_junit_write(const cJSON *result, const char *path, bl_err *err)
{
	const cJSON *c, *t = get(result, "totals");
	strbuf sb;

	sb_init(&sb);
	sb_printf(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	for (int outer = 0; outer < 2; outer++) {
		sb_printf(&sb, "%s<%s name=\"", outer ? "  " : "", outer ? "testsuite" : "testsuites");
		sb_xml(&sb, outer ? str(result, "suite") : "brushloop regress");
		sb_printf(&sb, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\"%s time=\"%.3f\">\n",
			  tally(get(t, "cases")),
			  tally(get(t, "failed")),
			  tally(get(t, "errors")), outer ? " skipped=\"0\"" : "",
			  cJSON_GetNumberValue(get(t, "run_wall_s")));
	}
	cJSON_ArrayForEach(c, get(result, "cases"))
		junit_case(&sb, result, c);
	sb_printf(&sb, "  </testsuite>\n</testsuites>\n");
	return write_text(&sb, path, err);
}

/* A figure of a case for Markdown, with d decimals ("–" when the run has none). */
static void md_num(strbuf *sb, const cJSON *o, const char *k, int d)
{
	const cJSON *v = get(o, k);

	if (cJSON_IsNumber(v))
		sb_printf(sb, " %.*f |", d, v->valuedouble);
	else
		sb_printf(sb, " – |");
}

/* Text for a Markdown table cell: no '|' or newline breaks it. */
static void md_text(strbuf *sb, const char *s)
{
	for (; *s; s++)
		sb_printf(sb, "%s", *s == '|' ? "\\|" : *s == '\n' ? " " : (char[2]){ *s, 0 });
}

static void md_table(strbuf *sb, const cJSON *result, int failed_ones)
{
	int base = cJSON_IsTrue(get(result, "baseline"));
	const cJSON *c;

	sb_printf(sb, "| case | verdict | state | mean ΔE00 | p95 ΔE00 |%s arm h | paint ml | mixes/colour | wall s |\n"
		      "|---|---|---|---:|---:|%s---:|---:|---:|---:|\n", base ? " mean vs baseline |" : "",
		  base ? "---:|" : "");
	cJSON_ArrayForEach(c, get(result, "cases")) {
		const cJSON *f = get(c, "figures"), *d = get(get(get(c, "baseline"), "mean_de00"), "delta");
		int bad = strcmp(str(c, "verdict"), "pass") != 0;

		if (bad != failed_ones)
			continue;
		sb_printf(sb, "| `");
		md_text(sb, str(c, "id"));
		sb_printf(sb, "` | %s | %s |", bad ? (strcmp(str(c, "verdict"), "error") ? "**fail**" : "**error**")
					     : "pass", *str(c, "state") ? str(c, "state") : "–");
		md_num(sb, f, "mean_de00", 2);
		md_num(sb, f, "p95_de00", 2);
		if (base) {
			if (cJSON_IsNumber(d))
				sb_printf(sb, " %+.2f |", d->valuedouble);
			else
				sb_printf(sb, " – |");
		}
		if (cJSON_IsNumber(get(f, "arm_s")))
			sb_printf(sb, " %.2f |", get(f, "arm_s")->valuedouble / 3600.0);
		else
			sb_printf(sb, " – |");
		md_num(sb, f, "paint_ml", 1);
		md_num(sb, f, "mixes_per_colour", 0);
		md_num(sb, f, "wall_s", 0);
		sb_printf(sb, "\n");
	}
}

int regress_markdown_write(const cJSON *result, const char *path, bl_err *err)
{
	const cJSON *t = get(result, "totals"), *c, *e, *bf = get(result, "baseline_file");
	int n = (int)cJSON_GetNumberValue(get(t, "cases")), ok = (int)cJSON_GetNumberValue(get(t, "passed"));
	strbuf sb;

	sb_init(&sb);
	sb_printf(&sb, "### brushloop regress `");
	md_text(&sb, str(result, "suite"));
	sb_printf(&sb, "`: %s %d of %d cases passed", ok == n ? "✅" : "❌", ok, n);
	sb_printf(&sb, " (%d failed, %d errors; %.0f s of runs)\n\n", (int)cJSON_GetNumberValue(get(t, "failed")),
		  (int)cJSON_GetNumberValue(get(t, "errors")), cJSON_GetNumberValue(get(t, "run_wall_s")));
	if (bf)
		sb_printf(&sb, "Against the baseline `%s` (SHA-256 `%.12s`).\n\n", str(bf, "path"), str(bf, "sha256"));
	if (ok < n) {
		md_table(&sb, result, 1);
		sb_printf(&sb, "\n");
		cJSON_ArrayForEach(c, get(result, "cases")) {
			if (*str(c, "error")) {
				sb_printf(&sb, "- `%s`: error: ", str(c, "id"));
				md_text(&sb, str(c, "error"));
				sb_printf(&sb, "\n");
			}
			cJSON_ArrayForEach(e, get(c, "failures")) {
				sb_printf(&sb, "- `%s`: ", str(c, "id"));
				md_text(&sb, str(e, "message"));
				sb_printf(&sb, "\n");
			}
		}
		sb_printf(&sb, "\n");
	}
	if (ok) {
		sb_printf(&sb, "<details><summary>%d passed</summary>\n\n", ok);
		md_table(&sb, result, 0);
		sb_printf(&sb, "\n</details>\n");
	}
	return write_text(&sb, path, err);
}
