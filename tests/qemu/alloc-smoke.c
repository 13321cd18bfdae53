/* alloc-smoke.c - libxpfo linked statically (libxpfo.a, -static), as the
 * allocator's tests are when they run in the QEMU guest: plain malloc and
 * free must be xpfo's (xpfo_owner knows the pointers), a compartment must
 * work, and the backend is printed.  Exit 0 pass, 1 fail. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpfo.h"

static int failures;

#define CHECK(cond, ...)                                           \
	do {                                                       \
		if (!(cond)) {                                     \
			failures++;                                \
			printf("not ok: %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                       \
			printf("\n");                              \
		}                                                  \
	} while (0)

int main(void)
{
	static void *ptrs[1000];
	xpfo_compartment_t *c, *prev;
	struct xpfo_stats st;
	char *p;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < 1000; i++) {
		size_t n = 1 + (size_t)i * 37 % 70000;

		ptrs[i] = malloc(n);
		CHECK(ptrs[i] != NULL, "malloc(%zu)", n);
		if (!ptrs[i])
			continue;
		memset(ptrs[i], i & 0xff, n);
		CHECK(xpfo_owner(ptrs[i]) == xpfo_root(),
		      "malloc(%zu) did not come from xpfo's root heap", n);
	}
	for (i = 0; i < 1000; i++)
		free(ptrs[i]);

	c = xpfo_compartment_create("smoke", 0);
	CHECK(c != NULL, "xpfo_compartment_create");
	if (c) {
		prev = xpfo_enter(c);
		p = malloc(64);
		CHECK(p && xpfo_owner(p) == c, "malloc inside the compartment");
		if (p)
			strcpy(p, "inside");
		xpfo_leave(prev);
		free(p);
		CHECK(xpfo_compartment_destroy(c) == 0, "xpfo_compartment_destroy");
	}
	CHECK(xpfo_stats_get(&st, sizeof(st)) == 0, "xpfo_stats_get");
	CHECK(st.allocs >= 1001, "only %llu allocations counted",
	      (unsigned long long)st.allocs);
	printf("alloc-smoke: backend %s, %llu allocations, %llu revoke syscalls\n",
	       xpfo_backend(), (unsigned long long)st.allocs,
	       (unsigned long long)st.revoke_syscalls);
	if (failures) {
		printf("alloc-smoke: %d check(s) failed\n", failures);
		return 1;
	}
	printf("alloc-smoke: all checks passed\n");
	return 0;
}
