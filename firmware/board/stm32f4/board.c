/* board.c: an STM32F407 board (built, not run here): USART2 on PA2/PA3 with an RX interrupt, SysTick at the control rate from the 16 MHz HSI, the e-stop on PC13. */
#include <stddef.h>
#include <stdint.h>

#include "fw.h"

#define CPU_HZ 16000000u /* HSI after reset: no PLL, so nothing to get wrong in clock setup */

#define REG(addr) (*(volatile uint32_t *)(addr))
#define RCC_AHB1ENR REG(0x40023830u)
#define RCC_APB1ENR REG(0x40023840u)
#define GPIOA_MODER REG(0x40020000u)
#define GPIOA_AFRL REG(0x40020020u)
#define GPIOC_IDR REG(0x40020810u)
#define USART2_SR REG(0x40004400u)
#define USART2_DR REG(0x40004404u)
#define USART2_BRR REG(0x40004408u)
#define USART2_CR1 REG(0x4000440Cu)
#define USART_SR_RXNE 0x20u
#define USART_SR_TXE 0x80u
#define USART_CR1_UE 0x2000u
#define USART_CR1_RXNEIE 0x20u
#define USART_CR1_TE 0x8u
#define USART_CR1_RE 0x4u
#define NVIC_ISER1 REG(0xE000E104u)
#define USART2_IRQ 38
#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)

#define RX_RING 1024u
static volatile uint8_t rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail;
static volatile uint32_t ms_count, ticks_due;
static uint32_t systick_load;
static struct fw fw;

static uint64_t now_us(void *ctx)
{
	uint32_t ms, val;

	(void)ctx;
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
		while (!(USART2_SR & USART_SR_TXE))
			;
		USART2_DR = buf[i];
	}
}

void fw_usart2_irq(void);
void fw_usart2_irq(void)
{
	/* Reading SR then DR clears RXNE and an overrun alike. */
	while (USART2_SR & USART_SR_RXNE) {
		uint8_t c = (uint8_t)USART2_DR;

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

	fw_default_config(&cfg, FW_BOARD_STM32F4);
	RCC_AHB1ENR |= 0x5u;          /* GPIOA, GPIOC */
	RCC_APB1ENR |= 1u << 17;      /* USART2 */
	GPIOA_MODER = (GPIOA_MODER & ~0xF0u) | 0xA0u;       /* PA2, PA3 alternate */
	GPIOA_AFRL = (GPIOA_AFRL & ~0xFF00u) | 0x7700u;     /* AF7: USART2 */
	USART2_BRR = (CPU_HZ + cfg.baud / 2) / cfg.baud;
	USART2_CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE | USART_CR1_RXNEIE;
	NVIC_ISER1 = 1u << (USART2_IRQ - 32);
	systick_load = CPU_HZ / 1000000u * cfg.period_us - 1u;
	SYST_RVR = systick_load;
	SYST_CVR = 0;
	SYST_CSR = 7;
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
		/* The Nucleo's blue button (PC13, low when pressed) stands in for the e-stop. */
		fw_set_estop_input(&fw, !(GPIOC_IDR & (1u << 13)));
		while (ticks_due) {
			__asm volatile("cpsid i");
			ticks_due--;
			__asm volatile("cpsie i");
			fw_tick(&fw);
		}
		__asm volatile("cpsid i");
		if (rx_tail == rx_head && !ticks_due && !fw.rx_len)
			__asm volatile("wfi");
		__asm volatile("cpsie i");
	}
}
