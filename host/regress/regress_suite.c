/* regress_suite.c: reading a suite file strictly and expanding it into cases (targets × seeds × strokes × loops). */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "config/machine.h"
#include "config/palette.h"
#include "regress/regress.h"

const struct regress_fig_info regress_figs[RF_N] = {
	[RF_MEAN_DE00] = { "mean_de00", "final mean CIEDE2000", "" },
	[RF_P95_DE00] = { "p95_de00", "final 95th percentile CIEDE2000", "" },
	[RF_SCIELAB_1M] = { "scielab_1m", "final S-CIELAB seen from 1 m", "" },
	[RF_PIXEL_DE00] = { "pixel_de00", "final CIEDE2000 pixel by pixel", "" },
	[RF_ARM_S] = { "arm_s", "arm time", "s" },
	[RF_PAINT_ML] = { "paint_ml", "paint", "ml" },
	[RF_MIXES_PER_COLOUR] = { "mixes_per_colour", "most mixes of one colour", "" },
};

const char *const regress_loop_names[RL_N + 1] = { [RL_CLOSED] = "closed", [RL_OPEN] = "open",
						   [RL_N] = NULL };

/* What an entry of "cases" says, starting from what the top of the suite says for all. */
struct entry {
	char group[64];
	char machine[REGRESS_PATH_MAX], palette[REGRESS_PATH_MAX];
	long seeds[REGRESS_MAX_LIST];
	int n_seeds;
	int strokes[REGRESS_MAX_LIST];
	int n_strokes;
	int loops[RL_N]; /* 1 for each loop to run */
	int colours, accept_nearest, refill;
	struct regress_limits lim;
};

/* path as given, or under base when relative. */
static int resolve(const struct regress_suite *s, const char *given, char *out, size_t n,
		   bl_err *err)
{
	if (given[0] == '/') {
		if (snprintf(out, n, "%s", given) >= (int)n)
			return bl_fail(err, BL_EINVAL, "%s: path too long: %s", s->path, given);
		return 0;
	}
	return fs_join(out, n, s->base_dir, given, err);
}

static int read_limits(json_obj *o, struct regress_limits *lim, bl_err *err)
{
	json_obj t, b;
	int rc = json_child(o, "thresholds", JSON_OPTIONAL, &t, err);

	if (rc)
		return rc < 0 ? rc : 0;
	for (int f = 0; f < RF_N; f++) {
		rc = json_num(&t, regress_figs[f].key, JSON_OPTIONAL, 0, 1e12, &lim->max[f], err);
		if (rc < 0)
			return rc;
		lim->has_max[f] |= rc == 0;
	}
	BL_TRY(json_bool(&t, "finished", JSON_OPTIONAL, &lim->finished, err));
	rc = json_child(&t, "worse_than_baseline", JSON_OPTIONAL, &b, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		for (int f = 0; f < RF_N; f++) {
			int r2 = json_num(&b, regress_figs[f].key, JSON_OPTIONAL, 0, 1e12,
					  &lim->tol[f], err);

			if (r2 < 0)
				return r2;
			lim->has_tol[f] |= r2 == 0;
		}
		BL_TRY(json_end(&b, err));
	}
	return json_end(&t, err);
}

/* An array of integers in [lo, hi] under key (absent: out left as it was). */
static int read_ints(json_obj *o, const char *key, long lo, long hi, long *out, int *n,
		     bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc = json_array(o, key, JSON_OPTIONAL, REGRESS_MAX_LIST, &arr, &count, err);

	if (rc)
		return rc < 0 ? rc : 0;
	if (count == 0)
		return json_fail(o, key, err, BL_EINVAL, "is empty");
	cJSON_ArrayForEach(it, arr) {
		char k[80];

		snprintf(k, sizeof(k), "%s[%zu]", key, i);
		if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble))
			return json_fail(o, k, err, BL_EINVAL, "must be a whole number");
		if (it->valuedouble < (double)lo || it->valuedouble > (double)hi)
			return json_fail(o, k, err, BL_EINVAL, "%g is out of range [%ld, %ld]",
					 it->valuedouble, lo, hi);
		out[i++] = (long)it->valuedouble;
	}
	*n = (int)count;
	return 0;
}

static int read_loops(json_obj *o, int loops[RL_N], bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;
	int rc = json_array(o, "loops", JSON_OPTIONAL, RL_N * 4, &arr, &count, err);

	if (rc)
		return rc < 0 ? rc : 0;
	if (count == 0)
		return json_fail(o, "loops", err, BL_EINVAL, "is empty");
	memset(loops, 0, sizeof(int) * RL_N);
	cJSON_ArrayForEach(it, arr) {
		char k[32];
		int l;

		snprintf(k, sizeof(k), "loops[%zu]", i++);
		for (l = 0; l < RL_N; l++)
			if (cJSON_IsString(it) && !strcmp(it->valuestring, regress_loop_names[l]))
				break;
		if (l == RL_N)
			return json_fail(o, k, err, BL_EINVAL, "must be \"closed\" or \"open\"");
		if (loops[l])
			return json_fail(o, k, err, BL_EINVAL, "\"%s\" is named twice",
					 regress_loop_names[l]);
		loops[l] = 1;
	}
	return 0;
}

/* A machine or palette file named by the suite: resolved and validated now, so a bad one is a bad suite. */
static int read_config(const struct regress_suite *s, json_obj *o, const char *key, char *out,
		       bl_err *err)
{
	char given[REGRESS_PATH_MAX];
	int rc = json_str(o, key, JSON_OPTIONAL, given, sizeof(given), err);

	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(resolve(s, given, out, REGRESS_PATH_MAX, err));
	if (!strcmp(key, "machine")) {
		struct machine *m = calloc(1, sizeof(*m));

		if (!m)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		rc = machine_load(out, m, err);
		free(m);
	} else {
		struct palette *p = calloc(1, sizeof(*p));

		if (!p)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		rc = palette_load(out, p, err);
		free(p);
	}
	if (rc)
		return bl_err_prefix(err, "%s: %s%s%s", s->path, o->path, o->path[0] ? "." : "",
				     key);
	return 0;
}

/* The keys an entry and the top of the suite share. */
static int read_entry(const struct regress_suite *s, json_obj *o, struct entry *e, bl_err *err)
{
	long v[REGRESS_MAX_LIST];
	int n = 0;

	BL_TRY(read_config(s, o, "machine", e->machine, err));
	BL_TRY(read_config(s, o, "palette", e->palette, err));
	BL_TRY(read_ints(o, "seeds", 0, 2147483647L, e->seeds, &e->n_seeds, err));
	BL_TRY(read_ints(o, "strokes", 1, 100000, v, &n, err));
	if (n) {
		for (int i = 0; i < n; i++)
			e->strokes[i] = (int)v[i];
		e->n_strokes = n;
	}
	BL_TRY(read_loops(o, e->loops, err));
	BL_TRY(json_i32(o, "colours", JSON_OPTIONAL, 1, 32, &e->colours, err));
	BL_TRY(json_bool(o, "accept_nearest", JSON_OPTIONAL, &e->accept_nearest, err));
	BL_TRY(json_bool(o, "refill", JSON_OPTIONAL, &e->refill, err));
	return read_limits(o, &e->lim, err);
}

static int add_case(struct regress_suite *s, const struct entry *e, const char *target,
		    int si, int ki, int loop, bl_err *err)
{
	struct regress_case *c;
	const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	char stem[128];

	if (s->n >= REGRESS_MAX_CASES)
		return bl_fail(err, BL_EINVAL, "%s: more than %d cases", s->path, REGRESS_MAX_CASES);
	c = &s->cases[s->n];
	memset(c, 0, sizeof(*c));
	snprintf(stem, sizeof(stem), "%s", base);
	if (strrchr(stem, '.'))
		*strrchr(stem, '.') = '\0';
	snprintf(c->id, sizeof(c->id), "%s%s%s-s%ld-n%d-%s", e->group, e->group[0] ? "-" : "",
		 stem, e->seeds[si], e->strokes[ki], regress_loop_names[loop]);
	/* The id names a directory and a JUnit testcase: keep it to a plain alphabet. */
	for (char *p = c->id; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
			*p = '_';
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->cases[i].id, c->id))
			return bl_fail(err, BL_EINVAL,
				       "%s: two cases are both %s (%s and %s): give the entries "
				       "different \"name\"s",
				       s->path, c->id, s->cases[i].target, target);
	snprintf(c->group, sizeof(c->group), "%s", e->group);
	snprintf(c->target, sizeof(c->target), "%s", target);
	snprintf(c->machine, sizeof(c->machine), "%s", e->machine);
	snprintf(c->palette, sizeof(c->palette), "%s", e->palette);
	c->seed = e->seeds[si];
	c->strokes = e->strokes[ki];
	c->colours = e->colours;
	c->loop = (enum regress_loop)loop;
	c->accept_nearest = e->accept_nearest;
	c->refill = e->refill;
	c->lim = e->lim;
	s->n++;
	return 0;
}

static int add_target(struct regress_suite *s, const struct entry *e, const char *target,
		      bl_err *err)
{
	for (int si = 0; si < e->n_seeds; si++)
		for (int ki = 0; ki < e->n_strokes; ki++)
			for (int l = 0; l < RL_N; l++)
				if (e->loops[l])
					BL_TRY(add_case(s, e, target, si, ki, l, err));
	return 0;
}

static int is_picture(const struct dirent *d)
{
	const char *dot = strrchr(d->d_name, '.');

	return d->d_name[0] != '.' && dot &&
	       (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* A folder is every PNG and JPEG in it, in name order; anything else is one target, there or not (a missing one is that case's error). */
static int add_targets(struct regress_suite *s, json_obj *o, const struct entry *e, bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;

	BL_TRY(json_array(o, "targets", JSON_REQUIRED, REGRESS_MAX_LIST, &arr, &count, err));
	if (count == 0)
		return json_fail(o, "targets", err, BL_EINVAL, "is empty");
	cJSON_ArrayForEach(it, arr) {
		char k[32], p[REGRESS_PATH_MAX];
		struct stat sb;

		snprintf(k, sizeof(k), "targets[%zu]", i++);
		if (!cJSON_IsString(it) || !*it->valuestring)
			return json_fail(o, k, err, BL_EINVAL, "must be a file or folder name");
		BL_TRY(resolve(s, it->valuestring, p, sizeof(p), err));
		if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			struct dirent **names;
			int n = scandir(p, &names, is_picture, alphasort), rc = 0;

			if (n < 0)
				return json_fail(o, k, err, BL_EINVAL, "cannot read the folder %s", p);
			if (n == 0)
				rc = json_fail(o, k, err, BL_EINVAL, "the folder %s holds no PNG or JPEG", p);
			for (int j = 0; j < n; j++) {
				char f[REGRESS_PATH_MAX];

				if (rc == 0 && (rc = fs_join(f, sizeof(f), p, names[j]->d_name, err)) == 0)
					rc = add_target(s, e, f, err);
				free(names[j]);
			}
			free(names);
			BL_TRY(rc);
		} else {
			BL_TRY(add_target(s, e, p, err));
		}
	}
	return 0;
}

static int read_cases(struct regress_suite *s, json_obj *root, const struct entry *top,
		      bl_err *err)
{
	const cJSON *arr, *it;
	size_t count, i = 0;

	BL_TRY(json_array(root, "cases", JSON_REQUIRED, REGRESS_MAX_CASES, &arr, &count, err));
	if (count == 0)
		return json_fail(root, "cases", err, BL_EINVAL, "is empty");
	cJSON_ArrayForEach(it, arr) {
		struct entry *e = malloc(sizeof(*e));
		json_obj o;
		int rc;

		if (!e)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		*e = *top;
		if ((rc = json_item_obj(root, "cases", it, i++, &o, err)) == 0 &&
		    (rc = json_str(&o, "name", JSON_OPTIONAL, e->group, sizeof(e->group), err)) >= 0 &&
		    (rc = read_entry(s, &o, e, err)) == 0) {
			if (e->n_strokes == 0)
				rc = json_fail(&o, "strokes", err, BL_EINVAL,
					       "needed here or at the top of the suite");
			else if ((rc = add_targets(s, &o, e, err)) == 0)
				rc = json_end(&o, err);
		}
		free(e);
		BL_TRY(rc);
	}
	return 0;
}

static int set_base_dir(struct regress_suite *s, json_obj *root, bl_err *err)
{
	char given[REGRESS_PATH_MAX], dir[REGRESS_PATH_MAX], *slash;
	int rc;

	snprintf(dir, sizeof(dir), "%s", s->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (!realpath(dir, s->base_dir))
		return bl_fail(err, BL_EINVAL, "%s: cannot resolve its folder", s->path);
	rc = json_str(root, "base_dir", JSON_OPTIONAL, given, sizeof(given), err);
	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(resolve(s, given, dir, sizeof(dir), err));
	if (!realpath(dir, s->base_dir))
		return json_fail(root, "base_dir", err, BL_EINVAL, "%s is not a folder", dir);
	return 0;
}

int regress_suite_load(const char *path, struct regress_suite *s, bl_err *err)
{
	struct entry *top = NULL;
	json_obj root;
	int rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "%s", path);
	if ((rc = json_parse_file(path, &s->root, err)))
		return rc;
	s->cases = calloc(REGRESS_MAX_CASES, sizeof(*s->cases));
	top = calloc(1, sizeof(*top));
	if (!s->cases || !top) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto free_suite;
	}
	/* Defaults: seed 1, the closed loop with the nearest mix accepted, and it must finish. */
	top->seeds[0] = 1;
	top->n_seeds = 1;
	top->loops[RL_CLOSED] = 1;
	top->accept_nearest = 1;
	top->lim.finished = 1;
	top->lim.has_tol[RF_MEAN_DE00] = top->lim.has_tol[RF_P95_DE00] = 1;
	{
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

		snprintf(s->name, sizeof(s->name), "%s", base);
		if (strrchr(s->name, '.'))
			*strrchr(s->name, '.') = '\0';
	}
	if ((rc = json_obj_open(s->root, path, "", &root, err)) ||
	    (rc = json_kind(&root, "suite", 1, err)) ||
	    (rc = json_str(&root, "name", JSON_OPTIONAL, s->name, sizeof(s->name), err)) < 0 ||
	    (rc = set_base_dir(s, &root, err)) || (rc = read_entry(s, &root, top, err)) ||
	    (rc = read_cases(s, &root, top, err)) || (rc = json_end(&root, err)))
		goto free_suite;
	free(top);
	return 0;
free_suite:
	free(top);
	regress_suite_free(s);
	return rc;
}

void regress_suite_free(struct regress_suite *s)
{
	cJSON_Delete(s->root);
	free(s->cases);
	s->root = NULL;
	s->cases = NULL;
	s->n = 0;
}

int regress_suite_save(const struct regress_suite *s, const char *dir, bl_err *err)
{
	char p[REGRESS_PATH_MAX];
	cJSON *copy = cJSON_Duplicate(s->root, 1);
	int rc;

	if (!copy)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "base_dir");
	cJSON_AddStringToObject(copy, "base_dir", s->base_dir);
	if (!cJSON_GetObjectItemCaseSensitive(copy, "name"))
		cJSON_AddStringToObject(copy, "name", s->name);
	rc = fs_join(p, sizeof(p), dir, "suite.json", err);
	if (rc == 0)
		rc = json_write_file(p, copy, err);
	cJSON_Delete(copy);
	return rc;
}

void regress_case_argv(const struct regress_case *c, const char *bin, const char *run_dir,
		       char seed_buf[24], char strokes_buf[24], char colours_buf[24],
		       const char **argv)
{
	int n = 0;

	snprintf(seed_buf, 24, "%ld", c->seed);
	snprintf(strokes_buf, 24, "%d", c->strokes);
	snprintf(colours_buf, 24, "%d", c->colours);
	argv[n++] = bin;
	argv[n++] = "run";
	argv[n++] = c->target;
	argv[n++] = "--out";
	argv[n++] = run_dir;
	argv[n++] = "--seed";
	argv[n++] = seed_buf;
	argv[n++] = "--max-strokes";
	argv[n++] = strokes_buf;
	if (c->colours) {
		argv[n++] = "--colours";
		argv[n++] = colours_buf;
	}
	if (c->machine[0]) {
		argv[n++] = "--machine";
		argv[n++] = c->machine;
	}
	if (c->palette[0]) {
		argv[n++] = "--palette";
		argv[n++] = c->palette;
	}
	/* Someone refills: a plan that needs more paint than the wells hold may start. */
	if (c->refill)
		argv[n++] = "--refill-ok";
	if (c->loop == RL_OPEN)
		argv[n++] = "--open-loop";
	else if (c->accept_nearest)
		argv[n++] = "--accept-nearest";
	argv[n++] = "--quiet";
	argv[n] = NULL;
}
