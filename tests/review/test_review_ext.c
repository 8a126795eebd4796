/* test_review_ext.c: an external reviewer in the planner's sandbox: a well-behaved one is heard, and a hostile one (silent, flooding, spamming, claiming approval, malformed, gone) is contained: bounded in time, read one line, and it can only withhold agreement. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "review/review_ext.h"
#include "vision/image.h"
#include "test.h"

/* The sandbox is needed; where it cannot be made the case is skipped (exit 77), never passed. */
static void need_sandbox(void)
{
	bl_err err;

	if (sbx_probe(&err)) {
		fprintf(stderr, "no sandbox here: %s\n", err.msg);
		exit(77);
	}
}

/* An /in for the reviewer: a frame (a grey 1280x720 JPEG, as the camera's view is sized), readable by nobody. */
static const char *in_dir(void)
{
	static char in[4200];
	char dst[4300];
	struct img im = { 0 };
	unsigned char *jpg = NULL;
	size_t len = 0;
	bl_err err;

	snprintf(in, sizeof(in), "%s/in", test_tmpdir());
	mkdir(in, 0755);
	chmod(test_tmpdir(), 0755);
	snprintf(dst, sizeof(dst), "%s/frame.jpg", in);
	if (access(dst, F_OK) != 0 && img_alloc(&im, 1280, 720, &err) == 0) {
		memset(im.px, 128, (size_t)1280 * 720 * 3);
		if (img_encode_jpeg(&im, 90, &jpg, &len, &err) == 0)
			fs_write_atomic(dst, jpg, len, NULL);
		free(jpg);
		img_free(&im);
	}
	return in;
}

static cJSON *request(void)
{
	cJSON *q = cJSON_Parse("{\"point\": \"checkpoint\", \"subtask\": \"s20\", \"round\": 0, "
			       "\"measurement\": {\"observed_vs_predicted_de00\": 1.5}, "
			       "\"expected\": {\"tolerance_de00\": 6}, \"verdict\": \"pass\", "
			       "\"rules\": {\"agree\": true, \"rules\": []}, "
			       "\"files\": {\"frame\": \"/in/frame.jpg\", \"target\": \"/in/target.png\"}}");

	return q;
}

/* One call of command with a deadline of 2 s and a 64 KiB line; its answer in a, the wall time returned. */
static double ask(const char *command, struct review_ext_answer *a)
{
	struct review_ext_config cfg = { 0 };
	struct review_ext *x = NULL;
	cJSON *q = request();
	int64_t t0 = clk_real_ns();
	bl_err err;

	cfg.command = command;
	cfg.answer_deadline_ms = 2000;
	cfg.max_answer_bytes = 65536;
	CHECK_MSG(review_ext_open(&cfg, &x, &err) == 0, "%s", err.msg);
	CHECK_MSG(review_ext_ask(x, q, in_dir(), a, &err) == 0, "%s", err.msg);
	cJSON_Delete(q);
	review_ext_close(x);
	return (double)(clk_real_ns() - t0) * 1e-9;
}

static const char *hostile(const char *mode)
{
	static char cmd[4300];

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/review/hostile_reviewer.py %s", getenv("BRUSHLOOP_SRC"),
		 mode);
	return cmd;
}

TEST(the_example_reviewer_is_heard_and_agrees)
{
	struct review_ext_answer a;
	char cmd[4300];

	need_sandbox();
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/examples/reviewers/sanity_reviewer.py", getenv("BRUSHLOOP_SRC"));
	ask(cmd, &a);
	CHECK_MSG(a.answered && a.agree, "%s: %s", a.failure, a.reason);
	CHECK_STR_CONTAINS(a.reason, "1280x720 JPEG");
	review_ext_answer_free(&a);
}

TEST(a_reviewer_that_never_answers_is_late_and_withholds)
{
	struct review_ext_answer a;
	double t;

	need_sandbox();
	t = ask(hostile("silent"), &a);
	CHECK(!a.answered && !a.agree && !strcmp(a.failure, "late"));
	/* The deadline and the sandbox's end, not the reviewer's hour of sleep. */
	CHECK_MSG(t < 6.0, "the call took %.1f s", t);
}

TEST(a_flood_is_cut_at_the_size_limit_and_withholds)
{
	struct review_ext_answer a;
	double t;

	need_sandbox();
	t = ask(hostile("flood"), &a);
	CHECK(!a.answered && !a.agree && !strcmp(a.failure, "too_large"));
	CHECK_MSG(t < 6.0, "the call took %.1f s", t);
	/* Only the first line of a spammer is read: its first says disagree, and that stands. */
	t = ask(hostile("spam"), &a);
	CHECK(a.answered && !a.agree && !strcmp(a.reason, "first"));
	CHECK_MSG(t < 6.0, "the call took %.1f s", t);
}

TEST(claims_of_approval_are_kept_for_the_journal_and_grant_nothing)
{
	struct review_ext_answer a;
	cJSON *j;
	char *s;

	need_sandbox();
	ask(hostile("claims"), &a);
	/* Its agreement is an agreement, no more: the claims are carried, cut, never read. */
	CHECK(a.answered && a.agree);
	CHECK(a.claims && cJSON_GetObjectItem(a.claims, "cut_bytes"));
	j = review_ext_answer_json(&a);
	s = cJSON_PrintUnformatted(j);
	CHECK(s && strlen(s) < 6000);
	cJSON_free(s);
	cJSON_Delete(j);
	review_ext_answer_free(&a);
}

TEST(malformed_answers_and_a_reviewer_gone_withhold)
{
	static const struct {
		const char *mode, *failure;
	} cases[] = { { "wrong_id", "malformed" }, { "no_agree", "malformed" }, { "exit", "gone" } };
	struct review_ext_answer a;

	need_sandbox();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ask(hostile(cases[i].mode), &a);
		CHECK_MSG(!a.answered && !a.agree && !strcmp(a.failure, cases[i].failure), "%s: %s %s",
			  cases[i].mode, a.failure, a.reason);
		review_ext_answer_free(&a);
	}
	ask(hostile("disagree"), &a);
	CHECK(a.answered && !a.agree && !strcmp(a.reason, "the canvas looks wrong to me"));
}

TEST(the_reviewer_cannot_write_what_it_is_shown)
{
	struct review_ext_answer a;
	char p[4300];

	need_sandbox();
	ask(hostile("write_in"), &a);
	CHECK(a.answered);
	CHECK_STR_CONTAINS(a.reason, "could not write /in");
	snprintf(p, sizeof(p), "%s/approved", in_dir());
	CHECK(access(p, F_OK) != 0);
}

TEST(a_command_that_is_no_command_is_refused)
{
	struct review_ext_config cfg = { .command = "   ", .answer_deadline_ms = 1000, .max_answer_bytes = 1024 };
	struct review_ext *x = NULL;
	bl_err err;

	CHECK(review_ext_open(&cfg, &x, &err) == BL_EINVAL && x == NULL);
	CHECK_STR_CONTAINS(err.msg, "the reviewer command");
}

TEST_MAIN(T(the_example_reviewer_is_heard_and_agrees), T(a_reviewer_that_never_answers_is_late_and_withholds),
	  T(a_flood_is_cut_at_the_size_limit_and_withholds),
	  T(claims_of_approval_are_kept_for_the_journal_and_grant_nothing),
	  T(malformed_answers_and_a_reviewer_gone_withhold), T(the_reviewer_cannot_write_what_it_is_shown),
	  T(a_command_that_is_no_command_is_refused))
