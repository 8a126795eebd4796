/* gate_rig.h: a gate over a recording arm, a virtual clock and a journal in a fresh run directory, for the gate's tests. */
#ifndef BL_TESTS_GATE_RIG_H
#define BL_TESTS_GATE_RIG_H

#include "rec_arm.h"
#include "safety/gate.h"
#include "safety/operator.h"
#include "safety_test.h"

struct rig {
	char run[4096];
	char journal[4096];
	struct journal jr;
	clk clock;
	struct rec_state st;
	struct machine m;
	struct arm *arm;
	struct gate *g;
	enum gate_mode mode;
	int timeout_ms;
};

/* Opens the journal and the gate over r's run directory, as a new process does: its clock starts at 0. */
static inline void rig_start(struct rig *r)
{
	struct gate_config cfg;
	bl_err err = { 0 };

	clk_virtual_init(&r->clock, 0);
	if (journal_open(&r->jr, r->journal, &r->clock, &err)) {
		fprintf(stderr, "journal_open: %s\n", err.msg);
		exit(1);
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.m = &r->m;
	cfg.run_dir = r->run;
	cfg.journal = &r->jr;
	cfg.clock = &r->clock;
	cfg.mode = r->mode;
	cfg.tty_in_fd = -1;
	cfg.tty_out_fd = -1;
	cfg.timeout_ms = r->timeout_ms;
	if (gate_open(&cfg, &r->g, &err)) {
		fprintf(stderr, "gate_open: %s\n", err.msg);
		exit(1);
	}
}

static inline void rig_open(struct rig *r, const char *name, enum gate_mode mode, int timeout_ms)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->run, sizeof(r->run), "%s", fresh_dir(name));
	snprintf(r->journal, sizeof(r->journal), "%s/journal.jsonl", r->run);
	r->mode = mode;
	r->timeout_ms = timeout_ms;
	r->m = *test_machine();
	r->arm = rec_arm_open(&r->m, &r->clock, &r->st);
	rig_start(r);
}

/* The gate and journal closed and opened again over the same directory: the next process. */
static inline void rig_restart(struct rig *r)
{
	gate_close(r->g);
	journal_close(&r->jr);
	rig_start(r);
}

static inline void rig_close(struct rig *r)
{
	gate_close(r->g);
	arm_close(r->arm);
	journal_close(&r->jr);
}

static inline struct arm_action act(const char *json)
{
	struct arm_action a;
	cJSON *item = cJSON_Parse(json);
	bl_err err = { 0 };

	if (!item || arm_action_parse(item, "test", 0, &a, &err)) {
		fprintf(stderr, "bad test action %s: %s\n", json, err.msg);
		exit(1);
	}
	cJSON_Delete(item);
	return a;
}

static inline int run(struct rig *r, const char *json, struct gate_decision *d, bl_err *err)
{
	struct arm_action a = act(json);
	int rc = gate_execute(r->g, r->arm, &a, NULL, d, err);

	arm_action_release(&a);
	return rc;
}

#define MOVE_OK "{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[300,200,50]}"
#define MOVE_FAST "{\"type\":\"move\",\"id\":7,\"speed_mm_s\":280,\"zones\":[\"travel\"],\"to_mm\":[300,220,50]}"

static inline const char *brushloop_bin(void)
{
	const char *b = getenv("BRUSHLOOP");

	return b ? b : "brushloop";
}

static inline void write_text(const char *dir, const char *name, const char *text)
{
	char p[4200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

#endif
