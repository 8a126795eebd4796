/* bench_review.c: what the second judge costs: each observation's bookkeeping, one checkpoint's rules, one call of the example external reviewer in its sandbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "bench/bench.h"
#include "config/machine.h"
#include "review/review.h"
#include "review/review_ext.h"
#include "sim/sim.h"
#include "vision/camera.h"
#include "vision/observe.h"

/* The example machine's frames: the raw and light-divided one, the canvas's geometry and its Lab. */
struct scene {
	struct machine m;
	struct vis_observer o;
	struct img raw, seen;
	struct vis_geometry g;
	float *lab;
	int w, h;
};

static int scene_open(struct scene *sc, bl_err *err)
{
	char p[4200];
	const char *root = getenv("BL_SOURCE_ROOT");
	struct sim_options so = { 1, 1, NULL };
	struct vis_observation ob = { 0 };
	struct cam_frame f = { 0 };
	struct sim *s;
	clk c;
	int rc;

	memset(sc, 0, sizeof(*sc));
	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", root && *root ? root : BL_SOURCE_ROOT);
	BL_TRY(machine_load(p, &sc->m, err));
	BL_TRY(vis_observer_load(&sc->o, &sc->m, err));
	BL_TRY(sim_open(&sc->m, &so, &c, &s, err));
	rc = sim_render(s, SIM_SCENE_CANVAS, &f, err);
	sim_close(s);
	if (rc || (rc = img_decode_frame(&f, 1L << 26, &sc->raw, err)) ||
	    (rc = img_decode_frame(&f, 1L << 26, &sc->seen, err)) ||
	    (rc = vis_observe_light(&sc->o, &sc->seen, "bench", err)) ||
	    (rc = vis_observe_locate(&sc->o, &sc->seen, "bench", &sc->g, err)) ||
	    (rc = vis_observe_raster(&sc->o, &sc->seen, &sc->g, &ob, err)))
		goto out;
	sc->lab = ob.lab;
	sc->w = ob.w;
	sc->h = ob.h;
	ob.lab = NULL;
out:
	vis_observation_free(&ob);
	cam_frame_free(&f);
	return rc;
}

static void scene_close(struct scene *sc)
{
	img_free(&sc->raw);
	img_free(&sc->seen);
	free(sc->lab);
	vis_observer_close(&sc->o);
}

int bench_review_observe(double *value, int quick, bl_err *err)
{
	struct scene sc;
	struct review rv;
	double t0;
	int rc;

	(void)quick;
	if ((rc = scene_open(&sc, err)))
		return rc;
	review_init(&rv, &sc.m);
	/* The second observation is the one measured: it has a frame before it to compare with. */
	if ((rc = review_observed(&rv, &sc.raw, &sc.seen, &sc.g, sc.o.profile, "frames/1.jpg", err)) == 0) {
		sc.raw.px[0] ^= 1;
		t0 = bench_now_ms();
		rc = review_observed(&rv, &sc.raw, &sc.seen, &sc.g, sc.o.profile, "frames/2.jpg", err);
		*value = bench_now_ms() - t0;
	}
	review_free(&rv);
	scene_close(&sc);
	return rc;
}

int bench_review_checkpoint(double *value, int quick, bl_err *err)
{
	struct scene sc;
	struct review rv;
	struct review_result res;
	struct review_canvas c = { 0 };
	float *cover;
	double t0;
	int rc;

	(void)quick;
	if ((rc = scene_open(&sc, err)))
		return rc;
	review_init(&rv, &sc.m);
	cover = calloc((size_t)sc.w * sc.h, sizeof(float));
	c = (struct review_canvas){ .w = sc.w, .h = sc.h, .now = sc.lab, .cover = cover, .paint = sc.lab };
	if (!cover) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
	} else if ((rc = review_observed(&rv, &sc.raw, &sc.seen, &sc.g, sc.o.profile, "frames/1.jpg", err)) == 0 &&
		   (rc = review_baseline(&rv, sc.lab, sc.w, sc.h, 0, -1, err)) == 0) {
		/* Half the canvas painted: both canvas rules have pixels to look at. */
		for (size_t i = 0; i < (size_t)sc.w * sc.h / 2; i++)
			cover[i] = 1.0f;
		t0 = bench_now_ms();
		rc = review_judge(&rv, REVIEW_AT_CHECKPOINT, &c, NULL, &res, err);
		*value = bench_now_ms() - t0;
	}
	free(cover);
	review_free(&rv);
	scene_close(&sc);
	return rc;
}

/* One call of examples/reviewers/sanity_reviewer.py in a fresh sandbox, the frame and the request as a run sends them. */
int bench_review_external(double *value, int quick, bl_err *err)
{
	const char *root = getenv("BL_SOURCE_ROOT");
	char cmd[4400], in[64] = "/tmp/bl-bench-review-XXXXXX", frame[128];
	struct review_ext_config cfg = { 0 };
	struct review_ext_answer a;
	struct review_ext *x = NULL;
	unsigned char *jpg = NULL;
	size_t len = 0;
	struct img im = { 0 };
	cJSON *q;
	double t0;
	int rc;

	(void)quick;
	BL_TRY(sbx_probe(err));
	if (!mkdtemp(in))
		return bl_fail(err, BL_EIO, "bench review: no temporary directory");
	chmod(in, 0755); /* the sandbox runs as nobody */
	snprintf(frame, sizeof(frame), "%s/frame.jpg", in);
	if ((rc = img_alloc(&im, 1280, 720, err)))
		goto out;
	memset(im.px, 128, (size_t)1280 * 720 * 3);
	if ((rc = img_encode_jpeg(&im, 90, &jpg, &len, err)) || (rc = fs_write_atomic(frame, jpg, len, err)))
		goto out;
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/examples/reviewers/sanity_reviewer.py",
		 root && *root ? root : BL_SOURCE_ROOT);
	cfg.command = cmd;
	cfg.answer_deadline_ms = 30000;
	cfg.max_answer_bytes = 65536;
	if ((rc = review_ext_open(&cfg, &x, err)))
		goto out;
	q = cJSON_Parse("{\"point\": \"checkpoint\", \"subtask\": \"s20\", \"round\": 0, "
			"\"measurement\": {\"observed_vs_predicted_de00\": 1.5}, \"expected\": {\"tolerance_de00\": 6}, "
			"\"verdict\": \"pass\", \"rules\": {\"agree\": true, \"rules\": []}, "
			"\"files\": {\"frame\": \"/in/frame.jpg\", \"target\": \"/in/target.png\"}}");
	t0 = bench_now_ms();
	rc = review_ext_ask(x, q, in, &a, err);
	*value = bench_now_ms() - t0;
	cJSON_Delete(q);
	if (rc == 0 && !(a.answered && a.agree))
		rc = bl_fail(err, BL_EIO, "bench review: the example reviewer did not agree: %s %s", a.failure, a.reason);
	review_ext_answer_free(&a);
out:
	review_ext_close(x);
	free(jpg);
	img_free(&im);
	unlink(frame);
	rmdir(in);
	return rc;
}
