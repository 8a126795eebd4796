/* hil_host.c: a host process for the watchdog test: homes the arm through the modbus backend and streams a long zigzag until it is killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm/arm_backend.h"
#include "arm/arm_modbus.h"
#include "hil.h"

/* The harness (hil.c uses its temporary directory) counts checks; this program makes none. */
int test_failures, test_checks;

int main(int argc, char **argv)
{
	struct hil_target t = { .hold_fd = -1 };
	struct arm_action act = { .kind = ARM_MOVE, .id = -1 };
	struct arm_path p = { 0 };
	struct machine m;
	struct arm *a;
	bl_err err;
	arm_point at, to;

	if (argc != 3 || atoi(argv[2]) < FW_WATCHDOG_MIN_MS || atoi(argv[2]) > FW_WATCHDOG_MAX_MS) {
		fprintf(stderr, "usage: hil-host TTY WATCHDOG_MS\n");
		return 2;
	}
	snprintf(t.tty, sizeof(t.tty), "%s", argv[1]);
	hil_machine(&t, &m);
	m.connection.watchdog_ms = atoi(argv[2]);
	if (arm_modbus_open(&m, clk_monotonic(), &a, &err) || a->ops->home(a, &err)) {
		fprintf(stderr, "hil-host: %s\n", err.msg);
		return 1;
	}
	at = (arm_point){ m.home_mm[0], m.home_mm[1], m.home_mm[2] };
	/* Minutes of motion at 50 mm/s: the test kills this process long before the end. */
	p.cap = 41;
	p.seg = calloc(p.cap, sizeof(*p.seg));
	for (int i = 0; i < 40; i++) {
		to = (arm_point){ i % 2 ? 50 : 650, i % 2 ? 50 : 450, 50 };
		p.seg[p.n].from = at;
		p.seg[p.n].to = to;
		p.seg[p.n].speed_mm_s = 50;
		p.n++;
		at = to;
	}
	printf("moving\n");
	fflush(stdout);
	if (a->ops->execute(a, &act, &p, &err)) {
		fprintf(stderr, "hil-host: %s\n", err.msg);
		return 1;
	}
	printf("done\n");
	arm_close(a);
	arm_path_free(&p);
	return 0;
}
