/* test_regress.c: brushloop regress: verdicts in the exit code, JSON and JUnit; a bad suite; resuming a killed suite; --jobs; the Slurm split and --collect. */
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "test.h"

extern char **environ;

/* Small and quick: open-loop runs of a flat target with a budget of 6 strokes (a few seconds each). */
static const char *path_in(const char *name)
{
	static char p[8][4096];
	static int k;
	char *out = p[k++ % 8];

	snprintf(out, 4096, "%s/%s", test_tmpdir(), name);
	return out;
}

static cJSON *read_json(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long n;
	cJSON *j;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	if (fread(text, 1, (size_t)n, f) != (size_t)n)
		n = 0;
	fclose(f);
	j = cJSON_Parse(text);
	free(text);
	return j;
}

static const cJSON *case_of(const cJSON *result, const char *id)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(result, "cases"))
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "id")) ?: "", id))
			return c;
	return NULL;
}

static const char *verdict(const cJSON *result, const char *id)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(case_of(result, id), "verdict")) ?: "(none)";
}

static double figure(const cJSON *result, const char *id, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(case_of(result, id), "figures"), k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The failures of a case: how many, and whether one is of figure and kind. */
static int has_failure(const cJSON *result, const char *id, const char *fig, const char *kind)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(case_of(result, id), "failures"))
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "figure")), fig) &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "kind")), kind))
			return 1;
	return 0;
}

static int n_failures(const cJSON *result, const char *id)
{
	return cJSON_GetArraySize(cJSON_GetObjectItem(case_of(result, id), "failures"));
}

/* Runs a shell command line; its exit status, or -1. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/*
 * The JUnit file, parsed by Python's xml.etree (a real XML parser): prints
 * one line a testcase, "name status type|message", and the totals.
 */
static char *junit_summary(const char *path)
{
	static char out[8192];
	char cmd[8192];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c '\n"
		 "import sys, xml.etree.ElementTree as ET\n"
		 "r = ET.parse(sys.argv[1]).getroot()\n"
		 "assert r.tag == \"testsuites\", r.tag\n"
		 "s = r.find(\"testsuite\")\n"
		 "print(\"totals\", s.get(\"tests\"), s.get(\"failures\"), s.get(\"errors\"))\n"
		 "for c in s.findall(\"testcase\"):\n"
		 "    f, e = c.find(\"failure\"), c.find(\"error\")\n"
		 "    if f is not None: print(c.get(\"name\"), \"failure\", f.get(\"type\"), f.get(\"message\"), \"|\", f.text.splitlines()[0])\n"
		 "    elif e is not None: print(c.get(\"name\"), \"error\", e.get(\"message\"))\n"
		 "    else: print(c.get(\"name\"), \"pass\")\n"
		 "' '%s' 2>&1",
		 path);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? out : NULL;
}

/*
 * A testcase's properties and system-out lines as a real XML parser reads
 * them: "ID prop KEY=VALUE" and "ID out LINE", and each attachment's path
 * resolved as Jenkins and GitLab resolve a relative one (against the folder
 * the job runs in: here, this test's) with whether it is there: "ID file
 * PATH yes|no".
 */
static char *junit_details(const char *path)
{
	static char out[1 << 16];
	char cmd[8192];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c '\n"
		 "import os, re, sys, xml.etree.ElementTree as ET\n"
		 "for c in ET.parse(sys.argv[1]).getroot().iter(\"testcase\"):\n"
		 "    n = c.get(\"name\")\n"
		 "    for p in c.iter(\"property\"): print(n, \"prop\", p.get(\"name\") + \"=\" + p.get(\"value\"))\n"
		 "    for l in (c.findtext(\"system-out\") or \"\").splitlines():\n"
		 "        print(n, \"out\", l)\n"
		 "        m = re.fullmatch(r\"\\[\\[ATTACHMENT\\|(.+)\\]\\]\", l)\n"
		 "        if m: print(n, \"file\", m.group(1), \"yes\" if os.path.isfile(m.group(1)) else \"no\")\n"
		 "' '%s' 2>&1",
		 path);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	return pclose(p) == 0 ? out : NULL;
}

/* The SHA-256 of a file as sha256sum (GNU coreutils) gives it. */
static const char *sha256sum(const char *path)
{
	static char hex[80];
	char cmd[4200];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	hex[0] = '\0';
	if ((p = popen(cmd, "r"))) {
		if (fscanf(p, "%64s", hex) != 1)
			hex[0] = '\0';
		pclose(p);
	}
	return hex;
}

/*
 * What a CI shows of the suite of four: the Markdown for a pull-request
 * comment, the JUnit cases' properties and attachments (Jenkins'
 * junit-attachments plugin and GitLab: [[ATTACHMENT|path]], a line each in
 * system-out; the paths relative, each case's files under names of its own),
 * and the baseline named in the result with its digest.
 */
static void check_ci_outputs(const cJSON *res, const char *junit, const char *md, const char *bpath)
{
	const cJSON *bf = cJSON_GetObjectItem(res, "baseline_file");
	char real[4096], want[600], *text = NULL, *js;

	CHECK(realpath(bpath, real) != NULL);
	CHECK_MSG(bf && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(bf, "path")) ?: "", real),
		  "the result does not name its baseline file %s", real);
	CHECK_MSG(bf && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(bf, "sha256")) ?: "", sha256sum(bpath)),
		  "the baseline's digest is not sha256sum's %s", sha256sum(bpath));
	CHECK(fs_read_file(md, 1 << 20, &text, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(text, "### brushloop regress `four`: ❌ 1 of 4 cases passed (2 failed, 1 errors;");
	snprintf(want, sizeof(want), "Against the baseline `%s` (SHA-256 `%.12s`)", real, sha256sum(bpath));
	CHECK_STR_CONTAINS(text, want);
	CHECK_STR_CONTAINS(text, "| `miss-flat-shapes-s1-n6-open` | **fail** | finished |");
	CHECK_STR_CONTAINS(text, "| `gone-no-such-picture-s1-n6-open` | **error** | – |");
	CHECK_STR_CONTAINS(text, "- `worse-flat-shapes-s1-n6-open`: mean_de00 ");
	CHECK_STR_CONTAINS(text, "<details><summary>1 passed</summary>\n\n| case |");
	CHECK_STR_CONTAINS(text, "| `pass-flat-shapes-s1-n6-open` | pass | finished |");
	free(text);
	js = junit_details(junit);
	CHECK_MSG(js != NULL, "the JUnit file does not parse");
	if (!js)
		return;
	for (const char *p = "seed=1\0loop=open\0strokes=6\0state=finished\0exit=0\0mean_de00=\0paint_ml=\0"; *p;
	     p += strlen(p) + 1) {
		snprintf(want, sizeof(want), "pass-flat-shapes-s1-n6-open prop %s", p);
		CHECK_STR_CONTAINS(js, want);
	}
	CHECK_MSG(!strstr(js, " out run directory: /"), "system-out names an absolute path: %s", js);
	CHECK_STR_CONTAINS(js, "pass-flat-shapes-s1-n6-open out run directory: ");
	for (const char *p = "canvas.jpg\0errmap.png\0report.html\0"; *p; p += strlen(p) + 1) {
		snprintf(want, sizeof(want), "/attachments/miss-flat-shapes-s1-n6-open-%s yes\n", p);
		CHECK_STR_CONTAINS(js, want);
	}
	CHECK_MSG(!strstr(js, " no\n"), "an attachment that is not there: %s", js);
	CHECK_MSG(!strstr(js, " file /"), "an attachment by its absolute path: %s", js);
}

/* One suite of the four kinds of case, the worse one judged against a baseline written by hand. */
TEST(a_suite_says_which_case_passed_missed_got_worse_and_had_no_target)
{
	char suite[4096], base[4096];
	const char *out = path_in("out"), *junit = path_in("suite.xml"), *md = path_in("summary.md"), *spath, *bpath;
	cJSON *res;
	char *so = NULL, *se = NULL, *js;
	int rc;

	snprintf(suite, sizeof(suite),
		 "{\"kind\": \"suite\", \"version\": 1, \"name\": \"four\",\n"
		 " \"strokes\": [6], \"loops\": [\"open\"],\n"
		 " \"cases\": [\n"
		 "  {\"name\": \"pass\", \"targets\": [\"%s\"], \"thresholds\": {\"mean_de00\": 60, \"finished\": true}},\n"
		 "  {\"name\": \"miss\", \"targets\": [\"%s\"], \"thresholds\": {\"mean_de00\": 1.5}},\n"
		 "  {\"name\": \"worse\", \"targets\": [\"%s\"],\n"
		 "   \"thresholds\": {\"worse_than_baseline\": {\"mean_de00\": 0.5}}},\n"
		 "  {\"name\": \"gone\", \"targets\": [\"no-such-picture.png\"]}]}\n",
		 test_src_path(TEST_TARGET), test_src_path(TEST_TARGET), test_src_path(TEST_TARGET));
	spath = strdup(test_write_file("four.json", suite));
	/* An earlier result where the worse case ended at 1.0 and the pass case is absent. */
	snprintf(base, sizeof(base),
		 "{\"kind\": \"regress-result\", \"version\": 1, \"cases\": [\n"
		 " {\"id\": \"worse-flat-shapes-s1-n6-open\", \"figures\": {\"mean_de00\": 1.0, \"p95_de00\": 1000}}]}\n");
	bpath = test_write_file("base.json", base);
	{
		const char *args[] = { "regress", spath, "--out", out, "--jobs", "2", "--baseline",
				       bpath, "--junit", junit, "--markdown", md, "--json", NULL };

		rc = test_brushloop(args, &so, &se);
	}
	CHECK_MSG(rc == 1, "exit %d, not 1 (a case failed); stderr: %s", rc, se ? se : "");
	res = cJSON_Parse(so ? so : "");
	CHECK(res != NULL);
	CHECK_MSG(!strcmp(verdict(res, "pass-flat-shapes-s1-n6-open"), "pass"), "%s",
		  verdict(res, "pass-flat-shapes-s1-n6-open"));
	CHECK(n_failures(res, "pass-flat-shapes-s1-n6-open") == 0);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(case_of(res, "pass-flat-shapes-s1-n6-open"), "baseline")));
	CHECK(!strcmp(verdict(res, "miss-flat-shapes-s1-n6-open"), "fail"));
	CHECK(has_failure(res, "miss-flat-shapes-s1-n6-open", "mean_de00", "threshold"));
	CHECK(n_failures(res, "miss-flat-shapes-s1-n6-open") == 1);
	CHECK(!strcmp(verdict(res, "worse-flat-shapes-s1-n6-open"), "fail"));
	CHECK(has_failure(res, "worse-flat-shapes-s1-n6-open", "mean_de00", "baseline"));
	/* p95 was far worse in the baseline, and the mean's default tolerance is overridden only for mean. */
	CHECK(n_failures(res, "worse-flat-shapes-s1-n6-open") == 1);
	{
		const cJSON *b = cJSON_GetObjectItem(
			cJSON_GetObjectItem(case_of(res, "worse-flat-shapes-s1-n6-open"), "baseline"),
			"mean_de00");

		CHECK_NEAR(cJSON_GetObjectItem(b, "delta")->valuedouble,
			   figure(res, "worse-flat-shapes-s1-n6-open", "mean_de00") - 1.0, 1e-9);
		CHECK_NEAR(cJSON_GetObjectItem(b, "tolerated")->valuedouble, 0.5, 1e-12);
	}
	CHECK(!strcmp(verdict(res, "gone-no-such-picture-s1-n6-open"), "error"));
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(
				   case_of(res, "gone-no-such-picture-s1-n6-open"), "error")),
			   "no-such-picture.png does not exist");
	/* The three runs are one run three times: the simulator is deterministic. */
	CHECK(figure(res, "pass-flat-shapes-s1-n6-open", "mean_de00") > 1.5);
	CHECK(figure(res, "pass-flat-shapes-s1-n6-open", "mean_de00") ==
	      figure(res, "miss-flat-shapes-s1-n6-open", "mean_de00"));
	{
		const cJSON *t = cJSON_GetObjectItem(res, "totals");

		CHECK(cJSON_GetObjectItem(t, "passed")->valuedouble == 1);
		CHECK(cJSON_GetObjectItem(t, "failed")->valuedouble == 2);
		CHECK(cJSON_GetObjectItem(t, "errors")->valuedouble == 1);
	}
	js = junit_summary(junit);
	CHECK_MSG(js != NULL, "the JUnit file does not parse");
	if (js) {
		CHECK_STR_CONTAINS(js, "totals 4 2 1\n");
		CHECK_STR_CONTAINS(js, "pass-flat-shapes-s1-n6-open pass\n");
		CHECK_STR_CONTAINS(js, "miss-flat-shapes-s1-n6-open failure threshold mean_de00 ");
		CHECK_STR_CONTAINS(js, "is above the threshold 1.5 | state: finished (exit 0)");
		CHECK_STR_CONTAINS(js, "worse-flat-shapes-s1-n6-open failure baseline mean_de00 ");
		CHECK_STR_CONTAINS(js, "worse than the baseline's 1 (tolerated 0.5)");
		CHECK_STR_CONTAINS(js, "gone-no-such-picture-s1-n6-open error the target ");
	}
	check_ci_outputs(res, junit, md, bpath);
	/* The table says the same. */
	{
		const char *args[] = { "regress", "--collect", out, "--baseline", bpath, NULL };

		free(so);
		free(se);
		rc = test_brushloop(args, &so, &se);
		CHECK(rc == 1);
		CHECK_STR_CONTAINS(so, "FAIL  miss-flat-shapes-s1-n6-open: mean_de00");
		CHECK_STR_CONTAINS(so, "FAIL  worse-flat-shapes-s1-n6-open: mean_de00");
		CHECK_STR_CONTAINS(so, "ERROR gone-no-such-picture-s1-n6-open: the target");
		CHECK_STR_CONTAINS(so, "4 cases: 1 passed, 2 failed, 1 errors");
	}
	/* A suite of the passing case alone, on the same folder: already done, and exit 0. */
	{
		char one[4096];
		const char *p1;

		snprintf(one, sizeof(one),
			 "{\"kind\": \"suite\", \"version\": 1, \"strokes\": [6], \"loops\": [\"open\"],\n"
			 " \"cases\": [{\"name\": \"pass\", \"targets\": [\"%s\"]}]}\n",
			 test_src_path(TEST_TARGET));
		p1 = test_write_file("one.json", one);
		{
			const char *a2[] = { "regress", p1, "--out", out, NULL };

			free(so);
			free(se);
			rc = test_brushloop(a2, &so, &se);
		}
		CHECK_MSG(rc == 0, "exit %d: %s", rc, so ? so : "");
		CHECK_STR_CONTAINS(se, "1 of 1 done (1 already done, 0 cannot run)");
		CHECK_STR_CONTAINS(so, "1 cases: 1 passed, 0 failed, 0 errors");
	}
	cJSON_Delete(res);
	free(so);
	free(se);
	free((char *)spath);
}

/* Each bad suite: exit 2, the file and the key named, nothing run. */
TEST(a_bad_suite_is_exit_2_naming_the_file_and_key)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{ "\"strokes\": [6], \"cases\": [{\"targets\": [\"x.png\"], \"thresholds\": {\"mean_de0\": 3}}]",
		  "cases[0].thresholds.mean_de0: unknown key" },
		{ "\"strokes\": [6], \"jobs\": 3, \"cases\": [{\"targets\": [\"x.png\"]}]", "jobs: unknown key" },
		{ "\"strokes\": [6], \"loops\": [\"closed\", \"shut\"], \"cases\": [{\"targets\": [\"x.png\"]}]",
		  "loops[1]: must be \"closed\" or \"open\"" },
		{ "\"cases\": [{\"targets\": [\"x.png\"]}]", "cases[0].strokes: needed here or at the top" },
		{ "\"strokes\": [6], \"cases\": [{\"seeds\": [1]}]", "cases[0].targets" },
		{ "\"strokes\": [6], \"cases\": [{\"targets\": [\"x.png\"]}, {\"targets\": [\"y/x.png\"]}]",
		  "two cases are both x-s1-n6-closed" },
		{ "\"strokes\": [0], \"cases\": [{\"targets\": [\"x.png\"]}]", "strokes[0]: 0 is out of range" },
		{ "\"strokes\": [6], \"machine\": \"palette.json\", \"cases\": [{\"targets\": [\"x.png\"]}]",
		  "machine" },
		{ "\"strokes\": [6], \"cases\": [{\"targets\": [\"x.png\"], "
		  "\"thresholds\": {\"worse_than_baseline\": {\"wall_s\": 3}}}]",
		  "cases[0].thresholds.worse_than_baseline.wall_s: unknown key" },
	};
	char text[2048];

	/* A machine file that is a palette: the suite names it and the machine loader says why. */
	{
		char cmd[8192];

		snprintf(cmd, sizeof(cmd), "cp '%s/examples/palette.json' '%s/palette.json'",
			 getenv("BRUSHLOOP_SRC"), test_tmpdir());
		CHECK(system(cmd) == 0);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *p, *args[] = { "regress", NULL, "--out", path_in("bad-out"), NULL };
		char *so = NULL, *se = NULL;
		int rc;

		snprintf(text, sizeof(text), "{\"kind\": \"suite\", \"version\": 1, %s}\n", bad[i].body);
		p = test_write_file("bad.json", text);
		args[1] = p;
		rc = test_brushloop(args, &so, &se);
		CHECK_MSG(rc == 2, "suite %zu: exit %d, not 2", i, rc);
		CHECK_STR_CONTAINS(se, "bad.json");
		CHECK_STR_CONTAINS(se, bad[i].says);
		CHECK_MSG(access(path_in("bad-out"), F_OK) != 0, "suite %zu made its output folder", i);
		free(so);
		free(se);
	}
	{
		const char *args[] = { "regress", path_in("nothing.json"), NULL };
		int rc = test_brushloop(args, NULL, NULL);

		CHECK_MSG(rc == 2, "a missing suite file: exit %d", rc);
	}
	{
		char p[4096];
		const char *s;

		snprintf(p, sizeof(p), "%s", test_write_file("b.json", "{\"kind\": \"regress-result\", \"version\": 2, \"cases\": []}"));
		s = test_write_file("ok.json", "{\"kind\": \"suite\", \"version\": 1, \"strokes\": [6], "
							   "\"cases\": [{\"targets\": [\"x.png\"]}]}");
		const char *args[] = { "regress", s, "--out", path_in("b-out"), "--baseline", p, NULL };
		char *se = NULL;
		int rc = test_brushloop(args, NULL, &se);

		CHECK_MSG(rc == 2, "a baseline of another version: exit %d", rc);
		CHECK_STR_CONTAINS(se, "not a regress result");
		CHECK_STR_CONTAINS(se, "b.json: version: schema version 2 is not supported: it is newer "
				   "than version 1");
		free(se);
	}
}

static const char *three_cases(void)
{
	char suite[2048];

	snprintf(suite, sizeof(suite),
		 "{\"kind\": \"suite\", \"version\": 1, \"strokes\": [6], \"loops\": [\"open\"],\n"
		 " \"seeds\": [1, 2, 3], \"cases\": [{\"targets\": [\"%s\"]}]}\n",
		 test_src_path(TEST_TARGET));
	return test_write_file("three.json", suite);
}

static long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int journal_has(const char *dir, const char *event)
{
	char p[4200], needle[128], *text = NULL;
	FILE *f;
	long n;
	int found;

	snprintf(p, sizeof(p), "%s/journal.jsonl", dir);
	snprintf(needle, sizeof(needle), "\"event\":\"%s\"", event);
	f = fopen(p, "r");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	found = fread(text, 1, (size_t)n, f) == (size_t)n && strstr(text, needle);
	fclose(f);
	free(text);
	return found;
}

/* Killed with SIGKILL while its second case runs, then started again: the first is kept, the second resumed, the third run. */
TEST(a_suite_killed_part_way_runs_only_the_rest_when_started_again)
{
	const char *suite = three_cases(), *out = path_in("killed");
	char d1[4200], d2[4200], d3[4200], s1[4300];
	const char *argv[] = { getenv("BRUSHLOOP"), "regress", suite, "--out", out, "--quiet", NULL };
	posix_spawn_file_actions_t fa;
	cJSON *res;
	long size1;
	pid_t pid;
	int st, waited = 0;

	snprintf(d1, sizeof(d1), "%s/flat-shapes-s1-n6-open", out);
	snprintf(d2, sizeof(d2), "%s/flat-shapes-s2-n6-open", out);
	snprintf(d3, sizeof(d3), "%s/flat-shapes-s3-n6-open", out);
	snprintf(s1, sizeof(s1), "%s/state.json", d2);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0);
	CHECK(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0);
	posix_spawn_file_actions_destroy(&fa);
	/* Until the second case's run has a state (the first has finished): at most 5 minutes on a loaded machine. */
	while (access(s1, F_OK) != 0 && waited < 3000) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		nanosleep(&ts, NULL);
		waited++;
	}
	CHECK_MSG(access(s1, F_OK) == 0, "the second case never started");
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	{
		/* Its run went with it: the heartbeat stops within a moment (it beats every second or more). */
		char hb[4300];
		long before;
		struct timespec ts = { 3, 0 };

		snprintf(hb, sizeof(hb), "%s/journal.jsonl", d2);
		nanosleep(&(struct timespec){ 0, 500 * 1000 * 1000 }, NULL);
		before = file_size(hb);
		nanosleep(&ts, NULL);
		CHECK_MSG(file_size(hb) == before, "the second case's run kept writing after its suite died");
	}
	CHECK(access(d3, F_OK) != 0);
	snprintf(s1, sizeof(s1), "%s/journal.jsonl", d1);
	size1 = file_size(s1);
	CHECK(size1 > 0);
	{
		const char *args[] = { "regress", suite, "--out", out, "--json", NULL };
		char *so = NULL, *se = NULL;
		int rc = test_brushloop(args, &so, &se);

		CHECK_MSG(rc == 0, "exit %d; stderr %s", rc, se ? se : "");
		CHECK_STR_CONTAINS(se, "of 3 done (1 already done, 0 cannot run)");
		res = cJSON_Parse(so ? so : "");
		CHECK(res != NULL);
		CHECK(!strcmp(verdict(res, "flat-shapes-s1-n6-open"), "pass"));
		CHECK(!strcmp(verdict(res, "flat-shapes-s2-n6-open"), "pass"));
		CHECK(!strcmp(verdict(res, "flat-shapes-s3-n6-open"), "pass"));
		cJSON_Delete(res);
		free(so);
		free(se);
	}
	CHECK_MSG(file_size(s1) == size1, "the first case ran again");
	CHECK(journal_has(d1, "resume") == 0);
	CHECK_MSG(journal_has(d2, "resume") == 1, "the killed case was not resumed");
	CHECK(journal_has(d2, "finished") == 1);
	CHECK(journal_has(d3, "resume") == 0);
	CHECK(journal_has(d3, "finished") == 1);
}

/* SIGTERM (or a Ctrl-C) to the suite: each run is paused once, cleanly, the suite exits 3, and started again it resumes them. */
TEST(an_interrupted_suite_pauses_its_runs_and_goes_on_when_started_again)
{
	char suite[2048], d1[4200], st1[4300];
	const char *spath, *out = path_in("interrupted");
	const char *argv[] = { getenv("BRUSHLOOP"), "regress", NULL, "--out", out, "--quiet", NULL };
	pid_t pid;
	int st, waited = 0;

	snprintf(suite, sizeof(suite),
		 "{\"kind\": \"suite\", \"version\": 1, \"strokes\": [6], \"loops\": [\"open\"],\n"
		 " \"seeds\": [1, 2], \"cases\": [{\"targets\": [\"%s\"]}]}\n",
		 test_src_path(TEST_TARGET));
	spath = test_write_file("two.json", suite);
	argv[2] = spath;
	snprintf(d1, sizeof(d1), "%s/flat-shapes-s1-n6-open", out);
	snprintf(st1, sizeof(st1), "%s/state.json", d1);
	CHECK(posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ) == 0);
	while (access(st1, F_OK) != 0 && waited++ < 3000)
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
	CHECK(kill(pid, SIGTERM) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 3, "the interrupted suite exited %d, not 3",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	{
		const char *args[] = { "status", d1, "--json", NULL };
		char *so = NULL;
		cJSON *j;

		test_brushloop(args, &so, NULL);
		j = cJSON_Parse(so ? so : "");
		CHECK_MSG(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "state")) ?: "", "paused"),
			  "the run is %s", cJSON_GetStringValue(cJSON_GetObjectItem(j, "state")) ?: "?");
		CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(j, "reason")), "paused by a signal");
		cJSON_Delete(j);
		free(so);
	}
	{
		const char *args[] = { "regress", spath, "--out", out, "--quiet", NULL };
		char *so = NULL;

		CHECK(test_brushloop(args, &so, NULL) == 0);
		CHECK_STR_CONTAINS(so, "2 cases: 2 passed, 0 failed, 0 errors");
		free(so);
	}
	CHECK_MSG(journal_has(d1, "resume") == 1, "the paused run was not resumed");
}

/* The simulator is deterministic: two at once paint what one at a time paints. */
/*
 * The progress lines of three cases at --jobs 2: while two or more are left,
 * two run (a line printed as a case ended, before the next started in its
 * slot, said "1 running"), and the last line has all three done.
 */
static void progress_keeps_two_running(const char *text)
{
	int lines = 0, last_done = -1;

	for (const char *l = text; l && (l = strstr(l, "regress: ")); l++) {
		int done, total, running;
		const char *r = strstr(l, " running");

		if (sscanf(l, "regress: %d of %d done", &done, &total) != 2 || !r)
			continue;
		while (r > l && r[-1] >= '0' && r[-1] <= '9')
			r--;
		running = atoi(r);
		lines++;
		last_done = done;
		CHECK_MSG(total - done < 2 || running == 2, "with %d of %d cases left, %d running",
			  total - done, total, running);
	}
	CHECK_MSG(lines >= 2, "%d progress lines", lines);
	CHECK_MSG(last_done == 3, "the last progress line has %d cases done, not 3", last_done);
}

TEST(jobs_2_gives_the_same_figures_as_jobs_1)
{
	static const char *const figs[] = { "mean_de00", "p95_de00", "arm_s", "paint_ml",
					    "mixes_per_colour", "clock_h", "strokes_done",
					    "verifications", "colours" };
	const char *suite = three_cases();
	cJSON *r[2];

	for (int j = 0; j < 2; j++) {
		const char *args[] = { "regress", suite, "--out", path_in(j ? "j2" : "j1"), "--jobs",
				       j ? "2" : "1", j ? NULL : "--quiet", NULL };
		char p[4200], *progress = NULL;

		CHECK(test_brushloop(args, NULL, j ? &progress : NULL) == 0);
		if (j)
			progress_keeps_two_running(progress);
		free(progress);
		snprintf(p, sizeof(p), "%s/result.json", path_in(j ? "j2" : "j1"));
		r[j] = read_json(p);
		CHECK(r[j] != NULL);
	}
	for (int s = 1; s <= 3; s++) {
		char id[64];

		snprintf(id, sizeof(id), "flat-shapes-s%d-n6-open", s);
		for (size_t f = 0; f < sizeof(figs) / sizeof(figs[0]); f++)
			CHECK_MSG(figure(r[0], id, figs[f]) == figure(r[1], id, figs[f]) &&
					  figure(r[0], id, figs[f]) >= 0,
				  "%s %s: %.17g at --jobs 1, %.17g at --jobs 2", id, figs[f],
				  figure(r[0], id, figs[f]), figure(r[1], id, figs[f]));
	}
	/* Different seeds are different paint batches: the figures are not all one. */
	CHECK(figure(r[0], "flat-shapes-s1-n6-open", "mean_de00") !=
	      figure(r[0], "flat-shapes-s2-n6-open", "mean_de00"));
	cJSON_Delete(r[0]);
	cJSON_Delete(r[1]);
}

/* The emitted job run by hand (as GNU parallel would run it), then --collect: the same verdicts as a local run. */
/*
 * The job's time and memory limits (sbatch's --time, --mem) among its
 * directives, and ./submit: the array, then collect.sbatch with a dependency
 * on it (afterany: it judges whatever the tasks left), both passed sbatch's
 * options; checked with a stand-in sbatch on PATH that records its arguments
 * and answers a job id as `sbatch --parsable` does.
 */
static void check_slurm_extras(const char *dir, const char *script)
{
	char p[4300], *text = NULL, *log = NULL;

	CHECK(fs_read_file(script, 1 << 20, &text, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(text, "\n#SBATCH --time=00:20:00\n");
	CHECK_STR_CONTAINS(text, "\n#SBATCH --mem=1G\n");
	free(text);
	snprintf(p, sizeof(p), "%s/collect.sbatch", dir);
	CHECK(fs_read_file(p, 1 << 20, &text, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(text, "#SBATCH --time=");
	CHECK_STR_CONTAINS(text, "\" regress --collect \"$OUT\" --junit \"$OUT/junit.xml\" --markdown \"$OUT/summary.md\"");
	free(text);
	CHECK(sh("bash -n '%s/collect.sbatch' && sh -n '%s/submit'", dir, dir) == 0);
	CHECK(fs_mkdirs(test_tmp_path("fakebin"), NULL) == 0);
	test_write_file("fakebin/sbatch", "#!/bin/sh\necho \"sbatch $*\" >> \"$SBATCH_LOG\"\n"
					   "n=$(wc -l < \"$SBATCH_LOG\")\necho \"$((4200 + n));cluster1\"\n");
	CHECK(sh("chmod +x '%s/fakebin/sbatch' && PATH='%s/fakebin':$PATH SBATCH_LOG='%s/sbatch.log' "
		 "'%s/submit' --partition=short > '%s/submit.out'", test_tmpdir(), test_tmpdir(), test_tmpdir(),
		 dir, test_tmpdir()) == 0);
	snprintf(p, sizeof(p), "%s/sbatch.log", test_tmpdir());
	CHECK(fs_read_file(p, 1 << 20, &log, NULL, NULL) == 0);
	snprintf(p, sizeof(p), "sbatch --parsable --partition=short %s/regress.sbatch\n"
		 "sbatch --parsable --dependency=afterany:4201 --partition=short %s/collect.sbatch\n", dir, dir);
	CHECK_MSG(log && !strcmp(log, p), "submit ran:\n%s\nnot:\n%s", log ? log : "", p);
	free(log);
}

TEST(collect_judges_what_the_emitted_job_left)
{
	char suite[2048], script[4300], *text = NULL;
	const char *dir = path_in("slurm"), *spath, *junit = path_in("collect.xml");
	FILE *f;
	long n;

	snprintf(suite, sizeof(suite),
		 "{\"kind\": \"suite\", \"version\": 1, \"name\": \"split\", \"strokes\": [6],\n"
		 " \"loops\": [\"open\"], \"thresholds\": {\"mean_de00\": 60},\n"
		 " \"cases\": [{\"targets\": [\"%s\", \"it's missing.png\"]}]}\n",
		 test_src_path(TEST_TARGET));
	spath = test_write_file("split.json", suite);
	{
		const char *args[] = { "regress", spath, "--emit-slurm", dir, "--jobs", "2", NULL };
		char *so = NULL;

		CHECK(test_brushloop(args, &so, NULL) == 0);
		CHECK_STR_CONTAINS(so, "2 cases: sbatch ");
		free(so);
	}
	snprintf(script, sizeof(script), "%s/regress.sbatch", dir);
	f = fopen(script, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	CHECK(fread(text, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	CHECK(!strncmp(text, "#!/bin/bash\n", 12));
	CHECK_STR_CONTAINS(text, "\n#SBATCH --array=0-1%2\n");
	CHECK_STR_CONTAINS(text, "\n#SBATCH --job-name=brushloop-split\n");
	CHECK_STR_CONTAINS(text, "'--max-strokes' '6' '--open-loop' '--quiet' ;;");
	/* Every #SBATCH line comes before the first command (sbatch stops reading them there). */
	{
		const char *last = NULL, *first_cmd = strstr(text, "\nset -u\n");

		for (const char *p = strstr(text, "\n#SBATCH"); p; p = strstr(p + 1, "\n#SBATCH"))
			last = p;
		CHECK(last && first_cmd && last < first_cmd);
	}
	free(text);
	CHECK(sh("bash -n '%s'", script) == 0);
	check_slurm_extras(dir, script);
	/* Nothing ran yet: collect says so and exits 1. */
	CHECK(sh("'%s' regress --collect '%s' >/dev/null", getenv("BRUSHLOOP"), dir) == 1);
	CHECK(sh("SLURM_ARRAY_TASK_ID=0 bash '%s'", script) == 0);
	CHECK(sh("SLURM_ARRAY_TASK_ID=1 bash '%s'", script) == 2);
	CHECK(sh("SLURM_ARRAY_TASK_ID=2 bash '%s' 2>/dev/null", script) == 2);
	/* A task started again keeps a finished run. */
	{
		char j[4300];
		long size;

		snprintf(j, sizeof(j), "%s/flat-shapes-s1-n6-open/journal.jsonl", dir);
		size = file_size(j);
		CHECK(size > 0);
		CHECK(sh("SLURM_ARRAY_TASK_ID=0 bash '%s'", script) == 0);
		CHECK(file_size(j) == size);
	}
	{
		const char *args[] = { "regress", "--collect", dir, "--junit", junit, "--json", NULL };
		char *so = NULL, *js;
		cJSON *res;
		int rc = test_brushloop(args, &so, NULL);

		CHECK(rc == 1);
		res = cJSON_Parse(so ? so : "");
		CHECK(!strcmp(verdict(res, "flat-shapes-s1-n6-open"), "pass"));
		CHECK(figure(res, "flat-shapes-s1-n6-open", "mean_de00") > 0);
		CHECK(!strcmp(verdict(res, "it_s_missing-s1-n6-open"), "error"));
		js = junit_summary(junit);
		CHECK_MSG(js != NULL, "the JUnit file does not parse");
		if (js) {
			CHECK_STR_CONTAINS(js, "totals 2 0 1\n");
			CHECK_STR_CONTAINS(js, "it_s_missing-s1-n6-open error the target ");
			CHECK_STR_CONTAINS(js, "it's missing.png does not exist");
		}
		cJSON_Delete(res);
		free(so);
	}
}

/* Without --out a suite's runs go to the user's cache ($XDG_CACHE_HOME), never into the folder it was started in (a source tree). */
TEST(without_out_the_runs_go_to_the_cache_not_the_working_folder)
{
	char here[4096], want[4300];
	const char *work = path_in("work"), *cache = path_in("cache"), *spath;
	struct stat sb;
	int rc;

	spath = test_write_file("elsewhere.json",
				"{\"kind\": \"suite\", \"version\": 1, \"name\": \"elsewhere\", \"strokes\": [6],\n"
				" \"cases\": [{\"targets\": [\"not-here.png\"]}]}\n");
	CHECK(fs_mkdirs(work, NULL) == 0 && getcwd(here, sizeof(here)) != NULL);
	CHECK(setenv("XDG_CACHE_HOME", cache, 1) == 0 && chdir(work) == 0);
	{
		const char *args[] = { "regress", spath, "--quiet", NULL };

		rc = test_brushloop(args, NULL, NULL);
	}
	CHECK(chdir(here) == 0);
	unsetenv("XDG_CACHE_HOME");
	CHECK_MSG(rc == 1, "exit %d, not 1 (its one case cannot run)", rc);
	snprintf(want, sizeof(want), "%s/brushloop/regress/elsewhere/result.json", cache);
	CHECK_MSG(stat(want, &sb) == 0, "no %s", want);
	snprintf(want, sizeof(want), "%s/runs", work);
	CHECK_MSG(stat(want, &sb) != 0, "the suite wrote into the folder it was started in (%s)", want);
}

TEST_MAIN(T(a_suite_says_which_case_passed_missed_got_worse_and_had_no_target),
	  T(a_bad_suite_is_exit_2_naming_the_file_and_key),
	  T(a_suite_killed_part_way_runs_only_the_rest_when_started_again),
	  T(an_interrupted_suite_pauses_its_runs_and_goes_on_when_started_again),
	  T(jobs_2_gives_the_same_figures_as_jobs_1), T(collect_judges_what_the_emitted_job_left),
	  T(without_out_the_runs_go_to_the_cache_not_the_working_folder))
