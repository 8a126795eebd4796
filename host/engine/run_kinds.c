/* run_kinds.c: the table of subtask kinds to their handlers, checked by the compiler. */
#include "engine/run_kind.h"

const struct run_kind *run_kind_of(enum plan_subtask_type t)
{
	/*
	 * No default: -Wswitch names this switch when a kind joins enum
	 * plan_subtask_type, so a kind cannot run as another's.
	 */
	switch (t) {
	case PLAN_MIX:
		return &run_kind_mix;
	case PLAN_PAINT:
		return &run_kind_paint;
	case PLAN_CHECKPOINT:
		return &run_kind_checkpoint;
	case PLAN_SUBTASK_COUNT:
		break;
	}
	return NULL;
}
