/* preview.c: a small PNG of a requested path over the last canvas frame, so an operator sees what a yes would do. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safety/gate.h"

struct canvas_img {
	unsigned char *px; /* RGB */
	int w, h;
	double scale;      /* px per mm */
	double x0, y0;     /* machine mm at pixel (0, 0) */
};

static void put(struct canvas_img *c, int x, int y, const unsigned char rgb[3])
{
	if (x < 0 || y < 0 || x >= c->w || y >= c->h)
		return;
	memcpy(c->px + ((size_t)y * (size_t)c->w + (size_t)x) * 3, rgb, 3);
}

static void to_px(const struct canvas_img *c, double xmm, double ymm, double *x, double *y)
{
	*x = (xmm - c->x0) * c->scale;
	*y = (ymm - c->y0) * c->scale;
}

static void line(struct canvas_img *c, double xa, double ya, double xb, double yb, int thick,
		 const unsigned char rgb[3])
{
	double ax, ay, bx, by, len;
	int steps;

	to_px(c, xa, ya, &ax, &ay);
	to_px(c, xb, yb, &bx, &by);
	len = hypot(bx - ax, by - ay);
	steps = (int)ceil(len * 2.0) + 1;
	if (steps > 100000)
		steps = 100000;
	for (int i = 0; i <= steps; i++) {
		double t = (double)i / steps;
		int x = (int)lround(ax + t * (bx - ax)), y = (int)lround(ay + t * (by - ay));

		for (int dy = -thick / 2; dy <= thick / 2; dy++)
			for (int dx = -thick / 2; dx <= thick / 2; dx++)
				put(c, x + dx, y + dy, rgb);
	}
}

static void circle(struct canvas_img *c, double cx, double cy, double r, const unsigned char rgb[3])
{
	const int n = 48;

	for (int i = 0; i < n; i++) {
		double a0 = 2.0 * M_PI * i / n, a1 = 2.0 * M_PI * (i + 1) / n;

		line(c, cx + r * cos(a0), cy + r * sin(a0), cx + r * cos(a1), cy + r * sin(a1), 1, rgb);
	}
}

static void rect(struct canvas_img *c, double x0, double y0, double x1, double y1, int fill,
		 const unsigned char rgb[3])
{
	if (fill) {
		double px0, py0, px1, py1;

		to_px(c, x0, y0, &px0, &py0);
		to_px(c, x1, y1, &px1, &py1);
		for (int y = (int)floor(py0); y <= (int)ceil(py1); y++)
			for (int x = (int)floor(px0); x <= (int)ceil(px1); x++)
				put(c, x, y, rgb);
		return;
	}
	line(c, x0, y0, x1, y0, 1, rgb);
	line(c, x1, y0, x1, y1, 1, rgb);
	line(c, x1, y1, x0, y1, 1, rgb);
	line(c, x0, y1, x0, y0, 1, rgb);
}

/* The canvas's corner k (0 origin, 1 x, 2 xy, 3 y) on the table, machine mm. */
static struct machine_pt corner(const struct machine *m, int k)
{
	struct canvas_pt p = { (k == 1 || k == 2) ? m->canvas.size_mm[0] : 0.0,
			       k >= 2 ? m->canvas.size_mm[1] : 0.0 };

	return xform_to_machine(&m->xf, p);
}

/* The frame, scaled (nearest pixel) onto the canvas where the machine's transform puts it. */
static void paste_frame(struct canvas_img *c, const struct machine *m, const struct gate_image *f)
{
	double lo[2] = { INFINITY, INFINITY }, hi[2] = { -INFINITY, -INFINITY };
	const double *cs = m->canvas.size_mm;

	for (int k = 0; k < 4; k++) {
		struct machine_pt q = corner(m, k);
		double px, py;

		to_px(c, q.x, q.y, &px, &py);
		lo[0] = fmin(lo[0], px);
		lo[1] = fmin(lo[1], py);
		hi[0] = fmax(hi[0], px);
		hi[1] = fmax(hi[1], py);
	}
	for (int y = (int)ceil(lo[1]); y < (int)floor(hi[1]); y++) {
		for (int x = (int)ceil(lo[0]); x < (int)floor(hi[0]); x++) {
			static const unsigned char white[3] = { 250, 250, 248 };
			const unsigned char *src = white;
			struct canvas_pt p = xform_to_canvas(
				&m->xf, (struct machine_pt){ x / c->scale + c->x0, y / c->scale + c->y0 });

			if (p.x < 0 || p.y < 0 || p.x >= cs[0] || p.y >= cs[1])
				continue;
			if (f && f->rgb && f->width > 0 && f->height > 0) {
				int sx = (int)(p.x / cs[0] * f->width);
				int sy = (int)(p.y / cs[1] * f->height);

				if (sx >= f->width)
					sx = f->width - 1;
				if (sy >= f->height)
					sy = f->height - 1;
				src = f->rgb + (size_t)sy * f->stride + (size_t)sx * 3;
			}
			put(c, x, y, src);
		}
	}
}

/* The canvas's edge, through the transform. */
static void canvas_edge(struct canvas_img *c, const struct machine *m, const unsigned char rgb[3])
{
	for (int k = 0; k < 4; k++) {
		struct machine_pt a = corner(m, k), b = corner(m, (k + 1) % 4);

		line(c, a.x, a.y, b.x, b.y, 1, rgb);
	}
}

static int flagged(const struct gate_decision *d, size_t seg)
{
	if (!d)
		return 0;
	for (int i = 0; i < d->n_findings; i++)
		if (d->findings[i].segment == (long)seg)
			return 1;
	return 0;
}

static int write_png(const char *path, const struct canvas_img *c, bl_err *err)
{
	png_structp png;
	png_infop info;
	FILE *fp = fopen(path, "wb");
	int rc = 0;

	if (!fp)
		return bl_fail(err, BL_EIO, "%s: cannot create: %s", path, strerror(errno));
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info) {
		rc = bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
		goto out;
	}
	if (setjmp(png_jmpbuf(png))) {
		rc = bl_fail(err, BL_EIO, "%s: libpng could not write the image", path);
		goto out;
	}
	png_init_io(png, fp);
	png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int y = 0; y < c->h; y++)
		png_write_row(png, c->px + (size_t)y * (size_t)c->w * 3);
	png_write_end(png, NULL);
out:
	png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
	if (fclose(fp) != 0 && rc == 0)
		rc = bl_fail(err, BL_EIO, "%s: write failed: %s", path, strerror(errno));
	if (rc)
		remove(path);
	return rc;
}

int gate_preview_png(const struct machine *m, const struct arm_path *path,
		     const struct gate_decision *d, const struct gate_image *frame, int width_px,
		     const char *out_path, bl_err *err)
{
	static const unsigned char bg[3] = { 222, 222, 218 }, edge[3] = { 90, 90, 90 },
				   well[3] = { 40, 90, 200 }, cell[3] = { 140, 60, 170 },
				   water[3] = { 0, 160, 190 }, wipe[3] = { 150, 100, 50 },
				   keep[3] = { 235, 150, 150 }, travel[3] = { 110, 130, 160 },
				   down[3] = { 240, 140, 0 }, paint[3] = { 0, 120, 40 },
				   bad[3] = { 220, 0, 0 }, start[3] = { 0, 200, 0 };
	struct canvas_img c;
	double wmm = m->work_max_mm[0] - m->work_min_mm[0];
	double hmm = m->work_max_mm[1] - m->work_min_mm[1];
	int rc;

	if (width_px < 32 || width_px > 4096)
		return bl_fail(err, BL_EINVAL, "preview width %d px is outside 32..4096", width_px);
	if (frame && frame->rgb &&
	    (frame->width <= 0 || frame->height <= 0 || frame->stride < (size_t)frame->width * 3))
		return bl_fail(err, BL_EINVAL, "preview frame %dx%d with stride %zu is not an RGB image",
			       frame->width, frame->height, frame->stride);
	c.scale = width_px / wmm;
	c.w = width_px;
	c.h = (int)ceil(hmm * c.scale);
	if (c.h < 16)
		c.h = 16;
	if (c.h > 4096)
		c.h = 4096;
	c.x0 = m->work_min_mm[0];
	c.y0 = m->work_min_mm[1];
	c.px = malloc((size_t)c.w * (size_t)c.h * 3);
	if (!c.px)
		return bl_fail(err, BL_ENOMEM, "out of memory drawing a preview");
	for (size_t i = 0; i < (size_t)c.w * (size_t)c.h; i++)
		memcpy(c.px + i * 3, bg, 3);

	for (int i = 0; i < m->n_keep_out; i++)
		rect(&c, m->keep_out[i].min_mm[0], m->keep_out[i].min_mm[1], m->keep_out[i].max_mm[0],
		     m->keep_out[i].max_mm[1], 1, keep);
	paste_frame(&c, m, frame);
	canvas_edge(&c, m, edge);
	for (int i = 0; i < m->n_wells; i++)
		circle(&c, m->wells[i].center_mm[0], m->wells[i].center_mm[1], m->wells[i].radius_mm,
		       well);
	for (int i = 0; i < m->n_cells; i++)
		circle(&c, m->cells[i].center_mm[0], m->cells[i].center_mm[1], m->cells[i].radius_mm,
		       cell);
	circle(&c, m->water.center_mm[0], m->water.center_mm[1], m->water.radius_mm, water);
	circle(&c, m->wipe.center_mm[0], m->wipe.center_mm[1], m->wipe.radius_mm, wipe);

	/* Travel first, then what goes down, then the offending segments on top. */
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; path && i < path->n; i++) {
			const struct arm_segment *s = &path->seg[i];
			int is_bad = flagged(d, i);
			int low = fmin(s->from.z, s->to.z) < m->limits.z_floor.travel_mm;
			const unsigned char *col = s->flags & ARM_SEG_PAINTS ? paint : low ? down : travel;

			if ((pass == 0 && (low || is_bad)) || (pass == 1 && (!low || is_bad)) ||
			    (pass == 2 && !is_bad))
				continue;
			line(&c, s->from.x, s->from.y, s->to.x, s->to.y, pass == 2 ? 3 : 2,
			     pass == 2 ? bad : col);
		}
	}
	if (path && path->n) {
		const arm_point *p0 = &path->seg[0].from, *p1 = &path->seg[path->n - 1].to;

		rect(&c, p0->x - 3.0 / c.scale, p0->y - 3.0 / c.scale, p0->x + 3.0 / c.scale,
		     p0->y + 3.0 / c.scale, 1, start);
		rect(&c, p1->x - 3.0 / c.scale, p1->y - 3.0 / c.scale, p1->x + 3.0 / c.scale,
		     p1->y + 3.0 / c.scale, 1, edge);
	}
	rc = write_png(out_path, &c, err);
	free(c.px);
	return rc;
}
