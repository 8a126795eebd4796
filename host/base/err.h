/* err.h: the error codes and message buffer that every fallible function in brushloop fills. */
#ifndef BL_BASE_ERR_H
#define BL_BASE_ERR_H

#include <stddef.h>

/*
 * Functions that can fail return 0 or one of these negative codes and fill a
 * bl_err. The code decides the process exit status at the CLI; the message is
 * for a person and names what was wrong (file, key path, value).
 */
enum {
	BL_OK = 0,
	BL_EINVAL = -1,    /* bad input: usage, malformed file, out-of-range value (exit 2) */
	BL_EIO = -2,       /* runtime failure: I/O, device, communication (exit 1) */
	BL_ENOMEM = -3,    /* out of memory (exit 1) */
	BL_ETIMEDOUT = -4, /* a bounded wait ran out (exit 1) */
	BL_EPAUSED = -5,   /* paused, waiting for an operator (exit 3) */
	BL_EBRAKE = -6,    /* stopped by a brake (exit 4) */
	BL_ESAFETY = -7,   /* safety stop: e-stop, fault, limit switch (exit 5) */
	BL_EDENIED = -8,   /* the safety gate refused an action (exit 2 at the gate) */
	BL_EDEFERRED = -9, /* needs an operator nobody can answer now: request filed (exit 3 when nothing else is left) */
	BL_ENOTSENT = -10, /* a command failed before the arm was sent anything: safe to repeat (exit 1) */
	BL_ESTORAGE = -11, /* a file could not be written: disk full, file too large, read-only (exit 1; a run pauses, exit 3) */
};

/* Process exit statuses, documented in docs/cli.md. */
enum {
	BL_EXIT_OK = 0,
	BL_EXIT_FAIL = 1,
	BL_EXIT_USAGE = 2,
	BL_EXIT_PAUSED = 3,
	BL_EXIT_BRAKE = 4,
	BL_EXIT_SAFETY = 5,
};

#define BL_ERR_MSG_MAX 1024

typedef struct bl_err {
	int code;
	char msg[BL_ERR_MSG_MAX];
} bl_err;

/*
 * Returns from the calling function when expr fails (is negative); goes on
 * when it is 0 or positive (the strict JSON readers return 1 for an optional
 * key that is absent). For functions with nothing to undo on failure.
 */
#define BL_TRY(expr)                    \
	do {                            \
		int bl_rc_ = (expr);    \
		if (bl_rc_ < 0)         \
			return bl_rc_;  \
	} while (0)

/* Fills err (which may be NULL) with code and a printf-style message; returns code. */
int bl_fail(bl_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of the message already in err; returns err->code. */
int bl_err_prefix(bl_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clears err to BL_OK and an empty message. */
void bl_err_clear(bl_err *err);

/* The exit status a CLI command returns for an error code. */
int bl_exit_status(int code);

/* A short name for an error code ("invalid input", "i/o error", ...). */
const char *bl_strerror(int code);

#endif
