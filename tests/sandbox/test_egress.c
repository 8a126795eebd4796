/* test_egress.c: hostile planners against the network walls, and the egress broker's allowlist, limits, grants and journal. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sbx_run.h"
#include "test.h"

static void run_with(const struct sbx_policy *pol, const char *const *args, struct hostile_run *r)
{
	hostile_check(pol, args, 20000, r);
}

/* A listener on the host's 127.0.0.1 (TCP or UDP) on a free port. */
static int listen_loopback(int type, int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Nothing arrived at a listener: no connection waiting, no datagram. */
static int nothing_arrived(int fd, int type)
{
	char buf[512];

	if (type == SOCK_STREAM) {
		int c = accept(fd, NULL, NULL);
		if (c >= 0)
			close(c);
		return c < 0 && errno == EAGAIN;
	}
	return recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* The hostile case sends to a listener of type on the host's loopback: it must say want, and nothing arrive. */
static void arrives_nowhere(int type, const char *hostile_case, const char *want)
{
	struct hostile_run r;
	char p[16];
	int port, fd = listen_loopback(type, &port);

	CHECK(fd >= 0);
	snprintf(p, sizeof(p), "%d", port);
	run_with(NULL, (const char *[]){ hostile_case, p, NULL }, &r);
	CHECK_MSG(strcmp(r.out, want) == 0, "said '%s'", r.out);
	CHECK(nothing_arrived(fd, type));
	close(fd);
	hostile_free(&r);
}

TEST(tcp_to_a_host_loopback_listener_arrives_nowhere)
{
	arrives_nowhere(SOCK_STREAM, "tcp", "tcp: socket errno=EPERM\n");
}

TEST(dns_to_a_host_loopback_resolver_arrives_nowhere)
{
	arrives_nowhere(SOCK_DGRAM, "dns", "dns: socket errno=EPERM\n");
}

TEST(the_network_namespace_has_only_loopback)
{
	struct hostile_run r;

	run_with(NULL, (const char *[]){ "netdev", NULL }, &r);
	CHECK_MSG(strcmp(r.out, "netdev: lo\nnetdev: 1 interfaces\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
}

TEST(a_host_abstract_unix_socket_is_unreachable)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct hostile_run r;
	char name[64];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	snprintf(name, sizeof(name), "brushloop-test-%d", (int)getpid());
	memcpy(sa.sun_path + 1, name, strlen(name));
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa,
			       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))) == 0);
	CHECK(listen(fd, 4) == 0);
	run_with(NULL, (const char *[]){ "abstract", name, NULL }, &r);
	CHECK_MSG(strcmp(r.out, "abstract: errno=ECONNREFUSED\n") == 0, "said '%s'", r.out);
	CHECK(nothing_arrived(fd, SOCK_STREAM));
	close(fd);
	hostile_free(&r);
}

TEST(without_a_policy_there_is_no_broker)
{
	struct hostile_run r;

	run_with(NULL, (const char *[]){ "broker", "localhost", "443", NULL }, &r);
	CHECK_MSG(strcmp(r.out, "broker: no BRUSHLOOP_EGRESS\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
	run_with(NULL, (const char *[]){ "read", "/run/egress.sock", NULL }, &r);
	CHECK_MSG(strcmp(r.out, "read: errno=ENOENT\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
}

/* A far end on the host's loopback: answers "pong" to every line, counts its connections. */
struct far_end {
	int fd, port, conns;
	volatile int stop;
	pthread_t th;
};

static void *far_loop(void *arg)
{
	struct far_end *f = arg;

	while (!f->stop) {
		struct pollfd pfd = { .fd = f->fd, .events = POLLIN };
		char buf[256];

		if (poll(&pfd, 1, 50) != 1)
			continue;
		int c = accept(f->fd, NULL, NULL);
		if (c < 0)
			continue;
		f->conns++;
		pfd = (struct pollfd){ .fd = c, .events = POLLIN };
		if (poll(&pfd, 1, 2000) == 1 && read(c, buf, sizeof(buf)) > 0 && write(c, "pong\n", 5) != 5)
			(void)0;
		close(c);
	}
	return NULL;
}

static void far_start(struct far_end *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = listen_loopback(SOCK_STREAM, &f->port);
	CHECK(f->fd >= 0);
	CHECK(pthread_create(&f->th, NULL, far_loop, f) == 0);
}

static void far_stop(struct far_end *f)
{
	f->stop = 1;
	pthread_join(f->th, NULL);
	close(f->fd);
}

static void localhost_policy(struct egress_policy *e, int port)
{
	memset(e, 0, sizeof(*e));
	e->max_label_length = 40;
	e->rate_limit_per_minute = 30;
	e->n_domains = 1;
	snprintf(e->domains[0], sizeof(e->domains[0]), "localhost");
	e->n_dest = 1;
	snprintf(e->dest[0], sizeof(e->dest[0]), "localhost:%d", port);
}

/* The n-th event named name has key == want. */
static int event_says(const struct hostile_run *r, const char *name, int n, const char *key,
		      const char *want)
{
	const cJSON *d = hostile_event(r, name, n);
	const cJSON *v = d ? cJSON_GetObjectItemCaseSensitive(d, key) : NULL;

	return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

TEST(an_allowlisted_destination_arrives_and_is_journaled)
{
	struct egress_policy e;
	struct sbx_policy pol = { .egress = &e };
	struct hostile_run r;
	struct far_end f;
	char p[16];

	far_start(&f);
	localhost_policy(&e, f.port);
	snprintf(p, sizeof(p), "%d", f.port);
	run_with(&pol, (const char *[]){ "broker", "localhost", p, NULL }, &r);
	far_stop(&f);
	CHECK_MSG(strcmp(r.out, "broker: HTTP/1.1 200 Connection established / pong\n") == 0,
		  "said '%s'", r.out);
	CHECK(f.conns == 1);
	CHECK(event_says(&r, "egress_query", 0, "name", "localhost"));
	CHECK(event_says(&r, "egress_query", 0, "verdict", "allowed"));
	CHECK(event_says(&r, "egress_connect", 0, "verdict", "allowed"));
	CHECK(event_says(&r, "egress_connect", 0, "address", "127.0.0.1"));
	CHECK(hostile_count(&r, "egress_close", NULL, NULL) == 1);
	hostile_free(&r);
}

/* A CONNECT the broker must refuse: the planner hears only "denied", the journal why. */
static void refused(const char *name, const char *port, const char *event, const char *reason)
{
	struct egress_policy e;
	struct sbx_policy pol = { .egress = &e };
	struct hostile_run r;
	struct far_end f;

	far_start(&f);
	localhost_policy(&e, f.port);
	run_with(&pol, (const char *[]){ "broker", name, port ? port : "443", NULL }, &r);
	far_stop(&f);
	CHECK_MSG(strcmp(r.out, "broker: HTTP/1.1 403 denied\n") == 0, "said '%s'", r.out);
	CHECK(f.conns == 0);
	CHECK_MSG(event_says(&r, event, 0, "verdict", "denied") && event_says(&r, event, 0, "reason", reason),
		  "no %s denied for '%s'", event, reason);
	hostile_free(&r);
}

TEST(a_name_not_on_the_list_is_refused_and_journaled)
{
	refused("api.example.org", NULL, "egress_query", "name not on the allowlist");
}

TEST(an_over_long_label_is_refused)
{
	refused("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.localhost", NULL, "egress_query",
		"label longer than 40");
}

TEST(a_port_not_on_the_list_is_refused)
{
	refused("localhost", "1", "egress_connect", "destination not on the allowlist");
}

TEST(a_query_flood_is_rate_limited)
{
	struct egress_policy e;
	struct sbx_policy pol = { .egress = &e };
	struct hostile_run r;
	struct far_end f;
	char p[16];

	far_start(&f);
	localhost_policy(&e, f.port);
	e.rate_limit_per_minute = 5;
	snprintf(p, sizeof(p), "%d", f.port);
	run_with(&pol, (const char *[]){ "flood", "localhost", p, "12", NULL }, &r);
	far_stop(&f);
	CHECK_MSG(strcmp(r.out, "flood: 5 of 12 allowed\n") == 0, "said '%s'", r.out);
	CHECK(hostile_count(&r, "egress_query", "reason", "rate limit") == 7);
	CHECK(hostile_count(&r, "egress_connect", "verdict", "allowed") == 5);
	hostile_free(&r);
}

/* Writes a line to the planner and reads its answer line. */
static void cue(struct sbx_proc *p, char *line, size_t n)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
	ssize_t got = 0;

	CHECK(write(p->fd, "go\n", 3) == 3);
	if (poll(&pfd, 1, 10000) == 1)
		got = read(p->fd, line, n - 1);
	line[got > 0 ? got : 0] = '\0';
}

TEST(a_grant_opens_one_destination_until_it_expires)
{
	struct egress_policy e;
	char p[16], dest[64], line[256];
	const char *host = getenv("BRUSHLOOP_HOSTILE");
	const char *argv[] = { host, "broker_on_cue", "localhost", p, NULL };
	struct sbx_file planner;
	struct sbx_policy pol = { .argv = argv, .files = &planner, .n_files = 1, .egress = &e };
	struct sbx_proc sp;
	struct far_end f;
	bl_err err = { 0 };

	far_start(&f);
	localhost_policy(&e, f.port);
	e.n_dest = 0; /* the name is allowed, no destination is */
	snprintf(p, sizeof(p), "%d", f.port);
	snprintf(dest, sizeof(dest), "localhost:%d", f.port);
	CHECK_MSG(sbx_file_open(host, &planner, &err) == 0, "%s", err.msg);
	CHECK(sbx_start(&pol, &sp, &err) == 0);
	sbx_file_close(&planner);
	cue(&sp, line, sizeof(line));
	CHECK_MSG(strcmp(line, "broker_on_cue: HTTP/1.1 403 denied\n") == 0, "before: '%s'", line);
	CHECK(egress_grant(&sp, dest, 0.01, &err) == 0); /* 600 ms */
	cue(&sp, line, sizeof(line));
	CHECK_MSG(strcmp(line, "broker_on_cue: HTTP/1.1 200 Connection established / pong\n") == 0,
		  "granted: '%s'", line);
	usleep(700000);
	cue(&sp, line, sizeof(line));
	CHECK_MSG(strcmp(line, "broker_on_cue: HTTP/1.1 403 denied\n") == 0, "expired: '%s'", line);
	CHECK(egress_grant(&sp, "localhost", 1, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not host:port");
	sbx_stop(&sp, NULL, NULL);
	far_stop(&f);
	CHECK(f.conns == 1);
}

/* Parses text as a policy; 0 or the error with its message in err. */
static int parse(const char *text, struct egress_policy *e, bl_err *err)
{
	cJSON *j = cJSON_Parse(text);
	int rc = egress_policy_from_json(j, "machine.json", e, err);

	cJSON_Delete(j);
	return rc;
}

TEST(the_egress_policy_is_read_strictly)
{
	struct egress_policy e;
	bl_err err = { 0 };

	CHECK(parse("{\"default\":\"deny\",\"dns\":{\"allow_domains\":[\"API.example.org\",\"*.pypi.org\"],"
		    "\"max_label_length\":20,\"rate_limit_per_minute\":10},"
		    "\"https\":{\"allow_destinations\":[\"api.example.org:443\"]}}", &e, &err) == 0);
	CHECK(e.n_domains == 2 && strcmp(e.domains[0], "api.example.org") == 0);
	CHECK(e.max_label_length == 20 && e.rate_limit_per_minute == 10);
	CHECK(e.n_dest == 1 && strcmp(e.dest[0], "api.example.org:443") == 0);
	CHECK(parse("{\"default\":\"deny\"}", &e, &err) == 0);
	CHECK(e.n_domains == 0 && e.n_dest == 0 && e.max_label_length == 40 &&
	      e.rate_limit_per_minute == 30);
	CHECK(parse("{\"default\":\"allow\"}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "planner.egress.default");
	CHECK(parse("{\"dns\":{}}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "default");
	CHECK(parse("{\"default\":\"deny\",\"dns\":{\"allow_domain\":[]}}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "planner.egress.dns.allow_domain");
	CHECK(parse("{\"default\":\"deny\",\"dns\":{\"max_label_length\":\"40\"}}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "max_label_length");
	CHECK(parse("{\"default\":\"deny\",\"https\":{\"allow_destinations\":[\"api.example.org\"]}}", &e,
		    &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "allow_destinations[0]");
	CHECK(parse("{\"default\":\"deny\",\"dns\":{\"allow_domains\":[\"a b\"]}}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "allow_domains[0]");
	CHECK(parse("{\"default\":\"deny\",\"proxy\":1}", &e, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "proxy");
}

TEST(wildcards_match_names_below_their_domain_only)
{
	struct egress_policy e = { .max_label_length = 40, .n_domains = 1 };
	char why[96];

	snprintf(e.domains[0], sizeof(e.domains[0]), "*.example.org");
	CHECK(egress_check_name(&e, "api.example.org", why, sizeof(why)) == 0);
	CHECK(egress_check_name(&e, "a.b.example.org", why, sizeof(why)) == 0);
	CHECK(egress_check_name(&e, "example.org", why, sizeof(why)) == BL_EDENIED);
	CHECK(egress_check_name(&e, "evilexample.org", why, sizeof(why)) == BL_EDENIED);
	CHECK(egress_check_name(&e, "api.example.org.evil.net", why, sizeof(why)) == BL_EDENIED);
	CHECK(egress_check_name(&e, "a..example.org", why, sizeof(why)) == BL_EDENIED);
	CHECK_STR_CONTAINS(why, "not a host name");
}

TEST_MAIN(T(tcp_to_a_host_loopback_listener_arrives_nowhere),
	  T(dns_to_a_host_loopback_resolver_arrives_nowhere), T(the_network_namespace_has_only_loopback),
	  T(a_host_abstract_unix_socket_is_unreachable), T(without_a_policy_there_is_no_broker),
	  T(an_allowlisted_destination_arrives_and_is_journaled),
	  T(a_name_not_on_the_list_is_refused_and_journaled), T(an_over_long_label_is_refused),
	  T(a_port_not_on_the_list_is_refused), T(a_query_flood_is_rate_limited),
	  T(a_grant_opens_one_destination_until_it_expires), T(the_egress_policy_is_read_strictly),
	  T(wildcards_match_names_below_their_domain_only))
