/* larson.c - a server simulation in the manner of Larson and Krishnan's
 * benchmark: each worker owns an array of slots holding live objects of
 * random sizes and replaces a random slot n times (free the old object,
 * allocate a new one).  When a worker's round ends it exits and its slots
 * are inherited by the worker of the next round on another index, so most
 * objects are freed by a thread other than the one that allocated them,
 * and threads keep being created and destroyed.
 *
 *	-t workers at a time   -n replacements per worker per round
 *	-r rounds              -a/-b object sizes     slots per worker: 1000
 *	-l/-c/-d one object in -l of -c..-d bytes (none by default)
 */
#include <stdlib.h>

#include "xbw.h"

#define SLOTS 1000

struct slots {
	void *p[SLOTS];
	size_t n[SLOTS];
	uint64_t tag[SLOTS];
};

struct worker {
	struct slots *s;
	const struct xbw_args *a;
	uint64_t rng;
};

static void *larson_worker(void *arg)
{
	struct worker *w = arg;
	struct slots *s = w->s;

	for (long i = 0; i < w->a->n; i++) {
		unsigned k = (unsigned)(xbw_rand(&w->rng) % SLOTS);
		xbw_check("larson", s->p[k], s->n[k], s->tag[k]);
		free(s->p[k]);
		s->n[k] = xbw_size_mix(&w->rng, w->a);
		s->tag[k] = xbw_rand(&w->rng);
		s->p[k] = xbw_alloc("larson", s->n[k]);
		xbw_stamp(s->p[k], s->n[k], s->tag[k]);
	}
	return NULL;
}

static int larson_run(const struct xbw_args *a)
{
	int t = a->threads;
	struct slots *s = xbw_alloc("larson", (size_t)t * sizeof *s);
	struct worker *w = xbw_alloc("larson", (size_t)t * sizeof *w);
	uint64_t rng = a->seed;

	for (int i = 0; i < t; i++)
		for (int k = 0; k < SLOTS; k++) {
			s[i].n[k] = xbw_size_mix(&rng, a);
			s[i].tag[k] = xbw_rand(&rng);
			s[i].p[k] = xbw_alloc("larson", s[i].n[k]);
			xbw_stamp(s[i].p[k], s[i].n[k], s[i].tag[k]);
		}
	for (long r = 0; r < a->rounds; r++) {
		for (int i = 0; i < t; i++) {
			/* round r's worker i takes the slots of round r-1's
			 * worker i-1: different thread, objects change hands */
			w[i].s = &s[(i + r) % t];
			w[i].a = a;
			w[i].rng = a->seed + (uint64_t)r * 1000003u + (uint64_t)i;
		}
		xbw_start_threads(t, larson_worker, w, sizeof *w);
	}
	xbw_metric("vmas", "%ld", xbw_vmas());
	for (int i = 0; i < t; i++)
		for (int k = 0; k < SLOTS; k++) {
			xbw_check("larson", s[i].p[k], s[i].n[k], s[i].tag[k]);
			free(s[i].p[k]);
		}
	xbw_metric("ops", "%ld", a->n * a->rounds * t);
	free(s);
	free(w);
	return 0;
}

const struct xbw_workload xbw_larson = {
	.name = "larson",
	.help = "server simulation: workers replace random slots, slots "
		"pass to a new thread every round (cross-thread frees); one "
		"object in -l of -c..-d bytes",
	.run = larson_run,
	.defaults = {.threads = 2, .n = 200000, .rounds = 10, .min = 16, .max = 512,
		     .seed = 1},
};
