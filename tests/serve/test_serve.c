/* test_serve.c: the console's HTTP layer over a socket: the token, the cookie, the Origin, read-only mode, sizes, rates and paths that try to leave a run. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/serve.h"
#include "test.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

/* A run directory with what the file routes need, a secret beside it and links that point out. */
static const char *runs_root(void)
{
	static char root[4096];
	char p[4200];

	snprintf(root, sizeof(root), "%s/runs", test_tmpdir());
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/r1", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/r1/approvals", root);
	mkdir(p, 0755);
	test_write_file("runs/r1/run.json", "{\"kind\": \"run\"}\n");
	test_write_file("runs/r1/STATUS.md", "# run r1\n");
	test_write_file("runs/r1/canvas-latest.png.tmp.123", "half written");
	test_write_file("runs/r1/world.sim", "not a kind the console shows");
	test_write_file("secret.json", "{\"secret\": true}\n");
	snprintf(p, sizeof(p), "%s/secret.json", test_tmpdir());
	{
		char link[4200];

		snprintf(link, sizeof(link), "%s/r1/link.json", root);
		CHECK(symlink(p, link) == 0);
		snprintf(link, sizeof(link), "%s/r1/approvals/up", root);
		CHECK(symlink(test_tmpdir(), link) == 0);
		/* A run directory that is a link to somewhere else under --runs. */
		snprintf(link, sizeof(link), "%s/r2", root);
		CHECK(symlink(test_tmpdir(), link) == 0);
	}
	return root;
}

static struct serve *start(int read_only)
{
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };

	o.runs_dir = runs_root();
	o.listen = "127.0.0.1:0";
	o.read_only = read_only;
	o.token = TOKEN;
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "serve_start: %s", err.msg);
	return s;
}

/* Sends raw request text and returns the status; the response in *resp (malloc'd) when asked. */
static int http(struct serve *s, const char *req, char **resp)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)serve_port(s)) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;
	size_t cap = 1 << 16, used = 0;
	char *buf = calloc(1, cap + 1);
	ssize_t n;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || !buf || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out;
	for (size_t off = 0, len = strlen(req); off < len; off += (size_t)n)
		if ((n = write(fd, req + off, len - off)) <= 0)
			goto out;
	while (used < cap && (n = read(fd, buf + used, cap - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	sscanf(buf, "HTTP/1.%*d %d", &status);
out:
	if (fd >= 0)
		close(fd);
	if (resp)
		*resp = buf;
	else
		free(buf);
	return status;
}

static int get(struct serve *s, const char *path, const char *auth)
{
	char req[8192];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: close\r\n\r\n",
		 path, serve_port(s), auth);
	return http(s, req, NULL);
}

static const char *bearer(void)
{
	return "Authorization: Bearer " TOKEN "\r\n";
}

/* A POST of body with the given extra headers (Origin, Host...) and the token. */
static int post(struct serve *s, const char *path, const char *headers, const char *body)
{
	char req[16384];

	snprintf(req, sizeof(req),
		 "POST %s HTTP/1.1\r\n%sCookie: bl_token=" TOKEN "\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		 path, headers, strlen(body), body);
	return http(s, req, NULL);
}

TEST(a_request_without_the_right_token_is_401)
{
	struct serve *s = start(0);

	CHECK(get(s, "/", "") == 401);
	CHECK(get(s, "/api/runs", "") == 401);
	CHECK(get(s, "/files/r1/STATUS.md", "") == 401);
	CHECK(get(s, "/no/such/page", "") == 401); /* nothing is told without it, not even a 404 */
	/* A wrong token is no authentication either: the same 401, nothing more. */
	CHECK(get(s, "/api/runs", "Authorization: Bearer 0123456789abcdef0123456789abcdee\r\n") == 401);
	CHECK(get(s, "/api/runs", "Cookie: bl_token=" TOKEN "0\r\n") == 401);
	CHECK(get(s, "/?token=0123456789abcdef", "") == 401);
	CHECK(get(s, "/api/runs", bearer()) == 200);
	CHECK(get(s, "/api/runs", "Cookie: other=1; bl_token=" TOKEN "\r\n") == 200);
	CHECK(serve_token_equal(TOKEN, TOKEN) && !serve_token_equal(TOKEN, TOKEN "x") &&
	      !serve_token_equal("", "") && !serve_token_equal(TOKEN, "0123456789abcdef0123456789abcdeF"));
	serve_stop(s);
}

TEST(the_first_visit_moves_the_token_into_an_httponly_strict_cookie)
{
	struct serve *s = start(0);
	char req[512], *resp = NULL;

	snprintf(req, sizeof(req), "GET /run/r1?token=" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
		 serve_port(s));
	CHECK(http(s, req, &resp) == 303);
	CHECK_STR_CONTAINS(resp, "Set-Cookie: bl_token=" TOKEN "; Path=/; HttpOnly; SameSite=Strict\r\n");
	CHECK_STR_CONTAINS(resp, "Location: /run/r1\r\n");
	free(resp);
	/* A decoded CR LF in the path cannot add a header to the redirect. */
	snprintf(req, sizeof(req), "GET /x%%0d%%0aSet-Cookie:%%20a=b?token=" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
		 serve_port(s));
	CHECK(http(s, req, &resp) == 303);
	CHECK_STR_CONTAINS(resp, "Location: /\r\n");
	CHECK(resp && !strstr(resp, "Set-Cookie: a=b"));
	free(resp);
	/* Never off the page's origin: "//host/" and "/\\host/" are other sites to a browser. */
	snprintf(req, sizeof(req), "GET //evil.example/?token=" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
		 serve_port(s));
	CHECK(http(s, req, &resp) == 303);
	CHECK_STR_CONTAINS(resp, "Location: /\r\n");
	CHECK(resp && !strstr(resp, "evil.example"));
	free(resp);
	snprintf(req, sizeof(req), "GET /%%5cevil.example/?token=" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
		 serve_port(s));
	CHECK(http(s, req, &resp) == 303);
	CHECK_STR_CONTAINS(resp, "Location: /\r\n");
	free(resp);
	{
		char url[512];

		serve_url(s, url, sizeof(url));
		CHECK_STR_CONTAINS(url, "http://127.0.0.1:");
		CHECK_STR_CONTAINS(url, "/?token=" TOKEN);
	}
	serve_stop(s);
}

TEST(paths_never_leave_the_run_directories)
{
	static const char *const out[] = {
		"/files/r1/../secret.json",
		"/files/r1/%2e%2e/secret.json",
		"/files/r1/%2E%2E%2Fsecret.json",
		"/files/r1/..%2fsecret.json",
		"/files/r1/%252e%252e/secret.json",
		"/files/r1//etc/passwd",
		"/files/r1/link.json",            /* a symlink to the secret */
		"/files/r1/approvals/up/secret.json", /* through a linked directory */
		"/files/r2/secret.json",          /* a run directory that is a link */
		"/files/../secret.json",
		"/files/%2e%2e/secret.json",
		"/files/r1/.hidden.json",
		"/files/r1/canvas-latest.png.tmp.123", /* a file not yet renamed into place */
		"/files/r1/world.sim",            /* not a kind the console shows */
		"/files/r1/",
		"/files/r1/approvals",
		"/api/runs/..",
		"/api/runs/%2e%2e",
	};
	struct serve *s = start(0);
	bl_err err = { 0 };

	CHECK(get(s, "/files/r1/STATUS.md", bearer()) == 200);
	CHECK(get(s, "/files/r1/run.json", bearer()) == 200);
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		int st = get(s, out[i], bearer());

		CHECK_MSG(st == 404 || st == 400, "%s answered %d", out[i], st);
	}
	CHECK(serve_path_ok("frames/000001-blank.jpg", &err) == 0);
	CHECK(serve_path_ok("a/../b", &err) != 0);
	CHECK(serve_path_ok("a//b", &err) != 0);
	CHECK(serve_path_ok("a/b/c/d/e", &err) != 0);
	CHECK(serve_path_ok("state.json.tmp.99", &err) != 0);
	serve_stop(s);
}

TEST(a_post_from_another_origin_is_refused)
{
	struct serve *s = start(0);
	char same[256], h[512];
	const char *body = "{\"id\": \"r999999\", \"answer\": \"yes\"}";

	snprintf(same, sizeof(same), "Host: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n", serve_port(s),
		 serve_port(s));
	/* The same origin reaches the answer: an unknown request is a conflict, not a refusal. */
	CHECK(post(s, "/api/runs/r1/approve", same, body) == 409);
	snprintf(h, sizeof(h), "Host: 127.0.0.1:%d\r\nOrigin: http://evil.example\r\n", serve_port(s));
	CHECK(post(s, "/api/runs/r1/approve", h, body) == 403);
	snprintf(h, sizeof(h), "Host: 127.0.0.1:%d\r\n", serve_port(s));
	CHECK(post(s, "/api/runs/r1/approve", h, body) == 403); /* no Origin */
	snprintf(h, sizeof(h), "Host: evil.example:%d\r\nOrigin: http://evil.example:%d\r\n", serve_port(s),
		 serve_port(s)); /* DNS rebinding: Origin and Host agree, neither is this console */
	CHECK(post(s, "/api/runs/r1/approve", h, body) == 403);
	snprintf(h, sizeof(h), "%sSec-Fetch-Site: cross-site\r\n", same);
	CHECK(post(s, "/api/runs/r1/approve", h, body) == 403);
	snprintf(h, sizeof(h), "%sX-Forwarded-For: 127.0.0.1\r\n", "Host: evil.example\r\nOrigin: http://evil.example\r\n");
	CHECK(post(s, "/api/runs/r1/approve", h, body) == 403);
	/* Without the token, the same origin is not enough. */
	{
		char req[2048];

		snprintf(req, sizeof(req), "POST /api/runs/r1/approve HTTP/1.1\r\n%sContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", same, strlen(body), body);
		CHECK(http(s, req, NULL) == 401);
	}
	serve_stop(s);
}

TEST(a_read_only_console_refuses_every_post)
{
	struct serve *s = start(1);
	char same[256], *resp = NULL;

	snprintf(same, sizeof(same), "Host: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n", serve_port(s),
		 serve_port(s));
	CHECK(post(s, "/api/runs/r1/approve", same, "{\"id\": \"r000001\", \"answer\": \"yes\"}") == 403);
	CHECK(post(s, "/api/runs/r1/grant", same, "{\"kinds\": \"stir\"}") == 403);
	CHECK(post(s, "/api/runs/r1/resume", same, "{}") == 403);
	CHECK(get(s, "/api/runs", bearer()) == 200);
	{
		char req[512];

		snprintf(req, sizeof(req), "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: close\r\n\r\n",
			 serve_port(s), bearer());
		CHECK(http(s, req, &resp) == 200);
		CHECK_STR_CONTAINS(resp, "\"read_only\":true");
		free(resp);
	}
	serve_stop(s);
}

TEST(bodies_and_headers_over_their_limits_are_refused)
{
	struct serve *s = start(0);
	char same[256], req[40000], *big = malloc(20000);

	snprintf(same, sizeof(same), "Host: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n", serve_port(s),
		 serve_port(s));
	memset(big, 'a', 19999);
	big[0] = '"';
	big[19998] = '"';
	big[19999] = '\0';
	CHECK(post(s, "/api/runs/r1/approve", same, big) == 413);
	CHECK(post(s, "/api/runs/r1/approve", same, "not json") == 400);
	snprintf(req, sizeof(req), "POST /api/runs/r1/approve HTTP/1.1\r\n%sCookie: bl_token=" TOKEN "\r\nContent-Type: text/plain\r\n"
		 "Content-Length: 2\r\nConnection: close\r\n\r\n{}", same);
	CHECK(http(s, req, NULL) == 415); /* a form post from another page would be text/plain */
	/* Headers past 16 KiB: libmicrohttpd refuses them before any handler. */
	snprintf(req, sizeof(req), "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n%sX-Big: %.*s\r\nConnection: close\r\n\r\n",
		 bearer(), 20000, big);
	{
		int st = http(s, req, NULL);

		CHECK_MSG(st == 413 || st == 431 || st == 400 || st == -1, "20 KB of headers answered %d", st);
	}
	free(big);
	serve_stop(s);
}

TEST(answers_beyond_their_rate_are_refused)
{
	struct serve *s = start(0);
	char same[256];
	int refused = 0;

	snprintf(same, sizeof(same), "Host: 127.0.0.1:%d\r\nOrigin: http://127.0.0.1:%d\r\n", serve_port(s),
		 serve_port(s));
	/* A burst of 10 answers, then 2 a second: 30 at once cannot all pass. */
	for (int i = 0; i < 30; i++)
		refused += post(s, "/api/runs/r1/approve", same, "{\"id\": \"r999999\", \"answer\": \"no\"}") == 429;
	CHECK_MSG(refused >= 15, "%d of 30 answers at once refused", refused);
	serve_stop(s);
}

/* A CORS preflight is a request like any: without the token, 401, and never "Access-Control-Allow-Origin". */
TEST(a_preflight_without_the_token_is_401_and_allows_no_origin)
{
	struct serve *s = start(0);
	char req[512], *resp = NULL;

	snprintf(req, sizeof(req),
		 "OPTIONS /api/runs/r1/approve HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: http://evil.example\r\n"
		 "Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n"
		 "Connection: close\r\n\r\n", serve_port(s));
	CHECK(http(s, req, &resp) == 401);
	CHECK_MSG(resp && !strstr(resp, "Access-Control-Allow"), "%s", resp ? resp : "");
	free(resp);
	serve_stop(s);
}

/* A request the server cannot read is refused with a fixed page: nothing of it, its token least of all, comes back. */
TEST(a_malformed_request_is_never_echoed)
{
	struct serve *s = start(0);
	const char *bad[] = {
		"GET /?token=" TOKEN " HTTP/1.1 x\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " TOKEN "\r\n\r\n",
		"GARBAGE " TOKEN "\r\nCookie: bl_token=" TOKEN "\r\n\r\n",
		"GET / HTTP/9." TOKEN "\r\nHost: 127.0.0.1\r\n\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *resp = NULL;
		int st = http(s, bad[i], &resp);

		CHECK_MSG(st >= 400 && st < 600, "case %zu answered %d", i, st);
		CHECK_MSG(resp && !strstr(resp, TOKEN) && !strstr(resp, "0123456789abcdef"), "case %zu: %s", i,
			  resp ? resp : "");
		free(resp);
	}
	serve_stop(s);
}

/* 600 requests without the token spend nothing of the operator's: each is 401, and the token's holder gets 200. */
TEST(requests_without_the_token_never_spend_the_operators_rate)
{
	struct serve *s = start(0);
	int unauth = 0;

	for (int i = 0; i < 600; i++)
		unauth += get(s, "/api/runs", "") == 401;
	CHECK_MSG(unauth == 600, "%d of 600 were 401", unauth);
	CHECK(get(s, "/api/runs", bearer()) == 200);
	serve_stop(s);
}

/* --listen [::1]:PORT: the page to the token's holder over IPv6, nothing to others; an address open to the network needs allow_remote, and is then served. */
TEST(ipv6_loopback_serves_the_page_and_a_network_address_needs_allow_remote)
{
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };
	char url[512];
	const char *root = runs_root();
	const char *any[] = { "serve", "--runs", root, "--listen", "0.0.0.0:0", NULL };
	char *e = NULL;

	o.runs_dir = root;
	o.token = TOKEN;
	o.listen = "[::1]:0";
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "--listen [::1]:0: %s", err.msg);
	if (s) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)serve_port(s)),
					  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		const char *reqs[] = { "GET / HTTP/1.1\r\nHost: [::1]\r\nAuthorization: Bearer " TOKEN
				       "\r\nConnection: close\r\n\r\n",
				       "GET / HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n" };

		CHECK(serve_loopback(s));
		serve_url(s, url, sizeof(url));
		CHECK_STR_CONTAINS(url, "http://[::1]:");
		for (int k = 0; k < 2; k++) {
			char buf[8192] = "";
			size_t got = 0;
			ssize_t n;
			int fd = socket(AF_INET6, SOCK_STREAM, 0);

			CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
			CHECK(write(fd, reqs[k], strlen(reqs[k])) == (ssize_t)strlen(reqs[k]));
			while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
				got += (size_t)n;
			buf[got] = '\0';
			close(fd);
			if (k == 0) {
				CHECK_STR_CONTAINS(buf, "HTTP/1.1 200");
				CHECK_STR_CONTAINS(buf, "<title>brushloop console</title>");
			} else {
				CHECK_STR_CONTAINS(buf, "HTTP/1.1 401");
			}
		}
		serve_stop(s);
		s = NULL;
	}
	o.listen = "0.0.0.0:0";
	CHECK(serve_start(&o, &s, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "is not a loopback address");
	CHECK(test_brushloop(any, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "give --allow-remote as well");
	free(e);
	o.allow_remote = 1;
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "%s", err.msg);
	if (s) {
		CHECK(!serve_loopback(s));
		serve_stop(s);
	}
}

TEST(a_console_without_runs_or_with_a_bad_address_does_not_start)
{
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };
	const char *no_run[] = { "serve", test_tmpdir(), "--listen", "127.0.0.1:0", NULL };
	const char *bad_listen[] = { "serve", "--runs", test_tmpdir(), "--listen", "localhost", NULL };
	char *e = NULL;

	o.listen = "127.0.0.1:0";
	CHECK(serve_start(&o, &s, &err) != 0);
	CHECK_STR_CONTAINS(err.msg, "--runs DIR or at least one RUN_DIR");
	CHECK(test_brushloop(no_run, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "not a run directory");
	free(e);
	CHECK(test_brushloop(bad_listen, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "--listen localhost");
	free(e);
}

TEST_MAIN(T(a_request_without_the_right_token_is_401), T(a_preflight_without_the_token_is_401_and_allows_no_origin),
	  T(a_malformed_request_is_never_echoed), T(requests_without_the_token_never_spend_the_operators_rate),
	  T(ipv6_loopback_serves_the_page_and_a_network_address_needs_allow_remote),
	  T(the_first_visit_moves_the_token_into_an_httponly_strict_cookie),
	  T(paths_never_leave_the_run_directories), T(a_post_from_another_origin_is_refused),
	  T(a_read_only_console_refuses_every_post), T(bodies_and_headers_over_their_limits_are_refused),
	  T(answers_beyond_their_rate_are_refused),
	  T(a_console_without_runs_or_with_a_bad_address_does_not_start))
