/* station.c: the table's stations in a frame (through the canvas geometry) and their colour measured there. */
#include "vision/station.h"

#include <math.h>
#include <string.h>

#include "cv/cv.h"

int vis_table_to_px(const struct vis_geometry *g, const struct machine *m, const double *xy_mm,
		    double *px, int n, bl_err *err)
{
	/* The geometry maps canvas mm (the machine's transform back from the table) to the undistorted image. */
	for (int i = 0; i < n; i++) {
		struct canvas_pt c = xform_to_canvas(&m->xf, (struct machine_pt){ xy_mm[2 * i],
										  xy_mm[2 * i + 1] });

		px[2 * i] = c.x;
		px[2 * i + 1] = c.y;
	}
	cv_apply_homography(g->H, px, px, n);
	return g->has_camera ? cv_distort_points(&g->camera, px, px, n, err) : 0;
}

int vis_px_to_table(const struct vis_geometry *g, const struct machine *m, const double *px,
		    double *xy_mm, int n, bl_err *err)
{
	double inv[9];
	int rc;

	if (g->has_camera)
		rc = cv_undistort_points(&g->camera, px, xy_mm, n, err);
	else
		rc = (memmove(xy_mm, px, sizeof(double) * 2 * (size_t)n), 0);
	if (rc == 0)
		rc = cv_invert3(g->H, inv, err);
	if (rc)
		return rc;
	cv_apply_homography(inv, xy_mm, xy_mm, n);
	for (int i = 0; i < n; i++) {
		struct machine_pt t = xform_to_machine(&m->xf, (struct canvas_pt){ xy_mm[2 * i],
										   xy_mm[2 * i + 1] });

		xy_mm[2 * i] = t.x;
		xy_mm[2 * i + 1] = t.y;
	}
	return 0;
}

int vis_station_roi(const struct vis_geometry *g, const struct machine *m,
		    const struct machine_station *st, struct meas_roi *roi, bl_err *err)
{
	/* The centre and a point 0.45 of the radius out: the square's half side in px there. */
	const double pts[4] = { st->center_mm[0], st->center_mm[1],
				st->center_mm[0] + 0.45 * st->radius_mm, st->center_mm[1] };
	double px[4], half;
	int rc = vis_table_to_px(g, m, pts, px, 2, err);

	if (rc)
		return rc;
	half = hypot(px[2] - px[0], px[3] - px[1]);
	if (half < 2.0)
		half = 2.0;
	roi->x = (int)lround(px[0] - half);
	roi->y = (int)lround(px[1] - half);
	roi->w = roi->h = (int)lround(2.0 * half);
	return 0;
}

int vis_measure_station(const struct img *frame, const char *name, const struct vis_geometry *g,
			const struct machine *m, const struct machine_station *st,
			const struct meas_profile *p, struct meas_swatch *out, bl_err *err)
{
	struct meas_roi roi;
	int rc = vis_station_roi(g, m, st, &roi, err);

	return rc ? rc : meas_swatch(frame, name, &roi, p, out, err);
}
