/* prof.c: the phase clock of prof.h: wall and process CPU time charged to the phase under way at each switch. */
#include "base/prof.h"

#include <string.h>
#include <time.h>

#define PROF_NAME(id, name) [PROF_##id] = name,
const char *const prof_phase_names[PROF_COUNT] = { PROF_PHASES(PROF_NAME) };
#undef PROF_NAME

static struct {
	int on;
	enum prof_phase now;
	struct timespec wall0, cpu0; /* when the phase under way was last charged */
	struct prof_totals t;
} prof;

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

/* Charges the time since the last switch to the phase under way. */
static void charge(void)
{
	struct timespec w, c;

	clock_gettime(CLOCK_MONOTONIC, &w);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	prof.t.wall_s[prof.now] += since(&prof.wall0, &w);
	prof.t.cpu_s[prof.now] += since(&prof.cpu0, &c);
	prof.wall0 = w;
	prof.cpu0 = c;
}

void prof_enable(int on)
{
	memset(&prof, 0, sizeof(prof));
	prof.on = on;
	prof.now = PROF_OTHER;
	clock_gettime(CLOCK_MONOTONIC, &prof.wall0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &prof.cpu0);
}

enum prof_phase prof_enter(enum prof_phase p)
{
	enum prof_phase prev = prof.now;

	if (prof.on && p != prev) {
		charge();
		prof.now = p;
	}
	return prev;
}

void prof_leave(enum prof_phase prev)
{
	if (prof.on && prev != prof.now) {
		charge();
		prof.now = prev;
	}
}

void prof_read(struct prof_totals *t)
{
	if (prof.on)
		charge();
	*t = prof.t;
}
