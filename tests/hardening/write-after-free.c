/* write-after-free.c - with waf_check (on in default and strict, sampled in
 * default: waf_bytes; needs zero_on_free or junk), a freed small slot must still hold its fill when it is handed out
 * again (or leaves the quarantine); a write through a stale pointer is
 * fatal then:
 *
 *   xpfo: fatal: write after free of <p> (byte <k> of the block, size class <n>) (compartment "root")
 *
 * <n> is the slot size (malloc_usable_size + 8 with canaries).  The program
 * allocates and frees the same size until it gets the freed slot back (or
 * for 100000 rounds): with the check off it ends silently, the stale write
 * now in a live block (or, with a quarantine, in a slot that left it
 * unchecked).
 */
#include "harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* where: 0 byte 5, 1 the last byte, 2 the middle byte */
static int waf(const char *a, size_t n, int where)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	char *p = malloc(n);
	if (!p)
		return 97;
	size_t u = malloc_usable_size(p);
	size_t k = where == 1 ? u - 1 : where == 2 ? u / 2 : 5;
	memset(p, 'x', u);
	free(p);
	tu_expect("xpfo: fatal: write after free of %p (byte %zu of the block, size class %zu)" ROOT,
		 (void *)p, k, u + canary);
	((volatile char *)h_opaque(p))[k] = 'A';
	/* With a quarantine the slot comes out (and is checked) after a random
	 * number of frees, 1024 on average in strict: 100000 rounds leave it
	 * in with probability e^-97. */
	for (long i = 0; i < 100000; i++) {
		char *q = malloc(n);
		if (!q)
			return 97;
		if (q == p) {
			h_note("the slot was handed out again after %ld rounds", i);
			return 0; /* the stale write is in a live block now */
		}
		free(q);
	}
	h_note("the slot was not handed out again in 100000 rounds");
	return 0;
}

/* A stale write into a slot of a slab that retired since (every slot
 * free, its pages queued in the thread's gather) must still be caught when
 * the thread takes those pages back for a new slab of the same class: the
 * new slab is not filled (slab.c's slab_needs_fill), so the write stays
 * there for the check (issue 11).  The first 64 pages of empty slabs stay
 * kept by the heap under keep_empty=64; the victim is in a slab past them.
 * Under the default bound its slab is kept, and the check at its reuse
 * catches the write the same way. */
#define RETIRE_BLOCKS 16384
static int c_retired(const char *a)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	static char *b[RETIRE_BLOCKS];
	for (size_t i = 0; i < RETIRE_BLOCKS; i++)
		if (!(b[i] = malloc(40)))
			return 97;
	char *p = b[RETIRE_BLOCKS / 2];
	size_t u = malloc_usable_size(p);
	for (size_t i = 0; i < RETIRE_BLOCKS; i++)
		free(b[i]);
	tu_expect("xpfo: fatal: write after free of %p (byte 5 of the block, size class %zu)" ROOT,
		 (void *)p, u + canary);
	((volatile char *)h_opaque(p))[5] = 'A';
	for (size_t i = 0; i < 2 * RETIRE_BLOCKS; i++) {
		char *q = malloc(40);
		if (!q)
			return 97;
		if (q == p) {
			h_note("the slot was handed out again after %zu blocks", i);
			return 0;
		}
	}
	h_note("the slot was not handed out again");
	return 0;
}

static int c_first(const char *a) { return waf(a, 40, 0); }
static int c_last_byte(const char *a) { return waf(a, 40, 1); }
static int c_1000(const char *a) { return waf(a, 1000, 0); }
static int c_mid(const char *a) { return waf(a, 1000, 2); }

static const struct hcase cases[] = {
	{ "byte-5", c_first },
	{ "last-byte", c_last_byte },
	{ "size-1000", c_1000 },
	{ "middle", c_mid },
	{ "retired", c_retired },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"
#define ON(c, o, arg) { c, o, HX_DETECT, SIGABRT, arg, NULL, "waf_check on" }
#define OFF(c, o) { c, o, HX_SILENT, 0, NULL, NULL, "waf_check off: undetected" }
#define ONOFF(c)                                                                 \
	ON(c, "profile=strict", "canary=8"),                                     \
	ON(c, "profile=default,waf_check=1", "canary=8"),                        \
	ON(c, "profile=default,waf_check=1,junk=1", "canary=8"),                 \
	ON(c, "profile=light,waf_check=1,zero_on_free=1", "canary=0"),           \
	ON(c, "profile=default", "canary=8"), /* on by default (issue 11) */     \
	OFF(c, "profile=default,waf_check=0"), OFF(c, "profile=light"),          \
	OFF(c, "profile=strict,waf_check=0")

static const struct hrun runs[] = {
	ONOFF("byte-5"),
	ONOFF("last-byte"),
	ONOFF("size-1000"),
	/* waf_check without a fill to check is turned off, with a warning */
	{ "byte-5", "profile=light,waf_check=1", HX_SILENT, 0, NULL,
	  "xpfo: warning: option waf_check needs zero_on_free or junk: turned off",
	  "no fill: check off" },
	{ "byte-5", "profile=strict,zero_on_free=0", HX_SILENT, 0, NULL,
	  "xpfo: warning: option waf_check needs zero_on_free or junk: turned off",
	  "no fill: check off" },
	{ "byte-5", "profile=strict,waf_check=on", HX_DETECT, SIGABRT, "canary=8",
	  WARN("waf_check"), "bad value: strict's default (on) kept" },
	{ "byte-5", "profile=default,waf_check=3", HX_DETECT, SIGABRT, "canary=8",
	  WARN("waf_check"), "bad value: default's (on) kept" },
	/* the default profile checks the first waf_bytes (64) and the last 8
	 * bytes of a slot: byte 504 of a 1,000-byte block is not seen there */
	OFF("middle", "profile=default"),
	ON("middle", "profile=default,waf_bytes=0", "canary=8"),
	ON("middle", "profile=strict", "canary=8"),
	/* a slot of a retired slab taken back whole for its class (the heap
	 * keeps 64 pages of empty slabs: the victim's retires) */
	ON("retired", "profile=default,keep_empty=64", "canary=8"),
	ON("retired", "profile=default,keep_empty=64,waf_bytes=0", "canary=8"),
	OFF("retired", "profile=default,keep_empty=64,waf_check=0"),
	/* the same slab kept empty by the heap (keep_empty's default) */
	ON("retired", "profile=default", "canary=8"),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "write-after-free", cases, NELEM(cases), runs, NELEM(runs));
}
