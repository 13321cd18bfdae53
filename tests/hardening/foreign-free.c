/* foreign-free.c - free of a pointer that is not from the xpfo heap (the
 * stack, a static object, a page mmap'd by the program, a string literal)
 * is fatal under every profile (no switch):
 *
 *   xpfo: fatal: invalid free of <p>: not from the xpfo heap (compartment "root")
 *
 * Control: free of a block from malloc, silently.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int foreign(void *p)
{
	tu_expect("xpfo: fatal: invalid free of %p: not from the xpfo heap" ROOT, p);
	free(h_opaque(p));
	return 0;
}

static int c_stack(const char *a)
{
	(void)a;
	char buf[64];
	memset(buf, 1, sizeof buf);
	return foreign(buf + 16);
}

static char global_buf[4096];
static int c_static(const char *a) { (void)a; return foreign(global_buf + 64); }
static int c_literal(const char *a) { (void)a; return foreign((void *)"a string literal"); }

static int c_mmap(const char *a)
{
	(void)a;
	void *m = mmap(NULL, 4 * h_page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (m == MAP_FAILED)
		return 97;
	return foreign(m);
}

static int c_own(const char *a)
{
	(void)a;
	void *p = malloc(64);
	if (!p)
		return 97;
	free(h_opaque(p));
	return 0;
}

static const struct hcase cases[] = {
	{ "stack", c_stack },
	{ "static", c_static },
	{ "literal", c_literal },
	{ "mmap", c_mmap },
	{ "own-block", c_own },
};

#define ALL(c, x, v)                                                       \
	{ c, "profile=default", x, v, NULL, NULL, NULL },                  \
	{ c, "profile=strict", x, v, NULL, NULL, NULL },                   \
	{ c, "profile=light", x, v, NULL, NULL, NULL }

static const struct hrun runs[] = {
	ALL("stack", HX_DETECT, SIGABRT),
	ALL("static", HX_DETECT, SIGABRT),
	ALL("literal", HX_DETECT, SIGABRT),
	ALL("mmap", HX_DETECT, SIGABRT),
	ALL("own-block", HX_SILENT, 0),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "foreign-free", cases, NELEM(cases), runs, NELEM(runs));
}
