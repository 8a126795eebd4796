/* test_answers_grants.c: answers count only for the request they name (its digest, after it was filed); grants expire on clocks that survive processes and never come from the future. */
#include "gate_rig.h"

/* The request's digest, as `brushloop approve` would write it. */
static void digest_of(const char *run, const char *id, char out[BL_DIGEST_HEX])
{
	struct gate_request req;
	bl_err err = { 0 };

	CHECK(gate_request_load(run, id, &req, &err) == 0);
	CHECK(gate_request_digest(&req, out, &err) == 0);
	gate_request_free(&req);
}

static void write_answer(const char *run, const char *id, int version, long long wall_ms,
			 const char *digest)
{
	char name[64], text[512];

	snprintf(name, sizeof(name), "approvals/%s.answer.json", id);
	snprintf(text, sizeof(text),
		 "{\"kind\":\"approval_answer\",\"version\":%d,\"id\":\"%s\",\"answer\":\"yes\","
		 "\"wall_ms\":%lld,\"by\":\"mallory\"%s%s%s}",
		 version, id, wall_ms, digest ? ",\"digest\":\"" : "", digest ? digest : "",
		 digest ? "\"" : "");
	write_text(run, name, text);
}

TEST(a_prewritten_answer_from_1970_approves_nothing)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	char dg[BL_DIGEST_HEX];
	int refused = -1;

	rig_open(&r, "prewritten", GATE_UNATTENDED, 0);
	/* Written before any request existed, in the format answers had (no digest), dated 1970. */
	write_answer(r.run, "r000001", 1, 0, NULL);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(strcmp(d.request_id, "r000001") == 0 && r.st.n_execute == 0);
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "\"event\":\"answer_ignored\"") == 1);
	CHECK(lines_with(r.journal, "old format (version 1)") == 1);
	/* The right digest, but dated before the request was filed: still nothing. */
	digest_of(r.run, "r000001", dg);
	write_answer(r.run, "r000001", 2, 0, dg);
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "before the request was filed") == 1);
	/* The operator answers: the stale file moves aside and the real answer counts, once. */
	{
		const char *args[] = { "approve", r.run, "r000001", NULL };
		char *out = NULL;

		CHECK(test_brushloop(args, &out, NULL) == 0);
		CHECK_STR_CONTAINS(out, "r000001: approved");
		free(out);
	}
	CHECK(gate_recheck(r.g, &refused, &err) == 1);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && d.executed && r.st.n_execute == 1);
	rig_close(&r);
}

TEST(an_answer_naming_another_digest_approves_nothing)
{
	struct rig r;
	struct gate_decision d;
	struct gate_request req;
	bl_err err = { 0 };
	char other[BL_DIGEST_HEX];
	int refused = -1;

	rig_open(&r, "wrong-digest", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	/* Newer than the request, well formed, but for another action. */
	CHECK(bl_digest_hex("another action", 14, other, &err) == 0);
	write_answer(r.run, "r000001", 2, (long long)clk_wall_ms() + 1000, other);
	CHECK(gate_request_load(r.run, "r000001", &req, &err) == 0);
	CHECK(!req.answered && gate_request_waiting(&req));
	CHECK_STR_CONTAINS(req.answer_ignored, "approves digest");
	gate_request_free(&req);
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "\"event\":\"answer_ignored\"") == 1);
	CHECK(lines_with(r.journal, "not this request's") == 1);
	/* The answer `approve` writes names the request's own digest. */
	{
		const char *args[] = { "approve", r.run, "r000001", "--deny", NULL };
		char path[4200], want[BL_DIGEST_HEX];

		CHECK(test_brushloop(args, NULL, NULL) == 0);
		digest_of(r.run, "r000001", want);
		snprintf(path, sizeof(path), "%s/approvals/r000001.answer.json", r.run);
		CHECK(lines_with(path, want) == 1);
	}
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 1);
	CHECK(r.st.n_execute == 0);
	rig_close(&r);
}

static void write_grant(const char *run, long long issued_wall_ms)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "{\"kind\":\"grants\",\"version\":1,\"grants\":[{\"id\":\"g1\",\"kinds\":[\"move\"],"
		 "\"zones\":[\"travel\"],\"max_speed_mm_s\":300,\"for_s\":600,\"issued_wall_ms\":%lld,"
		 "\"by\":\"t\"}]}",
		 issued_wall_ms);
	write_text(run, "grants.json", text);
}

TEST(a_grant_from_the_future_is_refused)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "future-grant", GATE_UNATTENDED, 0);
	/* Thirty days ahead would void the wall-clock cap: refused, and said so once. */
	write_grant(r.run, (long long)clk_wall_ms() + 30LL * 86400 * 1000);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && !d.grant_id[0]);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "\"event\":\"grant_refused\"") == 1);
	CHECK(lines_with(r.journal, "from the future") == 1);
	CHECK(lines_with(r.journal, "\"event\":\"grant\"") == 0); /* no lifetime started */
	rig_close(&r);
	/* Two seconds ahead is two clocks disagreeing a little: it holds. */
	rig_open(&r, "near-grant", GATE_UNATTENDED, 0);
	write_grant(r.run, (long long)clk_wall_ms() + 2000);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	rig_close(&r);
}

TEST(an_expired_grant_stays_expired_in_the_next_process)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "expired-grant", GATE_UNATTENDED, 0);
	write_grant(r.run, (long long)clk_wall_ms());
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	clk_advance(&r.clock, 601LL * 1000000000);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && !d.grant_id[0]);
	CHECK(lines_with(r.journal, "\"event\":\"grant_expired\"") == 1);
	/* The next process, its clock at 0 again: still expired, and no new lifetime. */
	rig_restart(&r);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && !d.grant_id[0]);
	CHECK(r.st.n_execute == 1);
	CHECK(lines_with(r.journal, "\"event\":\"grant\"") == 1);
	rig_close(&r);
}

TEST(a_grant_lifetime_goes_on_across_processes)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "grant-lifetime", GATE_UNATTENDED, 0);
	write_grant(r.run, (long long)clk_wall_ms());
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	clk_advance(&r.clock, 400LL * 1000000000); /* 400 of its 600 s used */
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	/* A new process whose clock begins at 0: 250 s more is 650 s in all, past its lifetime. */
	rig_restart(&r);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	clk_advance(&r.clock, 250LL * 1000000000);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && !d.grant_id[0]);
	CHECK(r.st.n_execute == 3);
	CHECK(lines_with(r.journal, "\"event\":\"grant_expired\"") == 1);
	rig_close(&r);
}

TEST_MAIN(T(a_prewritten_answer_from_1970_approves_nothing),
	  T(an_answer_naming_another_digest_approves_nothing), T(a_grant_from_the_future_is_refused),
	  T(an_expired_grant_stays_expired_in_the_next_process),
	  T(a_grant_lifetime_goes_on_across_processes))
