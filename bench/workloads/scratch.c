/* scratch.c - cache-scratch, after the Hoard paper's false-sharing test:
 * the main thread allocates one small object per worker, back to back, so
 * they likely share a cache line, and hands one to each worker.  A worker
 * frees it, then n times allocates a small object, writes it r times and
 * frees it.  An allocator that gives the worker the freed neighbour again
 * makes two CPUs write one cache line; one that returns remote frees to
 * their owner does not.
 *
 *	-t workers   -n allocations per worker   -r writes per object
 *	-a object size (-b ignored)
 */
#include <stdlib.h>

#include "xbw.h"

struct sc_thread {
	char *first;
	const struct xbw_args *a;
	uint64_t sum;
};

static void *sc_worker(void *arg)
{
	struct sc_thread *t = arg;
	size_t n = t->a->min;
	uint64_t sum = 0;

	free(t->first);
	for (long i = 0; i < t->a->n; i++) {
		volatile char *p = xbw_alloc("scratch", n);
		for (long w = 0; w < t->a->rounds; w++)
			p[w % (long)n] = (char)(p[w % (long)n] + 1);
		sum += (unsigned char)p[0];
		free((void *)p);
	}
	t->sum = sum;
	return NULL;
}

static int scratch_run(const struct xbw_args *a)
{
	struct sc_thread *t = xbw_alloc("scratch", (size_t)a->threads * sizeof *t);

	for (int i = 0; i < a->threads; i++) {
		t[i].first = xbw_alloc("scratch", a->min);
		t[i].first[0] = 0;
		t[i].a = a;
	}
	xbw_start_threads(a->threads, sc_worker, t, sizeof *t);
	xbw_metric("objects", "%ld", a->n * a->threads);
	free(t);
	return 0;
}

const struct xbw_workload xbw_scratch = {
	.name = "scratch",
	.help = "cache-scratch: workers free a neighbour-allocated object, then "
		"allocate/write/free small objects (false sharing if reused)",
	.run = scratch_run,
	.defaults = {.threads = 2, .n = 200000, .rounds = 100, .min = 8, .max = 8,
		     .seed = 1},
};
