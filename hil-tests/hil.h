/* hil.h: hardware-in-the-loop harness: starts the firmware target (native board on a pty, mps2-an385 in QEMU, or a real port) and talks to it. */
#ifndef BL_HIL_HIL_H
#define BL_HIL_HIL_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>

#include <modbus.h>

#include "config/machine.h"
#include "firmware/include/regmap.h"

enum hil_kind { HIL_NATIVE, HIL_QEMU, HIL_PORT };

struct hil_target {
	enum hil_kind kind;
	pid_t fw_pid;        /* native board or QEMU */
	pid_t bridge_pid;    /* socat between QEMU's socket and a pty */
	int hold_fd;         /* keeps the pty's slave open between masters */
	char tty[512];       /* what masters open */
	char dir[512];
};

/*
 * Starts the target named by $BRUSHLOOP_HIL_TARGET (native, qemu, port).
 * Exits 77 (skip), saying why, when the target is absent: no
 * $BRUSHLOOP_HIL_PORT for port, no cross-built image for qemu (unless
 * $BRUSHLOOP_HIL_REQUIRE_QEMU is set: then that is a failure). extra_args are
 * given to the native board (NULL-terminated, may be NULL).
 */
void hil_start(struct hil_target *t, const char *const *extra_args);
/* Stops the target; returns the firmware process's exit status (0 for a clean exit). */
int hil_stop(struct hil_target *t);

/* The example modbus machine, its port pointed at the target. */
void hil_machine(const struct hil_target *t, struct machine *m);

/*
 * hil-tests/NAME (a machine file whose camera is the simulator's) written to
 * the test's directory with its port PORT pointed at tty and its camera
 * profile by full path; returns the copy's path (static storage).
 */
const char *hil_machine_file(const char *name, const char *port, const char *tty);

/* How many times needle occurs in a file (-1: unreadable). */
int hil_count(const char *path, const char *needle);

/* A raw libmodbus RTU master on the target (slave 1, 1 s timeout). */
modbus_t *hil_modbus(const struct hil_target *t);

/*
 * Runs one raw libmodbus call, retrying communication errors (never
 * exceptions, which are the firmware's answer) as the host backend does: a
 * loaded test machine may delay QEMU past a response timeout.
 */
#define HIL_RETRY(mb, call)                                                        \
	({                                                                         \
		int r_ = -1;                                                       \
		for (int a_ = 0; a_ < 3; a_++) {                                   \
			r_ = (call);                                               \
			if (r_ >= 0 || (errno >= EMBXILFUN && errno <= EMBXGTAR))  \
				break;                                             \
			modbus_flush(mb);                                          \
		}                                                                  \
		r_;                                                                \
	})

/* Reads of input registers; exit(1) on a communication failure. */
uint16_t hil_in(modbus_t *mb, int addr);
uint32_t hil_in32(modbus_t *mb, int addr);
/* Writes a holding register: 0 or the errno of libmodbus. */
int hil_write(modbus_t *mb, int addr, uint16_t v);

/* Runs argv (argv[0] a path or found on PATH) with a timeout; returns the exit status, captures output. */
int hil_run(const char *const *argv, int timeout_s, char **out, char **err);

/* A path to a helper program built next to the tests (env var name, e.g. BRUSHLOOP_HIL_HOST). */
const char *hil_env(const char *name);

#endif
