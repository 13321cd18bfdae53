/* crossmix.c - mixed sizes, half of every batch freed by another thread
 * (issue 35's shootdown workload).  In each round every thread allocates
 * a batch of -r objects: 80% of -a..-b bytes (16-1024), 17% 4-64 KiB, 3%
 * 128 KiB-1 MiB.  It frees every other object of its batch itself and
 * leaves the rest for the next thread, which frees them in the following
 * round.  One barrier per round; the hand-off slots are double-buffered,
 * so a slot written in round k is read only in round k+1.
 *
 *	-t threads   -n rounds (batches per thread)   -r objects per batch
 *	-a/-b the small sizes                          operations: t * n * r
 */
#include <pthread.h>
#include <string.h>
#include <stdlib.h>

#include "xbw.h"

struct obj {
	void *p;
	size_t n;
	uint64_t tag;
};

struct crossmix {
	const struct xbw_args *a;
	pthread_barrier_t bar;
	/* slot[parity][i]: the objects thread i frees in the next round */
	struct obj *slot[2][256];
	long given[2][256];
};

struct cm_worker {
	struct crossmix *c;
	int id;
};

static size_t crossmix_size(uint64_t *rng, const struct xbw_args *a)
{
	unsigned pct = (unsigned)(xbw_rand(rng) % 100);

	if (pct < 80)
		return xbw_size(rng, a->min, a->max);
	if (pct < 97)
		return xbw_size(rng, 4096, 65536);
	return xbw_size(rng, 131072, 1048576);
}

static void crossmix_free(struct obj *o, long n)
{
	for (long i = 0; i < n; i++) {
		xbw_check("crossmix", o[i].p, o[i].n, o[i].tag);
		free(o[i].p);
	}
}

static void *crossmix_worker(void *arg)
{
	struct cm_worker *w = arg;
	struct crossmix *c = w->c;
	const struct xbw_args *a = c->a;
	int t = a->threads, next = (w->id + 1) % t;
	struct obj *batch = xbw_alloc("crossmix", (size_t)a->rounds * sizeof *batch);
	uint64_t rng = a->seed * 1000003u + (uint64_t)w->id;

	for (long k = 0; k < a->n; k++) {
		int cur = (int)(k & 1), prev = cur ^ 1;
		struct obj *out = c->slot[cur][next];
		long kept = 0;

		/* what the previous thread left for us last round */
		crossmix_free(c->slot[prev][w->id], c->given[prev][w->id]);
		c->given[prev][w->id] = 0;
		for (long i = 0; i < a->rounds; i++) {
			batch[i].n = crossmix_size(&rng, a);
			batch[i].tag = xbw_rand(&rng);
			batch[i].p = xbw_alloc("crossmix", batch[i].n);
			xbw_stamp(batch[i].p, batch[i].n, batch[i].tag);
		}
		for (long i = 0; i < a->rounds; i++) {
			if (i & 1)
				out[kept++] = batch[i];
			else
				crossmix_free(&batch[i], 1);
		}
		c->given[cur][next] = kept;
		pthread_barrier_wait(&c->bar);
	}
	free(batch);
	return NULL;
}

static int crossmix_run(const struct xbw_args *a)
{
	int t = a->threads;
	struct crossmix *c = xbw_alloc("crossmix", sizeof *c);
	struct cm_worker *w = xbw_alloc("crossmix", (size_t)t * sizeof *w);
	int e;

	memset(c, 0, sizeof *c);
	c->a = a;
	e = pthread_barrier_init(&c->bar, NULL, (unsigned)t);
	if (e)
		xbw_die("crossmix: pthread_barrier_init: %s", strerror(e));
	for (int i = 0; i < t; i++) {
		for (int p = 0; p < 2; p++)
			c->slot[p][i] = xbw_alloc("crossmix",
						  ((size_t)a->rounds / 2 + 1) * sizeof(struct obj));
		w[i].c = c;
		w[i].id = i;
	}
	xbw_start_threads(t, crossmix_worker, w, sizeof *w);
	xbw_metric("vmas", "%ld", xbw_vmas());
	for (int i = 0; i < t; i++)
		for (int p = 0; p < 2; p++) {
			crossmix_free(c->slot[p][i], c->given[p][i]);
			free(c->slot[p][i]);
		}
	xbw_metric("ops", "%ld", (long)t * a->n * a->rounds);
	pthread_barrier_destroy(&c->bar);
	free(w);
	free(c);
	return 0;
}

const struct xbw_workload xbw_crossmix = {
	.name = "crossmix",
	.help = "mixed sizes (80% -a..-b, 17% 4-64 KiB, 3% 128 KiB-1 MiB) in "
		"batches of -r; half of each batch is freed by the next thread "
		"(-n rounds)",
	.run = crossmix_run,
	.defaults = {.threads = 4, .n = 800, .rounds = 64, .min = 16, .max = 1024,
		     .seed = 1},
};
