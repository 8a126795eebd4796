/* calib_cgats.c: ArgyllCMS's CGATS files: a chart's reference read from a .cie, .ti2 or .ti1, the chart's measurements written as a .ti3. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "calib/calib.h"
#include "color/color.h"

#define CGATS_MAX_BYTES (4u << 20)
#define CGATS_MAX_FIELDS 64
#define CGATS_MAX_TOKENS 200000

/* One word or quoted string of the file, NUL-terminated in place, with its line. */
struct cgats_tok {
	char *s;
	int line;
	int quoted;
};

/* The first table of a CGATS file: its keywords' values, its fields, its sets' values by row. */
struct cgats {
	const char *path;
	struct cgats_tok *tok;
	int n_tok;
	const char *descriptor, *originator, *created;
	int n_fields;
	const char *field[CGATS_MAX_FIELDS];
	int n_sets;
	const struct cgats_tok *data; /* n_sets * n_fields */
};

/* Splits text into words and quoted strings; '#' outside a string comments to the line's end. */
static int cgats_tokens(struct cgats *g, char *text, bl_err *err)
{
	int line = 1, cap = 0;

	for (char *p = text; *p;) {
		struct cgats_tok t = { p, line, 0 };

		if (*p == '\n' || isspace((unsigned char)*p)) {
			line += *p == '\n';
			p++;
			continue;
		}
		if (*p == '#') {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		if (*p == '"') {
			t.s = ++p;
			t.quoted = 1;
			while (*p && *p != '"' && *p != '\n')
				p++;
			if (*p != '"')
				return bl_fail(err, BL_EINVAL, "%s line %d: a string is not closed", g->path, line);
		} else {
			while (*p && !isspace((unsigned char)*p))
				p++;
		}
		if (g->n_tok == CGATS_MAX_TOKENS)
			return bl_fail(err, BL_EINVAL, "%s: more than %d words: not a chart reference", g->path,
				       CGATS_MAX_TOKENS);
		if (g->n_tok == cap) {
			struct cgats_tok *nt = realloc(g->tok, (size_t)(cap = cap ? 2 * cap : 256) * sizeof(*nt));

			if (!nt)
				return bl_fail(err, BL_ENOMEM, "out of memory");
			g->tok = nt;
		}
		g->tok[g->n_tok++] = t;
		/* Past the closing quote or the word's end (white space), which becomes its NUL. */
		if (*p) {
			line += *p == '\n';
			*p++ = '\0';
		}
	}
	return 0;
}

/* A keyword's whole-number value (NUMBER_OF_FIELDS, NUMBER_OF_SETS). */
static int cgats_count(const struct cgats *g, const struct cgats_tok *k, const struct cgats_tok *v, int max,
		       int *out, bl_err *err)
{
	char *end;
	long n = strtol(v->s, &end, 10);

	if (*end || end == v->s || n < 0 || n > max)
		return bl_fail(err, BL_EINVAL, "%s line %d: %s '%s' is not a count (0..%d)", g->path, k->line, k->s,
			       v->s, max);
	*out = (int)n;
	return 0;
}

/* The data between BEGIN_DATA and END_DATA: each set on its own line with a value per field. */
static int cgats_data(struct cgats *g, int i, int *next, int declared_sets, bl_err *err)
{
	int sets = 0;

	g->data = &g->tok[i];
	while (i < g->n_tok && strcmp(g->tok[i].s, "END_DATA") != 0) {
		int line = g->tok[i].line, k = i;

		while (k < g->n_tok && g->tok[k].line == line && strcmp(g->tok[k].s, "END_DATA") != 0)
			k++;
		if (k - i != g->n_fields)
			return bl_fail(err, BL_EINVAL, "%s line %d: %d values for the %d fields of BEGIN_DATA_FORMAT",
				       g->path, line, k - i, g->n_fields);
		sets++;
		i = k;
	}
	if (i == g->n_tok)
		return bl_fail(err, BL_EINVAL, "%s: no END_DATA after BEGIN_DATA: the file is cut short", g->path);
	if (declared_sets >= 0 && declared_sets != sets)
		return bl_fail(err, BL_EINVAL, "%s: NUMBER_OF_SETS says %d, BEGIN_DATA..END_DATA holds %d", g->path,
			       declared_sets, sets);
	g->n_sets = sets;
	*next = i + 1;
	return 0;
}

/* Reads the header and the first table; a later table (some .ti2 and .ti3 files have them) is not read. */
static int cgats_parse(struct cgats *g, bl_err *err)
{
	/*
	 * NUMBER_OF_FIELDS is read but not held against BEGIN_DATA_FORMAT:
	 * ArgyllCMS reads its own ColorChecker.ti2, which says 9 for 8 names;
	 * each data line is checked against the names instead.
	 */
	int declared_fields = -1, declared_sets = -1, have_format = 0, rc;

	if (g->n_tok == 0)
		return bl_fail(err, BL_EINVAL, "%s: empty", g->path);
	if (!isalpha((unsigned char)g->tok[0].s[0]) || g->tok[0].quoted || strcmp(g->tok[0].s, "BEGIN_DATA_FORMAT") == 0 ||
	    strncmp(g->tok[0].s, "NUMBER_OF_", 10) == 0 || (g->n_tok > 1 && g->tok[1].line == g->tok[0].line))
		return bl_fail(err, BL_EINVAL, "%s line 1: '%s' is not a CGATS file identifier alone on its line "
			       "(CTI3, IT8.7/2, ...)", g->path, g->tok[0].s);
	for (int i = 1; i < g->n_tok;) {
		const struct cgats_tok *k = &g->tok[i], *v = i + 1 < g->n_tok ? &g->tok[i + 1] : NULL;

		if (strcmp(k->s, "BEGIN_DATA_FORMAT") == 0) {
			for (i++; i < g->n_tok && strcmp(g->tok[i].s, "END_DATA_FORMAT") != 0; i++) {
				if (g->n_fields == CGATS_MAX_FIELDS)
					return bl_fail(err, BL_EINVAL, "%s: more than %d fields", g->path,
						       CGATS_MAX_FIELDS);
				g->field[g->n_fields++] = g->tok[i].s;
			}
			if (i == g->n_tok)
				return bl_fail(err, BL_EINVAL, "%s: no END_DATA_FORMAT after BEGIN_DATA_FORMAT", g->path);
			have_format = 1;
			i++;
			continue;
		}
		if (strcmp(k->s, "BEGIN_DATA") == 0) {
			if (!have_format || g->n_fields == 0)
				return bl_fail(err, BL_EINVAL, "%s line %d: BEGIN_DATA before any BEGIN_DATA_FORMAT "
					       "naming the fields", g->path, k->line);
			return cgats_data(g, i + 1, &i, declared_sets, err);
		}
		if (!v || v->line != k->line)
			return bl_fail(err, BL_EINVAL, "%s line %d: keyword %s has no value on its line", g->path,
				       k->line, k->s);
		if (strcmp(k->s, "NUMBER_OF_FIELDS") == 0)
			rc = cgats_count(g, k, v, CGATS_MAX_FIELDS, &declared_fields, err);
		else if (strcmp(k->s, "NUMBER_OF_SETS") == 0)
			rc = cgats_count(g, k, v, CALIB_MAX_PATCHES, &declared_sets, err);
		else {
			rc = 0;
			if (strcmp(k->s, "DESCRIPTOR") == 0)
				g->descriptor = v->s;
			else if (strcmp(k->s, "ORIGINATOR") == 0)
				g->originator = v->s;
			else if (strcmp(k->s, "CREATED") == 0)
				g->created = v->s;
		}
		if (rc)
			return rc;
		i += 2;
	}
	return bl_fail(err, BL_EINVAL, "%s: no BEGIN_DATA: not a CGATS table (.cie, .ti2, .ti3)", g->path);
}

static int cgats_field(const struct cgats *g, const char *name)
{
	for (int f = 0; f < g->n_fields; f++)
		if (strcmp(g->field[f], name) == 0)
			return f;
	return -1;
}

/* "A01", "D6": the row's letter and the column's number (from 1) on the chart as it lies upright. */
static int grid_location(const char *s, int *row, int *col)
{
	char *end;
	long c;

	if (!isupper((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return -1;
	c = strtol(s + 1, &end, 10);
	if (*end || c < 1 || c > 40)
		return -1;
	*row = s[0] - 'A';
	*col = (int)c - 1;
	return 0;
}

/* Each set's Lab, from LAB_L LAB_A LAB_B, else from XYZ_X XYZ_Y XYZ_Z (D50, white Y 100). */
static int set_lab(const struct cgats *g, int s, const int *fl, const int *fx, double lab[3], bl_err *err)
{
	const int *f = fl[0] >= 0 ? fl : fx;
	double v[3];

	for (int k = 0; k < 3; k++) {
		const struct cgats_tok *t = &g->data[s * g->n_fields + f[k]];
		char *end;

		v[k] = strtod(t->s, &end);
		if (*end || end == t->s || !isfinite(v[k]))
			return bl_fail(err, BL_EINVAL, "%s line %d: %s '%s' is not a number", g->path, t->line,
				       g->field[f[k]], t->s);
	}
	if (f == fl)
		memcpy(lab, v, sizeof(v));
	else {
		color_xyz x = { v[0], v[1], v[2] };
		color_lab l;

		if (v[1] < 0)
			return bl_fail(err, BL_EINVAL, "%s line %d: XYZ_Y %g is negative", g->path,
				       g->data[s * g->n_fields + f[1]].line, v[1]);
		color_xyz_to_lab(&x, &l);
		lab[0] = l.L;
		lab[1] = l.a;
		lab[2] = l.b;
	}
	if (lab[0] < 0.0 || lab[0] > 100.0)
		return bl_fail(err, BL_EINVAL, "%s line %d: L %g is outside 0..100", g->path,
			       g->data[s * g->n_fields + f[0]].line, lab[0]);
	return 0;
}

/*
 * What a .ti1 (CTI1) lacks, said after a refusal: it is targen's list of
 * patches to print, placed on no chart (printtarg's .ti2 places them), its
 * XYZ only what targen expects, when there at all.
 */
static const char *ti1_hint(const struct cgats *g)
{
	return strcmp(g->tok[0].s, "CTI1") == 0 ? " (a .ti1 is targen's list of patches to print: printtarg's .ti2 "
		"places them on the printed chart, and a measured .ti3 or .cie gives their colours)" : "";
}

/* The table as a chart: each set's grid location places it, row by row from the top left. */
static int cgats_chart(const struct cgats *g, struct calib_chart *c, bl_err *err)
{
	int loc = cgats_field(g, "SAMPLE_LOC"), name = cgats_field(g, "SAMPLE_NAME"), rc;
	const int fl[3] = { cgats_field(g, "LAB_L"), cgats_field(g, "LAB_A"), cgats_field(g, "LAB_B") };
	const int fx[3] = { cgats_field(g, "XYZ_X"), cgats_field(g, "XYZ_Y"), cgats_field(g, "XYZ_Z") };
	int at[CALIB_MAX_PATCHES];

	if (loc < 0)
		loc = cgats_field(g, "SAMPLE_ID");
	if (loc < 0)
		return bl_fail(err, BL_EINVAL, "%s: no SAMPLE_LOC or SAMPLE_ID field: where each patch lies "
			       "is not said", g->path);
	if ((fl[0] < 0 || fl[1] < 0 || fl[2] < 0) && (fx[0] < 0 || fx[1] < 0 || fx[2] < 0))
		return bl_fail(err, BL_EINVAL, "%s: no LAB_L, LAB_A, LAB_B or XYZ_X, XYZ_Y, XYZ_Z fields: no "
			       "reference colours%s", g->path, ti1_hint(g));
	if (g->n_sets < 4)
		return bl_fail(err, BL_EINVAL, "%s: %d patches: a chart has at least 4", g->path, g->n_sets);
	c->rows = c->cols = 0;
	for (int s = 0; s < g->n_sets; s++) {
		const struct cgats_tok *t = &g->data[s * g->n_fields + loc];
		int row, col;

		if (grid_location(t->s, &row, &col))
			return bl_fail(err, BL_EINVAL, "%s line %d: %s '%s' is not a grid location like A01 (row "
				       "letter from the top, column number from the left): the chart's layout is "
				       "needed; give a chart file (JSON) for this chart%s", g->path, t->line,
				       g->field[loc], t->s, ti1_hint(g));
		c->rows = row + 1 > c->rows ? row + 1 : c->rows;
		c->cols = col + 1 > c->cols ? col + 1 : c->cols;
	}
	if (c->rows < 2 || c->cols < 2 || c->rows * c->cols != g->n_sets)
		return bl_fail(err, BL_EINVAL, "%s: %d patches do not fill the %d x %d grid their locations span",
			       g->path, g->n_sets, c->cols, c->rows);
	c->n = g->n_sets;
	for (int i = 0; i < c->n; i++)
		at[i] = -1;
	for (int s = 0; s < g->n_sets; s++) {
		const struct cgats_tok *t = &g->data[s * g->n_fields + loc];
		int row = 0, col = 0, i;

		grid_location(t->s, &row, &col);
		i = row * c->cols + col;
		if (at[i] >= 0)
			return bl_fail(err, BL_EINVAL, "%s line %d: %s '%s' is there twice", g->path, t->line,
				       g->field[loc], t->s);
		at[i] = s;
		if ((rc = set_lab(g, s, fl, fx, c->lab[i], err)))
			return rc;
		snprintf(c->patch[i], CALIB_NAME_MAX, "%s", g->data[s * g->n_fields + (name >= 0 ? name : loc)].s);
		for (int k = 0; k < c->n; k++)
			if (k != i && at[k] >= 0 && strcmp(c->patch[k], c->patch[i]) == 0)
				return bl_fail(err, BL_EINVAL, "%s line %d: patch '%s' is named twice", g->path,
					       t->line, c->patch[i]);
		if (!c->patch[i][0])
			return bl_fail(err, BL_EINVAL, "%s line %d: a patch without a name", g->path, t->line);
	}
	return 0;
}

int calib_chart_load_cgats(const char *path, struct calib_chart *c, bl_err *err)
{
	struct cgats g = { .path = path };
	const char *base = strrchr(path, '/');
	char *text = NULL;
	size_t len;
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = fs_read_file(path, CGATS_MAX_BYTES, &text, &len, err)))
		return rc;
	if (strlen(text) != len) {
		rc = bl_fail(err, BL_EINVAL, "%s: a NUL byte: not a CGATS text file", path);
		goto out_free;
	}
	if ((rc = cgats_tokens(&g, text, err)) || (rc = cgats_parse(&g, err)) || (rc = cgats_chart(&g, c, err)))
		goto out_free;
	snprintf(c->name, sizeof(c->name), "%s", g.descriptor && *g.descriptor ? g.descriptor : base ? base + 1 : path);
	snprintf(c->source, sizeof(c->source), "%s (CGATS %s%s%s%s%s)", path, g.tok[0].s,
		 g.originator ? ", from " : "", g.originator ? g.originator : "", g.created ? ", " : "",
		 g.created ? g.created : "");
	/* CGATS says nothing of the chart's look: taken as a ColorChecker's, patches on a dark surround. */
	c->patch_fraction = 0.8;
	c->dark_frame = 1;
out_free:
	free(g.tok);
	free(text);
	return rc;
}

/* A CGATS string is quoted; a quote inside one would end it. */
static void unquote(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src);
	for (char *q = dst; *q; q++)
		if (*q == '"' || *q == '\n')
			*q = '\'';
}

char *calib_ti3_text(const struct calib_camera_result *r, const struct calib_chart *c)
{
	strbuf sb;
	char now[32], chart[sizeof(c->name)];

	calib_now_iso(now, sizeof(now));
	unquote(chart, sizeof(chart), c->name);
	sb_init(&sb);
	sb_printf(&sb, "CTI3\n\nDESCRIPTOR \"brushloop calib camera: chart %s\"\nORIGINATOR \"brushloop "
		  BL_VERSION "\"\nCREATED \"%s\"\nDEVICE_CLASS \"INPUT\"\nCOLOR_REP \"LAB_RGB\"\n\n"
		  "NUMBER_OF_FIELDS 8\nBEGIN_DATA_FORMAT\n"
		  "SAMPLE_ID SAMPLE_NAME RGB_R RGB_G RGB_B LAB_L LAB_A LAB_B\nEND_DATA_FORMAT\n\n"
		  "NUMBER_OF_SETS %d\nBEGIN_DATA\n", chart, now, r->n);
	for (int i = 0; i < r->n; i++) {
		const struct calib_patch *p = &r->p[i];
		char name[CALIB_NAME_MAX];

		unquote(name, sizeof(name), p->name);
		sb_printf(&sb, "%d \"%s\" %.6f %.6f %.6f %.4f %.4f %.4f\n", i + 1, name, 100 * p->v[0],
			  100 * p->v[1], 100 * p->v[2], p->ref_lab[0], p->ref_lab[1], p->ref_lab[2]);
	}
	sb_printf(&sb, "END_DATA\n");
	return sb_take(&sb);
}
