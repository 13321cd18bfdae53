/* keepempty.c - a thread heap keeps a bounded number of its empty slabs
 * (alloc/slab.c, slab_keep_empty: at most keep_empty pages, 4,096 by
 * default, 64 in the strict profile) instead of retiring each at once; when
 * its thread exits, they stay with their compartment as spares for its next
 * thread, at most 1,024 pages of them a compartment (slab_spare), and the
 * rest retire (issue 11: a program of short threads revoked and granted a
 * thread's slabs at every exit; hash faulted its slabs in again at every
 * round).  Past 64 kept pages, fresh pages the heap takes retire as many
 * kept ones (slab_shed_kept).
 *
 * A thread fills 200 one-page slabs (25,600 blocks of 24 bytes, 128 to a
 * slab) and frees every block: each retired slab is one range queued for
 * revocation (revoke_queued).  Under keep_empty=64 between 2 and 65 slabs
 * must stay (64 kept, and the one the heap allocates from, which never
 * retires) and none is shed; under the default none retires.  After its
 * exit, every slab is retired or a spare (spare_bytes), no more than 1,024
 * pages.  Then six threads do the same at once and exit together: spares
 * from more than one of them, still no more than 1,024 pages (1,200 were
 * empty).  Last, a new thread that allocates 1,024 slabs' worth of blocks
 * takes every spare (none is left).
 *
 * Shedding (default bound): a thread that kept its 199 empty slabs takes
 * 20 runs of 64 KiB on fresh pages: 135 kept pages retire (down to 64),
 * counted in pages_shed, and no more.
 *
 * Each run in a process of its own (the test run again with the option),
 * so that no other thread allocates. */
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define SLABS 200
#define PER_SLAB 128 /* 24 bytes (+ an 8-byte canary): the 32-byte class */
#define SPARE_MAX 1024 /* pages (alloc/slab.c SPARE_PAGES) */
#define NTOGETHER 6
#define KEEP_BASE 64  /* pages kept whatever is shed (alloc/heap.h) */
#define RUNS 20
#define PAGE 4096u
static void *blocks[NTOGETHER][SLABS * PER_SLAB];
static struct xpfo_stats s0, s1, s2;
static pthread_barrier_t together;

static void *fill_free(void *arg)
{
	void **b = arg;
	for (int i = 0; i < SLABS * PER_SLAB; i++)
		if (!(b[i] = xpfo_malloc(24)))
			return "malloc failed";
	for (int i = 0; i < SLABS * PER_SLAB; i++)
		xpfo_free(b[i]);
	return NULL;
}

static void *one(void *arg)
{
	void *r = fill_free(arg);
	xpfo_stats_get(&s1, sizeof s1);
	return r;
}

static void *together_one(void *arg)
{
	void *r = fill_free(arg);
	pthread_barrier_wait(&together);
	return r;
}

static void *taker(void *arg)
{
	(void)arg;
	for (int i = 0; i < SPARE_MAX * PER_SLAB; i++)
		if (!xpfo_malloc(24))
			return "malloc failed";
	xpfo_stats_get(&s2, sizeof s2);
	return NULL;
}

/* fills and frees, then takes fresh runs: s1 after the frees, s2 after */
static void *shedder(void *arg)
{
	void *r = fill_free(arg);
	xpfo_stats_get(&s1, sizeof s1);
	for (int i = 0; !r && i < RUNS; i++)
		if (!xpfo_malloc(65536))
			r = "malloc failed";
	xpfo_stats_get(&s2, sizeof s2);
	return r;
}

static int run(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *err;
	return pthread_create(&t, NULL, fn, arg) || pthread_join(t, &err) || err;
}

#define D(a, b, f) ((unsigned long long)((b).f - (a).f))

/* One thread, then NTOGETHER, then a taker; kept: the heap's bound in pages. */
static int keep(unsigned long kept)
{
	xpfo_stats_get(&s0, sizeof s0);
	if (run(one, blocks[0]))
		return 99;
	xpfo_stats_get(&s2, sizeof s2);
	unsigned long long retired = D(s0, s1, revoke_queued), at_exit = D(s0, s2, revoke_queued);
	unsigned long long spare = s2.spare_bytes / PAGE, shed = D(s0, s1, pages_shed);
	printf("keep_empty %lu: one thread: retired while running %llu, shed %llu, after exit "
	       "%llu, spares %llu\n", kept, retired, shed, at_exit, spare);
	unsigned long long lo = kept >= SLABS ? 0 : SLABS - kept - 1;
	if (retired < lo || retired > (kept >= SLABS ? 0 : SLABS - 2) || shed ||
	    at_exit + spare != SLABS || spare > SPARE_MAX)
		return 1;
	pthread_t t[NTOGETHER];
	if (pthread_barrier_init(&together, NULL, NTOGETHER))
		return 99;
	for (int i = 0; i < NTOGETHER; i++)
		if (pthread_create(&t[i], NULL, together_one, blocks[i]))
			return 99;
	for (int i = 0; i < NTOGETHER; i++)
		if (pthread_join(t[i], NULL))
			return 99;
	xpfo_stats_get(&s1, sizeof s1);
	spare = s1.spare_bytes / PAGE;
	printf("%d threads: spares %llu\n", NTOGETHER, spare);
	if (spare > SPARE_MAX || spare <= SLABS)
		return 2;
	if (run(taker, NULL))
		return 99;
	printf("after a thread took them: spares %llu\n",
	       (unsigned long long)(s2.spare_bytes / PAGE));
	return s2.spare_bytes ? 3 : 0;
}

static int shed(void)
{
	xpfo_stats_get(&s0, sizeof s0);
	if (run(shedder, blocks[0]))
		return 99;
	unsigned long long kept = SLABS - D(s0, s1, revoke_queued), shed = D(s1, s2, pages_shed);
	printf("shedding: %llu slabs kept or current, %llu pages shed for %d fresh runs of 16 "
	       "pages\n", kept, shed, RUNS);
	/* all kept but the current one, then all shed but KEEP_BASE */
	if (D(s0, s1, pages_shed) || kept < SLABS - 1)
		return 1;
	return shed >= SLABS - KEEP_BASE - 2 && shed <= SLABS - KEEP_BASE ? 0 : 2;
}

static void check(const char *opts, const char *what, const char *arg, const char *why)
{
	char *argv[] = { "/proc/self/exe", (char *)what, (char *)arg, NULL };
	const char *env[] = { opts, NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 120, &r))
		tu_hard_error("cannot run the child");
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99)
		tu_hard_error("child: allocation failed; %s", r.err);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s: %s: %s; %s%s", opts, why,
	      tu_status_str(r.status), r.out, r.err);
	fprintf(stderr, "%s: %s", opts, r.out);
}

int main(int argc, char **argv)
{
	tu_prog = "keepempty";
	if (argc == 3 && !strcmp(argv[1], "--keep"))
		return keep(strtoul(argv[2], NULL, 10));
	if (argc == 2 && !strcmp(argv[1], "--shed"))
		return shed();
	check("XPFO_OPTIONS=keep_empty=64", "--keep", "64",
	      "2..65 empty slabs stay with a running thread, none shed; at its exit spares, at "
	      "most 1,024 pages (also from six threads at once); a new thread takes them");
	check("XPFO_OPTIONS", "--keep", "4096",
	      "every empty slab stays with a running thread (default bound); at its exit spares, "
	      "at most 1,024 pages; a new thread takes them");
	check("XPFO_OPTIONS", "--shed", NULL,
	      "fresh runs taken by a heap keeping 199 empty slabs retire all but 64 of them");
	tu_exit();
}
