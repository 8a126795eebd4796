/* fw_internal.h: what the firmware core's Modbus layer and drive layer call in each other. */
#ifndef BL_FW_INTERNAL_H
#define BL_FW_INTERNAL_H

#include "fw.h"

/* Writes count holding registers at addr: 0, or the Modbus exception code (nothing written then). */
int fw_write_holding(struct fw *f, unsigned addr, unsigned count, const uint16_t *v);

/* A good frame addressed to us arrived: feeds the host watchdog. */
void fw_host_seen(struct fw *f);

#endif
