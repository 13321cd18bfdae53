/* uffd.c - released pages watched by userfaultfd (issue 14).
 *
 * Each case re-runs this program with its own XPFO_OPTIONS and checks how
 * it ended and what it wrote:
 *   budget: max_vmas=100; 20,000 page runs, every other one freed (10,000
 *     frees, a flush each: over the budget, so small spans are released
 *     instead of protected), then one freed run is read.  It must end with
 *     the violation line (a released page) and SIGSEGV, never read zeros.
 *   uaf: release=uffd; a freed run read after xpfo_flush(): reported, and
 *     revoking it split no VMA (spans_released_uffd counts it).
 *   own: release=uffd; a live run whose frames went away (madvise from the
 *     test) is filled by the fault handler and reads zeros: the program goes
 *     on (uffd_fills).
 *   fork: release=uffd; the child of a fork registers its copy of the heap
 *     again: a run freed (and released) before the fork, read in the child,
 *     is reported there; the child allocates and frees normally before.
 *   denied: release=uffd; the child's registration is made to fail
 *     (xpfo__test_inject(TU_OS_UFFD)): one warning line, then the child
 *     protects its free pages with mprotect: the same stale read is still
 *     reported (by the protection fault).
 *   vmabudget: tests/isolation/vmabudget with release=uffd and a limit of
 *     200 VMAs for its 16 compartments x 1,000,000 objects (on pkeys 200
 *     plus two per segment in use: each keyed compartment's segment is a
 *     VMA of its own, with its key; vmabudget's obj_vma_limit).
 *   idle: the default (release=auto) far from the VMA budget: 2,000 page
 *     runs and 20,000 small blocks allocated and freed, and not one
 *     userfaultfd call (uffd_syscalls 0, uffd_armed 0): auto arms only when
 *     the degraded mode starts.  The budget case shows it armed there.
 *   forkarmed: the default with max_vmas=100; 1,000 runs freed arm it
 *     (degraded), then a fork: the child registers its copy again and its
 *     stale read of a released run is reported.
 *   untouched: the default with max_vmas=100; a run allocated before the
 *     degraded mode arms and never touched is filled when it arms: a read(2)
 *     into it (a kernel access, which a missing page would refuse with
 *     EFAULT) works, and so does the program's own write.
 *   remapoff: the default with max_vmas=100; a compartment's freed 2 MiB
 *     run is revoked by a new mapping over it (spans_remapped) before the
 *     degraded mode arms, and protected once it has: a new mapping would
 *     not be registered.
 *   armfail: the default with max_vmas=100, the userfaultfd made to fail
 *     (injected) before the degraded mode arms it: one warning that freed
 *     spans stay protected, not one span released (watched or not), and
 *     the stale read is reported by the protection fault.
 * Skips (77) when the kernel offers no userfaultfd at all (a child with
 * release=uffd says whether it armed).
 */
#include "iso.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#define RUNSZ (16384 + 1)
#define NRUN 20000

static volatile unsigned char sink;

/* printf without allocating (stdio's buffer could take the freed pages) */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, buf, (size_t)n) < 0)
		tu_hard_error("write: %s", strerror(errno));
}

static int budget_child(void)
{
	static unsigned char *run[NRUN];
	for (int i = 0; i < NRUN; i++) {
		run[i] = malloc(RUNSZ);
		if (!run[i])
			tu_hard_error("malloc: %s", strerror(errno));
		memset(run[i], 0x5a, RUNSZ);
	}
	for (int i = 0; i < NRUN; i += 2) {
		free(run[i]);
		xpfo_flush();
	}
	struct xpfo_stats s;
	tu_stats(&s);
	printf("degraded=%llu armed=%llu vmas=%llu uffd_syscalls=%llu\n",
	       (unsigned long long)s.degraded, (unsigned long long)s.uffd_armed,
	       (unsigned long long)s.vmas, (unsigned long long)s.uffd_syscalls);
	fflush(stdout);
	unsigned char *p = run[NRUN - 2];
	sink = p[100];
	printf("read %d: zeros, nobody told\n", sink);
	return 0;
}

/* far from the budget: runs and small blocks come and go, with flushes */
static int idle_child(void)
{
	static unsigned char *run[2000], *small[20000];
	for (int i = 0; i < 2000; i++) {
		run[i] = malloc(RUNSZ);
		if (!run[i])
			tu_hard_error("malloc: %s", strerror(errno));
		memset(run[i], 0x5a, RUNSZ);
	}
	for (int i = 0; i < 20000; i++)
		if (!(small[i] = calloc(1, 16 + (size_t)(i % 500))))
			tu_hard_error("calloc: %s", strerror(errno));
	for (int i = 0; i < 2000; i++) {
		free(run[i]);
		if (i % 10 == 0)
			xpfo_flush();
	}
	for (int i = 0; i < 20000; i++)
		free(small[i]);
	xpfo_flush();
	struct xpfo_stats s;
	tu_stats(&s);
	printf("degraded=%llu armed=%llu uffd_syscalls=%llu vmas=%llu\n",
	       (unsigned long long)s.degraded, (unsigned long long)s.uffd_armed,
	       (unsigned long long)s.uffd_syscalls, (unsigned long long)s.vmas);
	return 0;
}

/* release=uffd: did it arm (the kernel offers a userfaultfd)? */
static int probe_child(void)
{
	struct xpfo_stats s;
	tu_stats(&s);
	printf("armed=%llu\n", (unsigned long long)s.uffd_armed);
	return 0;
}

static int uaf_child(void)
{
	/* a neighbour stays live: a segment left all free would be remapped
	 * (and protected) whole */
	unsigned char *p = malloc(RUNSZ), *keep = malloc(RUNSZ);
	memset(p, 0x5a, RUNSZ);
	memset(keep, 0x5a, RUNSZ);
	free(p);
	xpfo_flush();
	struct xpfo_stats s;
	tu_stats(&s);
	say("released_uffd=%llu\n", (unsigned long long)s.spans_released_uffd);
	sink = p[100];
	printf("read %d\n", sink);
	return 0;
}

static int own_child(void)
{
	unsigned char *p = malloc(RUNSZ);
	memset(p, 0x5a, RUNSZ);
	/* the frames go away behind the allocator's back: a page of this
	 * thread's own compartment is now missing */
	if (madvise(p, 4096, MADV_DONTNEED))
		tu_hard_error("madvise: %s", strerror(errno));
	sink = p[100];
	struct xpfo_stats s;
	tu_stats(&s);
	printf("read %d fills=%llu\n", sink, (unsigned long long)s.uffd_fills);
	free(p);
	return 0;
}

/* max_vmas=100 under release=auto: 2,000 runs, every other one freed with
 * a flush each, so that the degraded mode starts (and arms); the last one
 * freed (released watched) is returned */
static unsigned char *degrade(void)
{
	static unsigned char *run[2000];
	for (int i = 0; i < 2000; i++) {
		if (!(run[i] = malloc(RUNSZ)))
			tu_hard_error("malloc: %s", strerror(errno));
		memset(run[i], 0x5a, RUNSZ);
	}
	for (int i = 0; i < 2000; i += 2) {
		free(run[i]);
		xpfo_flush();
	}
	struct xpfo_stats s;
	tu_stats(&s);
	say("parent degraded=%llu armed=%llu released_uffd=%llu unprotected=%llu\n",
	    (unsigned long long)s.degraded, (unsigned long long)s.uffd_armed,
	    (unsigned long long)s.spans_released_uffd,
	    (unsigned long long)s.spans_released_unprotected);
	return run[1998];
}

static int untouched_child(void)
{
	unsigned char *u = malloc(8 * 4096);
	if (!u)
		tu_hard_error("malloc: %s", strerror(errno));
	degrade();
	int p[2];
	char buf[4096];
	memset(buf, 7, sizeof buf);
	if (pipe(p) || write(p[1], buf, sizeof buf) != (ssize_t)sizeof buf)
		tu_hard_error("pipe: %s", strerror(errno));
	ssize_t n = read(p[0], u + 4096, sizeof buf);
	say("kernel read %zd (%s) byte %d\n", n, n < 0 ? strerror(errno) : "ok", n > 0 ? u[4096] : -1);
	u[6 * 4096] = 1;
	say("user write ok\n");
	free(u);
	return 0;
}

/* A 2 MiB run of compartment c freed and flushed: the spans remapped and
 * the protect rounds that took. */
static void big_free(xpfo_compartment_t *c, uint64_t *remapped, uint64_t *protects)
{
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *prev = xpfo_enter(c);
	if (!prev)
		tu_hard_error("xpfo_enter: %s", strerror(errno));
	unsigned char *b = malloc(2u << 20);
	if (!b)
		tu_hard_error("malloc: %s", strerror(errno));
	memset(b, 0x5a, 2u << 20);
	tu_stats(&s0);
	free(b);
	xpfo_flush();
	tu_stats(&s1);
	xpfo_leave(prev);
	*remapped = s1.spans_remapped - s0.spans_remapped;
	*protects = s1.flush_rounds_protect - s0.flush_rounds_protect;
}

static int remapoff_child(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("big", 0);
	if (!c)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	uint64_t r0, p0, r1, p1;
	big_free(c, &r0, &p0);
	degrade();
	big_free(c, &r1, &p1);
	struct xpfo_stats s;
	tu_stats(&s);
	say("unarmed: remapped %llu protected %llu; armed %llu: remapped %llu protected %llu\n",
	    (unsigned long long)r0, (unsigned long long)p0, (unsigned long long)s.uffd_armed,
	    (unsigned long long)r1, (unsigned long long)p1);
	return 0;
}

static int armfail_child(void)
{
	xpfo__test_inject(TU_OS_UFFD, EPERM, 0, 1000000);
	unsigned char *p = degrade();
	sink = p[100];
	printf("read %d: zeros, nobody told\n", sink);
	return 0;
}

static int has_line(const char *err, const char *prefix, const char *part);

static void armfail_case(void)
{
	const char *args[] = { "armfail", NULL };
	struct tu_child ch;
	if (iso_run_self("max_vmas=100", args, 300, &ch))
		tu_hard_error("could not run case armfail");
	fprintf(stderr, "  armfail (XPFO_OPTIONS=max_vmas=100): %s\n%s%s", tu_status_str(ch.status),
		ch.out, ch.err);
	CHECK(WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == SIGSEGV,
	      "armfail: ended with %s, want SIGSEGV", tu_status_str(ch.status));
	CHECK(strstr(ch.out, "parent degraded=1 armed=0 released_uffd=0 unprotected=0\n"),
	      "armfail: spans were released (or it armed)");
	CHECK(!strstr(ch.out, "zeros, nobody told"), "armfail: a freed run read as zeros");
	CHECK(has_line(ch.err, "xpfo: violation: read of ", "owned by the allocator") == 1 &&
		      !has_line(ch.err, "xpfo: violation: ", "(released page)"),
	      "armfail: want one violation line (a protection fault)");
	CHECK(has_line(ch.err, "xpfo: warning: ", "freed spans stay protected") == 1 &&
		      has_line(ch.err, "xpfo: warning: ", NULL) == 1,
	      "armfail: want exactly one warning, that freed spans stay protected");
}

/* fork (inject: make the child's registration fail; armed: the default,
 * armed by the degraded mode first) and read a freed run in the child */
static int fork_child(bool inject, bool armed)
{
	/* a neighbour stays live: a segment left all free would be remapped
	 * (and protected) whole */
	unsigned char *p, *keep;
	if (armed) {
		p = degrade();
	} else {
		p = malloc(RUNSZ);
		keep = malloc(RUNSZ);
		memset(p, 0x5a, RUNSZ);
		memset(keep, 0x5a, RUNSZ);
		free(p);
		xpfo_flush();
	}
	fflush(NULL);
	if (inject)
		xpfo__test_inject(TU_OS_UFFD, EPERM, 0, 1000);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 1000; i++) { /* the child's heap works (small
						    blocks: p's pages are not reused) */
			unsigned char *q = malloc(1 + (size_t)i * 3);
			memset(q, 1, 1 + (size_t)i * 3);
			free(q);
		}
		xpfo_flush();
		say("child ready\n");
		sink = p[100];
		printf("child read %d\n", sink);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child %s\n", tu_status_str(st));
	return 0;
}

static int has_line(const char *err, const char *prefix, const char *part)
{
	int n = 0;
	for (const char *l = err; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, prefix, strlen(prefix))) {
			const char *e = strchr(l, '\n');
			size_t len = e ? (size_t)(e - l) : strlen(l);
			char buf[512];
			snprintf(buf, sizeof buf, "%.*s", (int)(len < 511 ? len : 511), l);
			n += !part || strstr(buf, part) != NULL;
		}
	return n;
}

static void run_case(const char *name, const char *options, int want_sig, const char *want_out)
{
	const char *args[] = { name, NULL };
	struct tu_child ch;
	if (iso_run_self(options, args, 300, &ch))
		tu_hard_error("could not run case %s", name);
	fprintf(stderr, "  %s (XPFO_OPTIONS=%s): %s\n%s%s", name, options,
		tu_status_str(ch.status), ch.out, ch.err);
	if (want_sig)
		CHECK(WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == want_sig,
		      "%s: ended with %s, want killed by signal %d", name, tu_status_str(ch.status),
		      want_sig);
	else
		CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "%s: ended with %s", name,
		      tu_status_str(ch.status));
	if (want_sig)
		CHECK(has_line(ch.err, "xpfo: violation: read of ", "(released page) from thread") == 1,
		      "%s: no (or more than one) violation line for the released page", name);
	if (want_out)
		CHECK(strstr(ch.out, want_out) != NULL, "%s: stdout lacks \"%s\"", name, want_out);
	CHECK(!strstr(ch.out, "zeros, nobody told"), "%s: a released page read as zeros", name);
}

static void fork_case(const char *name, const char *options, bool inject)
{
	const char *args[] = { name, NULL };
	struct tu_child ch;
	if (iso_run_self(options, args, 300, &ch))
		tu_hard_error("could not run case %s", name);
	fprintf(stderr, "  %s (XPFO_OPTIONS=%s): %s\n%s%s", name, options,
		tu_status_str(ch.status), ch.out, ch.err);
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0, "%s: ended with %s", name,
	      tu_status_str(ch.status));
	CHECK(strstr(ch.out, "child ready") && strstr(ch.out, "child killed by SEGV"),
	      "%s: the child's stale read was not ended by SIGSEGV", name);
	CHECK(has_line(ch.err, "xpfo: violation: read of ", inject ? NULL : "(released page)") == 1,
	      "%s: want one violation line", name);
	if (strstr(name, "armed"))
		CHECK(strstr(ch.out, "parent degraded=1 armed=1"), "%s: the parent did not arm", name);
	int warn = has_line(ch.err, "xpfo: warning: ", "userfaultfd unavailable");
	CHECK(warn == (inject ? 1 : 0), "%s: %d userfaultfd warnings (want %d)", name, warn,
	      inject ? 1 : 0);
}

/* The VMA budget test's 16 compartments x 1,000,000 objects under
 * release=uffd: fewer than 200 VMAs after every round. */
static void vmabudget_case(int rounds)
{
	char exe[4096], r[16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
	if (n <= 0)
		tu_hard_error("readlink /proc/self/exe: %s", strerror(errno));
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	snprintf(slash + 1, sizeof exe - (size_t)(slash + 1 - exe), "vmabudget");
	snprintf(r, sizeof r, "%d", rounds);
	char *const argv[] = { exe, "--rounds", r, "--runs", "200", "--transfers", "200",
			       "--objects-vmas", "200", NULL };
	const char *const env[] = { "XPFO_OPTIONS=release=uffd", NULL };
	struct tu_child ch;
	if (tu_run_cmd(argv, env, 600, &ch))
		tu_hard_error("could not run %s", exe);
	fprintf(stderr, "  vmabudget (XPFO_OPTIONS=release=uffd): %s\n%s", tu_status_str(ch.status),
		ch.err);
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
	      "vmabudget --objects-vmas 200 with release=uffd ended with %s",
	      tu_status_str(ch.status));
}

int main(int argc, char **argv)
{
	tu_prog = "uffd";
	tu_xpfo_init(1);
	iso_stdio_warmup(); /* no allocation between a free and the stale read */
	if (argc == 2 && !strcmp(argv[1], "budget"))
		return budget_child();
	if (argc == 2 && !strcmp(argv[1], "uaf"))
		return uaf_child();
	if (argc == 2 && !strcmp(argv[1], "own"))
		return own_child();
	if (argc == 2 && !strcmp(argv[1], "fork"))
		return fork_child(false, false);
	if (argc == 2 && !strcmp(argv[1], "denied"))
		return fork_child(true, false);
	if (argc == 2 && !strcmp(argv[1], "forkarmed"))
		return fork_child(false, true);
	if (argc == 2 && !strcmp(argv[1], "untouched"))
		return untouched_child();
	if (argc == 2 && !strcmp(argv[1], "armfail"))
		return armfail_child();
	if (argc == 2 && !strcmp(argv[1], "remapoff"))
		return remapoff_child();
	if (argc == 2 && !strcmp(argv[1], "idle"))
		return idle_child();
	if (argc == 2 && !strcmp(argv[1], "probe"))
		return probe_child();
	const char *probe[] = { "probe", NULL };
	struct tu_child pc;
	if (iso_run_self("release=uffd", probe, 60, &pc))
		tu_hard_error("could not run the probe");
	if (!strstr(pc.out, "armed=1"))
		tu_skip("no userfaultfd here (release=uffd did not arm it)");
	run_case("idle", "", 0, "degraded=0 armed=0 uffd_syscalls=0 ");
	run_case("budget", "max_vmas=100", SIGSEGV, "degraded=1 armed=1");
	run_case("uaf", "release=uffd", SIGSEGV, "released_uffd=1");
	run_case("own", "release=uffd", 0, "read 0 fills=1");
	fork_case("fork", "release=uffd", false);
	fork_case("denied", "release=uffd", true);
	fork_case("forkarmed", "max_vmas=100", false);
	run_case("untouched", "max_vmas=100", 0, "kernel read 4096 (ok) byte 7\nuser write ok");
	run_case("remapoff", "max_vmas=100", 0,
		 "unarmed: remapped 1 protected 0; armed 1: remapped 0 protected 1\n");
	armfail_case();
	vmabudget_case(iso_skip_slow() ? 2 : 8);
	tu_exit();
}
