/* cli.c: the command table and shared helpers of the brushloop CLI. */
#include "cli/cli.h"
#include "cli/cli_opt.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

const struct cli_command cli_commands[] = {
	{ "help", "show the commands, or one command's usage",
	  "usage: brushloop help [COMMAND]\n", cli_help_main, NULL },
	{ "color", "colour arithmetic: CIEDE2000 differences and conversions",
	  "usage: brushloop color diff A B [--kl K] [--kc K] [--kh K] [--json]\n"
	  "       brushloop color convert COLOR --to lab|srgb|xyz [--json]\n"
	  "\n"
	  "Colours are written lab:L,a,b (CIELAB, D50), srgb:R,G,B (0-255) or #rrggbb.\n"
	  "diff prints the CIEDE2000 difference with 4 decimals; --kl, --kc, --kh set its\n"
	  "weighting factors (default 1). convert prints the colour in another space:\n"
	  "lab (D50), srgb (0-255, clipped, with a note when out of gamut) or xyz (D50,\n"
	  "Y of white 100).\n",
	  cli_color_main, cli_color_sets },
	{ "config", "validate machine and palette files",
	  "usage: brushloop config check FILE... [--json]\n"
	  "\n"
	  "Validates each file strictly (its \"kind\" says whether it is a machine or a\n"
	  "palette) and prints a normalised summary. With a machine and palettes given\n"
	  "together, also checks that every paint's well exists on the machine.\n"
	  "Exit 0 when all are valid, 2 with a message naming the file and key otherwise.\n",
	  cli_config_main, cli_config_sets },
	{ "bench", "run the built-in benchmarks (median of several runs)",
	  "usage: brushloop bench [NAME...] [--runs N | --quick] [--phases] [--json]\n"
	  "\n"
	  "Runs the built-in benchmarks and prints one figure a line, 'name: value unit',\n"
	  "the median of N runs (each benchmark has its own default). A NAME selects one\n"
	  "benchmark, or all of a part ('sim' selects sim.*). --json prints a list of\n"
	  "{\"name\", \"value\", \"unit\", \"runs\", \"quick\"}. --quick runs each benchmark\n"
	  "once on the smallest inputs that still take its whole code path: it shows that\n"
	  "every benchmark runs and reports a value, and its values are no figures.\n"
	  "--phases adds, after each night benchmark (sim.night_real_s), where its time\n"
	  "went: wall and CPU seconds per phase of the run (plan, execute, render,\n"
	  "encode, decode, measure, frames, journal, state, status, report, other). The\n"
	  "machine is shared and noisy: compare figures from one run, not against\n"
	  "remembered numbers.\n",
	  cli_bench_main, cli_bench_sets },
	{ "mix", "a recipe for a colour from the palette's paints, or the correction of a mix",
	  "usage: brushloop mix TARGET_COLOR [--palette P] [--machine M] [--max-paints N]\n"
	  "                     [--volume ML] [--json]\n"
	  "       brushloop mix TARGET_COLOR --have NAME:UNITS,... --measured COLOR\n"
	  "                     [--palette P] [--machine M] [--max-paints N] [--json]\n"
	  "       brushloop mix trial [--machine M] [--palette P] [--targets N] [--seed S]\n"
	  "                     [--no-light-correction] [--json]\n"
	  "\n"
	  "The first form prints the recipe that comes closest to TARGET_COLOR (CIEDE2000\n"
	  "under D50, as the camera profile delivers it): at most N paints (default: the\n"
	  "machine's mixing.max_paints) in whole dispense units, between the machine's\n"
	  "cell_min_ml (or --volume ML) and cell_max_ml; its predicted Lab and CIEDE2000;\n"
	  "or that the target is out of gamut and the nearest reachable colour.\n"
	  "--json: {\"recipe\": {\"paint\": units, ...}, \"predicted_lab\", \"de00\",\n"
	  "\"in_gamut\", \"nearest_lab\", \"nearest_de00\", \"total_units\", \"volume_ml\", ...}.\n"
	  "\n"
	  "The second form corrects a mix: the cell holds --have (units per paint) and\n"
	  "measured --measured. It prints what to add, or, when adding cannot reach the\n"
	  "target within the cell's capacity, a fresh cell's recipe, with the expected\n"
	  "waste either way. --json: {\"action\": \"add\"|\"fresh\"|\"done\"|\"give_up\",\n"
	  "\"dispense\": {...}, \"cell\": {...}, \"predicted_lab\", \"predicted_de00\",\n"
	  "\"measured_de00\", \"waste_ml\": {\"add\", \"fresh\"}, \"reason\", ...}.\n"
	  "\n"
	  "mix trial runs the closed loop on the simulator's bench without the arm: N\n"
	  "targets (default 50) drawn inside the gamut with seed S (default 1, which\n"
	  "also seeds the simulator), each mixed from the solver's first recipe in a\n"
	  "mixing cell, stirred, photographed, measured through the calibrated vision\n"
	  "pipeline and corrected through mix_step up to brakes.attempts_per_subtask\n"
	  "measurements, with a fresh cell when adding cannot reach it; and, for\n"
	  "comparison, the first recipe alone. The camera profile is the machine file's\n"
	  "calibration.camera_profile, else made from a chart frame of the same bench as\n"
	  "`calib camera` makes it; the machine file's calibration.light_map is divided\n"
	  "out of every frame, else one made from the simulator's flat scene as `calib\n"
	  "camera --flat F --light-map MAP` makes it (--no-light-correction: none); which\n"
	  "profile and light correction were used is printed. Every verdict\n"
	  "rests on the camera; the simulator's truth of each cell is reported beside\n"
	  "it. --json: {\"attempts\": {\"median\", \"p95\", \"max\"}, \"unreached\",\n"
	  "\"unreached_reasons\", \"uncorrected\": {\"attempts\", \"unreached\", ...},\n"
	  "\"paint_ml\", \"truth\", \"camera\", \"per_target\", ...}.\n"
	  "\n"
	  "Defaults: --palette palettes/kimera-13.json (under $BL_SOURCE_ROOT, else the\n"
	  "source tree brushloop was built from); --machine $BRUSHLOOP_MACHINE, else the\n"
	  "example simulator machine.\n",
	  cli_mix_main, cli_mix_sets },
	{ "palette", "derive a palette's paint data from measured spectra",
	  "usage: brushloop palette derive --masstone FILE --tints FILE -o PALETTE\n"
	  "                                [--name NAME] [--notice-file FILE] [--step NM] [--json]\n"
	  "\n"
	  "Derives each paint's Kubelka-Munk absorption K and scattering S per band\n"
	  "(two-constant, S of the white = 1) from measured spectra: the masstones and\n"
	  "one tint of each paint with the white (files in the Kimera format: a list\n"
	  "whose first entry holds the wavelengths, reflectance in percent, repeats\n"
	  "averaged). Writes the palette, with wells w1..wN in paint order and the\n"
	  "licence found beside the masstones (or in --notice-file) as its notice, and\n"
	  "prints how closely the model reproduces each measurement (CIEDE2000).\n"
	  "--step sets the band spacing over 400..700 nm (default 10). --name defaults\n"
	  "to the output's file name.\n",
	  cli_palette_main, cli_palette_sets },
	{ "gate", "the safety gate's decision for every action of a file",
	  "usage: brushloop gate check PLAN_OR_ACTIONS.json [--machine M] [--from X,Y,Z] [--planner] [--json]\n"
	  "\n"
	  "Checks every action of an actions file ({\"kind\": \"actions\", \"version\": 1,\n"
	  "\"actions\": [...]}) or of a plan (every \"actions\" array in it) against the\n"
	  "machine file, as the gate would before running it: each is allowed, needs an\n"
	  "operator, or is denied, with a reason code and the field it concerns. The tool\n"
	  "starts at the machine's home (or --from, mm) and, after each action that is not\n"
	  "denied, stands where its path ends. A malformed action is a denial naming the\n"
	  "field; a file that is not JSON is one denial (reason not_json).\n"
	  "The machine is --machine, else $BRUSHLOOP_MACHINE, else the example simulator\n"
	  "machine. Messages are the operator's (with the limits); --planner shows what a\n"
	  "planner is told instead (no limit values). --json prints one object with a\n"
	  "\"decisions\" list. Exit 0 when all are allowed, 3 when some need an operator,\n"
	  "2 when any is denied or malformed.\n",
	  cli_gate_main, cli_gate_sets },
	{ "pending", "list the approval requests a run waits on",
	  "usage: brushloop pending RUN_DIR [--all] [--json]\n"
	  "\n"
	  "Lists the requests in RUN_DIR/approvals that wait for an answer: id, action,\n"
	  "from, to, speed, zones, why it needs a person, and the preview picture. --all\n"
	  "lists answered and closed requests too, with their status. Exit 0.\n",
	  cli_pending_main, cli_pending_sets },
	{ "approve", "answer a request a run waits on (yes, or no with --deny)",
	  "usage: brushloop approve RUN_DIR [ID] [--deny] [--all] [--json]\n"
	  "\n"
	  "Answers request ID (see 'brushloop pending'): yes, or no with --deny. Without\n"
	  "an ID it answers the one waiting request, and refuses to guess among several\n"
	  "unless --all is given. A request is answered once; a running gate acts on the\n"
	  "answer within a moment, a paused run when it resumes. An approval covers one\n"
	  "execution of that action. Exit 2 for an unknown or already answered request.\n",
	  cli_approve_main, cli_approve_sets },
	{ "grant", "give a run a scoped, time-limited permission",
	  "usage: brushloop grant RUN_DIR --kinds K[,K...] --zone Z[,Z...] --max-speed MM_S --for DURATION\n"
	  "                       [--machine M] [--json]\n"
	  "       brushloop grant RUN_DIR --egress HOST:PORT --for DURATION [--machine M] [--json]\n"
	  "       brushloop grant RUN_DIR --list [--json]\n"
	  "       brushloop grant RUN_DIR --revoke ID\n"
	  "\n"
	  "Lets the gate allow, without asking, actions of the given kinds (home, move,\n"
	  "jog, stroke, dip, dispense, stir, wipe, wash, park) that go down only in the\n"
	  "given zones (travel, canvas, well, cell, water, wipe, or palette for wells,\n"
	  "cells, water and wipe; travel above the floors is always included) at up to\n"
	  "MM_S, when all they need a person for is a soft limit (speed, move length,\n"
	  "acceleration) or the machine's operator_kinds. Never a hard limit, a fault,\n"
	  "the first motion or overridden limits. DURATION is 15m, 90s, 2h or 1h30m: it\n"
	  "runs on the run's clock from when the gate first sees the grant, and never\n"
	  "longer than that much wall time after now. With --machine, a grant longer than\n"
	  "safety.max_grant_s or faster than the hard limit is refused here; the gate\n"
	  "ignores and reports such grants anyway. Every grant and every use of it is\n"
	  "journaled.\n"
	  "\n"
	  "--egress opens HOST:PORT to the run's external planner instead, for each\n"
	  "phase that starts while the grant lasts (wall time): no motion. It needs the\n"
	  "machine's planner.egress (with --machine, refused here without it).\n",
	  cli_grant_main, cli_grant_sets },
	{ "camera", "list V4L2 cameras, capture a frame",
	  "usage: brushloop camera list [--dir DIR] [--json]\n"
	  "       brushloop camera capture [--machine M] -o FRAME.jpg|.png [--average N] [--json]\n"
	  "\n"
	  "list shows the V4L2 video capture devices in /dev (or DIR) with their native\n"
	  "formats and frame sizes. capture opens the machine file's camera (sim, v4l2 or\n"
	  "replay; M defaults to $BRUSHLOOP_MACHINE, else the example simulator machine),\n"
	  "and no arm, locks its controls, throws away\n"
	  "camera.discard_frames frames and writes one frame to FRAME, or the average of N\n"
	  "frames (1..64). A single JPEG frame is written byte for byte; averaged or YUYV\n"
	  "frames are encoded by the extension (.png lossless, .jpg quality 95).\n",
	  cli_camera_main, cli_camera_sets },
	{ "measure", "measure colour: a region, truth patches, or the canvas against a target",
	  "usage: brushloop measure IMAGE --roi X,Y,W,H [--profile P] [--machine M] [--json]\n"
	  "       brushloop measure IMAGE --truth TRUTH.json [--profile P] [--machine M] [--json]\n"
	  "       brushloop measure IMAGE --canvas --target TARGET [--machine M]\n"
	  "                 [--geometry CANVAS.json] [--cell MM] [--px-per-mm N] [--worst N]\n"
	  "                 [-o ERRMAP.png] [--raster CANVAS.png] [--profile P] [--json]\n"
	  "\n"
	  "--roi: the robust Lab of a region (pixels, origin top left), its spread and\n"
	  "pixel count; --json gives \"lab\", \"stddev\" and \"pixels\".\n"
	  "--truth: every patch of a truth file ({\"patches\": [{\"name\", \"roi\", \"lab\"}]},\n"
	  "as 'brushloop sim render --truth' writes it) measured and compared with its true\n"
	  "Lab (CIEDE2000, mean and max).\n"
	  "--canvas: the canvas located by its corner markers or the canvas file\n"
	  "(--geometry, else calibration.canvas), rectified at N px/mm (default 1),\n"
	  "compared with TARGET cell by cell (default 5 mm) as a CIEDE2000 map: mean,\n"
	  "95th percentile (\"mean_de00\", \"p95_de00\") and the worst cells; -o writes\n"
	  "the map as a picture, --raster the rectified canvas.\n"
	  "Colours go through the camera profile (--profile, else the machine file's\n"
	  "calibration.camera_profile); without one, through sRGB with a warning. M\n"
	  "defaults to $BRUSHLOOP_MACHINE, else the example simulator machine.\n",
	  cli_measure_main, cli_measure_sets },
	{ "calib", "calibration sessions: camera profile, canvas, arm registration, paints",
	  "usage: brushloop calib camera [--machine M] [--frame F] [--chart colorchecker24|FILE]\n"
	  "                              [--corners X,Y;X,Y;X,Y;X,Y] [--flat F] [--no-light-correction]\n"
	  "                              [--ti3 FILE.ti3]\n"
	  "                              [--light-map MAP.json] [--model matrix|affine|root-polynomial]\n"
	  "                              [--icc-version 2|4]\n"
	  "                              [--truth T]\n"
	  "                              [-o PROFILE.icc] [--force] [--json]\n"
	  "       brushloop calib camera --check PROFILE.icc [--frame F] [--chart C] [--flat F]\n"
	  "                              [--ti3 FILE.ti3] [-o PICTURE.png] [--json]\n"
	  "       brushloop calib canvas [--machine M] [--frame F] [--corners X,Y;...] [--size WxH]\n"
	  "                              [--truth T] [-o CANVAS.json] [--force] [--json]\n"
	  "       brushloop calib arm [--machine M] (--points PAIRS.json | [--targets X,Y;...]\n"
	  "                              [--by-hand] [--run-dir DIR]) [--model similarity|affine]\n"
	  "                              [-o ARM.json] [--json]\n"
	  "       brushloop calib paints --palette P --card CARD.json --layout [--tints F,F] [--svg S]\n"
	  "       brushloop calib paints --palette P --card CARD.json -o PALETTE.json [--frame F]\n"
	  "                              [--profile ICC] [--machine M] [--truth T] [--force] [--json]\n"
	  "\n"
	  "Each session tells the operator what to place where, works on --frame F (or a\n"
	  "frame captured from the machine's camera), writes its result where the machine\n"
	  "file's calibration section points (or -o), and ends with its residuals and PASS\n"
	  "or FAIL against the machine's thresholds: a result that fails is not written\n"
	  "(camera, canvas, paints: --force writes it; an arm registration never). Where\n"
	  "it writes is checked before anything is captured or measured. Capturing from\n"
	  "the simulator, --seed S and --world W are passed to it. 'brushloop calib\n"
	  "SESSION --help' shows one session's usage. See docs/calibration.md.\n"
	  "Exit: 0 pass, 1 fail (not written), 2 bad input or a frame where something was\n"
	  "not found.\n"
	  "\n"
	  "camera: --chart is colorchecker24 (built in), a JSON chart file, or ArgyllCMS's\n"
	  "CGATS reference (.cie, .ti2, .ti1: patches placed by SAMPLE_LOC/SAMPLE_ID A01..).\n"
	  "It finds the chart (or takes its corners, clockwise from its top left as it\n"
	  "lies upright), measures every patch, corrects uneven light (from the chart's dark\n"
	  "frame, or --flat: a frame of a light uniform card where the chart lay, refused\n"
	  "when it shows the chart; with --light-map, a card over the whole view, and the\n"
	  "light over it relative to the chart's is written to MAP.json for\n"
	  "calibration.light_map), fits\n"
	  "tone curves and a matrix to XYZ, keeps a richer model only if it predicts\n"
	  "held-out patches better, writes an ICC profile (version 2.4, which every colour\n"
	  "tool reads; --icc-version 4 for 4.3) and prints CIEDE2000 per patch: fit, held\n"
	  "out (leave-one-out) and the uncalibrated sRGB assumption. A patch its\n"
	  "neighbours cannot predict is refused by name, two whose references are swapped\n"
	  "by both names. It also\n"
	  "reports the drift against the profile it replaces. --ti3 writes the measurements\n"
	  "as ArgyllCMS's .ti3 (for colprof, profcheck; the profile's targ tag holds the\n"
	  "same). Passes when the held-out mean\n"
	  "is within calibration.max_camera_de00. --check PROFILE measures the chart through\n"
	  "that profile instead, replacing nothing, draws each patch's error in -o PICTURE.png\n"
	  "(default PROFILE.check.png) and passes (exit 0, else 1) by the same threshold. --truth compares with a simulator truth\n"
	  "file. --json: {\"fit\", \"held_out\", \"srgb\" (each \"mean_de00\", \"max_de00\"),\n"
	  "\"model\", \"candidates\", \"patches\", \"drift\", \"pass\", ...}.\n"
	  "\n"
	  "canvas: fits the canvas homography to the corner markers' centres and corners\n"
	  "(or 4 --corners, clockwise as the frame shows them from the origin's corner, the\n"
	  "one by the marker with the dark core; checked against the markers in view),\n"
	  "writes the canvas file, reports the reprojection error in mm.\n"
	  "\n"
	  "arm: the operator brings the brush tip to each target (canvas mm; default 20 mm\n"
	  "inside each corner and the centre) by typed jogs, each through the safety gate at\n"
	  "reduced speed (or by hand, --by-hand), or gives point pairs ({\"kind\":\n"
	  "\"arm-points\", ...}); fits the canvas-to-arm map and refuses one whose worst\n"
	  "residual exceeds calibration.max_arm_residual_mm.\n"
	  "\n"
	  "paints: --layout writes a card to print (and paint); measuring it derives each\n"
	  "paint's measured masstone and tints through the camera profile and writes a\n"
	  "palette the mixing model accepts. A swatch far from its paint is refused by\n"
	  "name, two paints in each other's boxes by both names.\n",
	  cli_calib_main, cli_calib_sets },
	{ "sim", "the simulator: render camera frames, execute actions on the simulated arm",
	  "usage: brushloop sim render [--machine M] [--seed S] [--scene canvas|swatches|chart|card|flat]\n"
	  "                            [--card CARD.json] [--world FILE] [--fault KEY=VALUE]... -o FRAME.jpg\n"
	  "                            [--truth TRUTH.json] [--json]\n"
	  "       brushloop sim exec ACTIONS.json [--machine M] [--seed S] [--world FILE]\n"
	  "                            [--run DIR] [--from N] [--ask] [--frames DIR]\n"
	  "                            [--scene S] [--fault KEY=VALUE]... [--json]\n"
	  "\n"
	  "render captures one frame of the simulated camera into FRAME, JPEG or PNG as its\n"
	  "name says (.jpg, .jpeg or .png). --scene picks what it\n"
	  "shows: canvas (the world as it is, default), swatches (its wells and mixing cells;\n"
	  "a fresh world shows seeded test mixes in them), chart (a ColorChecker 24 laid on\n"
	  "the canvas) or card (the paint card of --card, from 'calib paints --layout',\n"
	  "painted with this run's paints and laid on the canvas). --truth writes where\n"
	  "each patch lies in the image and its true\n"
	  "colour: {\"patches\": [{\"name\", \"roi\": [x, y, w, h], \"lab\": [L, a, b]}], ...}\n"
	  "(CIELAB D50, what a spectrophotometer reads). See docs/sim.md.\n"
	  "\n"
	  "exec executes an actions file (docs/actions.md) on the simulated arm and reports\n"
	  "the simulated time it took; nothing runs unless the whole file is valid. Every\n"
	  "action goes through the safety gate, which journals its decision in\n"
	  "DIR/journal.jsonl (--run DIR, made if missing; else a new directory under\n"
	  "$TMPDIR, printed). An action that needs an operator is filed as a request in DIR\n"
	  "and exec stops with exit 3, saying how to approve it and go on (--run DIR --from\n"
	  "N: the arm is homed first when it is not, as after re-opening a world). --ask\n"
	  "asks at the terminal instead (no answer is no). A denied action is exit 2. The\n"
	  "arm starts unhomed: the file begins with a \"home\" action. --frames saves a frame\n"
	  "after each action in DIR (after-NNNN.jpg).\n"
	  "\n"
	  "--machine defaults to $BRUSHLOOP_MACHINE, else examples/machine-sim.json; --seed\n"
	  "(default 1) seeds the paint batch and every noise. --world FILE loads the world\n"
	  "from FILE if it exists, and exec saves it after every action, so a run continues\n"
	  "where the last one stopped (a world keeps its seed). --fault KEY=VALUE overrides\n"
	  "one of sim.faults: drop_frames, corrupt_frames, command_failures (rates 0..1),\n"
	  "stall_at_s, dry_well, dry_well_ml, power_loss_after (the process exits at once\n"
	  "with status 86 after that many actions of the world). Exit status: 0 done, 1 a\n"
	  "runtime failure (a failed command, a dropped frame), 2 invalid input or a denied\n"
	  "action, 3 waiting for an operator or held, 5 the arm stalled or refused to move\n"
	  "unhomed.\n",
	  cli_sim_main, cli_sim_sets },
	{ "plan", "plan a painting: colours, recipes, strokes and checks, or corrections",
	  "usage: brushloop plan TARGET [--machine M] [--palette P] [-o plan.json] [--colours K]\n"
	  "                      [--max-strokes N] [--preview preview.png] [--baseline] [--json]\n"
	  "       brushloop plan --correct --observed CANVAS PLAN.json [--rectified] [-o more.json]\n"
	  "                      [--max-strokes N] [--preview P] [--machine M] [--palette P] [--json]\n"
	  "       brushloop plan --compare [TARGET...] [--budgets 100,300,1000] [--json]\n"
	  "\n"
	  "Plans TARGET (JPEG or PNG, fitted to the canvas keeping its aspect ratio) for the\n"
	  "machine (default: $BRUSHLOOP_MACHINE or examples/machine-sim.json) and palette\n"
	  "(default palettes/kimera-13.json) and writes plan.json (docs/plan.md): the colours\n"
	  "to mix with their recipes, every stroke, mixes, paint batches with their expected\n"
	  "results and checkpoints, in order. Prints the colours, stroke counts, paint per\n"
	  "colour, estimated arm time and the predicted mean and 95th-percentile CIEDE2000\n"
	  "against the target. --colours K fixes the number of mixed colours (default: as\n"
	  "many as the picture needs, at most one a mixing cell); --max-strokes N the stroke\n"
	  "budget (default 1000); --preview writes the target and the predicted painting\n"
	  "side by side; --baseline plans strokes on a regular grid instead (for comparison).\n"
	  "--correct plans corrective strokes for the cells of an observed canvas (a camera\n"
	  "frame, or with --rectified an image of the canvas alone) still beyond the paint\n"
	  "tolerance, and lists the cells no colour of the plan can fix (default output\n"
	  "corrections.json, 300 strokes). --compare plans each target (default: the five\n"
	  "examples/targets) at each budget with the planner and the grid baseline and prints\n"
	  "the predicted mean CIEDE2000 of both.\n"
	  "--json: {\"plan\", \"predicted\": {\"mean_de00\", \"p95_de00\"}, \"strokes\",\n"
	  "\"colours\": [{\"name\", \"lab\", \"recipe\", \"paint_ml\", ...}], \"arm_time_s\", ...}.\n",
	  cli_plan_main, cli_plan_sets },
	{ "run", "paint a target: plan, mix, paint, look, correct, unattended, resumable",
	  "usage: brushloop run TARGET [--machine M] [--palette P] [--out DIR] [--seed S]\n"
	  "                     [--open-loop] [--max-strokes N] [--colours K] [--fault KEY=VALUE]...\n"
	  "                     [--attended] [--accept-nearest] [--refill-ok] [--quiet]\n"
	  "                     [--planner 'COMMAND ARGS'] [--arm-hours H]\n"
	  "                     [--reviewer 'COMMAND ARGS'] [--on-disagreement pause|brake]\n"
	  "\n"
	  "Plans TARGET (a PNG or JPEG) for the machine and paints it: every colour is mixed\n"
	  "and measured by the camera, corrected until it is within tolerance; every batch of\n"
	  "strokes is observed and compared with its prediction; checkpoints observe the whole\n"
	  "canvas and corrective strokes follow for at most brakes.correction_rounds rounds.\n"
	  "Every action goes through the safety gate; unattended, what needs an operator is\n"
	  "deferred and the run carries on (--attended asks at the terminal instead). Every\n"
	  "step is in DIR/journal.jsonl, where the run stands in DIR/state.json and, for a\n"
	  "person, DIR/STATUS.md; the final canvas is DIR/final-canvas.png beside the target.\n"
	  "\n"
	  "--machine defaults to $BRUSHLOOP_MACHINE, else the bundled simulator\n"
	  "(examples/machine-sim.json); --palette to examples/palette.json. --out defaults to\n"
	  "runs/TARGET-DATE-TIME. --seed seeds the simulator (default 1). --open-loop runs the\n"
	  "same plan without verification or correction, for comparison. --arm-hours H is the\n"
	  "night's arm-time budget (default the machine file's painting.arm_hours): the plan\n"
	  "is as many strokes as its expected arm time fits in it (at most --max-strokes),\n"
	  "correction rounds start only while it lasts, and a run that reaches it stops\n"
	  "cleanly with the canvas it has (STATUS.md says which). --max-strokes and\n"
	  "--colours are the planner's. --fault KEY=VALUE injects a simulator fault for this\n"
	  "process (see brushloop sim --help). --accept-nearest accepts beforehand the nearest\n"
	  "colour the mixing loop reaches when a mix cannot reach its tolerance (otherwise its\n"
	  "strokes wait for the operator). Before anything is written, the plan's expected\n"
	  "paint (as `brushloop estimate` gives it) is compared with every well: one that\n"
	  "cannot supply it refuses the run (exit 2), naming each such well and the ml it\n"
	  "lacks; --refill-ok starts it anyway (it pauses for each refill). A live progress line goes to a terminal, plain\n"
	  "lines every 5 s otherwise; --quiet drops both. --planner runs COMMAND (words split\n"
	  "at spaces, no shell) in a sandbox as the planner of the painting and of each\n"
	  "correction round, speaking the protocol of docs/planner.md (the machine file's\n"
	  "planner section sets its deadline, limits, price and what happens when its answer\n"
	  "is refused); without a sandbox it is refused with exit 2. See docs/run.md.\n"
	  "A second judge reviews every checkpoint and mix verdict by other paths (docs/review.md):\n"
	  "the built-in rules (the machine file's review section), and with --reviewer, COMMAND\n"
	  "run the same way as a planner, speaking docs/reviewer.md. It can only withhold\n"
	  "agreement; --on-disagreement pause (default) or brake says what the run does then.\n"
	  "\n"
	  "Exit status: 0 finished (STATUS.md says whether the final canvas verified), 1\n"
	  "runtime failure, 2 invalid input, 3 paused (a signal, or waiting for an operator),\n"
	  "4 a brake fired (the reason is in STATUS.md), 5 safety stop. `brushloop resume DIR`\n"
	  "continues a run that stopped.\n",
	  cli_run_main, cli_run_sets },
	{ "resume", "continue a run after a crash, a pause or a brake",
	  "usage: brushloop resume DIR [--accept-mix COLOURS] [--substitute COLOUR=NEW]...\n"
	  "                            [--refilled WELLS] [--emptied CELLS] [--fault KEY=VALUE]...\n"
	  "                            [--attended] [--accept-changed] [--overrule-review] [--quiet]\n"
	  "\n"
	  "Continues the run in DIR from its state.json and journal: the arm is homed again,\n"
	  "a dispense the journal shows may have run is never repeated, a paint batch whose\n"
	  "completion is unknown is observed first and its interrupted stroke not repeated.\n"
	  "Answered operator requests (brushloop approve, brushloop grant) are picked up.\n"
	  "--accept-mix c3,c5 (or all) accepts the nearest mix the run could reach for those\n"
	  "colours, whose strokes then go ahead. --substitute c3=lab:80,0,10 (srgb:R,G,B,\n"
	  "#rrggbb, or c3=c1: as colour c1 is planned) mixes colour c3 as that colour instead,\n"
	  "in a clean cell, and paints and corrects with it; it must be within the palette's\n"
	  "reach (`brushloop mix COLOUR` tells). The run counts the paint left in each well\n"
	  "(full at the start) and pauses before a mix would draw one below its reserve;\n"
	  "--refilled w1,w3 (or all) says a person has filled those wells again (on the\n"
	  "simulator, the simulated wells are filled). --emptied m3,m12 (or all) says a person\n"
	  "has emptied and cleaned those mixing cells: each is clean again, the paint of the\n"
	  "colour in it gone (journaled cell_emptied); it repairs a run whose state.json\n"
	  "holds a cell fuller than mixing.cell_max_ml. --answered-by NAME says who gives\n"
	  "these answers in the journal (default \"$USER (pid N)\"; the console says itself).\n"
	  "The run trusts only what it wrote: a changed DIR/machine.json, palette.json or\n"
	  "target (run.json holds their SHA-256 from the start) is refused, exit 2, naming\n"
	  "the file and the keys that differ; --accept-changed goes on with them as they are,\n"
	  "the differences journaled (inputs_changed). The journal's chain is verified from\n"
	  "its first line: another run's or an edited journal, a missing one, a state.json of\n"
	  "another run or ahead of the journal, a plan.json or corrections file not as the run\n"
	  "wrote it, another run's world.sim and a link out of DIR are refused, never started\n"
	  "over; a state.json behind the journal (or missing) is rebuilt from it.\n"
	  "A run paused because the second judge disagreed looks again when resumed (the\n"
	  "checkpoint observed, the cell measured again); --overrule-review says a person looked\n"
	  "and the run's verdict stands (docs/review.md).\n"
	  "Exit status as for run.\n",
	  cli_resume_main, cli_resume_sets },
	{ "planner", "the built-in planner as a process speaking the planner protocol; a run's decisions replayed",
	  "usage: brushloop planner serve\n"
	  "       brushloop planner replay RUN_DIR\n"
	  "\n"
	  "Reads one request line on stdin, plans it with the built-in planner from what the\n"
	  "request says alone (the machine's planner view, the palette, the files at /in),\n"
	  "writes the answer line on stdout and the host's verdict on stderr: the protocol\n"
	  "of docs/planner.md, so `brushloop run TARGET --planner 'brushloop planner serve'`\n"
	  "paints through it. Exit 0 when it answered, 2 for a request it cannot read.\n"
	  "\n"
	  "replay makes each recorded phase's admission decision again from RUN_DIR/planner/rN\n"
	  "(request.json, answer.json) and the run's machine.json, one line a phase:\n"
	  "{\"round\", \"decision\"}, the decision as the journal's planner_denied data (or {}\n"
	  "for an answer admitted) with \"admitted\".\n",
	  cli_planner_main, NULL },
	{ "serve", "the web console: runs, a live run, approvals, grants and answers",
	  "usage: brushloop serve [--runs DIR] [RUN_DIR...] [--listen HOST:PORT] [--allow-remote] [--read-only]\n"
	  "\n"
	  "Serves a web console for the run directories under DIR (every one, as they appear)\n"
	  "and those named, on HOST:PORT (default 127.0.0.1:8080; [::1]:PORT for IPv6; port 0\n"
	  "picks a free one). An address other than loopback needs --allow-remote as well, and\n"
	  "is warned about: anyone who reaches it can try the token.\n"
	  "It prints the URL to open, with a random access token every request needs (kept\n"
	  "in an HttpOnly, SameSite=Strict cookie after the first visit). Answers (approve,\n"
	  "deny, grant, resume with accepted mixes, substitutes or refilled wells, hold) go\n"
	  "through the same functions as the commands, journaled as from the console and its\n"
	  "client; each checks the token and the Origin. --read-only shows no buttons and\n"
	  "refuses every POST. Runs until SIGINT or SIGTERM. See docs/console.md.\n",
	  cli_serve_main, cli_serve_sets },
	{ "status", "where a run stands: state, canvas error, mixes, cost, heartbeat",
	  "usage: brushloop status DIR [--json]\n"
	  "\n"
	  "Reads DIR's state.json and heartbeat (the run may be running). --json prints one\n"
	  "object: \"state\", \"reason\", \"subtask\", \"canvas\": {\"mean_de00\", \"p95_de00\",\n"
	  "\"final\", \"verified\", \"history\"}, \"mixes\": [...], \"cost\", \"deferred\", \"wells\",\n"
	  "\"heartbeat\": {\"age_s\", \"stale_after_s\", \"stale\"}. A run that says it is\n"
	  "running but whose heartbeat is older than brakes.heartbeat_stale_s is stale: it\n"
	  "died or hangs without saying so; status then exits 4 and puts a STALE banner at\n"
	  "the top of DIR/STATUS.md; `brushloop resume DIR` continues it.\n",
	  cli_status_main, cli_status_sets },
	{ "estimate", "what painting a target would take and cost, before it starts",
	  "usage: brushloop estimate TARGET [--machine M] [--palette P] [--max-strokes N]\n"
	  "                          [--colours K] [--open-loop] [--arm-hours H] [--json]\n"
	  "\n"
	  "Plans TARGET as run would, sized to the arm-time budget (--arm-hours, default\n"
	  "painting.arm_hours), says what the budget buys, and prints the expected arm time, mixes, verifications,\n"
	  "planner calls and paint, priced with the machine file's costs, and an upper bound\n"
	  "that includes retries (every mix to its attempt limit, every correction round).\n"
	  "--json: {\"expected\": {\"arm_s\", \"verifications\", \"planner_calls\", \"paint_ml\",\n"
	  "\"priced\": {..., \"total\"}}, \"upper_bound\": {...}, \"mixes\", \"strokes\",\n"
	  "\"arm_budget_s\", \"passes\", \"correction_rounds\", ...}.\n",
	  cli_estimate_main, cli_estimate_sets },
	{ "regress", "simulator regression suites: run, judge, compare, report (table, JSON, JUnit, Slurm)",
	  "usage: brushloop regress SUITE.json [--jobs N] [--baseline BASELINE.json] [--junit OUT.xml]\n"
	  "                         [--markdown OUT.md] [--json] [--out DIR] [--quiet]\n"
	  "       brushloop regress SUITE.json --emit-slurm DIR [--jobs N]\n"
	  "       brushloop regress --collect DIR [--baseline BASELINE.json] [--junit OUT.xml]\n"
	  "                         [--markdown OUT.md] [--json]\n"
	  "\n"
	  "Runs every case of a suite file (docs/regress.md: targets, files or folders, seeds,\n"
	  "machine and palette files, stroke counts, closed and/or open loop, thresholds) as an\n"
	  "ordinary `brushloop run` into DIR/CASE (default DIR ~/.cache/brushloop/regress/NAME,\n"
	  "under $XDG_CACHE_HOME when set), N at once\n"
	  "(default 1) with a progress line and an ETA on stderr. Started again on the same\n"
	  "DIR it skips the cases already done and resumes a run that was killed. Then judges\n"
	  "each case from its run directory: final mean and 95th percentile CIEDE2000, finished\n"
	  "unattended (exit 0), arm time, paint, mixes per colour, and with --baseline (an\n"
	  "earlier result) how much worse than it each figure is. Prints a table (--json: every\n"
	  "figure as one JSON document, also kept in DIR/result.json); --junit writes JUnit\n"
	  "XML, a testcase a case with its properties and attachments (canvas, error map,\n"
	  "report), a missed threshold a failure with the figures; --markdown a summary for a\n"
	  "pull-request comment.\n"
	  "--emit-slurm DIR writes DIR/regress.sbatch, a Slurm array job with one task per\n"
	  "case running its `brushloop run` line (--jobs N: at most N at once, %N), with a\n"
	  "time and memory limit, DIR/collect.sbatch that judges them, and DIR/submit that submits\n"
	  "both (the second after the first); it runs nothing; the same script runs one case\n"
	  "by hand or under GNU parallel.\n"
	  "--collect DIR judges the run directories such a job left in DIR as above.\n"
	  "Exit status: 0 every case passed, 1 any failed or could not run, 2 a bad suite,\n"
	  "baseline or option, 3 interrupted (each run paused; the same command goes on).\n",
	  cli_regress_main, cli_regress_sets },
	{ "report", "writes a run's report.html: canvas, error maps, mixes, paint, cost, timeline",
	  "usage: brushloop report DIR [--json]\n"
	  "\n"
	  "Writes DIR/report.html from the run directory's files alone (a run writes it\n"
	  "itself when it finishes, pauses or brakes; this remakes it, also while the run\n"
	  "runs): the target beside the final canvas, the canvas and its CIEDE2000 map at\n"
	  "every observation, each colour's mix attempts against the tolerance with their\n"
	  "frames, paint per well, cost against the estimate, the subtasks on the run clock,\n"
	  "and every deferral, accepted colour, brake and operator answer with its reason.\n"
	  "It needs no server and no JavaScript; its pictures are files of DIR (drawn into\n"
	  "DIR/report/ from frames/). A missing or damaged file of the run is exit 2 naming\n"
	  "it, and an earlier report.html is left as it was. --json prints {\"report\",\n"
	  "\"bytes\", \"images\", \"drawn\"}.\n",
	  cli_report_main, cli_report_sets },
	{ NULL, NULL, NULL, NULL, NULL },
};

const struct cli_command *cli_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_fail(const bl_err *err)
{
	const char *m = err->msg[0] ? err->msg : bl_strerror(err->code);

	/*
	 * Line by line, each escaped: a name in a message (a file, a directory)
	 * can hold an escape sequence, U+202E or a newline, which a terminal
	 * would obey. A message's own lines go on indented ("\n  "): a newline
	 * before anything else is a name's, shown as \n.
	 */
	fprintf(stderr, "brushloop: error: ");
	for (;;) {
		const char *nl = strstr(m, "\n ");
		char line[BL_ERR_MSG_MAX], shown[4 * BL_ERR_MSG_MAX];

		snprintf(line, sizeof(line), "%.*s", nl ? (int)(nl - m) : (int)strlen(m), m);
		bl_name_shown(line, shown, sizeof(shown));
		fprintf(stderr, "%s\n", shown);
		if (!nl)
			break;
		m = nl + 1;
	}
	return bl_exit_status(err->code);
}

int cli_usage(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "brushloop: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'brushloop %s --help')\n", cmd ? cmd->name : "help");
	return BL_EXIT_USAGE;
}

int cli_print_json(cJSON *obj)
{
	char *s = obj ? cJSON_Print(obj) : NULL;

	cJSON_Delete(obj);
	if (!s) {
		fprintf(stderr, "brushloop: error: out of memory printing JSON\n");
		return BL_EXIT_FAIL;
	}
	puts(s);
	cJSON_free(s);
	return 0;
}

int cli_parse_double(const char *opt, const char *text, double *out, bl_err *err)
{
	char *end;

	errno = 0;
	*out = strtod(text, &end);
	if (end == text || *end || errno == ERANGE || !isfinite(*out))
		return bl_fail(err, BL_EINVAL, "%s: '%s' is not a finite number", opt, text);
	return 0;
}

int cli_parse_long(const char *opt, const char *text, long lo, long hi, long *out, bl_err *err)
{
	char *end;

	errno = 0;
	*out = strtol(text, &end, 10);
	if (end == text || *end || errno == ERANGE)
		return bl_fail(err, BL_EINVAL, "%s: '%s' is not an integer", opt, text);
	if (*out < lo || *out > hi)
		return bl_fail(err, BL_EINVAL, "%s: %ld is outside %ld..%ld", opt, *out, lo, hi);
	return 0;
}

int cli_help_main(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc > 2)
		return cli_usage(cli_find("help"), "help takes at most one command");
	if (argc == 2) {
		c = cli_find(argv[1]);
		if (!c)
			return cli_usage(NULL, "unknown command '%s'", argv[1]);
		cli_print_usage(stdout, c);
		return 0;
	}
	printf("usage: brushloop [--version] COMMAND [ARGS]\n\n"
	       "brushloop paints pictures with a robotic arm, checking every mix and every\n"
	       "layer with a camera. Commands:\n\n");
	for (c = cli_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n'brushloop COMMAND --help' shows one command's usage. Exit codes: 0 done,\n"
	       "1 runtime failure, 2 usage or invalid input, 3 paused for an operator,\n"
	       "4 stopped by a brake, 5 safety stop.\n");
	return 0;
}
