/* failclosed.c - a compartment whose close fails stays closed, and a thread
 * started inside a STRICT compartment is refused cleanly (mprotect backend).
 *
 * 1. Injected: every mprotect of the close walk fails with ENOMEM
 *    (xpfo__test_inject) as the last thread leaves compartment "secret".
 * 2. Real: the program fills its own VMA budget (vm.max_map_count) with
 *    splits of a mapping of its own, and then leaves "secret", whose pages
 *    (a block transferred from root) sit inside a read-write VMA of root's
 *    (guard_large=0: no guard page between the blocks), so the close must
 *    split it.
 *    In both, after xpfo_leave: the secret bytes are not readable by root
 *    (probed with write(2) into a pipe: EFAULT or other bytes), errno is
 *    the caller's, exactly one "xpfo: error: " line was written, stats
 *    close_failures is 1; the compartment is poisoned (xpfo_enter and
 *    xpfo_malloc_in fail with EIO, destroy works), and another compartment
 *    opens and closes correctly afterwards (VMAs free again).
 * 3. A thread created while a STRICT compartment is entered: its first
 *    allocation ends with one "xpfo: fatal: " line and SIGABRT (not a
 *    raw crash).
 * 4. realloc growing a guarded 256 KiB page run in place (its guard moves to the
 *    new end): the grant fails (injected ENOMEM), so the block moves, with
 *    its bytes; nothing is said, and the old guard page is still closed
 *    (write(2) from it: EFAULT).  When closing that guard again fails too,
 *    exactly one "xpfo: error: " line says the run ends unguarded.
 *
 * Usage: failclosed (--real: case 2 itself, run by the test).
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RUN (64u << 10)

/* Does any page of p[0..n) still show byte b to this process? */
static bool shows(const void *p, size_t n, unsigned char b)
{
	int fd[2];
	static unsigned char buf[ISO_PAGE];
	bool seen = false;
	if (pipe(fd))
		tu_hard_error("pipe: %s", strerror(errno));
	for (size_t off = 0; off < n && !seen; off += ISO_PAGE) {
		size_t len = n - off < ISO_PAGE ? n - off : ISO_PAGE;
		ssize_t w = write(fd[1], (const char *)p + off, len);
		if (w <= 0)
			continue; /* EFAULT: closed */
		if (read(fd[0], buf, (size_t)w) != w)
			tu_hard_error("pipe read");
		seen = iso_count_byte(buf, (size_t)w, b) == (size_t)w;
	}
	close(fd[0]);
	close(fd[1]);
	return seen;
}

static uint64_t close_failures(void)
{
	struct xpfo_stats s;
	if (xpfo_stats_get(&s, sizeof s))
		tu_hard_error("xpfo_stats_get");
	return s.close_failures;
}

/* After the failed close: the checks both cases share (exit codes name
 * which one failed). */
static int after_failure(xpfo_compartment_t *c, int leave_errno, void *secret, size_t n)
{
	if (leave_errno != EDOM)
		return 10;
	if (shows(secret, n, 0x5a))
		return 11;
	if (close_failures() != 1)
		return 12;
	/* VMAs are free again: another compartment closes and reopens */
	xpfo_compartment_t *d = xpfo_compartment_create("other", 0);
	xpfo_compartment_t *prev = xpfo_enter(d);
	unsigned char *q = malloc(RUN);
	if (!prev || !q)
		return 13;
	memset(q, 0x6c, RUN);
	xpfo_leave(prev);
	if (shows(q, RUN, 0x6c))
		return 14;
	if (xpfo_enter(d) != prev || !shows(q, RUN, 0x6c))
		return 15;
	free(q);
	xpfo_leave(prev);
	if (xpfo_compartment_destroy(d))
		return 16;
	/* the failed one is poisoned, not silently open */
	errno = 0;
	if (xpfo_enter(c) != NULL || errno != EIO)
		return 17;
	errno = 0;
	if (xpfo_malloc_in(c, 100) != NULL || errno != EIO)
		return 18;
	if (xpfo_compartment_destroy(c))
		return 19;
	return 0;
}

static int injected_case(void *arg)
{
	(void)arg;
	xpfo_compartment_t *c = xpfo_compartment_create("secret", 0);
	xpfo_compartment_t *prev = xpfo_enter(c);
	unsigned char *p = malloc(RUN), *small = malloc(100);
	if (!prev || !p || !small)
		return 2;
	memset(p, 0x5a, RUN);
	memset(small, 0x5a, 100);
	xpfo__test_inject(TU_OS_PROTECT, ENOMEM, 0, 1000000);
	errno = EDOM;
	xpfo_leave(prev);
	int e = errno;
	xpfo__test_inject(TU_OS_PROTECT, 0, 0, 0);
	if (shows(small, 100, 0x5a))
		return 3;
	return after_failure(c, e, p, RUN);
}

static long max_map_count(void)
{
	long max = 65530;
	char buf[32];
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f && fgets(buf, sizeof buf, f))
		max = atol(buf);
	if (f)
		fclose(f);
	return max;
}

/* Split a mapping of our own until mprotect says ENOMEM: the process is
 * at vm.max_map_count.  Returns the mapping (to unmap) and its size.  It
 * allocates nothing (the allocator must not change the VMAs afterwards). */
static void *fill_vmas(long max, size_t *len)
{
	*len = ((size_t)max * 2 + 64) * ISO_PAGE;
	char *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	size_t k = 1;
	for (; (k + 2) * ISO_PAGE < *len; k += 2)
		if (mprotect(m + k * ISO_PAGE, ISO_PAGE, PROT_READ))
			break;
	/* one split more at the tail, where no merge can happen */
	mprotect(m + *len - ISO_PAGE, ISO_PAGE, PROT_READ);
	return m;
}

static int real_case(void *arg)
{
	(void)arg;
	long max = max_map_count();
	xpfo_compartment_t *c = xpfo_compartment_create("secret", 0);
	/* root blocks around the one that goes to c: one read-write VMA */
	unsigned char *a = malloc(RUN), *p = malloc(RUN), *b = malloc(RUN);
	if (!a || !p || !b)
		return 2;
	memset(a, 1, RUN);
	memset(b, 1, RUN);
	xpfo_compartment_t *prev = xpfo_enter(c);
	if (!prev || xpfo_transfer(p, c))
		return 3;
	memset(p, 0x5a, RUN);
	size_t len;
	xpfo_flush(); /* nothing queued: the leave changes no VMA but c's */
	void *m = fill_vmas(max, &len);
	if (!m)
		return 4;
	errno = EDOM;
	xpfo_leave(prev);
	int e = errno;
	munmap(m, len);
	if (close_failures() == 0 && !shows(p, RUN, 0x5a))
		return 77; /* the close needed no split here: nothing shown */
	return after_failure(c, e, p, RUN);
}

/* Run fn in a child (or, with fn NULL, this program again with --real and
 * guard_large=0, so that the block sits between root's blocks with no
 * guard page between them); it must exit 0 having written exactly one
 * line, an "xpfo: error: " one. */
static void one_error_line(const char *name, int (*fn)(void *))
{
	struct tu_child res;
	static const char *const real[] = { "--real", NULL };
	if (fn ? tu_run_child(fn, NULL, 60, &res) : iso_run_self("guard_large=0", real, 60, &res))
		tu_hard_error("fork: %s", strerror(errno));
	if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == 77) {
		fprintf(stderr, "skip %s: the close needed no VMA split on this layout\n", name);
		return;
	}
	int lines = 0, errors = 0;
	for (const char *l = res.err; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		lines++;
		errors += !strncmp(l, "xpfo: error: ", 13);
	}
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0, "%s: %s (exit codes: see "
	      "after_failure)", name, tu_status_str(res.status));
	CHECK(lines == 1 && errors == 1, "%s: want exactly one xpfo: error: line, got:\n%s", name,
	      res.err);
	if (!tu_failures)
		fprintf(stderr, "ok   %s: %s", name, res.err);
}

/* ---- realloc in place whose grant fails -------------------------------- */

/* A 256 KiB run with its guard page grows by 3 pages in place: protect
 * calls are the new guard (allowed), the grant (fails), then with `both`
 * the old guard's closing again (fails). */
static int grow_fails(void *arg)
{
	bool both = arg != NULL;
	size_t old = 256u << 10;
	unsigned char *p = malloc(old);
	if (!p)
		return 97;
	memset(p, 0x5a, old);
	void *guard = (void *)((uintptr_t)p + old); /* a page past the block */
	if (xpfo__test_inject(TU_OS_PROTECT, ENOMEM, 1, both ? 2 : 1))
		return 96;
	unsigned char *q = realloc(p, old + 3 * 4096);
	xpfo__test_inject(TU_OS_PROTECT, 0, 0, 0);
	if (!q)
		return 95;
	if (q == p)
		return 94; /* the grant did not fail: in place */
	for (size_t i = 0; i < old; i++)
		if (q[i] != 0x5a)
			return 93;
	int fd[2];
	if (pipe(fd))
		return 92;
	ssize_t w = write(fd[1], guard, 1);
	if (!both && !(w < 0 && errno == EFAULT))
		return 91; /* the old guard page opened */
	return 0;
}

static int grow_fails_both(void *arg)
{
	(void)arg;
	return grow_fails((void *)1);
}

static void grow_cases(void)
{
	struct tu_child res;
	struct tu_case quiet = { "realloc in place: grant fails", grow_fails, NULL, 0, 0,
				 TU_ERR_EMPTY, NULL, NULL, NULL };
	CHECK(tu_run_case(&quiet, 30, &res) == 0, "realloc in place, grant fails: %s",
	      res.err);
	one_error_line("realloc in place: grant and the guard's closing fail", grow_fails_both);
}

/* ---- a thread started inside a STRICT compartment --------------------- */

static void *alloc_thread(void *arg)
{
	(void)arg;
	char *p = malloc(100);
	if (p)
		memset(p, 1, 100);
	free(p);
	return NULL;
}

static int strict_thread(void *arg)
{
	(void)arg;
	iso_stdio_warmup();
	xpfo_compartment_t *s = xpfo_compartment_create("strict", XPFO_COMPARTMENT_STRICT);
	if (!xpfo_enter(s))
		return 2;
	tu_expect("xpfo: fatal: thread <N> started while STRICT compartment \"strict\" is entered: "
		   "the root heap it starts in is closed (unsupported)");
	pthread_t t;
	if (pthread_create(&t, NULL, alloc_thread, NULL))
		return 3;
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	tu_prog = "failclosed";
	if (argc > 1 && !strcmp(argv[1], "--real"))
		return real_case(NULL);
	tu_xpfo_init(1);
	if (strcmp(xpfo_backend(), "mprotect"))
		tu_on_mprotect(argv, xpfo_backend(), "the mprotect backend's close");
	iso_stdio_warmup();
	one_error_line("injected ENOMEM", injected_case);
	one_error_line("real ENOMEM (VMA limit)", NULL);
	grow_cases();
	struct tu_case sc = { "thread started inside STRICT", strict_thread, NULL, SIGABRT };
	CHECK(tu_run_case(&sc, 30, NULL) == 0, "thread started inside STRICT");
	tu_exit();
}
