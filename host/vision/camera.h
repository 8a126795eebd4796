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
	enum cam_format format;
	int width, height;       /* px, as the source says (checked again when decoded) */
	int64_t t_ns;            /* capture time on the run's clock */
	long seq;                /* frame number since open */
	int controls_locked;     /* exposure, white balance, gain and focus are all manual */
	char source[128];        /* "sim", "/dev/video0", "replay:frames/0003.jpg" */
};

struct camera;

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
int cam_capture(struct camera *c, struct cam_frame *f, bl_err *err);
void cam_close(struct camera *c);
void cam_frame_free(struct cam_frame *f);

#endif
