/* bench_vision.c: benchmarks of the vision pipeline: one 1080p observation, TurboJPEG's decode of its frame alone, and a CIEDE2000 map of a 400x300 mm canvas. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <turbojpeg.h>

#include "bench/bench.h"
#include "vision/canvas.h"
#include "vision/measure.h"
#include "vision/observe.h"
#include "vision/synth.h"

#define BENCH_W 1920
#define BENCH_H 1080

/* Five swatches across the canvas and a wash of colour behind them. */
static const double swatch_mm[5][2] = { { 50, 50 }, { 150, 80 }, { 250, 150 }, { 320, 220 },
					{ 90, 240 } };
static const unsigned char swatch_rgb[5][3] = { { 200, 40, 40 }, { 40, 160, 60 },
						 { 40, 60, 190 }, { 220, 200, 60 },
						 { 120, 120, 120 } };

static void bench_paint(void *ctx, double x, double y, unsigned char rgb[3])
{
	(void)ctx;
	for (int i = 0; i < 5; i++)
		if (fabs(x - swatch_mm[i][0]) < 20 && fabs(y - swatch_mm[i][1]) < 20) {
			memcpy(rgb, swatch_rgb[i], 3);
			return;
		}
	rgb[0] = (unsigned char)(200 + 40 * x / 400);
	rgb[1] = (unsigned char)(190 + 40 * y / 300);
	rgb[2] = 180;
}

/* Canvas (0,0), (W,0), (W,H), (0,H) as a camera above the table sees them: the origin bottom left. */
static const double bench_corners[8] = { 440, 930, 1480, 945, 1450, 160, 470, 150 };
static const double bench_size[2] = { 400, 300 };
static const struct vis_markers bench_markers = { { 400, 300 }, 30, 25 };

static unsigned char *frame_jpeg;
static unsigned long frame_len;
static int rois[5][4];

/* A 1080p frame as a UVC camera sends it: MJPEG, 4:2:2, quality 90. */
static int make_frame(bl_err *err)
{
	struct vis_synth s = { 0 };
	struct img im;
	tjhandle tj;
	double H[9];
	const double cpts[8] = { 0, 0, 400, 0, 400, 300, 0, 300 };
	int rc;

	if (frame_jpeg)
		return 0;
	s.w = BENCH_W;
	s.h = BENCH_H;
	memcpy(s.corners_px, bench_corners, sizeof(bench_corners));
	memcpy(s.size_mm, bench_size, sizeof(bench_size));
	s.markers = 1;
	s.marker_size_mm = bench_markers.size_mm;
	s.marker_offset_mm = bench_markers.offset_mm;
	memset(s.table, 70, 3);
	memset(s.paper, 225, 3);
	s.paper_margin_mm = 25;
	s.paint = bench_paint;
	s.noise = 2.0;
	s.seed = 7;
	rc = vis_synth_frame(&s, &im, err);
	if (rc)
		return rc;
	tj = tjInitCompress();
	if (!tj || tjCompress2(tj, im.px, im.w, im.w * 3, im.h, TJPF_RGB, &frame_jpeg, &frame_len,
			       TJSAMP_422, 90, 0) < 0)
		rc = bl_fail(err, BL_EIO, "bench: JPEG encoding failed");
	if (tj)
		tjDestroy(tj);
	img_free(&im);
	if (rc)
		return rc;
	/* Swatch regions in the frame: 20x20 mm squares shrunk to 60% and mapped through H. */
	rc = cv_homography(cpts, bench_corners, 4, H, err);
	for (int i = 0; rc == 0 && i < 5; i++) {
		double p[4] = { swatch_mm[i][0] - 6, swatch_mm[i][1] - 6, swatch_mm[i][0] + 6,
				swatch_mm[i][1] + 6 }, q[4];

		cv_apply_homography(H, p, q, 2);
		rois[i][0] = (int)ceil(fmin(q[0], q[2]));
		rois[i][1] = (int)ceil(fmin(q[1], q[3]));
		rois[i][2] = (int)floor(fmax(q[0], q[2])) - rois[i][0];
		rois[i][3] = (int)floor(fmax(q[1], q[3])) - rois[i][1];
	}
	return rc;
}

int bench_vision_observe(double *value, int quick, bl_err *err)
{
	struct meas_profile *p = NULL;
	struct img im = { 0 };
	struct vis_observer o;
	struct vis_observation ob = { 0 };
	struct vis_geometry g;
	double t0;
	int rc = make_frame(err);

	if (rc || (rc = meas_profile_open(NULL, &p, err)))
		return rc;
	/* The run's pipeline, on a frame of a machine without a light map: its markers are the bench's. */
	vis_observer_init(&o, NULL, p);
	o.markers = bench_markers;
	o.px_per_mm = 1.0;
	t0 = bench_now_ms();
	rc = img_decode(frame_jpeg, frame_len, "bench frame", 40000000L, &im, err);
	if (rc == 0)
		rc = vis_observe_canvas(&o, &im, "bench frame", &g, &ob, err);
	if (rc == 0 && g.source != VIS_FROM_MARKERS)
		rc = bl_fail(err, BL_EIO, "bench: markers not found");
	for (int i = 0; rc == 0 && i < 5; i++) {
		struct meas_roi r = { rois[i][0], rois[i][1], rois[i][2], rois[i][3] };
		struct meas_swatch s;

		rc = meas_swatch(&im, "bench frame", &r, p, &s, err);
	}
	*value = bench_now_ms() - t0;
	vis_observation_free(&ob);
	img_free(&im);
	meas_profile_close(p);
	return rc;
}

/*
 * TurboJPEG's own decode of the observation's frame to RGB (tjDecompress2,
 * the handle and buffer made beforehand): the floor under
 * vision.observe_1080p_ms, which decodes the same frame and then does
 * everything else, measured in the same run.
 */
int bench_vision_jpeg_decode(double *value, int quick, bl_err *err)
{
	unsigned char *px;
	tjhandle tj;
	double t0;
	int rc = make_frame(err), w, h, sub, cs;

	if (rc)
		return rc;
	px = malloc((size_t)BENCH_W * BENCH_H * 3);
	tj = tjInitDecompress();
	if (!px || !tj) {
		rc = bl_fail(err, BL_ENOMEM, "bench: no TurboJPEG decoder");
		goto out_free;
	}
	t0 = bench_now_ms();
	if (tjDecompressHeader3(tj, frame_jpeg, frame_len, &w, &h, &sub, &cs) < 0 ||
	    w != BENCH_W || h != BENCH_H ||
	    tjDecompress2(tj, frame_jpeg, frame_len, px, w, 0, h, TJPF_RGB, 0) < 0)
		rc = bl_fail(err, BL_EIO, "bench: JPEG decoding failed: %s", tjGetErrorStr2(tj));
	*value = bench_now_ms() - t0;
out_free:
	if (tj)
		tjDestroy(tj);
	free(px);
	return rc;
}

int bench_vision_de_map(double *value, int quick, bl_err *err)
{
	enum { W = 400, H = 300 };
	struct meas_profile *p = NULL;
	struct img obs = { 0 }, tgt = { 0 };
	struct meas_map map = { 0 };
	float *lo = NULL, *lt = NULL;
	double t0;
	int rc;

	if ((rc = meas_profile_open(NULL, &p, err)) || (rc = img_alloc(&obs, W, H, err)) ||
	    (rc = img_alloc(&tgt, W, H, err)))
		goto out_free;
	lo = malloc((size_t)W * H * 3 * sizeof(float));
	lt = malloc((size_t)W * H * 3 * sizeof(float));
	if (!lo || !lt) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			unsigned char *o = obs.px + ((size_t)y * W + x) * 3;
			unsigned char *t = tgt.px + ((size_t)y * W + x) * 3;

			t[0] = (unsigned char)(x * 255 / W);
			t[1] = (unsigned char)(y * 255 / H);
			t[2] = (unsigned char)((x + y) & 255);
			o[0] = (unsigned char)(t[0] * 9 / 10 + 10);
			o[1] = t[1];
			o[2] = (unsigned char)(t[2] ^ 8);
		}
	/* The target is converted once a run, not once an observation: outside the timing. */
	rc = meas_lab_raster(p, &tgt, lt, err);
	if (rc)
		goto out_free;
	t0 = bench_now_ms();
	rc = meas_lab_raster(p, &obs, lo, err);
	if (rc == 0)
		rc = meas_de_map(lo, lt, W, H, 1.0, 1.0, 5, &map, err);
	*value = bench_now_ms() - t0;
out_free:
	meas_map_free(&map);
	free(lo);
	free(lt);
	img_free(&obs);
	img_free(&tgt);
	meas_profile_close(p);
	return rc;
}
