/* test_report.c: report.html of simulated runs: every picture it names exists, every section is there with the journal's figures, bad files are exit 2 and change nothing, and Chromium renders it with every image loaded. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/fs.h"
#include "test.h"

#define STROKES "24"

static const char *const sections[] = { "run", "final", "checkpoints", "mixes", "wells", "cost",
					"timeline", "operator", NULL };

/* The run's file name, read whole (malloc'd; NULL when it cannot be read). */
static char *run_file(const char *dir, const char *name)
{
	char path[4200], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fs_read_file(path, 1 << 28, &text, NULL, NULL))
		return NULL;
	return text;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A machine file: the example simulator's, calibrated, with edit applied (NULL: none). */
static const char *machine(const char *name, void (*edit)(cJSON *m))
{
	static char out[4200];
	char p[4096], *text = NULL, *json;
	cJSON *m, *cal;

	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	if (fs_read_file(p, 1 << 20, &text, NULL, NULL))
		return NULL;
	m = cJSON_Parse(text);
	free(text);
	if (edit)
		edit(m);
	cal = cJSON_GetObjectItem(m, "calibration");
	snprintf(p, sizeof(p), "%s/examples/calibration/sim-camera.icc", getenv("BRUSHLOOP_SRC"));
	cJSON_ReplaceItemInObjectCaseSensitive(cal, "camera_profile", cJSON_CreateString(p));
	snprintf(p, sizeof(p), "%s/examples/calibration/sim-light.json", getenv("BRUSHLOOP_SRC"));
	cJSON_ReplaceItemInObjectCaseSensitive(cal, "light_map", cJSON_CreateString(p));
	json = cJSON_Print(m);
	test_write_file(name, json);
	snprintf(out, sizeof(out), "%s/%s", test_tmpdir(), name);
	free(json);
	cJSON_Delete(m);
	return out;
}

/* A small closed-loop run of the flat target on machine (NULL: the example one); its exit status. */
static int small_run(const char *dir, const char *mach, int accept_nearest)
{
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES, "--quiet",
			       "--machine", mach ? mach : machine("m.json", NULL),
			       accept_nearest ? "--accept-nearest" : NULL, NULL };

	return test_brushloop(args, NULL, NULL);
}

/*
 * The page is one file: every <img> is a data: URI of a PNG or JPEG (none
 * names a file), each with its width and height; every href that is not an
 * anchor names a file of the run directory that exists. The pictures counted.
 */
static int self_contained(const char *dir, const char *html)
{
	int n = 0;

	for (const char *p = html; (p = strstr(p, "<img ")); p++) {
		CHECK_MSG(!strncmp(p, "<img src=\"data:image/png;base64,", 32) ||
			  !strncmp(p, "<img src=\"data:image/jpeg;base64,", 33),
			  "an <img> that is not embedded: %.80s", p);
		CHECK_MSG(strstr(p, "\" width=\"") && strstr(p, "\" width=\"") < strchr(p + 10, '>') &&
			  strstr(p, "\" height=\"") < strchr(p + 10, '>'), "an <img> without its size");
		n++;
	}
	for (const char *p = html; (p = strstr(p, "href=\"")); p++) {
		const char *v = p + 6, *end = strchr(v, '"');
		char rel[1024], path[5200];
		struct stat sb;

		if (!end || *v == '#')
			continue;
		snprintf(rel, sizeof(rel), "%.*s", (int)(end - v), v);
		CHECK_MSG(!strstr(rel, "..") && rel[0] != '/', "%s leaves the run directory", rel);
		snprintf(path, sizeof(path), "%s/%s", dir, rel);
		CHECK_MSG(stat(path, &sb) == 0 && sb.st_size > 0, "report.html links %s, which is not there", rel);
	}
	return n;
}

struct journal_figures {
	int observations, mixes, checkpoints, notes;
	char means[64][16];    /* each checkpoint's mean as the page prints it */
	char mix_de[256][16];  /* each mix measurement's CIEDE2000 */
	char frames[256][64];
};

static void read_line(const cJSON *ev, struct journal_figures *f)
{
	const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "event"));
	const cJSON *d = cJSON_GetObjectItem(ev, "data");
	const char *fr = cJSON_GetStringValue(cJSON_GetObjectItem(d, "frame"));

	if (!e)
		return;
	if (!strcmp(e, "blank_canvas") || !strcmp(e, "checkpoint") || !strcmp(e, "finished"))
		f->observations++;
	if (!strcmp(e, "checkpoint") && f->checkpoints < 64)
		snprintf(f->means[f->checkpoints++], 16, "mean <span class=\"de\">%.2f",
			 cJSON_GetObjectItem(d, "canvas_mean_de00")->valuedouble);
	if (!strcmp(e, "mix_measured") && f->mixes < 256) {
		snprintf(f->mix_de[f->mixes], 16, ">%.2f / ", cJSON_GetObjectItem(d, "de00")->valuedouble);
		snprintf(f->frames[f->mixes++], 64, "frames/%s", fr ? fr : "?");
	}
	for (const char *k = "deferred\0mix_escalated\0mix_accepted\0mix_accepted_nearest\0mix_accepted_within\0"
			     "mix_substituted\0brake\0answer\0request\0resume\0process_end\0";
	     *k; k += strlen(k) + 1)
		f->notes += !strcmp(e, k);
}

static struct journal_figures *figures(const char *dir)
{
	static struct journal_figures f;
	char *text = run_file(dir, "journal.jsonl"), *save = NULL;

	memset(&f, 0, sizeof(f));
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		cJSON *ev = cJSON_Parse(l);

		if (ev)
			read_line(ev, &f);
		cJSON_Delete(ev);
	}
	free(text);
	return &f;
}

/* The page against the journal: one figure per observation, each checkpoint's mean, every mix measurement and its frame. */
static void check_page(const char *dir, const char *html)
{
	const struct journal_figures *f = figures(dir);

	for (int i = 0; sections[i]; i++) {
		char id[64];

		snprintf(id, sizeof(id), "<section id=\"%s\">", sections[i]);
		CHECK_STR_CONTAINS(html, id);
	}
	CHECK_MSG(count(html, "<figure class=\"ob\">") == f->observations,
		  "%d observation figures for %d in the journal", count(html, "<figure class=\"ob\">"),
		  f->observations);
	for (int i = 0; i < f->checkpoints; i++)
		CHECK_STR_CONTAINS(html, f->means[i]);
	/* Each measurement a point of its colour's plot, a row of its table with its frame. */
	CHECK_MSG(count(html, "<circle cx=") - count(html, "r=\"2.5\"") == f->mixes,
		  "%d mix points for %d measurements", count(html, "<circle cx=") - count(html, "r=\"2.5\""),
		  f->mixes);
	for (int i = 0; i < f->mixes; i++) {
		CHECK_STR_CONTAINS(html, f->mix_de[i]);
		CHECK_STR_CONTAINS(html, f->frames[i]);
	}
	CHECK_MSG(count(html, "<td>run</td><td>process_end</td>") >= 1, "no process_end row");
	CHECK(self_contained(dir, html) >= 2 * f->observations + f->mixes);
}

TEST(a_finished_run_reports_every_section_with_the_journals_figures)
{
	const char *dir = test_tmp_path("whole");
	char *html, *state;
	cJSON *st;

	CHECK(small_run(dir, NULL, 1) == 0);
	html = run_file(dir, "report.html");
	CHECK_MSG(html != NULL, "the run wrote no report.html");
	if (!html)
		return;
	check_page(dir, html);
	CHECK(figures(dir)->mixes >= 3);
	/* The target beside the final canvas; cost and paint as state.json counts them. */
	CHECK_STR_CONTAINS(html, "\" alt=\"the target\" width=\"");
	CHECK_STR_CONTAINS(html, "<figcaption>the final canvas: seen from 1 m (S-CIELAB) ");
	CHECK_STR_CONTAINS(html, "; on 10 mm cells mean CIEDE2000 ");
	CHECK_STR_CONTAINS(html, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
	state = run_file(dir, "state.json");
	st = cJSON_Parse(state);
	{
		char want[64];
		const cJSON *cost = cJSON_GetObjectItem(st, "cost"), *w;

		snprintf(want, sizeof(want), ">%.0f s<", cJSON_GetObjectItem(cost, "arm_s")->valuedouble);
		CHECK_STR_CONTAINS(html, want);
		snprintf(want, sizeof(want), ">%.2f ml<", cJSON_GetObjectItem(cost, "paint_ml")->valuedouble);
		CHECK_STR_CONTAINS(html, want);
		cJSON_ArrayForEach(w, cJSON_GetObjectItem(st, "wells")) {
			double used = cJSON_GetObjectItem(w, "capacity_ml")->valuedouble -
				      cJSON_GetObjectItem(w, "left_ml")->valuedouble;

			if (used < 0.005)
				continue;
			snprintf(want, sizeof(want), "%.2f ml used", used);
			CHECK_STR_CONTAINS(html, want);
		}
	}
	cJSON_Delete(st);
	free(state);
	free(html);
}

/* Mixes no paint reaches (0.3), and the machine's rule takes any within 30 unattended. */
static void accepted_by_rule(cJSON *m)
{
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "tolerances"), "mix_de00"), 0.3);
	/* A tolerance tighter than the camera repeats (0.31 on the simulator): no camera check. */
	cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "camera"), "repeat_observations", 0);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"), "accept_within_de00"), 30);
}

/* The run's colours were accepted by unattended.accept_within_de00: the page says so, never "by the operator". */
TEST(report_remakes_the_page_and_keeps_the_pictures_it_drew)
{
	const char *dir = test_tmp_path("again");
	const char *args[] = { "report", dir, "--json", NULL };
	char *out = NULL, path[4200], *html;
	cJSON *o;

	CHECK(small_run(dir, machine("m-rule.json", accepted_by_rule), 0) == 0);
	html = run_file(dir, "report.html");
	CHECK_STR_CONTAINS(html, "accepted by the machine's rule unattended.accept_within_de00 30 (measured ");
	CHECK_MSG(html && !strstr(html, "by the operator"), "a colour the rule accepted is said to be the operator's");
	free(html);
	snprintf(path, sizeof(path), "%s/report.html", dir);
	CHECK(unlink(path) == 0);
	CHECK(test_brushloop(args, &out, NULL) == 0);
	o = cJSON_Parse(out ? out : "");
	CHECK(o && cJSON_GetObjectItem(o, "images")->valuedouble > 10);
	/* The run drew them at its end: nothing to draw again. */
	CHECK(o && cJSON_GetObjectItem(o, "drawn")->valuedouble == 0);
	cJSON_Delete(o);
	free(out);
	html = run_file(dir, "report.html");
	CHECK(html != NULL);
	check_page(dir, html);
	free(html);
	/* Without them, every one is drawn again from the frames: each look's two, a thumbnail a mix frame, the target. */
	snprintf(path, sizeof(path), "rm -rf '%s/report'", dir);
	CHECK(system(path) == 0);
	CHECK(test_brushloop(args, &out, NULL) == 0);
	o = cJSON_Parse(out ? out : "");
	CHECK(o && cJSON_GetObjectItem(o, "drawn")->valuedouble ==
			   2 * figures(dir)->observations + figures(dir)->mixes + 1);
	cJSON_Delete(o);
	free(out);
}

/* Replaces dir/name by its first half (a torn copy), keeping the whole in *saved. */
static void tear(const char *dir, const char *name, char **saved, size_t *len)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(fs_read_file(path, 1 << 28, saved, len, NULL) == 0);
	CHECK(fs_write_atomic(path, *saved, *len / 2, NULL) == 0);
}

static void restore(const char *dir, const char *name, char *saved, size_t len)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	CHECK(fs_write_atomic(path, saved, len, NULL) == 0);
	free(saved);
}

/* `brushloop report DIR` fails with exit 2 naming what, and leaves report.html as it was. */
static void refused(const char *dir, const char *what, const char *before)
{
	const char *args[] = { "report", dir, NULL };
	char *err = NULL, *after;
	int rc = test_brushloop(args, NULL, &err);

	CHECK_MSG(rc == 2, "report with %s damaged exited %d, not 2", what, rc);
	CHECK_STR_CONTAINS(err, what);
	after = run_file(dir, "report.html");
	CHECK_MSG(after && before && !strcmp(after, before), "report.html changed after %s", what);
	free(after);
	free(err);
}

TEST(a_torn_or_missing_file_is_exit_2_naming_it_and_loses_nothing)
{
	const char *dir = test_tmp_path("bad");
	char *before, *saved, *state_before, *state_after, path[4200], frame_path[4200];
	const char *frame;
	size_t len;

	CHECK(small_run(dir, NULL, 1) == 0);
	before = run_file(dir, "report.html");
	CHECK(before != NULL);
	for (const char *f = "state.json\0plan.json\0run.json\0machine.json\0"; *f; f += strlen(f) + 1) {
		tear(dir, f, &saved, &len);
		state_before = run_file(dir, f);
		refused(dir, f, before);
		state_after = run_file(dir, f);
		CHECK_MSG(state_after && !strcmp(state_after, state_before), "%s changed", f);
		free(state_before);
		free(state_after);
		restore(dir, f, saved, len);
	}
	/* A file gone: the journal, a frame a verdict rests on. */
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	snprintf(frame_path, sizeof(frame_path), "%s.away", path);
	CHECK(rename(path, frame_path) == 0);
	refused(dir, "journal.jsonl", before);
	CHECK(rename(frame_path, path) == 0);
	frame = figures(dir)->frames[0] + strlen("frames/");
	snprintf(path, sizeof(path), "%s/frames/%s", dir, frame);
	snprintf(frame_path, sizeof(frame_path), "%s.away", path);
	CHECK(rename(path, frame_path) == 0);
	refused(dir, frame, before);
	CHECK(rename(frame_path, path) == 0);
	/* A torn last journal line is how a crash leaves it: skipped and said, not an error. */
	{
		const char *args[] = { "report", dir, NULL };
		char *html;

		snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
		{
			int fd = open(path, O_WRONLY | O_APPEND);

			CHECK(fd >= 0 && write(fd, "{\"seq\":99999,\"ev", 16) == 16);
			close(fd);
		}
		CHECK(test_brushloop(args, NULL, NULL) == 0);
		html = run_file(dir, "report.html");
		CHECK_STR_CONTAINS(html, "unreadable (torn by a crash), skipped: 1");
		free(html);
	}
	/* Not a run directory at all. */
	{
		const char *args[] = { "report", test_tmpdir(), NULL };
		char *err = NULL;

		CHECK(test_brushloop(args, NULL, &err) == 2);
		CHECK_STR_CONTAINS(err, "no state.json");
		free(err);
	}
	free(before);
}

/* Mixes no paint reaches (0.3) and none accepted unattended, every stir asks a person, and a grant may last a day. */
static void tight_and_asking(cJSON *m)
{
	cJSON *safety = cJSON_GetObjectItem(m, "safety");

	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "tolerances"), "mix_de00"), 0.3);
	/* A tolerance tighter than the camera repeats (0.31 on the simulator): no camera check. */
	cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "camera"), "repeat_observations", 0);
	cJSON_AddItemToArray(cJSON_GetObjectItem(safety, "operator_kinds"), cJSON_CreateString("stir"));
	cJSON_SetNumberValue(cJSON_GetObjectItem(safety, "max_grant_s"), 86400);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"), "accept_within_de00"), 0);
}

/*
 * The operator's business end to end: a stir asks (deferred), the operator
 * says yes and grants stirs for a day; then a mix no paint reaches waits
 * (escalated), and the operator accepts the nearest it reached.
 */
TEST(deferrals_accepted_colours_and_answers_are_listed_with_their_reasons)
{
	const char *dir = test_tmp_path("asked");
	const char *approve[] = { "approve", dir, "r000001", NULL };
	const char *grant[] = { "grant", dir, "--kinds", "stir", "--zone", "cell", "--max-speed", "500",
				"--for", "24h", NULL };
	const char *resume[] = { "resume", dir, "--quiet", NULL };
	const char *accept[] = { "resume", dir, "--quiet", "--accept-mix", "all", NULL };
	char *html = NULL, *journal = NULL;
	int rc;

	rc = small_run(dir, machine("m-ask.json", tight_and_asking), 0);
	CHECK_MSG(rc == 3, "the asking run exited %d, not 3", rc);
	CHECK(test_brushloop(approve, NULL, NULL) == 0);
	CHECK(test_brushloop(grant, NULL, NULL) == 0);
	rc = test_brushloop(resume, NULL, NULL);
	CHECK_MSG(rc == 3, "resumed with stirs granted, the run exited %d, not 3 (a mix waits)", rc);
	rc = test_brushloop(accept, NULL, NULL);
	CHECK_MSG(rc == 0, "resumed with the mixes accepted, the run exited %d, not 0", rc);
	html = run_file(dir, "report.html");
	journal = run_file(dir, "journal.jsonl");
	CHECK(html && journal);
	if (!html || !journal)
		goto out;
	check_page(dir, html);
	CHECK_MSG(count(html, "<tr><td class=\"n\">") >= figures(dir)->notes,
		  "fewer rows than the journal's %d deferrals, answers and the like", figures(dir)->notes);
	CHECK_STR_CONTAINS(html, "<td>operator question</td><td>request</td><td>request r000001; type: ");
	CHECK_STR_CONTAINS(html, "<td>deferral</td><td>deferred</td><td>request r000001</td>");
	/* r000001's answer, from approvals/, with the picture the operator was shown. */
	CHECK_STR_CONTAINS(html, "<tr><td>r000001</td><td>stir</td><td>type: safety.operator_kinds lists");
	CHECK_STR_CONTAINS(html, "</td><td>yes</td><td>");
	CHECK_STR_CONTAINS(html, "\" alt=\"what the operator was shown\" width=\"160\"");
	CHECK_STR_CONTAINS(journal, "\"event\":\"mix_escalated\"");
	CHECK_STR_CONTAINS(html, "<td>deferral</td><td>mix_escalated</td><td>reason ");
	CHECK_STR_CONTAINS(html, "<td>accepted colour</td><td>mix_accepted</td><td>c");
	CHECK_STR_CONTAINS(html, "<td>run</td><td>resume</td><td>was paused; reason ");
out:
	free(html);
	free(journal);
}

static void tiny_budget(cJSON *m)
{
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "brakes"), "cost_max"), 0.2);
}

TEST(a_braked_run_reports_its_brake_and_reason)
{
	const char *dir = test_tmp_path("braked");
	char *html, *state;
	cJSON *st;
	int rc = small_run(dir, machine("m-brake.json", tiny_budget), 1);

	CHECK_MSG(rc == 4, "the run on a tiny budget exited %d, not 4", rc);
	html = run_file(dir, "report.html");
	state = run_file(dir, "state.json");
	st = cJSON_Parse(state ? state : "");
	CHECK(html && st);
	if (html && st) {
		char want[600];

		check_page(dir, html);
		CHECK_STR_CONTAINS(html, "<p class=\"state braked\">");
		snprintf(want, sizeof(want), "<td>brake</td><td>brake</td><td>brake cost; reason %s",
			 cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "brakes"), "reason")));
		CHECK_STR_CONTAINS(html, want);
	}
	cJSON_Delete(st);
	free(state);
	free(html);
}

/*
 * Chromium from Debian opens report.html through file:// (no server), with
 * no script of its own: a copy of the page beside it carries one that, once
 * the page has loaded, writes how many images it has and how many loaded
 * (naturalWidth above 0) into the DOM, which --dump-dom prints.
 */
static int chromium(const char *const *extra, const char *url, char **out)
{
	char profile[4200], udd[4300];
	const char *argv[32];
	int n = 0, fd[2], status;
	pid_t pid;

	snprintf(profile, sizeof(profile), "%s/chromium-XXXXXX", test_tmpdir());
	if (!mkdtemp(profile))
		return -1;
	snprintf(udd, sizeof(udd), "--user-data-dir=%s", profile);
	for (const char *a = "chromium\0--headless\0--no-sandbox\0--disable-gpu\0--disable-quic\0"
			     "--no-first-run\0--disable-background-networking\0"
			     "--disable-component-update\0--disable-sync\0";
	     *a; a += strlen(a) + 1)
		argv[n++] = a;
	argv[n++] = udd;
	for (int i = 0; extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = url;
	argv[n] = NULL;
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(fd[1], 1);
		dup2(nul, 2);
		close(fd[0]);
		execvp("chromium", (char **)argv);
		_exit(127);
	}
	close(fd[1]);
	{
		size_t cap = 1 << 16, len = 0;
		char *buf = malloc(cap);
		ssize_t k;

		while (buf && (k = read(fd[0], buf + len, cap - len - 1)) > 0) {
			len += (size_t)k;
			if (cap - len < 2)
				buf = realloc(buf, cap *= 2);
		}
		if (buf)
			buf[len] = '\0';
		*out = buf;
	}
	close(fd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int have_chromium(void)
{
	return system("command -v chromium >/dev/null 2>&1") == 0;
}

TEST(chromium_renders_the_report_with_every_image_loaded)
{
	const char *dir = test_tmp_path("browser");
	const char *dump[] = { "--dump-dom", "--virtual-time-budget=20000", NULL };
	char url[4300], shot[4300], shot_arg[4400], *html, *out = NULL, *probe;
	struct stat sb;
	int images;

	if (!have_chromium())
		test_skip("chromium is not installed (scripts/install-deps installs it)");
	CHECK(small_run(dir, NULL, 1) == 0);
	html = run_file(dir, "report.html");
	CHECK(html != NULL);
	if (!html)
		return;
	images = count(html, "<img ");
	CHECK(images > 10);
	/* The probe: the report itself, and a script after it. */
	probe = malloc(strlen(html) + 1024);
	CHECK(probe != NULL);
	if (!probe) {
		free(html);
		return;
	}
	sprintf(probe, "%s<script>window.addEventListener('load', function () {"
		       "var n = 0, ok = 0; for (const i of document.images) { n++;"
		       " if (i.complete && i.naturalWidth > 0) ok++; }"
		       "var p = document.createElement('pre'); p.id = 'probe';"
		       "p.textContent = 'images ' + n + ' loaded ' + ok + ' svg ' +"
		       " document.querySelectorAll('svg').length; document.body.appendChild(p); });"
		       "</script>\n", html);
	/* report.html copied alone (mailed, attached): every picture is still there. */
	{
		char p[4200];

		snprintf(p, sizeof(p), "%s/probe.html", test_tmp_path("alone"));
		CHECK(fs_mkdirs(test_tmp_path("alone"), NULL) == 0);
		CHECK(fs_write_atomic(p, probe, strlen(probe), NULL) == 0);
	}
	snprintf(url, sizeof(url), "file://%s/probe.html", test_tmp_path("alone"));
	CHECK(chromium(dump, url, &out) == 0);
	{
		char want[128];
		int svgs = count(html, "<svg ");

		snprintf(want, sizeof(want), "images %d loaded %d svg %d", images, images, svgs);
		CHECK_STR_CONTAINS(out, want);
	}
	/* The page as it is: the sections rendered (no script there), and a picture of it. */
	free(out);
	out = NULL;
	snprintf(url, sizeof(url), "file://%s/report.html", dir);
	CHECK(chromium(dump, url, &out) == 0);
	for (int i = 0; sections[i]; i++) {
		char id[64];

		snprintf(id, sizeof(id), "<section id=\"%s\">", sections[i]);
		CHECK_STR_CONTAINS(out, id);
	}
	snprintf(shot, sizeof(shot), "%s/report.png", test_tmpdir());
	snprintf(shot_arg, sizeof(shot_arg), "--screenshot=%s", shot);
	{
		const char *pic[] = { shot_arg, "--window-size=1280,2400", "--hide-scrollbars", NULL };
		char *o2 = NULL;

		CHECK(chromium(pic, url, &o2) == 0);
		free(o2);
	}
	CHECK_MSG(stat(shot, &sb) == 0 && sb.st_size > 50000, "no screenshot, or a blank one");
	free(out);
	free(probe);
	free(html);
}

/* A machine whose first motion needs a person. */
static void first_motion_asks(cJSON *m)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(m, "safety"), "confirm_first_motion", cJSON_CreateTrue());
}

/* STATUS.md of a run stopped before its plan names its target (run.json's) and what it waits for. */
static void status_names_target(const char *dir)
{
	char *status = run_file(dir, "STATUS.md"), *runj = run_file(dir, "run.json"), want[600];
	cJSON *rj = cJSON_Parse(runj ? runj : "");
	const cJSON *t = cJSON_GetObjectItem(rj, "target");

	CHECK(status && t);
	snprintf(want, sizeof(want), "- **target**: %s (%s)",
		 cJSON_GetStringValue(cJSON_GetObjectItem(t, "file")),
		 cJSON_GetStringValue(cJSON_GetObjectItem(t, "hash")));
	CHECK_STR_CONTAINS(status, want);
	CHECK_STR_CONTAINS(status, "None yet: the run stopped before it had a plan");
	cJSON_Delete(rj);
	free(runj);
	free(status);
}

TEST(a_run_stopped_before_its_plan_says_its_target_and_what_it_waits_for)
{
	const char *asking = test_tmp_path("first-motion"), *dropping = test_tmp_path("drops");
	const char *drop_args[] = { "run", test_src_path(TEST_TARGET), "--out", dropping, "--max-strokes",
				    STROKES, "--quiet", "--fault", "drop_frames=1", "--machine", NULL, NULL };
	char *status, *html;
	int rc = small_run(asking, machine("m-first.json", first_motion_asks), 0);

	CHECK_MSG(rc == 3, "a run whose first motion asks exited %d, not 3", rc);
	status_names_target(asking);
	status = run_file(asking, "STATUS.md");
	CHECK_STR_CONTAINS(status, "## Waiting for the operator\n\n- request r000001 (before the plan): "
			   "homing the arm: first motion since the gate opened");
	CHECK_STR_CONTAINS(status, "`brushloop approve ");
	free(status);
	/* Its report: the target, no canvas, no plan, and the question with what the operator is shown. */
	html = run_file(asking, "report.html");
	CHECK_MSG(html != NULL, "a run waiting for its first motion wrote no report.html");
	CHECK(self_contained(asking, html) == 2);
	CHECK_STR_CONTAINS(html, "<p class=\"state paused\">");
	CHECK_STR_CONTAINS(html, "<th>waits for</th><td>request r000001: homing the arm: first motion");
	CHECK_STR_CONTAINS(html, "<tr><td>r000001</td><td>home</td>");
	CHECK_STR_CONTAINS(html, "\" alt=\"what the operator was shown\" width=\"160\"");
	CHECK_STR_CONTAINS(html, "No canvas observed yet");
	CHECK_STR_CONTAINS(html, "no plan yet");
	free(html);
	drop_args[10] = machine("m.json", NULL); /* machine()'s buffer is its last answer */
	rc = test_brushloop(drop_args, NULL, NULL);
	CHECK_MSG(rc == 4, "a run whose camera drops every frame exited %d, not 4 (braked)", rc);
	status_names_target(dropping);
	html = run_file(dropping, "report.html");
	CHECK_MSG(html != NULL, "a run braked by its camera wrote no report.html");
	CHECK(self_contained(dropping, html) == 1);
	CHECK_STR_CONTAINS(html, "<p class=\"state braked\">");
	CHECK_STR_CONTAINS(html, "<td>brake</td><td>brake</td><td>brake comm_errors; reason circuit breaker");
	CHECK_STR_CONTAINS(html, "<td>camera or arm</td><td>camera_error</td><td>sim camera: no frame");
	free(html);
}

/* brushloop in the background (posix_spawn), its output thrown away; -1 when it cannot start. */
static pid_t start(const char *const *args)
{
	const char *argv[32] = { getenv("BRUSHLOOP") };
	posix_spawn_file_actions_t fa;
	pid_t pid = -1;
	int n = 1;

	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	if (posix_spawn_file_actions_init(&fa))
		return -1;
	if (posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) ||
	    posix_spawn_file_actions_adddup2(&fa, 1, 2) ||
	    posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* The frame of the journal's last look at the whole canvas (a paint batch's verification or a checkpoint), "" when none yet. */
static void last_look(const char *dir, char *frame, size_t n, int *checkpoints)
{
	char *text = run_file(dir, "journal.jsonl"), *save = NULL;

	frame[0] = '\0';
	*checkpoints = 0;
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		cJSON *ev = cJSON_Parse(l);
		const char *e = cJSON_GetStringValue(cJSON_GetObjectItem(ev, "event"));
		const cJSON *d = cJSON_GetObjectItem(ev, "data");
		const char *f = cJSON_GetStringValue(cJSON_GetObjectItem(d, "frame"));

		if (e && f && (!strcmp(e, "verified") || !strcmp(e, "checkpoint")))
			snprintf(frame, n, "%s", f);
		*checkpoints += e && !strcmp(e, "checkpoint");
		cJSON_Delete(ev);
	}
	free(text);
}

/*
 * A run that is still painting, reported between its first paint batches
 * and its first checkpoint: the page shows the canvas of its last look (a
 * paint batch's verification), never "no canvas observed" above a chart of
 * the looks it had. The run is then held with SIGINT and pauses.
 */
TEST(a_running_runs_report_shows_the_canvas_of_its_last_look)
{
	const char *dir = test_tmp_path("running");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "200",
			       "--accept-nearest", "--quiet", "--machine", machine("m.json", NULL), NULL };
	const char *report[] = { "report", dir, NULL };
	char frame[256] = "", want[400], *html;
	int checkpoints = 0, looks = 0, rc;
	pid_t pid = start(args);

	CHECK(pid > 0);
	/* Two paint batches verified, no checkpoint yet (the first comes after many batches). */
	for (int i = 0; i < 1200; i++) {
		char *j = run_file(dir, "journal.jsonl");

		looks = count(j ? j : "", "\"event\":\"verified\"") ;
		free(j);
		if (looks >= 2)
			break;
		usleep(100 * 1000);
	}
	rc = test_brushloop(report, NULL, NULL);
	last_look(dir, frame, sizeof(frame), &checkpoints);
	kill(pid, SIGINT);
	CHECK_MSG(waitpid(pid, NULL, 0) == pid, "the run did not end");
	CHECK_MSG(looks >= 2 && checkpoints == 0, "%d looks, %d checkpoints when reported", looks, checkpoints);
	CHECK_MSG(rc == 0, "report of a running run exited %d", rc);
	html = run_file(dir, "report.html");
	CHECK(html != NULL);
	CHECK_MSG(html && !strstr(html, "No canvas observed"), "the page says no canvas was observed");
	snprintf(want, sizeof(want), "<figcaption>the canvas at the last look (paint batch ");
	CHECK_STR_CONTAINS(html, want);
	free(html);
}

TEST_MAIN(T(a_finished_run_reports_every_section_with_the_journals_figures),
	  T(report_remakes_the_page_and_keeps_the_pictures_it_drew),
	  T(a_torn_or_missing_file_is_exit_2_naming_it_and_loses_nothing),
	  T(deferrals_accepted_colours_and_answers_are_listed_with_their_reasons),
	  T(a_braked_run_reports_its_brake_and_reason),
	  T(chromium_renders_the_report_with_every_image_loaded),
	  T(a_run_stopped_before_its_plan_says_its_target_and_what_it_waits_for),
	  T(a_running_runs_report_shows_the_canvas_of_its_last_look))
