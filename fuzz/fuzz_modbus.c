/*
 * fuzz_modbus.c: fuzzes the firmware core as a hostile Modbus master would:
 * raw bytes, frames with a correct CRC (so the fuzzer gets past the check to
 * the functions and register writes), register writes straight into the
 * drive layer, time passing and the e-stop, in any order. The input is a
 * list of records: an op byte (its low 3 bits the op), then what it takes.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fw.h"
#include "fw_internal.h"

static uint64_t clock_us;

static uint64_t now(void *ctx)
{
	(void)ctx;
	return clock_us;
}

static void tx(void *ctx, const uint8_t *buf, unsigned n)
{
	(void)ctx;
	/* A response longer than the largest frame would overrun the board's buffer. */
	if (n > FW_RX_MAX)
		abort();
	(void)buf;
}

static void run_ticks(struct fw *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		clock_us += f->cfg.period_us;
		fw_tick(f);
		fw_poll(f);
	}
}

/* Whatever the master did, the joints stay inside their limits. */
static void check_limits(const struct fw *f)
{
	for (int j = 0; j < FW_JOINTS; j++) {
		int32_t p = fw_pos_um(f, j);

		if (p < f->cfg.lim[j].min_um - 1 || p > f->cfg.lim[j].max_um + 1)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fw f;
	struct fw_config cfg;
	struct fw_io io = { now, tx, NULL };
	size_t i = 0;

	clock_us = 0;
	fw_default_config(&cfg, FW_BOARD_NATIVE);
	fw_init(&f, &cfg, &io);
	while (i < size) {
		uint8_t op = data[i++];
		size_t left = size - i;

		switch (op & 7) {
		case 0: /* raw bytes, then the silence that ends a frame */
		case 1: { /* a frame with its CRC appended */
			uint8_t buf[FW_RX_MAX + 2];
			size_t n;

			if (left == 0)
				break;
			/* Its length in the next byte (a frame may be up to 256 bytes, CRC included). */
			n = (size_t)data[i++] + 1;
			n = n < left - 1 ? n : left - 1;
			if (n > FW_RX_MAX - 2)
				n = FW_RX_MAX - 2;
			memcpy(buf, data + i, n);
			i += n;
			if (op & 1) {
				uint16_t crc = fw_crc16(buf, (unsigned)n);

				buf[n++] = (uint8_t)crc;
				buf[n++] = (uint8_t)(crc >> 8);
			}
			fw_rx(&f, buf, (unsigned)n);
			clock_us += 2000;
			fw_poll(&f);
			break;
		}
		case 2: { /* register writes, as the Modbus layer makes them */
			uint16_t v[FW_HR_COUNT + 4];
			unsigned addr, count;

			if (left < 2)
				return 0;
			addr = data[i] % (FW_HR_COUNT + 4);
			count = data[i + 1] % (FW_HR_COUNT + 4);
			i += 2;
			for (unsigned k = 0; k < count; k++, i += 2)
				v[k] = i + 1 < size ? (uint16_t)(data[i] << 8 | data[i + 1]) : 0;
			fw_write_holding(&f, addr, count, v);
			break;
		}
		case 3: /* time passes: up to 255 control periods */
			run_ticks(&f, left ? data[i++] : 1);
			break;
		case 4: /* the e-stop input */
			fw_set_estop_input(&f, op >> 3 & 1);
			break;
		case 5: { /* reads of every register, as the host polls */
			uint16_t r;

			for (unsigned a = 0; a < FW_IR_COUNT + 2; a++)
				fw_read_input(&f, a, &r);
			for (unsigned a = 0; a < FW_HR_COUNT + 2; a++)
				fw_read_holding(&f, a, &r);
			break;
		}
		default: /* a long silence: the host watchdog's business */
			clock_us += (uint64_t)(op >> 3) * 100000u;
			run_ticks(&f, 1);
			break;
		}
		check_limits(&f);
	}
	run_ticks(&f, 50);
	check_limits(&f);
	return 0;
}
