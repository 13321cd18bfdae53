/* fill.c - what freed and new small blocks hold.  zero_on_free (default,
 * strict) clears a small block when it is freed, so a stale pointer or an
 * uninitialised allocation reads zeros, not the previous owner's data;
 * junk=1 fills new blocks with 0xdb and freed ones with 0xdf instead (to
 * make uses of uninitialised or freed memory visible).  No message: the
 * child reads the bytes and exits 0 when the fill is as the mitigation
 * says, 3 when the old data is still there (the mitigation off).
 */
#include "harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* Bytes [0, n) of p that are not `want`. */
static size_t count_not(const unsigned char *p, size_t n, unsigned char want)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += p[i] != want;
	return bad;
}

/* A freed block's bytes, read through a stale pointer (a neighbour keeps
 * the slab in use), for every size heap_free's inline zeroing treats apart
 * (slot_zero_inline: 8, up to 32, 64 and 128 bytes), on both sides of the
 * vector zeroing's 1 KiB (arch_zero) up to the largest slab class, and an
 * odd one whose slot ends past a 32-byte step. */
static int c_freed_cleared(const char *a)
{
	(void)a;
	static const size_t sizes[] = { 8,    24,   40,   64,   100,  120,   1000,
					1100, 2048, 4096, 5000, 8192, 12000, 16000 };
	size_t stale = 0;
	for (size_t k = 0; k < NELEM(sizes); k++) {
		char *keep = malloc(sizes[k]), *p = malloc(sizes[k]);
		if (!keep || !p)
			return 97;
		size_t u = malloc_usable_size(p);
		memset(p, 0x5a, u);
		free(p);
		size_t n = count_not(h_opaque(p), u, 0);
		if (n)
			h_note("%zu-byte block: %zu of %zu bytes not zero after free", sizes[k], n, u);
		stale += n;
	}
	return stale ? 3 : 0;
}

static int c_junk(const char *a)
{
	(void)a;
	char *keep = malloc(64), *p = malloc(64);
	if (!keep || !p)
		return 97;
	size_t u = malloc_usable_size(p);
	size_t bad_new = count_not((unsigned char *)p, u, 0xdb);
	memset(p, 0x5a, u);
	free(p);
	size_t bad_freed = count_not(h_opaque(p), u, 0xdf);
	h_note("new block: %zu of %zu bytes not 0xdb; freed: %zu not 0xdf", bad_new, u, bad_freed);
	return bad_new || bad_freed ? 3 : 0;
}

static const struct hcase cases[] = {
	{ "freed-block-cleared", c_freed_cleared },
	{ "junk", c_junk },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"

static const struct hrun runs[] = {
	{ "freed-block-cleared", "profile=default", HX_EXIT, 0, NULL, NULL, "zero_on_free on" },
	{ "freed-block-cleared", "profile=strict", HX_EXIT, 0, NULL, NULL, "zero_on_free on" },
	{ "freed-block-cleared", "profile=light,zero_on_free=1", HX_EXIT, 0, NULL, NULL,
	  "zero_on_free on" },
	{ "freed-block-cleared", "profile=light", HX_EXIT, 3, NULL, NULL,
	  "zero_on_free off: the old data stays" },
	{ "freed-block-cleared", "profile=default,zero_on_free=0,waf_check=0", HX_EXIT, 3, NULL,
	  NULL, "zero_on_free off: the old data stays" },
	/* waf_check is on in default too (issue 11): without a fill it goes */
	{ "freed-block-cleared", "profile=default,zero_on_free=0", HX_EXIT, 3, NULL,
	  "xpfo: warning: option waf_check needs zero_on_free or junk: turned off",
	  "zero_on_free off: waf_check off too, said" },
	{ "freed-block-cleared", "profile=strict,zero_on_free=0,waf_check=0", HX_EXIT, 3, NULL,
	  NULL, "zero_on_free off: the old data stays" },
	{ "freed-block-cleared", "profile=default,zero_on_free=no", HX_EXIT, 0, NULL,
	  WARN("zero_on_free"), "bad value: default (on) kept" },
	{ "junk", "profile=default,junk=1", HX_EXIT, 0, NULL, NULL, "junk on" },
	{ "junk", "profile=strict,junk=1", HX_EXIT, 0, NULL, NULL, "junk on" },
	{ "junk", "profile=light,junk=1", HX_EXIT, 0, NULL, NULL, "junk on" },
	{ "junk", "profile=default", HX_EXIT, 3, NULL, NULL, "junk off" },
	{ "junk", "profile=strict", HX_EXIT, 3, NULL, NULL, "junk off" },
	{ "junk", "profile=light", HX_EXIT, 3, NULL, NULL, "junk off" },
	{ "junk", "profile=default,junk=0xdb", HX_EXIT, 3, NULL, WARN("junk"),
	  "bad value: default (off) kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "fill", cases, NELEM(cases), runs, NELEM(runs));
}
