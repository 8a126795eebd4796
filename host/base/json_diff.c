/* json_diff.c: what changed between two JSON documents as a list of edits, and the edits applied again: how the journal carries each state.json saved. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

/* Deepest path an edit may name: state.json is five levels deep; a hostile list goes no deeper. */
#define DIFF_MAX_DEPTH 16
/* Most items an edit may add to an array at once (state.json's longest is the plan's subtasks). */
#define DIFF_MAX_INDEX 10000000

static int add_op(cJSON *ops, const char *op, const cJSON *path, cJSON *arg)
{
	cJSON *o = cJSON_CreateArray(), *p = cJSON_Duplicate(path, 1);

	if (!o || !p || !cJSON_AddItemToArray(o, cJSON_CreateString(op)) || !cJSON_AddItemToArray(o, p)) {
		cJSON_Delete(o);
		cJSON_Delete(p);
		cJSON_Delete(arg);
		return -1;
	}
	if (arg && !cJSON_AddItemToArray(o, arg)) {
		cJSON_Delete(o);
		cJSON_Delete(arg);
		return -1;
	}
	return cJSON_AddItemToArray(ops, o) ? 0 : -1;
}

/* path with key (a string) or index (key NULL) pushed; popped by the caller with pop(). */
static int push(cJSON *path, const char *key, int index)
{
	cJSON *k = key ? cJSON_CreateString(key) : cJSON_CreateNumber(index);

	return k && cJSON_AddItemToArray(path, k) ? 0 : -1;
}

static void pop(cJSON *path)
{
	cJSON_DeleteItemFromArray(path, cJSON_GetArraySize(path) - 1);
}

static int diff(const cJSON *a, const cJSON *b, cJSON *path, cJSON *ops)
{
	const cJSON *c;
	int rc = 0;

	if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
		for (c = b->child; c && !rc; c = c->next) {
			const cJSON *old = cJSON_GetObjectItemCaseSensitive(a, c->string);

			if ((rc = push(path, c->string, 0)))
				break;
			rc = old ? diff(old, c, path, ops) : add_op(ops, "s", path, cJSON_Duplicate(c, 1));
			pop(path);
		}
		for (c = a->child; c && !rc; c = c->next) {
			if (cJSON_GetObjectItemCaseSensitive(b, c->string))
				continue;
			if ((rc = push(path, c->string, 0)))
				break;
			rc = add_op(ops, "d", path, NULL);
			pop(path);
		}
		return rc;
	}
	if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
		int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b), i = 0;
		const cJSON *x = a->child, *y = b->child;

		/* Item by item; what b adds is appended (an index at the end), what it drops cut off. */
		for (; y && !rc; i++, y = y->next, x = x ? x->next : NULL) {
			if ((rc = push(path, NULL, i)))
				break;
			rc = x ? diff(x, y, path, ops) : add_op(ops, "s", path, cJSON_Duplicate(y, 1));
			pop(path);
		}
		if (!rc && nb < na)
			rc = add_op(ops, "t", path, cJSON_CreateNumber(nb));
		return rc;
	}
	if (!cJSON_Compare(a, b, 1))
		return add_op(ops, "s", path, cJSON_Duplicate(b, 1));
	return 0;
}

cJSON *json_diff(const cJSON *from, const cJSON *to)
{
	cJSON *ops = cJSON_CreateArray(), *path = cJSON_CreateArray();

	if (!ops || !path || diff(from, to, path, ops)) {
		cJSON_Delete(ops);
		ops = NULL;
	}
	cJSON_Delete(path);
	return ops;
}

/* An index into an array of n items from a path element: 0..n (n only where an item may be added). */
static int index_of(const cJSON *k, int n, int add, int *out)
{
	double v;

	if (!cJSON_IsNumber(k))
		return -1;
	v = k->valuedouble;
	if (!isfinite(v) || v != floor(v) || v < 0 || v > (add ? n : n - 1) || v > DIFF_MAX_INDEX)
		return -1;
	*out = (int)v;
	return 0;
}

static int apply_one(cJSON *doc, const cJSON *op, int k, const char *what, bl_err *err)
{
	const char *kind = cJSON_GetStringValue(cJSON_GetArrayItem(op, 0));
	const cJSON *path = cJSON_GetArrayItem(op, 1), *arg = cJSON_GetArrayItem(op, 2), *key;
	int n = cJSON_GetArraySize(path), i = 0, ops = cJSON_GetArraySize(op), idx;
	cJSON *at = doc;

	if (!kind || !cJSON_IsArray(path) || n > DIFF_MAX_DEPTH || (kind[0] == 'd') != (ops == 2) ||
	    (kind[0] != 'd' && ops != 3) || strlen(kind) != 1 || !strchr("sdt", kind[0]))
		return bl_fail(err, BL_EINVAL, "%s: edit %d is not [\"s\"|\"d\"|\"t\", PATH, ...]", what, k);
	if (n == 0) {
		/* The whole document replaced: only by an object, as every state is. */
		if (kind[0] != 's' || !cJSON_IsObject(arg))
			return bl_fail(err, BL_EINVAL, "%s: edit %d replaces the document with no object", what, k);
		while (doc->child)
			cJSON_Delete(cJSON_DetachItemViaPointer(doc, doc->child));
		for (const cJSON *c = arg->child; c; c = c->next)
			cJSON_AddItemToObject(doc, c->string, cJSON_Duplicate(c, 1));
		return 0;
	}
	/* Down to the container of the last step. */
	for (key = path->child; i < n - 1; i++, key = key->next) {
		if (cJSON_IsObject(at) && cJSON_IsString(key))
			at = cJSON_GetObjectItemCaseSensitive(at, key->valuestring);
		else if (cJSON_IsArray(at) && index_of(key, cJSON_GetArraySize(at), 0, &idx) == 0)
			at = cJSON_GetArrayItem(at, idx);
		else
			at = NULL;
		if (!at)
			return bl_fail(err, BL_EINVAL, "%s: edit %d: its path leads nowhere (step %d)", what, k, i + 1);
	}
	if (cJSON_IsObject(at) && cJSON_IsString(key)) {
		if (kind[0] == 'd') {
			if (!cJSON_GetObjectItemCaseSensitive(at, key->valuestring))
				return bl_fail(err, BL_EINVAL, "%s: edit %d deletes a key that is not there", what, k);
			cJSON_DeleteItemFromObjectCaseSensitive(at, key->valuestring);
			return 0;
		}
		if (kind[0] == 's') {
			cJSON *v = cJSON_Duplicate(arg, 1);

			if (!v)
				return bl_fail(err, BL_ENOMEM, "out of memory");
			if (cJSON_GetObjectItemCaseSensitive(at, key->valuestring))
				cJSON_ReplaceItemInObjectCaseSensitive(at, key->valuestring, v);
			else
				cJSON_AddItemToObject(at, key->valuestring, v);
			return 0;
		}
		at = cJSON_GetObjectItemCaseSensitive(at, key->valuestring);
		if (!cJSON_IsArray(at) || index_of(arg, cJSON_GetArraySize(at), 0, &idx) < 0)
			return bl_fail(err, BL_EINVAL, "%s: edit %d cuts no array", what, k);
		while (cJSON_GetArraySize(at) > idx)
			cJSON_DeleteItemFromArray(at, cJSON_GetArraySize(at) - 1);
		return 0;
	}
	if (cJSON_IsArray(at) && kind[0] == 's' && index_of(key, cJSON_GetArraySize(at), 1, &idx) == 0) {
		cJSON *v = cJSON_Duplicate(arg, 1);

		if (!v)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if (idx == cJSON_GetArraySize(at))
			cJSON_AddItemToArray(at, v);
		else
			cJSON_ReplaceItemInArray(at, idx, v);
		return 0;
	}
	if (cJSON_IsArray(at) && kind[0] == 't' && index_of(key, cJSON_GetArraySize(at), 0, &idx) == 0) {
		cJSON *inner = cJSON_GetArrayItem(at, idx);

		if (!cJSON_IsArray(inner) || index_of(arg, cJSON_GetArraySize(inner), 0, &idx) < 0)
			return bl_fail(err, BL_EINVAL, "%s: edit %d cuts no array", what, k);
		while (cJSON_GetArraySize(inner) > idx)
			cJSON_DeleteItemFromArray(inner, cJSON_GetArraySize(inner) - 1);
		return 0;
	}
	return bl_fail(err, BL_EINVAL, "%s: edit %d: its last step is no key or index of what is there",
		       what, k);
}

int json_patch(cJSON *doc, const cJSON *edits, const char *what, bl_err *err)
{
	const cJSON *op;
	int k = 0, rc;

	if (!cJSON_IsObject(doc) || !cJSON_IsArray(edits))
		return bl_fail(err, BL_EINVAL, "%s: the edits are not a list", what);
	cJSON_ArrayForEach(op, edits) {
		if (!cJSON_IsArray(op))
			return bl_fail(err, BL_EINVAL, "%s: edit %d is not a list", what, k);
		if ((rc = apply_one(doc, op, k++, what, err)))
			return rc;
	}
	return 0;
}
