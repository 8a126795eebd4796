/* hil.c: the hardware-in-the-loop harness: targets on a pty (native board, QEMU through socat, a real port), raw Modbus access and child processes. */
#include "hil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "test.h"

extern char **environ;

const char *hil_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !v[0]) {
		fprintf(stderr, "%s is not set: run through meson test\n", name);
		exit(1);
	}
	return v;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static pid_t spawn_logged(const char *const *argv, const char *log)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(rc));
		exit(1);
	}
	return pid;
}

/* Waits up to ms for path to exist; fails the test (with the log) otherwise. */
static void wait_path(const char *path, int ms, const char *log)
{
	struct stat st;

	for (int waited = 0; waited < ms; waited += 5) {
		if (stat(path, &st) == 0)
			return;
		sleep_ms(5);
	}
	fprintf(stderr, "%s did not appear within %d ms; log %s:\n", path, ms, log);
	{
		char *text = NULL;
		const char *cat[] = { "cat", log, NULL };

		hil_run(cat, 5, &text, NULL);
		fprintf(stderr, "%s\n", text ? text : "");
		free(text);
	}
	exit(1);
}

static int have_program(const char *name)
{
	const char *argv[] = { "sh", "-c", "command -v \"$0\" >/dev/null", name, NULL };

	return hil_run(argv, 5, NULL, NULL) == 0;
}

static void skip_or_fail(const char *why)
{
	if (getenv("BRUSHLOOP_HIL_REQUIRE_QEMU")) {
		fprintf(stderr, "qemu target required but %s\n", why);
		exit(1);
	}
	test_skip(why);
}

static const char *qemu_image(void)
{
	static char path[4096];
	const char *e = getenv("BRUSHLOOP_FW_MPS2_ELF");

	if (e && e[0])
		return e;
	snprintf(path, sizeof(path),
		 "%s/build-fw/firmware/board/mps2-an385/brushloop-fw-mps2-an385.elf",
		 hil_env("BRUSHLOOP_SRC"));
	return path;
}

/* On a real port the firmware keeps running between tests: bring it back to disabled and unfaulted. */
static void reset_real(struct hil_target *t)
{
	modbus_t *mb = hil_modbus(t);

	hil_write(mb, FW_HR_CONTROL, 0);
	hil_write(mb, FW_HR_CONTROL, FW_CW_FAULT_RESET | FW_CW_ESTOP_CLEAR);
	hil_write(mb, FW_HR_CONTROL, 0);
	modbus_close(mb);
	modbus_free(mb);
}

void hil_start(struct hil_target *t, const char *const *extra_args)
{
	const char *kind = getenv("BRUSHLOOP_HIL_TARGET");
	char log[600];

	memset(t, 0, sizeof(*t));
	t->hold_fd = -1;
	snprintf(t->dir, sizeof(t->dir), "%s/hil", test_tmpdir());
	mkdir(t->dir, 0755);
	snprintf(log, sizeof(log), "%s/target.log", t->dir);
	if (!kind || !strcmp(kind, "native")) {
		const char *argv[32] = { hil_env("BRUSHLOOP_FW_NATIVE"), "--pty", t->tty };
		int n = 3;

		t->kind = HIL_NATIVE;
		snprintf(t->tty, sizeof(t->tty), "%s/ttyFW", t->dir);
		while (extra_args && *extra_args && n < 31)
			argv[n++] = *extra_args++;
		t->fw_pid = spawn_logged(argv, log);
		wait_path(t->tty, 5000, log);
	} else if (!strcmp(kind, "qemu")) {
		const char *elf = qemu_image();
		char sock[600], chardev[700], kernel[4200], link[600], connect[700];
		struct stat st;

		t->kind = HIL_QEMU;
		if (stat(elf, &st) != 0) {
			char why[4400];

			snprintf(why, sizeof(why),
				 "no mps2-an385 image at %s (cross-build it: meson setup build-fw --cross-file firmware/cross/arm-none-eabi.txt && ninja -C build-fw, or set BRUSHLOOP_FW_MPS2_ELF)",
				 elf);
			skip_or_fail(why);
		}
		if (!have_program("qemu-system-arm") || !have_program("socat"))
			skip_or_fail("qemu-system-arm or socat is not installed (scripts/install-deps)");
		snprintf(sock, sizeof(sock), "%s/uart.sock", t->dir);
		snprintf(chardev, sizeof(chardev), "socket,id=c0,path=%s,server=on,wait=on", sock);
		snprintf(kernel, sizeof(kernel), "%s", elf);
		{
			/* icount with sleep=off runs firmware time ahead of the wall clock while it idles. */
			const char *argv[] = { "qemu-system-arm", "-M", "mps2-an385", "-nographic",
				"-monitor", "none", "-icount", "shift=auto,sleep=off", "-kernel", kernel,
				"-chardev", chardev, "-serial", "chardev:c0", NULL };

			t->fw_pid = spawn_logged(argv, log);
		}
		wait_path(sock, 10000, log);
		snprintf(t->tty, sizeof(t->tty), "%s/ttyFW", t->dir);
		snprintf(link, sizeof(link), "pty,raw,echo=0,link=%s", t->tty);
		snprintf(connect, sizeof(connect), "unix-connect:%s", sock);
		/* QEMU creates the socket file before it listens: a bridge too early is refused, so retry. */
		for (int attempt = 0;; attempt++) {
			const char *argv[] = { "socat", link, connect, NULL };
			struct stat lst;
			int status, waited;

			t->bridge_pid = spawn_logged(argv, log);
			for (waited = 0; waited < 2000; waited += 5) {
				if (stat(t->tty, &lst) == 0 ||
				    waitpid(t->bridge_pid, &status, WNOHANG) == t->bridge_pid)
					break;
				sleep_ms(5);
			}
			if (stat(t->tty, &lst) == 0)
				break;
			kill(t->bridge_pid, SIGKILL);
			waitpid(t->bridge_pid, &status, 0);
			t->bridge_pid = 0;
			if (attempt == 20)
				wait_path(t->tty, 0, log); /* fails with the log */
			sleep_ms(20);
		}
		/* socat ends when the last master closes the pty: hold it open ourselves. */
		t->hold_fd = open(t->tty, O_RDWR | O_NOCTTY | O_NONBLOCK);
		/* Boot takes a while on a loaded machine: the tests start once it answers. */
		{
			modbus_t *mb = hil_modbus(t);

			modbus_close(mb);
			modbus_free(mb);
		}
	} else if (!strcmp(kind, "port")) {
		const char *port = getenv("BRUSHLOOP_HIL_PORT");

		t->kind = HIL_PORT;
		if (!port || !port[0]) {
			test_skip("no real port: set BRUSHLOOP_HIL_PORT to the firmware's serial device to run this on hardware");
		}
		snprintf(t->tty, sizeof(t->tty), "%s", port);
		reset_real(t);
	} else {
		fprintf(stderr, "BRUSHLOOP_HIL_TARGET=%s: use native, qemu or port\n", kind);
		exit(1);
	}
}

static int stop_pid(pid_t pid)
{
	int status = -1;

	if (pid <= 0)
		return 0;
	kill(pid, SIGTERM);
	for (int waited = 0; waited < 5000; waited += 5) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		sleep_ms(5);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int hil_stop(struct hil_target *t)
{
	int rc;

	if (t->hold_fd >= 0)
		close(t->hold_fd);
	stop_pid(t->bridge_pid);
	rc = stop_pid(t->fw_pid);
	t->fw_pid = t->bridge_pid = 0;
	return rc;
}

void hil_machine(const struct hil_target *t, struct machine *m)
{
	char path[4096];
	bl_err err;

	snprintf(path, sizeof(path), "%s/examples/machine-modbus.json", hil_env("BRUSHLOOP_SRC"));
	if (machine_load(path, m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	snprintf(m->connection.port, sizeof(m->connection.port), "%s", t->tty);
	/*
	 * QEMU's firmware time runs 30-45 times faster than the wall clock
	 * (icount, sleep=off): a watchdog of 1 s there is 25 ms of host time, which
	 * a loaded test machine can miss. The watchdog test sets its own.
	 */
	if (t->kind == HIL_QEMU) {
		m->connection.watchdog_ms = 60000;
		/*
		 * With sleep=off QEMU spins a core; beside another QEMU and the
		 * sanitizer builds on two cores, a reply can wait for the
		 * scheduler longer than a real line's 200 ms.
		 */
		m->connection.timeout_ms = 1000;
	}
}

modbus_t *hil_modbus(const struct hil_target *t)
{
	modbus_t *mb = modbus_new_rtu(t->tty, 115200, 'N', 8, 1);

	if (!mb || modbus_set_slave(mb, 1) || modbus_connect(mb)) {
		fprintf(stderr, "cannot open %s: %s\n", t->tty, modbus_strerror(errno));
		exit(1);
	}
	modbus_set_response_timeout(mb, 1, 0);
	/*
	 * Wait until the target answers: QEMU may still boot, and a killed master
	 * may have left a reply in the line. Only then is the line clean.
	 */
	for (int i = 0; i < 20; i++) {
		uint16_t v;

		modbus_flush(mb);
		if (modbus_read_input_registers(mb, FW_IR_MAGIC, 1, &v) == 1 && v == FW_MAGIC)
			return mb;
		sleep_ms(50);
	}
	fprintf(stderr, "%s: the firmware does not answer: %s\n", t->tty, modbus_strerror(errno));
	exit(1);
}

uint16_t hil_in(modbus_t *mb, int addr)
{
	uint16_t v;

	for (int attempt = 0; attempt < 3; attempt++)
		if (modbus_read_input_registers(mb, addr, 1, &v) == 1)
			return v;
	fprintf(stderr, "reading input register %d: %s\n", addr, modbus_strerror(errno));
	exit(1);
}

uint32_t hil_in32(modbus_t *mb, int addr)
{
	uint16_t v[2];

	for (int attempt = 0; attempt < 3; attempt++)
		if (modbus_read_input_registers(mb, addr, 2, v) == 2)
			return ((uint32_t)v[0] << 16) | v[1];
	fprintf(stderr, "reading input registers %d-%d: %s\n", addr, addr + 1,
		modbus_strerror(errno));
	exit(1);
}

int hil_write(modbus_t *mb, int addr, uint16_t v)
{
	return HIL_RETRY(mb, modbus_write_register(mb, addr, v)) == 1 ? 0 : errno;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf) {
		buf[fread(buf, 1, (size_t)n, f)] = '\0';
	}
	fclose(f);
	return buf;
}

int hil_run(const char *const *argv, int timeout_s, char **out, char **err)
{
	static int serial;
	char op[600], ep[600];
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	snprintf(op, sizeof(op), "%s/run%d.out", test_tmpdir(), serial);
	snprintf(ep, sizeof(ep), "%s/run%d.err", test_tmpdir(), serial++);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -1;
	for (int waited = 0;; waited += 5) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (waited > timeout_s * 1000) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "%s: timed out after %d s\n", argv[0], timeout_s);
			break;
		}
		sleep_ms(5);
	}
	if (out)
		*out = slurp(op);
	if (err)
		*err = slurp(ep);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *hil_machine_file(const char *name, const char *port, const char *tty)
{
	static char path[4096];
	char src[4096], prof[4096], *text = NULL, *at, *out;
	size_t len;
	bl_err err = { 0 };
	const char *rel = "../examples/calibration/sim-camera.icc";

	snprintf(src, sizeof(src), "%s/hil-tests/%s", hil_env("BRUSHLOOP_SRC"), name);
	snprintf(prof, sizeof(prof), "%s/examples/calibration/sim-camera.icc", hil_env("BRUSHLOOP_SRC"));
	if (fs_read_file(src, 1 << 20, &text, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	out = calloc(1, len + strlen(tty) + strlen(prof) + 1);
	at = strstr(text, port);
	if (!out || !at || !strstr(text, rel)) {
		fprintf(stderr, "%s: no port %s or profile %s to point elsewhere\n", src, port, rel);
		exit(1);
	}
	sprintf(out, "%.*s%s", (int)(at - text), text, tty);
	at += strlen(port);
	{
		char *r = strstr(at, rel);

		sprintf(out + strlen(out), "%.*s%s%s", (int)(r - at), at, prof, r + strlen(rel));
	}
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	if (fs_write_atomic(path, out, strlen(out), &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	free(out);
	free(text);
	return path;
}

int hil_count(const char *journal, const char *needle)
{
	char *text = NULL;
	int n = 0;

	if (fs_read_file(journal, 1 << 28, &text, NULL, NULL))
		return -1;
	for (char *p = text; (p = strstr(p, needle)); p++)
		n++;
	free(text);
	return n;
}
