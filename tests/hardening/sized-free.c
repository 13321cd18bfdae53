/* sized-free.c - free_sized, free_aligned_sized and C++ sized delete
 * (operator delete(void*, size_t) = _ZdlPvm, delete[] = _ZdaPvm) check that
 * the size given is in the block's size class, under every profile (no
 * switch):
 *
 *   xpfo: fatal: sized free of <p> with size <s>: the block has size class <n> (compartment "root")
 *
 * <n> is the slot size for small blocks (malloc_usable_size + 8 with
 * canaries), the run's bytes for page runs.  Controls: the right size (and
 * a size of the same class) are accepted silently.  A run realloc grew has
 * up to an eighth more room than its size (heap.c, realloc_room): freed
 * with the size given to realloc it is accepted (the fuzzer's ops target
 * found it refused), with half its size, refused.
 */
#include "harness.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

typedef void (*sized_fn)(void *, size_t);

static sized_fn lookup(const char *name)
{
	sized_fn f = (sized_fn)dlsym(RTLD_DEFAULT, name);
	if (!f)
		_exit(97);
	return f;
}

static int sized(const char *a, const char *fn, size_t n, size_t given)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	sized_fn f = lookup(fn);
	char *p = malloc(n);
	if (!p)
		return 97;
	memset(p, 1, n);
	size_t u = malloc_usable_size(p);
	size_t cls = n > 16384 ? u : u + canary;
	tu_expect("xpfo: fatal: sized free of %p with size %zu: the block has size class %zu" ROOT,
		 (void *)p, given, cls);
	f(h_opaque(p), given);
	return 0;
}

static int realloced(const char *a, size_t given)
{
	(void)a;
	sized_fn f = lookup("free_sized");
	char *p = malloc(65536);
	if (!p || !(p = realloc(p, 65600))) /* a small step: room given */
		return 97;
	memset(p, 1, 65600);
	size_t u = malloc_usable_size(p);
	if (u <= 69632) /* the room is what this case is about */
		return 96;
	tu_expect("xpfo: fatal: sized free of %p with size %zu: the block has size class %zu" ROOT,
		 (void *)p, given, u);
	f(h_opaque(p), given);
	return 0;
}

static int c_realloced_ok(const char *a) { return realloced(a, 65600); }
static int c_realloced(const char *a) { return realloced(a, 32768); }
static int c_small(const char *a) { return sized(a, "free_sized", 100, 5000); }
static int c_small_next(const char *a) { return sized(a, "free_sized", 100, 200); }
static int c_small_ok(const char *a) { return sized(a, "free_sized", 100, 100); }
static int c_small_same_class(const char *a) { return sized(a, "free_sized", 100, 97); }
static int c_run(const char *a) { return sized(a, "free_sized", 65536, 32768); }
static int c_run_ok(const char *a) { return sized(a, "free_sized", 65536, 65536); }
static int c_huge(const char *a) { return sized(a, "free_sized", 5u << 20, 4u << 20); }
static int c_huge_ok(const char *a) { return sized(a, "free_sized", 5u << 20, 5u << 20); }
static int c_small_as_run(const char *a) { return sized(a, "free_sized", 100, 100000); }
static int c_delete(const char *a) { return sized(a, "_ZdlPvm", 100, 24); }
static int c_delete_ok(const char *a) { return sized(a, "_ZdlPvm", 100, 100); }
static int c_delete_array(const char *a) { return sized(a, "_ZdaPvm", 640, 64); }
static int c_delete_array_ok(const char *a) { return sized(a, "_ZdaPvm", 640, 640); }

static int aligned(const char *a, size_t given)
{
	size_t canary = (size_t)h_arg_long(a, "canary", 0);
	void (*f)(void *, size_t, size_t) =
		(void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
	if (!f)
		return 97;
	char *p = aligned_alloc(64, 128);
	if (!p)
		return 97;
	size_t u = malloc_usable_size(p);
	tu_expect("xpfo: fatal: sized free of %p with size %zu: the block has size class %zu" ROOT,
		 (void *)p, given, u + canary);
	f(h_opaque(p), 64, given);
	return 0;
}

static int c_aligned(const char *a) { return aligned(a, 4096); }
static int c_aligned_ok(const char *a) { return aligned(a, 128); }

static const struct hcase cases[] = {
	{ "free_sized-small", c_small },
	{ "free_sized-next-class", c_small_next },
	{ "free_sized-small-as-run", c_small_as_run },
	{ "free_sized-run", c_run },
	{ "free_sized-huge", c_huge },
	{ "free_sized-huge-ok", c_huge_ok },
	{ "delete", c_delete },
	{ "delete[]", c_delete_array },
	{ "free_aligned_sized", c_aligned },
	{ "free_sized-ok", c_small_ok },
	{ "free_sized-same-class", c_small_same_class },
	{ "free_sized-run-ok", c_run_ok },
	{ "delete-ok", c_delete_ok },
	{ "delete[]-ok", c_delete_array_ok },
	{ "free_aligned_sized-ok", c_aligned_ok },
	{ "free_sized-realloced-run", c_realloced },
	{ "free_sized-realloced-run-ok", c_realloced_ok },
};

#define ALL(c, x, v)                                                       \
	{ c, "profile=default", x, v, "canary=8", NULL, NULL },            \
	{ c, "profile=strict", x, v, "canary=8", NULL, NULL },             \
	{ c, "profile=light", x, v, "canary=0", NULL, NULL }

static const struct hrun runs[] = {
	ALL("free_sized-small", HX_DETECT, SIGABRT),
	ALL("free_sized-next-class", HX_DETECT, SIGABRT),
	ALL("free_sized-small-as-run", HX_DETECT, SIGABRT),
	ALL("free_sized-run", HX_DETECT, SIGABRT),
	ALL("free_sized-huge", HX_DETECT, SIGABRT),
	ALL("delete", HX_DETECT, SIGABRT),
	ALL("delete[]", HX_DETECT, SIGABRT),
	ALL("free_aligned_sized", HX_DETECT, SIGABRT),
	ALL("free_sized-ok", HX_SILENT, 0),
	ALL("free_sized-same-class", HX_SILENT, 0),
	ALL("free_sized-run-ok", HX_SILENT, 0),
	ALL("free_sized-huge-ok", HX_SILENT, 0),
	ALL("delete-ok", HX_SILENT, 0),
	ALL("delete[]-ok", HX_SILENT, 0),
	ALL("free_aligned_sized-ok", HX_SILENT, 0),
	ALL("free_sized-realloced-run", HX_DETECT, SIGABRT),
	ALL("free_sized-realloced-run-ok", HX_SILENT, 0),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "sized-free", cases, NELEM(cases), runs, NELEM(runs));
}
