/* vectors.c: reset and the vector table of the STM32F407 image: copy .data, zero .bss, run main. */
#include <stdint.h>

extern uint32_t _stack_top, _data_load, _data_start, _data_end, _bss_start, _bss_end;
int main(void);
void fw_reset(void);
void fw_usart2_irq(void);
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

#define N_IRQ 82

__attribute__((section(".vectors"), used)) static void (*const vectors[16 + N_IRQ])(void) = {
	[0] = (void (*)(void))(uintptr_t)&_stack_top,
	[1] = fw_reset,
	[2 ... 6] = fw_halt,      /* NMI, HardFault, MemManage, BusFault, UsageFault */
	[11] = fw_halt,           /* SVCall */
	[14] = fw_halt,           /* PendSV */
	[15] = fw_systick_irq,
	[16 ... 16 + N_IRQ - 1] = fw_halt,
	[16 + 38] = fw_usart2_irq,
};
