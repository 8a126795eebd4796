/* egress.c: the egress policy: its strict reader, and the checks the broker makes on every name and destination. */
#include "sandbox/sbx_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostport.h"
#include "base/json.h"

static int read_dns(json_obj *root, struct egress_policy *out, bl_err *err)
{
	json_obj dns;
	const cJSON *arr, *it;
	size_t n = 0;
	int rc = json_child(root, "dns", JSON_OPTIONAL, &dns, err);

	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(json_i32(&dns, "max_label_length", JSON_OPTIONAL, 1, 63, &out->max_label_length, err));
	BL_TRY(json_i32(&dns, "rate_limit_per_minute", JSON_OPTIONAL, 1, 10000,
			&out->rate_limit_per_minute, err));
	rc = json_array(&dns, "allow_domains", JSON_OPTIONAL, EGRESS_MAX_DOMAINS, &arr, &n, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char key[40], *d = out->domains[i];

		it = cJSON_GetArrayItem(arr, (int)i);
		snprintf(key, sizeof(key), "allow_domains[%zu]", i);
		BL_TRY(json_str_value(&dns, key, it, d, sizeof(out->domains[0]), err));
		for (char *c = d; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (!hostport_name_ok(strncmp(d, "*.", 2) == 0 ? d + 2 : d, 63))
			return json_fail(&dns, key, err, BL_EINVAL,
					 "\"%s\" is not a host name or \"*.\" and one", d);
		out->n_domains++;
	}
	return json_end(&dns, err);
}

static int read_https(json_obj *root, struct egress_policy *out, bl_err *err)
{
	json_obj https;
	const cJSON *arr;
	size_t n = 0;
	int rc = json_child(root, "https", JSON_OPTIONAL, &https, err);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = json_array(&https, "allow_destinations", JSON_OPTIONAL, EGRESS_MAX_DEST, &arr, &n, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		char key[48], host[256], *d = out->dest[i];
		int port;

		snprintf(key, sizeof(key), "allow_destinations[%zu]", i);
		BL_TRY(json_str_value(&https, key, cJSON_GetArrayItem(arr, (int)i), d,
				      sizeof(out->dest[0]), err));
		for (char *c = d; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		if (hostport_split(d, host, sizeof(host), &port) || !hostport_name_ok(host, 63))
			return json_fail(&https, key, err, BL_EINVAL,
					 "\"%s\" is not \"host:port\" (port 1 to 65535)", d);
		out->n_dest++;
	}
	return json_end(&https, err);
}

int egress_policy_from_json(const cJSON *j, const char *where, struct egress_policy *out,
			    bl_err *err)
{
	static const char *const defaults[] = { "deny", NULL };
	json_obj o;
	int def = -1;

	memset(out, 0, sizeof(*out));
	out->max_label_length = 40;
	out->rate_limit_per_minute = 30;
	BL_TRY(json_obj_open(j, where, "planner.egress", &o, err));
	/* Required, so a policy says in words that everything not listed is refused. */
	BL_TRY(json_enum(&o, "default", JSON_REQUIRED, defaults, &def, err));
	BL_TRY(read_dns(&o, out, err));
	BL_TRY(read_https(&o, out, err));
	return json_end(&o, err);
}

/* A name against one allow_domains entry: exact, or "*.suffix" for names below suffix (not suffix itself). */
static int domain_match(const char *pat, const char *name)
{
	size_t pl, nl;

	if (strncmp(pat, "*.", 2) != 0)
		return strcmp(pat, name) == 0;
	pl = strlen(pat + 1); /* ".suffix" */
	nl = strlen(name);
	return nl > pl && strcmp(name + nl - pl, pat + 1) == 0;
}

int egress_check_name(const struct egress_policy *pol, const char *name, char *why, size_t n)
{
	size_t label = 0;

	for (const char *c = name;; c++) {
		if (*c == '.' || *c == '\0') {
			if ((int)label > pol->max_label_length) {
				snprintf(why, n, "label longer than %d", pol->max_label_length);
				return BL_EDENIED;
			}
			label = 0;
			if (!*c)
				break;
		} else {
			label++;
		}
	}
	if (!hostport_name_ok(name, 63)) {
		snprintf(why, n, "not a host name");
		return BL_EDENIED;
	}
	for (int i = 0; i < pol->n_domains; i++)
		if (domain_match(pol->domains[i], name))
			return 0;
	snprintf(why, n, "name not on the allowlist");
	return BL_EDENIED;
}

int egress_dest_listed(const struct egress_policy *pol, const char *name, int port)
{
	char host[256];
	int p;

	for (int i = 0; i < pol->n_dest; i++)
		if (!hostport_split(pol->dest[i], host, sizeof(host), &p) && p == port &&
		    strcmp(host, name) == 0)
			return 1;
	return 0;
}
