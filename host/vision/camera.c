/* camera.c: the calls of the camera interface, shared by every backend, and averages of frames in memory the camera keeps. */
#include "vision/camera.h"

#include <stdlib.h>
#include <string.h>

#include "base/kernel.h"
#include "base/log.h"
#include "base/prof.h"
#include "vision/cam_open.h"
#include "vision/image.h"

_Static_assert(CAM_AVERAGE_MAX_FRAMES * 255 <= UINT16_MAX, "a frame sum fits 16 bits");
_Static_assert(MACHINE_MAX_AVERAGE_FRAMES <= CAM_AVERAGE_MAX_FRAMES,
	       "camera.average_frames fits an average");

/* What a camera keeps between frames for its averages (camera.h). */
struct cam_buffers {
	struct cam_frame frame;  /* the last frame as the backend gave it */
	struct img decoded;      /* it decoded */
	struct img avg;          /* the last average */
	uint16_t *sum;           /* the average's sums, one a sample */
	size_t sum_cap;          /* samples at sum */
	int frames;              /* frames in sum */
	int locked;              /* every one of them had its controls locked */
};

int cam_lock_controls(struct camera *c, bl_err *err)
{
	return c->ops->lock_controls(c, err);
}

int cam_capture(struct camera *c, struct cam_frame *f, bl_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	rc = c->ops->capture(c, f, err);
	if (rc)
		cam_frame_free(f);
	return rc;
}

static void buffers_free(struct cam_buffers *b)
{
	if (!b)
		return;
	cam_frame_free(&b->frame);
	img_free(&b->decoded);
	img_free(&b->avg);
	free(b->sum);
	free(b);
}

void cam_close(struct camera *c)
{
	if (!c)
		return;
	/* First: the simulator's struct camera goes with its world when the last reference closes. */
	buffers_free(c->buf);
	c->buf = NULL;
	if (c->ops && c->ops->close)
		c->ops->close(c);
}

void cam_frame_free(struct cam_frame *f)
{
	free(f->data);
	f->data = NULL;
	f->len = 0;
	f->cap = 0;
}

int cam_frame_reserve(struct cam_frame *f, size_t bytes, bl_err *err)
{
	unsigned char *p;

	if (f->data && f->cap >= bytes)
		return 0;
	/* Not realloc: the old bytes are not wanted, and a failure leaves the old buffer to free. */
	p = malloc(bytes ? bytes : 1);
	if (!p)
		return bl_fail(err, BL_ENOMEM, "out of memory for a frame of %zu bytes", bytes);
	free(f->data);
	f->data = p;
	f->cap = bytes;
	return 0;
}

int cam_average_begin(struct camera *c, bl_err *err)
{
	if (!c->buf && !(c->buf = calloc(1, sizeof(*c->buf))))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	c->buf->frames = 0;
	c->buf->locked = 1;
	return 0;
}

/* The camera's next frame into b->frame, in the buffer the last one left. */
static int capture_again(struct camera *c, struct cam_frame *f, bl_err *err)
{
	unsigned char *data = f->data;
	size_t cap = f->cap;

	memset(f, 0, sizeof(*f));
	f->data = data;
	f->cap = cap;
	return c->ops->capture(c, f, err);
}

/* A frame's n samples into the sums: the first frame sets them, the others add. */
BL_KERNEL static void average_sum(uint16_t *sum, const unsigned char *px, size_t n, int first)
{
	if (first)
		for (size_t i = 0; i < n; i++)
			sum[i] = px[i];
	else
		for (size_t i = 0; i < n; i++)
			sum[i] = (uint16_t)(sum[i] + px[i]);
}

int cam_average_add(struct camera *c, bl_err *err)
{
	struct cam_buffers *b = c->buf;
	struct img *im = &b->decoded, *avg = &b->avg;
	enum prof_phase prev;
	size_t n;
	int rc;

	if (b->frames == CAM_AVERAGE_MAX_FRAMES)
		return bl_fail(err, BL_EINVAL, "an average of more than %d frames",
			       CAM_AVERAGE_MAX_FRAMES);
	if ((rc = capture_again(c, &b->frame, err)))
		return rc;
	prev = prof_enter(PROF_DECODE);
	rc = img_decode_frame_into(&b->frame, c->m->camera.max_pixels, im, err);
	prof_leave(prev);
	if (rc)
		return rc;
	if (b->frames && (im->w != avg->w || im->h != avg->h))
		return bl_fail(err, BL_EIO, "%s: frame %d is %dx%d, the first was %dx%d",
			       b->frame.source, b->frames, im->w, im->h, avg->w, avg->h);
	n = (size_t)im->w * im->h * 3;
	if (b->frames == 0) {
		if (n > b->sum_cap) {
			free(b->sum);
			b->sum_cap = 0;
			if (!(b->sum = malloc(n * sizeof(*b->sum))))
				return bl_fail(err, BL_ENOMEM, "out of memory averaging frames");
			b->sum_cap = n;
		}
		if ((rc = img_resize(avg, im->w, im->h, err)))
			return rc;
		/* The average is taken as the first frame is: its profile and its turn. */
		avg->icc = im->icc;
		avg->icc_len = im->icc_len;
		avg->icc_from = im->icc_from;
		avg->px16 = im->px16;
		avg->orientation = im->orientation;
		im->icc = NULL;
		im->icc_len = 0;
		im->px16 = NULL;
	}
	average_sum(b->sum, im->px, n, b->frames == 0);
	b->locked &= b->frame.controls_locked;
	b->frames++;
	return 0;
}

int cam_average_end(struct camera *c, struct img **avg, int *locked, bl_err *err)
{
	struct cam_buffers *b = c->buf;
	/* A table of the rounded quotients: a division a sample is most of an average's time. */
	unsigned char q[CAM_AVERAGE_MAX_FRAMES * 255 + 1];
	int n = b->frames;
	size_t samples;

	if (n == 0)
		return bl_fail(err, BL_EINVAL, "an average of no frames");
	for (int t = 0; t <= 255 * n; t++)
		q[t] = (unsigned char)((t + n / 2) / n);
	samples = (size_t)b->avg.w * b->avg.h * 3;
	for (size_t i = 0; i < samples; i++)
		b->avg.px[i] = q[b->sum[i]];
	*avg = &b->avg;
	if (locked)
		*locked = b->locked;
	return 0;
}

int cam_capture_average(struct camera *c, int n, struct img *out, int *locked, bl_err *err)
{
	struct img *avg;
	int rc;

	memset(out, 0, sizeof(*out));
	*locked = 1;
	if (n < 1 || n > CAM_AVERAGE_MAX_FRAMES)
		return bl_fail(err, BL_EINVAL, "average of %d frames: give 1..%d", n,
			       CAM_AVERAGE_MAX_FRAMES);
	if ((rc = cam_average_begin(c, err)))
		return rc;
	for (int i = 0; i < n; i++)
		if ((rc = cam_average_add(c, err)))
			return rc;
	if ((rc = cam_average_end(c, &avg, locked, err)))
		return rc;
	/* The caller keeps this one: the camera's next average takes a buffer of its own. */
	*out = *avg;
	memset(avg, 0, sizeof(*avg));
	return 0;
}

int cam_capture_for_measurement(struct camera *c, struct img *out, bl_err *err)
{
	const struct machine_camera *mc = &c->m->camera;
	int locked, rc = cam_capture_average(c, mc->average_frames, out, &locked, err);

	if (rc)
		return rc;
	if (!locked) {
		if (!mc->allow_auto) {
			img_free(out);
			return bl_fail(err, BL_EINVAL,
				       "camera %s: exposure, white balance, gain or focus is still "
				       "automatic, so colours would drift between frames: refusing to "
				       "measure (lock them through camera.controls, or set "
				       "camera.allow_auto in %s)",
				       c->m->camera.device, c->m->file);
		}
		log_warn("camera %s: measuring with automatic controls (camera.allow_auto): colours "
			 "may drift", c->m->camera.device);
	}
	return 0;
}
