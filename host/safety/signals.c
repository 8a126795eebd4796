/* signals.c: every signal that would end the process only counted in the handler; the loops poll the count and the gate holds or stops the arm. */
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

/*
 * Every signal whose default ends the process and that a person or a
 * program sends to stop it (kill, a closed terminal, a timer, a batch
 * system's notice): each is a request to stop, a clean pause. The faults a
 * program makes itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS,
 * SIGTRAP) are not requests and keep their default. SIGPIPE and SIGXFSZ are
 * ignored instead: a write to a closed pipe or past the file-size limit
 * fails with EPIPE or EFBIG, and the path that wrote it decides.
 */
static const int stop_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
	SIGXCPU, SIGIO, SIGPWR, SIGSTKFLT,
};

int gate_signals_install(bl_err *err)
{
	struct sigaction sa, ign;

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
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		if (sigaction(stop_signals[i], &sa, NULL) < 0)
			return bl_fail(err, BL_EIO, "cannot install the handler of signal %d: %s",
				       stop_signals[i], strerror(errno));
	/* The real-time signals end a process by default too (glibc keeps the first ones for itself). */
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (sigaction(s, &sa, NULL) < 0)
			return bl_fail(err, BL_EIO, "cannot install the handler of signal %d: %s", s,
				       strerror(errno));
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGPIPE, &ign, NULL) < 0 || sigaction(SIGXFSZ, &ign, NULL) < 0)
		return bl_fail(err, BL_EIO, "cannot ignore SIGPIPE: %s", strerror(errno));
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
