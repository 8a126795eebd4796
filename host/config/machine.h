/* machine.h: the machine file (schema v1): arm, kinematics, zones, brushes, limits, camera, calibration, costs and brakes. */
#ifndef BL_CONFIG_MACHINE_H
#define BL_CONFIG_MACHINE_H

/* The most frames a verification averages (camera.average_frames). */
#define MACHINE_MAX_AVERAGE_FRAMES 64

#include <stddef.h>

#include "base/err.h"
#include "config/xform.h"

#define CFG_NAME_MAX 32
#define CFG_PATH_MAX 512
#define CFG_MAX_WELLS 32
#define CFG_MAX_CELLS 32
#define CFG_MAX_BRUSHES 8
#define CFG_MAX_KEEP_OUT 16
#define CFG_MAX_CONTROLS 16
#define CFG_MAX_OPERATOR_KINDS 16
#define MACHINE_COORD_MAX_MM 10000.0 /* |coordinate| in a machine file: beyond a few metres it is a typo */
#define MACHINE_ACCEPT_WITHIN_DE00 5.0 /* unattended.accept_within_de00 when the file does not say */

/* The backends of config/backends.def, the simulator first; _COUNT sizes every table of them. */
enum machine_arm_backend {
#define BL_SIM_BACKEND(ID, name) MACHINE_ARM_##ID,
#define BL_ARM_BACKEND(ID, name, load_connection, open) MACHINE_ARM_##ID,
#include "config/backends.def"
#undef BL_SIM_BACKEND
#undef BL_ARM_BACKEND
	MACHINE_ARM_COUNT
};
enum machine_kin_type { MACHINE_KIN_CARTESIAN, MACHINE_KIN_SCARA };
enum machine_parity { MACHINE_PARITY_NONE, MACHINE_PARITY_EVEN, MACHINE_PARITY_ODD };
enum machine_cam_backend {
#define BL_SIM_BACKEND(ID, name) MACHINE_CAM_##ID,
#define BL_CAM_BACKEND(ID, name, open) MACHINE_CAM_##ID,
#include "config/backends.def"
#undef BL_SIM_BACKEND
#undef BL_CAM_BACKEND
	MACHINE_CAM_COUNT
};

/* How the host reaches the arm controller: each backend reads the keys it has (config/machine_conn.h). */
struct machine_connection {
	char port[CFG_PATH_MAX]; /* serial device, e.g. /dev/ttyUSB0 ("" when host is used) */
	int baud;                /* bits/s */
	int parity;              /* enum machine_parity */
	int address;             /* Modbus slave address 1..247 */
	char host[CFG_PATH_MAX]; /* "host:port" for Modbus TCP ("" for serial) */
	int timeout_ms;          /* response timeout of one request */
	int watchdog_ms;         /* modbus: host watchdog set in the firmware; silence longer than
				    this while the arm moves stops it */
	/* gcode: brushloop's machine position = GRBL's machine position (MPos) + this, mm */
	double grbl_offset_mm[3];
};

/*
 * Kinematics. Cartesian: joints are x, y, z in mm, limited by the work area.
 * SCARA (a 4-axis arm: shoulder and elbow about vertical axes, a vertical z and
 * a wrist roll): the shoulder sits at base_mm, links l1 and l2 mm long.
 */
struct machine_kinematics {
	int type;            /* enum machine_kin_type */
	double base_mm[2];   /* SCARA shoulder axis in machine x, y */
	double l1_mm, l2_mm; /* SCARA link lengths */
	double j1_deg[2];    /* SCARA shoulder limits (min, max) */
	double j2_deg[2];    /* SCARA elbow limits */
	double j4_deg[2];    /* SCARA wrist roll limits */
	int elbow_right;     /* SCARA elbow solution: 1 right-handed, 0 left */
};

/* An axis-aligned box in machine coordinates (mm). */
struct machine_box {
	char name[CFG_NAME_MAX];
	double min_mm[3], max_mm[3];
};

/* A round station: paint well, mixing cell, water pot or wipe pad. */
struct machine_station {
	char name[CFG_NAME_MAX];
	double center_mm[2];  /* x, y */
	double radius_mm;
	double surface_z_mm;  /* z of the paint or water surface, or of the pad */
	double depth_mm;      /* how far below the surface the brush may dip */
	double capacity_ml;   /* paint or water it holds */
};

struct machine_canvas {
	double origin_mm[2];  /* machine x, y of the canvas's corner at canvas (0, 0) */
	double size_mm[2];    /* width (along machine x) and height (along machine y) */
	double surface_z_mm;  /* z where the brush touches the canvas */
	double marker_size_mm;   /* corner markers (vision/canvas.h): side of the ink square */
	double marker_offset_mm; /* their centres' distance outside each corner, along x and y */
	/*
	 * The blank canvas as the calibrated camera reads it, Lab D50 (optional):
	 * plan and estimate start their prediction from it; a run observes the
	 * canvas before planning and starts from what it sees.
	 */
	int has_lab;
	double lab[3];
};

struct machine_brush {
	char name[CFG_NAME_MAX];
	double width_mm;      /* stroke width at the nominal press */
	double load_ml;       /* paint one dip carries */
	double reload_mm;     /* stroke length one load lasts */
};

struct machine_motion_limits {
	double speed_mm_s;    /* tool speed */
	double accel_mm_s2;   /* tool acceleration */
	double move_mm;       /* longest single straight move */
};

/* Lowest z the tool may reach in each zone (mm). */
struct machine_z_floors {
	double canvas_mm, well_mm, cell_mm, water_mm, wipe_mm;
	double travel_mm;     /* everywhere outside a declared zone */
};

struct machine_limits {
	struct machine_motion_limits soft; /* above: needs an operator */
	struct machine_motion_limits hard; /* above: denied */
	struct machine_z_floors z_floor;
	int max_stroke_points;             /* points in one stroke polyline */
};

struct machine_safety {
	int confirm_first_motion;          /* first motion after connecting or a fault needs a person */
	int confirm_homing;                /* homing needs a person (real hardware) */
	int operator_timeout_s;            /* unanswered request = no */
	double max_grant_s;                /* longest time-limited grant */
	int n_operator_kinds;
	char operator_kinds[CFG_MAX_OPERATOR_KINDS][CFG_NAME_MAX]; /* action kinds that always ask */
};

/* The loosest verification thresholds a plan may state (CIEDE2000). */
struct machine_tolerances {
	double mix_de00;      /* a mixed colour against its target */
	double paint_de00;    /* a painted region against its prediction */
};

/* What a run nobody watches may decide alone. */
struct machine_unattended {
	/*
	 * A colour no recipe brings within tolerances.mix_de00 is accepted at
	 * its nearest measured mix when that is at most this far from its
	 * target (CIEDE2000); beyond it a person decides. 0: never.
	 */
	double accept_within_de00;
};

struct machine_mixing {
	double dispense_unit_ml;  /* paint one dispense carries */
	double cell_min_ml;       /* least total volume worth mixing */
	double cell_max_ml;       /* a mixing cell's capacity */
	int max_paints;           /* paints in one recipe */
	int stir_ms;              /* stirring time */
};

/* How paint behaves on the canvas, as the engine must respect it. */
struct machine_painting {
	double dry_s;             /* paint on the canvas is dry enough to paint over after this long, s (0: never wait) */
	double arm_hours;         /* the night's arm-time budget a painting is sized to, h (run --arm-hours overrides) */
	int map_gamut;            /* 1: aim at the target with its darks mapped into the paints' reach (plan_gamut.c) */
	/*
	 * The working envelope every planner plans within, set at or below the soft
	 * limits. It is all a planner is told of how the arm may move; written out,
	 * the limits stay with the gate (unset, a value is a share of its limit, which
	 * a planner could read back, so an external planner needs all five written).
	 */
	double stroke_speed_mm_s; /* brush on the canvas */
	double travel_speed_mm_s; /* brush in the air */
	double curve_accel_mm_s2; /* centripetal acceleration of a curve taken at speed */
	double move_mm;           /* longest single move */
	double press_max_mm;      /* deepest press below the canvas surface */
	int envelope_written;     /* 1: the file sets all five; else the unset ones are shares of their limits */
};

struct machine_control {
	char name[CFG_NAME_MAX];  /* V4L2 control name, e.g. exposure_time_absolute */
	double value;
};

struct machine_camera {
	int backend;              /* enum machine_cam_backend */
	char device[CFG_PATH_MAX];/* /dev/videoN, or for replay a folder or list file */
	int width, height;        /* px */
	int average_frames;       /* frames averaged for a verification, 1..MACHINE_MAX_AVERAGE_FRAMES */
	int discard_frames;       /* frames thrown away after a control change */
	int repeat_observations;  /* the run's camera check: observations of the blank canvas and a cell before painting (0: none) */
	double repeat_max_fraction; /* their spread may be at most this fraction of tolerances.mix_de00 */
	int timeout_ms;           /* one capture */
	int allow_auto;           /* measure even with automatic controls (not recommended) */
	long max_pixels;          /* refuse decoded images larger than this */
	int n_controls;
	struct machine_control controls[CFG_MAX_CONTROLS];
};

/* Calibration files, resolved relative to the machine file ("" when not set). */
struct machine_calibration {
	char camera_profile[CFG_PATH_MAX]; /* ICC profile of the camera */
	char light_map[CFG_PATH_MAX];      /* the light over the camera's view relative to the profile's (vision/light.h) */
	char canvas[CFG_PATH_MAX];         /* canvas homography and size */
	char arm[CFG_PATH_MAX];            /* canvas-to-arm transform */
	double max_arm_residual_mm;        /* refuse an arm registration worse than this */
	double max_canvas_error_mm;        /* refuse a canvas fit worse than this */
	double max_camera_de00;            /* mean held-out CIEDE2000 a profile must reach */
	double max_age_h;                  /* a calibration file older than this (h) warns, unattended refuses; 0: no limit */
	int follow_lamp;                   /* follow the lamp's drift on the bare board (vision/light.h) */
};

struct machine_costs {
	char currency[8];
	double arm_per_hour;
	double per_verification;
	double per_planner_call;
	double paint_per_ml;
	double per_external_call;  /* a call to an external planner: planner.price_per_call (default per_planner_call) */
	double per_review_call;    /* a call to an external reviewer: reviewer.price_per_call (default per_planner_call) */
};

/*
 * An external planner (docs/planner.md): the command, what the run does when
 * its answer is refused, its deadline, size limit, price and budget, its
 * sandbox's limits and its egress policy (docs/sandbox.md).
 */
#define CFG_PLANNER_CMD_MAX 1024
#define CFG_EGRESS_JSON_MAX 8192
#define CFG_PLANNER_FILES_MAX 16
enum machine_planner_failure { MACHINE_PLANNER_BUILTIN, MACHINE_PLANNER_PAUSE, MACHINE_PLANNER_FAILURE_COUNT };
extern const char *const machine_planner_failure_names[]; /* "builtin", "pause" */
struct machine_planner {
	char command[CFG_PLANNER_CMD_MAX]; /* "COMMAND ARGS" ("": the built-in planner, unless run --planner) */
	int on_failure;               /* enum machine_planner_failure: an answer refused, late or missing */
	double answer_deadline_s;     /* from the request to the answer */
	long max_answer_kb;           /* one answer line, KiB */
	double cost_max;              /* the budget brake: the most its calls may cost (0: none) */
	int max_calls;                /* calls a run may make of it (0: no limit) */
	double cpu_s;                 /* its sandbox: CPU s per process, address space MiB, /tmp MiB */
	long memory_mb;
	int tmpfs_mb;
	char egress_json[CFG_EGRESS_JSON_MAX]; /* planner.egress as written ("": no network); the sandbox parses it */
	/* planner.files: files it reads besides those its command names, copied into its sandbox one by one */
	int n_files;
	char files[CFG_PLANNER_FILES_MAX][CFG_PATH_MAX];
};

/*
 * The second judge (docs/review.md): the built-in reviewer's rules, each
 * with its threshold, and what a disagreement does; and an external
 * reviewer, a lab's own process run in the planner's sandbox.
 */
enum machine_review_action { MACHINE_REVIEW_PAUSE, MACHINE_REVIEW_BRAKE, MACHINE_REVIEW_ACTION_COUNT };
extern const char *const machine_review_action_names[]; /* "pause", "brake" */
struct machine_review {
	int enabled;                  /* the rules judge every checkpoint and mix verdict */
	int on_disagreement;          /* enum machine_review_action */
	double frame_min_change;      /* frame_new: least mean |difference| from the last frame, code values */
	double marker_shift_px;       /* markers: farthest a canvas corner may lie from where the run puts it, px */
	double lamp_change;           /* lamp: largest relative change of the patches' light since the last review agreed */
	double lamp_drift_per_h;      /* lamp_drift: largest change of that light since the start, relative per hour */
	double reference_de00;        /* reference: largest CIEDE2000 of the patches from their start */
	double min_landed;            /* paint_landed: least share of the way to the paint its cells went */
	double unpainted_change_de00; /* unpainted_unchanged: largest change of a 10 mm block no stroke touched */
	double mix_model_de00;        /* mix_model: largest CIEDE2000 of a mix from the model's prediction */
};
struct machine_reviewer {
	char command[CFG_PLANNER_CMD_MAX]; /* "COMMAND ARGS" ("": none, unless run --reviewer) */
	double answer_deadline_s;     /* from the request to the answer */
	long max_answer_kb;           /* one answer line, KiB */
	double cpu_s;                 /* its sandbox: CPU s, address space MiB, /tmp MiB (0: the sandbox's defaults) */
	long memory_mb;
	int tmpfs_mb;
	char egress_json[CFG_EGRESS_JSON_MAX]; /* reviewer.egress as written ("": no network) */
};

struct machine_brakes {
	int attempts_per_subtask;
	int stuck_repeats;          /* the same failure this many times in a row */
	int no_progress_checkpoints;/* checkpoints without canvas improvement */
	int correction_rounds;      /* corrective rounds after the plan */
	double wall_time_s;
	double arm_time_s;
	double cost_max;            /* in the cost currency */
	int comm_errors;            /* consecutive communication or camera errors */
	double heartbeat_stale_s;   /* status calls a run dead past this */
};

/* Spectrum of the simulator's bench light. */
enum machine_sim_light { MACHINE_SIM_LIGHT_LED, MACHINE_SIM_LIGHT_D50, MACHINE_SIM_LIGHT_D65,
			 MACHINE_SIM_LIGHT_TUNGSTEN };

/* Faults the simulator injects (also settable with `--fault KEY=VALUE`). */
struct machine_sim_faults {
	double drop_frames;          /* probability a capture times out, 0..1 */
	double corrupt_frames;       /* probability a frame's JPEG bytes arrive corrupted, 0..1 */
	double command_failures;     /* probability an arm command fails before it moves, 0..1 */
	double stall_at_s;           /* the arm stalls when the simulated clock passes this, s (0: never) */
	char dry_well[CFG_NAME_MAX]; /* a well that starts nearly empty ("" for none) */
	double dry_well_ml;          /* what that well holds at the start, ml */
	long power_loss_after;       /* power fails right after the world's Nth action (0: never) */
	/* The verifier's faults (docs/sim.md): times in simulated s, 0 never. */
	double freeze_at_s;          /* from then on the camera hands back one frame again and again */
	double camera_moved_at_s;    /* then the camera is knocked: */
	double camera_shift_mm;      /*   moved this far along machine +x (its aim with it), */
	double camera_turn_deg;      /*   turned this far about its axis */
	double lamp_at_s;            /* then the lamp dims */
	double lamp_level;           /*   to this share of its light, 0..1 (0: it fails) */
	double smear_at_s;           /* then paint smears the lens: */
	double smear_radius;         /*   a disc this share of the image's width across, */
	double smear_x, smear_y;     /*   centred here, shares of the image's width and height */
	double exposure_drift_per_h; /* auto-exposure left drifting: the exposure changes this share per hour */
	/* The camera's own faults that a run's camera check (camera.repeat_observations) must see: */
	double flicker;              /* the light's intensity beats frame to frame by up to this (relative), 0..0.5 */
	double auto_exposure;        /* exposure not locked: each frame's exposure hunts by up to this (relative), 0..0.5 */
	double sensor_noise;         /* the sensor's shot and read noise times this, 1..50 (0: as the sim section says) */
};

/* The simulated world: camera, light, sensor, paints and faults (backend "sim"). */
struct machine_sim {
	double cell_mm;              /* canvas simulation cell, mm */
	double cam_position_mm[3];   /* camera centre of projection */
	double cam_look_at_mm[3];    /* the point at the image centre */
	double cam_hfov_deg;         /* horizontal field of view */
	int light_spectrum;          /* enum machine_sim_light */
	double light_position_mm[3]; /* a point light: its falloff makes the field uneven */
	double drift_intensity_per_h;/* relative change of the light's intensity per hour */
	double drift_tilt_per_h;     /* spectral tilt per hour: + warmer, - bluer (relative at 700 nm) */
	double sensor_peaks_nm[3];   /* R, G, B spectral sensitivity peaks */
	double sensor_widths_nm[3];  /* their standard deviations */
	double wb_error[2];          /* relative error of the red and blue white-balance gains */
	double full_well_e;          /* electrons at full scale: sets the shot noise */
	double read_noise_e;         /* read noise, electrons RMS */
	double vignetting;           /* fraction of the lens's cos^4 falloff left uncorrected, 0..1 */
	int jpeg_quality;            /* 1..100 */
	int n_paints;                /* wells named in "paints" */
	char paint_well[CFG_MAX_WELLS][CFG_NAME_MAX];
	char paint_name[CFG_MAX_WELLS][CFG_NAME_MAX]; /* a measured paint's name, e.g. "cold yellow" */
	double batch_variation;      /* relative spread of each run's K and S from the datasheet */
	double arm_noise_mm;         /* standard deviation of the tool position, each axis */
	double dispense_sd;          /* relative spread of one dispensed unit's volume */
	double drying_s;             /* wet paint on the canvas is dry after this long, s */
	/*
	 * Where the simulated canvas truly lies: its origin corner this far from
	 * zones.canvas.origin_mm and its x edge turned this far counterclockwise.
	 * The simulated world alone reads them; the machine knows of them only
	 * through an arm registration (calibration.arm), as a real one would.
	 */
	double canvas_offset_mm[2];
	double canvas_rotation_deg;
	int has_chart;               /* a colour chart for the "chart" scene */
	double chart_center_mm[2];
	double chart_patch_mm, chart_gap_mm;
	struct machine_sim_faults faults;
};

struct machine {
	char file[CFG_PATH_MAX];   /* the path it was loaded from */
	char dir[CFG_PATH_MAX];    /* its directory, for relative paths */
	char name[64];
	int arm_backend;           /* enum machine_arm_backend */
	struct machine_connection connection;
	struct machine_kinematics kin;
	double home_mm[3];
	double work_min_mm[3], work_max_mm[3];
	double travel_z_mm;        /* height for moves between zones */

	struct machine_canvas canvas;
	int n_wells;
	struct machine_station wells[CFG_MAX_WELLS];
	int n_cells;
	struct machine_station cells[CFG_MAX_CELLS];
	struct machine_station water;
	struct machine_station wipe;
	double park_mm[3];
	int n_keep_out;
	struct machine_box keep_out[CFG_MAX_KEEP_OUT];

	int n_brushes;
	struct machine_brush brushes[CFG_MAX_BRUSHES];
	struct machine_limits limits;
	struct machine_safety safety;
	struct machine_tolerances tolerances;
	struct machine_unattended unattended;
	struct machine_mixing mixing;
	struct machine_painting painting;
	struct machine_camera camera;
	struct machine_calibration calibration;
	struct machine_costs costs;
	struct machine_planner planner;
	struct machine_brakes brakes;
	struct machine_review review;
	struct machine_reviewer reviewer;
	struct machine_sim sim;         /* the simulator (defaults unless a "sim" section is given) */
	/*
	 * Canvas to machine: the arm registration calibration.arm names, or the
	 * canvas placed square at zones.canvas.origin_mm when it names none. The
	 * one transform the planner, the gate, the engine and vision use.
	 */
	struct xform xf;
};

/*
 * Loads and validates a machine file, and the arm registration its
 * calibration.arm names (refused when bad, or beyond
 * calibration.max_arm_residual_mm, or placing the canvas where
 * machine_canvas_fits refuses it); every message names the file and key path.
 */
int machine_load(const char *path, struct machine *m, bl_err *err);
/* The same without the registration: the canvas where the machine file alone puts it (for calib arm, which makes one). */
int machine_load_nominal(const char *path, struct machine *m, bl_err *err);

/*
 * Whether machine m's canvas placed by xf fits the machine: every corner
 * inside work_area, no well, mixing cell, water or wipe station under it and
 * no keep_out box over it; BL_EINVAL saying what it "puts" where (the caller
 * names the registration). calib arm checks a registration with it before
 * writing one, machine_load when reading one.
 */
struct xform;
int machine_canvas_fits(const struct machine *m, const struct xform *xf, bl_err *err);

/* Applies one fault override "KEY=VALUE" (the keys of sim.faults) to m->sim.faults, checked like the file. */
int machine_sim_fault_set(struct machine *m, const char *kv, bl_err *err);

/* Finds a station by name among wells and cells (NULL when absent). */
const struct machine_station *machine_find_well(const struct machine *m, const char *name);
const struct machine_station *machine_find_cell(const struct machine *m, const char *name);
const struct machine_brush *machine_find_brush(const struct machine *m, const char *name);

/* A normalised, human-readable summary (for `config check`); returns a malloc'd string. */
char *machine_summary(const struct machine *m);

extern const char *const machine_arm_backend_names[MACHINE_ARM_COUNT + 1]; /* NULL-terminated */
extern const char *const machine_cam_backend_names[MACHINE_CAM_COUNT + 1];
extern const char *const machine_kin_type_names[];
extern const char *const machine_sim_light_names[];

#endif
