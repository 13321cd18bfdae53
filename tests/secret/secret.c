/* tests/secret/secret: secret compartments (XPFO_COMPARTMENT_SECRET).
 *
 * A secret compartment's blocks come from memfd_secret: the paths that
 * reach user pages through the kernel (/proc/self/mem, process_vm_readv,
 * vmsplice, ptrace peeks from another process) fail on them, while the
 * same calls on an ordinary block succeed (the control, so each check can
 * fail).  Code inside the compartment reads and writes them.  A transfer
 * out gives ordinary frames (the calls succeed again, bytes kept); a
 * transfer in gives secret ones (they fail; a pipe holding the old frames
 * by vmsplice does not see later writes).  The violation report names the
 * compartment as secret, the statistics count secret bytes, destroy
 * returns them, RLIMIT_MEMLOCK exhaustion is NULL with ENOMEM (no SIGBUS),
 * and a failing memfd_secret (injected through the OS layer's test seam:
 * ENOSYS, as on a kernel without secretmem.enable=1) fails create with
 * ENOSYS and one warning.  On a kernel where memfd_secret really is
 * missing, that is checked and the rest skipped (77). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN (64 * 1024)

/* Each path into user memory: 0 when it read n bytes at p, else errno. */
static int via_proc_mem(const void *p, void *buf, size_t n)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t r = pread(fd, buf, n, (off_t)(uintptr_t)p);
	int e = r == (ssize_t)n ? 0 : r < 0 ? errno : EIO;
	close(fd);
	return e;
}

static int via_vm_readv(const void *p, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)p, n };
	ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
	return got == (ssize_t)n ? 0 : got < 0 ? errno : EIO;
}

static int via_vmsplice(const void *p, void *buf, size_t n)
{
	int pfd[2];
	if (pipe(pfd))
		return errno;
	struct iovec v = { (void *)p, n };
	ssize_t w = vmsplice(pfd[1], &v, 1, 0);
	int e = w == (ssize_t)n ? 0 : w < 0 ? errno : EIO;
	if (!e && read(pfd[0], buf, n) != (ssize_t)n)
		e = EIO;
	close(pfd[0]);
	close(pfd[1]);
	return e;
}

/* A child attaches to this process and peeks the first word of p:
 * 0 when the peek gave `want`, else the errno (or EIO on a mismatch). */
static int via_ptrace(const void *p, long want)
{
	pid_t parent = getpid();
	int pfd[2];
	if (pipe(pfd))
		return errno;
	pid_t c = fork();
	if (c == 0) {
		int e = 0;
		if (ptrace(PTRACE_ATTACH, parent, 0, 0))
			e = errno;
		else {
			waitpid(parent, NULL, __WALL);
			errno = 0;
			long v = ptrace(PTRACE_PEEKDATA, parent, p, 0);
			e = errno ? errno : v == want ? 0 : EIO;
			ptrace(PTRACE_DETACH, parent, 0, 0);
		}
		if (write(pfd[1], &e, sizeof e) != sizeof e)
			_exit(1);
		_exit(0);
	}
	int e = ECHILD;
	if (c > 0 && read(pfd[0], &e, sizeof e) != sizeof e)
		e = ECHILD;
	while (c > 0 && waitpid(c, NULL, 0) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	close(pfd[1]);
	return e;
}

/* Check that every path reads p (open: want 0) or none does. */
static void check_paths(const char *what, const void *p, uint64_t seed, int readable)
{
	static char buf[RUN];
	int (*fn[])(const void *, void *, size_t) = { via_proc_mem, via_vm_readv, via_vmsplice };
	const char *name[] = { "/proc/self/mem", "process_vm_readv", "vmsplice" };
	for (int i = 0; i < 3; i++) {
		memset(buf, 0, sizeof buf);
		int e = fn[i](p, buf, RUN);
		if (readable)
			CHECK(!e && tu_verify(buf, RUN, seed) == (size_t)-1,
			      "%s: %s should read the bytes (errno %s)", what, name[i], strerrorname_np(e));
		else
			CHECK(e != 0, "%s: %s read a secret block", what, name[i]);
	}
	int e = via_ptrace(p, (long)tu_pattern_word(seed, 0));
	if (readable)
		CHECK(e == 0, "%s: a child's ptrace peek should read it (errno %s)", what, strerrorname_np(e));
	else
		CHECK(e != 0, "%s: a child's ptrace peek read a secret block", what);
}

static void test_paths_and_transfer(xpfo_compartment_t *s)
{
	char *ord = malloc(RUN);
	tu_fill(ord, RUN, 0x2);
	check_paths("root block (control)", ord, 0x2, 1);

	xpfo_compartment_t *prev = xpfo_enter(s);
	char *p = malloc(RUN), *small = malloc(100);
	CHECK(p && small, "malloc inside the secret compartment");
	tu_fill(p, RUN, 0x4);
	tu_fill(small, 100, 0x6);
	CHECK(tu_verify(p, RUN, 0x4) == (size_t)-1 && tu_verify(small, 100, 0x6) == (size_t)-1,
	      "read back inside");
	check_paths("secret block, inside", p, 0x4, 0);
	char c;
	CHECK(via_proc_mem(small, &c, 1) != 0, "/proc/self/mem read a secret slab slot");
	xpfo_leave(prev);

	/* out: ordinary frames, bytes kept */
	CHECK(xpfo_transfer(p, xpfo_root()) == 0, "transfer out: %s", strerrorname_np(errno));
	CHECK(tu_verify(p, RUN, 0x4) == (size_t)-1, "transfer out kept the bytes");
	check_paths("transferred out", p, 0x4, 1);

	/* in: secret frames; a pipe holding the old ones sees nothing later */
	tu_fill(ord, RUN, 0x8);
	int pfd[2];
	CHECK(pipe(pfd) == 0, "pipe");
	struct iovec v = { ord, 4096 };
	CHECK(vmsplice(pfd[1], &v, 1, 0) == 4096, "vmsplice of the root block");
	CHECK(xpfo_transfer(ord, s) == 0, "transfer in: %s", strerrorname_np(errno));
	check_paths("transferred in", ord, 0x8, 0);
	prev = xpfo_enter(s);
	CHECK(tu_verify(ord, RUN, 0x8) == (size_t)-1, "transfer in kept the bytes");
	tu_fill(ord, RUN, 0xa);
	xpfo_leave(prev);
	static char got[4096];
	CHECK(read(pfd[0], got, sizeof got) == 4096 && tu_verify(got, 4096, 0x8) == (size_t)-1,
	      "the pipe kept the old frames (the new ones are the compartment's)");
	close(pfd[0]);
	close(pfd[1]);
	free(p);
	free(ord);
	free(small);
}

/* Freed secret runs come back as zeros: their purge must drop the file's
 * pages (MADV_DONTNEED keeps a shared file's pages: the old bytes would
 * come back while the allocator believes the pages clean). */
static void test_reuse_zero(xpfo_compartment_t *s)
{
	xpfo_compartment_t *prev = xpfo_enter(s);
	char *p[8];
	for (int i = 0; i < 8; i++) {
		p[i] = malloc(RUN);
		tu_fill(p[i], RUN, 0x40);
	}
	for (int i = 0; i < 8; i++)
		free(p[i]);
	xpfo_flush();
	size_t dirty = 0;
	for (int i = 0; i < 8; i++) {
		unsigned char *q = calloc(1, RUN);
		for (size_t k = 0; q && k < RUN; k++)
			dirty += q[k] != 0;
		p[i] = (char *)q;
	}
	CHECK(dirty == 0, "calloc in the secret compartment after free: %zu non-zero bytes", dirty);
	for (int i = 0; i < 8; i++)
		free(p[i]);
	xpfo_leave(prev);
}

/* From outside (the compartment closed): calloc_in and free, small and
 * page runs, reused; the allocator's own checks and zeroing cannot use
 * /proc/self/mem on secret pages (it moves them away to touch them). */
static void test_outside(xpfo_compartment_t *s)
{
	size_t sizes[] = { 200, 5000, RUN };
	size_t dirty = 0;
	for (int round = 0; round < 50; round++)
		for (int i = 0; i < 3; i++) {
			unsigned char *q = xpfo_calloc_in(s, 1, sizes[i]);
			CHECK(q != NULL, "calloc_in(secret, %zu) from outside", sizes[i]);
			if (!q)
				return;
			xpfo_compartment_t *prev = xpfo_enter(s);
			for (size_t k = 0; k < sizes[i]; k++)
				dirty += q[k] != 0;
			memset(q, 0x5a, sizes[i]);
			xpfo_leave(prev);
			free(q);
		}
	CHECK(dirty == 0, "calloc_in from outside: %zu non-zero bytes", dirty);
}

static void test_stats(xpfo_compartment_t *s)
{
	struct xpfo_stats st;
	void *p = xpfo_malloc_in(s, 1 << 20);
	CHECK(p != NULL, "xpfo_malloc_in(secret, 1 MiB)");
	xpfo_compartment_t *prev = xpfo_enter(s);
	memset(p, 7, 1 << 20);
	xpfo_leave(prev);
	tu_stats(&st);
	CHECK(st.secret_mapped_bytes >= 1 << 20 && st.secret_resident_bytes >= 1 << 20,
	      "stats: secret %lu mapped, %lu resident (want >= 1 MiB)",
	      (unsigned long)st.secret_mapped_bytes, (unsigned long)st.secret_resident_bytes);
}

static xpfo_compartment_t *g_s;
static char *g_p;

/* A child reads g_p from outside the compartment: xpfo's fault report
 * (tu_run_child resets SIGSEGV to the default, so a plain fork here). */
static void test_report(void)
{
	char want[160], err[1024] = "";
	int ep[2], status = 0;
	if (pipe(ep))
		tu_hard_error("pipe");
	pid_t c = fork();
	if (c == 0) {
		dup2(ep[1], 2);
		alarm(10);
		_exit(*(volatile char *)g_p);
	}
	close(ep[1]);
	ssize_t n, got = 0;
	while ((n = read(ep[0], err + got, sizeof err - 1 - (size_t)got)) > 0)
		got += n;
	close(ep[0]);
	waitpid(c, &status, 0);
	snprintf(want, sizeof want, "xpfo: violation: read of %p owned by secret compartment \"keys\" "
		 "from thread %d in compartment \"root\"\n", (void *)g_p, c);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "read from outside: %s",
	      tu_status_str(status));
	CHECK(!strcmp(err, want), "report: got \"%s\", want \"%s\"", err, want);
}

/* RLIMIT_MEMLOCK: without CAP_IPC_LOCK (setuid nobody when root). */
static int memlock_child(void *arg)
{
	(void)arg;
	if (getuid() == 0 && setuid(65534))
		return 90;
	struct rlimit rl = { 1 << 20, 1 << 20 };
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return 91;
	xpfo_compartment_t *s = xpfo_compartment_create("locked", XPFO_COMPARTMENT_SECRET);
	if (!s)
		return 92;
	xpfo_enter(s);
	size_t got = 0;
	for (int i = 0; i < 64; i++) {
		char *p = malloc(256 << 10);
		if (!p)
			return errno == ENOMEM && got > 0 && got <= (1 << 20) ? 0 : 93;
		memset(p, 1, 256 << 10); /* touched: a SIGBUS would show here */
		got += 256 << 10;
	}
	return 94; /* never ran out */
}

static int enosys_child(void *arg)
{
	(void)arg;
	xpfo__test_inject(TU_OS_SECRET, ENOSYS, 0, 2);
	errno = 0;
	xpfo_compartment_t *a = xpfo_compartment_create("a", XPFO_COMPARTMENT_SECRET);
	int e1 = errno;
	xpfo_compartment_t *b = xpfo_compartment_create("b", XPFO_COMPARTMENT_SECRET);
	if (a || b || e1 != ENOSYS || errno != ENOSYS)
		return 1;
	return xpfo_compartment_create("c", XPFO_COMPARTMENT_SECRET) ? 0 : 2;
}

static const char warn_line[] = "xpfo: warning: secret compartments need memfd_secret, which failed "
				"(errno 38): the kernel lacks it or was booted without secretmem.enable=1\n";

int main(void)
{
	tu_xpfo_init(1);
	tu_timeout(120);
	errno = 0;
	g_s = xpfo_compartment_create("keys", XPFO_COMPARTMENT_SECRET);
	if (!g_s) {
		/* a kernel without memfd_secret: ENOSYS, said once; nothing more to test */
		CHECK(errno == ENOSYS, "create SECRET: errno %s, want ENOSYS", strerrorname_np(errno));
		if (tu_failures)
			tu_exit();
		tu_skip("memfd_secret is not available here (ENOSYS, as it should say)");
	}
	test_paths_and_transfer(g_s);
	test_reuse_zero(g_s);
	test_outside(g_s);
	test_stats(g_s);
	g_p = xpfo_malloc_in(g_s, RUN);
	test_report();

	struct tu_child ch;
	if (tu_run_child(memlock_child, NULL, 30, &ch))
		tu_hard_error("fork");
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
	      "RLIMIT_MEMLOCK: want NULL with ENOMEM, got %s", tu_status_str(ch.status));
	if (tu_run_child(enosys_child, NULL, 10, &ch))
		tu_hard_error("fork");
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "injected ENOSYS: %s",
	      tu_status_str(ch.status));
	CHECK(!strcmp(ch.err, warn_line), "injected ENOSYS: stderr \"%s\", want one line \"%s\"",
	      ch.err, warn_line);

	CHECK(xpfo_compartment_destroy(g_s) == 0, "destroy: %s", strerrorname_np(errno));
	struct xpfo_stats st;
	tu_stats(&st);
	CHECK(st.secret_mapped_bytes == 0, "after destroy %lu secret bytes still mapped",
	      (unsigned long)st.secret_mapped_bytes);
	tu_exit();
}
