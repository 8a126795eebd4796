/* signals.c: SIGINT, SIGTERM and SIGHUP only counted in the handler; the loops poll the count and the gate holds or stops the arm. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "safety/gate.h"

static volatile sig_atomic_t sig_count;
/* A self-pipe, so a wait in poll() wakes at once instead of at its next timeout. */
static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;

	if (sig_count < 1000)
		sig_count++;
	if (sig_pipe[1] >= 0) {
		ssize_t n = write(sig_pipe[1], "s", 1);

		(void)n; /* a full pipe already says "a signal came" */
	}
	/* After the second, the default again: a third Ctrl-C ends a process that hangs. */
	if (sig_count >= 2) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigemptyset(&sa.sa_mask);
		sigaction(sig, &sa, NULL);
	}
	errno = saved;
}

int gate_signals_install(bl_err *err)
{
	struct sigaction sa;

	if (sig_pipe[0] < 0) {
		if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return bl_fail(err, BL_EIO, "cannot create the signal pipe: %s",
				       strerror(errno));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking read or sleep returns EINTR, so its loop polls the count. */
	sa.sa_flags = 0;
	/* A closed terminal or ssh session (SIGHUP) is a request to stop like any other: a clean pause. */
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 ||
	    sigaction(SIGHUP, &sa, NULL) < 0)
		return bl_fail(err, BL_EIO, "cannot install signal handlers: %s", strerror(errno));
	return 0;
}

int gate_signals_count(void)
{
	return (int)sig_count;
}

void gate_signals_reset(void)
{
	char buf[64];

	sig_count = 0;
	if (sig_pipe[0] >= 0)
		while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
			;
}

int gate_signals_fd(void)
{
	return sig_pipe[0];
}
