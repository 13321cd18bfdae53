/* keepempty.c - a thread heap keeps a bounded number of its empty slabs
 * (alloc/slab.c, slab_keep_empty: at most 64 pages) instead of retiring
 * each at once; when its thread exits, they stay with their compartment as
 * spares for its next thread, at most 128 pages of them a compartment
 * (slab_spare), and the rest retire (issue 11: a program of short threads
 * revoked and granted a thread's slabs at every exit).
 *
 * A thread fills 200 one-page slabs (25,600 blocks of 24 bytes, 128 to a
 * slab) and frees every block: each retired slab is one range queued for
 * revocation (revoke_queued), so between 2 and 65 slabs must stay (64
 * kept, and the one the heap allocates from, which never retires).  After
 * its exit, every slab is retired or a spare (spare_bytes), no more than
 * 128 pages.  Then three threads do the same at once and exit together:
 * spares from more than one of them, still no more than 128 pages.  Last,
 * a new thread that allocates 128 slabs' worth of blocks takes every spare
 * (none is left).  In a child, so that no other thread allocates. */
#include "testutil.h"

#include <pthread.h>
#include <sys/wait.h>

#define SLABS 200
#define PER_SLAB 128 /* 24 bytes (+ an 8-byte canary): the 32-byte class */
#define SPARE_MAX 128 /* pages (alloc/slab.c SPARE_PAGES) */
#define PAGE 4096u
static void *blocks[3][SLABS * PER_SLAB];
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

static void *three(void *arg)
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

static int run(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *err;
	return pthread_create(&t, NULL, fn, arg) || pthread_join(t, &err) || err;
}

static int keep(void *arg)
{
	(void)arg;
	xpfo_stats_get(&s0, sizeof s0);
	if (run(one, blocks[0]))
		return 99;
	xpfo_stats_get(&s2, sizeof s2);
	uint64_t retired = s1.revoke_queued - s0.revoke_queued;
	uint64_t at_exit = s2.revoke_queued - s0.revoke_queued;
	uint64_t spare = s2.spare_bytes / PAGE;
	fprintf(stderr, "one thread: retired while running %llu, after exit %llu, spares %llu\n",
		(unsigned long long)retired, (unsigned long long)at_exit, (unsigned long long)spare);
	if (retired < SLABS - 65 || retired >= SLABS - 1 || at_exit + spare != SLABS ||
	    spare > SPARE_MAX)
		return 1;
	pthread_t t[3];
	if (pthread_barrier_init(&together, NULL, 3))
		return 99;
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, three, blocks[i]))
			return 99;
	for (int i = 0; i < 3; i++)
		if (pthread_join(t[i], NULL))
			return 99;
	xpfo_stats_get(&s1, sizeof s1);
	spare = s1.spare_bytes / PAGE;
	fprintf(stderr, "three threads: spares %llu\n", (unsigned long long)spare);
	if (spare > SPARE_MAX || spare <= 65)
		return 2;
	if (run(taker, NULL))
		return 99;
	fprintf(stderr, "after a thread took them: spares %llu\n",
		(unsigned long long)(s2.spare_bytes / PAGE));
	return s2.spare_bytes ? 3 : 0;
}

int main(void)
{
	tu_prog = "keepempty";
	struct tu_child r;
	if (tu_run_child(keep, NULL, 120, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "empty slabs: 2..65 stay with a running thread; at its exit spares, at most 128 "
	      "pages (also from three threads at once); a new thread takes them: %s; stderr: %s",
	      tu_status_str(r.status), r.err);
	tu_exit();
}
