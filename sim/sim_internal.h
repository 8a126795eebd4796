/* sim_internal.h: the simulator's state shared by its world, arm, camera and persistence code (sim/ only). */
#ifndef BL_SIM_SIM_INTERNAL_H
#define BL_SIM_SIM_INTERNAL_H

#include <stdint.h>

#include "arm/arm_backend.h"
#include "base/rng.h"
#include "sim/sim.h"
#include "sim/sim_chart.h"
#include "sim/sim_paint.h"

/* The bands padded to a multiple of 8, so the render path's band loops vectorise. */
#define SIM_NBP 32

/* Tools the arm can hold: each brush of the machine, and the dispensing spatula. */
#define SIM_TOOL_DISPENSER CFG_MAX_BRUSHES
#define SIM_N_TOOLS (CFG_MAX_BRUSHES + 1)

/*
 * Optics of the world's fixed surfaces, measured reflectance (flat spectra):
 * the board the stations sit in, the white ceramic of wells and cells, the
 * water pot's floor, the wipe pad, marker ink and paper, the chart's frame
 * and the arm's dark anodised body.
 */
#define SIM_R_TABLE 0.20
#define SIM_R_CERAMIC 0.82
#define SIM_R_WALL 0.45
#define SIM_R_POT 0.75
#define SIM_R_PAD 0.70
#define SIM_R_INK 0.04
#define SIM_R_PAPER 0.86
#define SIM_R_CHART_FRAME 0.035
#define SIM_R_ARM 0.10

/* Wet acrylic is milky: its binder scatters until it dries, so wet paint reads lighter. */
#define SIM_WET_BINDER_S 0.08

/* A canvas cell: the dry stack as one reflectance, the wet film as paint amounts. */
struct sim_cell {
	float base[SIM_NB];           /* internal reflectance of the canvas and its dry layers */
	float wet[SIM_MAX_PAINTS];    /* wet film of each paint, mm */
	float wet_mm;                 /* their sum */
	float dry_mm;                 /* dry paint film, mm */
	double t_wet_s;               /* when paint last arrived (drying counts from here) */
	int32_t wet_pos;              /* its place in the world's wet list, -1 when dry */
	uint8_t touched;              /* differs from the bare canvas (kept in the world file) */
};

/* Paint held by a tool, a well, a mixing cell or the water pot (ml of each paint). */
struct sim_pot {
	double ml[SIM_MAX_PAINTS];
	double mixed;                 /* mixing cells: 0 streaky .. 1 uniform */
};

struct sim_world {
	int nx, ny;                   /* canvas cells along machine x and y */
	double cell_mm;
	struct sim_cell *cells;
	uint8_t *dirty;               /* per cell: its camera colour must be recomputed */
	uint8_t *unsaved;             /* per cell: changed since the world file was last saved */
	uint32_t *wet;                /* cells with wet paint, so drying need not scan the canvas */
	size_t n_wet;
	double ground[SIM_NB];        /* internal reflectance of the bare canvas */
	struct sim_pot wells[CFG_MAX_WELLS];
	struct sim_pot mix[CFG_MAX_CELLS];
	struct sim_pot water;
	struct sim_pot tools[SIM_N_TOOLS]; /* what each tool's tip holds */
	struct sim_pot deep[SIM_N_TOOLS];  /* what each brush holds deep in its bristles */
	int cur_tool;                 /* the tool the arm holds, -1 none */
	double oldest_wet_s;          /* no wet cell got paint before this (a lower bound), s */

	arm_point pos;                /* commanded tool position, mm */
	int homed, held;
	int fault;                    /* latched: execute refuses until resume */
	char fault_msg[160];
	double arm_time_s;
	long actions;                 /* actions executed over the world's life */
	long frames;

	/* Independent streams, so one part drawing more does not shift the others. */
	rng r_arm, r_cmd, r_frame, r_cam, r_disp;
};

struct sim_cam;

struct sim {
	int refs;
	struct machine m;             /* own copy, faults applied */
	/*
	 * Where the canvas truly lies (zones.canvas.origin_mm moved by
	 * sim.canvas_offset_mm and turned by sim.canvas_rotation_deg): the world
	 * paints and shows it there. Never m.xf, which is what the machine
	 * believes (its arm registration, or the nominal placement).
	 */
	struct xform canvas_xf;
	clk *clock;
	uint64_t seed;
	uint64_t fingerprint;         /* what a world file must have been made for */
	uint64_t owner;               /* whose it is: a hash of sim_options.owner (0: nobody's) */
	char world_file[CFG_PATH_MAX];
	/* The world file's snapshot and its log (sim_store.c). */
	uint64_t base_sum;            /* the snapshot's checksum, which every log record carries */
	size_t snapshot_bytes, log_bytes;
	int log_fd;                   /* the log, open for appending; -1 before the first snapshot */
	int snapshot_due;             /* the next save writes a whole snapshot */
	struct sim_paintset paints;   /* this run's batch */
	float kf[SIM_MAX_PAINTS][SIM_NBP], sf[SIM_MAX_PAINTS][SIM_NBP]; /* K, S per mm of film (render path) */
	int well_paint[CFG_MAX_WELLS];/* index into paints, -1 for an empty well */
	struct sim_world w;
	struct sim_cam *cam;          /* render state, built at the first frame */
	enum sim_scene scene;
	struct sim_card card;         /* what the card scene shows */
	int has_card;
	struct arm arm;
	struct camera camera;
	int stall_fired;
	int controls_locked;
	double last_paint_ml;         /* paint the last executed action left on the canvas or in cells */
	struct cam_frame frozen;      /* the frame a frozen camera repeats (sim.faults.freeze_at_s), len 0: none yet */
};

/* One frame at 30 frames a second, ns of the world's clock. */
#define SIM_FRAME_NS 33333333LL

/* Time on the world's clock, s. */
double sim_now_s(struct sim *s);

/* Drops a reference (sim_close, and the arm's and camera's close). */
void sim_unref(struct sim *s);

/* World: setup, paint effects of the arm, drying, optics. */
int sim_world_init(struct sim *s, bl_err *err);
void sim_world_free(struct sim *s);
/* Puts a cell that just got paint on the wet list. */
void sim_world_mark_wet(struct sim_world *w, size_t idx);
void sim_world_unmark_wet(struct sim_world *w, size_t idx);

/* Canvas cell idx changed: the camera must colour it again, the next save must write it. */
static inline void sim_cell_changed(struct sim_world *w, size_t idx)
{
	w->dirty[idx] = 1;
	w->unsaved[idx] = 1;
}
void sim_world_dry(struct sim *s);
/* Deposits paint from tool along the actual tool path a -> b (mm), brush width at nominal press. */
double sim_world_paint(struct sim *s, int tool, const struct machine_brush *b, const arm_point *a,
		       const arm_point *bpt);
void sim_world_dip(struct sim *s, int tool, double load_ml, struct sim_pot *src, double depth_mm);
void sim_world_dispense_pick(struct sim *s, int well);
double sim_world_dispense_drop(struct sim *s, int cell);
void sim_world_stir(struct sim *s, int cell, double seconds);
void sim_world_wash(struct sim *s, int tool, double seconds);
void sim_world_wipe(struct sim *s, int tool);
/* Internal reflectance of a canvas cell with its wet film (binder scatter included when wet). */
void sim_cell_internal(const struct sim *s, const struct sim_cell *c, double r[SIM_NB]);
/* Measured reflectance of a canvas cell in single precision: the camera's fast path. */
void sim_cell_measured_f(const struct sim *s, const struct sim_cell *c, float r[SIM_NBP]);
/* Measured reflectance of a pot's content as a film of depth from its volume over a base. */
void sim_pot_measured(const struct sim *s, const struct sim_pot *p, double area_mm2,
		      double base_internal, double r[SIM_NB]);
/* Measured reflectance of paint amounts mixed uniformly and opaque. */
void sim_paint_measured(const struct sim *s, const double *ml, double r[SIM_NB]);
double sim_pot_total(const struct sim_pot *p);

/* Persistence. */
int sim_world_serialize(struct sim *s, unsigned char **buf, size_t *len, bl_err *err);
int sim_world_load(struct sim *s, const char *path, bl_err *err);
/* Closes the world file's log. */
void sim_store_close(struct sim *s);
/* Whether a world file exists and, if so, the seed it was made with (header checked). */
int sim_world_peek_seed(const char *path, int *exists, uint64_t *seed, bl_err *err);

/* Arm and camera ops. */
extern const struct arm_ops sim_arm_ops;
extern const struct camera_ops sim_camera_ops;
int sim_arm_home(struct arm *a, bl_err *err);

/* Camera render state. */
void sim_cam_free(struct sim_cam *c);
/* The card changed: the pixel map and the card's colours are made again at the next frame. */
void sim_cam_forget_map(struct sim *s);
/* Renders scene into an encoded JPEG, in f's buffer when it has one big enough (f cleared but for data and cap). */
int sim_cam_render(struct sim *s, enum sim_scene scene, struct cam_frame *f, bl_err *err);
int sim_cam_truth(struct sim *s, enum sim_scene scene, cJSON **out, bl_err *err);

#endif
