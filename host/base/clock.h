/* clock.h: the clock interface: monotonic time for real hardware, virtual time for the simulator. */
#ifndef BL_BASE_CLOCK_H
#define BL_BASE_CLOCK_H

#include <stdint.h>

/*
 * Everything that waits or measures elapsed time goes through a clk, so the
 * simulator can run a four-hour painting in seconds: its clock only advances
 * when simulated work takes time, and sleeping on it returns at once.
 */
typedef struct clk {
	int64_t (*now_ns)(struct clk *c);           /* monotonic, ns since an arbitrary start */
	void (*sleep_ns)(struct clk *c, int64_t ns); /* wait; a virtual clock just advances */
	int64_t virt_ns;                            /* current time of a virtual clock */
	int is_virtual;
} clk;

/* The process's real monotonic clock (CLOCK_MONOTONIC). */
clk *clk_monotonic(void);

/* Sets up a virtual clock starting at start_ns. */
void clk_virtual_init(clk *c, int64_t start_ns);

/* Moves a virtual clock forward by ns (ignored for real clocks). */
void clk_advance(clk *c, int64_t ns);

static inline int64_t clk_now_ns(clk *c) { return c->now_ns(c); }
static inline double clk_now_s(clk *c) { return (double)c->now_ns(c) * 1e-9; }
static inline void clk_sleep_ns(clk *c, int64_t ns) { c->sleep_ns(c, ns); }

/* Wall-clock time in milliseconds since the Unix epoch (journal timestamps). */
int64_t clk_wall_ms(void);

/* Real monotonic time in ns, for benchmarks and timeouts that must not be virtual. */
int64_t clk_real_ns(void);

#endif
