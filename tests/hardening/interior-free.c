/* interior-free.c - free of a pointer inside a live block is fatal under
 * every profile (no switch), and names the block and its size class:
 *
 *   xpfo: fatal: invalid free of <p>: interior pointer of the block at <b> (size class <n>) (compartment "root")
 *
 * <n> is the slot size for small blocks (malloc_usable_size + the 8-byte
 * canary when canaries are on), the run's bytes for page runs and huge
 * blocks, whichever page of the run the pointer is in.  Control: the same
 * blocks freed at their start, silently.
 */
#include "harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static int interior(const char *a, size_t n, size_t off)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	char *p = malloc(n);
	if (!p)
		return 97;
	memset(p, 1, n);
	size_t u = malloc_usable_size(p);
	size_t cls = n > 16384 ? (u + h_page() - 1) & ~(h_page() - 1) : u + canary;
	if (off == 0) {
		free(h_opaque(p));
		return 0;
	}
	tu_expect("xpfo: fatal: invalid free of %p: interior pointer of the block at %p "
		 "(size class %zu)" ROOT, (void *)(p + off), (void *)p, cls);
	free(h_opaque(p + off));
	return 0;
}

static int c_small_16(const char *a) { return interior(a, 64, 16); }
static int c_small_1(const char *a) { return interior(a, 200, 1); }
static int c_small_last(const char *a) { return interior(a, 1000, 999); }
static int c_run_tail_page(const char *a) { return interior(a, 65536, 4096); }
static int c_run_first_page(const char *a) { return interior(a, 100000, 8); }
static int c_huge(const char *a) { return interior(a, 5u << 20, 4096); }
static int c_huge_first_page(const char *a) { return interior(a, 5u << 20, 8); }
static int c_small_ok(const char *a) { return interior(a, 64, 0); }
static int c_run_ok(const char *a) { return interior(a, 100000, 0); }

static const struct hcase cases[] = {
	{ "small+16", c_small_16 },
	{ "small+1", c_small_1 },
	{ "small-last-byte", c_small_last },
	{ "run-second-page", c_run_tail_page },
	{ "run-first-page", c_run_first_page },
	{ "huge-second-page", c_huge },
	{ "huge-first-page", c_huge_first_page },
	{ "small-ok", c_small_ok },
	{ "run-ok", c_run_ok },
};

#define ALL(c, x, v)                                                       \
	{ c, "profile=default", x, v, "canary=8", NULL, NULL },            \
	{ c, "profile=strict", x, v, "canary=8", NULL, NULL },             \
	{ c, "profile=light", x, v, "canary=0", NULL, NULL }

static const struct hrun runs[] = {
	ALL("small+16", HX_DETECT, SIGABRT),
	/* the class printed follows the canary switch, not the profile */
	{ "small+16", "profile=default,canary=0", HX_DETECT, SIGABRT, "canary=0", NULL, NULL },
	{ "small+16", "profile=light,canary=1", HX_DETECT, SIGABRT, "canary=8", NULL, NULL },
	ALL("small+1", HX_DETECT, SIGABRT),
	ALL("small-last-byte", HX_DETECT, SIGABRT),
	ALL("run-second-page", HX_DETECT, SIGABRT),
	ALL("run-first-page", HX_DETECT, SIGABRT),
	ALL("huge-second-page", HX_DETECT, SIGABRT),
	ALL("huge-first-page", HX_DETECT, SIGABRT),
	ALL("small-ok", HX_SILENT, 0),
	ALL("run-ok", HX_SILENT, 0),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "interior-free", cases, NELEM(cases), runs, NELEM(runs));
}
