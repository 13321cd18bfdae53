/* xbw.h - shared pieces of the allocation workloads (xb-work).
 *
 * Each workload does a fixed amount of work chosen by its arguments, so
 * the runner can compare wall time, peak RSS and context switches across
 * allocators.  Objects carry a stamp that is checked before they are freed:
 * an allocator that hands out overlapping memory makes the workload fail
 * ("xb-work: <name>: corrupted object ...", exit 1) instead of finishing.
 * Results are printed as "xbw: key=value" lines on stdout.
 */
#ifndef XBW_H
#define XBW_H

#include <stddef.h>
#include <stdint.h>

struct xbw_args {
	int threads;    /* -t */
	long n;         /* -n: objects or operations (per workload) */
	long rounds;    /* -r */
	size_t min;     /* -a: smallest object */
	size_t max;     /* -b: largest object */
	uint64_t seed;  /* -s */
	long window;    /* -w: live objects per thread (workloads that keep a window) */
	long big_every; /* -l: one object in this many is big (0: none) */
	size_t big_min; /* -c: smallest big object */
	size_t big_max; /* -d: largest big object */
};

struct xbw_workload {
	const char *name;
	const char *help; /* what it does and what -t -n -r -a -b mean */
	int (*run)(const struct xbw_args *a);
	struct xbw_args defaults;
};

extern const struct xbw_workload xbw_larson, xbw_xmalloc, xbw_scratch,
	xbw_tree, xbw_hash, xbw_frag, xbw_prodcons, xbw_threadchurn, xbw_bigblock;
extern const struct xbw_workload xbw_crossmix;

/* splitmix64 */
static inline uint64_t xbw_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [min, max]. */
static inline size_t xbw_size(uint64_t *s, size_t min, size_t max)
{
	return min + (size_t)(xbw_rand(s) % (max - min + 1));
}

/* A size for the next object: one in a->big_every (when set) in
 * [big_min, big_max], the others in [min, max]. */
static inline size_t xbw_size_mix(uint64_t *s, const struct xbw_args *a)
{
	if (a->big_every > 0 && xbw_rand(s) % (uint64_t)a->big_every == 0)
		return xbw_size(s, a->big_min, a->big_max);
	return xbw_size(s, a->min, a->max);
}

/* Write a tag over a fresh object of n >= 8 bytes: all of it when small,
 * else the first and last words and one word per page.  xbw_check
 * verifies the first and last words. */
void xbw_stamp(void *p, size_t n, uint64_t tag);
void xbw_check(const char *who, const void *p, size_t n, uint64_t tag);
/* malloc that dies with a message on failure; n >= 8 */
void *xbw_alloc(const char *who, size_t n);

__attribute__((noreturn, format(printf, 1, 2))) void xbw_die(const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void xbw_metric(const char *key, const char *fmt, ...);
double xbw_now(void);
long xbw_rss_kb(void);   /* resident set now, from /proc/self/statm */
long xbw_vmas(void);     /* lines of /proc/self/maps now */
void xbw_start_threads(int n, void *(*fn)(void *), void *args, size_t argsize);

#endif /* XBW_H */
