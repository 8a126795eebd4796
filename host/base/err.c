/* err.c: filling error messages and mapping error codes to exit statuses. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int bl_fail(bl_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int bl_err_prefix(bl_err *err, const char *fmt, ...)
{
	char prefix[BL_ERR_MSG_MAX];
	char old[BL_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return BL_EINVAL;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	return err->code;
}

void bl_err_clear(bl_err *err)
{
	if (!err)
		return;
	err->code = BL_OK;
	err->msg[0] = '\0';
}

int bl_exit_status(int code)
{
	switch (code) {
	case BL_OK:
		return BL_EXIT_OK;
	case BL_EINVAL:
	case BL_EDENIED:
		return BL_EXIT_USAGE;
	case BL_EPAUSED:
	case BL_EDEFERRED:
		return BL_EXIT_PAUSED;
	case BL_EBRAKE:
		return BL_EXIT_BRAKE;
	case BL_ESAFETY:
		return BL_EXIT_SAFETY;
	default:
		return BL_EXIT_FAIL;
	}
}

const char *bl_strerror(int code)
{
	switch (code) {
	case BL_OK:
		return "ok";
	case BL_EINVAL:
		return "invalid input";
	case BL_EIO:
		return "i/o error";
	case BL_ENOMEM:
		return "out of memory";
	case BL_ETIMEDOUT:
		return "timed out";
	case BL_EPAUSED:
		return "paused for an operator";
	case BL_EBRAKE:
		return "stopped by a brake";
	case BL_ESAFETY:
		return "safety stop";
	case BL_EDENIED:
		return "denied by the safety gate";
	case BL_EDEFERRED:
		return "deferred until an operator answers";
	case BL_ENOTSENT:
		return "not sent to the arm";
	case BL_ESTORAGE:
		return "storage error";
	default:
		return "unknown error";
	}
}
