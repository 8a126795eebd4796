/* observe.c: the one observation pipeline: light divided out, canvas located and rectified, Lab through the camera profile. */
#include "vision/observe.h"

#include <stdlib.h>
#include <string.h>

#include "vision/station.h"

void vis_observer_init(struct vis_observer *o, const struct machine *m,
		       const struct meas_profile *p)
{
	memset(o, 0, sizeof(*o));
	o->m = m;
	o->profile = p;
	o->use_markers = 1;
	o->lamp_now[0] = o->lamp_now[1] = o->lamp_now[2] = 1.0;
	o->px_per_mm = VIS_DEFAULT_PX_PER_MM;
	if (m)
		vis_markers_from_machine(m, &o->markers);
}

int vis_observer_load(struct vis_observer *o, const struct machine *m, bl_err *err)
{
	const struct machine_calibration *c = &m->calibration;
	int rc;

	vis_observer_init(o, m, NULL);
	if ((rc = meas_profile_open(c->camera_profile[0] ? c->camera_profile : NULL,
				    &o->own_profile, err)))
		return rc;
	o->profile = o->own_profile;
	if (c->light_map[0]) {
		if ((rc = vis_light_load(c->light_map, &o->own_light, err)))
			goto out_close;
		o->has_own_light = 1;
		o->light = &o->own_light;
	}
	/* As the run locates the canvas: the calibrated file when there is one, else the markers. */
	if (c->canvas[0]) {
		if ((rc = vis_canvas_load(c->canvas, &o->own_canvas, err)))
			goto out_close;
		o->canvas = &o->own_canvas;
		o->use_markers = 0;
	}
	return 0;

out_close:
	vis_observer_close(o);
	return rc;
}

void vis_observer_close(struct vis_observer *o)
{
	meas_profile_close(o->own_profile);
	o->own_profile = NULL;
	if (o->has_own_light)
		vis_light_free(&o->own_light);
	o->has_own_light = 0;
}

int vis_observe_light(struct vis_observer *o, struct img *frame, const char *name, bl_err *err)
{
	int rc;

	if (o->lamp && (rc = vis_lamp_ratio(o->lamp, frame, name, o->lamp_now, err)))
		return rc;
	if (!o->light && !o->lamp)
		return 0;
	return vis_light_apply(o->light, o->lamp ? o->lamp_now : NULL, frame, err);
}

int vis_observe_locate(const struct vis_observer *o, const struct img *frame, const char *name,
		       struct vis_geometry *g, bl_err *err)
{
	return vis_locate(frame, name, o->canvas, o->use_markers ? &o->markers : NULL, g, err);
}

void vis_observation_free(struct vis_observation *ob)
{
	free(ob->lab);
	ob->lab = NULL;
	img_free(&ob->rect);
}

int vis_observe_raster(const struct vis_observer *o, const struct img *frame,
		       const struct vis_geometry *g, struct vis_observation *out, bl_err *err)
{
	const struct img *src = frame;
	int rc;

	memset(out, 0, sizeof(*out));
	if (g) {
		if ((rc = vis_rectify(frame, g, o->px_per_mm, &out->rect, err)))
			return rc;
		src = &out->rect;
	}
	out->lab = malloc((size_t)src->w * src->h * 3 * sizeof(float));
	if (!out->lab) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory for the canvas's Lab");
		goto out_free;
	}
	if ((rc = meas_lab_raster(o->profile, src, out->lab, err)))
		goto out_free;
	out->w = src->w;
	out->h = src->h;
	return 0;

out_free:
	vis_observation_free(out);
	return rc;
}

int vis_observe_canvas(struct vis_observer *o, struct img *frame, const char *name,
		       struct vis_geometry *g, struct vis_observation *out, bl_err *err)
{
	struct vis_geometry here;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!g)
		g = &here;
	if ((rc = vis_observe_light(o, frame, name, err)) ||
	    (rc = vis_observe_locate(o, frame, name, g, err)))
		return rc;
	return vis_observe_raster(o, frame, g, out, err);
}

int vis_observe_station(const struct vis_observer *o, const struct img *frame, const char *name,
			const struct vis_geometry *g, const struct machine_station *st,
			struct meas_swatch *out, bl_err *err)
{
	return vis_measure_station(frame, name, g, o->m, st, o->profile, out, err);
}
