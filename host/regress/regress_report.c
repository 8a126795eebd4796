/* regress_report.c: a suite result for a person (the summary table) and for CI systems (JUnit XML). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	sb_printf(sb, "run directory: %s\n", str(c, "run_dir"));
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
	sb_printf(sb, "      <system-out>");
	sb_xml(sb, str(c, "run_dir"));
	sb_printf(sb, "</system-out>\n    </testcase>\n");
}

int regress_junit_write(const cJSON *result, const char *path, bl_err *err)
{
	const cJSON *c, *t = get(result, "totals");
	strbuf sb;
	char *text;
	int rc;

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
	text = sb_take(&sb);
	if (!text)
		return bl_fail(err, BL_ENOMEM, "out of memory writing %s", path);
	rc = fs_write_atomic(path, text, strlen(text), err);
	free(text);
	return rc;
}
