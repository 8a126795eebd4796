/* vectors.c: reset and the Cortex-M3 vector table of the mps2-an385 image: copy .data, zero .bss, run main. */
#include <stdint.h>

extern uint32_t _stack_top, _data_load, _data_start, _data_end, _bss_start, _bss_end;
int main(void);
void fw_reset(void);
void fw_uart0_rx_irq(void);
void fw_systick_irq(void);

void fw_reset(void)
{
	uint32_t *src = &_data_load, *dst = &_data_start;

	while (dst < &_data_end)
		*dst++ = *src++;
	for (dst = &_bss_start; dst < &_bss_end;)
		*dst++ = 0;
	main();
	for (;;)
		;
}

/* A CPU fault halts the core: no control period runs again, so no joint moves again. */
static void fw_halt(void)
{
	for (;;)
		;
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16 + 2])(void) = {
	(void (*)(void))(uintptr_t)&_stack_top,
	fw_reset,
	fw_halt, /* NMI */
	fw_halt, /* HardFault */
	fw_halt, /* MemManage */
	fw_halt, /* BusFault */
	fw_halt, /* UsageFault */
	0, 0, 0, 0,
	fw_halt, /* SVCall */
	fw_halt, /* DebugMon */
	0,
	fw_halt, /* PendSV */
	fw_systick_irq,
	fw_uart0_rx_irq, /* IRQ 0: UART0 RX */
	fw_halt,         /* IRQ 1: UART0 TX (not enabled) */
};
