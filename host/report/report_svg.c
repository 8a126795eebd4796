/* report_svg.c: the report's plots, drawn as inline SVG (mix attempts, canvas error through the night, bars against an estimate, the subtasks' timeline). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report_int.h"

/* A round upper end for an axis holding v: 1, 2 or 5 times a power of ten. */
static double nice_max(double v)
{
	double p;

	if (!(v > 0))
		return 1.0;
	p = pow(10.0, floor(log10(v)));
	return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

/* An axis's upper end for v: the next multiple of a round step (a quarter of v or so). */
static double axis_max(double v)
{
	double step = nice_max(v / 4.0);

	return v > 0 ? ceil(v / step - 1e-9) * step : 1.0;
}

static void svg_open(strbuf *sb, int w, int h, const char *label)
{
	sb_printf(sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		      "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", w, h, w, h);
	report_esc(sb, label);
	sb_printf(sb, "\" font-family=\"sans-serif\" font-size=\"10\">");
}

/* A vertical axis from 0 to max at x, between pixel rows y0 (max) and y1 (0), three labels. */
static void axis_y(strbuf *sb, double x, double y0, double y1, double max, double right)
{
	for (int i = 0; i <= 2; i++) {
		double y = y1 - (y1 - y0) * i / 2.0;

		sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
			  x, y, right, y, x - 3, y + 3, max * i / 2.0);
	}
}

/* Hours of the run clock along x from x0 to x1 at row y: up to six labels. */
static void axis_hours(strbuf *sb, double x0, double x1, double y, double max_h)
{
	double step = nice_max(max_h / 6.0);

	for (double h = 0; h <= max_h * 1.0001; h += step) {
		double x = x0 + (x1 - x0) * h / max_h;

		sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>"
			      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g h</text>",
			  x, y, x, y + 3, x, y + 13, h);
	}
}

/* Where attempt i of n with difference de00 stands in the mix plot (its frame and scale below). */
enum { MIX_W = 280, MIX_H = 130, MIX_L = 34, MIX_R = 8, MIX_T = 10, MIX_B = 24 };

static void mix_xy(int i, int n, double de00, double max, double *x, double *y)
{
	*x = MIX_L + (MIX_W - MIX_R - MIX_L) * (i + 0.5) / (n > 0 ? n : 1);
	*y = (MIX_H - MIX_B) - (MIX_H - MIX_B - MIX_T) * de00 / max;
}

void report_svg_mix(strbuf *sb, const cJSON *attempts, double tolerance)
{
	int n = cJSON_GetArraySize(attempts), i = 0;
	double max = tolerance * 1.5, x, y;
	const cJSON *a;

	cJSON_ArrayForEach(a, attempts)
		max = fmax(max, report_num(a, "de00", 0));
	max = axis_max(max);
	svg_open(sb, MIX_W, MIX_H, "measured CIEDE2000 per mix attempt against the tolerance");
	axis_y(sb, MIX_L, MIX_T, MIX_H - MIX_B, max, MIX_W - MIX_R);
	mix_xy(0, n, tolerance, max, &x, &y);
	sb_printf(sb, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#c0392b\" "
		      "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%.1f\" fill=\"#c0392b\" "
		      "text-anchor=\"end\">tolerance %.2g</text>",
		  MIX_L, y, MIX_W - MIX_R, y, MIX_W - MIX_R, y - 3, tolerance);
	sb_printf(sb, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">attempt</text>",
		  (MIX_L + MIX_W - MIX_R) / 2, MIX_H - 2);
	sb_printf(sb, "<polyline fill=\"none\" stroke=\"#555\" points=\"");
	cJSON_ArrayForEach(a, attempts) {
		mix_xy(i++, n, report_num(a, "de00", 0), max, &x, &y);
		sb_printf(sb, "%.1f,%.1f ", x, y);
	}
	sb_printf(sb, "\"/>");
	i = 0;
	cJSON_ArrayForEach(a, attempts) {
		unsigned char c[3] = { 128, 128, 128 };
		double lab[3];

		mix_xy(i, n, report_num(a, "de00", 0), max, &x, &y);
		if (report_lab(cJSON_GetObjectItem(a, "measured_lab"), lab) == 0)
			report_lab_rgb(lab, c);
		sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#%02x%02x%02x\" "
			      "stroke=\"%s\" stroke-width=\"1.5\"><title>attempt %d (%s): %.2f, %s, "
			      "frame ", x, y, c[0], c[1], c[2],
			  strcmp(report_str(a, "verdict"), "pass") ? "#c0392b" : "#222", i + 1,
			  report_str(a, "subtask"), report_num(a, "de00", 0), report_str(a, "verdict"));
		report_esc(sb, report_str(a, "frame"));
		sb_printf(sb, "</title></circle>");
		if (n <= 16 || i % ((n + 15) / 16) == 0)
			sb_printf(sb, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>", x,
				  MIX_H - MIX_B + 12, i + 1);
		i++;
	}
	sb_printf(sb, "</svg>");
}

void report_svg_history(strbuf *sb, const cJSON *looks, double t_end_s)
{
	const int w = 720, h = 200, l = 40, rt = 12, t = 14, b = 26;
	double max = 1, max_h = axis_max(fmax(t_end_s, 60) / 3600.0);
	const char *keys[2] = { "p95", "mean" }, *looks_[2] = { "#e67e22\" stroke-dasharray=\"5 3", "#2c3e50" };
	const cJSON *e;

	cJSON_ArrayForEach(e, looks)
		max = fmax(max, fmax(report_num(e, "p95", 0), report_num(e, "mean", 0)));
	max = axis_max(max);
	svg_open(sb, w, h, "the canvas's CIEDE2000 against the target at each look, on the run clock");
	axis_y(sb, l, t, h - b, max, w - rt);
	axis_hours(sb, l, w - rt, h - b, max_h);
	for (int k = 0; k < 2; k++) {
		sb_printf(sb, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"", looks_[k]);
		cJSON_ArrayForEach(e, looks)
			if (report_num(e, keys[k], -1) >= 0)
				sb_printf(sb, "%.1f,%.1f ", l + (w - rt - l) * report_num(e, "t_s", 0) / 3600.0 / max_h,
					  (h - b) - (h - b - t) * report_num(e, keys[k], 0) / max);
		sb_printf(sb, "\"/>");
	}
	cJSON_ArrayForEach(e, looks) {
		sb_printf(sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#2c3e50\"><title>%s %s: mean %.2f",
			  l + (w - rt - l) * report_num(e, "t_s", 0) / 3600.0 / max_h,
			  (h - b) - (h - b - t) * report_num(e, "mean", 0) / max, report_str(e, "what"),
			  report_str(e, "subtask"), report_num(e, "mean", 0));
		if (report_num(e, "p95", -1) >= 0)
			sb_printf(sb, ", p95 %.2f", report_num(e, "p95", -1));
		sb_printf(sb, " at %.2f h</title></circle>", report_num(e, "t_s", 0) / 3600.0);
	}
	sb_printf(sb, "<text x=\"%d\" y=\"10\" fill=\"#2c3e50\">mean CIEDE2000 (every look)</text>"
		      "<text x=\"%d\" y=\"10\" fill=\"#e67e22\">95th percentile (checkpoints)</text></svg>",
		  l + 4, l + 190);
}

void report_svg_bars(strbuf *sb, const struct report_bar *rows, int n, const char *unit)
{
	const int w = 720, row = 24, l = 170, rt = 150, t = 6;
	int h = t + row * n + 22;
	double max = 0;

	for (int i = 0; i < n; i++)
		max = fmax(max, fmax(rows[i].value, fmax(rows[i].expected, rows[i].limit)));
	max = axis_max(max * 1.02);
	svg_open(sb, w, h, "bars: spent against expected");
	for (int i = 0; i < n; i++) {
		const struct report_bar *r = &rows[i];
		double y = t + row * i, sx = (w - l - rt) / max;

		sb_printf(sb, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", l - 6, y + 15);
		report_esc(sb, r->label);
		sb_printf(sb, "</text>");
		if (r->limit > 0)
			sb_printf(sb, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"none\" "
				      "stroke=\"#999\" stroke-dasharray=\"3 2\"/>", l, y + 3, r->limit * sx);
		sb_printf(sb, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"#%02x%02x%02x\" "
			      "stroke=\"#333\" stroke-width=\"0.5\"/>",
			  l, y + 3, fmax(r->value * sx, 0.5), r->rgb[0], r->rgb[1], r->rgb[2]);
		if (r->expected >= 0)
			sb_printf(sb, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
				      "stroke-width=\"2.5\"/>", l + r->expected * sx, y, l + r->expected * sx,
				  y + 22);
		sb_printf(sb, "<text x=\"%d\" y=\"%.1f\">", w - rt + 6, y + 15);
		report_esc(sb, r->note);
		sb_printf(sb, "</text>");
	}
	sb_printf(sb, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>"
		      "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g ",
		  l, h - 18, w - rt, h - 18, l, h - 6, w - rt, h - 6, max);
	report_esc(sb, unit);
	sb_printf(sb, "</text></svg>");
}

/* The colour a subtask is drawn in: its colour's as planned, grey for a look at the whole canvas. */
static void span_rgb(const struct report *r, const cJSON *s, unsigned char rgb[3])
{
	const cJSON *c;
	double lab[3];

	rgb[0] = rgb[1] = rgb[2] = 150;
	cJSON_ArrayForEach(c, r->mixes)
		if (!strcmp(report_str(c, "colour"), report_str(s, "colour")) &&
		    report_lab(cJSON_GetObjectItem(c, "lab"), lab) == 0)
			report_lab_rgb(lab, rgb);
}

void report_svg_timeline(strbuf *sb, const struct report *r)
{
	static const char *const lanes[] = { "mix", "paint", "checkpoint" };
	const int w = 900, lane = 26, l = 80, rt = 12, t = 6;
	const int h = t + lane * 3 + 24;
	double max_h = axis_max(fmax(r->t_end_s, 60) / 3600.0), sx = (w - l - rt) / max_h;
	const cJSON *s;

	svg_open(sb, w, h, "the subtasks on the run clock: mixes, paint batches, checkpoints");
	for (int k = 0; k < 3; k++)
		sb_printf(sb, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>"
			      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>",
			  l - 6, t + lane * k + 16, lanes[k], l, t + lane * k + 11, w - rt,
			  t + lane * k + 11);
	axis_hours(sb, l, w - rt, t + lane * 3 + 4, max_h);
	cJSON_ArrayForEach(s, r->spans) {
		const char *status = report_str(s, "status");
		double x0 = l + report_num(s, "t0", 0) / 3600.0 * sx;
		double x1 = l + report_num(s, "t1", 0) / 3600.0 * sx;
		int k = 0, bad = strcmp(status, "done") && strcmp(status, "skipped");
		unsigned char c[3];

		while (k < 3 && strcmp(lanes[k], report_str(s, "type")))
			k++;
		if (k == 3)
			continue;
		span_rgb(r, s, c);
		sb_printf(sb, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"#%02x%02x%02x\" "
			      "stroke=\"%s\" stroke-width=\"%s\"%s><title>",
			  x0, t + lane * k + 2, fmax(x1 - x0, 1.5), c[0], c[1], c[2],
			  bad ? "#c0392b" : "#333", bad ? "2" : "0.3",
			  strcmp(status, "skipped") ? "" : " fill-opacity=\"0.3\"");
		sb_printf(sb, "%s %s %s: %s", report_str(s, "subtask"), report_str(s, "type"),
			  report_str(s, "colour"), status);
		if (report_num(s, "verdict", -1) >= 0)
			sb_printf(sb, ", %.2f CIEDE2000", report_num(s, "verdict", -1));
		sb_printf(sb, ", %.2f to %.2f h</title></rect>", report_num(s, "t0", 0) / 3600.0,
			  report_num(s, "t1", 0) / 3600.0);
	}
	sb_printf(sb, "</svg>");
}
