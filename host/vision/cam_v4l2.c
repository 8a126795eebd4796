/* cam_v4l2.c: the V4L2 camera through libv4l2: MJPEG or YUYV, mmap streaming, locked controls, bounded waits, a clear error when the device vanishes. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libv4l2.h>
#include <linux/videodev2.h>

#include "base/log.h"
#include "vision/cam_open.h"

#define NBUF 4
/* Broken frames in a row before capture gives up (the timeout bounds each wait). */
#define MAX_BAD_FRAMES 30

struct v4l2_cam {
	int fd;
	char path[CFG_PATH_MAX];
	uint32_t pixfmt;           /* V4L2_PIX_FMT_MJPEG, _JPEG or _YUYV */
	int w, h;                  /* px */
	uint32_t bytesperline;
	int full_range;            /* YUYV quantisation */
	int bt709;                 /* YUYV encoding */
	struct {
		void *start;
		size_t len;
	} buf[NBUF];
	int nbuf;
	int streaming;
	int discard_left;          /* frames still to throw away after a control change */
	int locked;                /* every automatic control confirmed off */
	long seq;
	int gone;                  /* the device vanished; every later call fails at once */
};

/* The controls that make a camera a bad colorimeter when automatic, and their manual value. */
static const struct {
	uint32_t id;
	int manual;
	const char *what;
} auto_controls[] = {
	{ V4L2_CID_EXPOSURE_AUTO, V4L2_EXPOSURE_MANUAL, "exposure (auto_exposure)" },
	{ V4L2_CID_AUTO_WHITE_BALANCE, 0, "white balance (white_balance_automatic)" },
	{ V4L2_CID_AUTO_N_PRESET_WHITE_BALANCE, V4L2_WHITE_BALANCE_MANUAL,
	  "white balance preset (auto_n_preset_white_balance)" },
	{ V4L2_CID_AUTOGAIN, 0, "gain (gain_automatic)" },
	{ V4L2_CID_FOCUS_AUTO, 0, "focus (focus_automatic_continuous)" },
};

static void fourcc_str(uint32_t f, char out[5])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)((f >> (8 * i)) & 0xff);

		out[i] = isprint((unsigned char)c) ? c : '?';
	}
	out[4] = '\0';
}

/* v4l2-ctl's names: lower case, runs of anything else become one '_'. */
static void control_var_name(const char *desc, char *out, size_t n)
{
	size_t k = 0;
	int under = 0;

	for (const char *s = desc; *s && k + 2 < n; s++) {
		if (isalnum((unsigned char)*s)) {
			if (under && k)
				out[k++] = '_';
			under = 0;
			out[k++] = (char)tolower((unsigned char)*s);
		} else {
			under = 1;
		}
	}
	out[k] = '\0';
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = v4l2_ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r;
}

/* An errno that means the device is no longer there (unplugged, driver unbound). */
static int errno_gone(int e)
{
	return e == ENODEV || e == ENXIO || e == ESHUTDOWN;
}

static int fail_errno(struct v4l2_cam *v, const char *what, bl_err *err)
{
	int e = errno;

	if (errno_gone(e)) {
		v->gone = 1;
		return bl_fail(err, BL_EIO, "camera %s vanished (unplugged?) during %s: %s", v->path,
			       what, strerror(e));
	}
	return bl_fail(err, BL_EIO, "camera %s: %s failed: %s", v->path, what, strerror(e));
}

static int find_control(struct v4l2_cam *v, const char *name, struct v4l2_queryctrl *out,
			char *avail, size_t avail_n, bl_err *err)
{
	struct v4l2_queryctrl q;
	size_t used = 0;

	avail[0] = '\0';
	memset(&q, 0, sizeof(q));
	q.id = V4L2_CTRL_FLAG_NEXT_CTRL;
	while (xioctl(v->fd, VIDIOC_QUERYCTRL, &q) == 0) {
		char var[64];

		if (q.type != V4L2_CTRL_TYPE_CTRL_CLASS && !(q.flags & V4L2_CTRL_FLAG_DISABLED)) {
			control_var_name((const char *)q.name, var, sizeof(var));
			if (strcmp(var, name) == 0) {
				*out = q;
				return 0;
			}
			if (used + strlen(var) + 3 < avail_n)
				used += (size_t)snprintf(avail + used, avail_n - used, "%s%s",
							 used ? ", " : "", var);
		}
		q.id |= V4L2_CTRL_FLAG_NEXT_CTRL;
	}
	if (errno_gone(errno))
		return fail_errno(v, "listing controls", err);
	return 1;
}

static int set_control(struct v4l2_cam *v, const struct machine_control *mc, bl_err *err)
{
	struct v4l2_queryctrl q;
	struct v4l2_control ctl;
	char avail[1024];
	long val;
	int rc;

	memset(&q, 0, sizeof(q));
	rc = find_control(v, mc->name, &q, avail, sizeof(avail), err);
	if (rc < 0)
		return rc;
	if (rc)
		return bl_fail(err, BL_EINVAL, "camera.controls.%s: camera %s has no such control "
			       "(it has: %s)", mc->name, v->path, avail[0] ? avail : "none");
	if (q.type != V4L2_CTRL_TYPE_INTEGER && q.type != V4L2_CTRL_TYPE_BOOLEAN &&
	    q.type != V4L2_CTRL_TYPE_MENU && q.type != V4L2_CTRL_TYPE_INTEGER_MENU)
		return bl_fail(err, BL_EINVAL, "camera.controls.%s: control type %u cannot be set "
			       "from a number", mc->name, q.type);
	val = (long)mc->value;
	if ((double)val != mc->value)
		return bl_fail(err, BL_EINVAL, "camera.controls.%s: %g is not a whole number",
			       mc->name, mc->value);
	if (val < q.minimum || val > q.maximum)
		return bl_fail(err, BL_EINVAL, "camera.controls.%s: %ld is outside the camera's "
			       "range %d..%d", mc->name, val, q.minimum, q.maximum);
	if (q.flags & V4L2_CTRL_FLAG_READ_ONLY)
		return bl_fail(err, BL_EINVAL, "camera.controls.%s: the control is read-only",
			       mc->name);
	memset(&ctl, 0, sizeof(ctl));
	ctl.id = q.id;
	ctl.value = (int)val;
	if (xioctl(v->fd, VIDIOC_S_CTRL, &ctl) < 0) {
		if (errno_gone(errno))
			return fail_errno(v, "setting controls", err);
		return bl_fail(err, BL_EIO, "camera %s: setting %s to %ld failed: %s", v->path,
			       mc->name, val, strerror(errno));
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.id = q.id;
	if (xioctl(v->fd, VIDIOC_G_CTRL, &ctl) == 0 && ctl.value != val)
		log_warn("camera %s: %s reads back %d after setting %ld", v->path, mc->name,
			 ctl.value, val);
	return 0;
}

static int v4l2_lock_controls(struct camera *c, bl_err *err)
{
	struct v4l2_cam *v = c->priv;
	const struct machine_camera *mc = &c->m->camera;
	char still[512] = "";
	size_t used = 0;

	if (v->gone)
		return bl_fail(err, BL_EIO, "camera %s vanished earlier; reopen it", v->path);
	/* Automatic controls off first: a manual exposure value is ignored while auto is on. */
	for (size_t i = 0; i < sizeof(auto_controls) / sizeof(auto_controls[0]); i++) {
		struct v4l2_queryctrl q;
		struct v4l2_control ctl;

		memset(&q, 0, sizeof(q));
		q.id = auto_controls[i].id;
		if (xioctl(v->fd, VIDIOC_QUERYCTRL, &q) < 0) {
			if (errno_gone(errno))
				return fail_errno(v, "locking controls", err);
			continue; /* the camera has no such automatic: nothing can drift */
		}
		if (q.flags & V4L2_CTRL_FLAG_DISABLED)
			continue;
		memset(&ctl, 0, sizeof(ctl));
		ctl.id = auto_controls[i].id;
		ctl.value = auto_controls[i].manual;
		if (xioctl(v->fd, VIDIOC_S_CTRL, &ctl) < 0) {
			if (errno_gone(errno))
				return fail_errno(v, "locking controls", err);
			log_debug("camera %s: switching off %s failed: %s", v->path,
				  auto_controls[i].what, strerror(errno));
		}
	}
	for (int i = 0; i < mc->n_controls; i++) {
		int rc = set_control(v, &mc->controls[i], err);

		if (rc)
			return rc;
	}
	/* Read back: what counts is what the camera does, not what was asked. */
	for (size_t i = 0; i < sizeof(auto_controls) / sizeof(auto_controls[0]); i++) {
		struct v4l2_queryctrl q;
		struct v4l2_control ctl;

		memset(&q, 0, sizeof(q));
		q.id = auto_controls[i].id;
		if (xioctl(v->fd, VIDIOC_QUERYCTRL, &q) < 0 || (q.flags & V4L2_CTRL_FLAG_DISABLED))
			continue;
		memset(&ctl, 0, sizeof(ctl));
		ctl.id = auto_controls[i].id;
		if (xioctl(v->fd, VIDIOC_G_CTRL, &ctl) < 0) {
			if (errno_gone(errno))
				return fail_errno(v, "reading controls", err);
		} else if (ctl.value == auto_controls[i].manual) {
			continue;
		}
		if (used + strlen(auto_controls[i].what) + 3 < sizeof(still))
			used += (size_t)snprintf(still + used, sizeof(still) - used, "%s%s",
						 used ? ", " : "", auto_controls[i].what);
	}
	v->locked = used == 0;
	if (!v->locked)
		log_warn("camera %s: %s still automatic: colour measurement is refused%s", v->path,
			 still, mc->allow_auto ? " (but camera.allow_auto is set)" : "");
	/* Frames already in flight were exposed under the old settings. */
	v->discard_left = mc->discard_frames;
	return 0;
}

static void yuyv_to_rgb(const struct v4l2_cam *v, const unsigned char *src, unsigned char *dst)
{
	/* ITU-R BT.601 or 709, studio (16..235) or full range, as the driver says. */
	const double kr = v->bt709 ? 0.2126 : 0.299, kb = v->bt709 ? 0.0722 : 0.114;
	const double ys = v->full_range ? 1.0 : 255.0 / 219.0;
	const double cs = v->full_range ? 1.0 : 255.0 / 224.0;
	const double y0 = v->full_range ? 0.0 : 16.0;
	const double rv = 2.0 * (1.0 - kr) * cs, bu = 2.0 * (1.0 - kb) * cs;
	const double gu = -bu * kb / (1.0 - kr - kb), gv = -rv * kr / (1.0 - kr - kb);

	for (int y = 0; y < v->h; y++) {
		const unsigned char *s = src + (size_t)y * v->bytesperline;
		unsigned char *d = dst + (size_t)y * v->w * 3;

		for (int x = 0; x + 1 < v->w; x += 2, s += 4, d += 6) {
			double u = s[1] - 128.0, vv = s[3] - 128.0;

			for (int k = 0; k < 2; k++) {
				double yy = (s[2 * k] - y0) * ys;
				double rgb[3] = { yy + rv * vv, yy + gu * u + gv * vv, yy + bu * u };

				for (int ch = 0; ch < 3; ch++) {
					double c = rgb[ch] + 0.5;

					d[3 * k + ch] = (unsigned char)(c < 0 ? 0 : c > 255 ? 255 : c);
				}
			}
		}
	}
}

static int requeue(struct v4l2_cam *v, struct v4l2_buffer *b, bl_err *err)
{
	if (xioctl(v->fd, VIDIOC_QBUF, b) < 0)
		return fail_errno(v, "queueing a buffer", err);
	return 0;
}

static int v4l2_capture(struct camera *c, struct cam_frame *f, bl_err *err)
{
	struct v4l2_cam *v = c->priv;
	const int timeout_ms = c->m->camera.timeout_ms;
	int bad = 0;

	if (v->gone)
		return bl_fail(err, BL_EIO, "camera %s vanished earlier; reopen it", v->path);
	for (;;) {
		struct pollfd pfd = { .fd = v->fd, .events = POLLIN };
		struct v4l2_buffer b;
		int64_t deadline = clk_real_ns() + (int64_t)timeout_ms * 1000000;
		int r, mem;

		/* Wait for a frame with a deadline on the real clock, whatever the run's clock is. */
		for (;;) {
			int64_t left = (deadline - clk_real_ns()) / 1000000;

			if (left < 0)
				left = 0;
			r = poll(&pfd, 1, (int)left);
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		if (r < 0)
			return fail_errno(v, "waiting for a frame", err);
		if (r == 0)
			return bl_fail(err, BL_ETIMEDOUT, "camera %s: no frame within %d ms "
				       "(camera.timeout_ms)", v->path, timeout_ms);
		memset(&b, 0, sizeof(b));
		b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		b.memory = V4L2_MEMORY_MMAP;
		if (xioctl(v->fd, VIDIOC_DQBUF, &b) < 0) {
			if (errno == EAGAIN && !(pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
				continue;
			if (errno == EAGAIN)
				errno = ENODEV; /* poll said error, the queue says nothing: it is gone */
			return fail_errno(v, "dequeueing a frame", err);
		}
		if (b.index >= (unsigned)v->nbuf)
			return bl_fail(err, BL_EIO, "camera %s: driver returned buffer %u of %d",
				       v->path, b.index, v->nbuf);
		if ((b.flags & V4L2_BUF_FLAG_ERROR) || b.bytesused == 0 ||
		    b.bytesused > v->buf[b.index].len) {
			int rc = requeue(v, &b, err);

			if (rc)
				return rc;
			if (++bad > MAX_BAD_FRAMES)
				return bl_fail(err, BL_EIO, "camera %s: %d broken frames in a row",
					       v->path, bad);
			continue;
		}
		if (v->discard_left > 0) {
			int rc = requeue(v, &b, err);

			if (rc)
				return rc;
			v->discard_left--;
			continue;
		}
		if (v->pixfmt == V4L2_PIX_FMT_YUYV) {
			size_t need = (size_t)v->bytesperline * (v->h - 1) + (size_t)v->w * 2;

			if (b.bytesused < need) {
				int rc = requeue(v, &b, err);

				if (rc)
					return rc;
				if (++bad > MAX_BAD_FRAMES)
					return bl_fail(err, BL_EIO, "camera %s: %d short frames in a row",
						       v->path, bad);
				continue;
			}
			f->len = (size_t)v->w * v->h * 3;
			if ((mem = cam_frame_reserve(f, f->len, err)) == 0)
				yuyv_to_rgb(v, v->buf[b.index].start, f->data);
			f->format = CAM_FMT_RGB24;
		} else {
			f->len = b.bytesused;
			if ((mem = cam_frame_reserve(f, f->len, err)) == 0)
				memcpy(f->data, v->buf[b.index].start, f->len);
			f->format = CAM_FMT_JPEG;
		}
		{
			int rc = requeue(v, &b, err);

			if (mem) {
				f->len = 0;
				return rc ? rc : mem;
			}
			if (rc) {
				cam_frame_free(f);
				return rc;
			}
		}
		f->width = v->w;
		f->height = v->h;
		f->t_ns = clk_now_ns(c->clock);
		f->seq = v->seq++;
		f->controls_locked = v->locked;
		snprintf(f->source, sizeof(f->source), "%s", v->path);
		return 0;
	}
}

static void v4l2_close_cam(struct camera *c)
{
	struct v4l2_cam *v = c->priv;

	if (!v)
		return;
	if (v->streaming && !v->gone) {
		enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;

		xioctl(v->fd, VIDIOC_STREAMOFF, &t);
	}
	for (int i = 0; i < v->nbuf; i++)
		if (v->buf[i].start && v->buf[i].start != MAP_FAILED)
			v4l2_munmap(v->buf[i].start, v->buf[i].len);
	if (v->fd >= 0)
		v4l2_close(v->fd);
	free(v);
	c->priv = NULL;
}

static const struct camera_ops v4l2_ops = {
	.name = "v4l2",
	.lock_controls = v4l2_lock_controls,
	.capture = v4l2_capture,
	.close = v4l2_close_cam,
};

/* Opens path through libv4l2 with its conversions off: software white balance would falsify colour. */
static int open_device(const char *path, int *fd_out, bl_err *err)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return bl_fail(err, BL_EIO, "camera %s: cannot open: %s", path, strerror(errno));
	if (v4l2_fd_open(fd, V4L2_DISABLE_CONVERSION) < 0) {
		int e = errno;

		close(fd);
		return bl_fail(err, BL_EIO, "camera %s: not a V4L2 device: %s", path, strerror(e));
	}
	*fd_out = fd;
	return 0;
}

static int native_format(struct v4l2_cam *v, uint32_t want)
{
	struct v4l2_fmtdesc d;

	for (unsigned i = 0; i < 64; i++) {
		memset(&d, 0, sizeof(d));
		d.index = i;
		d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		if (xioctl(v->fd, VIDIOC_ENUM_FMT, &d) < 0)
			return 0;
		if (d.pixelformat == want && !(d.flags & V4L2_FMT_FLAG_EMULATED))
			return 1;
	}
	return 0;
}

static int try_format(struct v4l2_cam *v, uint32_t pixfmt, int w, int h)
{
	struct v4l2_format fmt;

	memset(&fmt, 0, sizeof(fmt));
	fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	fmt.fmt.pix.width = (uint32_t)w;
	fmt.fmt.pix.height = (uint32_t)h;
	fmt.fmt.pix.pixelformat = pixfmt;
	fmt.fmt.pix.field = V4L2_FIELD_NONE;
	if (xioctl(v->fd, VIDIOC_S_FMT, &fmt) < 0)
		return -1;
	if (fmt.fmt.pix.pixelformat != pixfmt || (int)fmt.fmt.pix.width != w ||
	    (int)fmt.fmt.pix.height != h)
		return 1;
	v->pixfmt = pixfmt;
	v->w = w;
	v->h = h;
	v->bytesperline = fmt.fmt.pix.bytesperline ? fmt.fmt.pix.bytesperline : (uint32_t)w * 2;
	v->full_range = fmt.fmt.pix.quantization == V4L2_QUANTIZATION_FULL_RANGE;
	v->bt709 = fmt.fmt.pix.ycbcr_enc == V4L2_YCBCR_ENC_709;
	return 0;
}

static int negotiate(struct v4l2_cam *v, int w, int h, bl_err *err)
{
	static const uint32_t prefs[] = { V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_JPEG, V4L2_PIX_FMT_YUYV };
	int offered = 0;

	for (size_t i = 0; i < sizeof(prefs) / sizeof(prefs[0]); i++) {
		int r;

		if (!native_format(v, prefs[i]))
			continue;
		offered = 1;
		r = try_format(v, prefs[i], w, h);
		if (r < 0 && errno_gone(errno))
			return fail_errno(v, "setting the format", err);
		if (r == 0)
			return 0;
	}
	if (!offered)
		return bl_fail(err, BL_EIO, "camera %s offers neither MJPEG nor YUYV (see 'brushloop "
			       "camera list')", v->path);
	return bl_fail(err, BL_EIO, "camera %s cannot capture %dx%d in MJPEG or YUYV (see "
		       "'brushloop camera list' for its sizes; camera.width and camera.height)",
		       v->path, w, h);
}

static int start_stream(struct v4l2_cam *v, bl_err *err)
{
	struct v4l2_requestbuffers req;
	enum v4l2_buf_type t = V4L2_BUF_TYPE_VIDEO_CAPTURE;

	memset(&req, 0, sizeof(req));
	req.count = NBUF;
	req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	req.memory = V4L2_MEMORY_MMAP;
	if (xioctl(v->fd, VIDIOC_REQBUFS, &req) < 0)
		return fail_errno(v, "requesting buffers", err);
	if (req.count < 2)
		return bl_fail(err, BL_EIO, "camera %s: only %u buffer(s) granted", v->path,
			       req.count);
	if (req.count > NBUF)
		req.count = NBUF;
	for (unsigned i = 0; i < req.count; i++) {
		struct v4l2_buffer b;

		memset(&b, 0, sizeof(b));
		b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
		b.memory = V4L2_MEMORY_MMAP;
		b.index = i;
		if (xioctl(v->fd, VIDIOC_QUERYBUF, &b) < 0)
			return fail_errno(v, "querying a buffer", err);
		v->buf[i].len = b.length;
		v->buf[i].start = v4l2_mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED,
					    v->fd, b.m.offset);
		if (v->buf[i].start == MAP_FAILED) {
			v->buf[i].start = NULL;
			return fail_errno(v, "mapping a buffer", err);
		}
		v->nbuf = (int)i + 1;
		if (xioctl(v->fd, VIDIOC_QBUF, &b) < 0)
			return fail_errno(v, "queueing a buffer", err);
	}
	if (xioctl(v->fd, VIDIOC_STREAMON, &t) < 0)
		return fail_errno(v, "starting the stream", err);
	v->streaming = 1;
	return 0;
}

int cam_v4l2_open(struct camera *c, const struct machine *m, clk *clock, bl_err *err)
{
	struct v4l2_cam *v = calloc(1, sizeof(*v));
	struct v4l2_capability cap;
	uint32_t caps;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!v)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	v->fd = -1;
	snprintf(v->path, sizeof(v->path), "%s", m->camera.device);
	c->ops = &v4l2_ops;
	c->priv = v;
	c->m = m;
	c->clock = clock;
	rc = open_device(v->path, &v->fd, err);
	if (rc)
		goto out_close;
	memset(&cap, 0, sizeof(cap));
	if (xioctl(v->fd, VIDIOC_QUERYCAP, &cap) < 0) {
		rc = fail_errno(v, "querying capabilities", err);
		goto out_close;
	}
	caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
	if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING)) {
		rc = bl_fail(err, BL_EIO, "camera %s (%.32s) does not stream video capture "
			     "(a metadata node? try another /dev/video)", v->path, cap.card);
		goto out_close;
	}
	rc = negotiate(v, m->camera.width, m->camera.height, err);
	if (rc)
		goto out_close;
	rc = start_stream(v, err);
	if (rc)
		goto out_close;
	/* Until lock_controls says otherwise, assume the camera is on its automatics. */
	v->locked = 0;
	v->discard_left = m->camera.discard_frames;
	{
		char fc[5];

		fourcc_str(v->pixfmt, fc);
		log_debug("camera %s: %.32s, %s %dx%d", v->path, cap.card, fc, v->w, v->h);
	}
	return 0;
out_close:
	v4l2_close_cam(c);
	c->ops = NULL;
	return rc;
}

static void list_sizes(int fd, struct cam_v4l2_format *f, uint32_t pixfmt)
{
	for (unsigned i = 0; i < CAM_V4L2_MAX_SIZES; i++) {
		struct v4l2_frmsizeenum s;

		memset(&s, 0, sizeof(s));
		s.index = i;
		s.pixel_format = pixfmt;
		if (xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &s) < 0)
			return;
		if (s.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
			f->sizes[f->nsizes][0] = (int)s.discrete.width;
			f->sizes[f->nsizes][1] = (int)s.discrete.height;
			f->nsizes++;
		} else {
			f->stepwise = 1;
			f->min_w = (int)s.stepwise.min_width;
			f->max_w = (int)s.stepwise.max_width;
			f->min_h = (int)s.stepwise.min_height;
			f->max_h = (int)s.stepwise.max_height;
			return;
		}
	}
}

static int cmp_name(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);

	/* video2 before video10 */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

int cam_v4l2_list(const char *dir, struct cam_v4l2_device **out, int *n, bl_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	int nn = 0, cap = 0, rc = 0;
	struct cam_v4l2_device *devs = NULL;

	*out = NULL;
	*n = 0;
	if (!d)
		return bl_fail(err, BL_EIO, "%s: cannot list: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "video", 5) != 0 || !isdigit((unsigned char)e->d_name[5]))
			continue;
		if (nn == cap) {
			char **nb = realloc(names, sizeof(*names) * (cap ? cap * 2 : 16));

			if (!nb) {
				rc = bl_fail(err, BL_ENOMEM, "out of memory");
				goto out_free;
			}
			names = nb;
			cap = cap ? cap * 2 : 16;
		}
		names[nn] = strdup(e->d_name);
		if (!names[nn]) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free;
		}
		nn++;
	}
	if (nn)
		qsort(names, (size_t)nn, sizeof(*names), cmp_name);
	devs = calloc(nn ? (size_t)nn : 1, sizeof(*devs));
	if (!devs) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	for (int i = 0; i < nn; i++) {
		struct cam_v4l2_device *dv = &devs[*n];
		struct v4l2_capability capb;
		bl_err oerr;
		uint32_t caps;
		int fd;

		snprintf(dv->path, sizeof(dv->path), "%s/%s", dir, names[i]);
		if (open_device(dv->path, &fd, &oerr)) {
			log_debug("%s", oerr.msg);
			continue;
		}
		memset(&capb, 0, sizeof(capb));
		if (xioctl(fd, VIDIOC_QUERYCAP, &capb) < 0) {
			v4l2_close(fd);
			continue;
		}
		caps = (capb.capabilities & V4L2_CAP_DEVICE_CAPS) ? capb.device_caps
								  : capb.capabilities;
		if (!(caps & V4L2_CAP_VIDEO_CAPTURE)) {
			v4l2_close(fd);
			continue;
		}
		snprintf(dv->card, sizeof(dv->card), "%.32s", (const char *)capb.card);
		snprintf(dv->driver, sizeof(dv->driver), "%.16s", (const char *)capb.driver);
		snprintf(dv->bus, sizeof(dv->bus), "%.32s", (const char *)capb.bus_info);
		for (unsigned k = 0; k < CAM_V4L2_MAX_FORMATS; k++) {
			struct v4l2_fmtdesc fd_;
			struct cam_v4l2_format *f;

			memset(&fd_, 0, sizeof(fd_));
			fd_.index = k;
			fd_.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
			if (xioctl(fd, VIDIOC_ENUM_FMT, &fd_) < 0)
				break;
			if (fd_.flags & V4L2_FMT_FLAG_EMULATED)
				continue;
			f = &dv->formats[dv->nformats++];
			fourcc_str(fd_.pixelformat, f->fourcc);
			snprintf(f->description, sizeof(f->description), "%.31s",
				 (const char *)fd_.description);
			list_sizes(fd, f, fd_.pixelformat);
		}
		v4l2_close(fd);
		(*n)++;
	}
	*out = devs;
	devs = NULL;
out_free:
	free(devs);
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}
