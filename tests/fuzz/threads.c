/* threads.c - libFuzzer target: two threads hand blocks to each other.
 * The input is a list of (operation, size) pairs.  A producer thread
 * allocates each block (xpfo_malloc, xpfo_calloc, xpfo_aligned_alloc,
 * xpfo_realloc of a block it got back, or xpfo_malloc_in a compartment
 * the consumer is in; the producer enters it to fill and check those
 * blocks, as pkeys requires), fills it with a pattern and queues it; a consumer
 * thread checks the pattern and owner, then frees it there (a remote free),
 * resizes it, or sends it back for the producer to free.  Either side may
 * flush its revocations.  Fresh threads per input, so thread exit (with
 * blocks still on other threads' slabs) is exercised too. */
#include "fuzz.h"
#include "xpfo.h"

#include <pthread.h>
#include <string.h>

#define QLEN 64

struct blk {
	uint8_t *p;
	size_t n;
	uint64_t seed;
	unsigned action; /* consumer: 0 free, 1 realloc then free, 2 send back */
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct blk b[QLEN];
	unsigned head, tail;
	int closed;
};

static struct queue to_consumer, to_producer;
static xpfo_compartment_t *shared;
static pthread_barrier_t bar;

static void q_init(struct queue *q)
{
	memset(q, 0, sizeof *q);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cv, NULL);
}

static void q_put(struct queue *q, struct blk b)
{
	pthread_mutex_lock(&q->lock);
	while (q->tail - q->head == QLEN)
		pthread_cond_wait(&q->cv, &q->lock);
	q->b[q->tail++ % QLEN] = b;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->lock);
}

/* 1 with a block, 0 when closed and empty; wait=0: 0 when empty now */
static int q_get(struct queue *q, struct blk *out, int wait)
{
	pthread_mutex_lock(&q->lock);
	while (wait && q->head == q->tail && !q->closed)
		pthread_cond_wait(&q->cv, &q->lock);
	int got = q->head != q->tail;
	if (got) {
		*out = q->b[q->head++ % QLEN];
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

static void q_close(struct queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->lock);
}

/* Into the compartment that owns p unless this thread reaches it already
 * (root, or the one it is in): on pkeys a compartment's pages are only its
 * own threads' (mprotect: open while any thread is inside).  Returns what
 * to give xpfo_leave, or NULL when nothing was entered. */
static xpfo_compartment_t *enter_for(const void *p)
{
	xpfo_compartment_t *o = xpfo_owner(p);
	if (!o || o == xpfo_root() || o == xpfo_current())
		return NULL;
	xpfo_compartment_t *prev = xpfo_enter(o);
	FZ_CHECK(prev, "enter the owner of %p", p);
	return prev;
}

static void blk_free(struct blk *b)
{
	xpfo_compartment_t *prev = enter_for(b->p);
	fz_verify(b->p, b->n, b->seed, "before free");
	if (prev)
		xpfo_leave(prev);
	xpfo_free(b->p);
}

static void *consumer(void *arg)
{
	(void)arg;
	FZ_CHECK(xpfo_enter(shared) == xpfo_root(), "consumer: enter");
	pthread_barrier_wait(&bar); /* shared is open from now on */
	struct blk b;
	while (q_get(&to_consumer, &b, 1)) {
		fz_verify(b.p, b.n, b.seed, "consumer got");
		FZ_CHECK(xpfo_owner(b.p) != NULL, "consumer: %p has no owner", (void *)b.p);
		FZ_CHECK(xpfo_usable_size(b.p) >= b.n, "usable < %zu", b.n);
		if (b.action == 1) {
			size_t n = b.n / 2 + 1;
			uint8_t *p = xpfo_realloc(b.p, n);
			FZ_CHECK(p, "consumer: realloc to %zu failed", n);
			fz_verify_upto(p, b.n, n, b.seed, "after realloc");
			fz_fill(p, n, b.seed);
			b.p = p;
			b.n = n;
		}
		if (b.action == 2)
			q_put(&to_producer, b);
		else
			blk_free(&b);
		if (b.seed % 7 == 0)
			FZ_CHECK(xpfo_flush() == 0, "consumer: flush");
	}
	q_close(&to_producer);
	pthread_barrier_wait(&bar); /* the producer has freed what came back */
	xpfo_leave(xpfo_root());
	return NULL;
}

static uint8_t *produce(struct fz_in *in, unsigned op, size_t n)
{
	switch (op % 4) {
	case 0: return xpfo_malloc(n);
	case 1: return xpfo_calloc(1, n);
	case 2: return xpfo_aligned_alloc((size_t)64 << fz_u8(in) % 8, n);
	default: return xpfo_malloc_in(shared, n);
	}
}

static void producer(struct fz_in *in)
{
	struct blk back;
	for (uint64_t k = 1; fz_more(in) && k < 2000; k++) {
		unsigned op = fz_u8(in);
		size_t n = fz_size(in) % 200000;
		uint8_t *p = produce(in, op, n);
		FZ_CHECK(p, "producer: allocation of %zu failed", n);
		struct blk b = { p, n, k * 0x9E3779B97F4A7C15ull, (op >> 2) % 3 };
		xpfo_compartment_t *prev = enter_for(p);
		fz_fill(p, n, b.seed);
		if (prev)
			xpfo_leave(prev);
		q_put(&to_consumer, b);
		while (q_get(&to_producer, &back, 0))
			blk_free(&back);
		if (op & 0x80)
			FZ_CHECK(xpfo_flush() == 0, "producer: flush");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	q_init(&to_consumer);
	q_init(&to_producer);
	shared = xpfo_compartment_create("shared", 0);
	FZ_CHECK(shared, "compartment_create");
	/* The producer stays in root but for the moments it fills or checks a
	 * block of shared; the consumer is inside shared. */
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t t;
	FZ_CHECK(pthread_create(&t, NULL, consumer, NULL) == 0, "pthread_create");
	pthread_barrier_wait(&bar);
	producer(&in);
	q_close(&to_consumer);
	struct blk back;
	while (q_get(&to_producer, &back, 1))
		blk_free(&back);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&bar);
	FZ_CHECK(xpfo_compartment_destroy(shared) == 0, "destroy");
	return 0;
}
