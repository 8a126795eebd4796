/* hostport.c: "host:port" destinations and DNS host names, read one way by the grant, the egress policy and its broker. */
#include "base/hostport.h"

#include <ctype.h>
#include <string.h>

int hostport_split(const char *dest, char *host, size_t n, int *port)
{
	const char *colon = strrchr(dest, ':');
	long p = 0;

	if (!colon || colon == dest || (size_t)(colon - dest) >= n)
		return -1;
	/* strtol would take a sign, spaces and "0443": a port is written one way. */
	if (colon[1] == '0' || strlen(colon + 1) > 5)
		return -1;
	for (const char *c = colon + 1; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return -1;
		p = p * 10 + (*c - '0');
	}
	if (p < 1 || p > 65535)
		return -1;
	for (size_t i = 0; i < (size_t)(colon - dest); i++)
		host[i] = (char)tolower((unsigned char)dest[i]);
	host[colon - dest] = '\0';
	*port = (int)p;
	return 0;
}

int hostport_name_ok(const char *name, int max_label)
{
	size_t len = strlen(name), label = 0;

	if (len == 0 || len > 253)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char c = name[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || (int)label > max_label || name[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!(isalnum((unsigned char)c) || (c == '-' && label > 0)))
			return 0;
		label++;
	}
	return 1;
}
