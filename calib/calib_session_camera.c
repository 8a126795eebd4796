/* calib_session_camera.c: the camera session: a chart frame to an ICC profile, its drift against the profile it replaces, and the light map from a flat frame. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/log.h"
#include "calib/calib_session.h"
#include "sim/sim.h"
#include "vision/light.h"

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The previous profile, before it is replaced: how far has the camera drifted since? */
static void drift_since(struct calib_camera_session *cs, const char *record)
{
	char *icc;
	size_t len;
	bl_err e2 = { 0 };

	if (!file_exists(cs->out) || !file_exists(record))
		return;
	if (fs_read_file(cs->out, 64u << 20, &icc, &len, &e2) == 0) {
		if (calib_camera_drift(cs->r, record, (unsigned char *)icc, len, cs->m->calibration.max_camera_de00,
				       cs->fs.time_s, &cs->drift, &e2) == 0)
			cs->has_drift = 1;
		free(icc);
	}
	if (!cs->has_drift)
		log_warn("cannot compare with the previous calibration: %s", e2.msg);
}

/* The light over the whole view, relative to what the profile holds for. */
static int write_light_map(struct calib_camera_session *cs, const struct prov *pv, bl_err *err)
{
	struct vis_light lm;
	int rc = calib_light_map(&cs->flat, cs->r, CALIB_LIGHT_MAP_COLS, &lm, err);

	if (rc == 0) {
		cJSON *set = cJSON_CreateObject();

		lm.prov = *pv;
		snprintf(lm.prov.source, sizeof(lm.prov.source), "%s", cs->flat_path);
		rc = bl_digest_file(cs->flat_path, 1u << 30, lm.prov.source_sha256, err);
		cJSON_AddStringToObject(set, "profile", cs->out);
		cJSON_AddStringToObject(set, "chart_frame", cs->fs.name);
		cJSON_AddNumberToObject(set, "cols", CALIB_LIGHT_MAP_COLS);
		if (rc == 0 && (rc = calib_keep_previous(cs->light_path, err)) == 0)
			rc = vis_light_save(cs->light_path, &lm, set, NULL, err);
		else
			cJSON_Delete(set);
	}
	if (rc == 0) {
		cs->light_written = 1;
		cs->lm_cols = lm.cols;
		cs->lm_rows = lm.rows;
		cs->lm_lo = 1e9;
		cs->lm_hi = 0.0;
		for (int i = 0; i < lm.cols * lm.rows; i++)
			if (lm.gain[i] > 0.0f) {
				cs->lm_lo = fmin(cs->lm_lo, lm.gain[i]);
				cs->lm_hi = fmax(cs->lm_hi, lm.gain[i]);
				cs->lm_known++;
			}
	}
	vis_light_free(&lm);
	return rc;
}

/* The chart's frame measured into a profile, with the truth beside it when there is one. */
static int measure(struct calib_camera_session *cs, const struct calib_session *s, bl_err *err)
{
	int rc;

	if (cs->flat_path) {
		if ((rc = img_load(cs->flat_path, cs->m->camera.max_pixels, &cs->flat, err)))
			return rc;
		cs->co.flat = &cs->flat;
		snprintf(cs->flat_label, sizeof(cs->flat_label), "--flat %s", cs->flat_path);
		cs->co.flat_name = cs->flat_label;
	}
	cs->co.chart = cs->chart;
	cs->co.frame_name = cs->fs.name;
	cs->co.corners_px = cs->corners_px;
	if (s->say)
		fprintf(s->say, "2. Looking for the chart in %s (%dx%d px)%s...\n", cs->fs.name, cs->fs.im.w,
			cs->fs.im.h, cs->corners_px ? " at the corners given" : "");
	if ((rc = calib_camera_run(&cs->fs.im, &cs->co, &cs->r, err)))
		return rc;
	if (cs->fs.truth) {
		struct calib_truth_patch *tp;
		int tn;

		if ((rc = calib_truth_parse(cs->fs.truth, cs->fs.truth_name, &tp, &tn, NULL, err)))
			return rc;
		rc = calib_camera_truth(cs->r, tp, tn, cs->fs.truth_name, err);
		free(tp);
	}
	return rc;
}

static int write_ti3(const struct calib_camera_session *cs, bl_err *err)
{
	char *t = calib_ti3_text(cs->r, cs->chart);
	int rc = t ? fs_write_atomic(cs->ti3_path, t, strlen(t), err) : bl_fail(err, BL_ENOMEM, "out of memory");

	free(t);
	return rc;
}

/* --check: the profile given, on this chart; nothing but the picture (and a .ti3 asked for) is written. */
static int check_profile(struct calib_camera_session *cs, const struct calib_session *s, bl_err *err)
{
	struct meas_profile *prof = NULL;
	struct img pic = { 0 };
	char *icc = NULL;
	size_t len;
	int rc;

	snprintf(cs->check_png, sizeof(cs->check_png), "%s.check.png", cs->check_path);
	cs->out = s->output ? s->output : cs->check_png;
	cs->check = calloc(1, sizeof(*cs->check));
	if (!cs->check)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* The profile is read, and where the picture goes checked, before the chart is placed: a wrong path is told at once. */
	if ((rc = fs_read_file(cs->check_path, 64u << 20, &icc, &len, err)) ||
	    (rc = meas_profile_open_mem(icc, len, cs->check_path, &prof, err)) ||
	    (rc = calib_output_check(s->output ? "-o" : "the picture", cs->out, err)) ||
	    (cs->ti3_path && (rc = calib_output_check("--ti3", cs->ti3_path, err))))
		goto out_free;
	if (s->say)
		fprintf(s->say, "Checking the camera profile %s with chart %s (%d patches) for machine %s; it is "
			"not replaced.\n1. Lay the chart flat on the canvas, upright as the camera sees it, evenly "
			"lit, nothing over it.\n", cs->check_path, cs->chart->name, cs->chart->n, cs->m->name);
	if ((rc = calib_session_frame(s, cs->m, SIM_SCENE_CHART, NULL, "Place the chart now.", &cs->fs, err)) ||
	    (rc = measure(cs, s, err)) || (cs->ti3_path && (rc = write_ti3(cs, err))))
		goto out_free;
	calib_profile_check(cs->r, prof, cs->check);
	cs->pass = cs->check->figures.mean_de00 <= cs->m->calibration.max_camera_de00;
	if ((rc = calib_profile_check_picture(&cs->fs.im, cs->r, cs->check, cs->m->calibration.max_camera_de00,
					      &pic, err)) ||
	    (rc = img_save(cs->out, &pic, err)))
		goto out_free;
	cs->written = 1;
out_free:
	img_free(&pic);
	meas_profile_close(prof);
	free(icc);
	return rc;
}

int calib_camera_session_run(struct calib_camera_session *cs, const struct calib_session *s, bl_err *err)
{
	char record[CFG_PATH_MAX + 8];
	int rc;

	cs->chart = malloc(sizeof(*cs->chart));
	if (!cs->chart)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = calib_session_machine(s, &cs->m, err)))
		return rc;
	if (cs->check_path)
		return (rc = calib_chart_open(cs->chart_name, cs->chart, err)) ? rc : check_profile(cs, s, err);
	cs->out = s->output ? s->output : cs->m->calibration.camera_profile[0] ? cs->m->calibration.camera_profile : NULL;
	if (!cs->out)
		return bl_fail(err, BL_EINVAL, "no output: give -o PROFILE.icc or set calibration.camera_profile "
			       "in the machine file");
	/* Every file the session writes, before the chart is placed: a bad path is told at once. */
	if ((rc = calib_output_check(s->output ? "-o" : "the machine file's calibration.camera_profile", cs->out,
				     err)) ||
	    (cs->ti3_path && (rc = calib_output_check("--ti3", cs->ti3_path, err))) ||
	    (cs->light_path && (rc = calib_output_check("--light-map", cs->light_path, err))))
		return rc;
	if ((rc = calib_chart_open(cs->chart_name, cs->chart, err)))
		return rc;
	snprintf(record, sizeof(record), "%s.json", cs->out);
	if (s->say) {
		fprintf(s->say, "Camera calibration with chart %s (%d patches) for machine %s.\n", cs->chart->name,
			cs->chart->n, cs->m->name);
		fprintf(s->say, "1. Lay the chart flat on the canvas, upright as the camera sees it, evenly lit, "
			"nothing over it.\n");
	}
	if ((rc = calib_session_frame(s, cs->m, SIM_SCENE_CHART, NULL, "Place the chart now.", &cs->fs, err)) ||
	    (rc = measure(cs, s, err)))
		return rc;
	drift_since(cs, record);
	if (cs->ti3_path && (rc = write_ti3(cs, err)))
		return rc;
	cs->pass = cs->r->held_out.mean_de00 <= cs->m->calibration.max_camera_de00;
	if (!cs->pass && !s->force)
		return 0;
	{
		char why[256];
		struct prov pv;
		cJSON *set = cJSON_CreateObject();

		snprintf(why, sizeof(why), "held-out mean %.2f %s calibration.max_camera_de00 %.2f",
			 cs->r->held_out.mean_de00, cs->pass ? "within" : "exceeds",
			 cs->m->calibration.max_camera_de00);
		calib_frame_prov(&cs->fs, cs->pass, why, &pv);
		cJSON_AddStringToObject(set, "machine", cs->m->file);
		cJSON_AddStringToObject(set, "chart", cs->chart->name);
		cJSON_AddStringToObject(set, "model", calib_model_names[cs->r->model]);
		cJSON_AddNumberToObject(set, "icc_version", cs->co.icc_version ? cs->co.icc_version : CALIB_ICC_VERSION);
		cJSON_AddStringToObject(set, "light", calib_light_names[cs->r->light_source]);
		if (cs->flat_path)
			cJSON_AddStringToObject(set, "flat", cs->flat_path);
		cJSON_AddBoolToObject(set, "corners_given", cs->corners_px != NULL);
		if ((rc = calib_keep_previous(cs->out, err)) || (rc = calib_keep_previous(record, err)) ||
		    (rc = fs_write_atomic(cs->out, cs->r->icc, cs->r->icc_len, err)) ||
		    (rc = calib_camera_record_save(record, cs->r, &pv, set, cs->fs.time_s, err)) ||
		    (cs->light_path && (rc = write_light_map(cs, &pv, err))))
			return rc;
	}
	cs->written = 1;
	return 0;
}

void calib_camera_session_free(struct calib_camera_session *cs)
{
	calib_camera_free(cs->r);
	calib_frame_free(&cs->fs);
	img_free(&cs->flat);
	free(cs->chart);
	free(cs->check);
	free(cs->m);
	cs->r = NULL;
	cs->chart = NULL;
	cs->check = NULL;
	cs->m = NULL;
}
