/* board.c: the mps2-an385 board (Cortex-M3 in QEMU): vector table, CMSDK UART0 with an RX interrupt, SysTick at the control rate, the main loop. */
#include <stdint.h>
#include <string.h>

#include "fw.h"

#define CPU_HZ 25000000u

/* CMSDK APB UART0. */
#define UART0 0x40004000u
#define UART_DATA (*(volatile uint32_t *)(UART0 + 0x00))
#define UART_STATE (*(volatile uint32_t *)(UART0 + 0x04))
#define UART_CTRL (*(volatile uint32_t *)(UART0 + 0x08))
#define UART_INTSTATUS (*(volatile uint32_t *)(UART0 + 0x0C))
#define UART_BAUDDIV (*(volatile uint32_t *)(UART0 + 0x10))
#define UART_STATE_TXFULL 1u
#define UART_STATE_RXFULL 2u
#define UART_CTRL_TXEN 1u
#define UART_CTRL_RXEN 2u
#define UART_CTRL_RXINT 8u
#define UART_INT_RX 2u
#define UART0_RX_IRQ 0

#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100u)
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

/* Received bytes, from the interrupt to the main loop; a power of two. */
#define RX_RING 1024u
static volatile uint8_t rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail;
static volatile uint32_t ms_count;     /* SysTick periods since boot */
static volatile uint32_t ticks_due;    /* control periods not yet run */
static uint32_t systick_load;

static struct fw fw;

static uint64_t now_us(void *ctx)
{
	uint32_t ms, val;

	(void)ctx;
	/* Read the count around the counter so a wrap in between is seen. */
	do {
		ms = ms_count;
		val = SYST_CVR;
	} while (ms != ms_count);
	return (uint64_t)ms * 1000u + (uint64_t)(systick_load - val) / (CPU_HZ / 1000000u);
}

static void tx(void *ctx, const uint8_t *buf, unsigned n)
{
	(void)ctx;
	for (unsigned i = 0; i < n; i++) {
		while (UART_STATE & UART_STATE_TXFULL)
			;
		UART_DATA = buf[i];
	}
}

void fw_uart0_rx_irq(void);
void fw_uart0_rx_irq(void)
{
	/* Clear first: a byte arriving while we drain then raises a fresh interrupt. */
	UART_INTSTATUS = UART_INT_RX;
	while (UART_STATE & UART_STATE_RXFULL) {
		uint8_t c = (uint8_t)UART_DATA;

		/* A full ring drops the byte; the frame fails its CRC and the host retries. */
		if (rx_head - rx_tail < RX_RING) {
			rx_ring[rx_head % RX_RING] = c;
			rx_head++;
		}
	}
}

void fw_systick_irq(void);
void fw_systick_irq(void)
{
	ms_count++;
	ticks_due++;
}

int main(void);
int main(void)
{
	struct fw_config cfg;
	struct fw_io io = { now_us, tx, NULL };

	fw_default_config(&cfg, FW_BOARD_MPS2_AN385);
	/* QEMU ignores the baud rate but needs a divider of at least 16. */
	UART_BAUDDIV = CPU_HZ / cfg.baud;
	UART_CTRL = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_RXINT;
	NVIC_ISER0 = 1u << UART0_RX_IRQ;
	systick_load = CPU_HZ / 1000000u * cfg.period_us - 1u;
	SYST_RVR = systick_load;
	SYST_CVR = 0;
	SYST_CSR = 7; /* core clock, interrupt, enable */
	fw_init(&fw, &cfg, &io);

	for (;;) {
		uint8_t buf[64];
		unsigned n = 0;

		while (rx_tail != rx_head && n < sizeof(buf)) {
			buf[n++] = rx_ring[rx_tail % RX_RING];
			rx_tail++;
		}
		if (n)
			fw_rx(&fw, buf, n);
		fw_poll(&fw);
		while (ticks_due) {
			__asm volatile("cpsid i");
			ticks_due--;
			__asm volatile("cpsie i");
			fw_tick(&fw);
		}
		/* Sleep until an interrupt, unless one came while we worked (WFI wakes on a pending one anyway). */
		__asm volatile("cpsid i");
		if (rx_tail == rx_head && !ticks_due && !fw.rx_len)
			__asm volatile("wfi");
		__asm volatile("cpsie i");
	}
}
