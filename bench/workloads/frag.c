/* frag.c - fragmentation: objects of mixed sizes and lifetimes.  Each
 * round allocates n small objects of which one in 16 is long-lived, frees
 * the short-lived ones in random order (holes around survivors), allocates
 * n/64 medium objects (2-32 KiB, about as many bytes as the small ones) and
 * frees a random half of them, then allocates and frees n/2048 large ones
 * (64 KiB - 1 MiB, again about as many bytes); at the start of
 * each round half of the older long-lived objects die.  The runner takes
 * the peak RSS; this program reports the bytes still live and the RSS at
 * the end of the last round, before tearing down ("rss_over_live": how much
 * resident memory the allocator keeps per live byte).
 *
 *	-n small objects per round   -r rounds   -a/-b small sizes  (-t ignored)
 */
#include <stdlib.h>

#include "xbw.h"

struct obj {
	void *p;
	size_t n;
	uint64_t tag;
};

struct pool {
	struct obj *o;
	long count, cap;
};

static void pool_add(struct pool *pl, size_t n, uint64_t *rng)
{
	if (pl->count == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 1024;
		struct obj *o = realloc(pl->o, (size_t)pl->cap * sizeof *o);
		if (!o)
			xbw_die("frag: realloc failed");
		pl->o = o;
	}
	struct obj *o = &pl->o[pl->count++];
	o->n = n;
	o->tag = xbw_rand(rng);
	o->p = xbw_alloc("frag", n);
	xbw_stamp(o->p, n, o->tag);
}

static void obj_free(struct obj *o)
{
	xbw_check("frag", o->p, o->n, o->tag);
	free(o->p);
	o->p = NULL;
}

/* Free every object of the pool in random order, or only a random half
 * of them (survivors are compacted to the front). */
static void pool_free(struct pool *pl, uint64_t *rng, int half)
{
	for (long i = pl->count - 1; i > 0; i--) {
		long j = (long)(xbw_rand(rng) % (uint64_t)(i + 1));
		struct obj t = pl->o[i];
		pl->o[i] = pl->o[j];
		pl->o[j] = t;
	}
	long keep = half ? pl->count / 2 : 0;
	for (long i = keep; i < pl->count; i++)
		obj_free(&pl->o[i]);
	pl->count = keep;
}

static size_t pool_bytes(const struct pool *pl)
{
	size_t sum = 0;
	for (long i = 0; i < pl->count; i++)
		sum += pl->o[i].n;
	return sum;
}

static int frag_run(const struct xbw_args *a)
{
	uint64_t rng = a->seed;
	struct pool old = {0}, small = {0}, medium = {0}, large = {0};
	size_t live = 0;
	long rss = 0;

	for (long r = 0; r < a->rounds; r++) {
		pool_free(&old, &rng, 1); /* half of the survivors die */
		for (long i = 0; i < a->n; i++) {
			size_t n = xbw_size(&rng, a->min, a->max);
			pool_add(i % 16 == 0 ? &old : &small, n, &rng);
		}
		pool_free(&small, &rng, 0);
		for (long i = 0; i < a->n / 64; i++)
			pool_add(&medium, xbw_size(&rng, 2048, 32768), &rng);
		pool_free(&medium, &rng, 1);
		for (long i = 0; i < a->n / 2048; i++)
			pool_add(&large, xbw_size(&rng, 65536, 1 << 20), &rng);
		pool_free(&large, &rng, 0);
		live = pool_bytes(&old) + pool_bytes(&medium);
		rss = xbw_rss_kb();
	}
	xbw_metric("live_kb", "%zu", live / 1024);
	xbw_metric("rss_kb_at_end", "%ld", rss);
	xbw_metric("rss_over_live", "%.2f", live ? (double)rss * 1024 / (double)live : 0);
	xbw_metric("vmas", "%ld", xbw_vmas());
	pool_free(&old, &rng, 0);
	pool_free(&medium, &rng, 0);
	free(old.o);
	free(small.o);
	free(medium.o);
	free(large.o);
	return 0;
}

const struct xbw_workload xbw_frag = {
	.name = "frag",
	.help = "fragmentation: mixed sizes and lifetimes, reports live bytes "
		"and RSS at the end (peak RSS taken by the runner)",
	.run = frag_run,
	.defaults = {.threads = 1, .n = 200000, .rounds = 4, .min = 16, .max = 512,
		     .seed = 1},
};
