/* serve_http.c: the console's responses, request bodies and run files, never outside a run directory nor half written. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/serve_int.h"

/* Headers every response carries: nothing is framed, sniffed or sent elsewhere. */
#define SERVE_COMMON_HEADERS                                                                       \
	"X-Content-Type-Options: nosniff\r\n"                                                      \
	"X-Frame-Options: DENY\r\n"                                                                \
	"Referrer-Policy: no-referrer\r\n"                                                         \
	"Cross-Origin-Resource-Policy: same-origin\r\n"                                            \
	"Content-Security-Policy: default-src 'self'; img-src 'self' data:; "                      \
	"style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'\r\n"

static const struct {
	int status;
	const char *phrase;
} phrases[] = {
	{ 200, "OK" }, { 303, "See Other" }, { 400, "Bad Request" }, { 401, "Unauthorized" },
	{ 403, "Forbidden" }, { 404, "Not Found" }, { 405, "Method Not Allowed" },
	{ 409, "Conflict" }, { 413, "Payload Too Large" }, { 415, "Unsupported Media Type" },
	{ 429, "Too Many Requests" }, { 431, "Request Header Fields Too Large" }, { 500, "Internal Server Error" },
	{ 503, "Service Unavailable" }, { 505, "HTTP Version Not Supported" },
};

static const char *reason_phrase(int status)
{
	for (size_t i = 0; i < sizeof(phrases) / sizeof(phrases[0]); i++)
		if (phrases[i].status == status)
			return phrases[i].phrase;
	return "Error";
}

int serve_send(struct mg_connection *c, int status, const char *type, const void *body, size_t n,
	       const char *extra_headers)
{
	mg_printf(c,
		  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n" SERVE_COMMON_HEADERS
		  "%s\r\n",
		  status, reason_phrase(status), type, n, extra_headers ? extra_headers : "");
	if (n && mg_write(c, body, n) <= 0)
		return -1;
	return 0;
}

int serve_http_error(struct mg_connection *c, int status, const char *msg)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason_phrase(status));

	/* civetweb's own page writes the request's version back into its status line, headers and token with it. */
	mg_printf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
		  "Connection: close\r\n" SERVE_COMMON_HEADERS "\r\n%s",
		  status, reason_phrase(status), n, body);
	return 0;
}

int serve_send_json(struct mg_connection *c, int status, cJSON *o)
{
	char *text = cJSON_PrintUnformatted(o);
	int rc;

	cJSON_Delete(o);
	if (!text)
		return serve_send(c, 500, "text/plain; charset=utf-8", "out of memory\n", 14, NULL);
	rc = serve_send(c, status, "application/json", text, strlen(text), "Cache-Control: no-store\r\n");
	free(text);
	return rc;
}

int serve_send_error(struct mg_connection *c, int status, const char *fmt, ...)
{
	cJSON *o = cJSON_CreateObject();
	char msg[BL_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddStringToObject(o, "error", msg);
	cJSON_AddNumberToObject(o, "status", status);
	serve_send_json(c, status, o);
	return status;
}

const char *serve_header(struct mg_connection *c, const char *name)
{
	return mg_get_header(c, name);
}

int serve_read_json(struct mg_connection *c, cJSON **out, int *status, bl_err *err)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	const char *type = serve_header(c, "Content-Type");
	char buf[SERVE_BODY_MAX + 1];
	size_t got = 0;
	int n;

	/* A JSON body also means a cross-site page cannot send it without asking first (CORS). */
	if (!type || strncasecmp(type, "application/json", 16))
		return *status = 415, bl_fail(err, BL_EINVAL, "an answer is a JSON body (Content-Type: application/json)");
	if (ri->content_length < 0 || ri->content_length > SERVE_BODY_MAX)
		return *status = 413, bl_fail(err, BL_EINVAL, "a body of at most %d bytes, with its Content-Length", SERVE_BODY_MAX);
	while (got < (size_t)ri->content_length &&
	       (n = mg_read(c, buf + got, (size_t)ri->content_length - got)) > 0)
		got += (size_t)n;
	if (got != (size_t)ri->content_length)
		return *status = 400, bl_fail(err, BL_EINVAL, "the body ended after %zu of %lld bytes", got, ri->content_length);
	buf[got] = '\0';
	*out = cJSON_Parse(buf);
	if (!*out || !cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return *status = 400, bl_fail(err, BL_EINVAL, "the body is not a JSON object");
	}
	return 0;
}

void serve_client_name(struct mg_connection *c, char *out, size_t n)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	const char *ua = serve_header(c, "User-Agent");
	char clean[48];
	size_t k = 0;

	/* The agent as told (it is the client's word), cut short and kept printable. */
	for (const char *p = ua ? ua : "no user agent"; *p && k + 1 < sizeof(clean); p++)
		clean[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	clean[k] = '\0';
	snprintf(out, n, "console (client %s:%d, %s)", ri->remote_addr, ri->remote_port, clean);
}

static int segment_ok(const char *p, size_t n)
{
	if (n == 0 || p[0] == '.' || n >= SERVE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

int serve_path_ok(const char *rel, bl_err *err)
{
	int depth = 0;

	if (!*rel)
		return bl_fail(err, BL_EINVAL, "an empty path");
	for (const char *p = rel;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (!segment_ok(p, n))
			return bl_fail(err, BL_EINVAL, "%s: a path is names of letters, digits, '.', '_' and '-', none starting with '.'", rel);
		if (++depth > 4)
			return bl_fail(err, BL_EINVAL, "%s: too deep", rel);
		if (!slash)
			break;
		p = slash + 1;
	}
	/* fs_write_atomic's temporary files: only the renamed file is ever read. */
	if (strstr(rel, ".tmp."))
		return bl_fail(err, BL_EINVAL, "%s: a file being written", rel);
	return 0;
}

int serve_open_in(int dirfd, const char *rel)
{
	char buf[SERVE_PATH_MAX], *save = NULL, *seg, *next;
	int fd = dup(dirfd);

	if (fd < 0)
		return -1;
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	/* One segment at a time, none of them a symlink: a link inside a run leads nowhere. */
	for (seg = strtok_r(buf, "/", &save); seg; seg = next) {
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC, nfd;

		next = strtok_r(NULL, "/", &save);
		if (next)
			flags |= O_DIRECTORY;
		nfd = openat(fd, seg, flags);
		close(fd);
		if (nfd < 0)
			return -1;
		fd = nfd;
	}
	{
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			errno = EISDIR;
			return -1;
		}
	}
	return fd;
}

/* What a run file is, by its extension; a file of any other kind is not served. */
static const struct {
	const char *ext;
	const char *type;
	const char *headers;
} file_types[] = {
	{ ".png", "image/png", "" },
	{ ".jpg", "image/jpeg", "" },
	{ ".jpeg", "image/jpeg", "" },
	{ ".svg", "image/svg+xml", "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'\r\n" },
	/* report.html is read without JavaScript: it gets none, and nothing from elsewhere. */
	{ ".html", "text/html; charset=utf-8",
	  "Content-Security-Policy: default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'\r\n" },
	{ ".css", "text/css; charset=utf-8", "" },
	{ ".json", "application/json", "" },
	{ ".jsonl", "text/plain; charset=utf-8", "" },
	{ ".md", "text/plain; charset=utf-8", "" },
};

int serve_send_run_file(struct serve *s, struct mg_connection *c, const struct serve_run *r,
			const char *rel)
{
	const char *dot = strrchr(rel, '.'), *type = NULL, *hdr = "";
	bl_err err = { 0 };
	struct stat st;
	char *body = NULL, extra[512];
	int dfd, fd, rc;
	size_t got = 0;

	if (serve_path_ok(rel, &err))
		return serve_send_error(c, 404, "%s", err.msg);
	for (size_t i = 0; dot && i < sizeof(file_types) / sizeof(file_types[0]); i++)
		if (!strcasecmp(dot, file_types[i].ext)) {
			type = file_types[i].type;
			hdr = file_types[i].headers;
		}
	if (!type)
		return serve_send_error(c, 404, "%s: not a kind of file the console shows", rel);
	dfd = open(r->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return serve_send_error(c, 404, "run %s: %s", r->name, strerror(errno));
	fd = serve_open_in(dfd, rel);
	close(dfd);
	if (fd < 0)
		return serve_send_error(c, 404, "%s: %s", rel, errno == ELOOP ? "a symbolic link" : strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size > (off_t)SERVE_FILE_MAX) {
		close(fd);
		return serve_send_error(c, 413, "%s: larger than the console serves", rel);
	}
	/* Read whole, then sent: a file replaced meanwhile (renamed over) is still this one. */
	body = malloc((size_t)st.st_size + 1);
	if (!body) {
		close(fd);
		return serve_send_error(c, 500, "out of memory");
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, body + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	snprintf(extra, sizeof(extra), "Cache-Control: no-cache\r\n%s", hdr);
	rc = serve_send(c, 200, type, body, got, extra);
	free(body);
	return rc;
}
