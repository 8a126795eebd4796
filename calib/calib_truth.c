/* calib_truth.c: reading the simulator's truth files, the reference every quality figure of calibration is measured against. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"

#define MAX_TRUTH_PATCHES 4096

int calib_truth_load(const char *path, struct calib_truth_patch **out, int *n, double *time_s,
		     bl_err *err)
{
	cJSON *root;
	int rc = json_parse_file(path, &root, err);

	*out = NULL;
	*n = 0;
	if (rc)
		return rc;
	rc = calib_truth_parse(root, path, out, n, time_s, err);
	cJSON_Delete(root);
	return rc;
}

int calib_truth_parse(const cJSON *root, const char *path, struct calib_truth_patch **out, int *n,
		      double *time_s, bl_err *err)
{
	json_obj o, po;
	const cJSON *arr, *it;
	size_t count, i = 0;
	struct calib_truth_patch *p = NULL;
	char scene[32];
	double t = -1, wh;
	int rc;

	*out = NULL;
	*n = 0;
	if (time_s)
		*time_s = -1;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0 ||
	    (rc = json_str(&o, "scene", JSON_OPTIONAL, scene, sizeof(scene), err)) < 0 ||
	    (rc = json_num(&o, "width", JSON_OPTIONAL, 1, 65536, &wh, err)) < 0 ||
	    (rc = json_num(&o, "height", JSON_OPTIONAL, 1, 65536, &wh, err)) < 0 ||
	    (rc = json_num(&o, "time_s", JSON_OPTIONAL, 0, 1e9, &t, err)) < 0 ||
	    (rc = json_array(&o, "patches", JSON_REQUIRED, MAX_TRUTH_PATCHES, &arr, &count,
			     err)) < 0)
		goto out_free;
	/* Marker positions are read by the tests that need them; here they are only allowed. */
	json_take(&o, "markers");
	p = calloc(count ? count : 1, sizeof(*p));
	if (!p) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		double roi[4];

		if ((rc = json_item_obj(&o, "patches", it, i, &po, err)) < 0 ||
		    (rc = json_str(&po, "name", JSON_REQUIRED, p[i].name, sizeof(p[i].name), err)) < 0 ||
		    (rc = json_vec(&po, "roi", JSON_REQUIRED, 4, -1e8, 1e8, roi, err)) < 0 ||
		    (rc = json_vec(&po, "lab", JSON_REQUIRED, 3, -200.0, 200.0, p[i].lab, err)) < 0 ||
		    (rc = json_end(&po, err)) < 0)
			goto out_free;
		for (int k = 0; k < 4; k++)
			if (roi[k] != floor(roi[k]) || (k >= 2 && roi[k] <= 0)) {
				rc = json_fail(&po, "roi", err, BL_EINVAL,
					       "[x, y, w, h] in whole pixels, w and h positive");
				goto out_free;
			}
		p[i].roi = (struct meas_roi){ (int)roi[0], (int)roi[1], (int)roi[2], (int)roi[3] };
		i++;
	}
	if ((rc = json_end(&o, err)) < 0)
		goto out_free;
	*out = p;
	*n = (int)count;
	if (time_s)
		*time_s = t;
	p = NULL;
	rc = 0;
out_free:
	free(p);
	return rc;
}
