/* revoke.c - freed pages are revoked, and batching saves syscalls.
 *
 * 1. A use after free of a freed large allocation faults (SIGSEGV) once
 *    xpfo_flush() has applied the revocation: read at the start, read at the
 *    end, write in the middle; 64 KiB, 1 MiB and 5 MiB blocks; each case in a
 *    child.  With XPFO_OPTIONS=revoke=eager the fault comes without a flush.
 *    With revoke=off it must not come (a control: the fault is xpfo's).
 * 2. Freeing 10,000 page-sized (4096 B) allocations, then xpfo_flush(),
 *    issues at least 20x fewer revocation syscalls with the default options
 *    than with revoke=eager (stats counters, each mode in a child started
 *    with XPFO_OPTIONS in its environment).  revoke-strace.sh counts the same
 *    loop with strace.
 * 3. The batch bound: a freed 20 KiB run is revoked (a write(2) from it gives
 *    EFAULT) within 1024 (batch) later frees, even when each of those is
 *    taken back by the next malloc and never reaches a flush.
 * 4. Degraded mode (a child with XPFO_OPTIONS=max_vmas=100, over the VMA
 *    budget): a freed 20 KiB run is released, not protected; bytes written
 *    into it after free (through read(2), which would give EFAULT on a
 *    protected page) never come back from calloc(1, 20480), which reuses it.
 * 5. Coalescing: 16 adjacent 20 KiB runs freed, then one flush: exactly one
 *    revocation syscall covers them (stats).
 * 6. A full flush's kept runs do not count toward the next batch again:
 *    4,000 freed 20 KiB runs take at most pages / batch_pages full flushes.
 * 7. A kept run is revoked within 1.25 batches (1280 frees, taken-back ones
 *    included) of its free.
 * 8. Pages closed outside a flush are usable again by their next owner,
 *    under revoke=batched and revoke=off: a guarded run grown in place
 *    (its guard moves) and shrunk (a new guard), a huge block shrunk and
 *    grown back, all freed, then every byte of many new runs written.
 *    Under revoke=off a moved guard stayed PROT_NONE (grants change
 *    nothing there) and the page's next owner faulted (python, xb-micro).
 * 9. realloc grows geometrically: a buffer appended 64 bytes at a time up
 *    to 1 MiB moves at most 64 times and makes at most 100 protection
 *    calls (grant + revoke); growing exactly as asked, it moved 87 times
 *    and made about 410 (a grant and a guard move per page crossed).
 * 10. Queued runs of 32 pages or more are taken back shortest first: 40
 *    and 50 pages freed (the 50 last), then 40 and 50 asked for, each
 *    gets its own old run back, default and profile=light.  Taking the
 *    newest that fits, the 40 took the 50's tail (its head, 10 pages, stayed
 *    queued) and the 50 took fresh pages.
 *
 * Usage: revoke                      run the test
 *        revoke --free-loop [N [SIZE]]   the measured loop; prints counters
 *        revoke --uaf SIZE OFF r|w [noflush]  one use after free (for children)
 *        revoke --degraded-calloc    part 3's child (run with max_vmas=100)
 */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

static size_t page;

static void *opaque_ptr(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* ---- the use after free ------------------------------------------------- */

/* Exit codes of the child before the access: 2 owner wrong while live,
 * 3 still owned after free, 4 xpfo_flush failed, 0 access did not fault. */
static int uaf(size_t n, size_t off, int write_it, int flush)
{
	volatile char *p = malloc(n);
	if (!p)
		return 5;
	memset((char *)p, 0x3c, n);
	if (tu_x.owner((const void *)p) != tu_x.root())
		return 2;
	free((void *)p);
	p = opaque_ptr((void *)p);
	if (tu_x.owner((const void *)p) != NULL)
		return 3;
	if (flush && tu_x.flush() != 0)
		return 4;
	if (write_it)
		p[off] = 1;
	else
		(void)p[off];
	return 0;
}

struct uaf_arg {
	size_t n, off;
	int write_it;
};

static int uaf_child(void *a)
{
	struct uaf_arg *u = a;
	return uaf(u->n, u->off, u->write_it, 1);
}

static const char *uaf_exit_str(int status)
{
	if (!WIFEXITED(status))
		return "";
	switch (WEXITSTATUS(status)) {
	case 0: return " (the access succeeded)";
	case 2: return " (xpfo_owner of the live block was not root)";
	case 3: return " (xpfo_owner of the freed block was not NULL)";
	case 4: return " (xpfo_flush failed)";
	case 5: return " (malloc failed)";
	}
	return "";
}

static void test_uaf(void)
{
	const size_t ns[] = { 65536, 1u << 20, 5u << 20 };
	for (size_t i = 0; i < 3; i++) {
		size_t n = ns[i];
		struct uaf_arg cases[] = {
			{ n, 0, 0 }, { n, n - 1, 0 }, { n, n / 2 + 3, 1 },
		};
		for (size_t k = 0; k < 3; k++) {
			struct tu_child c;
			if (tu_run_child(uaf_child, &cases[k], 30, &c) != 0)
				tu_hard_error("fork");
			int ok = WIFSIGNALED(c.status) &&
				 WTERMSIG(c.status) == SIGSEGV;
			CHECK(ok, "use after free (%s byte %zu of a freed %zu-byte "
				  "block, after xpfo_flush): %s%s, expected SIGSEGV; "
				  "stderr: %s",
			      cases[k].write_it ? "write" : "read", cases[k].off, n,
			      tu_status_str(c.status), uaf_exit_str(c.status),
			      c.err);
			if (ok)
				fprintf(stderr, "ok: %s of byte %zu of a freed %zu-byte "
						"block after xpfo_flush: SIGSEGV\n",
					cases[k].write_it ? "write" : "read",
					cases[k].off, n);
		}
	}
}

/* Same, in a fresh process with the given options. */
static void uaf_exec(const char *opts, const char *n, const char *off,
		     const char *rw, const char *flush, int want_fault)
{
	char *argv[] = { "/proc/self/exe", "--uaf", (char *)n, (char *)off,
			 (char *)rw, (char *)flush, NULL };
	char env[128];
	const char *envset[] = { env, NULL };
	struct tu_child c;

	snprintf(env, sizeof env, "XPFO_OPTIONS=%s", opts);
	if (tu_run_cmd(argv, envset, 30, &c) != 0)
		tu_hard_error("cannot run myself");
	int faulted = WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGSEGV;
	if (want_fault)
		CHECK(faulted, "XPFO_OPTIONS=%s: use after free (%s, %s) of a "
			       "%s-byte block: %s%s, expected SIGSEGV; stderr: %s",
		      opts, rw, flush, n, tu_status_str(c.status),
		      uaf_exit_str(c.status), c.err);
	else
		CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
		      "XPFO_OPTIONS=%s: use after free (%s) of a %s-byte block: "
		      "%s%s, expected no fault (revocation off); stderr: %s",
		      opts, rw, n, tu_status_str(c.status),
		      WIFEXITED(c.status) && WEXITSTATUS(c.status) ?
			      uaf_exit_str(c.status) : "", c.err);
	if (faulted == want_fault)
		fprintf(stderr, "ok: XPFO_OPTIONS=%s, %s %s-byte block, %s: %s\n",
			opts, rw, n, flush, tu_status_str(c.status));
}

/* ---- probes without signals --------------------------------------------- */

/* Can the process read byte p now?  write(2) from a PROT_NONE page fails
 * with EFAULT instead of raising SIGSEGV. */
static int readable(const void *p)
{
	static int fd[2] = { -1, -1 };
	char c;
	if (fd[0] < 0 && pipe(fd))
		tu_hard_error("pipe: %s", strerror(errno));
	if (write(fd[1], p, 1) != 1)
		return 0;
	if (read(fd[0], &c, 1) != 1)
		tu_hard_error("pipe read: %s", strerror(errno));
	return 1;
}

/* Write n bytes of `byte` at p through read(2): 0, or -1 (EFAULT) when the
 * page is not writable. */
static int write_probe(void *p, int byte, size_t n)
{
	int fd[2];
	char buf[4096];
	if (n > sizeof buf || pipe(fd))
		tu_hard_error("pipe: %s", strerror(errno));
	memset(buf, byte, n);
	if (write(fd[1], buf, n) != (ssize_t)n)
		tu_hard_error("pipe write: %s", strerror(errno));
	ssize_t r = read(fd[0], p, n);
	close(fd[0]);
	close(fd[1]);
	return r == (ssize_t)n ? 0 : -1;
}

/* ---- degraded mode: a write after free does not reach calloc ------------ */

/* In a child with max_vmas=100.  Exit codes: 0 ok, 1 calloc returned a
 * non-zero byte, 2 calloc never reused the freed run, 3 the write after
 * free was refused (the run was protected, not released), 4 the VMA budget
 * was not exceeded. */
static int degraded_calloc(void)
{
	/* VMAs of our own (every other page read-only) put the process over
	 * the budget; xpfo counts them every 64 flushes */
	char *m = mmap(NULL, 400 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 5;
	for (int i = 0; i < 400; i += 2)
		mprotect(m + (size_t)i * page, page, PROT_READ);
	/* a live run keeps the segment (a free segment is remapped whole) */
	void *keep = malloc(20480);
	struct xpfo_stats s;
	for (int i = 0; i < 200; i++) {
		free(malloc(20480));
		tu_x.flush();
		tu_stats(&s);
		if (s.degraded)
			break;
	}
	if (!s.degraded)
		return 4;
	unsigned long long released = s.spans_released_unprotected;
	unsigned long long watched = s.spans_released_uffd;
	char *a = malloc(20480);
	free(a);
	tu_x.flush();
	tu_stats(&s);
	char *w = a + 8192;
	if (s.spans_released_uffd > watched) {
		/* released under a userfaultfd (release=auto): the kernel's
		 * write into it fails like a protected page's */
		int refused = write_probe(w, 0x5a, 4096); /* before stdio allocates */
		printf("watched=1\n");
		free(keep);
		return refused ? 0 : 6;
	}
	if (s.spans_released_unprotected == released || write_probe(w, 0x5a, 4096))
		return 3;
	void *c[64];
	int n = 0, dirty = 0, hit = 0;
	while (n < 64 && !hit) {
		char *p = c[n++] = calloc(1, 20480);
		if (!p)
			return 5;
		for (size_t k = 0; k < 20480; k++)
			dirty += p[k] != 0;
		hit = p <= w && w < p + 20480;
	}
	printf("callocs=%d dirty_bytes=%d reused=%d\n", n, dirty, hit);
	while (n)
		free(c[--n]);
	free(keep);
	return dirty ? 1 : hit ? 0 : 2;
}

static void test_degraded_calloc(void)
{
	char *argv[] = { "/proc/self/exe", "--degraded-calloc", NULL };
	const char *envset[] = { "XPFO_OPTIONS=max_vmas=100", NULL };
	struct tu_child c;
	if (tu_run_cmd(argv, envset, 60, &c) != 0)
		tu_hard_error("cannot run myself");
	static const char *const why[] = { "", ": calloc returned bytes written after free",
		": calloc never reused the freed run", ": the write after free was refused",
		": the VMA budget was not exceeded", ": allocation failed",
		": a write into a released, watched run went through" };
	int code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
	CHECK(code == 0, "degraded mode, write after free then calloc(1, 20480): %s%s; %s%s",
	      tu_status_str(c.status), code > 0 && code < 7 ? why[code] : "", c.out, c.err);
	if (code == 0)
		fprintf(stderr, "ok: degraded mode: a write after free into a released run does "
				"not reach calloc (%s)", c.out);
}

/* ---- the batch bound holds when frees are taken back --------------------- */

/* A freed run waits at most `batch` frees (1024 by default) for its
 * revocation, even when the frees after it are taken back by the next
 * malloc (revoke_cancel) and never leave the gather. */
/* 5. Coalescing: 16 runs of 20 KiB freed one after the other (adjacent,
 * from a fresh segment in a child) and then flushed cost one revocation
 * syscall for all their pages. */
static int coalesce_child(void *arg)
{
	(void)arg;
	enum { N = 16, SIZE = 20480 };
	char *p[N];
	struct xpfo_stats a, b;
	/* the parent's gather may still hold runs (issue 11: a full gather
	 * keeps its newest queued), which the first mallocs would take back
	 * from wherever they are: apply it, so the runs come one after the
	 * other from free pages */
	xpfo_flush();
	for (int i = 0; i < N; i++)
		if (!(p[i] = malloc(SIZE)))
			return 2;
	for (int i = 1; i < N; i++)
		if (p[i] <= p[i - 1] || p[i] - p[i - 1] > SIZE + 4096)
			return 3; /* not one after the other: nothing to show */
	xpfo_flush();
	tu_stats(&a);
	for (int i = 0; i < N; i++)
		free(p[i]);
	xpfo_flush();
	tu_stats(&b);
	if (b.revoke_syscalls - a.revoke_syscalls != 1) {
		fprintf(stderr, "%llu revocation syscalls for %d adjacent runs\n",
			(unsigned long long)(b.revoke_syscalls - a.revoke_syscalls), N);
		return 4;
	}
	if (b.pages_revoked - a.pages_revoked < N * (SIZE / 4096))
		return 5;
	return 0;
}

static void test_coalesce(void)
{
	struct tu_child c;
	tu_run_child(coalesce_child, NULL, 30, &c);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "16 adjacent freed runs, one flush: not one revocation syscall (%s) %s",
	      tu_status_str(c.status), c.err);
}

static void test_batch_bound(void)
{
	char *a = malloc(20480);
	void *p = malloc(40960);
	CHECK(a && p, "malloc");
	memset(a, 0x77, 20480);
	tu_x.flush();
	struct xpfo_stats s0, s1;
	tu_stats(&s0);
	free(a);
	CHECK(readable(a), "a freed run was revoked at once with the default batch "
	      "(the test needs it queued)");
	/* a is probed right after each free: once revoked, its pages may go to
	 * the next malloc (and be readable again as that block) */
	int pairs = 0, revoked = 0;
	for (; pairs < 4096 && !revoked; pairs++) {
		free(p);
		revoked = !readable(a);
		p = malloc(40960); /* takes the queued run back */
		if (!p)
			tu_hard_error("malloc(40960): %s", strerror(errno));
	}
	tu_stats(&s1);
	CHECK(revoked, "a freed 20 KiB run was still readable after %d free/malloc pairs "
	      "(batch=1024): %llu flushes, %llu pages cancelled", pairs,
	      (unsigned long long)(s1.flushes - s0.flushes),
	      (unsigned long long)(s1.pages_cancelled - s0.pages_cancelled));
	CHECK(pairs <= 1024, "a freed run waited %d frees for its revocation (batch=1024)", pairs);
	fprintf(stderr, "batch bound: a freed run revoked after %d free/malloc pairs taken back "
			"(batch=1024); %llu flushes, %llu pages cancelled\n", pairs,
		(unsigned long long)(s1.flushes - s0.flushes),
		(unsigned long long)(s1.pages_cancelled - s0.pages_cancelled));
	free(p);
}

/* ---- kept runs: counted once, applied by the next full flush ---------- */

/* 6. A full flush keeps the newest runs queued (issue 11) without counting
 * them toward the next batch again: freeing 4,000 live 20 KiB runs (20,000
 * pages) takes at most pages / batch_pages full flushes (4; counting kept
 * runs again made every batch after the first a quarter shorter: 6). */
static int keep_count_child(void *arg)
{
	(void)arg;
	enum { N = 4000, SIZE = 20480 };
	static char *p[N];
	struct xpfo_stats a, b;
	xpfo_flush();
	for (int i = 0; i < N; i++)
		if (!(p[i] = malloc(SIZE)))
			return 2;
	xpfo_flush();
	tu_stats(&a);
	for (int i = 0; i < N; i++)
		free(p[i]);
	tu_stats(&b);
	unsigned long long full = b.flush_full - a.flush_full;
	unsigned long long pages = b.pages_queued - a.pages_queued;
	if (full > pages / 4096) {
		fprintf(stderr, "%llu full flushes for %d frees of %llu pages (batch_pages=4096)\n",
			full, N, pages);
		return 3;
	}
	return 0;
}

/* 7. The bound on a kept run: the run freed by the free that filled the
 * gather is kept (still readable), and is revoked within 1.25 batches
 * (1280 frees) of its free, frees taken back by the next malloc included. */
static int keep_bound_child(void *arg)
{
	(void)arg;
	enum { N = 2000, SIZE = 20480 };
	static char *p[N];
	struct xpfo_stats a, b;
	xpfo_flush();
	for (int i = 0; i < N; i++)
		if (!(p[i] = malloc(SIZE)))
			return 2;
	xpfo_flush();
	tu_stats(&a);
	char *x = NULL;
	for (int i = 0; i < N && !x; i++) {
		free(p[i]);
		tu_stats(&b);
		if (b.flush_full != a.flush_full)
			x = p[i];
	}
	if (!x || !readable(x))
		return 4; /* not kept: nothing to show */
	void *q = malloc(40960);
	int pairs = 0;
	for (; pairs < 4096 && q && readable(x); pairs++) {
		free(q);
		q = malloc(40960); /* takes the queued run back */
	}
	if (pairs > 1280) {
		fprintf(stderr, "a kept run waited %d frees for its revocation (batch=1024)\n",
			pairs);
		return 3;
	}
	fprintf(stderr, "kept run revoked after %d free/malloc pairs\n", pairs);
	return 0;
}

static void test_keep(void)
{
	struct tu_child c;
	tu_run_child(keep_count_child, NULL, 60, &c);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "4,000 freed 20 KiB runs: kept runs counted toward the batch again (%s) %s",
	      tu_status_str(c.status), c.err);
	tu_run_child(keep_bound_child, NULL, 60, &c);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "a kept run: not revoked within 1.25 batches (%s) %s", tu_status_str(c.status),
	      c.err);
	fprintf(stderr, "keep: %s", c.err);
}

/* ---- the counted free loop ----------------------------------------------- */

static void marker(const char *s)
{
	/* A write(2) to fd -1: harmless, and visible to strace. */
	long r = syscall(SYS_write, -1, s, strlen(s));
	(void)r;
}

#define D(field) ((unsigned long long)(b.field - a.field))

static int free_loop(size_t n, size_t size)
{
	void **v = malloc(n * sizeof *v);
	struct xpfo_stats a, b;

	if (!v)
		return 5;
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(size);
		if (!v[i])
			return 5;
		memset(v[i], (int)i, size);
	}
	if (tu_x.flush() != 0)
		return 4;
	tu_stats(&a);
	marker("xpfo-test-begin");
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	if (tu_x.flush() != 0)
		return 4;
	marker("xpfo-test-end");
	tu_stats(&b);
	printf("count=%zu size=%zu\n", n, size);
	printf("revoke_syscalls=%llu\n", D(revoke_syscalls));
	printf("grant_syscalls=%llu\n", D(grant_syscalls));
	printf("pages_revoked=%llu\n", D(pages_revoked));
	printf("pages_queued=%llu\n", D(pages_queued));
	printf("pages_cancelled=%llu\n", D(pages_cancelled));
	printf("revoke_queued=%llu\n", D(revoke_queued));
	printf("flushes=%llu\n", D(flushes));
	printf("flush_full=%llu\n", D(flush_full));
	printf("flush_eager=%llu\n", D(flush_eager));
	printf("purges=%llu\n", D(purges));
	printf("madvise_syscalls=%llu\n", D(madvise_syscalls));
	printf("munmap_syscalls=%llu\n", D(munmap_syscalls));
	printf("vmas=%llu\n", (unsigned long long)b.vmas);
	printf("frees=%llu\n", D(frees));
	free(v);
	return 0;
}

struct loop_result {
	unsigned long long revoke_syscalls, grant_syscalls, pages_revoked,
		frees, flushes, pages_cancelled;
};

static unsigned long long field(const char *out, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "\n%s=", name);
	const char *s = strstr(out, key);
	if (!s)
		tu_hard_error("no %s in the free loop's output:\n%s", name, out);
	return strtoull(s + strlen(key), NULL, 10);
}

static void run_loop(const char *opts, struct loop_result *r)
{
	char *argv[] = { "/proc/self/exe", "--free-loop", "10000", "4096", NULL };
	char env[128];
	const char *envset[] = { env, NULL };
	struct tu_child c;

	if (opts)
		snprintf(env, sizeof env, "XPFO_OPTIONS=%s", opts);
	else
		snprintf(env, sizeof env, "XPFO_OPTIONS"); /* unset */
	if (tu_run_cmd(argv, envset, 120, &c) != 0)
		tu_hard_error("cannot run myself");
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
		tu_hard_error("free loop (%s) failed: %s\n%s%s",
			      opts ? opts : "defaults", tu_status_str(c.status),
			      c.out, c.err);
	fprintf(stderr, "free loop, XPFO_OPTIONS=%s:\n%s", opts ? opts : "(unset)",
		c.out);
	/* field() looks for "\nname=": the first line is count=... */
	r->revoke_syscalls = field(c.out, "revoke_syscalls");
	r->grant_syscalls = field(c.out, "grant_syscalls");
	r->pages_revoked = field(c.out, "pages_revoked");
	r->frees = field(c.out, "frees");
	r->flushes = field(c.out, "flushes");
	r->pages_cancelled = field(c.out, "pages_cancelled");
}

/* A block freed and allocated again, `n` times (like calloc/free of 4 MiB in
 * bench/micro: each free of 1,024 pages fills a quarter of batch_pages). */
static int reuse_loop(size_t n, size_t size)
{
	struct xpfo_stats a, b;
	tu_stats(&a);
	for (size_t i = 0; i < n; i++) {
		char *p = malloc(size);
		if (!p)
			return 5;
		p[size / 2] = 1;
		free(p);
	}
	tu_stats(&b);
	printf("count=%zu size=%zu\n", n, size);
	printf("purges=%llu\n", D(purges));
	printf("pages_purged=%llu\n", D(pages_purged));
	return 0;
}

static void run_reuse(const char *opts, unsigned long long *purged)
{
	char *argv[] = { "/proc/self/exe", "--reuse-loop", "200", "4194304", NULL };
	char env[128];
	const char *envset[] = { env, NULL };
	struct tu_child c;

	snprintf(env, sizeof env, "XPFO_OPTIONS=%s", opts);
	if (tu_run_cmd(argv, envset, 120, &c) != 0)
		tu_hard_error("cannot run myself");
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
		tu_hard_error("reuse loop (%s) failed: %s\n%s%s", opts, tu_status_str(c.status),
			      c.out, c.err);
	fprintf(stderr, "reuse loop, XPFO_OPTIONS=%s:\n%s", opts, c.out);
	*purged = field(c.out, "pages_purged");
}

/* revoke=off measures what revocation costs: it keeps the runs a full
 * gather keeps under revoke=batched, else a block freed and taken again
 * at once is released every few frees and refaulted (calloc of 4 MiB was
 * 15x slower than batched). */
static void test_reuse_off(void)
{
	unsigned long long batched, off;
	run_reuse("revoke=batched", &batched);
	run_reuse("revoke=off", &off);
	CHECK(off <= batched + 1024,
	      "200 x malloc/free of 4 MiB: revoke=off purged %llu pages, batched %llu", off,
	      batched);
}

/* Case 8's child: exit 0 when every byte of every new run could be written. */
static int resize_loop(void)
{
	for (int round = 0; round < 4; round++) {
		size_t n = 256 << 10;
		char *p = malloc(n);
		if (!p)
			return 5;
		memset(p, 1, n);
		for (int i = 0; i < 6; i++) { /* by a quarter at most: in place */
			size_t m = n + (n / 8 & ~(size_t)4095);
			char *q = realloc(p, m);
			if (!q)
				return 5;
			memset(q + n, 2, m - n);
			p = q;
			n = m;
		}
		p = realloc(p, n / 2); /* shrunk in place: a new guard */
		if (!p)
			return 5;
		p[n / 2 - 1] = 3;
		char *h = malloc(8 << 20);
		if (!h)
			return 5;
		memset(h, 4, 8 << 20);
		h = realloc(h, 6 << 20); /* the tail closed */
		if (!h)
			return 5;
		h = realloc(h, 7 << 20); /* and opened again */
		if (!h)
			return 5;
		memset(h, 5, 7 << 20);
		free(h);
		free(p);
		char *r[64];
		for (int i = 0; i < 64; i++) {
			size_t sz = (size_t)(i % 16 + 1) * 20480;
			if (!(r[i] = malloc(sz)))
				return 5;
			memset(r[i], 6, sz);
		}
		for (int i = 0; i < 64; i++)
			free(r[i]);
	}
	printf("resized and reused: ok\n");
	return 0;
}

/* Case 9's child. */
static int append_loop(void)
{
	struct xpfo_stats a, b;
	char *p = malloc(64);
	unsigned long moves = 0;
	tu_stats(&a);
	for (size_t n = 128; n <= (1u << 20); n += 64) {
		char *q = realloc(p, n);
		if (!q)
			return 5;
		moves += q != p;
		p = q;
		p[n - 1] = 1;
	}
	tu_stats(&b);
	free(p);
	printf("append loop\nmoves=%lu\nprotection_calls=%llu\n", moves,
	       (unsigned long long)(b.grant_syscalls - a.grant_syscalls + b.revoke_syscalls -
				    a.revoke_syscalls));
	return 0;
}

static void test_append(void)
{
	char *argv[] = { "/proc/self/exe", "--append-loop", NULL };
	const char *envset[] = { "XPFO_OPTIONS=revoke=batched", NULL };
	struct tu_child c;
	if (tu_run_cmd(argv, envset, 120, &c) != 0)
		tu_hard_error("cannot run myself");
	if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
		tu_hard_error("append loop failed: %s\n%s%s", tu_status_str(c.status), c.out, c.err);
	unsigned long long moves = field(c.out, "moves"), calls = field(c.out, "protection_calls");
	CHECK(moves <= 64 && calls <= 100,
	      "appending 64 B at a time up to 1 MiB: %llu moves (at most 64), %llu protection "
	      "calls (at most 100)", moves, calls);
	fprintf(stderr, "append to 1 MiB: %llu moves, %llu protection calls\n", moves, calls);
}

/* Runs this program with flag in a child under XPFO_OPTIONS=opts. */
static void run_self(const char *flag, const char *opts, struct tu_child *c)
{
	char *argv[] = { "/proc/self/exe", (char *)flag, NULL };
	char env[128];
	const char *envset[] = { env, NULL };
	snprintf(env, sizeof env, "XPFO_OPTIONS=%s", opts);
	if (tu_run_cmd(argv, envset, 120, c) != 0)
		tu_hard_error("cannot run myself");
}

static void test_resize_reuse(const char *opts)
{
	struct tu_child c;
	run_self("--resize-loop", opts, &c);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "%s: runs resized in place, freed, and their pages reused: %s\n%s%s", opts,
	      tu_status_str(c.status), c.out, c.err);
	fprintf(stderr, "resize and reuse, XPFO_OPTIONS=%s: %s", opts, c.out);
}

/* 10. Best fit among the long queued runs (in a child: its gather starts
 * empty).  Prints the two runs' addresses and what the second mallocs got. */
static int bestfit_child(void)
{
	const size_t a = 40 * page, b = 50 * page;
	xpfo_flush();
	char *p = malloc(a), *q = malloc(b);
	if (!p || !q)
		return 2;
	p[0] = q[0] = 1;
	free(p);
	free(q); /* the newest queued run */
	char *p2 = malloc(a), *q2 = malloc(b);
	if (!p2 || !q2)
		return 2;
	printf("40 pages at %p, 50 at %p; again: 40 at %p, 50 at %p\n", (void *)p, (void *)q,
	       (void *)p2, (void *)q2);
	return p2 == p && q2 == q ? 0 : 3;
}

static void test_bestfit(const char *opts)
{
	struct tu_child c;
	run_self("--bestfit", opts, &c);
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "%s: queued runs of 40 and 50 pages not taken back each by its own size: %s\n%s%s",
	      opts, tu_status_str(c.status), c.out, c.err);
	fprintf(stderr, "best fit, XPFO_OPTIONS=%s: %s", opts, c.out);
}

static void test_counts(void)
{
	struct loop_result def, eager;
	const unsigned long long n = 10000, pages = n * 4096 / page;

	/* the heap keeps no empty slab (keep_empty=0): its 16 MiB of them by
	 * default would hold a third of the 4 KiB blocks' slabs unrevoked */
	run_loop("keep_empty=0", &def);
	run_loop("revoke=eager,keep_empty=0", &eager);

	CHECK(def.frees == n && eager.frees == n,
	      "frees counted %llu (default) / %llu (eager), expected %llu",
	      def.frees, eager.frees, n);
	/* The loop must really revoke what it freed, else a ratio means
	 * nothing: at least 90% of the freed pages revoked in each mode. */
	CHECK(def.pages_revoked * 10 >= pages * 9,
	      "default: %llu of %llu freed pages revoked after xpfo_flush",
	      def.pages_revoked, pages);
	CHECK(eager.pages_revoked * 10 >= pages * 9,
	      "revoke=eager: %llu of %llu freed pages revoked",
	      eager.pages_revoked, pages);
	CHECK(def.revoke_syscalls >= 1,
	      "default: %llu pages revoked with no revocation syscall",
	      def.pages_revoked);
	CHECK(eager.revoke_syscalls >= 20 * def.revoke_syscalls,
	      "revocation syscalls: default %llu, eager %llu: ratio %.1f < 20",
	      def.revoke_syscalls, eager.revoke_syscalls,
	      def.revoke_syscalls ? (double)eager.revoke_syscalls /
					    (double)def.revoke_syscalls : 0.0);
	fprintf(stderr, "revocation syscalls for 10000 frees of 4096 B + "
			"xpfo_flush: default %llu, eager %llu (%.1fx); grants "
			"%llu / %llu; pages per syscall %.1f / %.1f\n",
		def.revoke_syscalls, eager.revoke_syscalls,
		def.revoke_syscalls ? (double)eager.revoke_syscalls /
					      (double)def.revoke_syscalls : 0.0,
		def.grant_syscalls, eager.grant_syscalls,
		def.revoke_syscalls ? (double)def.pages_revoked /
					      (double)def.revoke_syscalls : 0.0,
		eager.revoke_syscalls ? (double)eager.pages_revoked /
						(double)eager.revoke_syscalls : 0.0);
}

int main(int argc, char **argv)
{
	tu_prog = "revoke";
	page = (size_t)sysconf(_SC_PAGESIZE);

	if (argc >= 2 && strcmp(argv[1], "--free-loop") == 0) {
		tu_prog = "revoke --free-loop";
		tu_xpfo_init(1);
		size_t n = argc >= 3 ? strtoul(argv[2], NULL, 10) : 10000;
		size_t size = argc >= 4 ? strtoul(argv[3], NULL, 10) : 4096;
		if (!n || !size)
			tu_hard_error("usage: revoke --free-loop [N [SIZE]]");
		return free_loop(n, size);
	}
	if (argc == 4 && strcmp(argv[1], "--reuse-loop") == 0) {
		tu_prog = "revoke --reuse-loop";
		tu_xpfo_init(1);
		return reuse_loop(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
	}
	if (argc == 2 && strcmp(argv[1], "--append-loop") == 0) {
		tu_prog = "revoke --append-loop";
		tu_xpfo_init(1);
		return append_loop();
	}
	if (argc == 2 && strcmp(argv[1], "--resize-loop") == 0) {
		tu_prog = "revoke --resize-loop";
		tu_xpfo_init(1);
		return resize_loop();
	}
	if (argc >= 5 && strcmp(argv[1], "--uaf") == 0) {
		tu_prog = "revoke --uaf";
		tu_xpfo_init(1);
		size_t n = strtoul(argv[2], NULL, 10);
		size_t off = strtoul(argv[3], NULL, 10);
		if (!n || off >= n)
			tu_hard_error("usage: revoke --uaf SIZE OFF r|w [noflush]");
		return uaf(n, off, argv[4][0] == 'w',
			   !(argc >= 6 && strcmp(argv[5], "noflush") == 0));
	}

	if (argc == 2 && strcmp(argv[1], "--bestfit") == 0) {
		tu_prog = "revoke --bestfit";
		tu_xpfo_init(1);
		return bestfit_child();
	}
	if (argc == 2 && strcmp(argv[1], "--degraded-calloc") == 0) {
		tu_prog = "revoke --degraded-calloc";
		tu_xpfo_init(1);
		return degraded_calloc();
	}

	tu_timeout(300);
	tu_xpfo_init(1);
	test_uaf();
	uaf_exec("revoke=eager", "65536", "100", "r", "noflush", 1);
	uaf_exec("revoke=eager", "2097152", "2097151", "w", "noflush", 1);
	uaf_exec("revoke=batched", "65536", "0", "r", "flush", 1);
	uaf_exec("revoke=off", "65536", "100", "r", "flush", 0);
	test_counts();
	test_reuse_off();
	test_degraded_calloc();
	test_batch_bound();
	test_coalesce();
	test_keep();
	test_resize_reuse("revoke=batched");
	test_resize_reuse("revoke=off");
	test_append();
	test_bestfit("profile=default");
	test_bestfit("profile=light");
	tu_exit();
}
