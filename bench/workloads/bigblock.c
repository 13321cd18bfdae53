/* bigblock.c - repeated large blocks: each thread keeps a window of -w
 * blocks of several MiB and replaces a random one -n times: the old block
 * is checked and freed, a new one allocated and written on every page.
 * An allocator that gives the frames of a freed block back to the kernel
 * and faults them in again for the next one pays a page fault per page
 * and a TLB flush per release, every round; one that keeps them (or
 * reuses the block in place) pays neither.
 *
 *	-t threads   -n replacements per thread   -w blocks per thread (2)
 *	-a/-b block sizes (2..8 MiB)
 */
#include <stdlib.h>
#include <string.h>

#include "xbw.h"

struct bb_thread {
	const struct xbw_args *a;
	uint64_t rng;
	long pages; /* pages written */
};

static void *bb_new(struct bb_thread *t, size_t n, uint64_t tag)
{
	char *p = xbw_alloc("bigblock", n);

	/* every page written, as a program filling a buffer would */
	for (size_t i = 0; i < n; i += 4096) {
		p[i] = (char)tag;
		t->pages++;
	}
	xbw_stamp(p, n, tag);
	return p;
}

static void *bb_worker(void *arg)
{
	struct bb_thread *t = arg;
	long w = t->a->window;
	void **p = calloc((size_t)w, sizeof *p);
	size_t *n = calloc((size_t)w, sizeof *n);
	uint64_t *tag = calloc((size_t)w, sizeof *tag);

	if (!p || !n || !tag)
		xbw_die("bigblock: calloc failed");
	for (long k = 0; k < w; k++) {
		n[k] = xbw_size(&t->rng, t->a->min, t->a->max) & ~(size_t)7;
		tag[k] = xbw_rand(&t->rng);
		p[k] = bb_new(t, n[k], tag[k]);
	}
	for (long i = 0; i < t->a->n; i++) {
		long k = (long)(xbw_rand(&t->rng) % (uint64_t)w);
		xbw_check("bigblock", p[k], n[k], tag[k]);
		free(p[k]);
		n[k] = xbw_size(&t->rng, t->a->min, t->a->max) & ~(size_t)7;
		tag[k] = xbw_rand(&t->rng);
		p[k] = bb_new(t, n[k], tag[k]);
	}
	for (long k = 0; k < w; k++) {
		xbw_check("bigblock", p[k], n[k], tag[k]);
		free(p[k]);
	}
	free(p);
	free(n);
	free(tag);
	return NULL;
}

static int bigblock_run(const struct xbw_args *a)
{
	int n = a->threads;
	struct bb_thread *t = xbw_alloc("bigblock", (size_t)n * sizeof *t);
	long pages = 0;

	for (int i = 0; i < n; i++)
		t[i] = (struct bb_thread){.a = a, .rng = a->seed * 7919 + (uint64_t)i};
	xbw_start_threads(n, bb_worker, t, sizeof *t);
	for (int i = 0; i < n; i++)
		pages += t[i].pages;
	xbw_metric("blocks", "%ld", (long)n * (a->n + a->window));
	xbw_metric("pages_written", "%ld", pages);
	free(t);
	return 0;
}

const struct xbw_workload xbw_bigblock = {
	.name = "bigblock",
	.help = "repeated large blocks: -t threads each keep -w blocks of -a..-b "
		"bytes and replace a random one -n times (every page written)",
	.run = bigblock_run,
	.defaults = {.threads = 1, .n = 400, .rounds = 1, .min = 2 << 20, .max = 8 << 20,
		     .seed = 1, .window = 2},
};
