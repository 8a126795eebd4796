/* machine_int.h: the machine file's section readers and geometry checks shared by the files of its reader (config/ only). */
#ifndef BL_CONFIG_MACHINE_INT_H
#define BL_CONFIG_MACHINE_INT_H

#include "base/json.h"
#include "config/machine.h"

/*
 * Each reads its section of root strictly into m, in the order machine.c calls
 * them: a reader may lean on what the ones before it read (the work area,
 * arm.home_mm, the zones; unattended on tolerances, planner on costs).
 */

/* machine_geometry.c */
int machine_load_kinematics(json_obj *root, struct machine *m, bl_err *err);
int machine_load_zones(json_obj *root, struct machine *m, bl_err *err);
int machine_load_brushes(json_obj *root, struct machine *m, bl_err *err);
int machine_check_unique_names(json_obj *root, const struct machine *m, bl_err *err);
/* Whether p's x and y lie in the box lo..hi. */
int machine_in_box2(const double p[2], const double lo[3], const double hi[3]);
int machine_check_point_in_work(json_obj *o, const char *key, const struct machine *m,
				const double p[3], bl_err *err);

/* machine_sections.c */
int machine_load_limits(json_obj *root, struct machine *m, bl_err *err);
int machine_load_safety(json_obj *root, struct machine *m, bl_err *err);
int machine_load_tolerances(json_obj *root, struct machine *m, bl_err *err);
int machine_load_unattended(json_obj *root, struct machine *m, bl_err *err);
int machine_load_mixing(json_obj *root, struct machine *m, bl_err *err);
int machine_load_painting(json_obj *root, struct machine *m, bl_err *err);
int machine_load_camera(json_obj *root, struct machine *m, bl_err *err);
int machine_load_calibration(json_obj *root, struct machine *m, bl_err *err);
int machine_load_costs(json_obj *root, struct machine *m, bl_err *err);
int machine_load_planner(json_obj *root, struct machine *m, bl_err *err);
int machine_load_brakes(json_obj *root, struct machine *m, bl_err *err);

/* machine_review.c: the review and reviewer sections (reviewer after costs) */
int machine_load_review(json_obj *root, struct machine *m, bl_err *err);
int machine_load_reviewer(json_obj *root, struct machine *m, bl_err *err);
/* An external process's sandbox keys (planner and reviewer): cpu_s, memory_mb, tmpfs_mb, and egress kept as text. */
int machine_load_sandbox_keys(json_obj *o, double *cpu_s, long *memory_mb, int *tmpfs_mb, char *egress,
			      size_t egress_n, bl_err *err);

/* The sim section (machine_sim.c): its defaults from the machine, then its keys, strictly. */
int machine_load_sim(json_obj *root, struct machine *m, bl_err *err);

#endif
