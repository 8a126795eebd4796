/* action.h: the typed actions an arm executes (move, stroke, dip, dispense, ...), their JSON form and motion expansion. */
#ifndef BL_ARM_ACTION_H
#define BL_ARM_ACTION_H

#include <stddef.h>

#include <cJSON.h>

#include "base/err.h"
#include "config/machine.h"

/* A position in machine coordinates, mm. */
typedef struct arm_point {
	double x, y, z;
} arm_point;

/* The kinds, one row each in config/action_kinds.def (the machine file names them too). */
enum arm_kind {
#define ARM_KIND(ID, name) ARM_##ID,
#include "config/action_kinds.def"
#undef ARM_KIND
	ARM_KIND_COUNT
};

/* Zones an action may declare it enters; the gate denies a path into an undeclared one. */
enum arm_zone {
	ARM_ZONE_TRAVEL, /* anywhere at or above the travel floor */
	ARM_ZONE_CANVAS,
	ARM_ZONE_WELL,
	ARM_ZONE_CELL,
	ARM_ZONE_WATER,
	ARM_ZONE_WIPE,
	ARM_ZONE_COUNT
};

extern const char *const arm_kind_names[];  /* "home", "move", ... NULL-terminated */
extern const char *const arm_zone_names[];  /* "travel", "canvas", ... NULL-terminated */

/* Bounds on what one action may carry, whatever the machine file says: beyond them the input is absurd. */
#define ARM_MAX_POINTS 100000       /* points in one stroke polyline */
#define ARM_MAX_COORD_MM 100000.0   /* |coordinate| */
#define ARM_MAX_SPEED_MM_S 100000.0
/* Slowest tool speed: 1e-300 mm/s would "move" for 1e302 s; 0.1 mm/s crosses a metre in under 3 h. */
#define ARM_MIN_SPEED_MM_S 0.1
#define ARM_MAX_UNITS 10000         /* dispense units in one action */
#define ARM_MAX_MS 3600000          /* stir or wash time */
#define ARM_MAX_ID 1000000000000L   /* an action's id: what the journal, requests and state.json hold */

struct arm_action {
	enum arm_kind kind;
	long id;                 /* the caller's number for it (journal, approvals); -1 when not given */
	unsigned zones;          /* declared zones, a bit per enum arm_zone */
	int has_bounds;          /* the planner declared the box its path stays in */
	arm_point bounds_min, bounds_max;
	double speed_mm_s;       /* tool speed for every segment of the action */
	arm_point target;        /* move: where to; jog: the offset */
	arm_point *points;       /* stroke: the polyline (owned) */
	size_t n_points;
	char brush[CFG_NAME_MAX];/* stroke, dip */
	char well[CFG_NAME_MAX]; /* dip (from a well), dispense */
	char cell[CFG_NAME_MAX]; /* dispense, stir, dip (a mixed colour, instead of well) */
	int units;               /* dispense: dispense units (mixing.dispense_unit_ml each) */
	double depth_mm;         /* dip, stir: how far below the surface the brush goes */
	int duration_ms;         /* stir, wash */
	int override_limits;     /* move, jog: soft limits overridden (always needs an operator) */
};

/* The zones a kind enters when the action does not declare its own (0 for move and jog, which must). */
unsigned arm_default_zones(enum arm_kind kind);

/*
 * The repeat rule, the one place it is written: 1 when an action of this
 * kind may be sent again after an error that may have come after the arm
 * began it (a timeout, an I/O error), because doing it twice harms nothing
 * (a move, a dip, a wash); 0 for a stroke or a dispense, which would put
 * paint down twice. A command the arm was never sent (BL_ENOTSENT) may
 * always be sent again.
 */
int arm_kind_repeatable(enum arm_kind kind);

/*
 * Parses one action object. Checks only what needs no machine file: known
 * kind and fields, finite numbers, sane sizes. What the machine allows is the
 * gate's to decide. On error, the message names file, action index and field.
 */
int arm_action_parse(const cJSON *item, const char *file, size_t index, struct arm_action *out,
		     bl_err *err);

/* Frees what an action owns (the stroke points); the struct itself stays. */
void arm_action_release(struct arm_action *a);

/* The action as JSON in the form arm_action_parse reads (round-trips exactly). */
cJSON *arm_action_to_json(const struct arm_action *a);

/* A list of actions, as read from an actions file ({"kind": "actions", "version": 1, "actions": [...]}). */
struct arm_action_list {
	struct arm_action *items;
	size_t n;
};

/* Loads an actions file; fails on the first bad action, so nothing runs from a half-valid file. */
int arm_actions_load(const char *path, struct arm_action_list *out, bl_err *err);
void arm_actions_free(struct arm_action_list *l);

/*
 * Motion: every action expands into straight segments the tool follows. The
 * gate checks exactly these segments and the backends execute exactly these,
 * so what was approved is what moves.
 */
enum arm_seg_flags {
	ARM_SEG_PAINTS = 1,  /* the brush touches the canvas along it */
	ARM_SEG_DWELL = 2,   /* stays in place (from == to) for dwell_ms, e.g. soaking */
	ARM_SEG_LOADS = 4,   /* ends with the brush in paint: it picks up a load */
	ARM_SEG_DEPOSITS = 8,/* ends with the brush in a mixing cell: it leaves a unit */
};

struct arm_segment {
	arm_point from, to;
	double speed_mm_s;
	enum arm_zone zone;  /* what the segment is for (the gate classifies geometry itself) */
	unsigned flags;
	int dwell_ms;
};

struct arm_path {
	struct arm_segment *seg;
	size_t n, cap;
};

/*
 * Expands action a, starting from the tool position from, into path (which it
 * empties first). Fails on references the machine lacks (an unknown well or
 * brush) with a message naming them.
 */
int arm_motion(const struct machine *m, const arm_point *from, const struct arm_action *a,
	       struct arm_path *path, bl_err *err);
void arm_path_free(struct arm_path *p);

/* Time (s) of a straight move of length_mm with a trapezoidal profile: accelerate at
 * accel_mm_s2 up to speed_mm_s, cruise, decelerate to rest. */
double arm_move_time_s(double length_mm, double speed_mm_s, double accel_mm_s2);

/* Length of a segment, mm. */
double arm_segment_length(const struct arm_segment *s);

#endif
