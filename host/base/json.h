/* json.h: strict JSON reading over cJSON: every key must be read, types and ranges checked, errors name the file and key path. */
#ifndef BL_BASE_JSON_H
#define BL_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "base/err.h"

/* Largest JSON file brushloop reads (a plan of many strokes stays well under it). */
#define JSON_MAX_FILE_BYTES (64u << 20)

/* Most keys one object may have: seen-keys are tracked in a 64-bit mask. */
#define JSON_MAX_KEYS 64

enum { JSON_OPTIONAL = 0, JSON_REQUIRED = 1 };

/*
 * A JSON object being read. Every accessor marks the key it reads as seen;
 * json_end() then rejects any key nobody asked for, so a typo in a limit is an
 * error and never silently ignored.
 */
typedef struct json_obj {
	const cJSON *node;
	const char *file; /* shown at the start of every message */
	char path[256];   /* key path of this object: "" at the root, "limits.soft", "paints[2]" */
	uint64_t seen;
	int nkeys;
} json_obj;

/* Parses text strictly (no trailing junk); name is used in messages. */
int json_parse_text(const char *text, const char *name, cJSON **root, bl_err *err);

/* Reads and parses a file strictly, refusing files over JSON_MAX_FILE_BYTES. */
int json_parse_file(const char *path, cJSON **root, bl_err *err);

/* Starts reading node as an object at path; rejects non-objects, duplicate keys and too many keys. */
int json_obj_open(const cJSON *node, const char *file, const char *path, json_obj *o, bl_err *err);

/*
 * Accessors: return 0 when the key was read, 1 when an optional key is absent
 * (the output is left as it was, so callers preset defaults), or a negative
 * code with a message "FILE: PATH.KEY: what is wrong".
 */
int json_num(json_obj *o, const char *key, int flags, double lo, double hi, double *out,
	     bl_err *err);
int json_int(json_obj *o, const char *key, int flags, long long lo, long long hi,
	     long long *out, bl_err *err);
/* json_int into an int, for the common case of counts and small settings. */
int json_i32(json_obj *o, const char *key, int flags, int lo, int hi, int *out, bl_err *err);
int json_bool(json_obj *o, const char *key, int flags, int *out, bl_err *err);
/*
 * Strings are one rule everywhere: at most n - 1 bytes of valid UTF-8 with no
 * control character (C0, DEL, C1) and no bidirectional control (U+202E and
 * the like), so a name prints on a terminal as what it is.
 */
int json_str(json_obj *o, const char *key, int flags, char *buf, size_t n, bl_err *err);
/* The same for a string node already found (an array item); key names it in messages. */
int json_str_value(json_obj *o, const char *key, const cJSON *c, char *buf, size_t n,
		   bl_err *err);
/* 0 when s is valid UTF-8 without control or bidirectional characters, else BL_EINVAL and why. */
int json_text_check(const char *s, char *why, size_t n);
/* One of names (a NULL-terminated list); *out is the index. */
int json_enum(json_obj *o, const char *key, int flags, const char *const *names, int *out,
	      bl_err *err);
/* An array of exactly n numbers, each in [lo, hi]. */
int json_vec(json_obj *o, const char *key, int flags, int n, double lo, double hi,
	     double *out, bl_err *err);
/* A nested object. */
int json_child(json_obj *o, const char *key, int flags, json_obj *child, bl_err *err);
/* An array of at most max_items items; *arr is the array node. */
int json_array(json_obj *o, const char *key, int flags, size_t max_items, const cJSON **arr,
	       size_t *count, bl_err *err);
/* Opens the i-th item of an array read with json_array as an object ("KEY[i]"). */
int json_item_obj(json_obj *o, const char *key, const cJSON *item, size_t i, json_obj *child,
		  bl_err *err);
/* Marks a key as read without reading it (its value is validated elsewhere). */
const cJSON *json_take(json_obj *o, const char *key);

/*
 * Reads "kind" and "version" of a file's top object: kind must be exactly
 * kind and version exactly version, else a message naming what was found (a
 * version newer than this brushloop reads is called so). For formats that
 * have had one version; a format with older versions has a json_format.
 */
int json_kind(json_obj *root, const char *kind, int version, bl_err *err);
/* The version alone (a file of several kinds): an integer in [oldest, newest], refused as json_kind says. */
int json_version(json_obj *root, int oldest, int newest, long long *version, bl_err *err);

/*
 * Turns a file's top object from one version into the next, in place: adds
 * what that version's writer wrote and the older one did not, so the reader
 * reads one shape. ctx is the reader's, for what the file alone does not say
 * (the machine a state belongs to); file names it in messages.
 */
typedef int (*json_migrate_fn)(cJSON *root, const char *file, void *ctx, bl_err *err);

/*
 * A file format with versions: what its writer writes (version), the oldest
 * a reader still reads, and the steps between them: step[v - oldest] turns
 * version v into v + 1 (version - oldest of them).
 */
struct json_format {
	const char *kind;
	int version;
	int oldest;
	const json_migrate_fn *step;
};

/*
 * Opens root as a file of format f: checks its kind and version (a missing
 * or non-integer version, one older than f->oldest or newer than f->version
 * is refused naming the file and both versions, BL_EINVAL), migrates it step
 * by step to f->version, and opens it into o with kind and version read.
 */
int json_format_open(cJSON *root, const char *file, const struct json_format *f, void *ctx,
		     json_obj *o, bl_err *err);

/* For migrations: adds value under key of obj unless the key is there (then frees value). */
int json_migrate_add(cJSON *obj, const char *key, cJSON *value, bl_err *err);

/* Fails on the first key that no accessor read. */
int json_end(json_obj *o, bl_err *err);

/* Formats "FILE: PATH.KEY: message" into err and returns code. */
int json_fail(const json_obj *o, const char *key, bl_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Writes "PATH.KEY" (or "KEY" at the root) into buf. */
void json_key_path(const json_obj *o, const char *key, char *buf, size_t n);

/* Prints root as formatted JSON and writes it atomically. */
int json_write_file(const char *path, const cJSON *root, bl_err *err);

/*
 * A number read outside the strict readers (a journal line, a request) as a
 * whole number within [lo, hi]: 1 with *out set, or 0 when v is absent, not
 * a number, not finite, a fraction or out of range. Nothing else converts a
 * JSON double to an integer: past the integer's range the conversion is
 * undefined (a seq of 1e300 became -9.22e18).
 */
int json_whole(const cJSON *v, double lo, double hi, long *out);

/*
 * What changed from one JSON document to another, as a list of edits
 * (json_diff.c): ["s", PATH, VALUE] sets a key or an array item (an index
 * one past the end appends), ["d", PATH] deletes a key, ["t", PATH, N]
 * cuts an array to N items; PATH is a list of keys and indices ([] is the
 * whole document). Applying the edits to from gives to. NULL when out of
 * memory.
 */
cJSON *json_diff(const cJSON *from, const cJSON *to);
/* Applies edits from json_diff to the object doc; what names them in messages. A bad edit is BL_EINVAL. */
int json_patch(cJSON *doc, const cJSON *edits, const char *what, bl_err *err);

/* Adds an array of n numbers under key; returns the array or NULL when out of memory. */
cJSON *json_add_vec(cJSON *obj, const char *key, const double *v, int n);

#endif
