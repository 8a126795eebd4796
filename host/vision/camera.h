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

struct camera_ops {
	const char *name;
	/* Sets the machine file's controls and switches every automatic control off. */
	int (*lock_controls)(struct camera *c, bl_err *err);
	/* One frame; a vanished device or a timeout is an error, never a hang. */
	int (*capture)(struct camera *c, struct cam_frame *f, bl_err *err);
	void (*close)(struct camera *c);
};

struct camera {
	const struct camera_ops *ops;
	void *priv;
	const struct machine *m;
	clk *clock;
};

int cam_lock_controls(struct camera *c, bl_err *err);
int cam_capture(struct camera *c, struct cam_frame *f, bl_err *err);
void cam_close(struct camera *c);
void cam_frame_free(struct cam_frame *f);

#endif
