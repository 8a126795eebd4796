/* gen_targets.c: draws the five example targets (and small test images) procedurally and writes them as PNG, so nothing is downloaded. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "examples/targets/targets.h"

/* ---- drawing on a float sRGB canvas ----------------------------------- */

struct img {
	int w, h;
	float *px; /* w * h * 3, sRGB 0..1 */
};

static float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void put(struct img *im, int x, int y, const float *c, float a)
{
	float *p;

	if (x < 0 || y < 0 || x >= im->w || y >= im->h || a <= 0.0f)
		return;
	a = a > 1.0f ? 1.0f : a;
	p = im->px + 3 * ((size_t)y * im->w + x);
	for (int k = 0; k < 3; k++)
		p[k] += a * (c[k] - p[k]);
}

/* Coverage of a pixel by a shape whose signed distance (px, negative inside) is d: a one-pixel antialiased edge. */
static float cover(float d, float soft)
{
	return clampf(0.5f - d / soft, 0.0f, 1.0f);
}

static void rgb(float *c, int r, int g, int b)
{
	c[0] = r / 255.0f;
	c[1] = g / 255.0f;
	c[2] = b / 255.0f;
}

static void fill(struct img *im, const float *c)
{
	for (size_t i = 0; i < (size_t)im->w * im->h; i++)
		memcpy(im->px + 3 * i, c, 3 * sizeof(float));
}

static void vgradient(struct img *im, int y0, int y1, const float *top, const float *bot)
{
	for (int y = y0; y < y1 && y < im->h; y++) {
		float t = (float)(y - y0) / (float)(y1 - y0 > 1 ? y1 - y0 - 1 : 1), c[3];

		for (int k = 0; k < 3; k++)
			c[k] = top[k] + t * (bot[k] - top[k]);
		for (int x = 0; x < im->w; x++)
			put(im, x, y, c, 1.0f);
	}
}

static void ellipse(struct img *im, float cx, float cy, float rx, float ry, const float *c, float a,
		    float soft)
{
	int x0 = (int)(cx - rx - soft - 2), x1 = (int)(cx + rx + soft + 2);
	int y0 = (int)(cy - ry - soft - 2), y1 = (int)(cy + ry + soft + 2);

	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++) {
			float dx = (x + 0.5f - cx) / rx, dy = (y + 0.5f - cy) / ry;
			float d = (sqrtf(dx * dx + dy * dy) - 1.0f) * fminf(rx, ry);

			put(im, x, y, c, a * cover(d, soft));
		}
}

static void rect(struct img *im, float x0, float y0, float x1, float y1, const float *c)
{
	for (int y = (int)y0 - 1; y <= (int)y1 + 1; y++)
		for (int x = (int)x0 - 1; x <= (int)x1 + 1; x++) {
			float px = x + 0.5f, py = y + 0.5f;
			float d = fmaxf(fmaxf(x0 - px, px - x1), fmaxf(y0 - py, py - y1));

			put(im, x, y, c, cover(d, 1.0f));
		}
}

/* A line of width w from (ax, ay) to (bx, by), round ends. */
static void line(struct img *im, float ax, float ay, float bx, float by, float w, const float *c)
{
	float dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy, r = 0.5f * w;
	int x0 = (int)(fminf(ax, bx) - r - 2), x1 = (int)(fmaxf(ax, bx) + r + 2);
	int y0 = (int)(fminf(ay, by) - r - 2), y1 = (int)(fmaxf(ay, by) + r + 2);

	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++) {
			float px = x + 0.5f - ax, py = y + 0.5f - ay, t = l2 > 0 ? (px * dx + py * dy) / l2 : 0;

			t = clampf(t, 0.0f, 1.0f);
			put(im, x, y, c, cover(hypotf(px - t * dx, py - t * dy) - r, 1.0f));
		}
}

/* A triangle by its edges' signed distances. */
static void triangle(struct img *im, const float *v, const float *c)
{
	float xmin = fminf(v[0], fminf(v[2], v[4])), xmax = fmaxf(v[0], fmaxf(v[2], v[4]));
	float ymin = fminf(v[1], fminf(v[3], v[5])), ymax = fmaxf(v[1], fmaxf(v[3], v[5]));
	float area = (v[2] - v[0]) * (v[5] - v[1]) - (v[4] - v[0]) * (v[3] - v[1]);
	float s = area > 0 ? 1.0f : -1.0f;

	for (int y = (int)ymin - 1; y <= (int)ymax + 1; y++)
		for (int x = (int)xmin - 1; x <= (int)xmax + 1; x++) {
			float px = x + 0.5f, py = y + 0.5f, d = -1e9f;

			for (int e = 0; e < 3; e++) {
				float ax = v[2 * e], ay = v[2 * e + 1];
				float bx = v[2 * ((e + 1) % 3)], by = v[2 * ((e + 1) % 3) + 1];
				float nx = (by - ay) * s, ny = -(bx - ax) * s, nl = hypotf(nx, ny);

				d = fmaxf(d, ((px - ax) * nx + (py - ay) * ny) / nl);
			}
			put(im, x, y, c, cover(d, 1.0f));
		}
}

/* A lit sphere: Lambert shading from the upper left plus a soft highlight. */
static void sphere(struct img *im, float cx, float cy, float r, const float *base, float shine)
{
	const float lx = -0.5f, ly = -0.6f, lz = 0.62f;

	for (int y = (int)(cy - r - 2); y <= (int)(cy + r + 2); y++)
		for (int x = (int)(cx - r - 2); x <= (int)(cx + r + 2); x++) {
			float nx = (x + 0.5f - cx) / r, ny = (y + 0.5f - cy) / r, q = nx * nx + ny * ny;
			float nz, lam, spec, c[3];

			if (q > 1.0f) {
				put(im, x, y, base, 0.3f * cover((sqrtf(q) - 1.0f) * r, 1.0f));
				continue;
			}
			nz = sqrtf(1.0f - q);
			lam = clampf(nx * lx + ny * ly + nz * lz, 0.0f, 1.0f);
			spec = powf(clampf(nz * 0.9f + lam * 0.2f, 0.0f, 1.0f), 40.0f) * shine;
			for (int k = 0; k < 3; k++)
				c[k] = clampf(base[k] * (0.25f + 0.8f * lam) + spec, 0.0f, 1.0f);
			put(im, x, y, c, cover((sqrtf(q) - 1.0f) * r, 1.0f));
		}
}

/* Deterministic pseudo-random numbers, so the pictures are the same on every machine. */
static uint32_t lcg_state;

static float frand(void)
{
	lcg_state = lcg_state * 1664525u + 1013904223u;
	return (lcg_state >> 8) / 16777216.0f;
}

/* ---- the scenes -------------------------------------------------------- */

static void autumn_tree(struct img *im)
{
	float W = (float)im->w, H = (float)im->h, c[3], d[3];

	lcg_state = 7;
	rgb(c, 120, 170, 225);
	rgb(d, 215, 230, 240);
	vgradient(im, 0, (int)(0.62f * H), c, d);
	rgb(c, 245, 235, 190);
	ellipse(im, 0.82f * W, 0.16f * H, 0.05f * W, 0.05f * W, c, 1.0f, 1.0f);
	/* Distant hills, then the field. */
	rgb(c, 110, 140, 150);
	for (int x = 0; x < im->w; x++) {
		float top = H * (0.52f + 0.05f * sinf(x / W * 6.0f) + 0.02f * sinf(x / W * 17.0f));

		for (int y = (int)top; y < (int)(0.66f * H); y++)
			put(im, x, y, c, 1.0f);
	}
	rgb(c, 150, 165, 70);
	rgb(d, 90, 120, 40);
	vgradient(im, (int)(0.62f * H), im->h, c, d);
	/* Trunk and branches. */
	rgb(c, 85, 55, 35);
	{
		float tx = 0.42f * W, v[6] = { tx - 0.03f * W, 0.86f * H, tx + 0.03f * W, 0.86f * H, tx, 0.35f * H };

		triangle(im, v, c);
		line(im, tx, 0.55f * H, tx - 0.16f * W, 0.38f * H, 0.018f * W, c);
		line(im, tx, 0.50f * H, tx + 0.17f * W, 0.33f * H, 0.016f * W, c);
		line(im, tx - 0.08f * W, 0.47f * H, tx - 0.12f * W, 0.28f * H, 0.01f * W, c);
		line(im, tx + 0.08f * W, 0.42f * H, tx + 0.05f * W, 0.22f * H, 0.01f * W, c);
	}
	/* The canopy: overlapping clumps of warm foliage. */
	for (int i = 0; i < 260; i++) {
		float a = frand() * 6.2832f, r = sqrtf(frand());
		float x = 0.42f * W + cosf(a) * r * 0.27f * W, y = 0.30f * H + sinf(a) * r * 0.22f * H;
		float s = (0.015f + 0.03f * frand()) * W, pick = frand();

		if (pick < 0.3f)
			rgb(c, 200, 80, 30);
		else if (pick < 0.55f)
			rgb(c, 230, 150, 40);
		else if (pick < 0.75f)
			rgb(c, 170, 45, 30);
		else if (pick < 0.9f)
			rgb(c, 235, 200, 70);
		else
			rgb(c, 120, 70, 30);
		ellipse(im, x, y, s, s * 0.85f, c, 0.9f, 1.5f);
	}
	/* Fallen leaves. */
	for (int i = 0; i < 120; i++) {
		float x = (0.2f + 0.5f * frand()) * W, y = (0.8f + 0.18f * frand()) * H;

		rgb(c, frand() < 0.5f ? 210 : 180, 90 + (int)(60 * frand()), 30);
		ellipse(im, x, y, 0.006f * W, 0.004f * W, c, 1.0f, 1.0f);
	}
}

static void flat_shapes(struct img *im)
{
	float W = (float)im->w, H = (float)im->h, c[3];

	rgb(c, 238, 232, 218);
	fill(im, c);
	rgb(c, 30, 60, 140);
	rect(im, 0.08f * W, 0.1f * H, 0.45f * W, 0.55f * H, c);
	rgb(c, 210, 40, 40);
	ellipse(im, 0.6f * W, 0.42f * H, 0.2f * W, 0.2f * W, c, 1.0f, 1.0f);
	rgb(c, 245, 195, 30);
	{
		float v[6] = { 0.55f * W, 0.92f * H, 0.95f * W, 0.92f * H, 0.78f * W, 0.5f * H };

		triangle(im, v, c);
	}
	rgb(c, 25, 25, 25);
	rect(im, 0.05f * W, 0.7f * H, 0.5f * W, 0.74f * H, c);
	rect(im, 0.3f * W, 0.05f * H, 0.33f * W, 0.95f * H, c);
	rgb(c, 40, 140, 90);
	ellipse(im, 0.18f * W, 0.86f * H, 0.08f * W, 0.08f * W, c, 1.0f, 1.0f);
	rgb(c, 245, 245, 245);
	ellipse(im, 0.6f * W, 0.42f * H, 0.06f * W, 0.06f * W, c, 1.0f, 1.0f);
}

static void gradient_sky(struct img *im)
{
	float W = (float)im->w, H = (float)im->h, a[3], b[3], c[3];

	lcg_state = 11;
	rgb(a, 35, 45, 110);
	rgb(b, 120, 80, 140);
	vgradient(im, 0, (int)(0.35f * H), a, b);
	rgb(a, 120, 80, 140);
	rgb(b, 240, 140, 80);
	vgradient(im, (int)(0.35f * H), (int)(0.65f * H), a, b);
	rgb(a, 240, 140, 80);
	rgb(b, 252, 215, 120);
	vgradient(im, (int)(0.65f * H), im->h, a, b);
	/* Soft clouds lit from below. */
	for (int i = 0; i < 14; i++) {
		float x = frand() * W, y = (0.2f + 0.4f * frand()) * H;

		rgb(c, 230, 150 + (int)(40 * frand()), 150);
		ellipse(im, x, y, (0.08f + 0.1f * frand()) * W, 0.025f * H, c, 0.45f, 18.0f);
	}
	rgb(c, 40, 30, 45);
	for (int x = 0; x < im->w; x++) {
		float top = H * (0.82f + 0.03f * sinf(x / W * 9.0f) + 0.015f * sinf(x / W * 31.0f));

		for (int y = (int)top; y < im->h; y++)
			put(im, x, y, c, 1.0f);
	}
}

static void fine_detail(struct img *im)
{
	float W = (float)im->w, H = (float)im->h, c[3];

	rgb(c, 245, 243, 235);
	fill(im, c);
	/* Hatching, a fine grid, rings, dots and a checkerboard: detail at every scale. */
	rgb(c, 20, 20, 60);
	for (int i = 0; i < 40; i++)
		line(im, 0.05f * W + i * 0.009f * W, 0.05f * H, 0.05f * W + i * 0.009f * W + 0.1f * W,
		     0.45f * H, 1.5f, c);
	rgb(c, 160, 30, 30);
	for (int i = 0; i <= 20; i++) {
		line(im, 0.55f * W, 0.05f * H + i * 0.02f * H, 0.95f * W, 0.05f * H + i * 0.02f * H, 1.2f, c);
		line(im, 0.55f * W + i * 0.02f * W, 0.05f * H, 0.55f * W + i * 0.02f * W, 0.45f * H, 1.2f, c);
	}
	rgb(c, 30, 110, 60);
	for (int i = 1; i <= 14; i++) {
		float r = i * 0.012f * W;

		for (int k = 0; k < 720; k++) {
			float t0 = k * 6.2832f / 720, t1 = (k + 1) * 6.2832f / 720;

			line(im, 0.25f * W + r * cosf(t0), 0.74f * H + r * sinf(t0),
			     0.25f * W + r * cosf(t1), 0.74f * H + r * sinf(t1), 2.0f, c);
		}
	}
	for (int y = 0; y < 12; y++)
		for (int x = 0; x < 16; x++) {
			if ((x + y) % 2)
				rgb(c, 30, 30, 30);
			else
				rgb(c, 230, 200, 60);
			rect(im, 0.55f * W + x * 0.0125f * W, 0.55f * H + y * 0.0125f * W,
			     0.55f * W + (x + 1) * 0.0125f * W, 0.55f * H + (y + 1) * 0.0125f * W, c);
		}
	rgb(c, 40, 80, 180);
	for (int y = 0; y < 10; y++)
		for (int x = 0; x < 30; x++)
			ellipse(im, 0.55f * W + x * 0.013f * W, 0.8f * H + y * 0.016f * H, 2.2f, 2.2f, c,
				1.0f, 1.0f);
}

static void still_life(struct img *im)
{
	float W = (float)im->w, H = (float)im->h, a[3], b[3], c[3];

	rgb(a, 120, 105, 95);
	rgb(b, 175, 160, 140);
	vgradient(im, 0, (int)(0.6f * H), a, b);
	rgb(a, 120, 80, 50);
	rgb(b, 80, 50, 30);
	vgradient(im, (int)(0.6f * H), im->h, a, b);
	/* Soft shadows on the table, then the objects. */
	rgb(c, 40, 25, 15);
	ellipse(im, 0.35f * W, 0.78f * H, 0.14f * W, 0.035f * H, c, 0.6f, 25.0f);
	ellipse(im, 0.62f * W, 0.8f * H, 0.1f * W, 0.03f * H, c, 0.6f, 20.0f);
	ellipse(im, 0.8f * W, 0.74f * H, 0.09f * W, 0.04f * H, c, 0.5f, 25.0f);
	/* A vase: a tall shaded ellipse with a neck. */
	rgb(c, 60, 90, 130);
	sphere(im, 0.8f * W, 0.5f * H, 0.1f * W, c, 0.6f);
	for (int y = (int)(0.2f * H); y < (int)(0.45f * H); y++)
		for (int x = (int)(0.76f * W); x < (int)(0.84f * W); x++) {
			float nx = (x + 0.5f - 0.8f * W) / (0.04f * W), lam = clampf(0.3f + 0.7f * (0.5f - 0.5f * nx), 0.0f, 1.0f);
			float cc[3] = { c[0] * (0.3f + 0.8f * lam), c[1] * (0.3f + 0.8f * lam), c[2] * (0.3f + 0.8f * lam) };

			put(im, x, y, cc, cover((fabsf(nx) - 1.0f) * 0.04f * W, 1.0f));
		}
	rgb(c, 190, 30, 30);
	sphere(im, 0.33f * W, 0.65f * H, 0.12f * W, c, 0.8f);
	rgb(c, 235, 130, 20);
	sphere(im, 0.6f * W, 0.7f * H, 0.09f * W, c, 0.5f);
	rgb(c, 220, 200, 80);
	sphere(im, 0.48f * W, 0.74f * H, 0.05f * W, c, 0.4f);
}

static const struct {
	const char *name;
	void (*draw)(struct img *);
} scenes[] = {
	{ "autumn-tree", autumn_tree },
	{ "flat-shapes", flat_shapes },
	{ "gradient-sky", gradient_sky },
	{ "fine-detail", fine_detail },
	{ "still-life", still_life },
};

const char *const target_names[TARGET_COUNT] = { "autumn-tree", "flat-shapes", "gradient-sky",
						 "fine-detail", "still-life" };

int target_draw(int which, int w, int h, unsigned char *rgb8)
{
	struct img im = { w, h, calloc((size_t)w * h * 3, sizeof(float)) };

	if (which < 0 || which >= TARGET_COUNT || !im.px) {
		free(im.px);
		return -1;
	}
	scenes[which].draw(&im);
	for (size_t i = 0; i < (size_t)w * h * 3; i++)
		rgb8[i] = (unsigned char)lrintf(clampf(im.px[i], 0.0f, 1.0f) * 255.0f);
	free(im.px);
	return 0;
}

#ifdef TARGETS_MAIN
/* ---- PNG output ------------------------------------------------------- */

static int write_png(const char *path, int w, int h, int channels, int depth, const void *data)
{
	FILE *f = fopen(path, "wb");
	png_structp png;
	png_infop info;
	int type = channels == 1 ? PNG_COLOR_TYPE_GRAY
		   : channels == 2 ? PNG_COLOR_TYPE_GRAY_ALPHA
		   : channels == 3 ? PNG_COLOR_TYPE_RGB
				   : PNG_COLOR_TYPE_RGB_ALPHA;
	size_t stride = (size_t)w * channels * (depth / 8);

	if (!f)
		return -1;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info || setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		fclose(f);
		return -1;
	}
	png_init_io(png, f);
	png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, type, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, 9);
	png_write_info(png, info);
	if (depth == 16)
		png_set_swap(png); /* our 16-bit samples are in host order */
	for (int y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep)data + (size_t)y * stride);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return fclose(f);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	int w = 1000, h = 800;
	char path[1024];
	unsigned char *rgb8 = malloc((size_t)w * h * 3);

	if (!rgb8)
		return 1;
	for (int i = 0; i < TARGET_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/%s.png", dir, target_names[i]);
		if (target_draw(i, w, h, rgb8) || write_png(path, w, h, 3, 8, rgb8)) {
			fprintf(stderr, "gen_targets: cannot write %s\n", path);
			return 1;
		}
		printf("%s\n", path);
	}
	/* Small variants for tests of the other PNG layouts: 16-bit grey with alpha, and one pixel. */
	if (argc > 2) {
		int sw = 80, sh = 60;
		uint16_t *ga = malloc((size_t)sw * sh * 2 * sizeof(uint16_t));
		unsigned char *small = malloc((size_t)sw * sh * 3);

		if (!ga || !small || target_draw(1, sw, sh, small))
			return 1;
		for (int i = 0; i < sw * sh; i++) {
			ga[2 * i] = (uint16_t)(257 * ((small[3 * i] * 3 + small[3 * i + 1] * 6 + small[3 * i + 2]) / 10));
			ga[2 * i + 1] = (uint16_t)(i % sw < sw / 2 ? 65535 : 32768);
		}
		snprintf(path, sizeof(path), "%s/grey16-alpha.png", argv[2]);
		if (write_png(path, sw, sh, 2, 16, ga))
			return 1;
		printf("%s\n", path);
		snprintf(path, sizeof(path), "%s/one-pixel.png", argv[2]);
		if (write_png(path, 1, 1, 3, 8, small))
			return 1;
		printf("%s\n", path);
		free(ga);
		free(small);
	}
	free(rgb8);
	return 0;
}
#endif
