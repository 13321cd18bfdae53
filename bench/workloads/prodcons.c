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
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "xbw.h"

#define RING 4096        /* objects in flight per pair (power of two) */
#define PUBLISH 64       /* objects per publication of the ring's tail */
#define YIELDS 16        /* before a waiting thread sleeps */

enum { PRODUCER, CONSUMER };
#define MEDIUM_SLOTS 32
#define MEDIUM_MIN 1024
#define MEDIUM_MAX 65536

struct pc_item {
	void *p;
	size_t n;
	uint64_t tag;
};

/* single producer, single consumer: head is the consumer's, tail the
 * producer's.  A thread that finds the ring full (producer) or empty
 * (consumer) yields a few times, then sleeps on cond with its flag in
 * `waiting` set; the other wakes it after it moves its index.  (Yielding
 * alone made one run in three several times slower on a loaded machine,
 * under every allocator: the waiting thread kept the CPU from the one it
 * waited for.)  head, tail and waiting are seq_cst: a thread that sets its
 * flag and then reads the other's index, and a thread that moves its index
 * and then reads the flag, cannot both miss the other's store. */
struct pc_ring {
	_Atomic unsigned long head;
	char pad1[64];
	_Atomic unsigned long tail;
	char pad2[64];
	_Atomic int waiting[2]; /* PRODUCER, CONSUMER: asleep on cond */
	pthread_mutex_t lock;
	pthread_cond_t cond;
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

static bool ring_full(struct pc_ring *r, unsigned long tail)
{
	return tail - atomic_load(&r->head) >= RING;
}

static bool ring_empty(struct pc_ring *r, unsigned long head)
{
	return atomic_load(&r->tail) == head;
}

static void ring_block(struct pc_ring *r, int side,
		       bool (*blocked)(struct pc_ring *, unsigned long), unsigned long at)
{
	for (int i = 0; i < YIELDS; i++) {
		if (!blocked(r, at))
			return;
		sched_yield();
	}
	pthread_mutex_lock(&r->lock);
	atomic_store(&r->waiting[side], 1);
	while (blocked(r, at))
		pthread_cond_wait(&r->cond, &r->lock);
	atomic_store(&r->waiting[side], 0);
	pthread_mutex_unlock(&r->lock);
}

/* After head or tail moved: wake the other side's thread if it sleeps. */
static void ring_wake(struct pc_ring *r, int side)
{
	if (!atomic_load(&r->waiting[side]))
		return;
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* The producer publishes its tail every PUBLISH objects (and before it
 * waits), the consumer its head once per batch it took: the ring's cache
 * lines change hands per batch, not per object, so the allocator's remote
 * free path is what the time measures. */
static void ring_put(struct pc_ring *r, unsigned long *tail, const struct pc_item *it)
{
	if (ring_full(r, *tail)) {
		atomic_store(&r->tail, *tail);
		ring_wake(r, CONSUMER);
		ring_block(r, PRODUCER, ring_full, *tail);
	}
	r->item[*tail % RING] = *it;
	if (++*tail % PUBLISH == 0 || !it->p) {
		atomic_store(&r->tail, *tail);
		ring_wake(r, CONSUMER);
	}
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
		ring_block(r, CONSUMER, ring_empty, head);
		tail = atomic_load(&r->tail);
		for (; head != tail; head++) {
			struct pc_item *it = &r->item[head % RING];
			if (!it->p)
				return;
			xbw_check("prodcons", it->p, it->n, it->tag);
			free(it->p);
			if (++t->consumed % t->a->rounds == 0)
				medium_churn(t);
		}
		atomic_store(&r->head, head);
		ring_wake(r, PRODUCER);
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
		atomic_init(&rings[i].waiting[PRODUCER], 0);
		atomic_init(&rings[i].waiting[CONSUMER], 0);
		pthread_mutex_init(&rings[i].lock, NULL);
		pthread_cond_init(&rings[i].cond, NULL);
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
	.defaults = {.threads = 2, .n = 1000000, .rounds = 16, .min = 8, .max = 256,
		     .seed = 1},
};
