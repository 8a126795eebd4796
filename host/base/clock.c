/* clock.c: the real monotonic clock and the simulator's virtual clock. */
#include "base/clock.h"

#include <errno.h>
#include <time.h>

int64_t clk_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clk_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t mono_now(clk *c)
{
	(void)c;
	return clk_real_ns();
}

static void mono_sleep(clk *c, int64_t ns)
{
	struct timespec ts;

	(void)c;
	if (ns <= 0)
		return;
	ts.tv_sec = ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	/* A signal ends the sleep early on purpose: the caller re-checks its stop flag. */
	nanosleep(&ts, NULL);
}

static clk mono = { mono_now, mono_sleep, 0, 0 };

clk *clk_monotonic(void)
{
	return &mono;
}

static int64_t virt_now(clk *c)
{
	return c->virt_ns;
}

static void virt_sleep(clk *c, int64_t ns)
{
	if (ns > 0)
		c->virt_ns += ns;
}

void clk_virtual_init(clk *c, int64_t start_ns)
{
	c->now_ns = virt_now;
	c->sleep_ns = virt_sleep;
	c->virt_ns = start_ns;
	c->is_virtual = 1;
}

void clk_advance(clk *c, int64_t ns)
{
	if (c->is_virtual && ns > 0)
		c->virt_ns += ns;
}
