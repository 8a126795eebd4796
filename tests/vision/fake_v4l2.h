/* fake_v4l2.h: a fake V4L2 camera at the system-call boundary (open*, syscall, ioctl, poll, close), for tests of the v4l2 backend without a device. */
#ifndef BL_TESTS_FAKE_V4L2_H
#define BL_TESTS_FAKE_V4L2_H

/*
 * Include this in exactly one test file: it defines open, open64, openat,
 * syscall, ioctl, poll and close for the whole test binary. libv4l2 and
 * libv4lconvert issue syscall(SYS_openat / SYS_ioctl / SYS_close) directly,
 * so interposing the libc wrappers alone would miss them. A memfd is the
 * device's fd, so the real mmap of its buffers works.
 */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAKE_MAX_DEV 4
#define FAKE_MAX_CTRL 16
#define FAKE_NBUF 4

enum { FAKE_MJPEG = 1, FAKE_YUYV = 2, FAKE_GREY = 4 };

struct fake_ctrl {
	uint32_t id;
	const char *name;
	uint32_t type;
	int min, max, step, def;
	int value;
	int stuck;        /* S_CTRL succeeds but the value stays (a camera that ignores it) */
	int inactive_when_auto; /* flagged inactive while its automatic is on */
};

struct fake_dev {
	char path[512];
	int used;
	int fd;                 /* memfd while open, else -1 */
	int formats;            /* FAKE_* bits */
	int meta_only;          /* a UVC metadata node: no video capture */
	uint32_t pixfmt;
	int w, h;
	size_t buflen;
	unsigned char *mem;     /* our own mapping of the memfd */
	int nbuf;
	int queued[FAKE_NBUF];
	long qorder[FAKE_NBUF];
	long qcount;
	int streaming;
	long served;            /* frames handed out by DQBUF */
	long vanish_after;      /* after this many frames the device is unplugged (-1 never) */
	int stall;              /* never delivers a frame */
	int gone;
	int nctrl;
	struct fake_ctrl ctrl[FAKE_MAX_CTRL];
	/* Fills a frame for sequence number seq; returns bytes used. */
	size_t (*make_frame)(struct fake_dev *d, long seq, unsigned char *dst, size_t cap);
	long s_ctrl_calls;
};

static struct fake_dev fake_devs[FAKE_MAX_DEV];
static const int fake_sizes[][2] = { { 160, 120 }, { 320, 240 }, { 640, 480 } };

static struct fake_dev *fake_by_fd(int fd)
{
	for (int i = 0; i < FAKE_MAX_DEV; i++)
		if (fake_devs[i].used && fake_devs[i].fd >= 0 && fake_devs[i].fd == fd)
			return &fake_devs[i];
	return NULL;
}

static struct fake_dev *fake_by_path(const char *path)
{
	for (int i = 0; path && i < FAKE_MAX_DEV; i++)
		if (fake_devs[i].used && strcmp(fake_devs[i].path, path) == 0)
			return &fake_devs[i];
	return NULL;
}

static void fake_add_ctrl(struct fake_dev *d, uint32_t id, const char *name, uint32_t type,
			  int min, int max, int def)
{
	struct fake_ctrl *c = &d->ctrl[d->nctrl++];

	memset(c, 0, sizeof(*c));
	c->id = id;
	c->name = name;
	c->type = type;
	c->min = min;
	c->max = max;
	c->step = 1;
	c->def = def;
	c->value = def;
}

/* A webcam's usual controls, all automatics on, as a UVC camera powers up. */
static struct fake_dev *fake_new(const char *path, int formats)
{
	for (int i = 0; i < FAKE_MAX_DEV; i++) {
		struct fake_dev *d = &fake_devs[i];

		if (d->used)
			continue;
		memset(d, 0, sizeof(*d));
		d->used = 1;
		d->fd = -1;
		snprintf(d->path, sizeof(d->path), "%s", path);
		d->formats = formats;
		d->pixfmt = (formats & FAKE_MJPEG) ? V4L2_PIX_FMT_MJPEG
			    : (formats & FAKE_YUYV) ? V4L2_PIX_FMT_YUYV : V4L2_PIX_FMT_GREY;
		d->w = 640;
		d->h = 480;
		d->vanish_after = -1;
		fake_add_ctrl(d, V4L2_CID_BRIGHTNESS, "Brightness", V4L2_CTRL_TYPE_INTEGER, -64, 64, 0);
		fake_add_ctrl(d, V4L2_CID_AUTO_WHITE_BALANCE, "White Balance, Automatic",
			      V4L2_CTRL_TYPE_BOOLEAN, 0, 1, 1);
		fake_add_ctrl(d, V4L2_CID_GAIN, "Gain", V4L2_CTRL_TYPE_INTEGER, 0, 255, 32);
		fake_add_ctrl(d, V4L2_CID_WHITE_BALANCE_TEMPERATURE, "White Balance Temperature",
			      V4L2_CTRL_TYPE_INTEGER, 2800, 6500, 4600);
		d->ctrl[d->nctrl - 1].inactive_when_auto = 1;
		fake_add_ctrl(d, V4L2_CID_EXPOSURE_AUTO, "Auto Exposure", V4L2_CTRL_TYPE_MENU, 0, 3,
			      V4L2_EXPOSURE_APERTURE_PRIORITY);
		fake_add_ctrl(d, V4L2_CID_EXPOSURE_ABSOLUTE, "Exposure Time, Absolute",
			      V4L2_CTRL_TYPE_INTEGER, 3, 2047, 250);
		fake_add_ctrl(d, V4L2_CID_FOCUS_ABSOLUTE, "Focus, Absolute", V4L2_CTRL_TYPE_INTEGER, 0,
			      250, 0);
		fake_add_ctrl(d, V4L2_CID_FOCUS_AUTO, "Focus, Automatic Continuous",
			      V4L2_CTRL_TYPE_BOOLEAN, 0, 1, 1);
		return d;
	}
	abort();
}

static struct fake_ctrl *fake_ctrl_find(struct fake_dev *d, uint32_t id)
{
	for (int i = 0; i < d->nctrl; i++)
		if (d->ctrl[i].id == id)
			return &d->ctrl[i];
	return NULL;
}

static void fake_reset(void)
{
	for (int i = 0; i < FAKE_MAX_DEV; i++)
		if (fake_devs[i].used && fake_devs[i].mem)
			munmap(fake_devs[i].mem, FAKE_NBUF * fake_devs[i].buflen);
	memset(fake_devs, 0, sizeof(fake_devs));
}

/* ---- the real functions ---- */

static long (*real_syscall)(long, ...);
static int (*real_close)(int);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ioctl)(int, unsigned long, ...);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);

static void fake_resolve(void)
{
	if (real_syscall)
		return;
	real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	real_poll = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	real_open64 = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
	real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
}

static int fake_trace(void)
{
	static int t = -1;

	if (t < 0)
		t = getenv("FAKE_V4L2_TRACE") != NULL;
	return t;
}

static int fake_open_dev(struct fake_dev *d)
{
	if (d->gone) {
		errno = ENODEV;
		return -1;
	}
	d->fd = memfd_create("fake-v4l2", MFD_CLOEXEC);
	if (fake_trace())
		fprintf(stderr, "fake: open %s -> %d\n", d->path, d->fd);
	return d->fd;
}

/* ---- ioctls ---- */

static int fake_err(int e)
{
	errno = e;
	return -1;
}

static int fake_format_list(struct fake_dev *d, uint32_t *out)
{
	int n = 0;

	if (d->formats & FAKE_MJPEG)
		out[n++] = V4L2_PIX_FMT_MJPEG;
	if (d->formats & FAKE_YUYV)
		out[n++] = V4L2_PIX_FMT_YUYV;
	if (d->formats & FAKE_GREY)
		out[n++] = V4L2_PIX_FMT_GREY;
	return n;
}

static void fake_fill_fmt(struct fake_dev *d, struct v4l2_format *f)
{
	uint32_t type = f->type;

	memset(f, 0, sizeof(*f));
	f->type = type;
	f->fmt.pix.width = (uint32_t)d->w;
	f->fmt.pix.height = (uint32_t)d->h;
	f->fmt.pix.pixelformat = d->pixfmt;
	f->fmt.pix.field = V4L2_FIELD_NONE;
	f->fmt.pix.bytesperline = d->pixfmt == V4L2_PIX_FMT_YUYV ? (uint32_t)d->w * 2
				  : d->pixfmt == V4L2_PIX_FMT_GREY ? (uint32_t)d->w : 0;
	f->fmt.pix.sizeimage = (uint32_t)(d->w * d->h * 2);
	f->fmt.pix.colorspace = V4L2_COLORSPACE_SRGB;
}

static int fake_try_fmt(struct fake_dev *d, struct v4l2_format *f, int set)
{
	uint32_t list[4];
	int n = fake_format_list(d, list), ok = 0, best = 0;
	long bestd = -1;

	if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
		return fake_err(EINVAL);
	for (int i = 0; i < n; i++)
		ok |= list[i] == f->fmt.pix.pixelformat;
	/* A driver adjusts what it cannot do to what it can, as the kernel's try_fmt does. */
	for (size_t i = 0; i < sizeof(fake_sizes) / sizeof(fake_sizes[0]); i++) {
		long dd = labs((long)fake_sizes[i][0] - (long)f->fmt.pix.width) +
			  labs((long)fake_sizes[i][1] - (long)f->fmt.pix.height);

		if (bestd < 0 || dd < bestd) {
			bestd = dd;
			best = (int)i;
		}
	}
	if (set) {
		if (d->streaming || d->nbuf)
			return fake_err(EBUSY);
		d->pixfmt = ok ? f->fmt.pix.pixelformat : list[0];
		d->w = fake_sizes[best][0];
		d->h = fake_sizes[best][1];
		fake_fill_fmt(d, f);
	} else {
		struct fake_dev tmp = *d;

		tmp.pixfmt = ok ? f->fmt.pix.pixelformat : list[0];
		tmp.w = fake_sizes[best][0];
		tmp.h = fake_sizes[best][1];
		fake_fill_fmt(&tmp, f);
	}
	return 0;
}

static int fake_dqbuf(struct fake_dev *d, struct v4l2_buffer *b)
{
	int idx = -1;
	long best = 0;

	if (!d->streaming)
		return fake_err(EINVAL);
	if (d->stall)
		return fake_err(EAGAIN);
	for (int i = 0; i < d->nbuf; i++)
		if (d->queued[i] && (idx < 0 || d->qorder[i] < best)) {
			idx = i;
			best = d->qorder[i];
		}
	if (idx < 0)
		return fake_err(EAGAIN);
	if (d->vanish_after >= 0 && d->served >= d->vanish_after) {
		d->gone = 1;
		return fake_err(ENODEV);
	}
	d->queued[idx] = 0;
	memset(b, 0, sizeof(*b));
	b->index = (uint32_t)idx;
	b->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
	b->memory = V4L2_MEMORY_MMAP;
	b->length = (uint32_t)d->buflen;
	b->m.offset = (uint32_t)(idx * d->buflen);
	b->field = V4L2_FIELD_NONE;
	b->flags = V4L2_BUF_FLAG_MAPPED | V4L2_BUF_FLAG_DONE;
	b->sequence = (uint32_t)d->served;
	b->bytesused = (uint32_t)d->make_frame(d, d->served, d->mem + idx * d->buflen, d->buflen);
	d->served++;
	return 0;
}

static int fake_ioctl(struct fake_dev *d, unsigned long req, void *arg)
{
	if (fake_trace())
		fprintf(stderr, "fake: ioctl %s %08lx\n", d->path, req);
	if (d->gone)
		return fake_err(ENODEV);
	switch ((unsigned int)req) {
	case VIDIOC_QUERYCAP: {
		struct v4l2_capability *c = arg;
		uint32_t caps = d->meta_only ? V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING
					     : V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;

		memset(c, 0, sizeof(*c));
		snprintf((char *)c->driver, sizeof(c->driver), "fakecam");
		snprintf((char *)c->card, sizeof(c->card), "brushloop fake camera");
		snprintf((char *)c->bus_info, sizeof(c->bus_info), "test:%s", d->path + strlen(d->path) - 1);
		c->version = 0x060100;
		c->capabilities = caps | V4L2_CAP_DEVICE_CAPS;
		c->device_caps = caps;
		return 0;
	}
	case VIDIOC_ENUM_FMT: {
		struct v4l2_fmtdesc *f = arg;
		uint32_t list[4];
		int n = fake_format_list(d, list);
		uint32_t index = f->index, type = f->type;

		if (d->meta_only || type != V4L2_BUF_TYPE_VIDEO_CAPTURE || index >= (uint32_t)n)
			return fake_err(EINVAL);
		/* The kernel clears everything after the fields the caller sets. */
		memset(f, 0, sizeof(*f));
		f->index = index;
		f->type = type;
		f->pixelformat = list[index];
		f->flags = list[index] == V4L2_PIX_FMT_MJPEG ? V4L2_FMT_FLAG_COMPRESSED : 0;
		snprintf((char *)f->description, sizeof(f->description), "%s",
			 list[index] == V4L2_PIX_FMT_MJPEG ? "Motion-JPEG"
			 : list[index] == V4L2_PIX_FMT_YUYV ? "YUYV 4:2:2" : "8-bit Greyscale");
		return 0;
	}
	case VIDIOC_ENUM_FRAMESIZES: {
		struct v4l2_frmsizeenum *s = arg;
		uint32_t index = s->index, pf = s->pixel_format, list[4];
		int n = fake_format_list(d, list), ok = 0;

		for (int i = 0; i < n; i++)
			ok |= list[i] == pf;
		if (!ok || index >= sizeof(fake_sizes) / sizeof(fake_sizes[0]))
			return fake_err(EINVAL);
		memset(s, 0, sizeof(*s));
		s->index = index;
		s->pixel_format = pf;
		s->type = V4L2_FRMSIZE_TYPE_DISCRETE;
		s->discrete.width = (uint32_t)fake_sizes[index][0];
		s->discrete.height = (uint32_t)fake_sizes[index][1];
		return 0;
	}
	case VIDIOC_ENUM_FRAMEINTERVALS: {
		struct v4l2_frmivalenum *iv = arg;
		uint32_t index = iv->index, pf = iv->pixel_format, w = iv->width, h = iv->height;

		if (index > 0)
			return fake_err(EINVAL);
		memset(iv, 0, sizeof(*iv));
		iv->pixel_format = pf;
		iv->width = w;
		iv->height = h;
		iv->type = V4L2_FRMIVAL_TYPE_DISCRETE;
		iv->discrete.numerator = 1;
		iv->discrete.denominator = 30;
		return 0;
	}
	case VIDIOC_G_FMT: {
		struct v4l2_format *f = arg;

		if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || d->meta_only)
			return fake_err(EINVAL);
		fake_fill_fmt(d, f);
		return 0;
	}
	case VIDIOC_TRY_FMT:
		return fake_try_fmt(d, arg, 0);
	case VIDIOC_S_FMT:
		return fake_try_fmt(d, arg, 1);
	case VIDIOC_REQBUFS: {
		struct v4l2_requestbuffers *r = arg;
		uint32_t count = r->count;

		if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || r->memory != V4L2_MEMORY_MMAP)
			return fake_err(EINVAL);
		if (d->streaming)
			return fake_err(EBUSY);
		if (d->mem) {
			munmap(d->mem, FAKE_NBUF * d->buflen);
			d->mem = NULL;
		}
		d->nbuf = count > FAKE_NBUF ? FAKE_NBUF : (int)count;
		memset(d->queued, 0, sizeof(d->queued));
		r->count = (uint32_t)d->nbuf;
		if (d->nbuf) {
			d->buflen = ((size_t)d->w * d->h * 3 + 4095) & ~(size_t)4095;
			if (ftruncate(d->fd, (off_t)(FAKE_NBUF * d->buflen)) < 0)
				return -1;
			d->mem = mmap(NULL, FAKE_NBUF * d->buflen, PROT_READ | PROT_WRITE, MAP_SHARED,
				      d->fd, 0);
			if (d->mem == MAP_FAILED) {
				d->mem = NULL;
				return -1;
			}
		}
		return 0;
	}
	case VIDIOC_QUERYBUF: {
		struct v4l2_buffer *b = arg;
		uint32_t index = b->index, type = b->type;

		if (type != V4L2_BUF_TYPE_VIDEO_CAPTURE || index >= (uint32_t)d->nbuf)
			return fake_err(EINVAL);
		memset(b, 0, sizeof(*b));
		b->index = index;
		b->type = type;
		b->memory = V4L2_MEMORY_MMAP;
		b->length = (uint32_t)d->buflen;
		b->m.offset = (uint32_t)(index * d->buflen);
		b->flags = V4L2_BUF_FLAG_MAPPED | (d->queued[index] ? V4L2_BUF_FLAG_QUEUED : 0);
		return 0;
	}
	case VIDIOC_QBUF: {
		struct v4l2_buffer *b = arg;

		if (b->index >= (uint32_t)d->nbuf || d->queued[b->index])
			return fake_err(EINVAL);
		d->queued[b->index] = 1;
		d->qorder[b->index] = d->qcount++;
		return 0;
	}
	case VIDIOC_DQBUF:
		return fake_dqbuf(d, arg);
	case VIDIOC_STREAMON:
		if (!d->nbuf)
			return fake_err(EINVAL);
		d->streaming = 1;
		return 0;
	case VIDIOC_STREAMOFF:
		d->streaming = 0;
		memset(d->queued, 0, sizeof(d->queued));
		return 0;
	case VIDIOC_QUERYCTRL: {
		struct v4l2_queryctrl *q = arg;
		uint32_t id = q->id;
		struct fake_ctrl *c = NULL, *auto_c;

		if (id & V4L2_CTRL_FLAG_NEXT_CTRL) {
			uint32_t base = id & ~(V4L2_CTRL_FLAG_NEXT_CTRL | V4L2_CTRL_FLAG_NEXT_COMPOUND);

			for (int i = 0; i < d->nctrl; i++)
				if (d->ctrl[i].id > base && (!c || d->ctrl[i].id < c->id))
					c = &d->ctrl[i];
		} else {
			c = fake_ctrl_find(d, id);
		}
		if (!c)
			return fake_err(EINVAL);
		memset(q, 0, sizeof(*q));
		q->id = c->id;
		q->type = c->type;
		snprintf((char *)q->name, sizeof(q->name), "%s", c->name);
		q->minimum = c->min;
		q->maximum = c->max;
		q->step = c->step;
		q->default_value = c->def;
		auto_c = fake_ctrl_find(d, V4L2_CID_AUTO_WHITE_BALANCE);
		if (c->inactive_when_auto && auto_c && auto_c->value)
			q->flags |= V4L2_CTRL_FLAG_INACTIVE;
		return 0;
	}
	case VIDIOC_QUERYMENU: {
		struct v4l2_querymenu *m = arg;
		static const char *const names[] = { "Auto Mode", "Manual Mode", "Shutter Priority Mode",
						     "Aperture Priority Mode" };
		uint32_t id = m->id, index = m->index;

		if (id != V4L2_CID_EXPOSURE_AUTO || index > 3)
			return fake_err(EINVAL);
		memset(m, 0, sizeof(*m));
		m->id = id;
		m->index = index;
		snprintf((char *)m->name, sizeof(m->name), "%s", names[index]);
		return 0;
	}
	case VIDIOC_G_CTRL: {
		struct v4l2_control *c = arg;
		struct fake_ctrl *fc = fake_ctrl_find(d, c->id);

		if (!fc)
			return fake_err(EINVAL);
		c->value = fc->value;
		return 0;
	}
	case VIDIOC_S_CTRL: {
		struct v4l2_control *c = arg;
		struct fake_ctrl *fc = fake_ctrl_find(d, c->id);

		d->s_ctrl_calls++;
		if (!fc)
			return fake_err(EINVAL);
		if (c->value < fc->min || c->value > fc->max)
			return fake_err(ERANGE);
		if (!fc->stuck)
			fc->value = c->value;
		return 0;
	}
	default:
		return fake_err(ENOTTY);
	}
}

/* ---- interposed symbols ---- */

static int fake_open_common(const char *path)
{
	struct fake_dev *d = fake_by_path(path);

	if (!d)
		return -2;
	if (d->fd >= 0) /* one open at a time, as a UVC camera allows one streamer */
		return fake_err(EBUSY);
	return fake_open_dev(d);
}

int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd = fake_open_common(path);

	if (fd != -2)
		return fd;
	fake_resolve();
	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...);
int open64(const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd = fake_open_common(path);

	if (fd != -2)
		return fd;
	fake_resolve();
	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return real_open64(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd = fake_open_common(path);

	if (fd != -2)
		return fd;
	fake_resolve();
	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	return real_openat(dirfd, path, flags, mode);
}

static int fake_close_fd(int fd)
{
	struct fake_dev *d = fake_by_fd(fd);

	if (d) {
		if (fake_trace())
			fprintf(stderr, "fake: close %s\n", d->path);
		if (d->mem)
			munmap(d->mem, FAKE_NBUF * d->buflen);
		d->mem = NULL;
		d->fd = -1;
		d->streaming = 0;
		d->nbuf = 0;
	}
	return 0;
}

int close(int fd);
int close(int fd)
{
	fake_resolve();
	fake_close_fd(fd);
	return real_close(fd);
}

int ioctl(int fd, unsigned long req, ...);
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	struct fake_dev *d = fake_by_fd(fd);

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (d)
		return fake_ioctl(d, req, arg);
	fake_resolve();
	return real_ioctl(fd, req, arg);
}

long syscall(long nr, ...);
long syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_openat || nr == SYS_open) {
		const char *path = (const char *)(nr == SYS_openat ? a[1] : a[0]);
		int fd = fake_open_common(path);

		if (fd != -2)
			return fd;
	} else if (nr == SYS_ioctl) {
		struct fake_dev *d = fake_by_fd((int)a[0]);

		if (d)
			return fake_ioctl(d, (unsigned long)a[1], (void *)a[2]);
	} else if (nr == SYS_close) {
		fake_close_fd((int)a[0]);
	}
	fake_resolve();
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* glibc declares poll's array write-only, which it is not: its fds are read. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
int poll(struct pollfd *fds, nfds_t n, int timeout);
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct fake_dev *d = n == 1 ? fake_by_fd(fds[0].fd) : NULL;

	if (d) {
		int ready = 0;

		fds[0].revents = 0;
		if (d->gone) {
			fds[0].revents = POLLERR | POLLHUP;
			return 1;
		}
		if (d->vanish_after >= 0 && d->served >= d->vanish_after) {
			/* Unplugged while streaming: poll reports the error, DQBUF says ENODEV. */
			fds[0].revents = POLLERR;
			return 1;
		}
		for (int i = 0; i < d->nbuf; i++)
			ready |= d->queued[i];
		if (d->streaming && ready && !d->stall) {
			fds[0].revents = POLLIN;
			return 1;
		}
		/* Nothing will come: wait out the timeout as the kernel would. */
		if (timeout > 0)
			usleep((useconds_t)timeout * 1000);
		return 0;
	}
	fake_resolve();
	return real_poll(fds, n, timeout);
}
#pragma GCC diagnostic pop

#endif
