/* stress.c - many threads allocate, hand blocks to each other, and free
 * them on the other thread.
 *
 * Every thread loops: allocate a block (malloc, calloc, aligned_alloc,
 * posix_memalign or memalign; sizes from 1 byte through 4 MiB, weighted
 * towards small classes), fill it with a pattern from its seed, keep it in
 * a local slot or send it to another thread's inbox; replace slots (free,
 * or realloc to a new size keeping the prefix: realloc chains); empty its
 * own inbox, checking and freeing what others sent.  Every block is checked
 * before it is freed or reallocated (full pattern up to 64 KiB, one word per
 * page beyond).  Threads run in generations: each generation exits with
 * full caches and blocks still in the inboxes, and the next generation
 * frees them.  With xpfo present, xpfo_owner is checked on blocks, and the
 * heap's live_bytes must come back to where it started.
 *
 * Usage: stress [--threads N] [--seconds S] [--iterations I]
 *               [--generations G] [--seed X] [--quiet] [--require-xpfo]
 * Defaults: 4 threads, 5 seconds, no iteration bound, 3 generations.
 * Builds: tests/stress (linked with libxpfo.la), tests/preload/stress-plain (not
 * linked; run under LD_PRELOAD by tests/preload/threads.sh).
 */
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef TU_REQUIRE_XPFO
#define TU_REQUIRE_XPFO 0
#endif

enum { SLOTS = 256, INBOX_MAX = 256, FULL_CHECK = 65536, MAX_THREADS = 64 };

struct block {
	struct block *next; /* inbox link */
	unsigned char *p;
	size_t size;
	uint64_t seed;
	int from;
};

struct inbox {
	pthread_mutex_t lock;
	struct block *head;
	size_t count;
} __attribute__((aligned(64)));

static struct inbox inbox[MAX_THREADS];
static int nthreads = 4;
static double seconds = 5;
static unsigned long iterations;
static int generations = 3;
static uint64_t base_seed = 0x5eed;
static int quiet, trace;
static atomic_int failed;
static atomic_ulong total_ops, total_bytes, total_reallocs, total_sent,
	total_big;
static size_t page;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *what, const struct block *b, size_t off)
{
	atomic_fetch_add(&failed, 1);
	fprintf(stderr, "FAIL: %s: block %p size %zu seed %llx from thread %d: "
			"byte %zu\n",
		what, (void *)b->p, b->size, (unsigned long long)b->seed,
		b->from, off);
}

/* Fill: everything up to FULL_CHECK, one word per page beyond. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	if (n <= FULL_CHECK) {
		tu_fill(p, n, seed);
		return;
	}
	for (size_t off = 0; off + 8 <= n; off += page) {
		uint64_t w = tu_pattern_word(seed, off / 8);
		memcpy(p + off, &w, 8);
	}
}

/* Check the first n bytes of a block filled for size `filled`. */
static size_t verify(const unsigned char *p, size_t n, size_t filled,
		     uint64_t seed)
{
	if (filled <= FULL_CHECK)
		return tu_verify(p, n, seed);
	for (size_t off = 0; off + 8 <= n; off += page) {
		uint64_t w = tu_pattern_word(seed, off / 8);
		if (memcmp(p + off, &w, 8) != 0)
			return off;
	}
	return (size_t)-1;
}

static size_t pick_size(uint64_t *r)
{
	uint64_t x = tu_rand(r), c = x % 1000;
	x >>= 10;
	if (c < 550)
		return 1 + x % 256;
	if (c < 800)
		return 257 + x % (4096 - 256);
	if (c < 920)
		return 4097 + x % (16384 - 4096);
	if (c < 990)
		return 16385 + x % (262144 - 16384);
	return 262145 + x % ((4u << 20) - 262144);
}

static struct block *new_block(uint64_t *r, int self)
{
	struct block *b = malloc(sizeof *b);
	size_t n = pick_size(r);
	unsigned kind = (unsigned)(tu_rand(r) % 20);
	size_t align = (size_t)16 << (tu_rand(r) % 13); /* 16 .. 64 KiB */
	void *p = NULL;

	if (!b)
		return NULL;
	switch (kind) {
	case 0: case 1:
		align = 1;
		p = calloc(1, n);
		if (p && n <= FULL_CHECK)
			for (size_t i = 0; i < n; i++)
				if (((unsigned char *)p)[i]) {
					struct block t = { .p = p, .size = n, .from = self };
					report("calloc memory not zero", &t, i);
					break;
				}
		break;
	case 2: case 3:
		p = aligned_alloc(align, n);
		break;
	case 4:
		if (posix_memalign(&p, align, n) != 0)
			p = NULL;
		break;
	case 5:
		p = memalign(align, n);
		break;
	default:
		p = malloc(n);
		align = 1;
	}
	if (!p) {
		struct block t = { .size = n, .from = self };
		report("allocation failed", &t, 0);
		free(b);
		return NULL;
	}
	if (((uintptr_t)p & (align - 1)) != 0) {
		struct block t = { .p = p, .size = n, .from = self };
		report("misaligned", &t, align);
	}
	if (malloc_usable_size(p) < n) {
		struct block t = { .p = p, .size = n, .from = self };
		report("usable size below the request", &t, malloc_usable_size(p));
	}
	b->p = p;
	b->size = n;
	b->seed = tu_rand(r);
	b->from = self;
	b->next = NULL;
	fill(b->p, n, b->seed);
	atomic_fetch_add_explicit(&total_bytes, n, memory_order_relaxed);
	if (n > 262144)
		atomic_fetch_add_explicit(&total_big, 1, memory_order_relaxed);
	return b;
}

static void check_block(struct block *b, const char *when)
{
	size_t off = verify(b->p, b->size, b->size, b->seed);
	if (off != (size_t)-1)
		report(when, b, off);
	if (tu_x.present && tu_x.owner(b->p) != tu_x.root())
		report("xpfo_owner of a live block is not root", b, 0);
}

static void drop_block(struct block *b, const char *when)
{
	check_block(b, when);
	free(b->p);
	free(b);
}

static void realloc_block(struct block *b, uint64_t *r)
{
	size_t n;
	uint64_t x = tu_rand(r) % 4;
	if (x == 0)
		n = pick_size(r);
	else if (x == 1)
		n = b->size / 2 + 1;
	else
		n = b->size + b->size / 2 + 1 + (size_t)(tu_rand(r) % 64);
	if (n > (6u << 20))
		n = 1 + n % 1000;
	check_block(b, "corrupted before realloc");
	unsigned char *q = realloc(b->p, n);
	if (!q) {
		report("realloc failed", b, n);
		return;
	}
	size_t keep = n < b->size ? n : b->size;
	size_t off = verify(q, keep, b->size, b->seed);
	if (off != (size_t)-1) {
		struct block t = *b;
		t.p = q;
		report("realloc lost the contents", &t, off);
	}
	b->p = q;
	b->size = n;
	b->seed ^= tu_rand(r);
	fill(q, n, b->seed);
	atomic_fetch_add_explicit(&total_reallocs, 1, memory_order_relaxed);
}

static void send(int to, struct block *b)
{
	struct inbox *in = &inbox[to];
	pthread_mutex_lock(&in->lock);
	if (in->count >= INBOX_MAX) {
		pthread_mutex_unlock(&in->lock);
		drop_block(b, "corrupted (inbox full, freed by owner)");
		return;
	}
	b->next = in->head;
	in->head = b;
	in->count++;
	pthread_mutex_unlock(&in->lock);
	atomic_fetch_add_explicit(&total_sent, 1, memory_order_relaxed);
}

static void drain(int self)
{
	struct inbox *in = &inbox[self];
	pthread_mutex_lock(&in->lock);
	struct block *b = in->head;
	in->head = NULL;
	in->count = 0;
	pthread_mutex_unlock(&in->lock);
	while (b) {
		struct block *next = b->next;
		drop_block(b, "corrupted in transit (freed by receiver)");
		b = next;
	}
}

struct worker {
	pthread_t t;
	int self;
	int gen;
	double end;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t r = base_seed ^ ((uint64_t)(w->self + 1) << 32) ^
		     ((uint64_t)w->gen * 0x9E3779B97F4A7C15ULL);
	struct block *slot[SLOTS] = { 0 };
	unsigned long ops = 0;

	tu_rand(&r);
	for (;;) {
		if ((ops & 63) == 0 && now() >= w->end)
			break;
		if (iterations && ops >= iterations)
			break;
		if (atomic_load_explicit(&failed, memory_order_relaxed) > 20)
			break;
		ops++;
		uint64_t c = tu_rand(&r) % 100;
		if (c < 40) {
			struct block *b = new_block(&r, w->self);
			if (!b)
				continue;
			int to = (int)(tu_rand(&r) % (uint64_t)nthreads);
			if (to != w->self)
				send(to, b);
			else {
				int s = (int)(tu_rand(&r) % SLOTS);
				if (slot[s])
					drop_block(slot[s], "corrupted in a slot");
				slot[s] = b;
			}
		} else if (c < 70) {
			int s = (int)(tu_rand(&r) % SLOTS);
			if (!slot[s])
				slot[s] = new_block(&r, w->self);
			else
				realloc_block(slot[s], &r);
		} else if (c < 85) {
			int s = (int)(tu_rand(&r) % SLOTS);
			if (slot[s]) {
				drop_block(slot[s], "corrupted in a slot");
				slot[s] = NULL;
			}
		} else if (c < 99) {
			drain(w->self);
		} else if (tu_x.present && tu_rand(&r) % 5 == 0) {
			/* in a debug build, xpfo_flush also walks the heap's
			 * invariants */
			if (tu_x.flush() != 0) {
				struct block t = { .from = w->self };
				report("xpfo_flush failed", &t, (size_t)errno);
			}
		}
	}
	/* Half the slots go to other threads' inboxes (freed by the next
	 * generation if this was the last round), the rest are freed. */
	for (int s = 0; s < SLOTS; s++) {
		if (!slot[s])
			continue;
		if (s % 2)
			send((w->self + 1) % nthreads, slot[s]);
		else
			drop_block(slot[s], "corrupted in a slot at thread exit");
	}
	atomic_fetch_add(&total_ops, ops);
	return NULL;
}

/* The process's resident KiB and mapping count, for the summary line:
 * after everything is freed they should not depend on the generations. */
static void rss_vmas(long *rss_kb, long *vmas)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	*rss_kb = *vmas = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", rss_kb) == 1)
			break;
	if (f)
		fclose(f);
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return;
	*vmas = 0;
	while (fgets(line, sizeof line, f))
		if (strchr(line, '\n'))
			(*vmas)++;
	fclose(f);
}

static void usage(void)
{
	tu_hard_error("usage: stress [--threads N] [--seconds S] [--iterations I] "
		      "[--generations G] [--seed X] [--quiet] [--trace] [--require-xpfo]");
}

int main(int argc, char **argv)
{
	int require = TU_REQUIRE_XPFO;
	tu_prog = "stress";
	page = (size_t)sysconf(_SC_PAGESIZE);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "--quiet")) { quiet = 1; continue; }
		if (!strcmp(a, "--trace")) { trace = 1; continue; }
		if (!strcmp(a, "--require-xpfo")) { require = 1; continue; }
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		errno = 0;
		if (!strcmp(a, "--threads"))
			nthreads = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--seconds"))
			seconds = strtod(v, &end);
		else if (!strcmp(a, "--iterations"))
			iterations = strtoul(v, &end, 10);
		else if (!strcmp(a, "--generations"))
			generations = (int)strtol(v, &end, 10);
		else if (!strcmp(a, "--seed"))
			base_seed = strtoull(v, &end, 0);
		else
			usage();
		if (errno || *end || end == v)
			usage();
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || seconds <= 0 ||
	    generations < 1)
		usage();
	tu_timeout((unsigned)(seconds * 4) + 60);
	tu_xpfo_init(require);

	struct xpfo_stats s0, s1;
	for (int i = 0; i < nthreads; i++)
		pthread_mutex_init(&inbox[i].lock, NULL);
	tu_stats(&s0);

	struct worker *w = calloc((size_t)nthreads, sizeof *w);
	if (!w)
		tu_hard_error("calloc");
	double start = now();
	for (int g = 0; g < generations; g++) {
		if (tu_x.present && tu_x.flush() != 0)
			tu_hard_error("xpfo_flush failed: %s", strerror(errno));
		double end = start + seconds * (g + 1) / generations;
		for (int i = 0; i < nthreads; i++) {
			w[i].self = i;
			w[i].gen = g;
			w[i].end = end;
			if (pthread_create(&w[i].t, NULL, work, &w[i]) != 0)
				tu_hard_error("pthread_create");
		}
		for (int i = 0; i < nthreads; i++)
			pthread_join(w[i].t, NULL);
		if (trace) {
			long rss, vmas;
			rss_vmas(&rss, &vmas);
			printf("generation %d: rss %ld KiB, %ld VMAs\n", g, rss, vmas);
		}
	}
	for (int i = 0; i < nthreads; i++)
		drain(i);
	free(w);
	tu_stats(&s1);

	if (tu_x.present) {
		long long d = (long long)s1.live_bytes - (long long)s0.live_bytes;
		if (d > 1 << 20 || d < -(1 << 20)) {
			fprintf(stderr, "FAIL: live_bytes %llu before, %llu after "
					"everything was freed\n",
				(unsigned long long)s0.live_bytes,
				(unsigned long long)s1.live_bytes);
			atomic_fetch_add(&failed, 1);
		}
		if (s1.frees - s0.frees + 16 < s1.allocs - s0.allocs ||
		    s1.frees - s0.frees > s1.allocs - s0.allocs + 16) {
			fprintf(stderr, "FAIL: %llu allocations but %llu frees "
					"counted over the run\n",
				(unsigned long long)(s1.allocs - s0.allocs),
				(unsigned long long)(s1.frees - s0.frees));
			atomic_fetch_add(&failed, 1);
		}
		if (!quiet)
			fprintf(stderr, "xpfo: allocs %llu frees %llu pages revoked "
					"%llu revoke syscalls %llu flushes %llu vmas %llu "
					"peak mapped %llu MiB\n",
				(unsigned long long)(s1.allocs - s0.allocs),
				(unsigned long long)(s1.frees - s0.frees),
				(unsigned long long)(s1.pages_revoked - s0.pages_revoked),
				(unsigned long long)(s1.revoke_syscalls - s0.revoke_syscalls),
				(unsigned long long)(s1.flushes - s0.flushes),
				(unsigned long long)s1.vmas,
				(unsigned long long)(s1.peak_mapped_bytes >> 20));
	}
	if (!quiet) {
		long rss, vmas;
		rss_vmas(&rss, &vmas);
		fprintf(stderr, "stress: at the end, everything freed: rss %ld KiB, "
				"%ld VMAs\n", rss, vmas);
	}
	if (!quiet)
		fprintf(stderr, "stress: %d threads x %d generations, %.1f s: %lu "
				"operations, %lu MiB allocated, %lu reallocs, %lu "
				"blocks sent across threads, %lu blocks > 256 KiB\n",
			nthreads, generations, now() - start,
			(unsigned long)total_ops, (unsigned long)(total_bytes >> 20),
			(unsigned long)total_reallocs, (unsigned long)total_sent,
			(unsigned long)total_big);
	if (atomic_load(&failed)) {
		fprintf(stderr, "stress: %d failure(s)\n", atomic_load(&failed));
		return 1;
	}
	printf("stress: ok\n");
	return 0;
}
