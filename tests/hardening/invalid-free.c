/* invalid-free.c - free of a pointer xpfo never handed out, though it lies
 * in memory xpfo manages, is fatal under every profile (no switch):
 *
 *   xpfo: fatal: invalid free of <p>: points into xpfo's metadata (compartment "root")
 *   xpfo: fatal: invalid free of <p>: not an allocated block (compartment "root")
 *
 * A metadata address comes from the public API: a compartment handle is
 * xpfo's own out-of-line metadata.  "Not an allocated block": a pointer into
 * a freed run (not its start), into the unused tail of a slab, and (with
 * guard_large) the guard page after a run, and addresses never handed
 * out at all (a slot no malloc returned, a page past a fresh run, a
 * segment never carved: once reported as double frees).  Control: the handle is destroyed
 * through the API, and a block is freed at its start, silently.  Also
 * malloc_usable_size of a freed block:
 *
 *   xpfo: fatal: malloc_usable_size of freed pointer <p> (compartment "root")
 */
#include "harness.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static int c_metadata(const char *a)
{
	(void)a;
	xpfo_compartment_t *c = xpfo_compartment_create("hardening", 0);
	if (!c)
		return 97;
	tu_expect("xpfo: fatal: invalid free of %p: points into xpfo's metadata" ROOT, (void *)c);
	free(h_opaque(c));
	return 0;
}

static int c_metadata_ok(const char *a)
{
	(void)a;
	xpfo_compartment_t *c = xpfo_compartment_create("hardening", 0);
	if (!c)
		return 97;
	return xpfo_compartment_destroy(c) ? 3 : 0;
}

static int c_freed_run_inside(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	free(p);
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)(p + 16));
	free(h_opaque(p + 16));
	return 0;
}

/* Class 80 slabs are one page of 51 slots: the last 16 bytes are no slot. */
static int c_slab_tail(const char *a)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	char *p = malloc(80 - canary);
	if (!p)
		return 97;
	if (malloc_usable_size(p) + canary != 80)
		return 97;
	char *tail = (char *)((unsigned long)p & ~(h_page() - 1)) + 51 * 80;
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)tail);
	free(h_opaque(tail));
	return 0;
}

static int c_guard_page(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)(p + 65536));
	free(h_opaque(p + 65536));
	return 0;
}

/* The slab table and the segment table: the parts of the metadata region
 * below the pool the compartment handle is in.  meta.c lays the region out
 * as guard, segment table, guard, slab table, guard, pool, guard; the
 * mappings in /proc/self/maps show it (each part is its own mapping, the
 * guards are one page each).  `part`: 1 the slab table, 2 the segment table
 * (checked against xpfo__test_metadata_address() when xpfo has it). */
static int metadata_below(int part)
{
	xpfo_compartment_t *c = xpfo_compartment_create("hardening", 0);
	if (!c)
		return 97;
	unsigned long lo = h_mapping_start(c);
	for (int i = 0; i < part && lo; i++) {
		unsigned long guard = h_mapping_start((char *)lo - 1);
		if (!guard || lo - guard != h_page() || h_mapping_prot((char *)guard)[0] != '-')
			return 97;
		lo = h_mapping_start((char *)guard - 1);
		if (!lo || strncmp(h_mapping_prot((char *)lo), "rw", 2))
			return 97;
	}
	/* the test hook names the segment table: cross-check the walk */
	void *(*hook)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "xpfo__test_metadata_address");
	if (part == 2 && hook && h_mapping_start(hook()) != lo) {
		h_note("the segment table is at %p, the walk found %#lx", hook(), lo);
		return 97;
	}
	char *p = (char *)lo + 64;
	tu_expect("xpfo: fatal: invalid free of %p: points into xpfo's metadata" ROOT, (void *)p);
	free(h_opaque(p));
	return 0;
}

static int c_slab_table(const char *a) { (void)a; return metadata_below(1); }
static int c_segment_table(const char *a) { (void)a; return metadata_below(2); }

/* malloc_usable_size of a freed block is misuse too, and says what it is */
static int c_usable_size_freed(const char *a)
{
	(void)a;
	char *p = malloc(32);
	if (!p)
		return 97;
	free(p);
	tu_expect("xpfo: fatal: malloc_usable_size of freed pointer %p" ROOT, (void *)p);
	return malloc_usable_size(h_opaque(p)) ? 3 : 4;
}

/* Addresses of the heap that were never handed out are invalid frees, not
 * double frees (issue 33): a slot of a live slab no malloc returned, a page
 * of a carved segment past everything written there, a segment never
 * carved.  A real double free still says so (double-free.c). */

/* A slab of its own (a new compartment's first block, class 80: one page
 * of 51 slots) with one slot handed out: the next slot never was. */
static int c_never_given_slot(const char *a)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	xpfo_compartment_t *c = xpfo_compartment_create("hardening", 0);
	char *p = c ? xpfo_malloc_in(c, 80 - canary) : NULL;
	if (!p || malloc_usable_size(p) + canary != 80)
		return 97;
	char *base = (char *)((unsigned long)p & ~(h_page() - 1));
	size_t i = (size_t)(p - base) / 80;
	char *q = base + ((i + 1) % 51) * 80;
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)q);
	free(h_opaque(q));
	return 0;
}

/* 16 pages past a fresh 64 KiB run of a new compartment: its segment was
 * carved for that run alone. */
static int c_never_given_page(const char *a)
{
	(void)a;
	xpfo_compartment_t *c = xpfo_compartment_create("hardening", 0);
	char *p = c ? xpfo_malloc_in(c, 65536) : NULL;
	if (!p || ((unsigned long)p & ((4ul << 20) - 1)) > (3ul << 20))
		return 97;
	char *q = p + 65536 + 16 * h_page();
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)q);
	free(h_opaque(q));
	return 0;
}

/* The last segment of the GiB the heap's first run is in (the heap is a
 * power-of-two reservation of 1 GiB or more, aligned to its size), still
 * inaccessible in one mapping with its neighbours: never carved. */
static int c_never_carved(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	char *q = (char *)(((unsigned long)p & ~((1ul << 30) - 1)) + (1ul << 30) - (4ul << 20));
	if (q == (char *)((unsigned long)p & ~((4ul << 20) - 1)) ||
	    h_mapping_start(q) > (unsigned long)q - h_page() || h_mapping_end(q) < (unsigned long)q + (4ul << 20) ||
	    strncmp(h_mapping_prot(q), "---", 3))
		return 97;
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block" ROOT, (void *)q);
	free(h_opaque(q));
	return 0;
}

static int c_run_ok(const char *a)
{
	(void)a;
	char *p = malloc(65536);
	if (!p)
		return 97;
	free(h_opaque(p));
	return 0;
}

static const struct hcase cases[] = {
	{ "metadata", c_metadata },
	{ "metadata-ok", c_metadata_ok },
	{ "slab-table", c_slab_table },
	{ "segment-table", c_segment_table },
	{ "usable-size-of-freed", c_usable_size_freed },
	{ "freed-run-inside", c_freed_run_inside },
	{ "slab-tail", c_slab_tail },
	{ "guard-page", c_guard_page },
	{ "run-ok", c_run_ok },
	{ "never-given-slot", c_never_given_slot },
	{ "never-given-page", c_never_given_page },
	{ "never-carved", c_never_carved },
};

#define ALL(c, x, v)                                                       \
	{ c, "profile=default", x, v, "canary=8", NULL, NULL },            \
	{ c, "profile=strict", x, v, "canary=8", NULL, NULL },             \
	{ c, "profile=light", x, v, "canary=0", NULL, NULL }

static const struct hrun runs[] = {
	ALL("metadata", HX_DETECT, SIGABRT),
	ALL("slab-table", HX_DETECT, SIGABRT),
	ALL("segment-table", HX_DETECT, SIGABRT),
	ALL("usable-size-of-freed", HX_DETECT, SIGABRT),
	ALL("freed-run-inside", HX_DETECT, SIGABRT),
	ALL("slab-tail", HX_DETECT, SIGABRT),
	ALL("never-given-slot", HX_DETECT, SIGABRT),
	ALL("never-given-page", HX_DETECT, SIGABRT),
	ALL("never-carved", HX_DETECT, SIGABRT),
	{ "guard-page", "profile=default", HX_DETECT, SIGABRT, NULL, NULL, NULL },
	{ "guard-page", "profile=strict", HX_DETECT, SIGABRT, NULL, NULL, NULL },
	ALL("metadata-ok", HX_SILENT, 0),
	ALL("run-ok", HX_SILENT, 0),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "invalid-free", cases, NELEM(cases), runs, NELEM(runs));
}
