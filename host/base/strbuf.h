/* strbuf.h: a growing string for reports and summaries (STATUS.md, config summaries). */
#ifndef BL_BASE_STRBUF_H
#define BL_BASE_STRBUF_H

#include <stddef.h>

typedef struct strbuf {
	char *s;     /* NUL-terminated; NULL after an allocation failure */
	size_t len;
	size_t cap;
} strbuf;

/* Starts an empty buffer; s is NULL if even that failed. */
void sb_init(strbuf *sb);

/* Appends printf output; after an allocation failure further calls do nothing. */
void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands the string to the caller (free it), or NULL after an allocation failure. */
char *sb_take(strbuf *sb);
/* Appends text as XML character data or an attribute value: the five markup characters, tab and newline as references, characters XML 1.0 forbids as '?'. */
void sb_xml(strbuf *sb, const char *text);

void sb_free(strbuf *sb);

/*
 * A name (a file, a directory) as it may be shown to a person, on a
 * terminal or in STATUS.md: control characters (C0, DEL, C1), the
 * invisible and bidirectional formatting characters (U+202E turns the
 * text after it around) and bytes that are not UTF-8 escaped as \n, \xNN
 * or \uNNNN; a name longer than n - 1 keeps its start and end around
 * "...". Never fails: out always ends in a NUL (n > 0).
 */
void bl_name_shown(const char *name, char *out, size_t n);

#endif
