/* camera.h: the camera interface: open, lock controls, capture one encoded frame with metadata, close. */
#ifndef BL_VISION_CAMERA_H
#define BL_VISION_CAMERA_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "config/machine.h"

enum cam_format {
	CAM_FMT_JPEG,  /* as a UVC camera delivers MJPEG, and as the simulator renders */
	CAM_FMT_PNG,   /* replayed PNG files */
	CAM_FMT_RGB24, /* packed 8-bit RGB, e.g. converted from YUYV */
};

struct cam_frame {
	unsigned char *data;     /* encoded bytes (owned; cam_frame_free releases them) */
	size_t len;
	size_t cap;              /* bytes allocated at data (cam_frame_reserve), len or more */
	enum cam_format format;
	int width, height;       /* px, as the source says (checked again when decoded) */
	int64_t t_ns;            /* capture time on the run's clock */
	long seq;                /* frame number since open */
	int controls_locked;     /* exposure, white balance, gain and focus are all manual */
	char source[128];        /* "sim", "/dev/video0", "replay:frames/0003.jpg" */
};

struct camera;
struct img;

/*
 * The contract every camera backend keeps (config/backends.def lists them,
 * one file each, opened by `open` there into a caller's struct camera).
 * Every operation returns 0 or a negative BL_E* code with err filled:
 *   BL_EIO        the device failed or vanished; a capture may be tried again.
 *   BL_ETIMEDOUT  no frame within the backend's bounded wait (never a hang).
 *   BL_EINVAL     the machine file asks for what the device cannot do (a
 *                 size, a control, a pixel format), or a replayed file is bad.
 *   BL_ENOMEM     as everywhere.
 * A frame is what the sensor gave, encoded (JPEG, PNG or RGB24): the
 * observation pipeline decodes and calibrates it, the backend never does.
 * capture finds f cleared but for data and cap, which may hold the buffer of
 * the frame taken before (the averages below reuse it): it takes its memory
 * through cam_frame_reserve, and on failure leaves f for cam_frame_free.
 */
struct camera_ops {
	const char *name;
	/*
	 * Switches every automatic control the device has off (exposure, white
	 * balance, gain, focus), sets the machine file's controls (one the
	 * device lacks, or a value outside its range, is BL_EINVAL naming it),
	 * and reads back what the device really does: a frame says whether its
	 * controls were locked.
	 */
	int (*lock_controls)(struct camera *c, bl_err *err);
	/* One frame; t_ns on the run's clock, seq counting from open. */
	int (*capture)(struct camera *c, struct cam_frame *f, bl_err *err);
	void (*close)(struct camera *c); /* frees what open made; the struct camera is the caller's */
};

struct camera {
	const struct camera_ops *ops;
	void *priv;
	const struct machine *m;
	clk *clock;
	struct cam_buffers *buf; /* the averages' memory (camera.c), NULL until the first; cam_close frees it */
};

/*
 * The opener of each hardware camera backend of config/backends.def, defined
 * in the backend's own file, filling a caller's struct camera (the
 * simulator's camera comes with its world: sim_camera).
 */
#define BL_CAM_BACKEND(ID, name, open) \
	int open(struct camera *c, const struct machine *m, clk *clock, bl_err *err);
#include "config/backends.def"
#undef BL_CAM_BACKEND

int cam_lock_controls(struct camera *c, bl_err *err);
/* One frame in a buffer of its own (f need not be initialised): the caller frees it with cam_frame_free. */
int cam_capture(struct camera *c, struct cam_frame *f, bl_err *err);
void cam_close(struct camera *c);
void cam_frame_free(struct cam_frame *f);

/* Makes f->data hold at least bytes, keeping the buffer it has when that is big enough (for backends). */
int cam_frame_reserve(struct cam_frame *f, size_t bytes, bl_err *err);

/* Frames an average may hold: their sums of 8-bit samples fit 16 bits. */
#define CAM_AVERAGE_MAX_FRAMES 64

/*
 * An average of frames, per sample and rounded, in memory the camera keeps:
 * the encoded frame, it decoded, the sums and the average each grow to the
 * largest frame seen and serve every frame after, so that a run's hundreds
 * of frames do not each take megabytes afresh (under AddressSanitizer every
 * such block is an mmap and page faults of its own). cam_close frees them.
 *
 * cam_average_begin starts one; cam_average_add captures a frame, decodes it
 * (camera.max_pixels of the camera's machine) and adds it, or fails adding
 * nothing, so that the caller may take another: a frame of another size
 * than the first is BL_EIO. cam_average_end gives the average (with the
 * first frame's ICC profile and orientation), which stays the camera's
 * until the next cam_average_begin, and says whether every frame in it was
 * taken with its controls locked (locked may be NULL).
 */
int cam_average_begin(struct camera *c, bl_err *err);
int cam_average_add(struct camera *c, bl_err *err);
int cam_average_end(struct camera *c, struct img **avg, int *locked, bl_err *err);

#endif
