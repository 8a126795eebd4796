/* test_base.c: strict JSON reading, atomic files, the seeded RNG, virtual time and the string builder. */
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hostport.h"
#include "base/json.h"
#include "base/rng.h"
#include "base/strbuf.h"
#include "test.h"

static int open_doc(const char *text, cJSON **doc, json_obj *o, bl_err *err)
{
	int rc = json_parse_text(text, "t.json", doc, err);

	if (rc)
		return rc;
	return json_obj_open(*doc, "t.json", "", o, err);
}

TEST(json_unread_key_is_an_error)
{
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };
	double v;

	CHECK(open_doc("{\"a\": 1, \"b\": 2}", &doc, &o, &err) == 0);
	CHECK(json_num(&o, "a", JSON_REQUIRED, 0, 10, &v, &err) == 0);
	CHECK(json_end(&o, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: b: unknown key");
	cJSON_Delete(doc);
}

TEST(json_optional_absent_keeps_default)
{
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };
	double v = 7.0;
	int i = 3;

	CHECK(open_doc("{}", &doc, &o, &err) == 0);
	CHECK(json_num(&o, "a", JSON_OPTIONAL, 0, 10, &v, &err) == 1);
	CHECK(json_i32(&o, "b", JSON_OPTIONAL, 0, 10, &i, &err) == 1);
	CHECK(v == 7.0 && i == 3);
	CHECK(json_end(&o, &err) == 0);
	cJSON_Delete(doc);
}

TEST(json_integers_do_not_saturate)
{
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };
	int i = 0;

	/* cJSON's valueint would silently turn 1e20 into INT_MAX. */
	CHECK(open_doc("{\"n\": 1e20}", &doc, &o, &err) == 0);
	CHECK(json_i32(&o, "n", JSON_REQUIRED, 0, 1000, &i, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "n: 100000000000000000000 is out of range");
	cJSON_Delete(doc);
}

TEST(json_nested_paths_in_messages)
{
	cJSON *doc = NULL;
	json_obj o, c, item;
	const cJSON *arr;
	size_t n;
	bl_err err = { 0 };
	double v;

	CHECK(open_doc("{\"a\": {\"list\": [{\"x\": 1}, {\"x\": \"no\"}]}}", &doc, &o, &err) == 0);
	CHECK(json_child(&o, "a", JSON_REQUIRED, &c, &err) == 0);
	CHECK(json_array(&c, "list", JSON_REQUIRED, 10, &arr, &n, &err) == 0 && n == 2);
	CHECK(json_item_obj(&c, "list", cJSON_GetArrayItem(arr, 1), 1, &item, &err) == 0);
	CHECK(json_num(&item, "x", JSON_REQUIRED, 0, 10, &v, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: a.list[1].x: must be a number, not a string");
	CHECK(json_array(&c, "list", JSON_REQUIRED, 1, &arr, &n, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "a.list: has more than 1 items");
	cJSON_Delete(doc);
}

TEST(json_rejects_trailing_junk_and_duplicates)
{
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };

	CHECK(json_parse_text("{} x", "t.json", &doc, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "trailing junk");
	CHECK(doc == NULL);
	CHECK(open_doc("{\"a\": 1, \"a\": 2}", &doc, &o, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "a: key appears more than once");
	cJSON_Delete(doc);
}

TEST(json_enum_lists_the_choices)
{
	static const char *const names[] = { "one", "two", NULL };
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };
	int v = -1;

	CHECK(open_doc("{\"e\": \"two\", \"f\": \"six\"}", &doc, &o, &err) == 0);
	CHECK(json_enum(&o, "e", JSON_REQUIRED, names, &v, &err) == 0 && v == 1);
	CHECK(json_enum(&o, "f", JSON_REQUIRED, names, &v, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "f: 'six' is not one of: one, two");
	cJSON_Delete(doc);
}

TEST(atomic_write_replaces_whole_file)
{
	char path[4096], *text = NULL;
	size_t len = 0;
	bl_err err = { 0 };
	int tmp_left = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/state.json", test_tmpdir());
	CHECK(fs_write_atomic(path, "old contents", 12, &err) == 0);
	CHECK(fs_write_atomic(path, "new", 3, &err) == 0);
	CHECK(fs_read_file(path, 100, &text, &len, &err) == 0);
	CHECK(text && len == 3 && strcmp(text, "new") == 0);
	free(text);
	/* No temporary file stays behind. */
	d = opendir(test_tmpdir());
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			tmp_left++;
	if (d)
		closedir(d);
	CHECK(tmp_left == 0);
}

TEST(append_line_adds_lines)
{
	char path[4096], *text = NULL;
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/journal.jsonl", test_tmpdir());
	unlink(path);
	CHECK(fs_append_line(path, "{\"seq\":1}", &err) == 0);
	CHECK(fs_append_line(path, "{\"seq\":2}", &err) == 0);
	CHECK(fs_read_file(path, 1000, &text, NULL, &err) == 0);
	CHECK(text && strcmp(text, "{\"seq\":1}\n{\"seq\":2}\n") == 0);
	free(text);
}

TEST(read_file_enforces_the_limit)
{
	char *text = NULL;
	bl_err err = { 0 };
	const char *path = test_write_file("big.txt", "0123456789");

	CHECK(fs_read_file(path, 5, &text, NULL, &err) == BL_EINVAL);
	CHECK(text == NULL);
	CHECK_STR_CONTAINS(err.msg, "more than the limit of 5");
	/* A character device has no size and no end: refused before it is read. */
	CHECK(fs_read_file("/dev/zero", 100000, &text, NULL, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "/dev/zero: is not a regular file (a character device)");
}

/* One string rule: valid UTF-8, no control or bidirectional characters; an escaped NUL refused at parse. */
TEST(json_strings_are_clean_utf8)
{
	static const struct {
		const char *s;
		const char *why; /* NULL: accepted */
	} cases[] = {
		{ "round-6", NULL }, { "caf\xc3\xa9", NULL }, { "\xe6\x97\xa5\xe6\x9c\xac", NULL },
		{ "\xf0\x9f\x98\x80", NULL }, { "a\x01" "b", "control character (U+0001)" },
		{ "a\x7f", "control character (U+007F)" }, { "a\xc2\x85", "control character (U+0085)" },
		{ "a\xe2\x80\xae", "bidirectional control character (U+202E)" },
		{ "a\xe2\x81\xa6", "bidirectional control character (U+2066)" },
		{ "a\xe2\x80\x8f", "bidirectional control character (U+200F)" },
		{ "\xc0\xaf", "not valid UTF-8 (byte 0)" } /* overlong '/' */,
		{ "ab\xed\xa0\x80", "not valid UTF-8 (byte 2)" } /* a surrogate */,
		{ "\xf4\x90\x80\x80", "not valid UTF-8" } /* past U+10FFFF */,
		{ "\xe6\x97", "not valid UTF-8" } /* cut short */, { "\xff", "not valid UTF-8" },
	};
	cJSON *root = NULL;
	bl_err err = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[96] = "";
		int rc = json_text_check(cases[i].s, why, sizeof(why));

		CHECK_MSG(cases[i].why ? rc == BL_EINVAL && strstr(why, cases[i].why) : rc == 0,
			  "case %zu: rc %d, '%s'", i, rc, why);
	}
	CHECK(json_parse_text("{\"a\": \"x\\u0000y\"}", "t.json", &root, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: not valid JSON for brushloop at line 1, column 9");
	CHECK(root == NULL);
	/* An escaped backslash before "u0000" is text, not a NUL. */
	CHECK(json_parse_text("{\"a\": \"x\\\\u0000\"}", "t.json", &root, &err) == 0);
	cJSON_Delete(root);
}

/* A FIFO with no writer would block open() and read() forever: refused at once. */
TEST(read_file_refuses_a_fifo_without_waiting)
{
	char path[4096], *text = NULL;
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/fifo.json", test_tmpdir());
	CHECK(mkfifo(path, 0600) == 0);
	alarm(10); /* a hang fails the test rather than waiting for meson's timeout */
	CHECK(fs_read_file(path, 100000, &text, NULL, &err) == BL_EINVAL);
	alarm(0);
	CHECK(text == NULL);
	CHECK_STR_CONTAINS(err.msg, "fifo.json: is not a regular file (a FIFO)");
}

TEST(mkdirs_creates_parents)
{
	char path[4096];
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/a/b/c", test_tmpdir());
	CHECK(fs_mkdirs(path, &err) == 0);
	CHECK(access(path, F_OK) == 0);
	CHECK(fs_mkdirs(path, &err) == 0);
}

TEST(rng_is_deterministic_and_uniform)
{
	rng a, b, c;
	double sum = 0.0, sq = 0.0;
	int differ = 0;

	rng_init(&a, 42);
	rng_init(&b, 42);
	rng_init(&c, 43);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = rng_u64(&a);

		CHECK(x == rng_u64(&b));
		differ += x != rng_u64(&c);
	}
	CHECK(differ > 990);
	for (int i = 0; i < 100000; i++) {
		double n = rng_normal(&a);

		sum += n;
		sq += n * n;
	}
	CHECK_NEAR(sum / 100000, 0.0, 0.02);
	CHECK_NEAR(sq / 100000, 1.0, 0.02);
	for (int i = 0; i < 1000; i++) {
		uint64_t v = rng_below(&a, 7);
		double u = rng_uniform(&a);

		CHECK(v < 7);
		CHECK(u >= 0.0 && u < 1.0);
	}
}

TEST(rng_fork_streams_are_independent)
{
	rng a, b, a2;

	rng_fork(&a, 7, "paint");
	rng_fork(&b, 7, "camera");
	rng_fork(&a2, 7, "paint");
	CHECK(rng_u64(&a) != rng_u64(&b));
	rng_u64(&a2);
	CHECK(rng_u64(&a) == rng_u64(&a2));
}

TEST(virtual_clock_never_sleeps)
{
	clk c;
	int64_t t0 = clk_real_ns();

	clk_virtual_init(&c, 0);
	clk_sleep_ns(&c, (int64_t)4 * 3600 * 1000000000LL);
	clk_advance(&c, 5);
	CHECK(clk_now_ns(&c) == (int64_t)4 * 3600 * 1000000000LL + 5);
	/* Four virtual hours took no real time to speak of. */
	CHECK(clk_real_ns() - t0 < 1000000000LL);
	CHECK(clk_now_ns(clk_monotonic()) > 0);
}

TEST(strbuf_grows)
{
	strbuf sb;
	char *s;

	sb_init(&sb);
	for (int i = 0; i < 1000; i++)
		sb_printf(&sb, "%04d,", i);
	s = sb_take(&sb);
	CHECK(s && strlen(s) == 5000);
	CHECK(s && strncmp(s + 4995, "0999,", 5) == 0);
	free(s);
}

/* A number read from a file is taken as a whole number only within its range: 1e300 or NaN never reach a cast. */
TEST(json_whole_numbers_are_range_checked_before_conversion)
{
	static const char *const bad[] = { "1e300", "-1e300", "1.5", "-1", "1e15", "\"7\"", "true", "null" };
	long v = -7;
	cJSON *n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = cJSON_Parse(bad[i]);
		CHECK_MSG(!json_whole(n, 0, 1e12, &v) && v == -7, "%s was taken as %ld", bad[i], v);
		cJSON_Delete(n);
	}
	n = cJSON_CreateNumber(NAN);
	CHECK(!json_whole(n, 0, 1e12, &v));
	cJSON_Delete(n);
	CHECK(!json_whole(NULL, 0, 1e12, &v));
	n = cJSON_CreateNumber(1e12);
	CHECK(json_whole(n, 0, 1e12, &v) && v == 1000000000000L);
	cJSON_Delete(n);
	/* Even a range past what a long holds converts nothing beyond it. */
	n = cJSON_CreateNumber(1e19);
	CHECK(!json_whole(n, -1e300, 1e300, &v));
	cJSON_Delete(n);
}

/* Names shown to a person: control, bidirectional and broken bytes escaped, long ones cut in the middle. */
TEST(names_are_shown_with_control_and_bidi_characters_escaped)
{
	char out[64];

	bl_name_shown("runs/a\x1b[31mred\nnext\xe2\x80\xaetxt.exe", out, sizeof(out));
	CHECK_MSG(!strcmp(out, "runs/a\\x1b[31mred\\nnext\\u202etxt.exe"), "%s", out);
	bl_name_shown("caf\xc3\xa9 \xff\xc2\x85", out, sizeof(out));
	CHECK_MSG(!strcmp(out, "caf\xc3\xa9 \\xff\\u0085"), "%s", out);
	bl_name_shown("plain/path-1.png", out, sizeof(out));
	CHECK(!strcmp(out, "plain/path-1.png"));
	{
		char big[300];

		memset(big, 'a', sizeof(big) - 1);
		big[0] = 'S';
		big[sizeof(big) - 2] = 'E';
		big[sizeof(big) - 1] = '\0';
		bl_name_shown(big, out, sizeof(out));
		CHECK_MSG(strlen(out) == sizeof(out) - 1 && out[0] == 'S' && out[sizeof(out) - 2] == 'E' &&
			  strstr(out, "..."), "%s", out);
	}
}

TEST(exit_status_of_each_code)
{
	CHECK(bl_exit_status(BL_OK) == 0);
	CHECK(bl_exit_status(BL_EINVAL) == 2);
	CHECK(bl_exit_status(BL_EIO) == 1);
	CHECK(bl_exit_status(BL_ENOTSENT) == 1);
	CHECK(bl_exit_status(BL_EPAUSED) == 3);
	CHECK(bl_exit_status(BL_EBRAKE) == 4);
	CHECK(bl_exit_status(BL_ESAFETY) == 5);
}

TEST(cli_help_version_and_unknown)
{
	const char *ver[] = { "--version", NULL };
	const char *help[] = { "help", NULL };
	const char *chelp[] = { "color", "--help", NULL };
	const char *unknown[] = { "paint-it-black", NULL };
	char *out = NULL, *err = NULL;

	CHECK(test_brushloop(ver, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "brushloop ");
	free(out);
	CHECK(test_brushloop(help, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "config");
	free(out);
	CHECK(test_brushloop(chelp, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "usage: brushloop color diff");
	free(out);
	CHECK(test_brushloop(unknown, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "unknown command 'paint-it-black'");
	free(err);
}

/* One reading of "host:port" for the grant, the egress policy and the broker: strict, lowercased. */
TEST(a_destination_is_host_and_a_plain_port)
{
	static const char *const bad[] = { "", ":443", "api.example.org", "api.example.org:", "h:0",
					   "h:0443", "h:+443", "h: 443", "h:65536", "h:443x", "h:123456" };
	char host[16];
	int port = -1;

	CHECK(hostport_split("API.Example.org:443", host, sizeof(host), &port) == 0);
	CHECK_MSG(strcmp(host, "api.example.org") == 0 && port == 443, "%s %d", host, port);
	CHECK(hostport_split("[::1]:8080", host, sizeof(host), &port) == 0 && port == 8080);
	CHECK(hostport_split("h:65535", host, sizeof(host), &port) == 0 && port == 65535);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(hostport_split(bad[i], host, sizeof(host), &port) == -1, "'%s' was taken", bad[i]);
	/* A host as long as the buffer does not fit: refused, never cut. */
	CHECK(hostport_split("abcdefghijklmnop:80", host, sizeof(host), &port) == -1);
	CHECK(hostport_name_ok("api.example.org", 63) && hostport_name_ok("a-b.c", 63));
	CHECK(!hostport_name_ok("[::1]", 63) && !hostport_name_ok("-a.b", 63) && !hostport_name_ok("a-.b", 63));
	CHECK(!hostport_name_ok("a..b", 63) && !hostport_name_ok("a.b.", 63) && !hostport_name_ok("abcde.f", 4));
}

TEST_MAIN(T(json_whole_numbers_are_range_checked_before_conversion),
	  T(names_are_shown_with_control_and_bidi_characters_escaped),
	  T(json_unread_key_is_an_error), T(json_optional_absent_keeps_default),
	  T(json_integers_do_not_saturate), T(json_nested_paths_in_messages),
	  T(json_rejects_trailing_junk_and_duplicates), T(json_enum_lists_the_choices),
	  T(atomic_write_replaces_whole_file), T(append_line_adds_lines),
	  T(read_file_enforces_the_limit), T(read_file_refuses_a_fifo_without_waiting),
	  T(json_strings_are_clean_utf8), T(mkdirs_creates_parents),
	  T(rng_is_deterministic_and_uniform), T(rng_fork_streams_are_independent),
	  T(virtual_clock_never_sleeps), T(strbuf_grows), T(exit_status_of_each_code),
	  T(cli_help_version_and_unknown), T(a_destination_is_host_and_a_plain_port))
