/* calib_run.c: the machine's calibration handed to a run (run_options.calibration), so the engine below never includes calib. */
#include <stdio.h>
#include <string.h>

#include "calib/calib.h"
#include "engine/run.h"

int calib_for_run(const struct machine *m, struct run_calibration *out, bl_err *err)
{
	struct calib_set cs;
	cJSON *files;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = calib_load_machine(m, &cs, err)))
		return rc;
	calib_set_warn(&cs);
	files = cJSON_CreateObject();
	for (int i = 0; files && i < cs.n_files; i++) {
		const struct calib_file *cf = &cs.files[i];
		cJSON *f = cJSON_AddObjectToObject(files, cf->key);

		cJSON_AddStringToObject(f, "file", cf->path);
		cJSON_AddStringToObject(f, "sha256", cf->sha256);
		cJSON_AddStringToObject(f, "verdict", prov_verdict_names[cf->has_prov ? cf->prov.verdict : PROV_UNKNOWN]);
		cJSON_AddStringToObject(f, "created", cf->has_prov ? cf->prov.created : "");
	}
	*out = (struct run_calibration){ .profile = cs.profile, .has_light = cs.has_light, .light = cs.light,
					 .too_old = cs.too_old, .files = files };
	snprintf(out->warnings, sizeof(out->warnings), "%s", cs.warnings);
	/* The run owns the profile and the light map now: the set frees the rest. */
	cs.profile = NULL;
	cs.has_light = 0;
	calib_set_free(&cs);
	return 0;
}
