/* guardrel.c - revocation with guard markers (release=guard, and
 * release=auto where the kernel has MADV_GUARD_INSTALL, Linux 6.13).
 *
 * A child allocates 170 page runs of 24 KiB (six pages, no guard page:
 * guard_large=0, so the runs fill one segment), frees every other one and
 * flushes: the 85 freed spans lie apart.
 *
 *  scatter, release=guard: the spans are revoked by installing guard
 *     markers (spans_guarded counts them), up to 64 spans in one call
 *     (process_madvise on PIDFD_SELF: 2 calls for 85; one madvise a span
 *     where the kernel has no PIDFD_SELF), which splits no VMA (the
 *     heap's VMAs grow by at most 4), and releases their frames (no purge
 *     call after).  The 85 runs allocated again get those pages back with
 *     one madvise each taking the markers away, read zero and take
 *     writes; on the mprotect backend with no mprotect (their protection
 *     stayed root's), where pkeys gives them root's key again, a
 *     pkey_mprotect each (grant.c guard_granted).
 *  scatter, release=mprotect: no span guarded, the VMAs split (at least
 *     85 more): the comparison that shows what the markers save.
 *  uaf, release=guard: a read of a freed, revoked run is reported
 *     ("xpfo: violation: read of ...") and ends the child by SIGSEGV.
 *  strict, release=guard: inside a STRICT compartment (root closed), a run
 *     granted to root on pages revoked with markers stays closed: its read
 *     is reported (it read through before close_after_marks); after
 *     xpfo_leave it takes a write.
 *  guarded spans, release=guard (guard pages on, the default): once the
 *     segment's runs are freed and revoked, 60 runs of 16 KiB, each with
 *     its guard page, are granted a span at a time (at most 20 granting
 *     calls: one, or three where some page of the span was not open under
 *     markers; a run at a time made 60 or more), read zero, take writes,
 *     and each guard page still faults (a forked child's read of it dies
 *     by SIGSEGV); freed, flushed and allocated again, the same.  Spans
 *     are the mprotect backend's (grant.c grant_guarded_spans): on pkeys
 *     the runs are granted one at a time (60 calls or more), and the rest
 *     holds the same.
 *  guarded spans failing, release=guard: the protection calls of the first
 *     guarded span's grant fail (injected): with one failure the span is
 *     closed again by mprotect and every malloc still succeeds; with three
 *     (the grant, its markers and mprotect: the span cannot be closed) one
 *     malloc fails, the span is quarantined with one "xpfo: error" line,
 *     and the next ones succeed; every run handed out reads zero, takes
 *     writes, and its guard page faults.  On pkeys each failure fails the
 *     grant of one run, which has no other way to be granted: that malloc
 *     fails, the run stays closed (not quarantined), the next ones succeed.
 * Where the default backend is pkeys, the scatter and guarded cases run on
 * it and again with backend=mprotect; every child takes the backend= of
 * this test's own XPFO_OPTIONS otherwise.
 *  shootdowns, release=guard: with a second thread running on the other
 *     CPU, the 85 freed spans, their pages populated, are revoked with
 *     fewer than 40 TLB shootdowns (/proc/interrupts, all CPUs, so other
 *     processes' count too): their frames go first in one MADV_DONTNEED
 *     call for the batch, one flush, and the markers find nothing to zap
 *     (installed over populated pages, they flushed once a span: 85 or
 *     more).  Skipped with one CPU or without /proc/interrupts.
 *  grant failing after the markers went, release=guard: two adjacent freed
 *     runs, the first revoked with markers, the second with mprotect (its
 *     markers refused once), taken back by one malloc, whose grant
 *     removes the markers and then fails to protect (injected): that
 *     malloc fails (no other way to grant them), neither run stays open
 *     among the free pages (a read of each faults), and the next malloc
 *     gets them, zero.  When closing them again fails too (markers and
 *     mprotect: three failures) they are quarantined with one "xpfo:
 *     error" line (open, maybe, but never handed out), and the next
 *     malloc lands elsewhere.
 *  first try refused, release=guard (ENOSYS injected into the first
 *     install, as a kernel before 6.13 answers): one warning, and
 *     revocation falls back to mprotect (no span guarded, the VMAs split).
 * On a kernel without guard markers the release=guard cases check the
 * fallback only (said in the log).
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define N 170 /* 6-page runs: one segment of 1,024 pages, no room after them */
#define SIZE (24u << 10)

static void *run[N];

/* This process runs on the pkeys backend. */
static int on_keys(void)
{
	return !strcmp(tu_x.backend(), "pkeys");
}

static int fill_free(struct xpfo_stats *before, struct xpfo_stats *after)
{
	for (int i = 0; i < N; i++)
		if (!(run[i] = xpfo_malloc(SIZE)))
			return 99;
	tu_stats(before);
	for (int i = 0; i < N; i += 2)
		xpfo_free(run[i]);
	xpfo_flush();
	tu_stats(after);
	return 0;
}

#define D(f) ((unsigned long long)(s1.f - s0.f))

/* exit 0: the expectations of `mode` hold (g: guard markers, m: mprotect) */
static int scatter(char mode)
{
	struct xpfo_stats s0, s1, s2;
	if (fill_free(&s0, &s1))
		return 99;
	printf("free and flush: %llu spans guarded, %llu revoking calls, heap VMAs %llu -> %llu\n",
	       D(spans_guarded), D(revoke_syscalls), (unsigned long long)s0.vmas,
	       (unsigned long long)s1.vmas);
	if (mode == 'm')
		return D(spans_guarded) == 0 && s1.vmas >= s0.vmas + N / 2 ? 0 : 1;
	/* one madvise a span, or one process_madvise for up to 64 of them */
	unsigned long long most = tu_guard_markers_batched() ? (N / 2 + 63) / 64 : N / 2;
	if (D(spans_guarded) < N / 2 || s1.vmas > s0.vmas + 4 || D(revoke_syscalls) > most)
		return 1;
	size_t bad = 0;
	for (int i = 0; i < N; i += 2) {
		unsigned char *p = run[i] = xpfo_malloc(SIZE);
		if (!p)
			return 99;
		for (size_t k = 0; k < SIZE; k += 4096)
			bad += p[k] != 0 || p[SIZE - 1] != 0;
		memset(p, 0x5a, SIZE);
	}
	tu_stats(&s2);
	unsigned long long g = s2.grant_syscalls - s1.grant_syscalls;
	unsigned long long m = s2.madvise_syscalls - s1.madvise_syscalls;
	/* a grant of pages that were all open under markers is one madvise
	 * (counted once); any other is the madvise and an mprotect (twice) */
	long long fast = 2 * (long long)m - (long long)g;
	printf("allocated again: %llu granting calls, %llu madvise calls (%lld grants without "
	       "mprotect), %zu pages not zero\n", g, m, fast, bad);
	return !bad && (on_keys() || fast >= N / 2 - 2) ? 0 : 2;
}

static int uaf(void)
{
	struct xpfo_stats s0, s1;
	if (fill_free(&s0, &s1))
		return 99;
	volatile char *p = run[0];
	return p[100]; /* freed and revoked: the violation ends the child */
}

/* Root's freed runs revoked with markers, then a STRICT compartment is
 * entered and a run is allocated in root from inside it: the grant takes
 * the markers away, and root being closed, the run must stay closed (a
 * read from inside faults: in a forked child, exit 3 if it went through;
 * found by reading the grant path: it did), and open once the thread
 * leaves (root reopened: the write goes through). */
static int strict_grant(void)
{
	struct xpfo_stats s0, s1;
	if (fill_free(&s0, &s1))
		return 99;
	xpfo_compartment_t *c = xpfo_compartment_create("s", XPFO_COMPARTMENT_STRICT);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		return 99;
	volatile char *p = xpfo_malloc_in(xpfo_root(), SIZE);
	if (!p)
		return 99;
	pid_t k = fork();
	if (k == 0)
		_exit(p[0] + 3); /* root is closed: the read ends the child */
	int st;
	if (k < 0 || waitpid(k, &st, 0) != k)
		return 99;
	fprintf(stderr, "inside: the read %s\n", WIFSIGNALED(st) ? "faulted" : "went through");
	xpfo_leave(prev);
	p[0] = 1; /* root open again */
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV ? 0 : 3;
}

/* The other way round: a run of root's freed and flushed inside a STRICT
 * compartment (root closed) and taken again by root after leaving.  Its
 * pages were closed when its revocation ran, so markers there would leave
 * them closed under a record of "open under markers": the write of the
 * next malloc that takes them faulted (a false violation, the program
 * killed).  Exit 0 when both blocks are written. */
static int strict_free(void)
{
	char *p[8];
	for (int i = 0; i < 8; i++)
		if (!(p[i] = xpfo_malloc(SIZE)))
			return 99;
		else
			memset(p[i], 1, SIZE);
	xpfo_free(p[0]);
	xpfo_flush(); /* markers seen */
	xpfo_compartment_t *c = xpfo_compartment_create("s", XPFO_COMPARTMENT_STRICT);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		return 99;
	xpfo_free(p[2]); /* root's run, revoked while root is closed */
	xpfo_flush();
	xpfo_leave(prev);
	char *q = xpfo_malloc(SIZE), *r = xpfo_malloc(SIZE);
	if (!q || !r)
		return 99;
	memset(q, 2, SIZE);
	memset(r, 2, SIZE);
	return 0;
}

#define M 60 /* guarded 16 KiB runs: under MAX_LIVE_GUARDS with their spares */
#define GSIZE (16u << 10)

/* A read of p goes through: 0 when it faults (in a forked child, whose
 * report is not printed). */
static int reads_through(const char *p)
{
	pid_t k = fork();
	if (k == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		_exit(*(const volatile char *)p + 3);
	}
	int st;
	if (k < 0 || waitpid(k, &st, 0) != k)
		exit(99);
	return !(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
}

/* The guard pages of the n runs fault; the number that did not. */
static int guards_open(char **p, int count)
{
	int n = 0;
	for (int i = 0; i < count; i++)
		n += reads_through(p[i] + GSIZE);
	return n;
}

/* Allocate the M runs: granting calls made, and runs not zero. */
static unsigned long long guarded_take(char **p, size_t *bad)
{
	struct xpfo_stats a, b;
	tu_stats(&a);
	for (int i = 0; i < M; i++)
		if (!(p[i] = xpfo_malloc(GSIZE)))
			exit(99);
	tu_stats(&b);
	for (int i = 0; i < M; i++) {
		for (size_t k = 0; k < GSIZE; k += 512)
			*bad += p[i][k] != 0;
		memset(p[i], 0x5a, GSIZE);
	}
	return b.grant_syscalls - a.grant_syscalls;
}

static int guarded(void)
{
	struct xpfo_stats s0, s1;
	static char *p[M];
	if (fill_free(&s0, &s1)) /* markers seen working, batched */
		return 99;
	for (int i = 1; i < N; i += 2)
		xpfo_free(run[i]);
	xpfo_flush();
	size_t bad = 0;
	unsigned long long g1 = guarded_take(p, &bad);
	int open1 = guards_open(p, M);
	for (int i = 0; i < M; i++)
		xpfo_free(p[i]);
	xpfo_flush();
	unsigned long long g2 = guarded_take(p, &bad);
	int open2 = guards_open(p, M);
	printf("%d guarded runs: %llu granting calls, %d guard pages open; freed and again: %llu "
	       "calls, %d open; %zu bytes checked not zero\n", M, g1, open1, g2, open2, bad);
	/* spans, or on pkeys a run at a time */
	unsigned long long lo = on_keys() ? M : 0, hi = on_keys() ? ~0ull : M / 3;
	return g1 >= lo && g1 <= hi && g2 >= lo && g2 <= hi && !open1 && !open2 && !bad ? 0 : 1;
}

/* The first guarded span's grant meets `fails` injected protection
 * failures; exit 0 when what follows is as the header says. */
static int guarded_fail(unsigned fails)
{
	struct xpfo_stats s0, s1;
	static char *p[M];
	if (fill_free(&s0, &s1))
		return 99;
	for (int i = 1; i < N; i += 2)
		xpfo_free(run[i]);
	xpfo_flush();
	if (xpfo__test_inject(TU_OS_PROTECT, EIO, 0, fails))
		return 99;
	int null = 0;
	size_t bad = 0;
	for (int i = 0; i < M; i++) {
		if (!(p[i] = xpfo_malloc(GSIZE))) {
			null++;
			continue;
		}
		for (size_t k = 0; k < GSIZE; k += 512)
			bad += p[i][k] != 0;
		memset(p[i], 0x5a, GSIZE);
	}
	int n = 0;
	for (int i = 0; i < M; i++)
		if (p[i])
			p[n++] = p[i];
	int nopen = guards_open(p, n);
	struct xpfo_stats s2;
	tu_stats(&s2);
	printf("%u failures: %d of %d mallocs failed, %d guard pages open, %zu bytes not zero, "
	       "%llu pages quarantined\n", fails, null, M, nopen, bad,
	       (unsigned long long)s2.pages_quarantined);
	/* pkeys: each failure is one run's grant, closed again */
	int kept = !on_keys() && fails >= 3, want_null = on_keys() ? (int)fails : kept;
	return null == want_null && !nopen && !bad &&
			       (kept ? s2.pages_quarantined > 0 : s2.pages_quarantined == 0)
		       ? 0
		       : 1;
}

/* Two adjacent runs freed, the first revoked with markers, the second
 * with mprotect (its markers refused once), taken back by one malloc: the
 * grant removes the markers and must then protect, and that call fails
 * (injected).  Exit 0 when what follows is as the header says. */
static int grant_fail(unsigned fails)
{
	char *p[4];
	for (int i = 0; i < 4; i++)
		if (!(p[i] = xpfo_malloc(SIZE)))
			return 99;
	if (p[1] != p[0] + SIZE)
		return 99;
	xpfo_free(p[0]);
	xpfo_flush();
	if (xpfo__test_inject(TU_OS_PROTECT, ENOSYS, 0, 1))
		return 99;
	xpfo_free(p[1]);
	xpfo_flush();
	/* the markers' removal goes through, then `fails` calls fail */
	if (xpfo__test_inject(TU_OS_PROTECT, EIO, 1, fails))
		return 99;
	char *q = xpfo_malloc(2 * SIZE);
	xpfo__test_inject(TU_OS_PROTECT, 0, 0, 0);
	int open = reads_through(p[0]) + reads_through(p[1]);
	unsigned char *r = xpfo_malloc(2 * SIZE);
	size_t bad = 0;
	for (size_t k = 0; r && k < 2 * SIZE; k += 512)
		bad += r[k] != 0;
	struct xpfo_stats s;
	tu_stats(&s);
	printf("%u failures: malloc %s, %d of 2 runs open, the next malloc %s, %zu bytes not "
	       "zero, %llu pages quarantined\n", fails, q ? "served" : "failed", open,
	       !r ? "failed" : (char *)r == p[0] ? "on them" : "elsewhere", bad,
	       (unsigned long long)s.pages_quarantined);
	int kept = fails >= 3;
	return !q && (!open || kept) && r && !bad && ((char *)r == p[0]) != kept &&
			       (kept ? s.pages_quarantined > 0 : s.pages_quarantined == 0)
		       ? 0
		       : 1;
}

/* TLB shootdowns so far, all CPUs (-1: not known). */
static long long shootdowns(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long long n = -1;
	while (f && fgets(line, sizeof line, f)) {
		char *p = line + strspn(line, " ");
		if (strncmp(p, "TLB:", 4))
			continue;
		n = 0;
		for (p += 4; *p == ' ' || (*p >= '0' && *p <= '9');) {
			char *e;
			long long v = strtoll(p, &e, 10);
			if (e == p)
				break;
			n += v;
			p = e;
		}
	}
	if (f)
		fclose(f);
	return n;
}

static volatile int spin_stop;

static void *spinner(void *arg)
{
	volatile char *p = arg;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	pthread_setaffinity_np(pthread_self(), sizeof one, &one);
	while (!spin_stop)
		(void)p[0];
	return NULL;
}

static int shootdown_count(void)
{
	cpu_set_t zero;
	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	if (pthread_setaffinity_np(pthread_self(), sizeof zero, &zero))
		return 99;
	for (int i = 0; i < N; i++) {
		if (!(run[i] = xpfo_malloc(SIZE)))
			return 99;
		memset(run[i], 0x5a, SIZE); /* populated: frames to take away */
	}
	pthread_t th;
	if (pthread_create(&th, NULL, spinner, run[1]))
		return 99;
	usleep(20000); /* the spinner is on CPU 1 */
	for (int i = 0; i < N; i += 2)
		xpfo_free(run[i]);
	long long a = shootdowns();
	xpfo_flush();
	long long b = shootdowns();
	spin_stop = 1;
	pthread_join(th, NULL);
	printf("flush of %d populated spans: %lld TLB shootdowns\n", N / 2, b - a);
	return a >= 0 && b - a < 40 ? 0 : 1;
}

static int first_refused(void)
{
	struct xpfo_stats s0, s1;
	for (int i = 0; i < N; i++)
		if (!(run[i] = xpfo_malloc(SIZE)))
			return 99;
	/* the first revocation tries the markers: that call fails */
	if (xpfo__test_inject(TU_OS_PROTECT, ENOSYS, 0, 1))
		return 99;
	tu_stats(&s0);
	for (int i = 0; i < N; i += 2)
		xpfo_free(run[i]);
	xpfo_flush();
	tu_stats(&s1);
	printf("first install refused: %llu spans guarded, heap VMAs %llu -> %llu\n", D(spans_guarded),
	       (unsigned long long)s0.vmas, (unsigned long long)s1.vmas);
	return D(spans_guarded) == 0 && s1.vmas >= s0.vmas + N / 2 ? 0 : 1;
}

static void child(const char *mode, const char *opts, struct tu_child *r)
{
	char *argv[] = { "/proc/self/exe", (char *)mode, NULL };
	char env0[256];
	snprintf(env0, sizeof env0, "XPFO_OPTIONS=%s", tu_child_options(opts));
	const char *env[] = { env0, NULL };
	if (tu_run_cmd(argv, env, 120, r))
		tu_hard_error("cannot run the child");
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 99)
		tu_hard_error("child %s: allocation or injection failed; %s", mode, r->err);
	fprintf(stderr, "%s (%s): %s%s", mode, opts, r->out, r->err);
}

/* The cases whose grants differ by backend (pkeys: `keys`), run with the
 * options `more` added ("": the default backend). */
static void backend_cases(int have, int keys, const char *more)
{
	char scat[128], guard[128];
	struct tu_child r;
	const char *b = keys ? "pkeys" : "mprotect";
	snprintf(scat, sizeof scat, "release=guard,guard_large=0%s", more);
	snprintf(guard, sizeof guard, "release=guard%s", more);
	child(have ? "--scatter-guard" : "--scatter-mprotect", scat, &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "release=guard (%s): %s: %s", b, have ? "one madvise a span, no VMA split, pages "
	      "back zero with one madvise each" : "no guard markers on this kernel: mprotect",
	      tu_status_str(r.status));
	if (!have || !tu_guard_markers_batched())
		return;
	child("--guarded", guard, &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "release=guard (%s): guarded runs granted %s, guards still fault: %s", b,
	      keys ? "a run at a time" : "a span at a time", tu_status_str(r.status));
	child("--guarded-fail1", guard, &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !strstr(r.err, "xpfo: error"),
	      "release=guard (%s): a guarded grant failing once: %s: %s", b,
	      keys ? "that run's malloc fails, closed" : "closed again, every malloc served",
	      tu_status_str(r.status));
	child("--guarded-fail3", guard, &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
	      (keys ? !strstr(r.err, "xpfo: error")
		    : !!strstr(r.err, "xpfo: error: cannot close a span whose grant failed")),
	      "release=guard (%s): %s: %s", b, keys ? "three guarded grants failing: three "
	      "mallocs fail, nothing quarantined" : "a guarded span that cannot be closed: "
	      "quarantined, reported, one malloc fails", tu_status_str(r.status));
}

int main(int argc, char **argv)
{
	tu_prog = "guardrel";
	tu_xpfo_init(1);
	if (argc == 2 && !strcmp(argv[1], "--scatter-guard"))
		return scatter('g');
	if (argc == 2 && !strcmp(argv[1], "--scatter-mprotect"))
		return scatter('m');
	if (argc == 2 && !strcmp(argv[1], "--uaf"))
		return uaf();
	if (argc == 2 && !strcmp(argv[1], "--first-refused"))
		return first_refused();
	if (argc == 2 && !strcmp(argv[1], "--strict-free"))
		return strict_free();
	if (argc == 2 && !strcmp(argv[1], "--strict"))
		return strict_grant();
	if (argc == 2 && !strcmp(argv[1], "--guarded"))
		return guarded();
	if (argc == 2 && !strcmp(argv[1], "--guarded-fail1"))
		return guarded_fail(1);
	if (argc == 2 && !strcmp(argv[1], "--guarded-fail3"))
		return guarded_fail(3);
	if (argc == 2 && !strcmp(argv[1], "--grant-fail1"))
		return grant_fail(1);
	if (argc == 2 && !strcmp(argv[1], "--grant-fail3"))
		return grant_fail(3);
	if (argc == 2 && !strcmp(argv[1], "--shootdowns"))
		return shootdown_count();
	int have = tu_guard_markers();
	struct tu_child r;
	child("--scatter-mprotect", "release=mprotect,guard_large=0", &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "release=mprotect: no span guarded, the VMAs split: %s", tu_status_str(r.status));
	backend_cases(have, on_keys(), "");
	if (on_keys())
		backend_cases(have, 0, ",backend=mprotect");
	if (have) {
		child("--uaf", "release=guard", &r);
		CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV &&
		      strstr(r.err, "xpfo: violation: read of "),
		      "release=guard: a read of a freed run is reported: %s", tu_status_str(r.status));
		child("--strict", "release=guard,guard_large=0", &r);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
		      strstr(r.err, "owned by compartment \"root\" from thread ") &&
		      strstr(r.err, "in compartment \"s\""),
		      "release=guard: a run granted to root inside a STRICT compartment stays closed "
		      "there, open after leaving: %s", tu_status_str(r.status));
		child("--strict-free", "release=guard,guard_large=0,backend=mprotect", &r);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
		      !strstr(r.err, "violation"),
		      "release=guard: a run of root's revoked inside a STRICT compartment is "
		      "writable when root takes it again: %s %s", tu_status_str(r.status), r.err);
		child("--grant-fail1", "release=guard,guard_large=0", &r);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && !strstr(r.err, "xpfo: error"),
		      "release=guard: a grant failing after its markers were removed: the malloc "
		      "fails, the pages closed again: %s", tu_status_str(r.status));
		child("--grant-fail3", "release=guard,guard_large=0", &r);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
		      strstr(r.err, "xpfo: error: cannot close a run whose grant failed"),
		      "release=guard: a grant failing after its markers were removed, and the pages "
		      "cannot be closed again: quarantined, reported: %s", tu_status_str(r.status));
	}
	if (have && tu_guard_markers_batched() && sysconf(_SC_NPROCESSORS_ONLN) >= 2 &&
	    shootdowns() >= 0) {
		child("--shootdowns", "release=guard,guard_large=0", &r);
		CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
		      "release=guard: a batch of populated spans revoked with few TLB shootdowns "
		      "(one purge call first): %s", tu_status_str(r.status));
	} else {
		printf("shootdowns: skipped (markers not batched, one CPU, or no /proc/interrupts)\n");
	}
	child("--first-refused", "release=guard,guard_large=0", &r);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 &&
	      strstr(r.err, "xpfo: warning: release=guard: no guard markers here (errno 38"),
	      "release=guard, first try refused: one warning, mprotect: %s", tu_status_str(r.status));
	tu_exit();
}
