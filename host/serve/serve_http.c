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
static const char *const common_headers[][2] = {
	{ "X-Content-Type-Options", "nosniff" },
	{ "X-Frame-Options", "DENY" },
	{ "Referrer-Policy", "no-referrer" },
	{ "Cross-Origin-Resource-Policy", "same-origin" },
	{ "Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
	  "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'" },
};

/* Adds "Name: value\r\n" lines to r; a later header of a name replaces an earlier one (a file's own CSP). */
static int add_headers(struct MHD_Response *r, const char *lines)
{
	char buf[SERVE_PATH_MAX + 512];
	char *save = NULL, *line;

	if (!lines || !*lines)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", lines) >= (int)sizeof(buf))
		return -1;
	for (line = strtok_r(buf, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save)) {
		char *colon = strchr(line, ':'), *v;

		if (!colon)
			return -1;
		*colon = '\0';
		for (v = colon + 1; *v == ' '; v++)
			;
		{
			const char *was = MHD_get_response_header(r, line);

			if (was)
				MHD_del_response_header(r, line, was);
		}
		if (MHD_add_response_header(r, line, v) != MHD_YES)
			return -1;
	}
	return 0;
}

struct MHD_Response *serve_response_headers(struct MHD_Response *r, const char *type, const char *extra)
{
	for (size_t i = 0; i < sizeof(common_headers) / sizeof(common_headers[0]); i++)
		MHD_add_response_header(r, common_headers[i][0], common_headers[i][1]);
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES || add_headers(r, extra)) {
		MHD_destroy_response(r);
		return NULL;
	}
	return r;
}

int serve_queue(struct serve_req *c, int status, struct MHD_Response *r)
{
	int ok;

	if (!r)
		return -1;
	ok = MHD_queue_response(c->mc, (unsigned int)status, r) == MHD_YES;
	MHD_destroy_response(r);
	if (ok)
		c->answered = 1;
	return ok ? 0 : -1;
}

int serve_send(struct serve_req *c, int status, const char *type, const void *body, size_t n,
	       const char *extra_headers)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);

	if (!r)
		return -1;
	return serve_queue(c, status, serve_response_headers(r, type, extra_headers));
}

int serve_send_json(struct serve_req *c, int status, cJSON *o)
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

int serve_send_error(struct serve_req *c, int status, const char *fmt, ...)
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

const char *serve_header(struct serve_req *c, const char *name)
{
	return MHD_lookup_connection_value(c->mc, MHD_HEADER_KIND, name);
}

int serve_read_json(struct serve_req *c, cJSON **out, int *status, bl_err *err)
{
	const char *type = serve_header(c, "Content-Type");

	/* A JSON body also means a cross-site page cannot send it without asking first (CORS). */
	if (!type || strncasecmp(type, "application/json", 16))
		return *status = 415, bl_fail(err, BL_EINVAL, "an answer is a JSON body (Content-Type: application/json)");
	if (c->content_length < 0 || c->content_length > SERVE_BODY_MAX)
		return *status = 413, bl_fail(err, BL_EINVAL, "a body of at most %d bytes, with its Content-Length", SERVE_BODY_MAX);
	if (c->body_n != (size_t)c->content_length)
		return *status = 400, bl_fail(err, BL_EINVAL, "the body ended after %zu of %lld bytes", c->body_n, c->content_length);
	c->body[c->body_n] = '\0';
	*out = cJSON_Parse(c->body);
	if (!*out || !cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return *status = 400, bl_fail(err, BL_EINVAL, "the body is not a JSON object");
	}
	return 0;
}

void serve_client_name(struct serve_req *c, char *out, size_t n)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const char *ua = serve_header(c, "User-Agent");
	char clean[48], addr[48] = "?";
	size_t k = 0;
	int port = 0;

	if (ci && ci->client_addr)
		serve_addr_text(ci->client_addr, addr, sizeof(addr), &port);
	/* The agent as told (it is the client's word), cut short and kept printable. */
	for (const char *p = ua ? ua : "no user agent"; *p && k + 1 < sizeof(clean); p++)
		clean[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	clean[k] = '\0';
	snprintf(out, n, "console (client %s:%d, %s)", addr, port, clean);
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

int serve_send_run_file(struct serve *s, struct serve_req *c, const struct serve_run *r,
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
