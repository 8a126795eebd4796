/* test_backends.c: what the modbus and gcode backends say before any controller answers: bad ports and hosts, the example machine and its watchdog key. */
#include "arm/arm_gcode.h"
#include "arm/arm_modbus.h"
#include "base/fs.h"
#include "rig/rig.h"
#include "test.h"

static char *example(void)
{
	char path[4096], *text = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/examples/machine-modbus.json", getenv("BRUSHLOOP_SRC"));
	if (fs_read_file(path, 1 << 20, &text, &len, NULL)) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	return text;
}

static struct machine *load(const char *text, bl_err *err)
{
	static struct machine m;
	const char *path = test_write_file("machine.json", text);

	return machine_load(path, &m, err) ? NULL : &m;
}

static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out = malloc(strlen(text) + strlen(to) + 1);

	if (!at || !out) {
		fprintf(stderr, "'%s' not in the example\n", from);
		exit(1);
	}
	memcpy(out, text, (size_t)(at - text));
	strcpy(out + (at - text), to);
	strcat(out, at + strlen(from));
	return out;
}

TEST(example_modbus_machine_is_valid)
{
	char path[4096], *out = NULL;
	const char *args[] = { "config", "check", path, NULL };

	snprintf(path, sizeof(path), "%s/examples/machine-modbus.json", getenv("BRUSHLOOP_SRC"));
	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "modbus backend");
	free(out);
}

TEST(watchdog_key_is_checked)
{
	char *text = example(), *bad, *gcode, *err_text = NULL;
	const char *args[] = { "config", "check", NULL, NULL };
	struct machine *m;
	bl_err err;

	m = load(text, &err);
	CHECK(m && m->connection.watchdog_ms == 1000);
	bad = replace(text, "\"watchdog_ms\": 1000", "\"watchdog_ms\": 5");
	args[2] = test_write_file("bad.json", bad);
	CHECK(test_brushloop(args, NULL, &err_text) == 2);
	CHECK_STR_CONTAINS(err_text, "watchdog_ms");
	free(err_text);
	/* A G-code controller has no watchdog register: the key is an error there. */
	gcode = replace(text, "\"backend\": \"modbus\"", "\"backend\": \"gcode\"");
	free(bad);
	bad = gcode;
	gcode = replace(bad, "\"address\": 1, ", "\"grbl_offset_mm\": [710, 510, 155], ");
	args[2] = test_write_file("gcode.json", gcode);
	CHECK(test_brushloop(args, NULL, &err_text) == 2);
	CHECK_STR_CONTAINS(err_text, "watchdog_ms");
	free(err_text);
	free(bad);
	free(gcode);
	free(text);
}

TEST(modbus_open_fails_clearly)
{
	char *text = example();
	struct machine *m = load(text, NULL);
	struct arm *a = NULL;
	bl_err err;

	CHECK(m != NULL);
	snprintf(m->connection.port, sizeof(m->connection.port), "%s/no-such-tty", test_tmpdir());
	CHECK(arm_modbus_open(m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK(a == NULL);
	CHECK_STR_CONTAINS(err.msg, "no-such-tty: cannot connect");
	/* Modbus TCP to a port nobody listens on. */
	m->connection.port[0] = '\0';
	snprintf(m->connection.host, sizeof(m->connection.host), "127.0.0.1:1");
	CHECK(arm_modbus_open(m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "127.0.0.1:1: cannot connect");
	free(text);
}

TEST(gcode_open_fails_clearly)
{
	char *text = example();
	struct machine *m = load(text, NULL);
	struct arm *a = NULL;
	bl_err err;

	CHECK(m != NULL);
	m->arm_backend = MACHINE_ARM_GCODE;
	snprintf(m->connection.port, sizeof(m->connection.port), "%s/no-such-tty", test_tmpdir());
	CHECK(arm_gcode_open(m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK(a == NULL);
	CHECK_STR_CONTAINS(err.msg, "no such serial port");
	/* A file that is no serial port at all. */
	snprintf(m->connection.port, sizeof(m->connection.port), "%s", test_write_file("plain", "x"));
	CHECK(arm_gcode_open(m, clk_monotonic(), &a, &err) == BL_EIO);
	CHECK(a == NULL);
	free(text);
}

/* The rig is the one place that maps machine-file backends to implementations: it reaches both. */
TEST(the_rig_opens_modbus_and_gcode)
{
	char *text = example();
	struct machine *m = load(text, NULL);
	struct rig *r = malloc(sizeof(*r));
	bl_err err;

	CHECK(m != NULL && r != NULL);
	snprintf(m->connection.port, sizeof(m->connection.port), "%s/no-such-tty", test_tmpdir());
	CHECK(rig_open(m, NULL, r, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "modbus");
	CHECK_STR_CONTAINS(err.msg, "no-such-tty: cannot connect");
	CHECK(r->arm == NULL && r->cam == NULL);
	m->arm_backend = MACHINE_ARM_GCODE;
	CHECK(rig_open(m, NULL, r, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "no such serial port");
	/* A camera-only open never touches the arm: the error is the camera's. */
	snprintf(m->camera.device, sizeof(m->camera.device), "%s/no-video", test_tmpdir());
	CHECK(rig_open_camera(m, NULL, r, &err) != 0);
	CHECK_STR_CONTAINS(err.msg, "no-video");
	CHECK(!strstr(err.msg, "serial"));
	free(r);
	free(text);
}

TEST_MAIN(T(example_modbus_machine_is_valid), T(watchdog_key_is_checked),
	  T(modbus_open_fails_clearly), T(gcode_open_fails_clearly), T(the_rig_opens_modbus_and_gcode))
