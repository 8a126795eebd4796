/* calib_paints.c: paint characterisation: the printed card (layout, SVG, file), finding it by its markers, measuring its swatches through the camera profile, and the palette's measured data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/strbuf.h"
#include "calib/calib.h"
#include "color/mix.h"
#include "cv/cv.h"

/* The card's layout in mm: corner markers in the margins, blocks of rows (one a paint). */
#define CARD_MARKER_MM 20.0         /* 28 px on the example camera, over vision's 12 px least */
#define CARD_MARKER_INSET_MM 15.0   /* the marker's sheet (4S/3 across) stays on the card */
#define CARD_MARGIN_MM 30.0         /* clear of the markers' sheets (inset + 2S/3) */
#define CARD_LABEL_MM 36.0
#define CARD_HEADER_MM 10.0
#define CARD_PITCH_MM 22.0
#define CARD_BOX_MM 18.0
#define CARD_ROWS_PER_BLOCK 8
#define MAX_MARKERS 16
#define UNPAINTED_L 92.0       /* a swatch this light and grey is bare card */

int calib_card_layout(const struct palette *p, int n_tints, const double *tints,
		      struct calib_card *card, bl_err *err)
{
	static const double def[2] = { 0.5, 0.1 };
	int rows, blocks;

	memset(card, 0, sizeof(*card));
	if (!p->white[0])
		return bl_fail(err, BL_EINVAL, "%s: the palette names no white: tints are mixed with "
			       "it (set \"white\")", p->file);
	if (palette_find(p, p->white) < 0)
		return bl_fail(err, BL_EINVAL, "%s: the white '%s' is not one of its paints", p->file,
			       p->white);
	if (n_tints <= 0) {
		n_tints = 2;
		tints = def;
	}
	if (n_tints > CALIB_CARD_MAX_TINTS)
		return bl_fail(err, BL_EINVAL, "%d tints: at most %d", n_tints, CALIB_CARD_MAX_TINTS);
	for (int i = 0; i < n_tints; i++) {
		if (!(tints[i] > 0.0 && tints[i] < 1.0))
			return bl_fail(err, BL_EINVAL, "tint %g: a paint fraction lies strictly between "
				       "0 and 1", tints[i]);
		for (int j = 0; j < i; j++)
			if (fabs(tints[i] - tints[j]) < 1e-9)
				return bl_fail(err, BL_EINVAL, "tint %g is given twice", tints[i]);
		card->tints[i] = tints[i];
	}
	card->n_tints = n_tints;
	snprintf(card->palette, sizeof(card->palette), "%s", p->name);
	snprintf(card->white, sizeof(card->white), "%s", p->white);
	card->marker_size_mm = CARD_MARKER_MM;
	card->marker_inset_mm = CARD_MARKER_INSET_MM;
	blocks = p->n_paints > CARD_ROWS_PER_BLOCK ? 2 : 1;
	rows = (p->n_paints + blocks - 1) / blocks;
	card->size_mm[0] = 2 * CARD_MARGIN_MM +
			   blocks * (CARD_LABEL_MM + (1 + n_tints) * CARD_PITCH_MM);
	card->size_mm[1] = 2 * CARD_MARGIN_MM + CARD_HEADER_MM + rows * CARD_PITCH_MM;
	for (int i = 0; i < p->n_paints; i++) {
		int b = i / rows, r = i % rows, white = strcmp(p->paints[i].name, p->white) == 0;
		double x0 = CARD_MARGIN_MM + b * (CARD_LABEL_MM + (1 + n_tints) * CARD_PITCH_MM) +
			    CARD_LABEL_MM;
		double y0 = CARD_MARGIN_MM + CARD_HEADER_MM + r * CARD_PITCH_MM;

		/* The white is its own masstone; its tints would be the white again. */
		for (int t = 0; t < (white ? 1 : 1 + n_tints); t++) {
			struct calib_card_swatch *s = &card->s[card->n++];

			snprintf(s->paint, sizeof(s->paint), "%s", p->paints[i].name);
			s->fraction = t == 0 ? 1.0 : tints[t - 1];
			s->rect_mm[0] = x0 + t * CARD_PITCH_MM;
			s->rect_mm[1] = y0;
			s->rect_mm[2] = CARD_BOX_MM;
			s->rect_mm[3] = CARD_BOX_MM;
		}
	}
	return 0;
}

int calib_card_save(const char *path, const struct calib_card *card, bl_err *err)
{
	cJSON *j = cJSON_CreateObject(), *arr;
	int rc;

	if (!j)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_AddStringToObject(j, "kind", "paint-card");
	cJSON_AddNumberToObject(j, "version", 1);
	cJSON_AddStringToObject(j, "palette", card->palette);
	cJSON_AddStringToObject(j, "white", card->white);
	json_add_vec(j, "size_mm", card->size_mm, 2);
	cJSON_AddNumberToObject(j, "marker_size_mm", card->marker_size_mm);
	cJSON_AddNumberToObject(j, "marker_inset_mm", card->marker_inset_mm);
	json_add_vec(j, "tints", card->tints, card->n_tints);
	arr = cJSON_AddArrayToObject(j, "swatches");
	for (int i = 0; arr && i < card->n; i++) {
		cJSON *s = cJSON_CreateObject();

		if (!s)
			break;
		cJSON_AddStringToObject(s, "paint", card->s[i].paint);
		cJSON_AddNumberToObject(s, "fraction", card->s[i].fraction);
		json_add_vec(s, "rect_mm", card->s[i].rect_mm, 4);
		cJSON_AddItemToArray(arr, s);
	}
	rc = json_write_file(path, j, err);
	cJSON_Delete(j);
	return rc;
}

int calib_card_load(const char *path, struct calib_card *card, bl_err *err)
{
	cJSON *root;
	json_obj o, so;
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc, white_seen = 0;

	memset(card, 0, sizeof(*card));
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0 ||
	    (rc = json_kind(&o, "paint-card", 1, err)) < 0 ||
	    (rc = json_str(&o, "palette", JSON_REQUIRED, card->palette, sizeof(card->palette),
			   err)) < 0 ||
	    (rc = json_str(&o, "white", JSON_REQUIRED, card->white, sizeof(card->white), err)) < 0 ||
	    (rc = json_vec(&o, "size_mm", JSON_REQUIRED, 2, 30, 2000, card->size_mm, err)) < 0 ||
	    (rc = json_num(&o, "marker_size_mm", JSON_REQUIRED, 5, 200, &card->marker_size_mm,
			   err)) < 0 ||
	    (rc = json_num(&o, "marker_inset_mm", JSON_REQUIRED, 1, 300, &card->marker_inset_mm,
			   err)) < 0 ||
	    (rc = json_array(&o, "tints", JSON_REQUIRED, CALIB_CARD_MAX_TINTS, &arr, &count, err)) < 0)
		goto out_free;
	if (card->marker_inset_mm < 2.0 / 3.0 * card->marker_size_mm) {
		rc = json_fail(&o, "marker_inset_mm", err, BL_EINVAL, "%g is less than 2/3 of "
			       "marker_size_mm: the markers' sheets would leave the card",
			       card->marker_inset_mm);
		goto out_free;
	}
	card->n_tints = (int)count;
	if (count && (rc = json_vec(&o, "tints", JSON_REQUIRED, (int)count, 1e-6, 1 - 1e-6,
				    card->tints, err)) < 0)
		goto out_free;
	if ((rc = json_array(&o, "swatches", JSON_REQUIRED, CALIB_CARD_MAX_SWATCHES, &arr, &count,
			     err)) < 0)
		goto out_free;
	if (count == 0) {
		rc = json_fail(&o, "swatches", err, BL_EINVAL, "no swatches");
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		struct calib_card_swatch *s = &card->s[i];

		if ((rc = json_item_obj(&o, "swatches", it, i, &so, err)) < 0 ||
		    (rc = json_str(&so, "paint", JSON_REQUIRED, s->paint, sizeof(s->paint), err)) < 0 ||
		    (rc = json_num(&so, "fraction", JSON_REQUIRED, 1e-6, 1.0, &s->fraction, err)) < 0 ||
		    (rc = json_vec(&so, "rect_mm", JSON_REQUIRED, 4, 0, 2000, s->rect_mm, err)) < 0 ||
		    (rc = json_end(&so, err)) < 0)
			goto out_free;
		if (s->rect_mm[2] < 3 || s->rect_mm[3] < 3 ||
		    s->rect_mm[0] + s->rect_mm[2] > card->size_mm[0] ||
		    s->rect_mm[1] + s->rect_mm[3] > card->size_mm[1]) {
			rc = json_fail(&so, "rect_mm", err, BL_EINVAL, "must lie on the %gx%g mm card and "
				       "be at least 3 mm across", card->size_mm[0], card->size_mm[1]);
			goto out_free;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(card->s[k].paint, s->paint) == 0 &&
			    fabs(card->s[k].fraction - s->fraction) < 1e-9) {
				rc = json_fail(&so, "fraction", err, BL_EINVAL, "'%s' at %g is on the "
					       "card twice", s->paint, s->fraction);
				goto out_free;
			}
		if (strcmp(s->paint, card->white) == 0 && s->fraction == 1.0)
			white_seen = 1;
		i++;
	}
	card->n = (int)count;
	if (!white_seen) {
		rc = json_fail(&o, "swatches", err, BL_EINVAL, "the white '%s' has no masstone swatch",
			       card->white);
		goto out_free;
	}
	rc = json_end(&o, err);
out_free:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

/* A marker of vision's design (host/vision/canvas.h): its sheet, the ink square, the paper inside, the origin's core. */
static void svg_marker(strbuf *sb, double cx, double cy, double S, int origin)
{
	const double sq[4] = { 4.0 / 3.0, 1.0, 2.0 / 3.0, 1.0 / 3.0 };

	for (int i = 0; i < (origin ? 4 : 3); i++)
		sb_printf(sb, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\"/>\n",
			  cx - 0.5 * sq[i] * S, cy - 0.5 * sq[i] * S, sq[i] * S, sq[i] * S,
			  i % 2 ? "#000" : "#fff");
}

int calib_card_svg(const struct calib_card *card, char **out, bl_err *err)
{
	strbuf sb;
	const double W = card->size_mm[0], H = card->size_mm[1], in = card->marker_inset_mm;
	const double mc[4][2] = { { in, in }, { W - in, in }, { W - in, H - in }, { in, H - in } };

	sb_init(&sb);
	sb_printf(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%gmm\" height=\"%gmm\" "
		  "viewBox=\"0 0 %g %g\">\n", W, H, W, H);
	sb_printf(&sb, "<rect x=\"0\" y=\"0\" width=\"%g\" height=\"%g\" fill=\"#fff\" "
		  "stroke=\"#999\" stroke-width=\"0.2\"/>\n", W, H);
	for (int i = 0; i < 4; i++)
		svg_marker(&sb, mc[i][0], mc[i][1], card->marker_size_mm, i == 0);
	/*
	 * The header between the markers' sheets, below the top ones, squeezed to
	 * the width between the margins: a palette's long name never runs it
	 * through a marker or off the card.
	 */
	sb_printf(&sb, "<text x=\"%g\" y=\"%g\" font-family=\"sans-serif\" font-size=\"3.5\" "
		  "textLength=\"%g\" lengthAdjust=\"spacingAndGlyphs\">brushloop paint card: ",
		  CARD_MARGIN_MM, CARD_MARGIN_MM + CARD_HEADER_MM - 4.0, W - 2 * CARD_MARGIN_MM);
	sb_xml(&sb, card->palette);
	sb_printf(&sb, ". Print at 100%%. Fill each box opaquely: the paint alone, then mixed "
		  "with ");
	sb_xml(&sb, card->white);
	sb_printf(&sb, " by weight as labelled. This side up under the camera.</text>\n");
	for (int i = 0; i < card->n; i++) {
		const struct calib_card_swatch *s = &card->s[i];

		sb_printf(&sb, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" "
			  "stroke=\"#000\" stroke-width=\"0.25\"/>\n", s->rect_mm[0], s->rect_mm[1],
			  s->rect_mm[2], s->rect_mm[3]);
		sb_printf(&sb, "<text x=\"%g\" y=\"%g\" font-family=\"sans-serif\" font-size=\"2.6\">",
			  s->rect_mm[0], s->rect_mm[1] - 0.8);
		if (s->fraction >= 1.0)
			sb_printf(&sb, "masstone");
		else
			sb_printf(&sb, "%g%% paint", 100.0 * s->fraction);
		sb_printf(&sb, "</text>\n");
		if (s->fraction >= 1.0) {
			sb_printf(&sb, "<text x=\"%g\" y=\"%g\" font-family=\"sans-serif\" "
				  "font-size=\"3.2\">", s->rect_mm[0] - CARD_LABEL_MM + 1,
				  s->rect_mm[1] + 0.5 * s->rect_mm[3] + 1);
			sb_xml(&sb, s->paint);
			sb_printf(&sb, "</text>\n");
		}
	}
	sb_printf(&sb, "</svg>\n");
	*out = sb_take(&sb);
	if (!*out)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	return 0;
}

/* ---- finding the card ---- */

static void apply(const double H[9], double x, double y, double *u, double *v)
{
	double w = H[6] * x + H[7] * y + H[8];

	*u = (H[0] * x + H[1] * y + H[2]) / w;
	*v = (H[3] * x + H[4] * y + H[5]) / w;
}

/*
 * Orders four markers from the one with the core (the card's top left) on
 * round the card: a camera never mirrors, and the card's x runs right and its
 * y down as an image's do, so the others follow by increasing angle about
 * their middle (clockwise on screen). 0 unless exactly one has the core.
 */
static int order_card(const struct cv_marker *m, int idx[4])
{
	double cx = 0, cy = 0, ang[4], a0;
	int o = -1, t[4];

	for (int i = 0; i < 4; i++) {
		cx += m[idx[i]].centre[0] / 4;
		cy += m[idx[i]].centre[1] / 4;
		if (m[idx[i]].origin) {
			if (o >= 0)
				return 0;
			o = i;
		}
	}
	if (o < 0)
		return 0;
	for (int i = 0; i < 4; i++)
		ang[i] = atan2(m[idx[i]].centre[1] - cy, m[idx[i]].centre[0] - cx);
	a0 = ang[o];
	for (int i = 0; i < 4; i++) {
		ang[i] -= a0;
		while (ang[i] < 0)
			ang[i] += 2 * M_PI;
		t[i] = idx[i];
	}
	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && ang[j] < ang[j - 1]; j--) {
			double a = ang[j];
			int k = t[j];

			ang[j] = ang[j - 1];
			ang[j - 1] = a;
			t[j] = t[j - 1];
			t[j - 1] = k;
		}
	memcpy(idx, t, sizeof(t));
	return 1;
}

/* The mean side of the square of side S mm centred at card (x, y) mm, as the detector measures it: foreshortening included. */
static double side_at(const double H[9], double x, double y, double S)
{
	static const double sx[5] = { -1, 1, 1, -1, -1 };
	static const double sy[5] = { -1, -1, 1, 1, -1 };
	double want = 0;

	for (int k = 0; k < 4; k++) {
		double x0, y0, x1, y1;

		apply(H, x + 0.5 * S * sx[k], y + 0.5 * S * sy[k], &x0, &y0);
		apply(H, x + 0.5 * S * sx[k + 1], y + 0.5 * S * sy[k + 1], &x1, &y1);
		want += 0.25 * hypot(x1 - x0, y1 - y0);
	}
	return want;
}

/*
 * How far four markers (centres px, card order) are from framing the card:
 * the worst log ratio of a marker's size to the size the card would have
 * there, or more when the corner opposite the core lies off the
 * parallelogram of the other three by more than a quarter of the card, or
 * the sides' ratio is not the card's: a camera above the table foreshortens
 * a card a little, never that much. A quad of the card's three markers and
 * one of the canvas's fits the sizes, not the shape.
 */
static double quad_misfit(const struct cv_marker *mk, const int t[4], const double mm[8], double S,
			  double H[9])
{
	double px[8], worst = 0, side, dev, ratio, want;
	bl_err e2 = { 0 };

	for (int i = 0; i < 4; i++) {
		px[2 * i] = mk[t[i]].centre[0];
		px[2 * i + 1] = mk[t[i]].centre[1];
	}
	if (cv_homography(mm, px, 4, H, &e2))
		return 1e9;
	for (int i = 0; i < 4; i++)
		worst = fmax(worst, fabs(log(mk[t[i]].side_px / side_at(H, mm[2 * i], mm[2 * i + 1], S))));
	side = fmax(hypot(px[2] - px[0], px[3] - px[1]), hypot(px[6] - px[0], px[7] - px[1]));
	dev = hypot(px[4] - (px[2] + px[6] - px[0]), px[5] - (px[3] + px[7] - px[1])) / side;
	ratio = hypot(px[2] - px[0], px[3] - px[1]) / hypot(px[6] - px[0], px[7] - px[1]);
	want = (mm[2] - mm[0]) / (mm[7] - mm[1]);
	if (dev > 0.25 || fabs(log(ratio / want)) > log(1.4))
		worst += 1.0;
	return worst;
}

/* The affine map A (u = A0 x + A1 y + A2, v = A3 x + A4 y + A5) through three point pairs; 0 when they lie on a line. */
static int affine3(const double src[6], const double dst[6], double A[6])
{
	double d = (src[0] - src[4]) * (src[3] - src[5]) - (src[2] - src[4]) * (src[1] - src[5]);

	if (fabs(d) < 1e-9)
		return 0;
	for (int r = 0; r < 2; r++) {
		double u0 = dst[r] - dst[4 + r], u1 = dst[2 + r] - dst[4 + r];

		A[3 * r] = (u0 * (src[3] - src[5]) - u1 * (src[1] - src[5])) / d;
		A[3 * r + 1] = (u1 * (src[0] - src[4]) - u0 * (src[2] - src[4])) / d;
		A[3 * r + 2] = dst[4 + r] - A[3 * r] * src[4] - A[3 * r + 1] * src[5];
	}
	return 1;
}

static const char *const card_corner_names[4] = { "top left", "top right", "bottom right", "bottom left" };

/*
 * When no four markers frame the card: the three of them that do (the core
 * among them, sizes the card's where an affine map of the three puts them)
 * say which corner's marker is missing and where it should be.
 */
static int card_marker_missing(const struct cv_marker *mk, int n, const char *name, const double mm[8],
			       double S, bl_err *err)
{
	double best = log(1.3), where[2] = { 0, 0 };
	int missing = -1;

	for (int o = 0; o < n; o++) {
		if (!mk[o].origin)
			continue;
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++) {
				if (a == b || a == o || b == o || mk[a].origin || mk[b].origin)
					continue;
				for (int hole = 1; hole < 4; hole++) {
					int ci[3], k = 0, who[3] = { o, a, b };
					double A[6], src[6], dst[6], worst = 0;

					for (int c = 0; c < 4; c++)
						if (c != hole)
							ci[k++] = c;
					for (int i = 0; i < 3; i++) {
						src[2 * i] = mm[2 * ci[i]];
						src[2 * i + 1] = mm[2 * ci[i] + 1];
						dst[2 * i] = mk[who[i]].centre[0];
						dst[2 * i + 1] = mk[who[i]].centre[1];
					}
					if (!affine3(src, dst, A))
						continue;
					{
						const double Ha[9] = { A[0], A[1], A[2], A[3], A[4], A[5], 0, 0, 1 };

						/* Clockwise from the core, as a camera sees a card (never mirrored). */
						if (A[0] * A[4] - A[1] * A[3] <= 0)
							continue;
						for (int i = 0; i < 3; i++)
							worst = fmax(worst, fabs(log(mk[who[i]].side_px /
										   side_at(Ha, src[2 * i], src[2 * i + 1], S))));
						if (worst < best) {
							best = worst;
							missing = hole;
							apply(Ha, mm[2 * hole], mm[2 * hole + 1], &where[0], &where[1]);
						}
					}
				}
			}
	}
	if (missing < 0)
		return 0;
	return bl_fail(err, BL_EINVAL, "%s: 3 of the card's 4 corner markers found; the one at its %s "
		       "(near (%.0f, %.0f) px, where the other three put it) is hidden, covered or out "
		       "of the frame", name, card_corner_names[missing], where[0], where[1]);
}

int calib_card_locate(const struct img *frame, const char *name, const struct calib_card *card,
		      double H[9], bl_err *err)
{
	struct cv_view rgb = { frame->px, frame->w, frame->h, frame->w * 3, 3 };
	struct cv_view grey = { NULL, frame->w, frame->h, frame->w, 1 };
	struct cv_marker mk[MAX_MARKERS];
	const double W = card->size_mm[0], Hc = card->size_mm[1], in = card->marker_inset_mm;
	const double S = card->marker_size_mm;
	const double mm[8] = { in, in, W - in, in, W - in, Hc - in, in, Hc - in };
	double best = 1e9;
	int n = 0, rc, origins = 0;

	grey.px = malloc((size_t)frame->w * frame->h);
	if (!grey.px)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = cv_grey(&rgb, &grey, err);
	if (rc == 0)
		rc = cv_find_markers(&grey, 12.0, mk, MAX_MARKERS, &n, err);
	free(grey.px);
	if (rc)
		return rc;
	if (n > MAX_MARKERS)
		n = MAX_MARKERS;
	for (int i = 0; i < n; i++)
		origins += mk[i].origin;
	if (n < 4 && !card_marker_missing(mk, n, name, mm, S, err))
		return bl_fail(err, BL_EINVAL, "%s: %d marker%s found: the card needs all four of its "
			       "corner markers in view (uncovered, lit, in focus)", name, n,
			       n == 1 ? "" : "s");
	if (n < 4)
		return BL_EINVAL;
	/* Of every four with one core among them, those whose sizes and shape fit the card where they lie. */
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			for (int c = b + 1; c < n; c++)
				for (int d = c + 1; d < n; d++) {
					int t[4] = { a, b, c, d };
					double Ht[9], worst;

					if (!order_card(mk, t))
						continue;
					if ((worst = quad_misfit(mk, t, mm, S, Ht)) < best) {
						best = worst;
						memcpy(H, Ht, sizeof(Ht));
					}
				}
	if (best > log(1.3) && card_marker_missing(mk, n, name, mm, S, err))
		return BL_EINVAL;
	if (best > log(1.3))
		return bl_fail(err, BL_EINVAL, "%s: %d markers found (%d with the core), but no four of "
			       "them frame a %gx%g mm card with %g mm markers (the nearest are %.0f%% off "
			       "in size or shape): is this the card file's card, fully in view?", name, n,
			       origins, W, Hc, S, best < 1e8 ? 100 * (exp(fmin(best, 1.0)) - 1) : 100.0);
	return 0;
}

/* ---- measuring the card ---- */

static int swatch_roi(const double H[9], const double rect[4], int w, int h, struct meas_roi *roi)
{
	double Hi[9], cx, cy, ex = 0, ey = 0, lo = 0, hi = 1;
	double u0 = rect[0] + 0.2 * rect[2], u1 = rect[0] + 0.8 * rect[2];
	double v0 = rect[1] + 0.2 * rect[3], v1 = rect[1] + 0.8 * rect[3];
	const double cu[4] = { u0, u1, u1, u0 }, cv[4] = { v0, v0, v1, v1 };
	bl_err e2 = { 0 };

	if (cv_invert3(H, Hi, &e2))
		return 0;
	apply(H, 0.5 * (u0 + u1), 0.5 * (v0 + v1), &cx, &cy);
	for (int i = 0; i < 4; i++) {
		double x, y;

		apply(H, cu[i], cv[i], &x, &y);
		ex = fmax(ex, fabs(x - cx));
		ey = fmax(ey, fabs(y - cy));
	}
	for (int it = 0; it < 30; it++) {
		double s = 0.5 * (lo + hi);
		int ok = 1;

		for (int i = 0; i < 4 && ok; i++) {
			double u, v;

			apply(Hi, cx + (i & 1 ? s * ex : -s * ex), cy + (i & 2 ? s * ey : -s * ey), &u,
			      &v);
			ok = u >= u0 && u <= u1 && v >= v0 && v <= v1;
		}
		if (ok)
			lo = s;
		else
			hi = s;
	}
	{
		int x0 = (int)ceil(cx - lo * ex), x1 = (int)floor(cx + lo * ex);
		int y0 = (int)ceil(cy - lo * ey), y1 = (int)floor(cy + lo * ey);

		if (x0 < 0 || y0 < 0 || x1 >= w || y1 >= h || x1 < x0 || y1 < y0)
			return 0;
		*roi = (struct meas_roi){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
	}
	return 1;
}

static void lab3(const color_lab *c, double v[3])
{
	v[0] = c->L;
	v[1] = c->a;
	v[2] = c->b;
}

/* The card fits the palette: the same white, a masstone of every paint. */
static int card_fits(const struct calib_card *card, const struct palette *p, bl_err *err)
{
	if (strcmp(card->white, p->white) != 0)
		return bl_fail(err, BL_EINVAL, "%s: the card's white is '%s', the palette's '%s'", p->file,
			       card->white, p->white);
	for (int i = 0; i < p->n_paints; i++) {
		int found = 0;

		for (int k = 0; k < card->n && !found; k++)
			found = strcmp(card->s[k].paint, p->paints[i].name) == 0 && card->s[k].fraction >= 1.0;
		if (!found)
			return bl_fail(err, BL_EINVAL, "the card has no masstone of '%s' (palette %s): "
				       "lay out a card for this palette", p->paints[i].name, p->file);
	}
	return 0;
}

/* Swatch cs measured through the profile into s: in the frame, unclipped, uniform and painted. */
static int read_swatch(const struct img *frame, const char *name, const struct calib_card *card,
		       const struct calib_card_swatch *cs, const double H[9], const struct meas_profile *prof,
		       struct calib_swatch_result *s, bl_err *err)
{
	struct meas_swatch ms;
	char nm[600];
	int rc;

	snprintf(s->paint, sizeof(s->paint), "%s", cs->paint);
	s->fraction = cs->fraction;
	snprintf(nm, sizeof(nm), "%s: swatch '%s' at %g", name, cs->paint, cs->fraction);
	if (!swatch_roi(H, cs->rect_mm, frame->w, frame->h, &s->roi))
		return bl_fail(err, BL_EINVAL, "%s: lies outside the frame", nm);
	if ((rc = meas_swatch(frame, nm, &s->roi, prof, &ms, err)))
		return rc;
	if (ms.saturated || ms.clipped > 0.02 * ms.total)
		return bl_fail(err, BL_EINVAL, "%s: clipped (%ld of %ld px at 254 or 255): lower "
			       "the exposure", nm, ms.clipped, ms.total);
	if (ms.pixels < 0.5 * ms.total)
		return bl_fail(err, BL_EINVAL, "%s: not uniform (only %ld of %ld px agree): paint "
			       "the box opaquely and evenly, keep it uncovered", nm, ms.pixels, ms.total);
	lab3(&ms.lab, s->lab);
	memcpy(s->stddev, ms.stddev, sizeof(s->stddev));
	s->pixels = ms.pixels;
	(void)card;
	return 0;
}

/* What the palette says swatch cs should look like: its paint with the white at its fraction. */
static void swatch_expected(const struct mix_model *pm, const struct calib_card *card,
			    const struct calib_card_swatch *cs, double lab[3])
{
	double amt[MIX_MAX_PAINTS] = { 0 };
	int i = mix_model_find(pm, cs->paint), w = mix_model_find(pm, card->white);
	color_lab c;

	amt[i] = cs->fraction;
	if (w >= 0 && w != i)
		amt[w] = 1.0 - cs->fraction;
	else
		amt[i] = 1.0;
	mix_predict(pm, NULL, amt, &c);
	lab3(&c, lab);
}

/*
 * Swatch a reads as b's paint: when b reads as a's too, the two are
 * exchanged (painted in each other's boxes, or the palette's references of
 * the two paints swapped), and both are named (1 with err filled); else 0.
 */
static int swapped_with(const struct calib_paints_result *r, const struct calib_card *card,
			const struct mix_model *pm, const struct calib_card_swatch *a,
			const struct calib_card_swatch *b, const double want_a[3], const char *name, bl_err *err)
{
	const struct calib_swatch_result *sa = NULL, *sb = NULL;
	double want_b[3], own_b, as_a, as_b;

	for (int k = 0; k < r->n; k++) {
		if (strcmp(r->s[k].paint, a->paint) == 0 && r->s[k].fraction == a->fraction)
			sa = &r->s[k];
		if (strcmp(r->s[k].paint, b->paint) == 0 && r->s[k].fraction == b->fraction)
			sb = &r->s[k];
	}
	if (!sa || !sb || strcmp(a->paint, b->paint) == 0)
		return 0;
	swatch_expected(pm, card, b, want_b);
	own_b = calib_de00(sb->lab, want_b);
	as_a = calib_de00(sb->lab, want_a);
	as_b = calib_de00(sa->lab, want_b);
	if (own_b <= CALIB_SWATCH_FAR_DE00 || as_a >= 0.5 * own_b)
		return 0;
	bl_fail(err, BL_EINVAL, "%s: swatches '%s' at %g and '%s' at %g read as each other's paint (%.1f and "
		"%.1f CIEDE2000 from what the palette expects of the other, %.1f and %.1f from their own): "
		"painted in each other's boxes, or the palette's references of %s and %s swapped?", name,
		a->paint, a->fraction, b->paint, b->fraction, as_b, as_a, calib_de00(sa->lab, want_a), own_b,
		a->paint, b->paint);
	return 1;
}

/*
 * Every swatch against the colour the palette it claims to be predicts: a box
 * left bare reads as the card's paper, a paint in another paint's box reads
 * as that paint. Either would become the palette's data and steer every mix,
 * so both are refused naming the box (and the swatch it looks like).
 */
static int swatches_as_expected(const struct calib_paints_result *r, const struct calib_card *card,
				const struct mix_model *pm, const char *name, bl_err *err)
{
	for (int k = 0; k < r->n; k++) {
		const struct calib_swatch_result *s = &r->s[k];
		const struct calib_card_swatch *cs = NULL;
		double want[3], de, best = 1e9;
		int bj = -1;

		for (int j = 0; j < card->n && !cs; j++)
			if (strcmp(card->s[j].paint, s->paint) == 0 && card->s[j].fraction == s->fraction)
				cs = &card->s[j];
		swatch_expected(pm, card, cs, want);
		de = calib_de00(s->lab, want);
		if (de <= CALIB_SWATCH_FAR_DE00)
			continue;
		if (s->lab[0] > UNPAINTED_L && hypot(s->lab[1], s->lab[2]) < 4.0)
			return bl_fail(err, BL_EINVAL, "%s: swatch '%s' at %g looks unpainted (L %.1f, "
				       "grey; the palette expects L %.1f, a %.1f, b %.1f): paint the box",
				       name, s->paint, s->fraction, s->lab[0], want[0], want[1], want[2]);
		for (int j = 0; j < card->n; j++) {
			double other[3], d;

			if (&card->s[j] == cs)
				continue;
			swatch_expected(pm, card, &card->s[j], other);
			if ((d = calib_de00(s->lab, other)) < best) {
				best = d;
				bj = j;
			}
		}
		if (bj >= 0 && best < 0.5 * de && swapped_with(r, card, pm, cs, &card->s[bj], want, name, err))
			return BL_EINVAL;
		if (bj >= 0 && best < 0.5 * de)
			return bl_fail(err, BL_EINVAL, "%s: swatch '%s' at %g reads L %.1f, a %.1f, b %.1f, "
				       "%.1f CIEDE2000 from what the palette expects of it but %.1f from "
				       "'%s' at %g: is that paint in this box?", name, s->paint,
				       s->fraction, s->lab[0], s->lab[1], s->lab[2], de, best,
				       card->s[bj].paint, card->s[bj].fraction);
		return bl_fail(err, BL_EINVAL, "%s: swatch '%s' at %g reads L %.1f, a %.1f, b %.1f, %.1f "
			       "CIEDE2000 from what the palette expects of it (L %.1f, a %.1f, b %.1f; "
			       "at most %g): another paint, a wrong mix or the wrong palette?", name,
			       s->paint, s->fraction, s->lab[0], s->lab[1], s->lab[2], de, want[0],
			       want[1], want[2], CALIB_SWATCH_FAR_DE00);
	}
	return 0;
}

/* The palette: the same paints and wells, measured data in place of what they had. */
static void measured_palette(struct calib_paints_result *r, const struct palette *p,
			     const struct meas_profile *prof)
{
	r->out = *p;
	snprintf(r->out.notice, sizeof(r->out.notice), "Measured from a painted card by brushloop "
		 "calib paints (camera profile %s).", meas_profile_name(prof));
	r->out.n_bands = 0;
	for (int i = 0; i < p->n_paints; i++) {
		struct palette_paint *pp = &r->out.paints[i];
		int is_white = strcmp(pp->name, p->white) == 0;

		pp->has_spectral = 0;
		pp->has_measured = 1;
		pp->n_tints = 0;
		for (int k = 0; k < r->n; k++) {
			if (strcmp(r->s[k].paint, pp->name) != 0)
				continue;
			if (r->s[k].fraction >= 1.0) {
				memcpy(pp->masstone_lab, r->s[k].lab, sizeof(pp->masstone_lab));
			} else if (!is_white && pp->n_tints < PALETTE_MAX_TINTS) {
				pp->tints[pp->n_tints].paint_fraction = r->s[k].fraction;
				memcpy(pp->tints[pp->n_tints].lab, r->s[k].lab, sizeof(double) * 3);
				pp->n_tints++;
			}
		}
	}
}

/* Paint i's last tint as the model fitted without it predicts it (*de); 0 when that model does not fit. */
static int held_out_tint(const struct palette *out, int i, int wi, double *de, bl_err *err)
{
	const struct palette_paint *pp = &out->paints[i];
	struct palette *q = malloc(sizeof(*q));
	struct mix_model *mm = malloc(sizeof(*mm));
	double amt[PALETTE_MAX_PAINTS] = { 0 };
	bl_err e2 = { 0 };
	int got = 0;

	if (!q || !mm) {
		free(q);
		free(mm);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	*q = *out;
	q->paints[i].n_tints--;
	if (mix_model_from_palette(q, mm, &e2) == 0) {
		const struct palette_tint *t = &pp->tints[pp->n_tints - 1];
		color_lab pred;
		double lab[3];

		amt[i] = t->paint_fraction;
		amt[wi] = 1.0 - t->paint_fraction;
		mix_predict(mm, NULL, amt, &pred);
		lab3(&pred, lab);
		*de = calib_de00(lab, t->lab);
		got = 1;
	}
	free(q);
	free(mm);
	return got;
}

/* Each paint's last tint predicted by the model fitted without it: the card's held-out figures. */
static int held_out_tints(struct calib_paints_result *r, const struct palette *p, bl_err *err)
{
	double de[PALETTE_MAX_PAINTS];
	char names[PALETTE_MAX_PAINTS][CALIB_NAME_MAX];
	int m = 0, wi = palette_find(&r->out, p->white);

	for (int i = 0; i < p->n_paints; i++) {
		int got;

		if (r->out.paints[i].n_tints < 2 || i == wi)
			continue;
		if ((got = held_out_tint(&r->out, i, wi, &de[m], err)) < 0)
			return got;
		if (got)
			snprintf(names[m++], CALIB_NAME_MAX, "%s", r->out.paints[i].name);
	}
	r->n_heldout = m;
	calib_figures_of(de, (const char (*)[CALIB_NAME_MAX])names, m, &r->heldout);
	return 0;
}

int calib_paints_run(const struct img *frame, const char *name, const struct calib_card *card,
		     const struct palette *p, const struct meas_profile *prof,
		     struct calib_paints_result **out, bl_err *err)
{
	struct calib_paints_result *r = calloc(1, sizeof(*r));
	struct mix_model *model = malloc(sizeof(*model));
	int rc;

	*out = NULL;
	if (!r || !model) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	r->card = *card;
	if ((rc = card_fits(card, p, err)) || (rc = calib_card_locate(frame, name, card, r->H, err)))
		goto out_free;
	for (int k = 0; k < card->n; k++) {
		if (palette_find(p, card->s[k].paint) < 0)
			continue;
		if ((rc = read_swatch(frame, name, card, &card->s[k], r->H, prof, &r->s[r->n], err)))
			goto out_free;
		r->n++;
	}
	/* The palette as given predicts each swatch: a swatch far from it is not that paint. */
	if ((rc = mix_model_from_palette(p, model, err))) {
		bl_err_prefix(err, "%s", p->file);
		goto out_free;
	}
	if ((rc = swatches_as_expected(r, card, model, name, err)))
		goto out_free;
	measured_palette(r, p, prof);
	/* The mixing model must accept it: K and S are fitted to every paint's colours. */
	if ((rc = mix_model_from_palette(&r->out, model, err))) {
		bl_err_prefix(err, "the measured palette");
		goto out_free;
	}
	for (int i = 0; i < p->n_paints; i++)
		r->model_de00[i] = model->fit_de00[i];
	if ((rc = held_out_tints(r, p, err)))
		goto out_free;
	*out = r;
	r = NULL;
out_free:
	free(model);
	free(r);
	return rc;
}

int calib_paints_truth(struct calib_paints_result *r, const struct calib_truth_patch *t, int n,
		       const char *truth_path, bl_err *err)
{
	double de[CALIB_CARD_MAX_SWATCHES];
	char names[CALIB_CARD_MAX_SWATCHES][CALIB_NAME_MAX];
	int m = 0;

	for (int i = 0; i < r->n; i++) {
		struct calib_swatch_result *s = &r->s[i];
		char want[80];

		snprintf(want, sizeof(want), "%s@%g", s->paint, s->fraction);
		s->has_truth = 0;
		for (int k = 0; k < n; k++)
			if (strcmp(t[k].name, want) == 0) {
				memcpy(s->truth_lab, t[k].lab, sizeof(s->truth_lab));
				s->truth_de00 = calib_de00(s->lab, s->truth_lab);
				s->has_truth = 1;
				de[m] = s->truth_de00;
				snprintf(names[m], CALIB_NAME_MAX, "%s", want);
				m++;
				break;
			}
	}
	if (!m)
		return bl_fail(err, BL_EINVAL, "%s: none of the card's swatches is named there "
			       "(PAINT@FRACTION)", truth_path);
	r->has_truth = 1;
	calib_figures_of(de, (const char (*)[CALIB_NAME_MAX])names, m, &r->truth);
	return 0;
}

cJSON *calib_paints_json(const struct calib_paints_result *r)
{
	cJSON *j = cJSON_CreateObject(), *arr;

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "palette", r->out.name);
	cJSON_AddNumberToObject(j, "swatches", r->n);
	json_add_vec(j, "card_to_px", r->H, 9);
	if (r->has_truth)
		cJSON_AddItemToObject(j, "truth", calib_figures_json(&r->truth));
	cJSON_AddItemToObject(j, "held_out_tints", calib_figures_json(&r->heldout));
	arr = cJSON_AddArrayToObject(j, "paints");
	for (int i = 0; arr && i < r->out.n_paints; i++) {
		cJSON *p = cJSON_CreateObject();

		if (!p)
			break;
		cJSON_AddStringToObject(p, "name", r->out.paints[i].name);
		json_add_vec(p, "masstone_lab", r->out.paints[i].masstone_lab, 3);
		cJSON_AddNumberToObject(p, "tints", r->out.paints[i].n_tints);
		cJSON_AddNumberToObject(p, "model_fit_de00", r->model_de00[i]);
		cJSON_AddItemToArray(arr, p);
	}
	arr = cJSON_AddArrayToObject(j, "measured");
	for (int i = 0; arr && i < r->n; i++) {
		const struct calib_swatch_result *s = &r->s[i];
		cJSON *sj = cJSON_CreateObject();
		const int roi[4] = { s->roi.x, s->roi.y, s->roi.w, s->roi.h };

		if (!sj)
			break;
		cJSON_AddStringToObject(sj, "paint", s->paint);
		cJSON_AddNumberToObject(sj, "fraction", s->fraction);
		cJSON_AddItemToObject(sj, "roi", cJSON_CreateIntArray(roi, 4));
		json_add_vec(sj, "lab", s->lab, 3);
		json_add_vec(sj, "stddev", s->stddev, 3);
		cJSON_AddNumberToObject(sj, "pixels", (double)s->pixels);
		if (s->has_truth) {
			json_add_vec(sj, "truth_lab", s->truth_lab, 3);
			cJSON_AddNumberToObject(sj, "truth_de00", s->truth_de00);
		}
		cJSON_AddItemToArray(arr, sj);
	}
	return j;
}
