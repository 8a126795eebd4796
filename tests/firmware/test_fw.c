/* test_fw.c: the firmware core natively, with an injected clock: Modbus framing and functions, states, motion profiles, limits, watchdog and e-stop. */
#include "fw.h"
#include "fw_internal.h"
#include "test.h"

/* The board the tests play: a clock they move by hand and a capture of what the core sends. */
static uint64_t clock_us;
static uint8_t sent[512];
static unsigned sent_len;

static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return clock_us;
}

static void fake_tx(void *ctx, const uint8_t *buf, unsigned n)
{
	(void)ctx;
	memcpy(sent + sent_len, buf, n);
	sent_len += n;
}

static struct fw fwx;

static struct fw *boot(void)
{
	struct fw_config cfg;
	struct fw_io io = { fake_now, fake_tx, NULL };

	clock_us = 0;
	sent_len = 0;
	fw_default_config(&cfg, FW_BOARD_NATIVE);
	fw_init(&fwx, &cfg, &io);
	return &fwx;
}

/* Sends a request (CRC appended) and returns the reply length; the reply is in sent[]. */
static unsigned request(struct fw *f, const uint8_t *req, unsigned n)
{
	uint8_t buf[300];
	uint16_t crc = fw_crc16(req, n);

	memcpy(buf, req, n);
	buf[n] = (uint8_t)crc;
	buf[n + 1] = (uint8_t)(crc >> 8);
	sent_len = 0;
	fw_rx(f, buf, n + 2);
	return sent_len;
}

static int reply_crc_ok(void)
{
	return sent_len >= 4 &&
	       fw_crc16(sent, sent_len - 2) == (uint16_t)(sent[sent_len - 2] | sent[sent_len - 1] << 8);
}

/* Writes count registers by function 16: 0 when accepted, else the exception code. */
static int wr(struct fw *f, unsigned addr, unsigned count, const uint16_t *v)
{
	uint8_t req[7 + 250];

	req[0] = 1;
	req[1] = 16;
	req[2] = (uint8_t)(addr >> 8);
	req[3] = (uint8_t)addr;
	req[4] = 0;
	req[5] = (uint8_t)count;
	req[6] = (uint8_t)(2 * count);
	for (unsigned i = 0; i < count; i++) {
		req[7 + 2 * i] = (uint8_t)(v[i] >> 8);
		req[8 + 2 * i] = (uint8_t)v[i];
	}
	if (request(f, req, 7 + 2 * count) == 0)
		return -1;
	return (sent[1] & 0x80) ? sent[2] : 0;
}

static int wr1(struct fw *f, unsigned addr, uint16_t v)
{
	uint8_t req[6] = { 1, 6, (uint8_t)(addr >> 8), (uint8_t)addr, (uint8_t)(v >> 8), (uint8_t)v };

	if (request(f, req, 6) == 0)
		return -1;
	return (sent[1] & 0x80) ? sent[2] : 0;
}

static uint16_t in(struct fw *f, unsigned addr)
{
	uint16_t v = 0xFFFF;

	CHECK(fw_read_input(f, addr, &v) == 0);
	return v;
}

static uint32_t in32(struct fw *f, unsigned addr)
{
	return ((uint32_t)in(f, addr) << 16) | in(f, addr + 1);
}

/* Runs ms control periods of 1 ms. */
static void run_ms(struct fw *f, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		clock_us += 1000;
		fw_poll(f);
		fw_tick(f);
	}
}

/* Keeps the host "present" while running: a status read every 50 ms. */
static void run_polled(struct fw *f, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		if (i % 50 == 0) {
			uint8_t req[6] = { 1, 4, 0, FW_IR_STATUS, 0, 1 };

			request(f, req, 6);
		}
		run_ms(f, 1);
	}
}

static int seg(struct fw *f, uint32_t seq, uint16_t flags, uint16_t dwell, uint32_t speed,
	       int32_t j1, int32_t j2, int32_t j3, int32_t j4)
{
	int32_t t[4] = { j1, j2, j3, j4 };
	uint16_t v[FW_SEG_REGS];

	v[0] = flags;
	v[1] = dwell;
	v[2] = (uint16_t)(speed >> 16);
	v[3] = (uint16_t)speed;
	for (int j = 0; j < 4; j++) {
		v[4 + 2 * j] = (uint16_t)((uint32_t)t[j] >> 16);
		v[5 + 2 * j] = (uint16_t)t[j];
	}
	v[12] = (uint16_t)(seq >> 16);
	v[13] = (uint16_t)seq;
	return wr(f, FW_HR_SEG_FLAGS, FW_SEG_REGS, v);
}

/* Boots, enables and homes at (100, 100, 50, 0) mm. */
static struct fw *boot_homed(void)
{
	struct fw *f = boot();
	uint16_t home[8] = { 0x0001, 0x86A0, 0x0001, 0x86A0, 0, 50000, 0, 0 };

	CHECK(wr(f, FW_HR_HOME, 8, home) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOME) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	return f;
}

TEST(crc_matches_the_modbus_reference)
{
	/* The request example of the Modbus serial line guide: 01 03 00 00 00 0A -> C5 CD. */
	static const uint8_t r[] = { 0x01, 0x03, 0x00, 0x00, 0x00, 0x0A };

	CHECK(fw_crc16(r, sizeof(r)) == 0xCDC5);
	CHECK(fw_crc16(r, 0) == 0xFFFF);
}

TEST(reads_magic_and_version)
{
	struct fw *f = boot();
	uint8_t req[6] = { 1, 4, 0, 0, 0, 2 };

	CHECK(request(f, req, 6) == 9);
	CHECK(reply_crc_ok());
	CHECK(sent[0] == 1 && sent[1] == 4 && sent[2] == 4);
	CHECK(sent[3] == 0x42 && sent[4] == 0x4C);
	CHECK(sent[5] == 0 && sent[6] == FW_PROTOCOL_VERSION);
	CHECK(in32(f, FW_IR_GOOD_FRAMES) == 1);
}

TEST(reads_holding_registers)
{
	struct fw *f = boot();
	uint8_t req[6] = { 1, 3, 0, FW_HR_WATCHDOG_MS, 0, 1 };

	CHECK(request(f, req, 6) == 7);
	CHECK(sent[1] == 3 && sent[2] == 2);
	CHECK(((sent[3] << 8) | sent[4]) == FW_WATCHDOG_DEFAULT_MS);
	{
		uint16_t v;

		CHECK(fw_read_holding(f, FW_HR_COUNT, &v) == FW_EX_ILLEGAL_ADDRESS);
		CHECK(fw_read_input(f, FW_IR_COUNT, &v) == FW_EX_ILLEGAL_ADDRESS);
		CHECK(fw_read_input(f, 46, &v) == 0 && v == 0); /* reserved */
	}
}

TEST(exceptions_illegal_function_address_value)
{
	struct fw *f = boot();
	uint8_t unknown[4] = { 1, 0x2B, 0x0E, 0x01 };
	uint8_t past_end[6] = { 1, 4, 0, FW_IR_COUNT - 1, 0, 2 };
	uint8_t zero[6] = { 1, 3, 0, 0, 0, 0 };
	uint8_t too_many[6] = { 1, 4, 0, 0, 0, 126 };
	uint8_t hr_past[6] = { 1, 6, 0, FW_HR_COUNT, 0, 1 };
	uint8_t fc16_bad_count[9] = { 1, 16, 0, 1, 0, 2, 2, 0, 100 };

	/* An unknown function has no known length: it ends by silence. */
	CHECK(request(f, unknown, 4) == 0);
	clock_us += 2000;
	fw_poll(f);
	CHECK(sent_len == 5 && sent[1] == 0xAB && sent[2] == FW_EX_ILLEGAL_FUNCTION);
	CHECK(reply_crc_ok());
	CHECK(request(f, past_end, 6) == 5 && sent[1] == 0x84 && sent[2] == FW_EX_ILLEGAL_ADDRESS);
	CHECK(request(f, zero, 6) == 5 && sent[1] == 0x83 && sent[2] == FW_EX_ILLEGAL_VALUE);
	CHECK(request(f, too_many, 6) == 5 && sent[2] == FW_EX_ILLEGAL_VALUE);
	CHECK(request(f, hr_past, 6) == 5 && sent[1] == 0x86 && sent[2] == FW_EX_ILLEGAL_ADDRESS);
	/* Byte count 2 for 2 registers: the frame is complete by its byte count but inconsistent. */
	CHECK(request(f, fc16_bad_count, 9) == 5 && sent[1] == 0x90 &&
	      sent[2] == FW_EX_ILLEGAL_VALUE);
	CHECK(wr1(f, FW_HR_WATCHDOG_MS, 5) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_BAD_VALUE);
	CHECK(wr1(f, FW_HR_WATCHDOG_MS, 65000) == FW_EX_ILLEGAL_VALUE);
	CHECK(wr1(f, FW_HR_WATCHDOG_MS, 300) == 0);
	CHECK(in(f, FW_IR_REFUSAL) == 0);
	CHECK(in32(f, FW_IR_EXCEPTIONS) == 8);
}

/*
 * The register file checks its own bounds (found by fuzz/fuzz_modbus.c: a
 * write at FW_HR_COUNT - 1 of two registers wrote past hr[], which only the
 * Modbus layer's check had kept from happening).
 */
TEST(register_writes_past_the_end_are_refused_by_the_drive)
{
	struct fw *f = boot();
	const uint16_t v[4] = { 7, 7, 7, 7 };
	struct fw before = *f;

	CHECK(fw_write_holding(f, FW_HR_COUNT - 1, 2, v) == FW_EX_ILLEGAL_ADDRESS);
	CHECK(fw_write_holding(f, FW_HR_COUNT, 1, v) == FW_EX_ILLEGAL_ADDRESS);
	CHECK(fw_write_holding(f, 0xffffffffu, 2, v) == FW_EX_ILLEGAL_ADDRESS);
	CHECK(memcmp(&before, f, sizeof(before)) == 0);
	/* A register inside the file is written as before. */
	CHECK(fw_write_holding(f, FW_HR_SEG_DWELL_MS, 1, v) == 0);
	CHECK(f->hr[FW_HR_SEG_DWELL_MS] == 7);
}

TEST(crc_errors_and_other_slaves)
{
	struct fw *f = boot();
	uint8_t bad[8] = { 1, 4, 0, 0, 0, 1, 0x12, 0x34 };
	uint8_t other[6] = { 7, 4, 0, 0, 0, 1 };
	uint8_t bcast[6] = { 0, 6, 0, FW_HR_WATCHDOG_MS, 0x03, 0xE8 };
	uint8_t bcast_read[6] = { 0, 4, 0, 0, 0, 1 };

	sent_len = 0;
	fw_rx(f, bad, 8);
	CHECK(sent_len == 0);
	CHECK(in32(f, FW_IR_CRC_ERRORS) == 1);
	CHECK(request(f, other, 6) == 0);
	CHECK(in32(f, FW_IR_GOOD_FRAMES) == 0);
	/* Broadcast writes act without a reply; broadcast reads are ignored. */
	CHECK(request(f, bcast, 6) == 0);
	CHECK(f->hr[FW_HR_WATCHDOG_MS] == 1000);
	CHECK(request(f, bcast_read, 6) == 0);
	/* A wrong-length known function (ended by silence) is malformed. */
	{
		uint8_t shortfc3[3] = { 1, 3, 0 }, shortfc6[3] = { 1, 6, 0 };
		uint8_t shortfc16[8] = { 1, 16, 0, 1, 0, 1, 2, 0 };

		CHECK(request(f, shortfc3, 3) == 0);
		clock_us += FW_FRAME_GAP_US;
		fw_poll(f);
		CHECK(sent_len == 5 && sent[2] == FW_EX_ILLEGAL_VALUE);
		CHECK(request(f, shortfc6, 3) == 0);
		clock_us += FW_FRAME_GAP_US;
		fw_poll(f);
		CHECK(sent_len == 5 && sent[1] == 0x86 && sent[2] == FW_EX_ILLEGAL_VALUE);
		CHECK(request(f, shortfc16, 8) == 0);
		clock_us += FW_FRAME_GAP_US;
		fw_poll(f);
		CHECK(sent_len == 5 && sent[1] == 0x90 && sent[2] == FW_EX_ILLEGAL_VALUE);
	}
}

TEST(frames_split_and_joined)
{
	struct fw *f = boot();
	uint8_t req[8] = { 1, 4, 0, 0, 0, 1 };
	uint16_t crc = fw_crc16(req, 6);

	req[6] = (uint8_t)crc;
	req[7] = (uint8_t)(crc >> 8);
	sent_len = 0;
	/* Byte by byte with small gaps: one frame. */
	for (int i = 0; i < 8; i++) {
		clock_us += 100;
		fw_rx(f, req + i, 1);
		fw_poll(f);
	}
	CHECK(sent_len == 7);
	/* A frame of known length delivered in two chunks 5 ms apart (a USB adapter) is one frame. */
	sent_len = 0;
	fw_rx(f, req, 3);
	clock_us += 5000;
	fw_poll(f);
	fw_rx(f, req + 3, 5);
	CHECK(sent_len == 7);
	/* A partial frame, then a long silence, then a whole one: the partial is dropped as a CRC error. */
	sent_len = 0;
	fw_rx(f, req, 3);
	clock_us += FW_FRAME_GAP_US;
	fw_rx(f, req, 8);
	CHECK(sent_len == 7);
	CHECK(in32(f, FW_IR_CRC_ERRORS) == 1);
	/* An unknown function's frame ends at 3.5 characters of silence. */
	sent_len = 0;
	{
		uint8_t unk[2] = { 1, 0x41 };

		fw_rx(f, unk, 2);
		clock_us += 1000;
		fw_poll(f);
		CHECK(sent_len == 0);
		clock_us += 800;
		fw_poll(f);
		CHECK(in32(f, FW_IR_CRC_ERRORS) == 2);
	}
	/* Two frames in one read are both answered. */
	{
		uint8_t two[16];

		memcpy(two, req, 8);
		memcpy(two + 8, req, 8);
		sent_len = 0;
		fw_rx(f, two, 16);
		CHECK(sent_len == 14);
	}
	/* Garbage longer than any frame: counted once at the silence, then the line works again. */
	{
		uint8_t junk[300];

		memset(junk, 0x55, sizeof(junk));
		sent_len = 0;
		fw_rx(f, junk, sizeof(junk));
		fw_poll(f);
		CHECK(sent_len == 0);
		clock_us += 5000;
		fw_poll(f);
		CHECK(in32(f, FW_IR_CRC_ERRORS) == 3);
		fw_rx(f, req, 8);
		CHECK(sent_len == 7);
	}
}

TEST(slow_line_silence_scales_with_baud)
{
	struct fw_config cfg;
	struct fw_io io = { fake_now, fake_tx, NULL };

	fw_default_config(&cfg, FW_BOARD_NATIVE);
	cfg.baud = 9600;
	fw_init(&fwx, &cfg, &io);
	CHECK(fwx.t35_us == 4010);
}

TEST(state_machine_transitions)
{
	struct fw *f = boot();

	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_READY);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_READY);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_HOLD);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_HOLD);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_READY);
	CHECK(wr1(f, FW_HR_CONTROL, 0) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	/* Straight from disabled to enabled in one write. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	/* Homing needs a ready drive. */
	CHECK(wr1(f, FW_HR_CONTROL, 0) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_HOME) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_NOT_ENABLED);
	/* A home outside the limits is refused. */
	{
		uint16_t home[2] = { 0xFFFF, 0xFFFF }; /* -1 um on joint 1 */

		CHECK(wr(f, FW_HR_HOME, 2, home) == 0);
		CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY) == 0);
		CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_HOME) == FW_EX_ILLEGAL_VALUE);
		CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_JOINT_LIMIT);
		CHECK(!(in(f, FW_IR_STATUS) & FW_SW_HOMED));
	}
}

TEST(homing_sets_position)
{
	struct fw *f = boot_homed();

	CHECK(in(f, FW_IR_STATUS) & FW_SW_HOMED);
	CHECK((int32_t)in32(f, FW_IR_POS) == 100000);
	CHECK((int32_t)in32(f, FW_IR_POS + 4) == 50000);
	CHECK(in(f, FW_IR_BOARD) == FW_BOARD_NATIVE);
	CHECK(in(f, FW_IR_PERIOD_US) == 1000);
	CHECK((int32_t)in32(f, FW_IR_LIMITS + 8 * 2 + FW_LIM_MIN) == -40000);
	CHECK(in32(f, FW_IR_LIMITS + 8 * 0 + FW_LIM_MAX) == 700000);
	CHECK(in32(f, FW_IR_LIMITS + 8 * 3 + FW_LIM_SPEED) == 360000);
	CHECK(in32(f, FW_IR_LIMITS + 8 * 1 + FW_LIM_ACCEL) == 2000);
}

TEST(trapezoid_reaches_target_in_profile_time)
{
	struct fw *f = boot_homed();
	unsigned ms = 0;

	/* 100 mm at 100 mm/s, 2000 mm/s^2: 1.0 s cruise + 0.05 s of ramps = 1050 ms. */
	CHECK(seg(f, 1, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 1);
	CHECK(in(f, FW_IR_QUEUE_FREE) == FW_QUEUE_LEN - 1);
	while (in32(f, FW_IR_DONE) == 0 && ms < 3000) {
		run_polled(f, 1);
		ms++;
		if (ms == 525) {
			/* Halfway in time is halfway in space, by symmetry. */
			CHECK_NEAR((double)(int32_t)in32(f, FW_IR_POS), 150000.0, 200.0);
			CHECK(in(f, FW_IR_STATUS) & FW_SW_MOVING);
		}
	}
	CHECK_MSG(ms >= 1050 && ms <= 1052, "took %u ms", ms);
	CHECK((int32_t)in32(f, FW_IR_POS) == 200000);
	CHECK(in32(f, FW_IR_DONE_SEQ) == 1);
	CHECK(in32(f, FW_IR_LAST_SEQ) == 1);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_MOVING));
}

TEST(short_move_is_a_triangle)
{
	struct fw *f = boot_homed();
	unsigned ms = 0;

	/* 2 mm at 500 mm/s never reaches that speed: 2 * sqrt(2 / 2000) s = 63.2 ms. */
	CHECK(seg(f, 1, 0, 0, 500000, 100000, 102000, 50000, 0) == 0);
	while (in32(f, FW_IR_DONE) == 0 && ms < 1000) {
		run_ms(f, 1);
		ms++;
	}
	CHECK_MSG(ms >= 63 && ms <= 65, "took %u ms", ms);
	CHECK((int32_t)in32(f, FW_IR_POS + 2) == 102000);
}

TEST(multi_joint_and_zero_length_and_dwell)
{
	struct fw *f = boot_homed();

	/* z moves half as far as x: both arrive together. */
	CHECK(seg(f, 1, 0, 0, 100000, 110000, 100000, 45000, 0) == 0);
	CHECK(seg(f, 2, 0, 0, 100000, 110000, 100000, 45000, 0) == 0); /* already there */
	CHECK(seg(f, 3, FW_SEG_DWELL, 20, 0, 0, 0, 0, 0) == 0);
	/* 10 mm at 100 mm/s: 50 ms cruise and 100 ms of ramps. */
	run_polled(f, 148);
	CHECK(in32(f, FW_IR_DONE) == 0);
	run_polled(f, 12);
	CHECK(in32(f, FW_IR_DONE) == 2);
	CHECK((int32_t)in32(f, FW_IR_POS + 4) == 45000);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_MOVING); /* the dwell runs */
	run_polled(f, 25);
	CHECK(in32(f, FW_IR_DONE) == 3);
	CHECK((int32_t)in32(f, FW_IR_POS) == 110000);
}

TEST(out_of_limit_target_refused_with_fault)
{
	struct fw *f = boot_homed();

	CHECK(seg(f, 1, 0, 0, 100000, 100000, 100000, -41000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_FAULT);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_JOINT_LIMIT);
	CHECK(in(f, FW_IR_FAULT_DETAIL) == 3);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_FAULT);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	/* Nothing moves in fault; a reset goes to disabled, and the host enables again. */
	CHECK(seg(f, 1, 0, 0, 100000, 110000, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_NOT_ENABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_FAULT_RESET) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	CHECK(in(f, FW_IR_FAULT) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	CHECK(seg(f, 1, 0, 0, 100000, 110000, 100000, 50000, 0) == 0);
	/* The upper limit too, on joint 1. */
	CHECK(seg(f, 2, 0, 0, 100000, 700001, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT_DETAIL) == 1);
}

TEST(too_fast_segment_refused_with_fault)
{
	struct fw *f = boot_homed();

	/* Joint 4 (360 deg/s) leads a move at 400 deg/s. */
	CHECK(seg(f, 1, 0, 0, 400000, 100000, 100000, 50000, 90000) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_SPEED_LIMIT);
	CHECK(in(f, FW_IR_FAULT_DETAIL) == 4);
	f = boot_homed();
	CHECK(seg(f, 1, 0, 0, 0, 110000, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_BAD_SEGMENT);
	f = boot_homed();
	CHECK(seg(f, 1, 0x80, 0, 1000, 110000, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_BAD_SEGMENT);
}

TEST(sequence_duplicates_and_gaps)
{
	struct fw *f = boot_homed();

	CHECK(seg(f, 1, 0, 0, 100000, 110000, 100000, 50000, 0) == 0);
	/* The same segment again (a retry after a lost reply) is accepted once. */
	CHECK(seg(f, 1, 0, 0, 100000, 110000, 100000, 50000, 0) == 0);
	CHECK(in32(f, FW_IR_ACCEPTED) == 1);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 1);
	CHECK(seg(f, 3, 0, 0, 100000, 120000, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_SEQ_GAP);
}

TEST(motion_refused_before_homing_or_enabling)
{
	struct fw *f = boot();

	CHECK(seg(f, 1, 0, 0, 100000, 1000, 0, 0, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_NOT_ENABLED);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(seg(f, 1, 0, 0, 100000, 1000, 0, 0, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_NOT_HOMED);
}

TEST(queue_full_is_busy_not_fault)
{
	struct fw *f = boot_homed();
	uint32_t seq;

	for (seq = 1; seq <= FW_QUEUE_LEN; seq++)
		CHECK(seg(f, seq, 0, 0, 100000, 100000 + (int32_t)seq * 100, 100000, 50000, 0) == 0);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_QUEUE_FULL);
	CHECK(in(f, FW_IR_QUEUE_FREE) == 0);
	CHECK(seg(f, seq, 0, 0, 100000, 100000, 100000, 50000, 0) == FW_EX_BUSY);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_BUSY);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	run_polled(f, 2000);
	CHECK(in32(f, FW_IR_DONE) == FW_QUEUE_LEN);
	CHECK((int32_t)in32(f, FW_IR_POS) == 100000 + FW_QUEUE_LEN * 100);
}

TEST(hold_decelerates_and_resume_reaches_target)
{
	struct fw *f = boot_homed();
	int32_t at_hold, at_rest;

	CHECK(seg(f, 1, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	CHECK(seg(f, 2, 0, 0, 100000, 200000, 150000, 50000, 0) == 0);
	run_polled(f, 300);
	at_hold = (int32_t)in32(f, FW_IR_POS);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_STOPPING);
	/* 100 mm/s at 2000 mm/s^2 stops in 50 ms over 2.5 mm. */
	run_polled(f, 60);
	at_rest = (int32_t)in32(f, FW_IR_POS);
	CHECK_NEAR((double)(at_rest - at_hold), 2500.0, 150.0);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_MOVING));
	run_polled(f, 500);
	CHECK((int32_t)in32(f, FW_IR_POS) == at_rest);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 2);
	/* Hold while at rest in hold changes nothing; resume finishes both segments exactly. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	run_polled(f, 1500);
	CHECK(in32(f, FW_IR_DONE) == 2);
	CHECK((int32_t)in32(f, FW_IR_POS) == 200000);
	CHECK((int32_t)in32(f, FW_IR_POS + 2) == 150000);
}

TEST(hold_then_resume_while_decelerating_and_dwell_hold)
{
	struct fw *f = boot_homed();

	CHECK(seg(f, 1, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	run_polled(f, 200);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	run_polled(f, 10);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	run_polled(f, 1500);
	CHECK(in32(f, FW_IR_DONE) == 1);
	CHECK((int32_t)in32(f, FW_IR_POS) == 200000);
	/* Homing with motion queued is busy. */
	CHECK(seg(f, 2, 0, 0, 100000, 210000, 100000, 50000, 0) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOME) == FW_EX_BUSY);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_BUSY);
	/* A hold, then a stop while the hold decelerates: the stop wins and drops the queue. */
	run_polled(f, 40);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD | FW_CW_STOP) == 0);
	run_polled(f, 100);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	CHECK(in32(f, FW_IR_DONE) == 1);
	/* Queued in hold, nothing starts until the hold is released. */
	CHECK(seg(f, 3, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	run_polled(f, 10);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_MOVING));
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	run_polled(f, 300);
	CHECK(in32(f, FW_IR_DONE) == 2);
	CHECK((int32_t)in32(f, FW_IR_POS) == 200000);
	/* A hold during a dwell pauses it at once. */
	CHECK(seg(f, 4, FW_SEG_DWELL, 100, 0, 0, 0, 0, 0) == 0);
	run_polled(f, 10);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	run_polled(f, 300);
	CHECK(in32(f, FW_IR_DONE) == 2);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	run_polled(f, 120);
	CHECK(in32(f, FW_IR_DONE) == 3);
}

TEST(stop_drops_the_queue)
{
	struct fw *f = boot_homed();
	uint32_t stopped;

	CHECK(seg(f, 1, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	CHECK(seg(f, 2, 0, 0, 100000, 200000, 200000, 50000, 0) == 0);
	run_polled(f, 200);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_STOP) == 0);
	/* While the stop decelerates, new motion is refused as busy. */
	CHECK(seg(f, 3, 0, 0, 100000, 100000, 100000, 50000, 0) == FW_EX_BUSY);
	run_polled(f, 60);
	stopped = in32(f, FW_IR_STOPPED_MS);
	CHECK(stopped > 200 && stopped <= 262);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	CHECK(in32(f, FW_IR_DONE) == 0);
	/* Motion goes on from where the stop rested. */
	CHECK(seg(f, 3, 0, 0, 100000, 100000, 100000, 50000, 0) == 0);
	run_polled(f, 1000);
	CHECK(in32(f, FW_IR_DONE) == 1);
	CHECK((int32_t)in32(f, FW_IR_POS) == 100000);
	/* Disabling while moving stops too; a stop with nothing moving just empties the queue. */
	CHECK(seg(f, 4, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	run_polled(f, 100);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_READY);
	run_polled(f, 100);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_MOVING));
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	CHECK(seg(f, 5, 0, 0, 100000, 100000, 100000, 50000, 0) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD | FW_CW_STOP) == 0);
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, 0) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
}

TEST(watchdog_stops_a_silent_host_in_time)
{
	struct fw *f = boot_homed();
	uint32_t last, trip, stopped;

	CHECK(wr1(f, FW_HR_WATCHDOG_MS, 100) == 0);
	CHECK(seg(f, 1, 0, 0, 100000, 300000, 100000, 50000, 0) == 0);
	run_ms(f, 400); /* the host says nothing */
	last = in32(f, FW_IR_LAST_RX_MS);
	trip = in32(f, FW_IR_WD_TRIP_MS);
	stopped = in32(f, FW_IR_STOPPED_MS);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_FAULT);
	CHECK(in(f, FW_IR_FAULT) == FW_FAULT_HOST_TIMEOUT);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_WATCHDOG);
	CHECK_MSG(trip > last + 100 && trip <= last + 100 + 1, "last %u trip %u", last, trip);
	CHECK(in32(f, FW_IR_WD_LAST_RX_MS) == last);
	/* A controlled stop from 100 mm/s at 2000 mm/s^2: 50 ms and a period. */
	CHECK_MSG(stopped > trip && stopped <= trip + 51, "trip %u stopped %u", trip, stopped);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_MOVING));
	CHECK((int32_t)in32(f, FW_IR_POS) < 300000);
	/* Idle silence is fine. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_FAULT_RESET) == 0);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(!(in(f, FW_IR_STATUS) & FW_SW_WATCHDOG));
	run_ms(f, 1000);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
}

TEST(estop_input_latches_until_cleared)
{
	struct fw *f = boot_homed();
	int32_t at;

	CHECK(seg(f, 1, 0, 0, 100000, 300000, 100000, 50000, 0) == 0);
	CHECK(seg(f, 2, 0, 0, 100000, 300000, 200000, 50000, 0) == 0);
	run_polled(f, 200);
	fw_set_estop_input(f, 1);
	at = (int32_t)in32(f, FW_IR_POS);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ESTOP);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_ESTOP_INPUT);
	run_polled(f, 100);
	CHECK((int32_t)in32(f, FW_IR_POS) == at); /* stopped at once */
	CHECK(in(f, FW_IR_QUEUE_LEN) == 0);
	/* Releasing the input does not clear the latch; clearing with the input pressed is refused. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_ESTOP_CLEAR) ==
	      FW_EX_ILLEGAL_VALUE);
	fw_set_estop_input(f, 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ESTOP);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ESTOP);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_ESTOP_CLEAR) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	/* The software e-stop latches the same way. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_ESTOP) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ESTOP);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_ESTOP);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_ESTOP_CLEAR) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_DISABLED);
	/* A fault state ignores everything but its reset. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	CHECK(seg(f, 9, 0, 0, 100000, 300000, 100000, 50000, 0) == FW_EX_ILLEGAL_VALUE);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_FAULT);
}

TEST(undefined_control_bits_are_refused_and_change_nothing)
{
	struct fw *f = boot_homed();
	uint16_t both[2] = { FW_CW_READY | 0x0100, 777 };

	/* Function 6 and function 16 alike: exception 3, REFUSAL BAD_VALUE, the word as it was. */
	for (unsigned bit = 0x0100; bit; bit = (bit << 1) & 0xffff) {
		CHECK(wr1(f, FW_HR_CONTROL, (uint16_t)(FW_CW_READY | bit)) == FW_EX_ILLEGAL_VALUE);
		CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_BAD_VALUE);
	}
	CHECK(wr(f, FW_HR_CONTROL, 2, both) == FW_EX_ILLEGAL_VALUE);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_ENABLED);
	{
		uint16_t cw = 0, wd = 0;

		CHECK(fw_read_holding(f, FW_HR_CONTROL, &cw) == 0 && cw == (FW_CW_READY | FW_CW_ENABLE));
		CHECK(fw_read_holding(f, FW_HR_CONTROL + 1, &wd) == 0 && wd != 777);
	}
	/* Every defined bit is still taken. */
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	CHECK(in(f, FW_IR_REFUSAL) == 0);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_HOLD);
}

TEST(home_while_moving_is_busy)
{
	struct fw *f = boot_homed();

	CHECK(seg(f, 1, 0, 0, 100000, 300000, 100000, 50000, 0) == 0);
	run_polled(f, 50);
	CHECK(in(f, FW_IR_STATUS) & FW_SW_MOVING);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOME) == FW_EX_BUSY);
	CHECK(in(f, FW_IR_REFUSAL) == FW_FAULT_BUSY);
	CHECK(in(f, FW_IR_STATE) == FW_STATE_ENABLED);
}

/*
 * MOTION_MS counts the periods a segment runs in (docs/register-map.md): the
 * host's arm_time_s, which must not grow while the arm idles or is held, nor
 * with the time the host takes between its polls.
 */
TEST(motion_time_counts_only_the_periods_a_segment_runs)
{
	struct fw *f = boot_homed();
	uint32_t held;

	run_polled(f, 500);
	CHECK_MSG(in32(f, FW_IR_MOTION_MS) == 0, "idle counted %u ms", in32(f, FW_IR_MOTION_MS));
	/* 100 mm at 100 mm/s, 2000 mm/s^2: 1050 ms of profile, however long the host waits. */
	CHECK(seg(f, 1, 0, 0, 100000, 200000, 100000, 50000, 0) == 0);
	run_polled(f, 3000);
	CHECK(in32(f, FW_IR_DONE) == 1);
	CHECK_MSG(in32(f, FW_IR_MOTION_MS) >= 1050 && in32(f, FW_IR_MOTION_MS) <= 1052,
		  "a 1050 ms profile counted %u ms", in32(f, FW_IR_MOTION_MS));
	CHECK(in32(f, FW_IR_TIME_MS) >= 3500);
	/* Held at rest mid-segment: the hold's ramp counts, the wait does not. */
	CHECK(seg(f, 2, 0, 0, 100000, 100000, 100000, 50000, 0) == 0);
	run_polled(f, 300);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE | FW_CW_HOLD) == 0);
	run_polled(f, 60);
	held = in32(f, FW_IR_MOTION_MS);
	run_polled(f, 500);
	CHECK_MSG(in32(f, FW_IR_MOTION_MS) == held, "held 500 ms counted %u ms",
		  in32(f, FW_IR_MOTION_MS) - held);
	CHECK(wr1(f, FW_HR_CONTROL, FW_CW_READY | FW_CW_ENABLE) == 0);
	run_polled(f, 1500);
	CHECK(in32(f, FW_IR_DONE) == 2);
	CHECK(in32(f, FW_IR_MOTION_MS) > held && in32(f, FW_IR_MOTION_MS) < held + 1500);
}

TEST_MAIN(T(crc_matches_the_modbus_reference), T(reads_magic_and_version),
	  T(reads_holding_registers), T(exceptions_illegal_function_address_value),
	  T(register_writes_past_the_end_are_refused_by_the_drive),
	  T(crc_errors_and_other_slaves), T(frames_split_and_joined),
	  T(slow_line_silence_scales_with_baud), T(state_machine_transitions),
	  T(homing_sets_position), T(trapezoid_reaches_target_in_profile_time),
	  T(short_move_is_a_triangle), T(multi_joint_and_zero_length_and_dwell),
	  T(out_of_limit_target_refused_with_fault), T(too_fast_segment_refused_with_fault),
	  T(sequence_duplicates_and_gaps), T(motion_refused_before_homing_or_enabling),
	  T(queue_full_is_busy_not_fault), T(hold_decelerates_and_resume_reaches_target),
	  T(hold_then_resume_while_decelerating_and_dwell_hold), T(stop_drops_the_queue),
	  T(watchdog_stops_a_silent_host_in_time), T(estop_input_latches_until_cleared),
	  T(undefined_control_bits_are_refused_and_change_nothing), T(home_while_moving_is_busy),
	  T(motion_time_counts_only_the_periods_a_segment_runs))
