/* fw_modbus.c: the Modbus RTU slave of the firmware: CRC16, framing by length and by silence, functions 3, 4, 6 and 16, exceptions. */
#include "fw.h"
#include "fw_internal.h"

uint16_t fw_crc16(const uint8_t *buf, unsigned n)
{
	uint16_t crc = 0xFFFF;

	for (unsigned i = 0; i < n; i++) {
		crc ^= buf[i];
		for (int b = 0; b < 8; b++)
			crc = (crc & 1) ? (uint16_t)((crc >> 1) ^ 0xA001) : (uint16_t)(crc >> 1);
	}
	return crc;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Appends the CRC (low byte first, as RTU sends it) and sends n + 2 bytes. */
static void send(struct fw *f, unsigned n)
{
	uint16_t crc = fw_crc16(f->tx, n);

	f->tx[n] = (uint8_t)crc;
	f->tx[n + 1] = (uint8_t)(crc >> 8);
	f->io.tx(f->io.ctx, f->tx, n + 2);
}

static void exception(struct fw *f, uint8_t fc, uint8_t code)
{
	f->exceptions++;
	f->tx[0] = f->cfg.address;
	f->tx[1] = (uint8_t)(fc | 0x80);
	f->tx[2] = code;
	send(f, 3);
}

/*
 * The length a request of function fc will have, once enough of it is in: 0
 * when not known yet, -1 for a function whose length only silence can tell.
 */
static int expected_len(const uint8_t *rx, unsigned len)
{
	if (len < 2)
		return 0;
	switch (rx[1]) {
	case 3:
	case 4:
	case 6:
		return 8;
	case 16:
		return len < 7 ? 0 : 9 + rx[6];
	default:
		return -1;
	}
}

static void do_read(struct fw *f, const uint8_t *rx, int input)
{
	unsigned addr = get16(rx + 2), count = get16(rx + 4);

	if (count < 1 || count > 125)
		return exception(f, rx[1], FW_EX_ILLEGAL_VALUE);
	if (addr + count > (input ? FW_IR_COUNT : FW_HR_COUNT))
		return exception(f, rx[1], FW_EX_ILLEGAL_ADDRESS);
	f->tx[0] = f->cfg.address;
	f->tx[1] = rx[1];
	f->tx[2] = (uint8_t)(2 * count);
	for (unsigned i = 0; i < count; i++) {
		uint16_t v = 0;

		/* Every address below the count is defined: a read cannot fail here. */
		if (input)
			fw_read_input(f, addr + i, &v);
		else
			fw_read_holding(f, addr + i, &v);
		put16(f->tx + 3 + 2 * i, v);
	}
	send(f, 3 + 2 * count);
}

/* Writes count registers from vals; replies (unless broadcast) with reply_len bytes of rx echoed. */
static void do_write(struct fw *f, const uint8_t *rx, unsigned addr, unsigned count,
		     const uint8_t *vals, int broadcast)
{
	uint16_t v[125];
	int ex;

	/* fw_write_holding refuses a range past the registers (FW_EX_ILLEGAL_ADDRESS). */
	for (unsigned i = 0; i < count; i++)
		v[i] = get16(vals + 2 * i);
	ex = fw_write_holding(f, addr, count, v);
	if (broadcast)
		return;
	if (ex)
		return exception(f, rx[1], (uint8_t)ex);
	/* Both write functions echo the first 6 bytes of the request. */
	for (int i = 0; i < 6; i++)
		f->tx[i] = rx[i];
	f->tx[0] = f->cfg.address;
	send(f, 6);
}

/* Handles one complete frame of len bytes (CRC included). */
static void frame(struct fw *f, const uint8_t *rx, unsigned len)
{
	uint8_t addr, fc;
	int broadcast;

	if (len < 4 || fw_crc16(rx, len - 2) != (uint16_t)(rx[len - 2] | (rx[len - 1] << 8))) {
		f->crc_errors++;
		return;
	}
	addr = rx[0];
	fc = rx[1];
	broadcast = addr == 0;
	/* A frame for another slave is the normal case on a shared line: no reply, no count. */
	if (addr != f->cfg.address && !broadcast)
		return;
	f->good_frames++;
	fw_host_seen(f);
	switch (fc) {
	case 3:
	case 4:
		if (len != 8)
			break;
		if (!broadcast)
			do_read(f, rx, fc == 4);
		return;
	case 6:
		if (len != 8)
			break;
		do_write(f, rx, get16(rx + 2), 1, rx + 4, broadcast);
		return;
	case 16: {
		unsigned count = get16(rx + 4);

		if (len != 9u + rx[6])
			break;
		if (count < 1 || count > 123 || rx[6] != 2 * count) {
			if (!broadcast)
				exception(f, fc, FW_EX_ILLEGAL_VALUE);
			return;
		}
		do_write(f, rx, get16(rx + 2), count, rx + 7, broadcast);
		return;
	}
	default:
		if (!broadcast)
			exception(f, fc, FW_EX_ILLEGAL_FUNCTION);
		return;
	}
	/* A known function with a wrong length (ended by silence): a malformed request. */
	if (!broadcast)
		exception(f, fc, FW_EX_ILLEGAL_VALUE);
}

/*
 * How long a silence ends the frame being received. Modbus says 3.5
 * characters; a frame whose length is already known is given longer, because
 * USB serial adapters (and QEMU's warped clock) deliver one frame in chunks
 * with gaps between them, and cutting it would only cost a retry.
 */
static uint32_t gap_us(const struct fw *f)
{
	return expected_len(f->rx, f->rx_len) > 0 && !f->rx_bad ? FW_FRAME_GAP_US : f->t35_us;
}

void fw_rx(struct fw *f, const uint8_t *buf, unsigned n)
{
	uint64_t now = f->io.now_us(f->io.ctx);

	for (unsigned i = 0; i < n; i++) {
		int want;

		/* A long enough gap ends whatever came before. */
		if (f->rx_len && now - f->rx_last_us >= gap_us(f))
			fw_poll(f);
		f->rx_last_us = now;
		if (f->rx_bad)
			continue;
		if (f->rx_len == FW_RX_MAX) {
			f->rx_bad = 1;
			continue;
		}
		f->rx[f->rx_len++] = buf[i];
		want = expected_len(f->rx, f->rx_len);
		/* The length is known from byte 7 on at the latest, so it is met exactly, never passed. */
		if (want > 0 && (unsigned)want == f->rx_len) {
			frame(f, f->rx, f->rx_len);
			f->rx_len = 0;
		}
	}
}

void fw_poll(struct fw *f)
{
	uint64_t now;

	if (!f->rx_len && !f->rx_bad)
		return;
	now = f->io.now_us(f->io.ctx);
	if (now - f->rx_last_us < gap_us(f))
		return;
	/* Silence: the frame ends here. A frame too long to hold counts as a CRC error. */
	if (f->rx_bad)
		f->crc_errors++;
	else if (f->rx_len)
		frame(f, f->rx, f->rx_len);
	f->rx_len = 0;
	f->rx_bad = 0;
}
