/* report_html.c: report.html: the page's sections from what report_read gathered, written atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "report/report_int.h"
#include "vision/image.h"

/* The largest picture the page embeds (they are drawn at the size they are shown: tens of kB). */
#define REPORT_PICTURE_MAX (8u << 20)

/* What HTML must not see as itself, in text and in attribute values. */
static const char *const entities[128] = {
	['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
};

void report_esc(strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		const char *e = (unsigned char)*s < 128 ? entities[(unsigned char)*s] : NULL;

		if (e)
			sb_printf(sb, "%s", e);
		else
			sb_printf(sb, "%c", *s);
	}
}

int report_lab(const cJSON *arr, double lab[3])
{
	lab[0] = lab[1] = lab[2] = 0;
	if (cJSON_GetArraySize(arr) != 3)
		return -1;
	for (int k = 0; k < 3; k++) {
		const cJSON *v = cJSON_GetArrayItem(arr, k);

		if (!cJSON_IsNumber(v))
			return -1;
		lab[k] = v->valuedouble;
	}
	return 0;
}

void report_lab_rgb(const double lab[3], unsigned char rgb[3])
{
	color_lab l = { lab[0], lab[1], lab[2] };
	color_rgb c;
	int in_gamut;

	if (color_lab_to_srgb(&l, &c, &in_gamut, NULL) == 0)
		color_rgb_to_u8(&c, rgb);
	else
		rgb[0] = rgb[1] = rgb[2] = 0;
}

/* bytes as base64 (RFC 4648), for a data: URI, a few kB at a time into sb. */
static void base64(strbuf *sb, const unsigned char *b, size_t n)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char out[4096];
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
			     (i + 2 < n ? b[i + 2] : 0);

		out[k++] = abc[v >> 18 & 63];
		out[k++] = abc[v >> 12 & 63];
		out[k++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
		out[k++] = i + 2 < n ? abc[v & 63] : '=';
		if (k == sizeof(out) || i + 3 >= n) {
			sb_printf(sb, "%.*s", (int)k, out);
			k = 0;
		}
	}
}

/*
 * An <img> of a picture of the run directory (a relative path), embedded as a
 * data: URI so that report.html is one file that can be mailed or copied
 * alone; shown css_w CSS px wide (0: its own width) at its own aspect. One
 * that is not there, or not a PNG or JPEG, is remembered as missing.
 */
static void img_tag(strbuf *sb, struct report *r, const char *rel, const char *alt, int css_w)
{
	char p[REPORT_PATH_MAX], *buf = NULL;
	enum cam_format fmt;
	size_t len = 0;
	int w = 0, h = 0;

	snprintf(p, sizeof(p), "%s/%s", r->dir, rel);
	if (fs_read_file(p, REPORT_PICTURE_MAX, &buf, &len, NULL) ||
	    img_probe((unsigned char *)buf, len, p, &fmt, &w, &h, NULL) || fmt == CAM_FMT_RGB24) {
		if (!r->missing) {
			snprintf(r->missing_buf, sizeof(r->missing_buf), "%s", p);
			r->missing = r->missing_buf;
		}
		free(buf);
		return;
	}
	r->images++;
	sb_printf(sb, "<img src=\"data:image/%s;base64,", fmt == CAM_FMT_PNG ? "png" : "jpeg");
	base64(sb, (unsigned char *)buf, len);
	sb_printf(sb, "\" alt=\"");
	report_esc(sb, alt);
	if (css_w <= 0)
		css_w = w;
	sb_printf(sb, "\" width=\"%d\" height=\"%d\">", css_w, (int)lround((double)h * css_w / w));
	free(buf);
}

/* A small square of a Lab colour, with the Lab as its tooltip. */
static void swatch(strbuf *sb, const cJSON *lab_arr)
{
	unsigned char c[3];
	double lab[3];

	if (report_lab(lab_arr, lab))
		return;
	report_lab_rgb(lab, c);
	sb_printf(sb, "<span class=\"sw\" style=\"background:#%02x%02x%02x\" title=\"Lab %.1f, %.1f, "
		      "%.1f\"></span>", c[0], c[1], c[2], lab[0], lab[1], lab[2]);
}

static void cell_num(strbuf *sb, double v, const char *fmt)
{
	if (v < 0)
		sb_printf(sb, "<td></td>");
	else {
		sb_printf(sb, "<td class=\"n\">");
		sb_printf(sb, fmt, v);
		sb_printf(sb, "</td>");
	}
}

static void fact(strbuf *sb, const char *key, const char *value)
{
	sb_printf(sb, "<tr><th>%s</th><td>", key);
	report_esc(sb, value);
	sb_printf(sb, "</td></tr>");
}

/* What the run waits for a person to answer, as STATUS.md says it: the requests, the colours. */
static void waiting_facts(strbuf *sb, struct report *r)
{
	const cJSON *d;
	char v[1024];

	cJSON_ArrayForEach(d, cJSON_GetObjectItem(r->status, "deferred")) {
		snprintf(v, sizeof(v), "request %s: %s (brushloop approve DIR %s, then brushloop resume DIR)",
			 report_str(d, "request"), report_str(d, "why"), report_str(d, "request"));
		fact(sb, "waits for", v);
	}
	cJSON_ArrayForEach(d, cJSON_GetObjectItem(r->status, "mixes"))
		if (cJSON_IsTrue(cJSON_GetObjectItem(d, "escalated")) &&
		    !cJSON_IsTrue(cJSON_GetObjectItem(d, "accepted"))) {
			snprintf(v, sizeof(v), "colour %s: no mix came within the tolerance (best %.2f); "
				 "brushloop resume DIR --accept-mix %s, or --substitute", report_str(d, "colour"),
				 report_num(d, "measured_de00", -1), report_str(d, "colour"));
			fact(sb, "waits for", v);
		}
}

static void section_run(strbuf *sb, struct report *r)
{
	const cJSON *st = r->status, *tg = cJSON_GetObjectItem(r->run, "target");
	char v[512];
	time_t t = (time_t)(report_num(r->run, "created_wall_ms", 0) / 1000);
	struct tm tm;

	sb_printf(sb, "<p class=\"state %s\"><b>", report_str(st, "state"));
	report_esc(sb, report_str(st, "state"));
	sb_printf(sb, "</b>%s", *report_str(st, "reason") ? ": " : "");
	report_esc(sb, report_str(st, "reason"));
	sb_printf(sb, "</p><div class=\"tw\"><table class=\"facts\">");
	snprintf(v, sizeof(v), "%s (copied as %s, hash %s)", report_str(tg, "file"), r->target,
		 report_str(tg, "hash"));
	fact(sb, "target", v);
	snprintf(v, sizeof(v), "%s (arm %s, camera %s)", r->m.name,
		 machine_arm_backend_names[r->m.arm_backend], machine_cam_backend_names[r->m.camera.backend]);
	fact(sb, "machine", v);
	gmtime_r(&t, &tm);
	strftime(v, sizeof(v), "%Y-%m-%d %H:%M UTC", &tm);
	fact(sb, "started", v);
	snprintf(v, sizeof(v), "%s loop, seed %.0f, %s", cJSON_IsTrue(cJSON_GetObjectItem(st, "open_loop")) ? "open" : "closed",
		 report_num(r->run, "seed", 0),
		 cJSON_IsTrue(cJSON_GetObjectItem(st, "calibrated")) ? "calibrated camera" : "UNCALIBRATED camera (sRGB assumed)");
	fact(sb, "how", v);
	if (!r->have_plan)
		snprintf(v, sizeof(v), "no plan yet: the run stopped before it planned (a resume plans first)");
	else
		snprintf(v, sizeof(v), "%.0f of %.0f strokes; correction round %.0f; %.0f of %.0f subtasks "
			 "of the plan under way done", report_num(st, "strokes_done", 0),
			 report_num(st, "strokes_total", 0), report_num(st, "round", 0),
			 report_num(st, "subtasks_done", 0), report_num(st, "subtasks", 0));
	fact(sb, "progress", v);
	snprintf(v, sizeof(v), "%.2f h of run clock (arm and drying), %.0f s of wall time over every process",
		 r->t_end_s / 3600.0, report_num(st, "wall_s", 0));
	fact(sb, "time", v);
	snprintf(v, sizeof(v), "%ld events in journal.jsonl%s", r->events,
		 r->bad_lines ? "; some lines unreadable (torn by a crash), skipped" : "");
	if (r->bad_lines)
		snprintf(v + strlen(v), sizeof(v) - strlen(v), ": %ld", r->bad_lines);
	fact(sb, "journal", v);
	snprintf(v, sizeof(v), "%ld reviews of checkpoints and mix verdicts, %ld disagreements, %ld overruled by a "
		 "person (review events in the journal; docs/review.md)", r->reviews, r->review_disagreed,
		 r->review_overruled);
	fact(sb, "second judge", v);
	waiting_facts(sb, r);
	sb_printf(sb, "</table></div>");
}

/* The last look at the whole canvas (the final one when there is one), or NULL. */
static const cJSON *last_look(const struct report *r)
{
	return cJSON_GetArrayItem(r->looks, cJSON_GetArraySize(r->looks) - 1);
}

static void section_final(strbuf *sb, struct report *r)
{
	const cJSON *c = cJSON_GetObjectItem(r->status, "canvas"), *o = last_look(r);

	sb_printf(sb, "<div class=\"pics\"><figure>");
	img_tag(sb, r, REPORT_DIR "/target.jpg", "the target", 0);
	sb_printf(sb, "<figcaption>the target, over the %d x %d mm the run paints it on</figcaption>"
		      "</figure><figure>", r->box[2], r->box[3]);
	if (o) {
		img_tag(sb, r, report_str(o, "canvas"), "the canvas", 0);
		if (!strcmp(report_str(o, "what"), "final"))
			sb_printf(sb, "<figcaption>the final canvas: ");
		else
			sb_printf(sb, "<figcaption>the canvas at the last look (%s %s at %.2f h): ",
				  report_str(o, "what"), report_str(o, "subtask"), report_num(o, "t_s", 0) / 3600.0);
		/* The morning figure first: what a person sees of the final canvas from 1 m, then pixel by pixel. */
		if (!strcmp(report_str(o, "what"), "final") && report_num(c, "scielab_1m", -1) >= 0)
			sb_printf(sb, "seen from 1 m (S-CIELAB) %.2f, CIEDE2000 pixel by pixel %.2f; on "
				      "10 mm cells ", report_num(c, "scielab_1m", -1), report_num(c, "pixel_de00", -1));
		if (report_num(o, "mean", -1) >= 0)
			sb_printf(sb, "mean CIEDE2000 %.2f, 95th percentile %.2f%s", report_num(o, "mean", -1),
				  report_num(o, "p95", -1),
				  !strcmp(report_str(o, "what"), "final") &&
					  cJSON_IsTrue(cJSON_GetObjectItem(c, "verified"))
					  ? ", verified against its prediction" : "");
		sb_printf(sb, "; frame <a href=\"frames/");
		report_esc(sb, report_str(o, "frame"));
		sb_printf(sb, "\">");
		report_esc(sb, report_str(o, "frame"));
		sb_printf(sb, "</a></figcaption>");
	} else
		sb_printf(sb, "<p>No canvas observed yet: the run stopped before its first look at the "
			      "canvas.</p>");
	sb_printf(sb, "</figure></div>");
}

static void section_observations(strbuf *sb, struct report *r)
{
	const cJSON *o;

	if (!cJSON_GetArraySize(r->obs)) {
		sb_printf(sb, "<p>The canvas has not been observed yet.</p>");
		return;
	}
	sb_printf(sb, "<p>The canvas's difference from the target at every look: %d, the blank "
		      "canvas, each paint batch's verification and each checkpoint; the pictures below "
		      "are the blank canvas, the checkpoints and the final look.</p><div class=\"plot\">",
		  cJSON_GetArraySize(r->looks));
	report_svg_history(sb, r->looks, r->t_end_s);
	sb_printf(sb, "</div><p class=\"legend\">CIEDE2000 per %g mm cell against the target: 0 ", r->cell_mm);
	img_tag(sb, r, REPORT_DIR "/legend.png", "the map's colours from 0 to 25", 0);
	sb_printf(sb, " 25 (blue 2, green 5, yellow 10, red 20 and above). Each canvas and its map "
		      "cover the picture's %d x %d mm.</p><div class=\"obs\">", r->box[2], r->box[3]);
	cJSON_ArrayForEach(o, r->obs) {
		char frame[300];

		snprintf(frame, sizeof(frame), "frames/%s", report_str(o, "frame"));
		sb_printf(sb, "<figure class=\"ob\"><div>");
		img_tag(sb, r, report_str(o, "canvas"), "the canvas", 0);
		img_tag(sb, r, report_str(o, "map"), "its CIEDE2000 map", 0);
		sb_printf(sb, "</div><figcaption><b>%s</b> %s at %.2f h", report_str(o, "what"),
			  report_str(o, "subtask"), report_num(o, "t_s", 0) / 3600.0);
		if (report_num(o, "mean", -1) >= 0)
			sb_printf(sb, ": mean <span class=\"de\">%.2f</span>, p95 %.2f", report_num(o, "mean", -1),
				  report_num(o, "p95", -1));
		if (report_num(o, "predicted", -1) >= 0)
			sb_printf(sb, " (predicted %.2f)", report_num(o, "predicted", -1));
		if (*report_str(o, "verdict"))
			sb_printf(sb, ", %s", report_str(o, "verdict"));
		sb_printf(sb, "; frame <a href=\"");
		report_esc(sb, frame);
		sb_printf(sb, "\">");
		report_esc(sb, report_str(o, "frame"));
		sb_printf(sb, "</a></figcaption></figure>");
	}
	sb_printf(sb, "</div>");
}

/* state.json's word on a colour (status's mixes), by name. */
static const cJSON *mix_state(const struct report *r, const char *colour)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, cJSON_GetObjectItem(r->status, "mixes"))
		if (!strcmp(report_str(m, "colour"), colour))
			return m;
	return NULL;
}

static void colour_attempts(strbuf *sb, struct report *r, const cJSON *attempts)
{
	const cJSON *a;
	int i = 0;

	sb_printf(sb, "<div class=\"tw\"><table><tr><th>#</th><th>subtask, cell</th><th>measured</th>"
		      "<th>CIEDE2000 / tolerance</th><th>verdict</th><th>frame</th></tr>");
	cJSON_ArrayForEach(a, attempts) {
		char frame[300];

		snprintf(frame, sizeof(frame), "frames/%s", report_str(a, "frame"));
		sb_printf(sb, "<tr><td class=\"n\">%d</td><td>%s %s</td><td>", ++i,
			  report_str(a, "subtask"), report_str(a, "cell"));
		swatch(sb, cJSON_GetObjectItem(a, "measured_lab"));
		sb_printf(sb, "</td><td class=\"n\">%.2f / %.2f</td>", report_num(a, "de00", -1),
			  report_num(a, "tolerance_de00", -1));
		sb_printf(sb, "<td class=\"%s\">%s</td><td class=\"fr\">", report_str(a, "verdict"),
			  report_str(a, "verdict"));
		img_tag(sb, r, report_str(a, "thumb"), report_str(a, "frame"), 120);
		sb_printf(sb, "<br><a href=\"");
		report_esc(sb, frame);
		sb_printf(sb, "\">");
		report_esc(sb, report_str(a, "frame"));
		sb_printf(sb, "</a></td></tr>");
	}
	sb_printf(sb, "</table></div>");
}

static void section_mixes(strbuf *sb, struct report *r)
{
	const cJSON *c;

	if (!r->have_plan) {
		sb_printf(sb, "<p>No colours yet: the run stopped before it had a plan.</p>");
		return;
	}

	cJSON_ArrayForEach(c, r->mixes) {
		const cJSON *at = cJSON_GetObjectItem(c, "attempts"), *ms = mix_state(r, report_str(c, "colour"));
		double tol = report_num(cJSON_GetArrayItem(at, 0), "tolerance_de00", r->m.tolerances.mix_de00);
		int accepted = cJSON_IsTrue(cJSON_GetObjectItem(ms, "accepted"));

		sb_printf(sb, "<div class=\"colour\"><h3>");
		swatch(sb, cJSON_GetObjectItem(c, "lab"));
		sb_printf(sb, " %s", report_str(c, "colour"));
		if (ms)
			sb_printf(sb, ": %s%s%s%s, %.0f mixes, %.0f attempts, %.0f cells, %.2f ml",
				  cJSON_IsTrue(cJSON_GetObjectItem(ms, "verified")) ? "verified" : "not verified",
				  accepted ? ", " : "", !accepted ? "" : *report_str(c, "accepted_by")
				  ? report_str(c, "accepted_by") : "accepted",
				  cJSON_IsTrue(cJSON_GetObjectItem(ms, "escalated")) && !accepted
				  ? ", waiting for the operator" : "",
				  report_num(ms, "mixes", 0), report_num(ms, "attempts", 0),
				  report_num(ms, "cells", 0), report_num(ms, "paint_ml", 0));
		sb_printf(sb, "</h3>");
		if (!cJSON_GetArraySize(at)) {
			sb_printf(sb, "<p>Not measured (not mixed yet, or an open-loop run).</p></div>");
			continue;
		}
		sb_printf(sb, "<div class=\"pair\"><div class=\"plot\">");
		report_svg_mix(sb, at, tol);
		sb_printf(sb, "</div>");
		colour_attempts(sb, r, at);
		sb_printf(sb, "</div></div>");
	}
}

/* A figure of a priced category: spent, expected, upper bound. */
struct cost_cat {
	const char *label, *key, *priced, *fmt;
};

static const struct cost_cat cost_cats[] = {
	{ "arm time", "arm_s", "arm", "%.0f s" },
	{ "verifications", "verifications", "verifications", "%.0f" },
	{ "planner calls", "planner_calls", "planner", "%.0f" },
	{ "paint", "paint_ml", "paint", "%.2f ml" },
	{ "total", NULL, "total", NULL },
};

static void section_cost(strbuf *sb, struct report *r)
{
	const cJSON *spent = cJSON_GetObjectItem(r->status, "cost");
	const cJSON *exp = cJSON_GetObjectItem(r->estimate, "expected");
	const cJSON *up = cJSON_GetObjectItem(r->estimate, "upper_bound");
	const char *cur = report_str(spent, "currency");
	struct report_bar bars[5];
	const int n = (int)(sizeof(cost_cats) / sizeof(cost_cats[0]));

	for (int i = 0; i < n; i++) {
		const struct cost_cat *k = &cost_cats[i];
		struct report_bar *b = &bars[i];

		b->label = k->label;
		b->value = report_num(cJSON_GetObjectItem(spent, "priced"), k->priced, 0);
		b->expected = report_num(cJSON_GetObjectItem(exp, "priced"), k->priced, -1);
		b->limit = report_num(cJSON_GetObjectItem(up, "priced"), k->priced, -1);
		b->rgb[0] = 52, b->rgb[1] = 101, b->rgb[2] = 164;
		snprintf(b->note, sizeof(b->note), "%.2f / %.2f %s", b->value, b->expected, cur);
	}
	sb_printf(sb, "<p>Bars: spent; black mark: expected by the estimate; dashed: its upper bound "
		      "(every retry to its limit). Budget %.2f %s.</p>",
		  report_num(r->estimate, "budget", 0), cur);
	sb_printf(sb, "<div class=\"plot\">");
	report_svg_bars(sb, bars, n, cur);
	sb_printf(sb, "</div><div class=\"tw\"><table><tr><th>category</th><th>spent</th><th>expected</th><th>upper bound</th>"
		      "<th>spent / expected</th><th>priced spent</th><th>priced expected</th></tr>");
	for (int i = 0; i < n; i++) {
		const struct cost_cat *k = &cost_cats[i];
		double s = k->key ? report_num(spent, k->key, -1) : -1, e = k->key ? report_num(exp, k->key, -1) : -1;

		sb_printf(sb, "<tr><th>%s</th>", k->label);
		cell_num(sb, s, k->fmt ? k->fmt : "%g");
		cell_num(sb, e, k->fmt ? k->fmt : "%g");
		cell_num(sb, k->key ? report_num(up, k->key, -1) : -1, k->fmt ? k->fmt : "%g");
		cell_num(sb, s >= 0 && e > 0 ? s / e : -1, "%.2f");
		cell_num(sb, bars[i].value, "%.2f");
		cell_num(sb, bars[i].expected, "%.2f");
		sb_printf(sb, "</tr>");
	}
	sb_printf(sb, "</table></div>");
}

/* The estimate's paint for well w (-1 when it expects none). */
static double well_expected(const struct report *r, const char *w)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, cJSON_GetObjectItem(r->estimate, "wells"))
		if (!strcmp(report_str(x, "well"), w))
			return report_num(x, "expected_ml", -1);
	return -1;
}

static void section_wells(strbuf *sb, struct report *r)
{
	const cJSON *w, *wells = cJSON_GetObjectItem(r->status, "wells");
	struct report_bar *bars = calloc((size_t)cJSON_GetArraySize(wells) + 1, sizeof(*bars));
	char (*labels)[96] = calloc((size_t)cJSON_GetArraySize(wells) + 1, sizeof(*labels));
	int n = 0;

	if (!bars || !labels) {
		free(bars);
		free(labels);
		return;
	}
	sb_printf(sb, "<div class=\"tw\"><table><tr><th>well</th><th>paint</th><th>capacity ml</th><th>left ml</th>"
		      "<th>refilled ml</th><th>used ml</th><th>expected ml</th></tr>");
	cJSON_ArrayForEach(w, wells) {
		const char *name = report_str(w, "well");
		double cap = report_num(w, "capacity_ml", 0), left = report_num(w, "left_ml", 0);
		double refill = report_num(r->refills, name, 0), used = cap - left + refill;
		double exp = well_expected(r, name);

		if (used < 0.005 && exp < 0)
			continue;
		snprintf(labels[n], sizeof(labels[n]), "%s %s", name, report_str(w, "paint"));
		bars[n] = (struct report_bar){ .label = labels[n], .value = used, .expected = exp,
					       .limit = cap, .rgb = { 120, 144, 156 } };
		snprintf(bars[n].note, sizeof(bars[n].note), "%.2f ml used, %.1f left", used, left);
		n++;
		sb_printf(sb, "<tr><th>%s</th><td>", name);
		report_esc(sb, report_str(w, "paint"));
		sb_printf(sb, "</td>");
		cell_num(sb, cap, "%.1f");
		cell_num(sb, left, "%.2f");
		cell_num(sb, refill, "%.2f");
		cell_num(sb, used, "%.2f");
		cell_num(sb, exp, "%.2f");
		sb_printf(sb, "</tr>");
	}
	sb_printf(sb, "</table></div>");
	if (n) {
		sb_printf(sb, "<p>Bars: paint drawn from each well; black mark: the estimate's; dashed: the "
			      "well's capacity.</p>");
		sb_printf(sb, "<div class=\"plot\">");
		report_svg_bars(sb, bars, n, "ml");
		sb_printf(sb, "</div>");
	} else
		sb_printf(sb, "<p>No paint drawn yet.</p>");
	free(bars);
	free(labels);
}

static void section_timeline(strbuf *sb, struct report *r)
{
	const cJSON *s;

	if (!cJSON_GetArraySize(r->spans)) {
		sb_printf(sb, "<p>No subtask has run%s.</p>", r->have_plan ? "" : ": the run has no plan yet");
		return;
	}
	sb_printf(sb, "<div class=\"plot\">");
	report_svg_timeline(sb, r);
	sb_printf(sb, "</div><details><summary>every subtask (%d)</summary><div class=\"tw\"><table><tr><th>subtask</th>"
		      "<th>what</th><th>colour</th><th>status</th><th>verdict CIEDE2000</th>"
		      "<th>start h</th><th>end h</th></tr>", cJSON_GetArraySize(r->spans));
	cJSON_ArrayForEach(s, r->spans) {
		sb_printf(sb, "<tr><td>%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td>",
			  report_str(s, "subtask"), report_str(s, "type"), report_str(s, "colour"),
			  report_str(s, "status"), report_str(s, "status"));
		cell_num(sb, report_num(s, "verdict", -1), "%.2f");
		cell_num(sb, report_num(s, "t0", 0) / 3600.0, "%.2f");
		cell_num(sb, report_num(s, "t1", 0) / 3600.0, "%.2f");
		sb_printf(sb, "</tr>");
	}
	sb_printf(sb, "</table></div></details>");
}

/* The gate's questions (approvals/) with their answers and the picture the operator was shown. */
static void requests_table(strbuf *sb, struct report *r)
{
	const cJSON *q;

	sb_printf(sb, "<h3>The gate's questions and their answers (approvals/)</h3><div class=\"tw\"><table "
		      "class=\"requests\"><tr><th>request</th><th>action</th><th>why</th><th>status</th>"
		      "<th>answer</th><th>by</th><th>when (UTC)</th><th>preview</th></tr>");
	cJSON_ArrayForEach(q, r->requests) {
		time_t t = (time_t)(report_num(q, "wall_ms", 0) / 1000);
		struct tm tm;
		char when[32];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		sb_printf(sb, "<tr><td>%s</td><td>%s</td><td>", report_str(q, "id"), report_str(q, "kind"));
		report_esc(sb, report_str(q, "why"));
		sb_printf(sb, "</td><td>%s</td><td>%s</td><td>", report_str(q, "status"),
			  *report_str(q, "answer") ? report_str(q, "answer") : "none yet");
		report_esc(sb, report_str(q, "by"));
		sb_printf(sb, "</td><td>%s</td><td>", when);
		if (*report_str(q, "preview"))
			img_tag(sb, r, report_str(q, "preview"), "what the operator was shown", 160);
		sb_printf(sb, "</td></tr>");
	}
	sb_printf(sb, "</table></div>");
}

static void section_notes(strbuf *sb, struct report *r)
{
	const cJSON *n;

	if (cJSON_GetArraySize(r->requests))
		requests_table(sb, r);
	if (!cJSON_GetArraySize(r->notes)) {
		sb_printf(sb, "<p>Nothing: no deferral, accepted colour, brake or operator answer.</p>");
		return;
	}
	sb_printf(sb, "<h3>From the journal</h3>");
	sb_printf(sb, "<div class=\"tw\"><table class=\"notes\"><tr><th>seq</th><th>run clock h</th><th>subtask</th>"
		      "<th>what</th><th>event</th><th>reason</th></tr>");
	cJSON_ArrayForEach(n, r->notes) {
		sb_printf(sb, "<tr><td class=\"n\">%.0f</td>", report_num(n, "seq", 0));
		cell_num(sb, report_num(n, "t_s", 0) / 3600.0, "%.2f");
		sb_printf(sb, "<td>%s</td><td>%s</td><td>%s</td><td>", report_str(n, "subtask"),
			  report_str(n, "kind"), report_str(n, "event"));
		report_esc(sb, report_str(n, "text"));
		sb_printf(sb, "</td></tr>");
	}
	sb_printf(sb, "</table></div>");
}

static const struct {
	const char *id, *title;
	void (*fn)(strbuf *sb, struct report *r);
} sections[] = {
	{ "run", "The run", section_run },
	{ "final", "The target beside the canvas", section_final },
	{ "checkpoints", "The canvas at every observation, and its CIEDE2000 map", section_observations },
	{ "mixes", "Mixes: measured difference per attempt against the tolerance", section_mixes },
	{ "wells", "Paint per well", section_wells },
	{ "cost", "Cost by category against the estimate", section_cost },
	{ "timeline", "The subtasks on the run clock", section_timeline },
	{ "operator", "Deferrals, accepted colours, brakes and operator answers", section_notes },
};

/* Readable from a phone 390 px wide to a wall screen: pictures scale down, wide tables and plots scroll in their box, never the page. */
static const char style[] =
	"body{font-family:sans-serif;margin:1em auto;max-width:1200px;color:#222;padding:0 12px;line-height:1.35}"
	"h1{font-size:1.4em;overflow-wrap:anywhere}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}"
	"h3{font-size:1em;margin:1em 0 .3em}nav{display:flex;flex-wrap:wrap;gap:.2em 1em}"
	"table{border-collapse:collapse;font-size:.85em;margin:.4em 0}.tw,.plot{overflow-x:auto;max-width:100%}"
	"td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:middle;overflow-wrap:anywhere}"
	"td.n{text-align:right;white-space:nowrap}th{background:#f4f4f4}.facts th{width:7em}"
	".state{font-size:1.1em;padding:.4em .8em;border-left:6px solid #888;background:#f6f6f6;overflow-wrap:anywhere}"
	".state.finished{border-color:#27ae60}.state.paused{border-color:#f39c12}"
	".state.braked,.state.failed,.state.safety_stop{border-color:#c0392b}"
	".pair{display:flex;gap:1.5em;flex-wrap:wrap;align-items:flex-start}.pair>*{max-width:100%}"
	".pics{display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:1em;max-width:960px}"
	".obs{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:1em}"
	".ob div{display:grid;grid-template-columns:1fr 1fr;gap:6px;align-items:start}"
	".pics img,.ob img{width:100%}figure{margin:0}figcaption{font-size:.85em;margin-top:.2em;overflow-wrap:anywhere}"
	".sw{display:inline-block;width:1.1em;height:1.1em;border:1px solid #444;vertical-align:middle}"
	".fail,.failed,.deferred{color:#c0392b;font-weight:bold}"
	".legend img{height:12px;width:auto;vertical-align:middle}.fr{font-size:.9em}"
	"img{max-width:100%;height:auto;border:1px solid #ccc}svg{max-width:100%;height:auto}"
	"@media (max-width:600px){.plot svg{max-width:none}}";

static void page(strbuf *sb, struct report *r)
{
	char now[64];
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%d %H:%M:%S UTC", &tm);
	sb_printf(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		      "<title>brushloop report: ");
	report_esc(sb, r->dir);
	sb_printf(sb, "</title><style>%s</style></head><body><h1>brushloop report: ", style);
	report_esc(sb, r->dir);
	sb_printf(sb, "</h1><nav>");
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		sb_printf(sb, "<a href=\"#%s\">%s</a>", sections[i].id, sections[i].id);
	sb_printf(sb, "</nav>\n");
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		sb_printf(sb, "<section id=\"%s\"><h2>%s</h2>\n", sections[i].id, sections[i].title);
		sections[i].fn(sb, r);
		sb_printf(sb, "</section>\n");
	}
	sb_printf(sb, "<footer><p>Written by <code>brushloop report</code> at %s from journal.jsonl, "
		      "state.json, plan.json and frames/. One file: every picture is in it (drawn from "
		      "the frames through the run's camera profile, light map and lamp, kept in %s/); "
		      "the links to frames/ lead to the frames beside it in the run directory.</p>"
		      "</footer></body></html>\n", now, REPORT_DIR);
}

int report_write(const char *dir, struct report_info *info, bl_err *err)
{
	struct report *r = calloc(1, sizeof(*r));
	char path[REPORT_PATH_MAX];
	strbuf sb;
	int rc;

	sb_init(&sb);
	if (!r || !sb.s) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = report_load(r, dir, err)) || (rc = report_images(r, err)))
		goto out;
	page(&sb, r);
	if (!sb.s) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory writing the report");
		goto out;
	}
	if (r->missing) {
		rc = bl_fail(err, BL_EINVAL, "%s: missing, and the report shows it", r->missing);
		goto out;
	}
	if ((rc = fs_join(path, sizeof(path), dir, "report.html", err)) ||
	    (rc = fs_write_atomic(path, sb.s, sb.len, err)))
		goto out;
	if (info) {
		snprintf(info->path, sizeof(info->path), "%s", path);
		info->bytes = sb.len;
		info->images = r->images;
		info->drawn = r->drawn;
		info->estimate_s = r->estimate_s;
	}
out:
	sb_free(&sb);
	if (r)
		report_free(r);
	free(r);
	return rc;
}

int report_for_run(const char *dir, bl_err *err)
{
	return report_write(dir, NULL, err);
}
