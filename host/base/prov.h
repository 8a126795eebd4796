/* prov.h: where a calibration file came from (its "session" object): when, from what, with which settings, its figures and its verdict, written by every calibration writer and read back by every reader. */
#ifndef BL_BASE_PROV_H
#define BL_BASE_PROV_H

#include <cJSON.h>

#include "base/digest.h"
#include "base/err.h"
#include "base/json.h"

enum prov_verdict {
	PROV_PASS,     /* within the machine's threshold when it was made */
	PROV_FORCED,   /* beyond it, written with --force: every user warns */
	PROV_UNKNOWN,  /* made before brushloop recorded sessions (a migrated file), or by hand */
	PROV_VERDICT_COUNT
};
extern const char *const prov_verdict_names[]; /* "pass", "forced", "unknown", NULL */

struct prov {
	char created[32];             /* UTC ISO 8601, "" when unknown */
	int verdict;                  /* enum prov_verdict */
	char why[256];                /* the verdict's figure against its threshold */
	char source[512];             /* what it was measured from: a frame file, "the sim camera", a points file */
	char source_sha256[BL_DIGEST_HEX]; /* of that frame's pixels or file, "" when none */
};

/*
 * The "session" object a calibration writer adds (created now): settings
 * and figures are objects of its own (taken over; NULL: empty), the rest as
 * in p (created is filled here).
 */
cJSON *prov_json(const struct prov *p, cJSON *settings, cJSON *figures);

/* Reads root's "session" (required) into p strictly; settings and figures are the writer's record, kept as they are. */
int prov_read(json_obj *root, struct prov *p, bl_err *err);

/*
 * The migration of a calibration format from the version before it had a
 * "session" (json_format step): adds one with verdict "unknown".
 */
int prov_migrate_add(cJSON *root, const char *file, void *ctx, bl_err *err);

/* Hours since p->created at wall time now_s (Unix seconds); -1 when unknown. */
double prov_age_h(const struct prov *p, double now_s);

/* Now as UTC ISO 8601. */
void prov_now_iso(char *out, size_t n);

#endif
