/* calib_session_paints.c: the paints session: the card to print, and a painted card measured through the camera profile into a palette the mixing model takes. */
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "calib/calib_session.h"
#include "color/mix.h"
#include "sim/sim.h"
#include "vision/measure.h"

/* The card to print (and paint), as JSON and optionally SVG. */
static int layout(struct calib_paints_session *ps, bl_err *err)
{
	char *text;
	int rc = calib_card_layout(ps->pal, ps->n_tints, ps->tints, ps->card, err);

	if (rc == 0)
		rc = calib_card_save(ps->card_path, ps->card, err);
	if (rc == 0 && ps->svg && (rc = calib_card_svg(ps->card, &text, err)) == 0) {
		rc = fs_write_atomic(ps->svg, text, strlen(text), err);
		free(text);
	}
	return rc;
}

/* The painted card's frame: a file, the camera, or the simulator painting the card as laid out. */
static int card_frame(struct calib_paints_session *ps, const struct calib_session *s, bl_err *err)
{
	struct sim_card *sc = NULL;
	int rc;

	if (!s->frame && ps->m->camera.backend == MACHINE_CAM_SIM) {
		/* The simulator paints the card as the layout says, with this run's paints. */
		sc = malloc(sizeof(*sc));
		if (!sc)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if ((rc = calib_sim_card(ps->card_path, ps->m, sc, err))) {
			free(sc);
			return rc;
		}
	}
	rc = calib_session_frame(s, ps->m, SIM_SCENE_CARD, sc,
				 "Lay the dry card upright on the canvas, all four markers in view.", &ps->fs, err);
	free(sc);
	return rc;
}

/* The palette written, then read back as any command will: the file loads and the mixing model takes it. */
static int write_palette(const struct calib_paints_session *ps, const char *path, bl_err *err)
{
	cJSON *pj = mix_palette_to_json(&ps->r->out);
	struct palette *check = NULL;
	struct mix_model *model = NULL;
	int rc;

	if (!pj)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = json_write_file(path, pj, err);
	cJSON_Delete(pj);
	if (rc)
		return rc;
	check = malloc(sizeof(*check));
	model = malloc(sizeof(*model));
	if (!check || !model)
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
	else if ((rc = palette_load(path, check, err)) == 0)
		rc = mix_model_from_palette(check, model, err);
	free(check);
	free(model);
	return rc;
}

static int measure(struct calib_paints_session *ps, const struct calib_session *s, bl_err *err)
{
	const char *profile = ps->profile;
	int rc;

	if ((rc = calib_card_load(ps->card_path, ps->card, err)))
		return rc;
	if (!profile && ps->m->calibration.camera_profile[0])
		profile = ps->m->calibration.camera_profile;
	if ((rc = meas_profile_open(profile, &ps->prof, err)))
		return rc;
	if (profile)
		calib_profile_warn(profile);
	if (!meas_profile_calibrated(ps->prof))
		log_warn("no camera profile (--profile, or calibration.camera_profile): the paints are "
			 "measured as if the camera were sRGB; run brushloop calib camera first");
	if (s->say)
		fprintf(s->say, "Paint characterisation of %s from card %s (%d swatches).\n", ps->pal->name,
			ps->card_path, ps->card->n);
	if ((rc = card_frame(ps, s, err)) ||
	    (rc = calib_paints_run(&ps->fs.im, ps->fs.name, ps->card, ps->pal, ps->prof, &ps->r, err)))
		return rc;
	if (ps->fs.truth) {
		struct calib_truth_patch *tp;
		int tn;

		if ((rc = calib_truth_parse(ps->fs.truth, ps->fs.truth_name, &tp, &tn, NULL, err)))
			return rc;
		rc = calib_paints_truth(ps->r, tp, tn, ps->fs.truth_name, err);
		free(tp);
	}
	return rc;
}

int calib_paints_session_run(struct calib_paints_session *ps, const struct calib_session *s, bl_err *err)
{
	int rc;

	ps->pal = malloc(sizeof(*ps->pal));
	ps->card = malloc(sizeof(*ps->card));
	if (!ps->pal || !ps->card)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = calib_session_machine(s, &ps->m, err)) || (rc = palette_load(ps->palette_path, ps->pal, err)))
		return rc;
	if (ps->layout) {
		if ((rc = calib_output_check("--card", ps->card_path, err)) ||
		    (ps->svg && (rc = calib_output_check("--svg", ps->svg, err))))
			return rc;
		return layout(ps, err);
	}
	/* Where the palette goes, before the card is placed: a bad path is told at once. */
	if ((s->output && (rc = calib_output_check("-o", s->output, err))) || (rc = measure(ps, s, err)))
		return rc;
	ps->pass = 1;
	for (int i = 0; i < ps->r->out.n_paints; i++)
		if (ps->r->model_de00[i] > ps->m->tolerances.mix_de00)
			ps->pass = 0;
	if (!ps->pass && !s->force)
		return 0;
	if ((rc = write_palette(ps, s->output, err)))
		return rc;
	ps->written = 1;
	return 0;
}

void calib_paints_session_free(struct calib_paints_session *ps)
{
	calib_frame_free(&ps->fs);
	meas_profile_close(ps->prof);
	free(ps->r);
	free(ps->card);
	free(ps->pal);
	free(ps->m);
	ps->prof = NULL;
	ps->r = NULL;
	ps->card = NULL;
	ps->pal = NULL;
	ps->m = NULL;
}
