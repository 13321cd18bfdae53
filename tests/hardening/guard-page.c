/* guard-page.c - a write past the end of a page run (> 16 KiB) hits the
 * inaccessible page after it (guard_large, on in default and strict), and a
 * linear overflow out of a slab hits the guard page after the slab
 * (guard_slabs=N: every Nth slab; strict has 1, default 64, light 0):
 *
 *   xpfo: violation: write of <a> owned by the allocator (guard page) from thread <tid> in compartment "root"
 *
 * then SIGSEGV (page runs, huge blocks, slabs).  With the guard off the message never names a guard page:
 * the write lands wherever the next page is (in these programs usually a
 * free page of the allocator, which faults too: XPFO's revocation, not the
 * guard, stops it then).
 */
#include "harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define GUARD "owned by the allocator (guard page)"

static int c_run(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	memset(p, 1, 65536);
	h_expect_violation("write", p + 65536, GUARD);
	((volatile char *)p)[65536] = 'A';
	return 0;
}

/* An odd size: the run is rounded to whole pages; the guard follows them. */
static int c_run_odd(const char *a)
{
	(void)a;
	char *p = malloc(70000);
	if (!p)
		return 97;
	size_t end = (70000 + h_page() - 1) & ~(h_page() - 1);
	h_expect_violation("write", p + end, GUARD);
	for (size_t i = 70000; i <= end; i++)
		((volatile char *)p)[i] = 'A';
	return 0;
}

/* realloc shrinks the run in place: the guard moves to the new end. */
static int c_run_shrunk(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	char *q = realloc(p, 32768);
	if (!q)
		return 97;
	h_expect_violation("write", q + 32768, GUARD);
	((volatile char *)q)[32768] = 'A';
	return 0;
}

/* realloc grows the run in place over the free pages after its guard: the
 * old guard page becomes the run's (writable), the guard moves to the new
 * end (a run of 256 KiB or more growing by a quarter at most: smaller or
 * larger growths move).  Exit 96 if the block moved: the in-place path was
 * not taken. */
static int c_run_grown(const char *a)
{
	(void)a;
	size_t old = 256u << 10;
	char *p = malloc(old);
	if (!p)
		return 97;
	memset(p, 7, old);
	size_t n = old + 3 * h_page();
	char *q = realloc(p, n);
	if (!q)
		return 97;
	if (q != p)
		return 96;
	for (size_t i = 0; i < old; i++)
		if (q[i] != 7)
			return 95;
	/* realloc gives a grown run some room: the guard follows it */
	size_t u = malloc_usable_size(q);
	if (u < n)
		return 94;
	memset(q + old, 1, u - old); /* the old guard page included */
	h_expect_violation("write", q + u, GUARD);
	((volatile char *)q)[u] = 'A';
	return 0;
}

/* A freed run not yet revoked serves a smaller guarded run of its thread
 * from its tail, which ends at the same guard page (no protection change,
 * alloc/gather.c take_at); the rest, its head, stays queued and is revoked
 * at the next flush.  "head": the write lands in the head, revoked; else
 * past the new run's end, on the guard.  Exit 96 if the smaller run was
 * not placed at the tail (strict quarantines freed runs: none is taken
 * back, and it is not run there). */
static int c_run_tail(const char *a)
{
	char *p, *q;
	int e = h_run_tail(&p, &q);
	if (e)
		return e;
	memset(q, 2, 32768);
	xpfo_flush();
	if (h_arg_long(a, "head", 0)) {
		h_expect_violation("write", p + 100,
				   "owned by the allocator (free page, revoked 0 flushes ago)");
		((volatile char *)h_opaque(p))[100] = 'A';
	} else {
		h_expect_violation("write", q + 32768, GUARD);
		((volatile char *)q)[32768] = 'A';
	}
	return 0;
}

/* A huge block (whole segments) of exactly 4 MiB: guard_large adds a page,
 * so the rest of its last segment stays inaccessible behind it. */
static int c_huge(const char *a)
{
	(void)a;
	size_t n = 4u << 20;
	char *p = malloc(n);
	if (!p)
		return 97;
	h_expect_violation("write", p + n, GUARD);
	((volatile char *)p)[n] = 'A';
	return 0;
}

/* A linear overflow from a small block to the end of its slab's pages. */
static int c_slab(const char *a)
{
	(void)a;
	char *p = malloc(200);
	if (!p)
		return 97;
	unsigned long end = h_mapping_end(p);
	if (!end)
		return 97;
	h_expect_violation("write", (void *)end, GUARD);
	for (volatile char *b = p;; b++)
		*b = 'A';
	return 0;
}

static const struct hcase cases[] = {
	{ "run", c_run },
	{ "run-odd-size", c_run_odd },
	{ "run-shrunk", c_run_shrunk },
	{ "run-grown", c_run_grown },
	{ "huge", c_huge },
	{ "slab-linear", c_slab },
	{ "run-tail", c_run_tail },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"
#define ON(c, o) { c, o, HX_DETECT, SIGSEGV, NULL, NULL, "guard on" }
#define OFF(c, o) { c, o, HX_NOT, 0, NULL, NULL, "guard off: no guard page" }

static const struct hrun runs[] = {
	ON("run", "profile=default"),
	ON("run", "profile=strict"),
	ON("run", "profile=light,guard_large=1"),
	OFF("run", "profile=light"),
	OFF("run", "profile=default,guard_large=0"),
	OFF("run", "profile=strict,guard_large=0"),
	ON("run-odd-size", "profile=default"),
	ON("run-odd-size", "profile=strict"),
	OFF("run-odd-size", "profile=light"),
	OFF("run-odd-size", "profile=default,guard_large=0"),
	ON("run-shrunk", "profile=default"),
	ON("run-shrunk", "profile=strict"),
	OFF("run-shrunk", "profile=light"),
	OFF("run-shrunk", "profile=default,guard_large=0"),
	ON("run-grown", "profile=default"),
	ON("run-grown", "profile=strict"),
	{ "run-grown", "profile=default,revoke=off", HX_NOT, 0, NULL,
	  "xpfo: warning: revoke=off: freed pages stay reachable; for measurement only",
	  "guard off: revoke=off closes no page, as for a new run (a guard closed there was "
	  "never opened again: its page's next owner faulted)" },
	{ "run", "profile=default,revoke=off", HX_NOT, 0, NULL,
	  "xpfo: warning: revoke=off: freed pages stay reachable; for measurement only",
	  "guard off: revoke=off changes no protection" },
	ON("run-grown", "profile=default,release=uffd"),
	ON("run-tail", "profile=default"),
	{ "run-tail", "profile=default", HX_DETECT, SIGSEGV, "head=1", NULL,
	  "the queued run's head, left when its tail was taken back, is revoked" },
	ON("huge", "profile=default"),
	ON("huge", "profile=strict"),
	OFF("huge", "profile=light"),
	OFF("huge", "profile=default,guard_large=0"),
	ON("slab-linear", "profile=strict"),
	ON("slab-linear", "profile=default,guard_slabs=1"),
	ON("slab-linear", "profile=light,guard_slabs=1"),
	OFF("slab-linear", "profile=light"),
	OFF("slab-linear", "profile=strict,guard_slabs=0"),
	OFF("slab-linear", "profile=default,guard_slabs=0"),
	{ "run", "profile=default,guard_large=2", HX_DETECT, SIGSEGV, NULL, WARN("guard_large"),
	  "bad value: default (on) kept" },
	{ "slab-linear", "profile=strict,guard_slabs=every", HX_DETECT, SIGSEGV, NULL,
	  WARN("guard_slabs"), "bad value: strict's 1 kept" },
	{ "slab-linear", "profile=strict,guard_slabs=65537", HX_DETECT, SIGSEGV, NULL,
	  WARN("guard_slabs"), "out of range: strict's 1 kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "guard-page", cases, NELEM(cases), runs, NELEM(runs));
}
