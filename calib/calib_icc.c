/* calib_icc.c: a fitted camera model as an ICC input profile (v2.4 by default, or v4.3) through LittleCMS: matrix-shaper for the matrix model, a Lab CLUT for the richer ones. */
#include <lcms2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"

#define CLUT_POINTS 33

/*
 * What differs between the versions brushloop writes. LittleCMS picks each
 * tag's type for the header's version (v2: curveType tables, lut16Type,
 * textDescriptionType); the CLUT's 16-bit Lab it leaves to the writer, and
 * the profile ID exists only from v4 (v2.4 reserves those bytes as zero).
 */
struct icc_version {
	int major;
	double number;
	void (*lab_encode)(cmsUInt16Number out[3], const cmsCIELab *lab);
	int profile_id;
};

static const struct icc_version icc_versions[] = {
	{ 2, 2.4, cmsFloat2LabEncodedV2, 0 },
	{ 4, 4.3, cmsFloat2LabEncoded, 1 },
};

struct clut_cargo {
	const struct calib_cam_model *m;
	const struct icc_version *v;
};

/* ICC parametric curve type 4 of calib_tone: Y = (aX + b)^g above d, cX below. */
static cmsToneCurve *tone_curve(double gamma)
{
	const double d = CALIB_TOE_V;
	cmsFloat64Number p[5];

	p[0] = 2.4 * gamma;
	p[1] = 1.0 / 1.055;
	p[2] = 0.055 / 1.055;
	p[3] = calib_tone(gamma, d) / d;
	p[4] = d;
	return cmsBuildParametricToneCurve(NULL, 4, p);
}

static int sample_lab(const cmsUInt16Number in[], cmsUInt16Number out[], void *cargo)
{
	const struct clut_cargo *c = cargo;
	double v[3], lab[3];
	cmsCIELab l;

	for (int k = 0; k < 3; k++)
		v[k] = in[k] / 65535.0;
	calib_model_lab(c->m, v, lab);
	/* Above the chart's white the profile reads white, whatever the encoding could hold (v2: 100.4). */
	l.L = lab[0] > MEAS_WHITE_L ? MEAS_WHITE_L : lab[0];
	l.a = lab[1];
	l.b = lab[2];
	c->v->lab_encode(out, &l);
	return 1;
}

static int write_text(cmsHPROFILE h, cmsTagSignature sig, const char *text)
{
	cmsMLU *mlu = cmsMLUalloc(NULL, 1);
	int ok;

	if (!mlu)
		return 0;
	ok = cmsMLUsetASCII(mlu, "en", "US", text) && cmsWriteTag(h, sig, mlu);
	cmsMLUfree(mlu);
	return ok;
}

static int write_matrix_shaper(cmsHPROFILE h, const struct calib_cam_model *m)
{
	static const cmsTagSignature col[3] = { cmsSigRedColorantTag, cmsSigGreenColorantTag,
						 cmsSigBlueColorantTag };
	static const cmsTagSignature trc[3] = { cmsSigRedTRCTag, cmsSigGreenTRCTag,
						 cmsSigBlueTRCTag };

	cmsSetPCS(h, cmsSigXYZData);
	for (int c = 0; c < 3; c++) {
		cmsCIEXYZ xyz = { m->m[0][c], m->m[1][c], m->m[2][c] };
		cmsToneCurve *t = tone_curve(m->gamma[c]);
		int ok;

		if (!t)
			return 0;
		ok = cmsWriteTag(h, col[c], &xyz) && cmsWriteTag(h, trc[c], t);
		cmsFreeToneCurve(t);
		if (!ok)
			return 0;
	}
	return 1;
}

static int write_clut(cmsHPROFILE h, const struct calib_cam_model *m, const struct icc_version *v)
{
	struct clut_cargo cargo = { m, v };
	cmsPipeline *lut = cmsPipelineAlloc(NULL, 3, 3);
	cmsStage *a = cmsStageAllocToneCurves(NULL, 3, NULL);
	cmsStage *clut = cmsStageAllocCLut16bit(NULL, CLUT_POINTS, 3, 3, NULL);
	cmsStage *b = cmsStageAllocToneCurves(NULL, 3, NULL);
	int ok = 0;

	cmsSetPCS(h, cmsSigLabData);
	if (!lut || !a || !clut || !b)
		goto out_free;
	/* The CLUT is sampled over code values, which a camera already spaces roughly evenly in lightness. */
	if (!cmsStageSampleCLut16bit(clut, sample_lab, &cargo, 0))
		goto out_free;
	if (!cmsPipelineInsertStage(lut, cmsAT_END, a))
		goto out_free;
	a = NULL;
	if (!cmsPipelineInsertStage(lut, cmsAT_END, clut))
		goto out_free;
	clut = NULL;
	if (!cmsPipelineInsertStage(lut, cmsAT_END, b))
		goto out_free;
	b = NULL;
	ok = cmsWriteTag(h, cmsSigAToB0Tag, lut);
out_free:
	if (a)
		cmsStageFree(a);
	if (clut)
		cmsStageFree(clut);
	if (b)
		cmsStageFree(b);
	if (lut)
		cmsPipelineFree(lut);
	return ok;
}

int calib_icc_build(const struct calib_cam_model *m, int version, const char *desc, const char *targ,
		    unsigned char **out, size_t *len, bl_err *err)
{
	const struct icc_version *v = NULL;
	cmsHPROFILE h;
	cmsUInt32Number n = 0;
	unsigned char *buf = NULL;
	int ok;

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < sizeof(icc_versions) / sizeof(icc_versions[0]); i++)
		if (icc_versions[i].major == version)
			v = &icc_versions[i];
	if (!v)
		return bl_fail(err, BL_EINVAL, "ICC version %d: brushloop writes version 2 (2.4) "
			       "or 4 (4.3)", version);
	h = cmsCreateProfilePlaceholder(NULL);
	if (!h)
		return bl_fail(err, BL_ENOMEM, "LittleCMS cannot create a profile");
	cmsSetProfileVersion(h, v->number);
	cmsSetDeviceClass(h, cmsSigInputClass);
	cmsSetColorSpace(h, cmsSigRgbData);
	cmsSetHeaderRenderingIntent(h, INTENT_RELATIVE_COLORIMETRIC);
	ok = write_text(h, cmsSigProfileDescriptionTag, desc) &&
	     write_text(h, cmsSigCopyrightTag, "No copyright: made by brushloop calib camera") &&
	     cmsWriteTag(h, cmsSigMediaWhitePointTag, cmsD50_XYZ()) &&
	     (!targ || write_text(h, cmsSigCharTargetTag, targ));
	if (ok)
		ok = m->kind == CALIB_MODEL_MATRIX ? write_matrix_shaper(h, m) : write_clut(h, m, v);
	if (ok && v->profile_id)
		ok = cmsMD5computeID(h);
	if (ok)
		ok = cmsSaveProfileToMem(h, NULL, &n) && n > 0;
	if (ok) {
		buf = malloc(n);
		ok = buf && cmsSaveProfileToMem(h, buf, &n);
	}
	cmsCloseProfile(h);
	if (!ok) {
		free(buf);
		return bl_fail(err, BL_EIO, "LittleCMS could not write the %s profile",
			       calib_model_names[m->kind]);
	}
	*out = buf;
	*len = n;
	return 0;
}
