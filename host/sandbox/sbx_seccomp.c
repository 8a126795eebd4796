/* sbx_seccomp.c: the planner's seccomp filter (libseccomp), compiled to BPF for bwrap --seccomp. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"

/*
 * Denied with EPERM whatever their arguments: ways out of the namespaces
 * (mount and its new API, unshare, setns, pivot_root, chroot), into other
 * processes (ptrace, process_vm_*, pidfd_getfd), into the kernel's larger
 * attack surfaces (io_uring, which also makes sockets without socket(), bpf,
 * perf_event_open, userfaultfd, keyrings, module and kexec loading) and the
 * machine-wide settings capabilities already guard (a second wall).
 */
static const char *const deny_always[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"open_by_handle_at", "name_to_handle_at", "fanotify_init",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "lookup_dcookie",
	"iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "uselib", "vhangup",
};

/* Namespaces a clone() may not ask for (bwrap's --disable-userns covers CLONE_NEWUSER too). */
#define SBX_CLONE_NS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
		      CLONE_NEWNET | CLONE_NEWCGROUP)

static int deny(scmp_filter_ctx ctx, const char *name, int errnum, unsigned n,
		const struct scmp_arg_cmp *cmp, bl_err *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	int rc;

	if (nr == __NR_SCMP_ERROR)
		return bl_fail(err, BL_EINVAL, "seccomp: libseccomp does not know system call %s", name);
	rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(errnum), nr, n, cmp);
	if (rc < 0)
		return bl_fail(err, BL_EINVAL, "seccomp: rule for %s: %s", name, strerror(-rc));
	return 0;
}

/*
 * A comparison of syscall argument arg, as libseccomp's SCMP_A0..SCMP_A5 make
 * one, with every field named (clang's -Wmissing-field-initializers refuses
 * the macros' compound literal when it gives only datum_a).
 */
static struct scmp_arg_cmp arg_cmp(unsigned int arg, enum scmp_compare op, scmp_datum_t a,
				   scmp_datum_t b)
{
	return (struct scmp_arg_cmp){ .arg = arg, .op = op, .datum_a = a, .datum_b = b };
}

static int add_rules(scmp_filter_ctx ctx, bl_err *err)
{
	/* Only AF_UNIX: the broker's socket is a Unix one, and the network namespace is a second wall. */
	const struct scmp_arg_cmp not_unix = arg_cmp(0, SCMP_CMP_NE, AF_UNIX, 0);
	/* The ioctl request is an int: compare its low 32 bits only, or a high bit set gets past. */
	const struct scmp_arg_cmp tiocsti = arg_cmp(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
	const struct scmp_arg_cmp tioclinux = arg_cmp(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);

	for (size_t i = 0; i < sizeof(deny_always) / sizeof(deny_always[0]); i++)
		BL_TRY(deny(ctx, deny_always[i], EPERM, 0, NULL, err));
	BL_TRY(deny(ctx, "socket", EPERM, 1, &not_unix, err));
	BL_TRY(deny(ctx, "socketpair", EPERM, 1, &not_unix, err));
	BL_TRY(deny(ctx, "ioctl", EPERM, 1, &tiocsti, err));
	BL_TRY(deny(ctx, "ioctl", EPERM, 1, &tioclinux, err));
	/* clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone. */
	BL_TRY(deny(ctx, "clone3", ENOSYS, 0, NULL, err));
	/* clone asking for any namespace: one rule per flag, as a rule tests one masked value. */
	for (unsigned long bit = 1; bit; bit <<= 1) {
		if (!(bit & SBX_CLONE_NS))
			continue;
		const struct scmp_arg_cmp ns = arg_cmp(0, SCMP_CMP_MASKED_EQ, bit, bit);
		BL_TRY(deny(ctx, "clone", EPERM, 1, &ns, err));
	}
	return 0;
}

int sbx_seccomp_fd(int *fd_out, bl_err *err)
{
	scmp_filter_ctx ctx;
	int fd = -1, rc;

	*fd_out = -1;
	/* Allow by default, deny a list: a planner may be Python or anything else. Other
	 * architectures' calls (int 0x80, x32) are killed by libseccomp's bad-arch default. */
	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return bl_fail(err, BL_EINVAL, "seccomp: seccomp_init failed (libseccomp)");
	rc = add_rules(ctx, err);
	if (rc < 0)
		goto out_ctx;
	fd = memfd_create("brushloop-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = bl_fail(err, BL_EIO, "seccomp: memfd_create: %s", strerror(errno));
		goto out_ctx;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		rc = bl_fail(err, BL_EINVAL, "seccomp: seccomp_export_bpf: %s", strerror(-rc));
		goto out_fd;
	}
	if (lseek(fd, 0, SEEK_SET) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
		rc = bl_fail(err, BL_EIO, "seccomp: sealing the filter: %s", strerror(errno));
		goto out_fd;
	}
	seccomp_release(ctx);
	*fd_out = fd;
	return 0;
out_fd:
	close(fd);
out_ctx:
	seccomp_release(ctx);
	return rc;
}
