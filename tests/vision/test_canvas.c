/* test_canvas.c: the OpenCV shim, the canvas file, locating the canvas by its markers or the file, rectification with and without lens distortion. */
#include "cv/cv.h"
#include "vision/canvas.h"
#include "vision/synth.h"
#include "vtest.h"

static const double SIZE[2] = { 400, 300 };
/* Canvas (0,0), (W,0), (W,H), (0,H) as a camera above the table sees them: the origin bottom left. */
static const double CORNERS[8] = { 250, 600, 1030, 615, 1000, 150, 280, 165 };
static const struct vis_markers MK = { { 400, 300 }, 30, 25 };

/* Four flat quadrants split at x = 100 mm and y = 150 mm. */
static void quadrants(void *ctx, double x, double y, unsigned char rgb[3])
{
	static const unsigned char q[4][3] = { { 190, 50, 50 }, { 50, 170, 70 }, { 60, 70, 180 },
					       { 200, 190, 80 } };
	int k = (x >= 100) + 2 * (y >= 150);

	(void)ctx;
	memcpy(rgb, q[k], 3);
}

static void synth_init(struct vis_synth *s, int markers)
{
	memset(s, 0, sizeof(*s));
	s->w = 1280;
	s->h = 720;
	memcpy(s->corners_px, CORNERS, sizeof(CORNERS));
	memcpy(s->size_mm, SIZE, sizeof(SIZE));
	s->markers = markers;
	s->marker_size_mm = MK.size_mm;
	s->marker_offset_mm = MK.offset_mm;
	memset(s->table, 60, 3);
	memset(s->paper, 228, 3);
	s->paper_margin_mm = 25;
	s->paint = quadrants;
	s->noise = 2.0;
	s->seed = 3;
}

static void render(const struct vis_synth *s, struct img *im)
{
	bl_err err = { 0 };

	if (vis_synth_frame(s, im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
}

/* The column in raster row y where red gives way to green (the x = 100 mm edge), sub-pixel. */
static double edge_x(const struct img *r, int y)
{
	const unsigned char *row = r->px + (size_t)y * r->w * 3;

	for (int x = 1; x < r->w; x++) {
		int a = row[(x - 1) * 3 + 1], b = row[x * 3 + 1];

		if (a < 110 && b >= 110)
			return x - 1 + (110.0 - a) / (b - a) + 0.5; /* pixel centres at +0.5 mm */
	}
	return -1;
}

static double corner_error(const double *a, const double *b)
{
	double m = 0;

	for (int i = 0; i < 4; i++)
		m = fmax(m, hypot(a[2 * i] - b[2 * i], a[2 * i + 1] - b[2 * i + 1]));
	return m;
}

TEST(homography_exact_and_degenerate)
{
	const double src[8] = { 0, 0, 400, 0, 400, 300, 0, 300 };
	const double line[8] = { 0, 0, 1, 1, 2, 2, 0, 300 };
	double H[9], Hi[9], p[2] = { 123, 45 }, q[2];
	const double sing[9] = { 1, 2, 3, 2, 4, 6, 0, 0, 1 };
	bl_err err = { 0 };
	double bad[8];

	CHECK(cv_homography(src, CORNERS, 4, H, &err) == 0);
	cv_apply_homography(H, src + 4, q, 1);
	CHECK_NEAR(q[0], CORNERS[4], 1e-6);
	CHECK_NEAR(q[1], CORNERS[5], 1e-6);
	CHECK(cv_invert3(H, Hi, &err) == 0);
	cv_apply_homography(H, p, q, 1);
	cv_apply_homography(Hi, q, q, 1);
	CHECK_NEAR(q[0], 123, 1e-6);
	CHECK_NEAR(q[1], 45, 1e-6);
	CHECK(cv_homography(line, CORNERS, 4, H, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "on one line");
	memcpy(bad, src, sizeof(bad));
	bad[3] = NAN;
	CHECK(cv_homography(bad, CORNERS, 4, H, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not finite");
	CHECK(cv_homography(src, CORNERS, 3, H, &err) == BL_EINVAL);
	CHECK(cv_invert3(sing, Hi, &err) == BL_EINVAL);
}

TEST(opencv_exceptions_become_error_codes)
{
	struct cv_camera cam = { 1000, 1000, 640, 360, { -0.2, 0.05, 0, 0, 0 }, 5 };
	double in[2] = { 1, 2 }, out[2];
	bl_err err = { 0 };

	/* OpenCV throws on an empty point set; the shim must hand back a code, not unwind into C. */
	CHECK(cv_undistort_points(&cam, in, out, 0, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "OpenCV");
	cam.ndist = 3;
	CHECK(cv_undistort_points(&cam, in, out, 1, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "3 coefficients");
}

TEST(distortion_round_trip)
{
	struct cv_camera cam = { 900, 900, 640, 360, { -0.25, 0.08, 0.001, -0.001, 0 }, 5 };
	double raw[8] = { 20, 20, 1260, 30, 640, 360, 100, 700 }, ideal[8], back[8];
	bl_err err = { 0 };

	CHECK(cv_undistort_points(&cam, raw, ideal, 4, &err) == 0);
	CHECK(cv_distort_points(&cam, ideal, back, 4, &err) == 0);
	CHECK(corner_error(raw, back) < 0.01);
	/* Barrel distortion: corner points move outwards when undistorted. */
	CHECK(ideal[0] < raw[0] && ideal[1] < raw[1]);
	CHECK_NEAR(ideal[4], 640, 1e-6);
}

TEST(canvas_file_round_trip)
{
	struct vis_canvas c, d;
	bl_err err = { 0 };
	const char *p = vt_path("canvas.json");

	vis_canvas_init(&c);
	c.image_w = 1280;
	c.image_h = 720;
	memcpy(c.size_mm, SIZE, sizeof(SIZE));
	memcpy(c.corners_px, CORNERS, sizeof(CORNERS));
	c.has_camera = 1;
	c.camera = (struct cv_camera){ 900, 905, 641, 359, { -0.2, 0.05, 0.001, 0.002, 0.01 }, 5 };
	c.error_mm = 0.21;
	CHECK(vis_canvas_save(p, &c, NULL, NULL, &err) == 0);
	CHECK_MSG(vis_canvas_load(p, &d, &err) == 0, "%s", err.msg);
	CHECK(d.image_w == 1280 && d.image_h == 720);
	CHECK(corner_error(d.corners_px, CORNERS) < 1e-9);
	CHECK(d.size_mm[0] == 400 && d.size_mm[1] == 300);
	CHECK(d.has_camera && d.camera.ndist == 5 && d.camera.fy == 905 && d.camera.dist[4] == 0.01);
	CHECK_NEAR(d.error_mm, 0.21, 1e-12);
}

TEST(example_canvas_file_loads)
{
	struct vis_canvas c;
	bl_err err = { 0 };

	CHECK_MSG(vis_canvas_load(BL_SOURCE_ROOT "/examples/canvas.json", &c, &err) == 0, "%s",
		  err.msg);
	CHECK(c.image_w == 1280 && c.has_camera && c.camera.ndist == 5);
	CHECK_NEAR(c.error_mm, 0.18, 1e-12);
}

TEST(canvas_file_rejects_bad_files)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]],\"colour\":1}", "colour" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0]]}", "3 corners" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,0],[100,100],[100,0],[0,100]]}", "convex" },
		{ "{\"kind\":\"canvas\",\"version\":3,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]]}", "version" },
		{ "{\"kind\":\"machine\",\"version\":1}", "kind" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,1e999],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]]}", "size_mm" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,\"x\"],[0,0]]}", "corner 2" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]],"
		  "\"camera\":{\"focal_px\":[900,900],\"centre_px\":[640,360],\"distortion\":[1,2,3]}}",
		  "camera.distortion" },
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]]} trailing", "canvas-bad.json" },
		/*
		 * Corners running clockwise on screen: a mirror image of the canvas,
		 * which no camera above the table sees (what calib canvas --corners
		 * wrote from corners given in the wrong order).
		 */
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[520,137],[1045,138],[1104,518],[505,518]]}", "mirror image" },
		/* The markers are the machine file's (zones.canvas.markers), not the canvas file's. */
		{ "{\"kind\":\"canvas\",\"version\":1,\"image_px\":[1280,720],\"size_mm\":[400,300],"
		  "\"corners_px\":[[0,100],[100,100],[100,0],[0,0]],\"marker_offset_mm\":10}",
		  "marker_offset_mm: unknown key" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = test_write_file("canvas-bad.json", cases[i].json);
		struct vis_canvas c;
		bl_err err = { 0 };
		int rc = vis_canvas_load(p, &c, &err);

		CHECK_MSG(rc == BL_EINVAL, "case %zu: rc %d", i, rc);
		CHECK_MSG(strstr(err.msg, "canvas-bad.json") && strstr(err.msg, cases[i].want),
			  "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
	}
}

TEST(markers_locate_and_rectify_the_canvas)
{
	struct vis_synth s;
	struct img im, r;
	struct vis_geometry g;
	bl_err err = { 0 };
	int rc;

	synth_init(&s, 1);
	render(&s, &im);
	rc = vis_locate(&im, "synthetic", NULL, &MK, &g, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc) {
		img_free(&im);
		return;
	}
	CHECK(g.source == VIS_FROM_MARKERS);
	CHECK(g.markers_found == 4);
	CHECK_MSG(corner_error(g.corners_px, CORNERS) < 0.5, "corners off by %.3f px",
		  corner_error(g.corners_px, CORNERS));
	CHECK(vis_rectify(&im, &g, 1.0, &r, &err) == 0);
	CHECK(r.w == 400 && r.h == 300);
	/* The quadrants where they belong, and the edge at 100 mm in every row. */
	CHECK(abs(r.px[(50 * 400 + 50) * 3] - 190) <= 4);
	CHECK(abs(r.px[(50 * 400 + 300) * 3 + 1] - 170) <= 4);
	CHECK(abs(r.px[(250 * 400 + 50) * 3 + 2] - 180) <= 4);
	CHECK(abs(r.px[(250 * 400 + 300) * 3] - 200) <= 4);
	for (int y = 10; y < 150; y += 40)
		CHECK_MSG(fabs(edge_x(&r, y) - 100.0) < 0.5, "row %d: edge at %.2f mm", y,
			  edge_x(&r, y));
	img_free(&r);
	/* 2 px/mm doubles the raster. */
	CHECK(vis_rectify(&im, &g, 2.0, &r, &err) == 0);
	CHECK(r.w == 800 && r.h == 600);
	img_free(&r);
	CHECK(vis_rectify(&im, &g, NAN, &r, &err) == BL_EINVAL);
	CHECK(vis_rectify(&im, &g, 0.0, &r, &err) == BL_EINVAL);
	img_free(&im);
}

TEST(markers_survive_uneven_light)
{
	struct vis_synth s;
	struct img im;
	struct vis_geometry g;
	bl_err err = { 0 };

	synth_init(&s, 1);
	s.noise = 4.0;
	render(&s, &im);
	/* Light falling off to 45% across the table. */
	for (int y = 0; y < im.h; y++)
		for (int x = 0; x < im.w; x++)
			for (int k = 0; k < 3; k++) {
				unsigned char *p = im.px + ((size_t)y * im.w + x) * 3 + k;

				*p = (unsigned char)(*p * (1.0 - 0.55 * x / im.w));
			}
	CHECK_MSG(vis_locate(&im, "dim", NULL, &MK, &g, &err) == 0, "%s", err.msg);
	CHECK(g.source == VIS_FROM_MARKERS);
	CHECK(corner_error(g.corners_px, CORNERS) < 0.7);
	img_free(&im);
}

static struct vis_canvas file_for(const double *corners)
{
	struct vis_canvas c;

	vis_canvas_init(&c);
	c.image_w = 1280;
	c.image_h = 720;
	memcpy(c.size_mm, SIZE, sizeof(SIZE));
	memcpy(c.corners_px, corners, sizeof(c.corners_px));
	return c;
}

TEST(canvas_file_used_without_markers)
{
	struct vis_synth s;
	struct img im, r;
	struct vis_geometry g;
	struct vis_canvas c = file_for(CORNERS);
	bl_err err = { 0 };

	synth_init(&s, 0);
	render(&s, &im);
	CHECK(vis_locate(&im, "plain.jpg", NULL, &MK, &g, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "plain.jpg: no canvas found: 0 corner markers in the frame (4 needed)");
	CHECK_MSG(vis_locate(&im, "plain.jpg", &c, &MK, &g, &err) == 0, "%s", err.msg);
	CHECK(g.source == VIS_FROM_FILE);
	CHECK(vis_rectify(&im, &g, 1.0, &r, &err) == 0);
	CHECK(fabs(edge_x(&r, 75) - 100.0) < 0.5);
	img_free(&r);
	/* A file made for other frames is refused, not stretched. */
	c.image_w = 1920;
	c.image_h = 1080;
	CHECK(vis_locate(&im, "plain.jpg", &c, &MK, &g, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "1920x1080");
	img_free(&im);
}

TEST(covered_marker_falls_back_to_the_file)
{
	struct vis_synth s;
	struct img im;
	struct vis_geometry g;
	struct vis_canvas c = file_for(CORNERS);
	bl_err err = { 0 };

	synth_init(&s, 1);
	render(&s, &im);
	/* The arm's shadow over the top left marker. */
	vt_fill(&im, 120, 40, 140, 120, 70, 60, 55);
	CHECK(vis_locate(&im, "covered", &c, &MK, &g, &err) == 0);
	CHECK(g.source == VIS_FROM_FILE);
	CHECK(g.markers_found == 3);
	img_free(&im);
}

TEST(lens_distortion_is_undone)
{
	struct cv_camera cam = { 1000, 1000, 640, 360, { -0.28, 0.09, 0, 0, 0 }, 5 };
	struct vis_synth s;
	struct img im, r;
	struct vis_geometry g;
	struct vis_canvas c;
	double raw[8], worst = 0, worst_plain = 0;
	bl_err err = { 0 };

	synth_init(&s, 1);
	s.camera = &cam;
	render(&s, &im);
	/* Calibration saw the corners where the lens put them. */
	CHECK(cv_distort_points(&cam, CORNERS, raw, 4, &err) == 0);
	c = file_for(raw);
	c.has_camera = 1;
	c.camera = cam;
	CHECK(vis_locate(&im, "bent", &c, &MK, &g, &err) == 0);
	CHECK(vis_rectify(&im, &g, 1.0, &r, &err) == 0);
	for (int y = 5; y < 150; y += 10)
		worst = fmax(worst, fabs(edge_x(&r, y) - 100.0));
	CHECK_MSG(worst < 0.6, "edge off by %.2f mm", worst);
	img_free(&r);
	/* Without the lens model the same edge bows: the test can tell. */
	c.has_camera = 0;
	CHECK(vis_locate(&im, "bent", &c, &MK, &g, &err) == 0);
	if (g.source == VIS_FROM_FILE || g.source == VIS_FROM_MARKERS) {
		CHECK(vis_rectify(&im, &g, 1.0, &r, &err) == 0);
		for (int y = 5; y < 150; y += 10)
			worst_plain = fmax(worst_plain, fabs(edge_x(&r, y) - 100.0));
		img_free(&r);
	}
	CHECK_MSG(worst_plain > 1.5, "uncorrected edge off by only %.2f mm", worst_plain);
	img_free(&im);
}

/* The camera turned by 0, 90, 180 and 270 degrees about its axis: the origin marker says which corner is which. */
TEST(markers_tell_the_corners_in_any_rotation)
{
	static const double turned[4][8] = {
		{ 250, 600, 1030, 615, 1000, 150, 280, 165 },
		{ 420, 80, 400, 640, 820, 650, 840, 90 },
		{ 1030, 120, 250, 105, 280, 570, 1000, 555 },
		{ 860, 640, 880, 80, 460, 70, 440, 630 },
	};

	for (int k = 0; k < 4; k++) {
		struct vis_synth s;
		struct img im, r;
		struct vis_geometry g;
		bl_err err = { 0 };

		synth_init(&s, 1);
		memcpy(s.corners_px, turned[k], sizeof(turned[k]));
		render(&s, &im);
		CHECK_MSG(vis_locate(&im, "turned", NULL, &MK, &g, &err) == 0, "%d: %s", k, err.msg);
		CHECK(g.source == VIS_FROM_MARKERS);
		CHECK_MSG(corner_error(g.corners_px, turned[k]) < 0.7, "%d: corners off by %.3f px", k,
			  corner_error(g.corners_px, turned[k]));
		/* The raster is in canvas mm whatever the view: red quadrant at the origin. */
		CHECK(vis_rectify(&im, &g, 1.0, &r, &err) == 0);
		CHECK_MSG(abs(r.px[(50 * 400 + 50) * 3] - 190) <= 4, "%d: %d", k, r.px[(50 * 400 + 50) * 3]);
		CHECK(abs(r.px[(250 * 400 + 300) * 3] - 200) <= 4);
		img_free(&r);
		img_free(&im);
	}
}

TEST(markers_without_the_origin_are_not_trusted)
{
	struct vis_synth s;
	struct img im;
	struct vis_geometry g;
	double H[9], c[2], q[2];
	const double cpts[8] = { 0, 0, 400, 0, 400, 300, 0, 300 };
	bl_err err = { 0 };

	synth_init(&s, 1);
	render(&s, &im);
	/* Paper over the origin's core: four plain markers could be any corner. */
	CHECK(cv_homography(cpts, CORNERS, 4, H, &err) == 0);
	vis_marker_centre(&MK, 0, c);
	cv_apply_homography(H, c, q, 1);
	vt_fill(&im, (int)q[0] - 9, (int)q[1] - 9, 19, 19, 235, 235, 235);
	CHECK(vis_locate(&im, "no-origin", NULL, &MK, &g, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "no canvas found: 4 corner markers");
	img_free(&im);
}

TEST(marker_pattern_is_the_documented_one)
{
	double c[2];

	/* Side 30: ink to 15 mm from the centre, paper to 10, origin core to 5, quiet zone to 20. */
	CHECK(vis_marker_pattern(0, 0, 0, 30) == 1);
	CHECK(vis_marker_pattern(1, 0, 0, 30) == 0);
	CHECK(vis_marker_pattern(0, 4.9, -4.9, 30) == 1);
	CHECK(vis_marker_pattern(0, 5.1, 0, 30) == 0);
	CHECK(vis_marker_pattern(2, 0, 10.1, 30) == 1);
	CHECK(vis_marker_pattern(2, -14.9, 14.9, 30) == 1);
	CHECK(vis_marker_pattern(3, 15.1, 0, 30) == 0);
	CHECK(vis_marker_pattern(3, 19.9, 0, 30) == 0);
	CHECK(vis_marker_pattern(3, 20.1, 0, 30) == -1);
	CHECK_NEAR(vis_marker_reach_mm(&MK), 20.0, 1e-12);
	vis_marker_centre(&MK, 2, c);
	CHECK(c[0] == 425 && c[1] == 325);
	vis_marker_centre(&MK, 3, c);
	CHECK(c[0] == -25 && c[1] == 325);
	CHECK(vis_marker_at(&MK, -25, -25) == 1);
	CHECK(vis_marker_at(&MK, 425, -25) == 0);
	CHECK(vis_marker_at(&MK, 200, 150) == -1);
}

TEST_MAIN(T(homography_exact_and_degenerate), T(opencv_exceptions_become_error_codes),
	  T(distortion_round_trip), T(canvas_file_round_trip), T(example_canvas_file_loads),
	  T(canvas_file_rejects_bad_files),
	  T(markers_locate_and_rectify_the_canvas), T(markers_survive_uneven_light),
	  T(canvas_file_used_without_markers), T(covered_marker_falls_back_to_the_file),
	  T(lens_distortion_is_undone),
	  T(markers_tell_the_corners_in_any_rotation), T(markers_without_the_origin_are_not_trusted),
	  T(marker_pattern_is_the_documented_one))
