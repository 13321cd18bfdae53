/* canary.c - a small slot ends with an 8-byte canary (its first byte zero),
 * checked when the block is freed and when it is realloc'ed.  Writing past
 * the end of the block is fatal:
 *
 *   xpfo: fatal: canary of <p> (size class <n>) corrupted: buffer overflow (compartment "root")
 *
 * <n> is the slot size, malloc_usable_size + 8.  On in profile=default and
 * strict, off in light; `canary=` overrides the profile.  With it off the
 * same programs end silently: the byte lands in the next slot, unnoticed.
 * A NUL written just past the end is not caught, by design: the canary's
 * first byte is zero so that string reads stop there.
 */
#include "harness.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A block of n bytes whose end is not at a page boundary, so that with
 * canaries off the overflow lands in the next slot of the slab, not past
 * the slab (the other blocks are left allocated). */
static char *block(size_t n)
{
	for (int i = 0; i < 64; i++) {
		char *p = malloc(n);
		if (!p)
			_exit(97);
		if ((((unsigned long)p + malloc_usable_size(p)) & (h_page() - 1)) != 0)
			return p;
	}
	_exit(97);
}

/* Write `val` at byte `off` past the end of a block of n bytes, then free or
 * realloc it. */
static int overflow(size_t n, size_t off, unsigned char val, int how)
{
	char *p = block(n);
	size_t u = malloc_usable_size(p);
	memset(p, 'x', u);
	tu_expect("xpfo: fatal: canary of %p (size class %zu) corrupted: buffer overflow" ROOT,
		 (void *)p, u + 8);
	/* a different byte (at off > 0 the canary's byte is random: writing
	 * its own value would change nothing) */
	if (off && ((volatile unsigned char *)p)[u + off] == val)
		val = (unsigned char)~val;
	((volatile char *)p)[u + off] = (char)val;
	if (how == 0) {
		free(h_opaque(p));
	} else {
		/* a size in another class (moves the block), or the same one */
		char *q = realloc(h_opaque(p), how == 1 ? 5000 : u);
		if (!q)
			return 97;
		free(q);
	}
	return 0;
}

static int c_free_24(const char *a) { (void)a; return overflow(24, 0, 'A', 0); }
static int c_free_100(const char *a) { (void)a; return overflow(100, 0, 'A', 0); }
static int c_free_1000(const char *a) { (void)a; return overflow(1000, 0, 'A', 0); }
static int c_free_last_byte(const char *a) { (void)a; return overflow(100, 7, 'A', 0); }
static int c_realloc_move(const char *a) { (void)a; return overflow(100, 0, 'A', 1); }
static int c_realloc_in_place(const char *a) { (void)a; return overflow(100, 0, 'A', 2); }
/* Freed by another thread (the remote free path checks it too). */
static char *remote_p;
static void *free_remote(void *u)
{
	(void)u;
	free(h_opaque(remote_p));
	return NULL;
}

static int c_free_other_thread(const char *a)
{
	(void)a;
	pthread_t t;
	char *p = block(100);
	size_t u = malloc_usable_size(p);
	tu_expect("xpfo: fatal: canary of %p (size class %zu) corrupted: buffer overflow" ROOT,
		 (void *)p, u + 8);
	((volatile char *)p)[u] = 'A';
	remote_p = p;
	if (pthread_create(&t, NULL, free_remote, NULL))
		return 97;
	pthread_join(t, NULL);
	return 0;
}

/* An aligned block: its class is a multiple of the alignment, the canary
 * still ends the slot. */
static int c_aligned(const char *a)
{
	(void)a;
	char *p = NULL;
	size_t u = 0;
	for (int i = 0; i < 64 && !p; i++) { /* as block(): not at a page's end */
		p = aligned_alloc(64, 100);
		if (!p)
			return 97;
		u = malloc_usable_size(p);
		if ((((unsigned long)p + u) & (h_page() - 1)) == 0)
			p = NULL;
	}
	if (!p)
		return 97;
	tu_expect("xpfo: fatal: canary of %p (size class %zu) corrupted: buffer overflow" ROOT,
		 (void *)p, u + 8);
	((volatile char *)p)[u] = 'A';
	free(h_opaque(p));
	return 0;
}

static int c_nul(const char *a) { (void)a; return overflow(100, 0, 0, 0); }

static const struct hcase cases[] = {
	{ "free-24", c_free_24 },
	{ "free-100", c_free_100 },
	{ "free-1000", c_free_1000 },
	{ "free-canary-last-byte", c_free_last_byte },
	{ "realloc-move", c_realloc_move },
	{ "realloc-in-place", c_realloc_in_place },
	{ "free-other-thread", c_free_other_thread },
	{ "aligned", c_aligned },
	{ "nul-past-the-end", c_nul },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"

/* on: default, strict, light+canary=1; off: light, default+canary=0,
 * strict+canary=0 */
#define ONOFF(c)                                                                         \
	{ c, "profile=default", HX_DETECT, SIGABRT, NULL, NULL, "canary on" },           \
	{ c, "profile=strict", HX_DETECT, SIGABRT, NULL, NULL, "canary on" },            \
	{ c, "profile=light,canary=1", HX_DETECT, SIGABRT, NULL, NULL, "canary on" },    \
	{ c, "profile=light", HX_SILENT, 0, NULL, NULL, "canary off: undetected" },      \
	{ c, "profile=default,canary=0", HX_SILENT, 0, NULL, NULL, "canary off: undetected" }, \
	{ c, "profile=strict,canary=0", HX_SILENT, 0, NULL, NULL, "canary off: undetected" }

static const struct hrun runs[] = {
	ONOFF("free-24"),
	ONOFF("free-100"),
	ONOFF("free-1000"),
	ONOFF("free-canary-last-byte"),
	ONOFF("realloc-move"),
	ONOFF("realloc-in-place"),
	ONOFF("free-other-thread"),
	ONOFF("aligned"),
	{ "nul-past-the-end", "profile=default", HX_SILENT, 0, NULL, NULL,
	  "by design: the canary's first byte is zero" },
	{ "nul-past-the-end", "profile=strict", HX_SILENT, 0, NULL, NULL,
	  "by design: the canary's first byte is zero" },
	/* bad values warn and keep the profile's default */
	{ "free-100", "profile=default,canary=2", HX_DETECT, SIGABRT, NULL, WARN("canary"),
	  "bad value: default (on) kept" },
	{ "free-100", "canary=yes,profile=default", HX_DETECT, SIGABRT, NULL, WARN("canary"),
	  "bad value: default (on) kept" },
	{ "free-100", "profile=light,canary=-1", HX_SILENT, 0, NULL, WARN("canary"),
	  "bad value: light's default (off) kept" },
	{ "free-100", "profile=bogus", HX_DETECT, SIGABRT, NULL, WARN("profile"),
	  "unknown profile: default kept" },
	{ "free-100", "profile=", HX_DETECT, SIGABRT, NULL, WARN("profile"),
	  "empty profile: default kept" },
	{ "free-100", "profile=default,seal=2", HX_DETECT, SIGABRT, NULL, WARN("seal"),
	  "bad seal value warned about" },
	{ "free-100", NULL, HX_DETECT, SIGABRT, NULL, NULL, "no XPFO_OPTIONS: profile=default" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "canary", cases, NELEM(cases), runs, NELEM(runs));
}
