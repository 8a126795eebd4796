/* strbuf.c: a growing string for reports and summaries. */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The length of the UTF-8 sequence at p (1 to 4) with its code point in *cp, or 0 when it is not one. */
static int utf8_at(const unsigned char *p, unsigned *cp)
{
	int n = p[0] >= 0xf5 ? 0 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	unsigned v = n == 4 ? p[0] & 7u : n == 3 ? p[0] & 15u : p[0] & 31u;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 63u);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if (!n || (n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Characters that change how the text around them reads without being seen. */
static int invisible(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff;
}

void bl_name_shown(const char *name, char *out, size_t n)
{
	strbuf sb;
	const unsigned char *p = (const unsigned char *)(name ? name : "");

	if (!n)
		return;
	sb_init(&sb);
	while (*p) {
		unsigned cp;
		int k = utf8_at(p, &cp);

		if (k == 1 && cp >= 0x20 && cp != 0x7f)
			sb_printf(&sb, "%c", *p);
		else if (k == 1 && (cp == '\n' || cp == '\t' || cp == '\r'))
			sb_printf(&sb, "\\%c", cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r');
		else if (k == 1 || !k)
			sb_printf(&sb, "\\x%02x", *p);
		else if (invisible(cp))
			sb_printf(&sb, "\\u%04x", cp);
		else
			sb_printf(&sb, "%.*s", k, (const char *)p);
		p += k ? k : 1;
	}
	if (!sb.s || (sb.len >= n && n < 8)) {
		snprintf(out, n, "?");
	} else if (sb.len < n) {
		memcpy(out, sb.s, sb.len + 1);
	} else {
		/* The start and the end, cut between characters: the escapes are ASCII. */
		size_t head = (n - 4) / 2, tail = n - 4 - head, t = sb.len - tail;

		while (head && (sb.s[head] & 0xc0) == 0x80)
			head--;
		while (t < sb.len && (sb.s[t] & 0xc0) == 0x80)
			t++;
		memcpy(out, sb.s, head);
		memcpy(out + head, "...", 3);
		memcpy(out + head + 3, sb.s + t, sb.len - t + 1);
	}
	sb_free(&sb);
}
