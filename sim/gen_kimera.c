/* gen_kimera.c: build-time tool: turns the measured Kimera spectra (calib/data/kimera-spectral) into a C table for the simulator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/*
 * Usage: gen_kimera MASSTONE.json MIX1.json OUT.c
 *
 * The table keeps the measurements as measured (percent -> fraction, the
 * three repeats averaged, their standard deviation kept beside them): all
 * physics is derived at run time by sim/sim_paint.c, so what ships is the
 * data and nothing of anyone's model. A malformed input stops the build with
 * a message naming the file and entry.
 */

#define MAX_WL 512
#define MAX_PAINTS 32
#define MAX_REPEATS 8

struct acc {
	char name[64];
	int n;
	double sum[MAX_WL], sum2[MAX_WL];
};

struct paint {
	struct acc mass;
	struct acc tint;
	double tint_paint_w, tint_white_w;
};

static struct paint paints[MAX_PAINTS];
static int n_paints;
static double wl[MAX_WL];
static int n_wl;

static void die(const char *file, const char *fmt, const char *what)
{
	fprintf(stderr, "gen_kimera: %s: ", file);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(1);
}

static cJSON *load(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	char *buf;
	cJSON *root;

	if (!f)
		die(path, "cannot open%s", "");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n <= 0 || n > (64L << 20))
		die(path, "unexpected size%s", "");
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die(path, "cannot read%s", "");
	buf[n] = '\0';
	fclose(f);
	root = cJSON_ParseWithOpts(buf, NULL, 1);
	free(buf);
	if (!root || !cJSON_IsArray(root))
		die(path, "not a JSON list%s", "");
	return root;
}

static void read_wavelengths(const char *path, const cJSON *root)
{
	const cJSON *first = cJSON_GetArrayItem(root, 0), *vals, *it;
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(first, "type");
	int n = 0;

	if (!cJSON_IsString(type) || strcmp(type->valuestring, "wavelengths") != 0)
		die(path, "the first entry is not the %s list", "wavelengths");
	vals = cJSON_GetObjectItemCaseSensitive(first, "values");
	cJSON_ArrayForEach(it, vals) {
		if (!cJSON_IsNumber(it) || n >= MAX_WL)
			die(path, "bad %s value", "wavelengths");
		if (n_wl) {
			if (fabs(wl[n] - it->valuedouble) > 1e-9)
				die(path, "wavelengths differ from %s", "masstone.json");
		} else {
			wl[n] = it->valuedouble;
		}
		if (n > 0 && it->valuedouble <= wl[n - 1])
			die(path, "%s do not increase", "wavelengths");
		n++;
	}
	if (n_wl && n != n_wl)
		die(path, "wavelength count differs from %s", "masstone.json");
	if (n < 31)
		die(path, "too few %s", "wavelengths");
	n_wl = n;
}

static void add(const char *path, struct acc *a, const char *name, const cJSON *refl)
{
	const cJSON *it;
	int i = 0;

	if (a->n == 0)
		snprintf(a->name, sizeof(a->name), "%s", name);
	if (a->n >= MAX_REPEATS)
		die(path, "too many repeats of '%s'", name);
	cJSON_ArrayForEach(it, refl) {
		double v;

		if (!cJSON_IsNumber(it) || i >= n_wl)
			die(path, "bad reflectance list of '%s'", name);
		v = it->valuedouble / 100.0;
		if (!(v > 0.0 && v < 1.2))
			die(path, "reflectance of '%s' out of range", name);
		a->sum[i] += v;
		a->sum2[i] += v * v;
		i++;
	}
	if (i != n_wl)
		die(path, "reflectance of '%s' has the wrong length", name);
	a->n++;
}

static struct paint *find(const char *name, int create, const char *path)
{
	for (int i = 0; i < n_paints; i++)
		if (strcmp(paints[i].mass.name, name) == 0)
			return &paints[i];
	if (!create)
		die(path, "mix of unknown paint '%s'", name);
	if (n_paints >= MAX_PAINTS)
		die(path, "too many paints at '%s'", name);
	snprintf(paints[n_paints].mass.name, sizeof(paints[n_paints].mass.name), "%s", name);
	return &paints[n_paints++];
}

static void read_masstones(const char *path, const cJSON *root)
{
	const cJSON *e;
	int idx = 0;

	cJSON_ArrayForEach(e, root) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");

		if (idx++ == 0)
			continue;
		if (!cJSON_IsString(name) || !cJSON_IsString(type) ||
		    strcmp(type->valuestring, "masstone") != 0)
			die(path, "entry %s is not a named masstone", "");
		add(path, &find(name->valuestring, 1, path)->mass, name->valuestring,
		    cJSON_GetObjectItemCaseSensitive(e, "reflectance"));
	}
}

static void read_mixes(const char *path, const cJSON *root)
{
	const cJSON *e;
	int idx = 0;

	cJSON_ArrayForEach(e, root) {
		const cJSON *comp = cJSON_GetObjectItemCaseSensitive(e, "components"), *c;
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
		struct paint *p = NULL;
		double pw = 0.0, ww = 0.0;

		if (idx++ == 0)
			continue;
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "mix") != 0 ||
		    !cJSON_IsObject(comp))
			die(path, "entry %s is not a mix with components", "");
		cJSON_ArrayForEach(c, comp) {
			if (!cJSON_IsNumber(c) || !(c->valuedouble > 0.0))
				die(path, "bad component weight of '%s'", c->string);
			if (strcmp(c->string, "white") == 0) {
				ww = c->valuedouble;
			} else {
				if (p)
					die(path, "mix with more than one paint besides white at '%s'",
					    c->string);
				p = find(c->string, 0, path);
				pw = c->valuedouble;
			}
		}
		if (!p || ww <= 0.0)
			die(path, "mix without a paint and white%s", "");
		if (p->tint.n && (fabs(p->tint_paint_w - pw) > 1e-12 ||
				  fabs(p->tint_white_w - ww) > 1e-12))
			die(path, "repeats of the '%s' tint disagree on the weights", p->mass.name);
		p->tint_paint_w = pw;
		p->tint_white_w = ww;
		add(path, &p->tint, p->mass.name, cJSON_GetObjectItemCaseSensitive(e, "reflectance"));
	}
}

static void print_row(FILE *f, const double *v, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%.6f,%s", i % 8 ? " " : "\t\t", v[i], i % 8 == 7 || i == n - 1 ? "\n" : "");
}

static void print_acc(FILE *f, const struct acc *a)
{
	double mean[MAX_WL], sd[MAX_WL];

	for (int i = 0; i < n_wl; i++) {
		double m = a->n ? a->sum[i] / a->n : 0.0;
		double var = a->n > 1 ? (a->sum2[i] - a->n * m * m) / (a->n - 1) : 0.0;

		mean[i] = m;
		sd[i] = var > 0.0 ? sqrt(var) : 0.0;
	}
	fprintf(f, "\t  { %d,\n\t    {\n", a->n);
	print_row(f, mean, n_wl);
	fprintf(f, "\t    },\n\t    {\n");
	print_row(f, sd, n_wl);
	fprintf(f, "\t    } },\n");
}

int main(int argc, char **argv)
{
	cJSON *mass, *mix;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: gen_kimera MASSTONE.json MIX1.json OUT.c\n");
		return 2;
	}
	mass = load(argv[1]);
	read_wavelengths(argv[1], mass);
	read_masstones(argv[1], mass);
	mix = load(argv[2]);
	read_wavelengths(argv[2], mix);
	read_mixes(argv[2], mix);
	if (n_paints < 2 || strcmp(paints[0].mass.name, "white") != 0)
		die(argv[1], "expected white first and at least one other paint%s", "");
	for (int i = 1; i < n_paints; i++)
		if (!paints[i].tint.n)
			die(argv[2], "no tint with white for '%s'", paints[i].mass.name);

	f = fopen(argv[3], "w");
	if (!f)
		die(argv[3], "cannot write%s", "");
	fprintf(f,
		"/* kimera_data.c: GENERATED by sim/gen_kimera.c from calib/data/kimera-spectral; do not edit. */\n"
		"/*\n"
		" * Measured spectral reflectance of the Kimera 13-colour acrylic set, from\n"
		" * miciwan/PaintMixing (data/masstone.json, data/mix1.json):\n"
		" *\n"
		" * MIT License, Copyright (c) 2024 miciwan. Permission is hereby granted, free\n"
		" * of charge, to any person obtaining a copy of this software and associated\n"
		" * documentation files, to deal in the Software without restriction, subject\n"
		" * to the conditions in calib/data/kimera-spectral/LICENSE, whose full text\n"
		" * applies to this derived table.\n"
		" */\n"
		"#include \"sim/kimera.h\"\n\n");
	fprintf(f, "const int sim_kimera_n_wl = %d;\n\n", n_wl);
	fprintf(f, "const double sim_kimera_wl_nm[SIM_KIMERA_MAX_WL] = {\n");
	print_row(f, wl, n_wl);
	fprintf(f, "};\n\nconst int sim_kimera_n_paints = %d;\n\n", n_paints);
	fprintf(f, "const struct sim_kimera_paint sim_kimera_paints[] = {\n");
	for (int i = 0; i < n_paints; i++) {
		const struct paint *p = &paints[i];

		fprintf(f, "\t{ \"%s\", %.6f, %.6f,\n", p->mass.name, p->tint_paint_w,
			p->tint_white_w);
		print_acc(f, &p->mass);
		print_acc(f, &p->tint);
		fprintf(f, "\t},\n");
	}
	fprintf(f, "};\n");
	if (fclose(f) != 0)
		die(argv[3], "write failed%s", "");
	cJSON_Delete(mass);
	cJSON_Delete(mix);
	return 0;
}
