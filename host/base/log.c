/* log.c: messages for a person on stderr. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

static enum log_level min_level = LOG_INFO;

void log_set_level(enum log_level level)
{
	min_level = level;
}

enum log_level log_get_level(void)
{
	return min_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "debug: ", "", "warning: ", "error: " };
	va_list ap;

	if (level < min_level)
		return;
	fprintf(stderr, "brushloop: %s", names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
