/* threadchurn.c - many short-lived threads: -r generations of -t threads
 * each; every thread replaces random slots of a window of live objects -n
 * times, then exits leaving half of its window behind.  The thread of the
 * next generation on the next index frees what it left (remote frees into
 * the heap of a thread that has exited), so an allocator that strands the
 * memory of exited threads, or cannot reuse it, grows with the number of
 * threads rather than with the live data.
 *
 *	-t threads at a time   -r generations   -n replacements per thread
 *	-a/-b object sizes     -w objects per thread (64), half left behind
 *	-l/-c/-d one object in -l of -c..-d bytes (none by default)
 */
#include <stdlib.h>

#include "xbw.h"

#define WINDOW 64 /* default -w */

/* a window of objects; a thread leaves the first half of its window to
 * the next generation */
struct tc_objs {
	void **p;
	size_t *n;
	uint64_t *tag;
};

struct tc_thread {
	struct tc_objs *inherit; /* left by the previous generation */
	struct tc_objs *leave;   /* for the next one */
	const struct xbw_args *a;
	uint64_t rng;
};

static void tc_new(struct tc_objs *o, int k, const struct xbw_args *a, uint64_t *rng)
{
	o->n[k] = xbw_size_mix(rng, a);
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

static void tc_objs_init(struct tc_objs *o, long window)
{
	o->p = calloc((size_t)window, sizeof *o->p);
	o->n = calloc((size_t)window, sizeof *o->n);
	o->tag = calloc((size_t)window, sizeof *o->tag);
	if (!o->p || !o->n || !o->tag)
		xbw_die("threadchurn: calloc failed");
}

static void tc_objs_fini(struct tc_objs *o)
{
	free(o->p);
	free(o->n);
	free(o->tag);
}

static void *tc_worker(void *arg)
{
	struct tc_thread *t = arg;
	long window = t->a->window, left = window / 2;
	struct tc_objs w;

	tc_objs_init(&w, window);
	for (long k = 0; k < left; k++)
		tc_free(t->inherit, (int)k);
	for (long k = 0; k < window; k++)
		tc_new(&w, (int)k, t->a, &t->rng);
	for (long i = 0; i < t->a->n; i++) {
		int k = (int)(xbw_rand(&t->rng) % (uint64_t)window);
		tc_free(&w, k);
		tc_new(&w, k, t->a, &t->rng);
	}
	for (long k = 0; k < window; k++) {
		if (k < left) {
			t->leave->p[k] = w.p[k];
			t->leave->n[k] = w.n[k];
			t->leave->tag[k] = w.tag[k];
		} else {
			tc_free(&w, (int)k);
		}
	}
	tc_objs_fini(&w);
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
	for (int i = 0; i < 2 * n; i++)
		tc_objs_init(&left[i], a->window);
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
	for (int i = 0; i < 2 * n; i++) {
		for (long k = 0; k < a->window / 2; k++)
			tc_free(&left[i], (int)k);
		tc_objs_fini(&left[i]);
	}
	xbw_metric("threads", "%ld", a->rounds * n);
	xbw_metric("objects", "%ld", a->rounds * n * (a->n + a->window));
	free(left);
	free(t);
	return 0;
}

const struct xbw_workload xbw_threadchurn = {
	.name = "threadchurn",
	.help = "-r generations of -t short-lived threads replace random slots "
		"of -w objects -n times, exit leaving half for the next "
		"generation to free (remote frees into exited heaps); one "
		"object in -l of -c..-d bytes",
	.run = threadchurn_run,
	.defaults = {.threads = 2, .n = 1000, .rounds = 2000, .min = 16, .max = 2048,
		     .seed = 1, .window = WINDOW},
};
