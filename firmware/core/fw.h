/* fw.h: the portable firmware core (Modbus RTU slave, drive state machine, motion queue, watchdog, e-stop) that every board wraps. */
#ifndef BL_FW_FW_H
#define BL_FW_FW_H

#include <stdint.h>

#include "regmap.h"

/*
 * The core owns no hardware and reads no clock of its own: a board gives it
 * the time and a way to send bytes, feeds it received bytes, calls fw_poll()
 * often (frame end by silence) and fw_tick() once every control period.
 */
struct fw_io {
	uint64_t (*now_us)(void *ctx);                       /* monotonic firmware time */
	void (*tx)(void *ctx, const uint8_t *buf, unsigned n); /* sends a whole response */
	void *ctx;
};

struct fw_joint_limits {
	int32_t min_um, max_um;  /* position range, um of the joint unit */
	uint32_t speed_um_s;     /* highest joint speed */
	uint32_t accel_u_s2;     /* acceleration every profile uses, units/s^2 */
};

struct fw_config {
	uint8_t address;         /* Modbus slave address, 1..247 */
	uint16_t board;          /* FW_BOARD_* */
	uint32_t baud;           /* line speed, for the 3.5-character silence */
	uint32_t period_us;      /* control period */
	struct fw_joint_limits lim[FW_JOINTS];
};

/* A queued joint-space segment. */
struct fw_seg {
	uint32_t seq;
	uint16_t flags;          /* FW_SEG_* */
	uint16_t dwell_ms;
	uint32_t speed_um_s;     /* speed of the joint moving furthest */
	int32_t target_um[FW_JOINTS];
};

#define FW_RX_MAX 256        /* largest RTU frame */
#define FW_FRAME_GAP_US 50000u /* silence that ends a frame whose length is known but not reached */

struct fw {
	struct fw_config cfg;
	struct fw_io io;

	/* Modbus framing */
	uint8_t rx[FW_RX_MAX];
	unsigned rx_len;
	int rx_bad;              /* overrun or a failed frame: skip bytes until silence */
	uint64_t rx_last_us;
	uint32_t t35_us;
	uint8_t tx[FW_RX_MAX];

	/* registers the host writes */
	uint16_t hr[FW_HR_COUNT];

	/* drive */
	int state;               /* FW_STATE_* */
	uint16_t fault, fault_detail, refusal;
	int homed;
	int estop_input;
	int wd_tripped;

	/* counters */
	uint32_t good_frames, crc_errors, exceptions;
	uint32_t last_seq, done_seq, accepted, done;
	uint32_t ticks;
	uint32_t motion_ticks;    /* periods a segment ran in: motion, dwell or a stop's ramp */
	uint32_t last_rx_ms, wd_trip_ms, wd_last_rx_ms, stopped_ms;

	/* motion queue: ring of segments; the running one is q[q_head] */
	struct fw_seg q[FW_QUEUE_LEN];
	unsigned q_head, q_len;
	int32_t plan_end_um[FW_JOINTS]; /* where the last queued segment ends */

	/* the running segment's profile */
	int running;             /* q[q_head] has been started */
	float start[FW_JOINTS], delta[FW_JOINTS];
	float len, v, a;         /* path length (um of the leading joint), um/s, um/s^2 */
	float t_acc, t_flat, t_total; /* s */
	uint32_t t_ticks;        /* periods since the segment (or its stop) began */
	int stopping;            /* 1 decelerating for hold or stop */
	int stop_drop;           /* the stop drops the queue (not a hold) */
	float stop_s0, stop_v0;
	int paused;              /* held at rest in the middle of a segment */
	float pos[FW_JOINTS];    /* um */
};

void fw_init(struct fw *f, const struct fw_config *cfg, const struct fw_io *io);

/* Received bytes, in order; frames are handled as soon as they are complete. */
void fw_rx(struct fw *f, const uint8_t *buf, unsigned n);

/* Ends a frame after 3.5 character times of silence; call it often. */
void fw_poll(struct fw *f);

/* One control period: motion, watchdog. */
void fw_tick(struct fw *f);

/* The e-stop input (1 active). Becoming active latches the e-stop at once. */
void fw_set_estop_input(struct fw *f, int active);

/* Register reads as the host sees them (0 on success, a Modbus exception code otherwise). */
int fw_read_input(struct fw *f, unsigned addr, uint16_t *out);
int fw_read_holding(const struct fw *f, unsigned addr, uint16_t *out);

/* Position of joint j in um, rounded. */
int32_t fw_pos_um(const struct fw *f, int j);

/* CRC16 of Modbus RTU (polynomial 0xA001 reflected, initial 0xFFFF). */
uint16_t fw_crc16(const uint8_t *buf, unsigned n);

/* The default configuration: address 1, 115200 baud, 1 ms period, the example machine's limits. */
void fw_default_config(struct fw_config *cfg, uint16_t board);

#endif
