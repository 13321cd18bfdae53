/* threadchurn.c - many short-lived threads: -r generations of -t threads
 * each; every thread replaces random slots of a window of live objects -n
 * times, then exits leaving half of its window behind.  The thread of the
 * next generation on the next index frees what it left (remote frees into
 * the heap of a thread that has exited), so an allocator that strands the
 * memory of exited threads, or cannot reuse it, grows with the number of
 * threads rather than with the live data.
 *
 *	-t threads at a time   -r generations   -n replacements per thread
 *	-a/-b object sizes     window: 64 objects per thread, 32 left behind
 */
#include <stdlib.h>

#include "xbw.h"

#define WINDOW 64
#define LEFT (WINDOW / 2) /* objects a thread leaves to the next generation */

struct tc_objs {
	void *p[WINDOW];
	size_t n[WINDOW];
	uint64_t tag[WINDOW];
};

struct tc_thread {
	struct tc_objs *inherit; /* left by the previous generation */
	struct tc_objs *leave;   /* for the next one */
	const struct xbw_args *a;
	uint64_t rng;
};

static void tc_new(struct tc_objs *o, int k, const struct xbw_args *a, uint64_t *rng)
{
	o->n[k] = xbw_size(rng, a->min, a->max);
	o->tag[k] = xbw_rand(rng);
	o->p[k] = xbw_alloc("threadchurn", o->n[k]);
	xbw_stamp(o->p[k], o->n[k], o->tag[k]);
}

static void tc_free(struct tc_objs *o, int k)
{
	if (!o->p[k])
		return;
	xbw_check("threadchurn", o->p[k], o->n[k], o->tag[k]);
	free(o->p[k]);
	o->p[k] = NULL;
}

static void *tc_worker(void *arg)
{
	struct tc_thread *t = arg;
	struct tc_objs w;

	for (int k = 0; k < LEFT; k++)
		tc_free(t->inherit, k);
	for (int k = 0; k < WINDOW; k++)
		tc_new(&w, k, t->a, &t->rng);
	for (long i = 0; i < t->a->n; i++) {
		int k = (int)(xbw_rand(&t->rng) % WINDOW);
		tc_free(&w, k);
		tc_new(&w, k, t->a, &t->rng);
	}
	for (int k = 0; k < WINDOW; k++) {
		if (k < LEFT) {
			t->leave->p[k] = w.p[k];
			t->leave->n[k] = w.n[k];
			t->leave->tag[k] = w.tag[k];
		} else {
			tc_free(&w, k);
		}
	}
	return NULL;
}

static int threadchurn_run(const struct xbw_args *a)
{
	int n = a->threads;
	/* two sets of left objects per index: the one being freed, the one
	 * being filled */
	struct tc_objs *left = calloc((size_t)2 * n, sizeof *left);
	struct tc_thread *t = xbw_alloc("threadchurn", (size_t)n * sizeof *t);

	if (!left)
		xbw_die("threadchurn: calloc failed");
	for (long r = 0; r < a->rounds; r++) {
		for (int i = 0; i < n; i++) {
			/* thread i of generation r frees what thread i-1 of
			 * generation r-1 left */
			t[i].inherit = &left[(r % 2) * n + (i + n - 1) % n];
			t[i].leave = &left[((r + 1) % 2) * n + i];
			t[i].a = a;
			t[i].rng = a->seed * 104729 + (uint64_t)r * 7919 + (uint64_t)i;
		}
		xbw_start_threads(n, tc_worker, t, sizeof *t);
	}
	xbw_metric("vmas", "%ld", xbw_vmas());
	for (int i = 0; i < 2 * n; i++)
		for (int k = 0; k < LEFT; k++)
			tc_free(&left[i], k);
	xbw_metric("threads", "%ld", a->rounds * n);
	xbw_metric("objects", "%ld", a->rounds * n * (a->n + WINDOW));
	free(left);
	free(t);
	return 0;
}

const struct xbw_workload xbw_threadchurn = {
	.name = "threadchurn",
	.help = "-r generations of -t short-lived threads replace random slots "
		"of 64 objects -n times, exit leaving half for the next "
		"generation to free (remote frees into exited heaps)",
	.run = threadchurn_run,
	.defaults = {.threads = 2, .n = 1000, .rounds = 2000, .min = 16, .max = 2048,
		     .seed = 1},
};
