/* machine_conn.h: the arm.connection parsers each backend defines for its own keys, and the link keys they share. */
#ifndef BL_CONFIG_MACHINE_CONN_H
#define BL_CONFIG_MACHINE_CONN_H

#include "base/json.h"
#include "config/machine.h"

/* One per arm backend of config/backends.def, defined in the backend's file; it ends the object. */
#define BL_ARM_BACKEND(ID, name, load_connection, open) \
	int load_connection(json_obj *o, struct machine_connection *c, bl_err *err);
#include "config/backends.def"
#undef BL_ARM_BACKEND

/* How a backend reaches its controller. */
enum machine_link { MACHINE_LINK_SERIAL, MACHINE_LINK_SERIAL_OR_TCP };

/*
 * The keys of a serial (or Modbus-TCP) link, with their defaults: "port" or
 * "host" ("host:port", only where link allows it), "baud", "parity",
 * "timeout_ms". backend names the backend in messages.
 */
int machine_conn_link(json_obj *o, struct machine_connection *c, enum machine_link link,
		      const char *backend, bl_err *err);

#endif
