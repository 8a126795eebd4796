/* serve_auth.c: who may ask the console anything: the access token (cookie after the first visit), the Origin of every answer, the rates. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/clock.h"
#include "serve/serve_int.h"

#define SERVE_COOKIE "bl_token"

int serve_token_new(char out[SERVE_TOKEN_HEX + 1], bl_err *err)
{
	unsigned char raw[SERVE_TOKEN_HEX / 2];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return bl_fail(err, BL_EIO, "getrandom: %s", strerror(errno));
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

int serve_token_equal(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char diff = (unsigned char)(na != nb);

	for (size_t i = 0; i < na; i++)
		diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
	return diff == 0 && nb != 0;
}

int serve_bucket_take(struct serve *s, struct serve_bucket *b)
{
	int64_t now = clk_real_ns() / 1000000;
	int ok;

	pthread_mutex_lock(&s->lock);
	b->tokens += (double)(now - b->last_ms) / 1000.0 * b->rate_per_s;
	if (b->tokens > b->burst)
		b->tokens = b->burst;
	b->last_ms = now;
	ok = b->tokens >= 1.0;
	if (ok)
		b->tokens -= 1.0;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/*
 * The client's own bucket, by its address: 100 requests a second, bursts of
 * 400 (a page and its pictures). Taken only after the token is checked, so
 * requests without it never spend the operator's.
 */
static int client_take(struct serve *s, struct serve_req *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char addr[48] = "?";
	int port;
	int64_t now = clk_real_ns() / 1000000;
	struct serve_client *k = NULL, *lru = &s->clients[0];

	if (ci && ci->client_addr)
		serve_addr_text(ci->client_addr, addr, sizeof(addr), &port);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < SERVE_CLIENTS_MAX && !k; i++) {
		if (!strcmp(s->clients[i].addr, addr))
			k = &s->clients[i];
		else if (s->clients[i].last_ms < lru->last_ms)
			lru = &s->clients[i];
	}
	if (!k) {
		k = lru;
		snprintf(k->addr, sizeof(k->addr), "%s", addr);
		k->b = (struct serve_bucket){ .tokens = 400, .rate_per_s = 100, .burst = 400, .last_ms = now };
	}
	k->last_ms = now;
	pthread_mutex_unlock(&s->lock);
	return serve_bucket_take(s, &k->b);
}

/* Where the first visit is sent on: the path asked, when it is one of this console's (never "//host/..."). */
static const char *same_origin_path(const char *uri)
{
	if (!uri || uri[0] != '/' || uri[1] == '/' || uri[1] == '\\')
		return "/";
	for (const char *p = uri; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '\\')
			return "/"; /* a decoded CR or LF would end the header; a backslash is a slash to browsers */
	return uri;
}

/* The token the request carries and where: 0 none, 1 cookie, 2 Authorization, 3 ?token=. */
static int token_of(struct serve_req *c, char *out, size_t n)
{
	const char *cookie = MHD_lookup_connection_value(c->mc, MHD_COOKIE_KIND, SERVE_COOKIE);
	const char *auth = serve_header(c, "Authorization");
	const char *q = MHD_lookup_connection_value(c->mc, MHD_GET_ARGUMENT_KIND, "token");

	if (cookie && *cookie && strlen(cookie) < n) {
		snprintf(out, n, "%s", cookie);
		return 1;
	}
	if (auth && !strncmp(auth, "Bearer ", 7) && strlen(auth + 7) < n) {
		snprintf(out, n, "%s", auth + 7);
		return 2;
	}
	if (q && *q && strlen(q) < n) {
		snprintf(out, n, "%s", q);
		return 3;
	}
	return 0;
}

static int loopback_name(const char *h, size_t n)
{
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && !strncmp(h, names[i], n))
			return 1;
	return 0;
}

/*
 * A state-changing request comes from a page of this console: its Origin is
 * http://HOST where HOST is the Host it asked, and that is this server's
 * address (any name when it listens on every interface, as told).
 */
static int origin_ok(struct serve *s, struct serve_req *c, char *why, size_t wn)
{
	const char *origin = serve_header(c, "Origin"), *host = serve_header(c, "Host");
	const char *site = serve_header(c, "Sec-Fetch-Site"), *colon;
	char want[320];
	int port;

	if (!origin || !host) {
		snprintf(why, wn, "an answer must come from the console's page (no %s header)",
			 origin ? "Host" : "Origin");
		return 0;
	}
	snprintf(want, sizeof(want), "http://%s", host);
	if (strcmp(origin, want)) {
		snprintf(why, wn, "cross-site request refused (Origin %.100s is not this console)", origin);
		return 0;
	}
	if (site && strcmp(site, "same-origin")) {
		snprintf(why, wn, "cross-site request refused (Sec-Fetch-Site: %.40s)", site);
		return 0;
	}
	colon = strrchr(host, ':');
	if (!colon || sscanf(colon + 1, "%d", &port) != 1 || port != s->port) {
		snprintf(why, wn, "Host %.100s is not this console's address", host);
		return 0;
	}
	if (strcmp(s->host, "0.0.0.0") && strcmp(s->host, "[::]") &&
	    !((size_t)(colon - host) == strlen(s->host) && !strncmp(host, s->host, strlen(s->host))) &&
	    !(loopback_name(s->host, strlen(s->host)) && loopback_name(host, (size_t)(colon - host)))) {
		snprintf(why, wn, "Host %.100s is not this console's address", host);
		return 0;
	}
	return 1;
}

static const char no_token_page[] =
	"<!doctype html><meta charset=utf-8><title>brushloop console</title>"
	"<p>This console needs its access token: open the URL <code>brushloop serve</code> printed "
	"when it started (it ends in <code>?token=</code>).</p>\n";

int serve_auth(struct serve *s, struct serve_req *c, int post)
{
	char tok[SERVE_TOKEN_HEX + 2] = "", why[256];
	int from;

	/* Without the right token the answer is 401 and nothing else: no rate, no route, no preflight. */
	from = token_of(c, tok, sizeof(tok));
	if (!from || !serve_token_equal(tok, s->token))
		return serve_send(c, 401, "text/html; charset=utf-8", no_token_page, sizeof(no_token_page) - 1,
				  "Cache-Control: no-store\r\nConnection: close\r\n"), 1;
	if (!client_take(s, c))
		return serve_send(c, 429, "text/plain; charset=utf-8", "too many requests\n", 18,
				  "Retry-After: 1\r\n"), 1;
	if (from == 3 && !post) {
		/* The first visit: the token moves into a cookie scripts cannot read and other sites never send, and leaves the address bar. */
		char hdr[SERVE_PATH_MAX + 256];

		snprintf(hdr, sizeof(hdr),
			 "Set-Cookie: " SERVE_COOKIE "=%s; Path=/; HttpOnly; SameSite=Strict\r\n"
			 "Location: %s\r\nCache-Control: no-store\r\n",
			 s->token, same_origin_path(c->url));
		return serve_send(c, 303, "text/plain; charset=utf-8", "", 0, hdr), 1;
	}
	if (!post)
		return 0;
	if (s->o.read_only)
		return serve_send_error(c, 403, "this console is read-only (--read-only)"), 1;
	if (!origin_ok(s, c, why, sizeof(why)))
		return serve_send_error(c, 403, "%s", why), 1;
	if (!serve_bucket_take(s, &s->post))
		return serve_send_error(c, 429, "too many answers at once: wait a second"), 1;
	return 0;
}
