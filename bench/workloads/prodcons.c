/* prodcons.c - producer/consumer: in each pair of threads the producer
 * allocates small objects and passes them through a bounded ring to the
 * consumer, which checks and frees them, so every small free is remote
 * and the producer keeps allocating from memory the consumer gives back.
 * Both threads also churn a window of medium blocks (1-64 KiB) of their
 * own, one replacement every -r small objects, the mix where an allocator
 * that hands pages back and forth pays most.
 *
 *	-t threads (pairs of producer and consumer; even)
 *	-n small objects per producer   -r small objects per medium churn
 *	-a/-b small object sizes        medium blocks: 1-64 KiB, 32 per thread
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "xbw.h"

#define RING 4096        /* objects in flight per pair (power of two) */
#define PUBLISH 64       /* objects per publication of the ring's tail */
#define MEDIUM_SLOTS 32
#define MEDIUM_MIN 1024
#define MEDIUM_MAX 65536

struct pc_item {
	void *p;
	size_t n;
	uint64_t tag;
};

/* single producer, single consumer: head is the consumer's, tail the
 * producer's; each published with release, read with acquire */
struct pc_ring {
	_Atomic unsigned long head;
	char pad1[64];
	_Atomic unsigned long tail;
	char pad2[64];
	struct pc_item item[RING];
};

struct pc_medium {
	void *p[MEDIUM_SLOTS];
	size_t n[MEDIUM_SLOTS];
	uint64_t tag[MEDIUM_SLOTS];
};

struct pc_thread {
	struct pc_ring *ring;
	const struct xbw_args *a;
	int producer;
	uint64_t rng;
	long churned;
	long consumed;
	struct pc_medium m;
};

static void medium_churn(struct pc_thread *t)
{
	unsigned k = (unsigned)(xbw_rand(&t->rng) % MEDIUM_SLOTS);
	struct pc_medium *m = &t->m;

	if (m->p[k]) {
		xbw_check("prodcons", m->p[k], m->n[k], m->tag[k]);
		free(m->p[k]);
	}
	m->n[k] = xbw_size(&t->rng, MEDIUM_MIN, MEDIUM_MAX);
	m->tag[k] = xbw_rand(&t->rng);
	m->p[k] = xbw_alloc("prodcons", m->n[k]);
	xbw_stamp(m->p[k], m->n[k], m->tag[k]);
	t->churned++;
}

static void medium_free_all(struct pc_medium *m)
{
	for (int k = 0; k < MEDIUM_SLOTS; k++)
		if (m->p[k]) {
			xbw_check("prodcons", m->p[k], m->n[k], m->tag[k]);
			free(m->p[k]);
		}
}

/* The producer publishes its tail every PUBLISH objects (and before it
 * waits), the consumer its head once per batch it took: the ring's cache
 * lines change hands per batch, not per object, so the allocator's remote
 * free path is what the time measures. */
static void ring_put(struct pc_ring *r, unsigned long *tail, const struct pc_item *it)
{
	if (*tail - atomic_load_explicit(&r->head, memory_order_acquire) >= RING) {
		atomic_store_explicit(&r->tail, *tail, memory_order_release);
		while (*tail - atomic_load_explicit(&r->head, memory_order_acquire) >= RING)
			sched_yield(); /* full: two CPUs are shared, do not spin */
	}
	r->item[*tail % RING] = *it;
	if (++*tail % PUBLISH == 0 || !it->p)
		atomic_store_explicit(&r->tail, *tail, memory_order_release);
}

/* Objects published and not yet taken, after waiting for some. */
static unsigned long ring_wait(struct pc_ring *r, unsigned long head)
{
	unsigned long tail;

	while ((tail = atomic_load_explicit(&r->tail, memory_order_acquire)) == head)
		sched_yield();
	return tail;
}

static void produce(struct pc_thread *t)
{
	const struct xbw_args *a = t->a;
	struct pc_item it;
	unsigned long tail = 0;

	for (long i = 0; i < a->n; i++) {
		it.n = xbw_size(&t->rng, a->min, a->max);
		it.tag = xbw_rand(&t->rng);
		it.p = xbw_alloc("prodcons", it.n);
		xbw_stamp(it.p, it.n, it.tag);
		ring_put(t->ring, &tail, &it);
		if ((i + 1) % a->rounds == 0)
			medium_churn(t);
	}
	it.p = NULL; /* end of stream */
	ring_put(t->ring, &tail, &it);
}

static void consume(struct pc_thread *t)
{
	struct pc_ring *r = t->ring;
	unsigned long head = 0, tail;

	for (;;) {
		tail = ring_wait(r, head);
		for (; head != tail; head++) {
			struct pc_item *it = &r->item[head % RING];
			if (!it->p)
				return;
			xbw_check("prodcons", it->p, it->n, it->tag);
			free(it->p);
			if (++t->consumed % t->a->rounds == 0)
				medium_churn(t);
		}
		atomic_store_explicit(&r->head, head, memory_order_release);
	}
}

static void *pc_worker(void *arg)
{
	struct pc_thread *t = arg;

	if (t->producer)
		produce(t);
	else
		consume(t);
	medium_free_all(&t->m);
	return NULL;
}

static int prodcons_run(const struct xbw_args *a)
{
	int n = a->threads, pairs = a->threads / 2;
	struct pc_ring *rings;
	struct pc_thread *t;
	long consumed = 0, churned = 0;

	if (n % 2)
		xbw_die("prodcons: -t %d: want an even number of threads", n);
	rings = xbw_alloc("prodcons", (size_t)pairs * sizeof *rings);
	t = xbw_alloc("prodcons", (size_t)n * sizeof *t);
	for (int i = 0; i < pairs; i++) {
		atomic_init(&rings[i].head, 0);
		atomic_init(&rings[i].tail, 0);
	}
	for (int i = 0; i < n; i++)
		t[i] = (struct pc_thread){.ring = &rings[i / 2], .a = a,
					  .producer = !(i % 2),
					  .rng = a->seed * 6151 + (uint64_t)i};
	xbw_start_threads(n, pc_worker, t, sizeof *t);
	for (int i = 0; i < n; i++) {
		consumed += t[i].consumed;
		churned += t[i].churned;
	}
	if (consumed != a->n * pairs)
		xbw_die("prodcons: consumed %ld objects, produced %ld", consumed,
			a->n * pairs);
	xbw_metric("objects", "%ld", consumed);
	xbw_metric("medium", "%ld", churned);
	free(rings);
	free(t);
	return 0;
}

const struct xbw_workload xbw_prodcons = {
	.name = "prodcons",
	.help = "producer/consumer pairs: small objects pass through a ring and "
		"are freed by the consumer (all remote); both threads churn "
		"1-64 KiB blocks, one every -r objects",
	.run = prodcons_run,
	.defaults = {.threads = 2, .n = 1000000, .rounds = 8, .min = 8, .max = 256,
		     .seed = 1},
};
