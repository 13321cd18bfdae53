/* hash.c - many small objects in a chained hash map: n entries with
 * malloc'd string keys and values of random sizes, the bucket array grown
 * by doubling (new array, rehash, free old), all keys looked up, every
 * third entry deleted, n/3 inserted again, then everything freed.
 *
 *	-t threads (independent maps)   -n entries   -r rounds
 *	-a/-b value sizes
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xbw.h"

struct entry {
	struct entry *next;
	uint64_t hash;
	char *key;
	size_t vlen;
	char *val;
};

struct map {
	struct entry **b;
	size_t nb, count;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static void grow(struct map *m)
{
	size_t nb = m->nb ? m->nb * 2 : 64;
	struct entry **b = calloc(nb, sizeof *b);

	if (!b)
		xbw_die("hash: calloc of %zu buckets failed", nb);
	for (size_t i = 0; i < m->nb; i++)
		for (struct entry *e = m->b[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

static char *key_make(uint64_t k)
{
	char tmp[32];
	int len = snprintf(tmp, sizeof tmp, "key:%llx", (unsigned long long)k);
	char *s = xbw_alloc("hash", (size_t)len + 1 < 8 ? 8 : (size_t)len + 1);

	memcpy(s, tmp, (size_t)len + 1);
	return s;
}

static void put(struct map *m, uint64_t k, uint64_t *rng, const struct xbw_args *a)
{
	struct entry *e = xbw_alloc("hash", sizeof *e);

	if (m->count + 1 > m->nb)
		grow(m);
	e->key = key_make(k);
	e->hash = hash_str(e->key);
	e->vlen = xbw_size(rng, a->min, a->max);
	e->val = xbw_alloc("hash", e->vlen);
	xbw_stamp(e->val, e->vlen, e->hash);
	e->next = m->b[e->hash & (m->nb - 1)];
	m->b[e->hash & (m->nb - 1)] = e;
	m->count++;
}

static struct entry **lookup(struct map *m, uint64_t k)
{
	char tmp[32];
	snprintf(tmp, sizeof tmp, "key:%llx", (unsigned long long)k);
	uint64_t h = hash_str(tmp);
	struct entry **e = &m->b[h & (m->nb - 1)];

	while (*e && ((*e)->hash != h || strcmp((*e)->key, tmp)))
		e = &(*e)->next;
	return e;
}

static void entry_free(struct entry *e)
{
	xbw_check("hash", e->val, e->vlen, e->hash);
	free(e->val);
	free(e->key);
	free(e);
}

struct hash_thread {
	const struct xbw_args *a;
	int id;
	size_t final;
};

static void *hash_worker(void *arg)
{
	struct hash_thread *t = arg;
	const struct xbw_args *a = t->a;
	uint64_t rng = a->seed * 131 + (uint64_t)t->id;

	for (long r = 0; r < a->rounds; r++) {
		struct map m = {0};
		uint64_t base = (uint64_t)r << 40;

		for (long i = 0; i < a->n; i++)
			put(&m, base + (uint64_t)i, &rng, a);
		for (long i = 0; i < a->n; i++)
			if (!*lookup(&m, base + (uint64_t)i))
				xbw_die("hash: key %ld lost", i);
		for (long i = 0; i < a->n; i += 3) {
			struct entry **e = lookup(&m, base + (uint64_t)i);
			struct entry *dead = *e;
			*e = dead->next;
			entry_free(dead);
			m.count--;
		}
		for (long i = 0; i < a->n / 3; i++)
			put(&m, base + (uint64_t)(a->n + i), &rng, a);
		t->final = m.count;
		for (size_t i = 0; i < m.nb; i++)
			for (struct entry *e = m.b[i], *next; e; e = next) {
				next = e->next;
				entry_free(e);
				m.count--;
			}
		if (m.count)
			xbw_die("hash: %zu entries unaccounted for", m.count);
		free(m.b);
	}
	return NULL;
}

static int hash_run(const struct xbw_args *a)
{
	struct hash_thread *t = xbw_alloc("hash", (size_t)a->threads * sizeof *t);

	for (int i = 0; i < a->threads; i++)
		t[i] = (struct hash_thread){.a = a, .id = i};
	xbw_start_threads(a->threads, hash_worker, t, sizeof *t);
	xbw_metric("entries_per_round", "%zu", t[0].final);
	free(t);
	return 0;
}

const struct xbw_workload xbw_hash = {
	.name = "hash",
	.help = "many small objects: chained hash map with string keys and "
		"values, growth by rehash, lookups, deletes, teardown; per round",
	.run = hash_run,
	.defaults = {.threads = 1, .n = 200000, .rounds = 3, .min = 8, .max = 128,
		     .seed = 1},
};
