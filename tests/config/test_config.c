/* test_config.c: every rejection path of the machine and palette loaders, fed bad files through the CLI. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "config/machine.h"
#include "config/palette.h"
#include "test.h"

/* A value that is raw JSON text, spliced in after printing (for 1e999, NaN...). */
#define RAW "\x01RAW:"
#define DELETE NULL

struct mutation {
	const char *path;  /* a.b[2].c; the last key is added when absent */
	const char *value; /* JSON text, RAW "text", or DELETE */
	const char *msg;   /* expected in stderr */
};

static char *read_text(const char *path)
{
	char *buf = NULL;
	size_t len;

	if (fs_read_file(path, 1 << 24, &buf, &len, NULL) != 0) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	return buf;
}

static const char *src_path(const char *rel)
{
	static char p[4096];
	const char *src = getenv("BRUSHLOOP_SRC");

	snprintf(p, sizeof(p), "%s/%s", src ? src : ".", rel);
	return p;
}

/* Follows "a.b[2].c" to the parent of the last key; returns the parent and the key. */
static cJSON *walk(cJSON *root, const char *path, char *last, size_t n)
{
	char buf[256], *save = NULL, *tok, *next;
	cJSON *cur = root;

	snprintf(buf, sizeof(buf), "%s", path);
	tok = strtok_r(buf, ".", &save);
	while (tok) {
		char *br = strchr(tok, '[');
		int idx = -1;

		next = strtok_r(NULL, ".", &save);
		if (br) {
			idx = atoi(br + 1);
			*br = '\0';
		}
		if (!next && idx < 0) {
			snprintf(last, n, "%s", tok);
			return cur;
		}
		cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
		if (idx >= 0) {
			if (!next) {
				snprintf(last, n, "#%d", idx);
				return cur;
			}
			cur = cJSON_GetArrayItem(cur, idx);
		}
		if (!cur)
			return NULL;
		tok = next;
	}
	return NULL;
}

/* Applies a mutation to a copy of the base document and returns the file's text. */
static char *mutate(const char *base_text, const struct mutation *mu)
{
	cJSON *doc = cJSON_Parse(base_text), *parent;
	char last[64], *text, *raw_at;
	const char *raw = NULL;

	parent = walk(doc, mu->path, last, sizeof(last));
	if (!parent) {
		fprintf(stderr, "test bug: path %s not found\n", mu->path);
		exit(1);
	}
	if (last[0] == '#') {
		int idx = atoi(last + 1);

		if (!mu->value)
			cJSON_DeleteItemFromArray(parent, idx);
		else
			cJSON_ReplaceItemInArray(parent, idx, cJSON_Parse(mu->value));
	} else {
		cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
		if (mu->value && strncmp(mu->value, RAW, strlen(RAW)) == 0) {
			raw = mu->value + strlen(RAW);
			cJSON_AddStringToObject(parent, last, "@@RAW@@");
		} else if (mu->value) {
			cJSON *v = cJSON_Parse(mu->value);

			if (!v) {
				fprintf(stderr, "test bug: bad value %s\n", mu->value);
				exit(1);
			}
			cJSON_AddItemToObject(parent, last, v);
		}
	}
	text = cJSON_Print(doc);
	cJSON_Delete(doc);
	raw_at = raw ? strstr(text, "\"@@RAW@@\"") : NULL;
	if (raw_at) {
		size_t n = strlen(text) + strlen(raw) + 1;
		char *t2 = malloc(n);

		snprintf(t2, n, "%.*s%s%s", (int)(raw_at - text), text, raw,
			 raw_at + strlen("\"@@RAW@@\""));
		cJSON_free(text);
		return t2;
	}
	{
		char *copy = strdup(text);

		cJSON_free(text);
		return copy;
	}
}

/* Runs `config check` on the files and checks exit status 2 and the message. */
static void expect_rejected(const char *const *files, const char *msg, const char *what)
{
	const char *args[8] = { "config", "check" };
	char *err = NULL, *out = NULL;
	int n = 2, st;

	while (*files && n < 7)
		args[n++] = *files++;
	args[n] = NULL;
	st = test_brushloop(args, &out, &err);
	CHECK_MSG(st == 2, "%s: exit %d, want 2 (stderr: %s)", what, st, err ? err : "");
	CHECK_MSG(err && strstr(err, msg), "%s: stderr '%s' lacks '%s'", what, err ? err : "",
		  msg);
	free(err);
	free(out);
}

static const struct mutation machine_cases[] = {
	{ "limits.soft.speed_mm_s", "900",
	  "machine.json: limits.soft.speed_mm_s: 900 exceeds limits.hard.speed_mm_s 500" },
	{ "limits.soft.accel_mm_s2", "5000",
	  "machine.json: limits.soft.accel_mm_s2: 5000 exceeds limits.hard.accel_mm_s2 4000" },
	{ "limits.soft.move_mm", "1100",
	  "machine.json: limits.soft.move_mm: 1100 exceeds limits.hard.move_mm 1000" },
	{ "limits.soft.sped_mm_s", "100", "machine.json: limits.soft.sped_mm_s: unknown key" },
	{ "limits.hard.speed_mm_s", DELETE,
	  "machine.json: limits.hard.speed_mm_s: missing required key" },
	{ "limits.hard.speed_mm_s", "\"500\"",
	  "machine.json: limits.hard.speed_mm_s: must be a number, not a string" },
	{ "limits.hard.speed_mm_s", RAW "1e999",
	  "machine.json: limits.hard.speed_mm_s: is not a finite number" },
	{ "limits.hard.speed_mm_s", "-5", "machine.json: limits.hard.speed_mm_s: -5 is out of range" },
	{ "limits.hard.speed_mm_s", "null", "limits.hard.speed_mm_s: must be a number, not null" },
	{ "limits.z_floor_mm.canvas", "5",
	  "machine.json: limits.z_floor_mm.canvas: 5 is above zones.canvas.surface_z_mm 0" },
	{ "limits.z_floor_mm.travel", DELETE, "limits.z_floor_mm.travel: missing required key" },
	{ "painting.move_mm", "950", "machine.json: painting.move_mm: 950 mm is above limits.soft.move_mm 900 mm" },
	{ "painting.curve_accel_mm_s2", "1600",
	  "machine.json: painting.curve_accel_mm_s2: 1600 mm/s^2 is above limits.soft.accel_mm_s2 1500 mm/s^2" },
	{ "painting.press_max_mm", "2",
	  "painting.press_max_mm: 2 mm is above the canvas floor's depth below zones.canvas.surface_z_mm 1.5 mm" },
	{ "painting.stroke_speed_mm_s", "0", "machine.json: painting.stroke_speed_mm_s: 0 is out of range" },
	{ "painting.strok_speed_mm_s", "90", "machine.json: painting.strok_speed_mm_s: unknown key" },
	{ "painting.arm_hours", "0", "machine.json: painting.arm_hours: 0 is out of range" },
	{ "painting.arm_hours", "\"7\"", "machine.json: painting.arm_hours: must be a number" },
	{ "painting.map_gamut", "1", "machine.json: painting.map_gamut: must be" },
	{ "limits.max_stroke_points", "1.5",
	  "limits.max_stroke_points: must be an integer, not 1.5" },
	{ "limits.max_stroke_points", "1e12", "limits.max_stroke_points: 1000000000000 is out of range" },
	{ "kind", DELETE, "kind: missing" },
	{ "version", "2", "machine.json: version: schema version 2 is not supported" },
	{ "version", "1.5", "machine.json: version: must be an integer, not 1.5" },
	{ "name", "12", "machine.json: name: must be a string, not a number" },
	{ "name", "\"bad\\u0001name\"", "machine.json: name: contains a control character" },
	{ "colour", "1", "machine.json: colour: unknown key" },
	{ "arm.backend", "\"ros\"",
	  "machine.json: arm.backend: 'ros' is not one of: sim, modbus, gcode" },
	{ "arm.connection", "{\"port\": \"/dev/ttyUSB0\"}",
	  "machine.json: arm.connection: the sim backend has no connection" },
	{ "arm.backend", "\"modbus\"",
	  "machine.json: arm.connection: missing: the modbus backend needs a port or a host" },
	{ "arm.kinematics.type", "\"delta\"",
	  "machine.json: arm.kinematics.type: 'delta' is not one of: cartesian, scara" },
	{ "arm.kinematics.l1_mm", "200", "machine.json: arm.kinematics.l1_mm: unknown key" },
	{ "arm.kinematics.type", "\"scara\"", "machine.json: arm.kinematics.base_mm: missing required key" },
	{ "arm.home_mm", "[10, 10, 900]", "machine.json: arm.home_mm: (10, 10, 900) lies outside work_area" },
	{ "arm.home_mm", "[10, 10]", "machine.json: arm.home_mm: must be an array of 3 numbers" },
	{ "arm.home_mm", "[10, \"x\", 1]", "machine.json: arm.home_mm[1]: must be a number" },
	{ "work_area.max_mm", "[0, 500, 150]", "machine.json: work_area.max_mm: must exceed min_mm on every axis" },
	{ "travel_z_mm", "5", "machine.json: travel_z_mm: 5 is below limits.z_floor_mm.travel 10" },
	{ "travel_z_mm", "500", "machine.json: travel_z_mm: 500 lies outside work_area z" },
	{ "zones.canvas.size_mm", "[900, 300]", "machine.json: zones.canvas: the canvas does not lie inside work_area" },
	{ "zones.canvas.origin_mm", "[260, \"100\"]", "machine.json: zones.canvas.origin_mm[1]: must be a number, not a string" },
	{ "zones.canvas.lab", "[120, 0, 0]", "machine.json: zones.canvas.lab: L* 120 is not within 0..100" },
	{ "zones.canvas.lab", "[88, 0]", "machine.json: zones.canvas.lab: must be an array of 3 numbers" },
	{ "zones.canvas.lab", "[88, 0, 300]", "machine.json: zones.canvas.lab[2]: 300 is out of range" },
	{ "zones.wells[0].radius_mm", "0", "machine.json: zones.wells[0].radius_mm: 0 is out of range" },
	{ "sim.canvas_rotation_deg", "30", "machine.json: sim.canvas_rotation_deg: 30 is out of range" },
	{ "sim.canvas_rotation_deg", "\"3\"", "machine.json: sim.canvas_rotation_deg: must be a number" },
	{ "sim.canvas_offset_mm", "[4]", "machine.json: sim.canvas_offset_mm: must be an array of 2 numbers" },
	{ "sim.canvas_offset_mm", "[4, 80]", "machine.json: sim.canvas_offset_mm[1]: 80 is out of range" },
	{ "zones.wells[1].name", "\"w1\"", "machine.json: zones: the name 'w1' is used twice" },
	{ "zones.wells", "[]", "machine.json: zones.wells: needs at least one entry" },
	{ "zones.wells", "{}", "machine.json: zones.wells: must be an array, not an object" },
	{ "zones.wells[2]", "7", "machine.json: zones.wells[2]: must be an object, not a number" },
	{ "zones.wells[3].colour", "\"red\"", "machine.json: zones.wells[3].colour: unknown key" },
	{ "zones.mixing_cells[0].name", "\"w3\"", "machine.json: zones: the name 'w3' is used twice" },
	{ "zones.water.center_mm", "[800, 10]", "machine.json: zones.water.center_mm: (800, 10, -5) lies outside work_area" },
	{ "zones.wipe.capacity_ml", "3", "machine.json: zones.wipe.capacity_ml: unknown key" },
	{ "zones.park.pose_mm", "[680, 480, 200]", "machine.json: zones.park.pose_mm: (680, 480, 200) lies outside work_area" },
	{ "zones.keep_out[0].max_mm", "[600, 40, 150]", "machine.json: zones.keep_out[0].max_mm: must exceed min_mm on every axis" },
	{ "brushes[0].width_mm", "1000", "machine.json: brushes[0].width_mm: 1000 is out of range [0.2, 50]" },
	{ "brushes[1].name", "\"round-2\"", "machine.json: brushes: the brush name 'round-2' is used twice" },
	{ "brushes", "[]", "machine.json: brushes: needs at least one brush" },
	{ "brushes[0].name", "\"\"", "machine.json: brushes[0].name: must not be empty" },
	{ "safety.operator_kinds", "[3]", "machine.json: safety.operator_kinds[0]: must be an action kind name" },
	{ "safety.operator_kinds", "[\"wash\", \"wahs\"]", "machine.json: safety.operator_kinds[1]: 'wahs' is not an action kind" },
	{ "zones.keep_out[0]", "{\"name\": \"all\", \"min_mm\": [-10, -10, -50], \"max_mm\": [710, 510, 160]}",
	  "machine.json: zones.keep_out[0].max_mm: the box covers the whole work_area" },
	{ "zones.keep_out[0]", "{\"name\": \"home\", \"min_mm\": [0, 0, 50], \"max_mm\": [20, 20, 150]}",
	  "machine.json: zones.keep_out[0].max_mm: the box holds arm.home_mm (10, 10, 100)" },
	{ "name", "\"sim\\u202ehcneb\"", "machine.json: name: contains a bidirectional control character (U+202E)" },
	{ "name", "\"sim\\u0085bench\"", "machine.json: name: contains a control character (U+0085)" },
	{ "name", RAW "\"sim-\xc3\x28\"", "machine.json: name: is not valid UTF-8 (byte 4)" },
	{ "name", RAW "\"sim-\xed\xa0\x80\"", "machine.json: name: is not valid UTF-8 (byte 4)" /* a surrogate */ },
	{ "brushes[0].name", RAW "\"round-6\\u0000evil\"", "machine.json: not valid JSON for brushloop at line" },
	{ "camera.controls", "{\"exposure\\u202e\": 1}", "machine.json: camera.controls: a key contains a bidirectional control character" },
	{ "safety.operator_timeout_s", "0", "machine.json: safety.operator_timeout_s: 0 is out of range" },
	{ "safety.confirm_first_motion", "\"no\"", "machine.json: safety.confirm_first_motion: must be true or false, not a string" },
	{ "tolerances.mix_de00", RAW "NaN", "machine.json: not valid JSON at line" },
	{ "tolerances.mix_de00", "0", "machine.json: tolerances.mix_de00: 0 is out of range" },
	{ "unattended.accept_within_de00", "1.5", "machine.json: unattended.accept_within_de00: 1.5 is below tolerances.mix_de00 2" },
	{ "unattended.accept_within_de00", "-1", "machine.json: unattended.accept_within_de00: -1 is out of range" },
	{ "unattended.accept_within_de00", "\"5\"", "machine.json: unattended.accept_within_de00: must be a number, not a string" },
	{ "unattended.accept_within", "5", "machine.json: unattended.accept_within: unknown key" },
	{ "mixing.cell_min_ml", "5", "machine.json: mixing.cell_min_ml: 5 exceeds mixing.cell_max_ml 3" },
	{ "mixing.cell_max_ml", "8", "machine.json: mixing.cell_max_ml: 8 exceeds the capacity 6 ml of mixing cell 'm1'" },
	{ "mixing.dispense_unit_ml", "4", "machine.json: mixing.dispense_unit_ml: 4 exceeds mixing.cell_max_ml 3" },
	{ "mixing.max_paints", "0", "machine.json: mixing.max_paints: 0 is out of range [1, 8]" },
	{ "camera.device", "\"/dev/video0\"", "machine.json: camera.device: the sim camera has no device" },
	{ "camera.backend", "\"v4l2\"", "machine.json: camera.device: missing: the v4l2 camera needs one" },
	{ "camera.width", "100000", "machine.json: camera.width: 100000 is out of range" },
	{ "camera.max_pixels", "2000", "machine.json: camera.width: 1280x720 exceeds camera.max_pixels 2000" },
	{ "camera.controls", "{\"exposure\": 1}", "machine.json: camera.controls: the sim camera has fixed controls" },
	{ "calibration.camera_profile", "\"\"", "machine.json: calibration.camera_profile: must not be empty" },
	{ "calibration.follow_lamp", "\"yes\"", "machine.json: calibration.follow_lamp: must be true or false" },
	{ "calibration.max_age_h", "-1", "machine.json: calibration.max_age_h: -1 is out of range" },
	{ "camera.repeat_observations", "1", "machine.json: camera.repeat_observations: one observation has no spread" },
	{ "camera.repeat_max_fraction", "2", "machine.json: camera.repeat_max_fraction: 2 is out of range" },
	{ "sim.faults", "{\"flicker\": 0.9}", "machine.json: sim.faults.flicker: 0.9 is out of range" },
	{ "sim.faults", "{\"sensor_noise\": 0.5}", "machine.json: sim.faults.sensor_noise: 0.5 is out of range" },
	{ "costs.arm_per_hour", "-1", "machine.json: costs.arm_per_hour: -1 is out of range" },
	{ "costs.currency", "\"EURO-LONG\"", "machine.json: costs.currency: is 9 characters, longer than 7" },
	{ "brakes.attempts_per_subtask", "0", "machine.json: brakes.attempts_per_subtask: 0 is out of range" },
	{ "brakes.stuck_repeats", "1", "machine.json: brakes.stuck_repeats: 1 is out of range [2, 100]" },
	{ "brakes.wall_time_s", "true", "machine.json: brakes.wall_time_s: must be a number, not a boolean" },
	{ "planner", "{\"files\": [\"planner/model.json\"]}",
	  "machine.json: planner.files[0]: 'planner/model.json' is not an absolute path without '..'" },
	{ "planner", "{\"files\": [\"/opt/lab/../etc/shadow\"]}",
	  "machine.json: planner.files[0]: '/opt/lab/../etc/shadow' is not an absolute path without '..'" },
	{ "planner", "{\"files\": [7]}", "machine.json: planner.files[0]: must be a file's absolute path" },
	{ "review.on_disagreement", "\"stop\"", "machine.json: review.on_disagreement: " },
	{ "review.frame_min_change", "-1", "machine.json: review.frame_min_change: -1 is out of range" },
	{ "review.marker_shift_px", "0", "machine.json: review.marker_shift_px: 0 is out of range" },
	{ "review.lamp_change", "0", "machine.json: review.lamp_change: 0 is out of range" },
	{ "review.lamp_drift_per_h", "0", "machine.json: review.lamp_drift_per_h: 0 is out of range" },
	{ "review.reference_de00", "1000", "machine.json: review.reference_de00: 1000 is out of range" },
	{ "review.min_landed", "1.5", "machine.json: review.min_landed: 1.5 is out of range" },
	{ "review.unpainted_change_de00", "\"6\"", "machine.json: review.unpainted_change_de00: must be a number, not a string" },
	{ "review.mix_model_de00", "0", "machine.json: review.mix_model_de00: 0 is out of range" },
	{ "review.enabled", "1", "machine.json: review.enabled: must be true or false" },
	{ "review.lamp", "0.2", "machine.json: review.lamp: unknown key" },
	{ "reviewer", "{\"command\": \"r\", \"answer_deadline_s\": 0}", "machine.json: reviewer.answer_deadline_s: 0 is out of range" },
	{ "reviewer", "{\"comand\": \"r\"}", "machine.json: reviewer.comand: unknown key" },
	{ "reviewer", "{\"command\": \"r\", \"max_answer_kb\": 0}", "machine.json: reviewer.max_answer_kb: 0 is out of range" },
	{ "reviewer", "{\"command\": \"r\", \"price_per_call\": -1}", "machine.json: reviewer.price_per_call: -1 is out of range" },
	{ "sim.faults.lamp_level", "2", "machine.json: sim.faults.lamp_level: 2 is out of range" },
	{ "sim.faults.camera_turn_deg", "90", "machine.json: sim.faults.camera_turn_deg: 90 is out of range" },
};

TEST(machine_mutations_are_rejected)
{
	char *base = read_text(src_path("examples/machine-sim.json"));

	for (size_t i = 0; i < sizeof(machine_cases) / sizeof(machine_cases[0]); i++) {
		const char *files[] = { "machine.json", NULL };
		char *text = mutate(base, &machine_cases[i]);
		char what[128];

		test_write_file("machine.json", text);
		snprintf(what, sizeof(what), "%s=%s", machine_cases[i].path,
			 machine_cases[i].value ? machine_cases[i].value : "(deleted)");
		expect_rejected(files, machine_cases[i].msg, what);
		free(text);
	}
	free(base);
}

/* Without a painting section each working value is the share of its limit planned to before the keys existed. */
TEST(painting_defaults_are_shares_of_the_limits)
{
	const struct mutation no_section = { "painting", DELETE, NULL };
	const struct mutation low_move = { "limits.soft.move_mm", "400", NULL };
	/* The example's calibration files lie beside it, not beside the copy. */
	const struct mutation no_calibration = { "calibration", DELETE, NULL };
	const char *args[] = { "config", "check", "machine.json", NULL };
	char *base = read_text(src_path("examples/machine-sim.json")), *c = mutate(base, &no_calibration);
	char *a = mutate(c, &no_section), *b = mutate(a, &low_move);
	struct machine m;
	bl_err err = { 0 };

	test_write_file("machine.json", a);
	CHECK(test_brushloop(args, NULL, NULL) == 0);
	CHECK_MSG(machine_load("machine.json", &m, &err) == 0, "%s", err.msg);
	CHECK_NEAR(m.painting.move_mm, 810, 1e-9);
	CHECK_NEAR(m.painting.curve_accel_mm_s2, 1350, 1e-9);
	CHECK_NEAR(m.painting.stroke_speed_mm_s, 100, 0);
	CHECK_NEAR(m.painting.travel_speed_mm_s, 200, 0);
	CHECK_NEAR(m.painting.press_max_mm, 1.5, 1e-9);
	CHECK_NEAR(m.painting.dry_s, 0, 0);
	CHECK_NEAR(m.painting.arm_hours, 7, 0);
	CHECK(!m.painting.envelope_written);
	test_write_file("machine.json", b);
	CHECK_MSG(machine_load("machine.json", &m, &err) == 0, "%s", err.msg);
	CHECK_NEAR(m.painting.move_mm, 360, 1e-9);
	CHECK(machine_load(src_path("examples/machine-sim.json"), &m, &err) == 0 && m.painting.envelope_written);
	free(b);
	free(a);
	free(c);
	free(base);
}

TEST(example_machine_passes)
{
	const char *args[] = { "config", "check", src_path("examples/machine-sim.json"), NULL };
	struct machine m;
	bl_err err = { 0 };
	char *out = NULL;

	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "machine 'sim-bench'");
	free(out);
	CHECK(machine_load(src_path("examples/machine-sim.json"), &m, &err) == 0);
	CHECK(m.n_wells == 14 && m.n_cells == 12 && m.n_brushes == 3);
	CHECK(machine_find_well(&m, "w13") != NULL);
	CHECK(machine_find_cell(&m, "w13") == NULL);
	CHECK_NEAR(m.limits.soft.speed_mm_s, 250, 0);
	/* The gesso as the example's camera reads it: what plan and estimate start from. */
	CHECK(m.canvas.has_lab && m.canvas.lab[0] > 80.0 && m.canvas.lab[0] < 95.0);
}

/* Files that are not JSON at all, or not the JSON we expect. */
TEST(broken_files_are_rejected)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "", "machine.json: not valid JSON: unexpected end of file" },
		{ "{", "machine.json: not valid JSON" },
		{ "hello", "machine.json: not valid JSON at line 1, column 1" },
		{ "{\"kind\": \"machine\"} trailing", "machine.json: trailing junk after the JSON value at line 1, column 21" },
		{ "{\"kind\": \"machine\"}\n{}", "machine.json: trailing junk after the JSON value at line 2, column 1" },
		{ "[1, 2]", "machine.json: kind: missing" },
		{ "{\"kind\": \"robot\"}", "machine.json: kind: not a config file kind (machine, palette, canvas, light-map, arm-calibration, arm-points, actions)" },
		{ "{\"kind\": \"machine\", \"kind\": \"machine\"}", "machine.json: kind: key appears more than once" },
		{ "{\"kind\": \"machine\", \"version\": 1}", "machine.json: name: missing required key" },
		{ "\xff\xfe\x00garbage", "machine.json: not valid JSON" },
	};
	const char *files[] = { "machine.json", NULL };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_write_file("machine.json", cases[i].text);
		expect_rejected(files, cases[i].msg, cases[i].text);
	}
}

TEST(nul_byte_huge_missing_and_directory_are_rejected)
{
	const char *files[] = { "machine.json", NULL };
	const char *missing[] = { "absent.json", NULL };
	const char *dir[] = { ".", NULL };
	int fd;

	/* A NUL inside a file would cut the text short unseen. */
	fd = open("machine.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "{\"kind\":\0\"machine\"}", 19) == 19);
	close(fd);
	expect_rejected(files, "machine.json: not valid JSON: contains a NUL byte", "NUL");
	/* A sparse 100 MB file is refused before it is read. */
	fd = open("machine.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, 100 << 20) == 0);
	close(fd);
	expect_rejected(files, "machine.json: file is 104857600 bytes, more than the limit", "huge");
	expect_rejected(missing, "absent.json: cannot open: No such file or directory", "missing");
	expect_rejected(dir, ".: is a directory", "directory");
}

TEST(too_many_keys_are_rejected)
{
	char text[4096];
	size_t n = 0;
	const char *files[] = { "machine.json", NULL };

	n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"kind\": \"machine\"");
	for (int i = 0; i < 70; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, ", \"k%d\": 1", i);
	snprintf(text + n, sizeof(text) - n, "}");
	test_write_file("machine.json", text);
	expect_rejected(files, "machine.json: (top level): more than 64 keys", "keys");
}

/* A small palette with both kinds of optical data, valid against the example machine. */
static const char *palette_base =
	"{\"kind\": \"palette\", \"version\": 1, \"name\": \"t\", \"white\": \"white\",\n"
	" \"wavelengths_nm\": [450, 550, 650],\n"
	" \"paints\": [\n"
	"  {\"name\": \"white\", \"pigment\": \"PW6\", \"well\": \"w1\", \"spectral\": {\"k\": [0.01, 0.01, 0.01], \"s\": [1, 1, 1]}},\n"
	"  {\"name\": \"blue\", \"well\": \"w2\", \"spectral\": {\"k\": [0.2, 3, 5], \"s\": [0.5, 0.4, 0.4]}},\n"
	"  {\"name\": \"red\", \"well\": \"w3\", \"measured\": {\"masstone_lab\": [40, 55, 30],\n"
	"     \"tints\": [{\"paint_fraction\": 0.3, \"lab\": [70, 30, 12]}]}}\n"
	" ]}\n";

static const struct mutation palette_cases[] = {
	{ "kind", "\"machine\"", "palette.json: work_area: missing required key" /* read as a machine */ },
	{ "version", "0", "palette.json: version: schema version 0 is not supported" },
	{ "paints", "[]", "palette.json: paints: needs at least one paint" },
	{ "paints[0].spectral.k", "[0.01, 0.01]", "palette.json: paints[0].spectral.k: has 2 values, wavelengths_nm has 3" },
	{ "paints[1].spectral", "{\"k\": [0, 3, 5], \"s\": [0, 0.4, 0.4]}", "palette.json: paints[1].spectral.k: k and s are both 0 at 450 nm" },
	{ "paints[1].spectral.s", "[0.5, -0.4, 0.4]", "palette.json: paints[1].spectral.s[1]: -0.4 is out of range" },
	{ "paints[1].spectral.k", "[0.2, \"3\", 5]", "palette.json: paints[1].spectral.k[1]: must be a finite number" },
	{ "paints[1].measured", "{\"masstone_lab\": [40, 0, 0]}", "palette.json: paints[1]: give \"spectral\" or \"measured\" optical data, not both" },
	{ "paints[1].spectral", DELETE, "palette.json: paints[1]: needs optical data" },
	{ "paints[1].name", "\"white\"", "palette.json: paints[1].name: 'white' is used twice" },
	{ "paints[1].gloss", "1", "palette.json: paints[1].gloss: unknown key" },
	{ "paints[1].well", DELETE, "palette.json: paints[1].well: missing required key" },
	{ "paints[2].measured.masstone_lab", "[120, 0, 0]", "palette.json: paints[2].measured.masstone_lab: L=120 is outside 0..100" },
	{ "paints[2].measured.tints[0].paint_fraction", "1", "palette.json: paints[2].measured.tints[0].paint_fraction: 1 must lie strictly between 0 and 1" },
	{ "paints[2].measured.tints[0].white", "\"x\"", "palette.json: paints[2].measured.tints[0].white: unknown key" },
	{ "white", DELETE, "palette.json: white: missing: tints are mixed with a white" },
	{ "white", "\"titanium\"", "palette.json: white: 'titanium' is not one of the paints" },
	{ "wavelengths_nm", "[450, 450, 650]", "palette.json: wavelengths_nm: must increase strictly" },
	{ "wavelengths_nm", "[450, 550]", "palette.json: wavelengths_nm: needs at least 3 bands" },
	{ "wavelengths_nm", DELETE, "palette.json: paints[0].spectral: spectral data needs wavelengths_nm" },
	{ "wavelengths_nm", "[100, 550, 650]", "palette.json: wavelengths_nm[0]: 100 is out of range" },
};

TEST(palette_mutations_are_rejected)
{
	for (size_t i = 0; i < sizeof(palette_cases) / sizeof(palette_cases[0]); i++) {
		const char *files[] = { "palette.json", NULL };
		char *text = mutate(palette_base, &palette_cases[i]);

		test_write_file("palette.json", text);
		expect_rejected(files, palette_cases[i].msg, palette_cases[i].path);
		free(text);
	}
}

TEST(palette_must_fit_the_machine)
{
	const char *machine = src_path("examples/machine-sim.json");
	struct mutation bad_well = { "paints[1].well", "\"w99\"", NULL };
	struct mutation shared = { "paints[1].well", "\"w1\"", NULL };
	const char *files[] = { machine, "palette.json", NULL };
	const char *args[] = { "config", "check", machine, "palette.json", NULL };
	char *text, *out = NULL;

	test_write_file("palette.json", palette_base);
	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "palette 't'");
	free(out);
	text = mutate(palette_base, &bad_well);
	test_write_file("palette.json", text);
	free(text);
	expect_rejected(files, "palette.json: paints[1].well: 'w99' is not a well of machine", "w99");
	text = mutate(palette_base, &shared);
	test_write_file("palette.json", text);
	free(text);
	expect_rejected(files, "palette.json: paints[1].well: well 'w1' already holds 'white'", "shared");
}

TEST(two_machines_are_a_usage_error)
{
	const char *machine = src_path("examples/machine-sim.json");
	const char *files[] = { machine, machine, NULL };

	expect_rejected(files, "give at most one machine file", "two machines");
}

/* The example machine with its calibration by full paths and key set to value (a string), as machine.json. */
static void machine_calibrated(const char *key, const char *value)
{
	char *base = read_text(src_path("examples/machine-sim.json")), *text;
	cJSON *m = cJSON_Parse(base), *cal = cJSON_GetObjectItem(m, "calibration");

	cJSON_ReplaceItemInObject(cal, "camera_profile",
				  cJSON_CreateString(src_path("examples/calibration/sim-camera.icc")));
	cJSON_ReplaceItemInObject(cal, "light_map",
				  cJSON_CreateString(src_path("examples/calibration/sim-light.json")));
	if (key) {
		cJSON_DeleteItemFromObject(cal, key);
		cJSON_AddStringToObject(cal, key, value);
	}
	text = cJSON_Print(m);
	test_write_file("machine.json", text);
	cJSON_free(text);
	cJSON_Delete(m);
	free(base);
}

/*
 * `config check` of a machine reads every calibration file it names through
 * that file's own loader, the one a run uses: a file the run would refuse is
 * refused here, and nothing waits on a FIFO.
 */
TEST(calibration_files_are_checked_by_their_loaders)
{
	static const struct {
		const char *key, *value, *msg;
	} cases[] = {
		{ "light_map", "/etc/passwd", "machine.json: calibration.light_map: /etc/passwd: not valid JSON" },
		{ "camera_profile", "/etc/passwd", "machine.json: calibration.camera_profile: /etc/passwd" },
		{ "canvas", "/etc/passwd", "machine.json: calibration.canvas: /etc/passwd: not valid JSON" },
		{ "arm", "/etc/passwd", "machine.json: calibration.arm: /etc/passwd: not valid JSON" },
		{ "light_map", "absent.json", "absent.json: cannot open: No such file or directory" },
		{ "canvas", "absent.json", "absent.json: cannot open: No such file or directory" },
		{ "light_map", "zero-light.json", "zero-light.json: gain: every value is 0" },
		{ "canvas", "palette-as-canvas.json", "palette-as-canvas.json: kind: is 'palette', expected 'canvas'" },
		{ "arm", "fifo", "fifo: is not a regular file (a FIFO)" },
		{ "light_map", "/dev/zero", "/dev/zero: is not a regular file (a character device)" },
	};
	const char *files[] = { "machine.json", NULL };

	test_write_file("zero-light.json", "{\"kind\": \"light-map\", \"version\": 1, \"width\": 1280, "
			"\"height\": 720, \"cols\": 2, \"rows\": 1, \"gain\": [0, 0]}");
	test_write_file("palette-as-canvas.json", palette_base);
	unlink("fifo");
	CHECK(mkfifo("fifo", 0600) == 0);
	machine_calibrated(NULL, NULL);
	{
		const char *args[] = { "config", "check", "machine.json", NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		machine_calibrated(cases[i].key, cases[i].value);
		expect_rejected(files, cases[i].msg, cases[i].value);
	}
}

/* Every file kind has one validator, the one its loaders use, and config check knows them all. */
TEST(every_file_kind_is_checked)
{
	static const struct {
		const char *file, *summary;
	} good[] = {
		{ "examples/canvas.json", "canvas (" },
		{ "examples/calibration/sim-light.json", "light map (" },
		{ "examples/arm-points.json", "arm points (" },
		{ "examples/actions/every-kind.json", "actions (" },
		{ "examples/palette.json", "palette '" },
	};
	const char *fifo[] = { "fifo.json", NULL }, *actions[] = { "actions.json", NULL };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const char *args[] = { "config", "check", src_path(good[i].file), NULL };
		char *out = NULL;

		CHECK_MSG(test_brushloop(args, &out, NULL) == 0, "%s", good[i].file);
		CHECK_STR_CONTAINS(out, good[i].summary);
		free(out);
	}
	unlink("fifo.json");
	CHECK(mkfifo("fifo.json", 0600) == 0);
	expect_rejected(fifo, "fifo.json: is not a regular file (a FIFO)", "a FIFO as the file");
	test_write_file("actions.json", "{\"kind\": \"actions\", \"version\": 1, \"actions\": "
			"[{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\\u0000evil\", "
			"\"points_mm\": [[300, 200, 0], [350, 200, 0]]}]}");
	expect_rejected(actions, "actions.json: not valid JSON for brushloop at line 1", "escaped NUL");
	test_write_file("actions.json", "{\"kind\": \"actions\", \"version\": 1, \"actions\": "
			"[{\"type\": \"move\", \"speed_mm_s\": 1e-300, \"zones\": [\"travel\"], "
			"\"to_mm\": [300, 200, 50]}]}");
	expect_rejected(actions, "actions.json: actions[0].speed_mm_s: must be at least 0.1 mm/s", "1e-300 mm/s");
}

static void setup(void) __attribute__((constructor));
static void setup(void)
{
	/* Relative names in messages ("machine.json: ...") are what a user typed. */
	if (chdir(test_tmpdir()) != 0)
		exit(1);
}

TEST_MAIN(T(example_machine_passes), T(machine_mutations_are_rejected), T(painting_defaults_are_shares_of_the_limits),
	  T(broken_files_are_rejected), T(nul_byte_huge_missing_and_directory_are_rejected),
	  T(too_many_keys_are_rejected), T(palette_mutations_are_rejected),
	  T(palette_must_fit_the_machine), T(two_machines_are_a_usage_error),
	  T(calibration_files_are_checked_by_their_loaders), T(every_file_kind_is_checked))
