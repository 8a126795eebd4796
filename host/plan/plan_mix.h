/* plan_mix.h: the colour solver the planner uses in the product: the mixing model of a palette on a machine. */
#ifndef BL_PLAN_PLAN_MIX_H
#define BL_PLAN_PLAN_MIX_H

#include "color/mix.h"
#include "config/palette.h"
#include "plan/plan.h"

struct plan_mixer {
	struct mix_model model;
	struct mix_limits lim;
	const struct palette *palette; /* must outlive the mixer */
	struct plan_solver solver;     /* hand &solver to the planner */
};

/* Builds the palette's mixing model within the machine's mixing limits; checks the palette's wells. */
int plan_mixer_init(struct plan_mixer *s, const struct palette *p, const struct machine *m,
		    bl_err *err);

#endif
