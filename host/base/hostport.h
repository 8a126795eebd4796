/* hostport.h: "host:port" destinations and DNS host names, read one way by the grant, the egress policy and its broker. */
#ifndef BL_BASE_HOSTPORT_H
#define BL_BASE_HOSTPORT_H

#include <stddef.h>

/*
 * Splits dest, "host:port", into host (lowercased: DNS names are caseless)
 * and port: the host non-empty and shorter than n, the port 1 to 65535 in
 * decimal digits with no sign, space or leading zero. 0, or -1 when dest is
 * not that (host and port are then unspecified).
 */
int hostport_split(const char *dest, char *host, size_t n, int *port);

/*
 * 1 when name is a host name as DNS has it: labels of letters, digits and
 * '-' (not first or last), each at most max_label bytes, at most 253 in all.
 */
int hostport_name_ok(const char *name, int max_label);

#endif
