/* strbuf.c: a growing string for reports and summaries. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void sb_init(strbuf *sb)
{
	sb->cap = 256;
	sb->len = 0;
	sb->s = malloc(sb->cap);
	if (sb->s)
		sb->s[0] = '\0';
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!sb->s)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sb->cap - sb->len) {
		size_t cap = (sb->cap + (size_t)n) * 2;
		char *ns = realloc(sb->s, cap);

		if (!ns) {
			free(sb->s);
			sb->s = NULL;
			return;
		}
		sb->s = ns;
		sb->cap = cap;
		va_start(ap, fmt);
		vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
	}
	sb->len += (size_t)n;
}

char *sb_take(strbuf *sb)
{
	char *s = sb->s;

	sb->s = NULL;
	sb->len = sb->cap = 0;
	return s;
}

void sb_free(strbuf *sb)
{
	free(sb->s);
	sb->s = NULL;
	sb->len = sb->cap = 0;
}

void sb_xml(strbuf *sb, const char *text)
{
	static const char *const refs[128] = {
		['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;",
		['\''] = "&apos;", ['\n'] = "&#10;", ['\t'] = "&#9;",
	};

	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p < 128 && refs[*p])
			sb_printf(sb, "%s", refs[*p]);
		else
			sb_printf(sb, "%c", *p < 0x20 || *p == 0x7f ? '?' : *p);
	}
}
