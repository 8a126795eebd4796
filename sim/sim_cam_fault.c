/* sim_cam_fault.c: the verifier's faults: a camera that repeats one frame, is knocked off its view, a lamp that dims or fails, paint smeared on the lens, an exposure that drifts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_cam.h"
#include "sim/sim_internal.h"

/*
 * Each is a function of the world's clock alone (sim.faults: *_at_s in
 * simulated seconds, 0 never), so the same seed and actions give the same
 * frames with the fault as without it up to its time, and the same after.
 */

/* Where the camera looks from: the machine file's pose, knocked by the fault once its time has come. */
void sim_cam_fault_pose(struct sim *s, struct sim_cam *c)
{
	const struct machine_sim *ms = &s->m.sim;
	const struct machine_sim_faults *f = &ms->faults;
	int moved = f->camera_moved_at_s > 0.0 && sim_now_s(s) >= f->camera_moved_at_s;
	double up[3] = { 0, 0, 1 }, t[3], at[3], a, ca, sa, r[3], d[3];

	if (c->posed && moved == c->moved)
		return;
	memcpy(c->pos, ms->cam_position_mm, sizeof(c->pos));
	memcpy(at, ms->cam_look_at_mm, sizeof(at));
	/* Knocked sideways: the whole camera, aim included, along machine +x. */
	if (moved) {
		c->pos[0] += f->camera_shift_mm;
		at[0] += f->camera_shift_mm;
	}
	sub3(at, c->pos, c->fwd);
	norm3(c->fwd);
	cross3(c->fwd, up, t);
	if (dot3(t, t) < 1e-12) {
		/* Straight down: image up is machine +y. */
		up[1] = 1.0;
		up[2] = 0.0;
		cross3(c->fwd, up, t);
	}
	norm3(t);
	memcpy(c->right, t, sizeof(t));
	cross3(c->fwd, c->right, c->down);
	/* Turned about its own axis: the image rotates, clockwise as seen for a positive angle. */
	a = moved ? f->camera_turn_deg * M_PI / 180.0 : 0.0;
	ca = cos(a);
	sa = sin(a);
	for (int i = 0; i < 3; i++) {
		r[i] = ca * c->right[i] + sa * c->down[i];
		d[i] = -sa * c->right[i] + ca * c->down[i];
	}
	memcpy(c->right, r, sizeof(r));
	memcpy(c->down, d, sizeof(d));
	if (c->posed)
		c->map_scene = -1; /* every pixel sees another point now */
	c->posed = 1;
	c->moved = moved;
}

/* The light reaching the sensor as the faults leave it: the lamp's share once it dims, the exposure's drift. */
float sim_cam_fault_gain(struct sim *s)
{
	const struct machine_sim_faults *f = &s->m.sim.faults;
	double now = sim_now_s(s), g = 1.0;

	if (f->lamp_at_s > 0.0 && now >= f->lamp_at_s)
		g *= f->lamp_level;
	/* An auto-exposure left on creeps over the night: a share of the exposure per hour, never below none. */
	g *= fmax(0.0, 1.0 + f->exposure_drift_per_h * now / 3600.0);
	return (float)g;
}

/*
 * Paint on the lens: a translucent brown haze over a disc of the image, out
 * of focus, so it covers most at its middle and fades to nothing at its edge.
 * Applied to the RGB image before it is encoded.
 */
void sim_cam_fault_smear(struct sim *s, struct sim_cam *c)
{
	const struct machine_sim_faults *f = &s->m.sim.faults;
	static const float haze[3] = { 118.0f, 92.0f, 66.0f }; /* a brownish acrylic, thinned */
	double cx, cy, rad;
	int x0, x1, y0, y1;

	if (!(f->smear_at_s > 0.0 && sim_now_s(s) >= f->smear_at_s))
		return;
	cx = f->smear_x * c->w;
	cy = f->smear_y * c->h;
	rad = 0.5 * f->smear_radius * c->w;
	x0 = (int)fmax(0.0, floor(cx - rad));
	x1 = (int)fmin(c->w - 1.0, ceil(cx + rad));
	y0 = (int)fmax(0.0, floor(cy - rad));
	y1 = (int)fmin(c->h - 1.0, ceil(cy + rad));
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++) {
			double dx = (x + 0.5 - cx) / rad, dy = (y + 0.5 - cy) / rad, q = dx * dx + dy * dy;
			float a;
			unsigned char *p;

			if (q >= 1.0)
				continue;
			a = (float)(0.75 * (1.0 - q));
			p = c->pix + 3 * ((size_t)y * c->w + x);
			for (int k = 0; k < 3; k++)
				p[k] = (unsigned char)lrintf((1.0f - a) * p[k] + a * haze[k]);
		}
}

/*
 * A frozen camera: from its time on, every capture hands back the first
 * frame it took then, the same bytes, with a new time and number as a
 * driver that lost its stream would. 1 when f is that frame, 0 when the
 * camera still works (or freezes with this capture: it is rendered, kept),
 * a negative code when memory runs out.
 */
int sim_cam_fault_frozen(struct sim *s, struct cam_frame *f, bl_err *err)
{
	const struct machine_sim_faults *f0 = &s->m.sim.faults;

	if (!(f0->freeze_at_s > 0.0 && sim_now_s(s) >= f0->freeze_at_s) || !s->frozen.len)
		return 0;
	if (cam_frame_reserve(f, s->frozen.len, err))
		return err ? err->code : BL_ENOMEM;
	memcpy(f->data, s->frozen.data, s->frozen.len);
	f->len = s->frozen.len;
	f->format = s->frozen.format;
	f->width = s->frozen.width;
	f->height = s->frozen.height;
	f->t_ns = clk_now_ns(s->clock);
	f->seq = s->w.frames++;
	f->controls_locked = s->controls_locked;
	memcpy(f->source, s->frozen.source, sizeof(f->source));
	clk_advance(s->clock, SIM_FRAME_NS);
	return 1;
}

/* The frame just rendered becomes the frozen one when the camera freezes with it. */
int sim_cam_fault_keep(struct sim *s, const struct cam_frame *f, bl_err *err)
{
	const struct machine_sim_faults *f0 = &s->m.sim.faults;

	/* Its time is the capture's: the clock has moved on by the frame's own 1/30 s. */
	if (!(f0->freeze_at_s > 0.0 && (double)f->t_ns * 1e-9 >= f0->freeze_at_s) || s->frozen.len)
		return 0;
	if (cam_frame_reserve(&s->frozen, f->len, err))
		return err ? err->code : BL_ENOMEM;
	memcpy(s->frozen.data, f->data, f->len);
	s->frozen.len = f->len;
	s->frozen.format = f->format;
	s->frozen.width = f->width;
	s->frozen.height = f->height;
	memcpy(s->frozen.source, f->source, sizeof(f->source));
	return 0;
}
