/* camera.c: the calls of the camera interface, shared by every backend. */
#include "vision/camera.h"

#include <stdlib.h>
#include <string.h>

int cam_lock_controls(struct camera *c, bl_err *err)
{
	return c->ops->lock_controls(c, err);
}

int cam_capture(struct camera *c, struct cam_frame *f, bl_err *err)
{
	memset(f, 0, sizeof(*f));
	return c->ops->capture(c, f, err);
}

void cam_close(struct camera *c)
{
	if (c && c->ops && c->ops->close)
		c->ops->close(c);
}

void cam_frame_free(struct cam_frame *f)
{
	free(f->data);
	f->data = NULL;
	f->len = 0;
}
