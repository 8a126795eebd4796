/* machine_int.h: the machine file's section readers that live outside machine.c, for machine.c (config/ only). */
#ifndef BL_CONFIG_MACHINE_INT_H
#define BL_CONFIG_MACHINE_INT_H

#include "base/json.h"
#include "config/machine.h"

/* The sim section (machine_sim.c): its defaults from the machine, then its keys, strictly. */
int machine_load_sim(json_obj *root, struct machine *m, bl_err *err);

#endif
