/* json.c: strict JSON reading over cJSON: every key must be read, types and ranges checked, errors name the file and key path. */
#include "base/json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

static void line_col(const char *text, const char *at, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *p = text; p < at && *p; p++) {
		if (*p == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/*
 * Where text (valid JSON) escapes a NUL inside a string, or NULL. cJSON decodes
 * "\u0000" into a NUL that ends the C string, so "round-6\u0000evil" would read
 * as "round-6" and nobody would see the rest.
 */
static const char *escaped_nul(const char *text)
{
	int in_str = 0;

	for (const char *p = text; *p; p++) {
		if (!in_str) {
			in_str = *p == '"';
		} else if (*p == '"') {
			in_str = 0;
		} else if (*p == '\\') {
			if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0)
				return p;
			if (p[1])
				p++;
		}
	}
	return NULL;
}

/* Decodes one UTF-8 sequence strictly (no overlong forms, surrogates or values past U+10FFFF); 0 when invalid. */
static int utf8_next(const unsigned char *s, unsigned *cp)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		(s[0] & 0xf8) == 0xf0 ? 4 : 0;
	static const unsigned min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned v;

	if (n == 0)
		return 0;
	v = n == 1 ? s[0] : s[0] & (0x7fu >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Marks that reorder what a terminal shows (U+202E makes "gpj.exe" print as "exe.jpg"). */
static int bidi_control(unsigned cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

int json_text_check(const char *s, char *why, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned cp;
		int len = utf8_next(p, &cp);

		if (len == 0) {
			snprintf(why, n, "is not valid UTF-8 (byte %zu)", (size_t)(p - (const unsigned char *)s));
			return BL_EINVAL;
		}
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			snprintf(why, n, "contains a control character (U+%04X)", cp);
			return BL_EINVAL;
		}
		if (bidi_control(cp)) {
			snprintf(why, n, "contains a bidirectional control character (U+%04X)", cp);
			return BL_EINVAL;
		}
		p += len;
	}
	return 0;
}

int json_parse_text(const char *text, const char *name, cJSON **root, bl_err *err)
{
	const char *end = NULL;
	cJSON *r;
	int line, col;

	*root = NULL;
	/* require_null_terminated: cJSON_Parse alone accepts trailing junk. */
	r = cJSON_ParseWithOpts(text, &end, 1);
	if (!r) {
		if (!end)
			end = text;
		line_col(text, end, &line, &col);
		if (*end == '\0')
			return bl_fail(err, BL_EINVAL, "%s: not valid JSON: unexpected end of file",
				       name);
		/* A value followed by more text: name the junk rather than a bare position. */
		r = cJSON_ParseWithOpts(text, &end, 0);
		if (r) {
			cJSON_Delete(r);
			while (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r')
				end++;
			line_col(text, end, &line, &col);
			return bl_fail(err, BL_EINVAL,
				       "%s: trailing junk after the JSON value at line %d, column %d",
				       name, line, col);
		}
		return bl_fail(err, BL_EINVAL, "%s: not valid JSON at line %d, column %d", name,
			       line, col);
	}
	end = escaped_nul(text);
	if (end) {
		cJSON_Delete(r);
		line_col(text, end, &line, &col);
		return bl_fail(err, BL_EINVAL,
			       "%s: not valid JSON for brushloop at line %d, column %d: \\u0000 (a NUL) "
			       "in a string would cut it short", name, line, col);
	}
	*root = r;
	return 0;
}

int json_parse_file(const char *path, cJSON **root, bl_err *err)
{
	char *text;
	size_t len;
	int rc;

	*root = NULL;
	rc = fs_read_file(path, JSON_MAX_FILE_BYTES, &text, &len, err);
	if (rc)
		return rc;
	if (strlen(text) != len) {
		free(text);
		return bl_fail(err, BL_EINVAL, "%s: not valid JSON: contains a NUL byte", path);
	}
	rc = json_parse_text(text, path, root, err);
	free(text);
	return rc;
}

void json_key_path(const json_obj *o, const char *key, char *buf, size_t n)
{
	if (!key || !*key)
		snprintf(buf, n, "%s", o->path[0] ? o->path : "(top level)");
	else if (o->path[0])
		snprintf(buf, n, "%s.%s", o->path, key);
	else
		snprintf(buf, n, "%s", key);
}

int json_fail(const json_obj *o, const char *key, bl_err *err, int code, const char *fmt, ...)
{
	char path[320], msg[BL_ERR_MSG_MAX];
	va_list ap;

	json_key_path(o, key, path, sizeof(path));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return bl_fail(err, code, "%s: %s: %s", o->file, path, msg);
}

static const char *type_name(const cJSON *n)
{
	if (!n)
		return "nothing";
	if (cJSON_IsNumber(n))
		return "a number";
	if (cJSON_IsString(n))
		return "a string";
	if (cJSON_IsBool(n))
		return "a boolean";
	if (cJSON_IsNull(n))
		return "null";
	if (cJSON_IsArray(n))
		return "an array";
	if (cJSON_IsObject(n))
		return "an object";
	return "an invalid value";
}

int json_obj_open(const cJSON *node, const char *file, const char *path, json_obj *o, bl_err *err)
{
	const cJSON *a, *b;
	int n = 0;

	memset(o, 0, sizeof(*o));
	o->node = node;
	o->file = file;
	snprintf(o->path, sizeof(o->path), "%s", path ? path : "");
	if (!cJSON_IsObject(node))
		return json_fail(o, NULL, err, BL_EINVAL, "must be an object, not %s",
				 type_name(node));
	for (a = node->child; a; a = a->next) {
		char why[96];

		if (++n > JSON_MAX_KEYS)
			return json_fail(o, NULL, err, BL_EINVAL, "more than %d keys",
					 JSON_MAX_KEYS);
		/* Keys name things too (camera controls, wells): the same rule as string values. */
		if (json_text_check(a->string, why, sizeof(why)))
			return json_fail(o, NULL, err, BL_EINVAL, "a key %s", why);
		/* cJSON keeps duplicate keys and returns the first: the second would be ignored. */
		for (b = node->child; b != a; b = b->next)
			if (strcmp(a->string, b->string) == 0)
				return json_fail(o, a->string, err, BL_EINVAL,
						 "key appears more than once");
	}
	o->nkeys = n;
	return 0;
}

/* Finds key and marks it seen; NULL when absent. */
static const cJSON *find(json_obj *o, const char *key)
{
	int i = 0;

	for (const cJSON *c = o->node->child; c; c = c->next, i++) {
		if (strcmp(c->string, key) == 0) {
			o->seen |= (uint64_t)1 << i;
			return c;
		}
	}
	return NULL;
}

const cJSON *json_take(json_obj *o, const char *key)
{
	return find(o, key);
}

/* Common start of every accessor: 1 when absent and optional, <0 when absent and required. */
static int lookup(json_obj *o, const char *key, int flags, const cJSON **out, bl_err *err)
{
	const cJSON *c = find(o, key);

	*out = c;
	if (c)
		return 0;
	if (flags & JSON_REQUIRED)
		return json_fail(o, key, err, BL_EINVAL, "missing required key");
	return 1;
}

static int check_num(json_obj *o, const char *key, const cJSON *c, double lo, double hi,
		     double *out, bl_err *err)
{
	if (!cJSON_IsNumber(c))
		return json_fail(o, key, err, BL_EINVAL, "must be a number, not %s", type_name(c));
	if (!isfinite(c->valuedouble))
		return json_fail(o, key, err, BL_EINVAL, "is not a finite number");
	if (c->valuedouble < lo || c->valuedouble > hi)
		return json_fail(o, key, err, BL_EINVAL, "%g is out of range [%g, %g]",
				 c->valuedouble, lo, hi);
	*out = c->valuedouble;
	return 0;
}

int json_num(json_obj *o, const char *key, int flags, double lo, double hi, double *out,
	     bl_err *err)
{
	const cJSON *c;
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	return check_num(o, key, c, lo, hi, out, err);
}

int json_int(json_obj *o, const char *key, int flags, long long lo, long long hi,
	     long long *out, bl_err *err)
{
	const cJSON *c;
	double v;
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	if (!cJSON_IsNumber(c))
		return json_fail(o, key, err, BL_EINVAL, "must be an integer, not %s",
				 type_name(c));
	v = c->valuedouble;
	/* valueint saturates silently: check the double, and that it is whole. */
	if (!isfinite(v) || v != floor(v))
		return json_fail(o, key, err, BL_EINVAL, "must be an integer, not %g", v);
	if (v < (double)lo || v > (double)hi)
		return json_fail(o, key, err, BL_EINVAL, "%.0f is out of range [%lld, %lld]", v,
				 lo, hi);
	*out = (long long)v;
	return 0;
}

int json_whole(const cJSON *v, double lo, double hi, long *out)
{
	double x;

	if (!cJSON_IsNumber(v))
		return 0;
	x = v->valuedouble;
	/* LONG_MAX as a double rounds up past it: the bound is kept below 2^63. */
	if (!isfinite(x) || x != floor(x) || x < lo || x > hi || x < -9.2e18 || x > 9.2e18)
		return 0;
	*out = (long)x;
	return 1;
}

int json_i32(json_obj *o, const char *key, int flags, int lo, int hi, int *out, bl_err *err)
{
	long long v;
	int rc = json_int(o, key, flags, lo, hi, &v, err);

	if (rc == 0)
		*out = (int)v;
	return rc;
}

int json_bool(json_obj *o, const char *key, int flags, int *out, bl_err *err)
{
	const cJSON *c;
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	if (!cJSON_IsBool(c))
		return json_fail(o, key, err, BL_EINVAL, "must be true or false, not %s",
				 type_name(c));
	*out = cJSON_IsTrue(c);
	return 0;
}

int json_str(json_obj *o, const char *key, int flags, char *buf, size_t n, bl_err *err)
{
	const cJSON *c;
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	return json_str_value(o, key, c, buf, n, err);
}

int json_str_value(json_obj *o, const char *key, const cJSON *c, char *buf, size_t n,
		   bl_err *err)
{
	char why[96];
	size_t len;

	if (!cJSON_IsString(c))
		return json_fail(o, key, err, BL_EINVAL, "must be a string, not %s", type_name(c));
	len = strlen(c->valuestring);
	if (len >= n)
		return json_fail(o, key, err, BL_EINVAL, "is %zu characters, longer than %zu",
				 len, n - 1);
	if (json_text_check(c->valuestring, why, sizeof(why)))
		return json_fail(o, key, err, BL_EINVAL, "%s", why);
	memcpy(buf, c->valuestring, len + 1);
	return 0;
}

int json_enum(json_obj *o, const char *key, int flags, const char *const *names, int *out,
	      bl_err *err)
{
	char v[64], list[512];
	size_t used = 0;
	int rc = json_str(o, key, flags, v, sizeof(v), err);

	if (rc)
		return rc;
	for (int i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (int i = 0; names[i] && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 names[i]);
	return json_fail(o, key, err, BL_EINVAL, "'%s' is not one of: %s", v, list);
}

int json_vec(json_obj *o, const char *key, int flags, int n, double lo, double hi,
	     double *out, bl_err *err)
{
	const cJSON *c, *it;
	double tmp[64];
	int i = 0, rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	if (n > 64)
		return json_fail(o, key, err, BL_EINVAL, "internal: vector too long");
	if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != n)
		return json_fail(o, key, err, BL_EINVAL, "must be an array of %d numbers", n);
	cJSON_ArrayForEach(it, c) {
		char k[96];

		snprintf(k, sizeof(k), "%s[%d]", key, i);
		rc = check_num(o, k, it, lo, hi, &tmp[i], err);
		if (rc)
			return rc;
		i++;
	}
	memcpy(out, tmp, sizeof(double) * (size_t)n);
	return 0;
}

int json_child(json_obj *o, const char *key, int flags, json_obj *child, bl_err *err)
{
	const cJSON *c;
	char path[256];
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	json_key_path(o, key, path, sizeof(path));
	if (!o->path[0])
		snprintf(path, sizeof(path), "%s", key);
	return json_obj_open(c, o->file, path, child, err);
}

int json_array(json_obj *o, const char *key, int flags, size_t max_items, const cJSON **arr,
	       size_t *count, bl_err *err)
{
	const cJSON *c;
	size_t n = 0;
	int rc = lookup(o, key, flags, &c, err);

	if (rc)
		return rc;
	if (!cJSON_IsArray(c))
		return json_fail(o, key, err, BL_EINVAL, "must be an array, not %s", type_name(c));
	for (const cJSON *it = c->child; it; it = it->next)
		if (++n > max_items)
			return json_fail(o, key, err, BL_EINVAL, "has more than %zu items",
					 max_items);
	*arr = c;
	*count = n;
	return 0;
}

int json_item_obj(json_obj *o, const char *key, const cJSON *item, size_t i, json_obj *child,
		  bl_err *err)
{
	char path[256], k[96];

	snprintf(k, sizeof(k), "%s[%zu]", key, i);
	json_key_path(o, k, path, sizeof(path));
	return json_obj_open(item, o->file, path, child, err);
}

int json_version(json_obj *root, int oldest, int newest, long long *version, bl_err *err)
{
	long long v;
	int rc;

	if ((rc = json_int(root, "version", JSON_REQUIRED, 0, 1000000, &v, err)))
		return rc;
	if (v > newest)
		return json_fail(root, "version", err, BL_EINVAL,
				 "schema version %lld is not supported: it is newer than version %d, "
				 "the newest this brushloop reads (written by a newer brushloop)", v,
				 newest);
	if (v < oldest && oldest == newest)
		return json_fail(root, "version", err, BL_EINVAL,
				 "schema version %lld is not supported (this brushloop reads %d)", v,
				 newest);
	if (v < oldest)
		return json_fail(root, "version", err, BL_EINVAL,
				 "schema version %lld is not supported (this brushloop reads %d to %d)",
				 v, oldest, newest);
	*version = v;
	return 0;
}

/* Reads kind and version; 0 with *version when kind is kind and the version in [oldest, newest]. */
static int kind_version(json_obj *root, const char *kind, int oldest, int newest, long long *version,
			bl_err *err)
{
	char k[64];
	int rc;

	if ((rc = json_str(root, "kind", JSON_REQUIRED, k, sizeof(k), err)))
		return rc;
	if (strcmp(k, kind) != 0)
		return json_fail(root, "kind", err, BL_EINVAL, "is '%s', expected '%s'", k, kind);
	return json_version(root, oldest, newest, version, err);
}

int json_kind(json_obj *root, const char *kind, int version, bl_err *err)
{
	long long v;

	return kind_version(root, kind, version, version, &v, err);
}

int json_format_open(cJSON *root, const char *file, const struct json_format *f, void *ctx,
		     json_obj *o, bl_err *err)
{
	long long v;
	int rc;

	if ((rc = json_obj_open(root, file, "", o, err)) ||
	    (rc = kind_version(o, f->kind, f->oldest, f->version, &v, err)))
		return rc;
	for (; v < f->version; v++)
		if ((rc = f->step[v - f->oldest](root, file, ctx, err)))
			return rc;
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(root, "version"), f->version);
	/* Again: a step may have added keys, and the mask of keys read is by position. */
	if ((rc = json_obj_open(root, file, "", o, err)))
		return rc;
	json_take(o, "kind");
	json_take(o, "version");
	return 0;
}

int json_migrate_add(cJSON *obj, const char *key, cJSON *value, bl_err *err)
{
	if (!value)
		return bl_fail(err, BL_ENOMEM, "out of memory migrating a file");
	if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
		cJSON_Delete(value);
		return 0;
	}
	if (!cJSON_AddItemToObject(obj, key, value)) {
		cJSON_Delete(value);
		return bl_fail(err, BL_ENOMEM, "out of memory migrating a file");
	}
	return 0;
}

int json_end(json_obj *o, bl_err *err)
{
	int i = 0;

	for (const cJSON *c = o->node->child; c; c = c->next, i++)
		if (!(o->seen & ((uint64_t)1 << i)))
			return json_fail(o, c->string, err, BL_EINVAL, "unknown key");
	return 0;
}

int json_write_file(const char *path, const cJSON *root, bl_err *err)
{
	char *text = cJSON_Print(root);
	int rc;

	if (!text)
		return bl_fail(err, BL_ENOMEM, "%s: out of memory printing JSON", path);
	{
		size_t n = strlen(text);
		char *withnl = malloc(n + 2);

		if (!withnl) {
			cJSON_free(text);
			return bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
		}
		memcpy(withnl, text, n);
		withnl[n] = '\n';
		withnl[n + 1] = '\0';
		rc = fs_write_atomic(path, withnl, n + 1, err);
		free(withnl);
	}
	cJSON_free(text);
	return rc;
}

cJSON *json_add_vec(cJSON *obj, const char *key, const double *v, int n)
{
	cJSON *a = cJSON_AddArrayToObject(obj, key);

	if (!a)
		return NULL;
	for (int i = 0; i < n; i++) {
		cJSON *num = cJSON_CreateNumber(v[i]);

		if (!num || !cJSON_AddItemToArray(a, num)) {
			cJSON_Delete(num);
			return NULL;
		}
	}
	return a;
}
