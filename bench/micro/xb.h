/* xb.h - the C side of the micro benchmarks.
 *
 * Benchmark bodies are plain C functions that take a struct xb_state.  The
 * only C++ in bench/ is xb_gbench.cc, which wraps Google Benchmark's State
 * behind the functions below and registers every XB_BENCH at start-up.
 *
 * A body looks like:
 *
 *	static void bm_pair(struct xb_state *s)
 *	{
 *		size_t n = (size_t)xb_arg(s, 0);
 *		while (xb_run(s))
 *			free(xb_escape(malloc(n)));
 *	}
 *	XB_BENCH(pair, "malloc_free", bm_pair, .args = XB_ARGS(8, 64, 4096));
 *
 * The timed region is exactly the xb_run() / xb_run_batch() loop: set-up
 * before the first call and clean-up after the last one are not timed.
 */
#ifndef XB_H
#define XB_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct xb_state; /* a benchmark::State */

/* One more iteration?  (State::KeepRunning) */
bool xb_run(struct xb_state *s);
/* n more iterations?  (State::KeepRunningBatch; may overshoot by up to n) */
bool xb_run_batch(struct xb_state *s, int64_t n);
int64_t xb_arg(struct xb_state *s, int i);
int64_t xb_iterations(struct xb_state *s); /* iterations run so far */
int xb_thread(struct xb_state *s);  /* 0 .. xb_threads()-1 */
int xb_threads(struct xb_state *s);
void xb_pause(struct xb_state *s);
void xb_resume(struct xb_state *s);
void xb_items(struct xb_state *s, int64_t n); /* items per second column */
void xb_skip(struct xb_state *s, const char *why);
void xb_label(struct xb_state *s, const char *label);

/* A user counter.  XB_PER_ITER divides by the iteration count (summed over
 * threads); without it the value is summed over threads as given. */
#define XB_PER_ITER 1
void xb_counter(struct xb_state *s, const char *name, double v, int flags);

/* Keep the compiler from eliding an allocation or its use. */
static inline void *xb_escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
	return p;
}

#define XB_END (-1)
#define XB_MAX_THREADS_LIST 4

struct xb_bench {
	const char *name;
	void (*fn)(struct xb_state *);
	const int64_t *args;   /* XB_ARGS(...) or NULL for no argument */
	const int *threads;    /* XB_THREADS(...) or NULL for one thread */
	bool real_time;        /* report wall time (multi-threaded bodies) */
	struct xb_bench *next; /* filled by xb_register */
};

#define XB_ARGS(...) ((const int64_t[]){__VA_ARGS__, XB_END})
#define XB_THREADS(...) ((const int[]){__VA_ARGS__, XB_END})

void xb_register(struct xb_bench *b);

/* A key/value pair for the "context" block of the JSON output; fn is
 * called in main, before the benchmarks run.  Call from a constructor. */
void xb_context(const char *key, const char *(*fn)(void));

/* Define and register one benchmark; id must be unique in the file. */
#define XB_BENCH(id, bname, bfn, ...)                                         \
	static struct xb_bench xb_bench_##id = {.name = (bname), .fn = (bfn), \
						__VA_ARGS__};                 \
	__attribute__((constructor)) static void xb_reg_##id(void)            \
	{                                                                     \
		xb_register(&xb_bench_##id);                                  \
	}

/* Small deterministic generator for sizes and orders (splitmix64). */
static inline uint64_t xb_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

#ifdef __cplusplus
}
#endif
#endif /* XB_H */
