/* cam_open.h: the v4l2 and replay camera backends' open calls (the rig chooses among them), listing V4L2 devices, and capturing averaged frames for measurement. */
#ifndef BL_VISION_CAM_OPEN_H
#define BL_VISION_CAM_OPEN_H

#include "vision/camera.h"
#include "vision/image.h"

/*
 * The V4L2 backend: libv4l2 on camera.device, MJPEG preferred, YUYV
 * otherwise, mmap streaming. Its frames are JPEG as the camera sent them, or
 * RGB24 converted from YUYV.
 */
int cam_v4l2_open(struct camera *c, const struct machine *m, clk *clock, bl_err *err);

/*
 * The replay backend: the JPEG and PNG files of a folder in name order, or
 * the files a list file names (one a line, relative to the list, # comments).
 * Running out of frames is an error, never a wrap-around.
 */
int cam_replay_open(struct camera *c, const struct machine *m, clk *clock, bl_err *err);

#define CAM_V4L2_MAX_FORMATS 16
#define CAM_V4L2_MAX_SIZES 32

struct cam_v4l2_format {
	char fourcc[5];
	char description[32];
	int nsizes;
	int sizes[CAM_V4L2_MAX_SIZES][2]; /* discrete sizes, px */
	int stepwise;                     /* a range instead: min and max below */
	int min_w, min_h, max_w, max_h;
};

struct cam_v4l2_device {
	char path[512];
	char card[64];
	char driver[32];
	char bus[64];
	int nformats;
	struct cam_v4l2_format formats[CAM_V4L2_MAX_FORMATS];
};

/*
 * Lists the video capture devices named video* in dir (normally "/dev") with
 * their native formats and sizes. Devices that cannot be opened, or that do
 * not capture video (metadata nodes), are left out. *out is malloc'd.
 */
int cam_v4l2_list(const char *dir, struct cam_v4l2_device **out, int *n, bl_err *err);

/*
 * Captures n frames and averages them (per channel, rounded) into out.
 * *locked says whether every frame was taken with exposure, white balance,
 * gain and focus locked.
 */
int cam_capture_average(struct camera *c, int n, struct img *out, int *locked, bl_err *err);

/*
 * Captures camera.average_frames frames for a colour measurement. Refuses
 * (BL_EINVAL) frames taken while any control is automatic, unless the
 * machine file sets camera.allow_auto, which only warns.
 */
int cam_capture_for_measurement(struct camera *c, struct img *out, bl_err *err);

#endif
