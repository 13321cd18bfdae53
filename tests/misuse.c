/* misuse.c - heap misuse is fatal, with one exact message line.
 *
 * Each case runs in a forked child and must die by SIGABRT after writing
 * exactly one line to stderr:
 *   xpfo: fatal: double free of <p> (compartment "root")
 *   xpfo: fatal: invalid free of <p>: not from the xpfo heap (compartment "root")
 *   xpfo: fatal: invalid free of <p>: interior pointer of the block at <b> (size class <n>) (compartment "root")
 *   xpfo: fatal: realloc of freed pointer <p> (compartment "root")
 * and the same "invalid realloc of" lines for realloc, and
 *   xpfo: fatal: sized free of <p> with size <n>: the block has size class <c> ...
 * for free_sized with a size from another class.  Addresses are printed as
 * printf's %p prints them.  The size class N is checked against bounds (see
 * expect_class).
 *
 * Builds: tests/misuse (linked with libxpfo.la), tests/preload/misuse-plain (run by
 * tests/preload/misuse.sh under LD_PRELOAD).
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

#ifndef TU_REQUIRE_XPFO
#define TU_REQUIRE_XPFO 0
#endif

static void *opaque_ptr(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static size_t page;

#define expect tu_expect

#define ROOT " (compartment \"root\")"

/* The "size class N" in interior-pointer and sized-free messages is the
 * block's slot size (small blocks; it can exceed malloc_usable_size when
 * the slot holds a canary) or its run's size in bytes (page runs, which may
 * be rounded up to a run class).  The test cannot know it exactly from the
 * public API, so the child writes "{N}" in its expected line and announces
 * it as a bound: "<N:a|b>", the sizes of xpfo's table of classes within
 * [usable, usable + 64] for a small block, "<N:lo-hi>" for a run. */
static void expect_class(void *p, int large, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void expect_class(void *p, int large, const char *fmt, ...)
{
	char msg[600], num[400];
	size_t u = malloc_usable_size(p), lo, hi;
	if (large) {
		lo = (u + page - 1) & ~(page - 1);
		hi = lo + lo / 4 + 2 * page;
	} else {
		lo = u;
		hi = u + 64;
	}
	int n = snprintf(num, sizeof num, "<N:%zu-%zu>", lo, hi);
	if (!large && tu_x.present) {
		struct xpfo_stats st;
		tu_stats(&st);
		n = snprintf(num, sizeof num, "<N:");
		for (int c = 0; c < XPFO_STATS_CLASSES; c++)
			if (st.class_size[c] >= lo && st.class_size[c] <= hi)
				n += snprintf(num + n, sizeof num - (size_t)n, "%s%llu",
					      num[n - 1] == ':' ? "" : "|",
					      (unsigned long long)st.class_size[c]);
		snprintf(num + n, sizeof num - (size_t)n, ">");
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char *hole = strstr(msg, "{N}");
	if (!hole)
		_exit(98);
	*hole = 0;
	expect("%s%s%s", msg, num, hole + 3);
}

static int double_free_size(size_t n)
{
	char *p = malloc(n);
	memset(p, 1, n);
	expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(p);
	free(opaque_ptr(p));
	return 0;
}

static int c_double_free_small(void *a) { (void)a; return double_free_size(32); }
static int c_double_free_16k(void *a) { (void)a; return double_free_size(16384); }
static int c_double_free_large(void *a) { (void)a; return double_free_size(65536); }
static int c_double_free_huge(void *a) { (void)a; return double_free_size(5u << 20); }

/* A double free with other traffic in between, after the revocation of the
 * large block has been applied.  The other blocks are allocated before p
 * and only freed after it: an allocation after free(p) could be handed p's
 * pages (same owner), and then free(p) would be a valid free. */
static int c_double_free_after_flush(void *a)
{
	(void)a;
	char *keep[64];
	for (int i = 0; i < 64; i++) {
		keep[i] = malloc(48 + (size_t)i * 1000);
		memset(keep[i], 2, 48);
	}
	char *p = malloc(200000);
	memset(p, 1, 200000);
	free(p);
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	if (tu_x.present)
		tu_x.flush();
	expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(opaque_ptr(p));
	return 0;
}

/* The smallest form of the above: the freed run's neighbour run is freed
 * too, and both revocations are applied, before the second free. */
static int c_double_free_neighbour(void *a)
{
	(void)a;
	char *n = malloc(20000), *p = malloc(200000);
	memset(n, 1, 20000);
	memset(p, 1, 200000);
	free(p);
	free(n);
	if (tu_x.present)
		tu_x.flush();
	expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(opaque_ptr(p));
	return 0;
}

/* The second free comes from another thread, created before the first
 * free (so that nothing allocates between the two frees). */
static sem_t go;
static void *volatile shared_p;

static void *free_it(void *unused)
{
	(void)unused;
	while (sem_wait(&go) != 0)
		;
	free(shared_p);
	return NULL;
}

static int c_double_free_other_thread(void *a)
{
	(void)a;
	char *p = malloc(100);
	pthread_t t;
	memset(p, 1, 100);
	sem_init(&go, 0, 0);
	if (pthread_create(&t, NULL, free_it, NULL) != 0)
		return 98;
	shared_p = p;
	free(p);
	expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	sem_post(&go);
	pthread_join(t, NULL);
	return 0;
}

/* The slab the block lived in is retired before the second free: its
 * thread exited.  "pending": the slab's last block is freed by this thread
 * (the retired slab's pages wait in its gather); "free": the exited thread
 * freed them all itself and its exit applied the revocation.  The block
 * is one whose address is not a page start (a page start alone already
 * read as a freed run). */
#define RETIRE_N 4
static char *retire_blk[RETIRE_N];

static void *alloc_then_exit(void *free_them)
{
	for (int i = 0; i < RETIRE_N; i++) {
		retire_blk[i] = malloc(3000);
		memset(retire_blk[i], 1, 3000);
	}
	if (free_them)
		for (int i = 0; i < RETIRE_N; i++)
			free(retire_blk[i]);
	return NULL;
}

static int double_free_retired(int pending)
{
	pthread_t t;
	if (pthread_create(&t, NULL, alloc_then_exit, pending ? NULL : retire_blk) != 0)
		return 98;
	pthread_join(t, NULL);
	char *p = NULL;
	for (int i = 0; i < RETIRE_N; i++) {
		if (pending)
			free(retire_blk[i]);
		if ((uintptr_t)retire_blk[i] % page)
			p = retire_blk[i];
	}
	if (!p)
		return 97;
	expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(opaque_ptr(p));
	return 0;
}

static int c_double_free_retired_pending(void *a) { (void)a; return double_free_retired(1); }
static int c_double_free_retired_free(void *a) { (void)a; return double_free_retired(0); }

static int c_free_stack(void *a)
{
	(void)a;
	char buf[64];
	void *p = opaque_ptr(buf + 16);
	expect("xpfo: fatal: invalid free of %p: not from the xpfo heap" ROOT, p);
	free(p);
	return 0;
}

static int c_free_mmap(void *a)
{
	(void)a;
	void *m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 98;
	expect("xpfo: fatal: invalid free of %p: not from the xpfo heap" ROOT, m);
	free(opaque_ptr(m));
	return 0;
}

static char global_buf[4096];

static int c_free_global(void *a)
{
	(void)a;
	void *p = opaque_ptr(global_buf + 64);
	expect("xpfo: fatal: invalid free of %p: not from the xpfo heap" ROOT, p);
	free(p);
	return 0;
}

static int interior(size_t n, size_t off, int large)
{
	char *p = malloc(n);
	memset(p, 1, n);
	expect_class(p, large, "xpfo: fatal: invalid free of %p: interior pointer "
		     "of the block at %p (size class {N})" ROOT,
		     (void *)(p + off), (void *)p);
	free(opaque_ptr(p + off));
	return 0;
}

static int c_interior_small(void *a) { (void)a; return interior(64, 16, 0); }
static int c_interior_small_byte(void *a) { (void)a; return interior(200, 1, 0); }
static int c_interior_large(void *a) { (void)a; return interior(65536, 4096, 1); }
static int c_interior_large_byte(void *a) { (void)a; return interior(100000, 8, 1); }

static int realloc_freed(size_t n)
{
	char *p = malloc(n);
	memset(p, 1, n);
	free(p);
	expect("xpfo: fatal: realloc of freed pointer %p" ROOT, (void *)p);
	p = realloc(opaque_ptr(p), n * 2);
	return p ? 3 : 4;
}

static int c_realloc_freed_small(void *a) { (void)a; return realloc_freed(40); }
static int c_realloc_freed_large(void *a) { (void)a; return realloc_freed(300000); }

/* The same checks on realloc's and free_sized's pointers. */
static int c_realloc_stack(void *a)
{
	(void)a;
	char buf[64];
	void *p = opaque_ptr(buf + 8);
	expect("xpfo: fatal: invalid realloc of %p: not from the xpfo heap" ROOT, p);
	p = realloc(p, 100);
	return p ? 3 : 4;
}

static int c_realloc_interior(void *a)
{
	(void)a;
	char *p = malloc(100);
	memset(p, 1, 100);
	expect_class(p, 0, "xpfo: fatal: invalid realloc of %p: interior pointer "
		     "of the block at %p (size class {N})" ROOT,
		     (void *)(p + 16), (void *)p);
	p = realloc(opaque_ptr(p + 16), 200);
	return p ? 3 : 4;
}

static int c_free_sized_wrong(void *a)
{
	(void)a;
#ifdef TU_STATIC
	/* linked statically with libxpfo.a (the QEMU guest): no dlsym there */
	extern void free_sized(void *, size_t);
	void (*fs)(void *, size_t) = free_sized;
#else
	void (*fs)(void *, size_t) =
		(void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
#endif
	if (!fs)
		return 97;
	char *p = malloc(100);
	memset(p, 1, 100);
	expect_class(p, 0, "xpfo: fatal: sized free of %p with size 5000: the "
		     "block has size class {N}" ROOT, (void *)p);
	fs(opaque_ptr(p), 5000);
	return 0;
}

struct mcase {
	const char *name;
	int (*fn)(void *);
};

static const struct mcase cases[] = {
	{ "double free, 32 B", c_double_free_small },
	{ "double free, 16 KiB", c_double_free_16k },
	{ "double free, 64 KiB", c_double_free_large },
	{ "double free, 5 MiB", c_double_free_huge },
	{ "double free after flush and other allocations", c_double_free_after_flush },
	{ "double free of a run after its neighbour run was freed, after flush", c_double_free_neighbour },
	{ "double free, second free on another thread", c_double_free_other_thread },
	{ "double free, the exited thread's slab retired, its pages queued",
	  c_double_free_retired_pending },
	{ "double free, the exited thread's slab retired and revoked", c_double_free_retired_free },
	{ "free of a stack address", c_free_stack },
	{ "free of an mmap'd page", c_free_mmap },
	{ "free of a static object", c_free_global },
	{ "free of an interior pointer, 64 B block + 16", c_interior_small },
	{ "free of an interior pointer, 200 B block + 1", c_interior_small_byte },
	{ "free of an interior pointer, 64 KiB run + 4096", c_interior_large },
	{ "free of an interior pointer, 100000 B run + 8", c_interior_large_byte },
	{ "realloc of a freed 40 B block", c_realloc_freed_small },
	{ "realloc of a freed 300000 B run", c_realloc_freed_large },
	{ "realloc of a stack address", c_realloc_stack },
	{ "realloc of an interior pointer", c_realloc_interior },
	{ "free_sized with a size of another class", c_free_sized_wrong },
};

int main(int argc, char **argv)
{
	int require = TU_REQUIRE_XPFO || tu_has_arg(argc, argv, "--require-xpfo");
	tu_prog = "misuse";
	tu_timeout(120);
	page = (size_t)sysconf(_SC_PAGESIZE);
	tu_xpfo_init(require);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tu_case c = { .name = cases[i].name, .fn = cases[i].fn, .signal = SIGABRT };
		tu_run_case(&c, 30, NULL);
	}
	tu_exit();
}
