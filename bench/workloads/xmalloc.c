/* xmalloc.c - cross-thread allocation in the manner of the xmalloc test:
 * every thread allocates batches of objects and mails each batch to the
 * next thread, which frees them.  All frees are remote.  Mailboxes are
 * bounded: a thread whose target is full frees its own mail until there is
 * room, so memory in flight stays bounded and no one deadlocks.
 *
 *	-t threads   -n batches per thread   -r objects per batch
 *	-a/-b object sizes   -l/-c/-d one object in -l of -c..-d bytes (none)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "xbw.h"

#define MAILBOX_MAX 16 /* batches waiting per thread */

struct batch {
	struct batch *next;
	long count;
	uint64_t tag;
	void **p;
	size_t *n;
};

struct mailbox {
	pthread_mutex_t lock;
	struct batch *head;
	long len;
	char pad[64];
};

struct xm_thread {
	int id;
	const struct xbw_args *a;
	struct mailbox *boxes;
	_Atomic int *producing; /* threads still producing */
	long freed;
};

static struct batch *take_all(struct mailbox *m)
{
	pthread_mutex_lock(&m->lock);
	struct batch *b = m->head;
	m->head = NULL;
	m->len = 0;
	pthread_mutex_unlock(&m->lock);
	return b;
}

static long free_batches(struct batch *b)
{
	long n = 0;

	while (b) {
		struct batch *next = b->next;
		for (long i = 0; i < b->count; i++) {
			xbw_check("xmalloc", b->p[i], b->n[i], b->tag + (uint64_t)i);
			free(b->p[i]);
		}
		n += b->count;
		free(b->p);
		free(b->n);
		free(b);
		b = next;
	}
	return n;
}

static void *xm_worker(void *arg)
{
	struct xm_thread *t = arg;
	const struct xbw_args *a = t->a;
	struct mailbox *mine = &t->boxes[t->id];
	struct mailbox *next = &t->boxes[(t->id + 1) % a->threads];
	uint64_t rng = a->seed * 7919 + (uint64_t)t->id;

	for (long k = 0; k < a->n; k++) {
		struct batch *b = xbw_alloc("xmalloc", sizeof *b);
		b->count = a->rounds;
		b->tag = xbw_rand(&rng);
		b->p = xbw_alloc("xmalloc", (size_t)b->count * sizeof *b->p);
		b->n = xbw_alloc("xmalloc", (size_t)b->count * sizeof *b->n);
		for (long i = 0; i < b->count; i++) {
			b->n[i] = xbw_size_mix(&rng, a);
			b->p[i] = xbw_alloc("xmalloc", b->n[i]);
			xbw_stamp(b->p[i], b->n[i], b->tag + (uint64_t)i);
		}
		for (;;) {
			t->freed += free_batches(take_all(mine));
			pthread_mutex_lock(&next->lock);
			if (next->len < MAILBOX_MAX || a->threads == 1) {
				b->next = next->head;
				next->head = b;
				next->len++;
				pthread_mutex_unlock(&next->lock);
				break;
			}
			pthread_mutex_unlock(&next->lock);
			sched_yield();
		}
	}
	/* Keep emptying our mailbox while others still produce: one of
	 * them may be waiting for room in it. */
	atomic_fetch_sub(t->producing, 1);
	while (atomic_load(t->producing) > 0) {
		t->freed += free_batches(take_all(mine));
		sched_yield();
	}
	t->freed += free_batches(take_all(mine)); /* no more mail after this */
	return NULL;
}

static int xmalloc_run(const struct xbw_args *a)
{
	int n = a->threads;
	struct mailbox *boxes = xbw_alloc("xmalloc", (size_t)n * sizeof *boxes);
	struct xm_thread *t = xbw_alloc("xmalloc", (size_t)n * sizeof *t);
	_Atomic int producing = n;
	long freed = 0;

	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&boxes[i].lock, NULL);
		boxes[i].head = NULL;
		boxes[i].len = 0;
		t[i] = (struct xm_thread){.id = i, .a = a, .boxes = boxes,
					  .producing = &producing};
	}
	xbw_start_threads(n, xm_worker, t, sizeof *t);
	for (int i = 0; i < n; i++)
		freed += t[i].freed;
	if (freed != a->n * a->rounds * n)
		xbw_die("xmalloc: freed %ld objects, allocated %ld", freed,
			a->n * a->rounds * n);
	xbw_metric("objects", "%ld", freed);
	free(boxes);
	free(t);
	return 0;
}

const struct xbw_workload xbw_xmalloc = {
	.name = "xmalloc",
	.help = "each thread allocates batches (-r objects) and mails them to "
		"the next thread, which frees them (all frees remote); one "
		"object in -l of -c..-d bytes",
	.run = xmalloc_run,
	.defaults = {.threads = 2, .n = 4000, .rounds = 100, .min = 8, .max = 256,
		     .seed = 1},
};
