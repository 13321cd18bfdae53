/* messages.c - make xpfo write each kind of line the documentation shows.
 *
 *   messages CASE      one of the cases below; writes xpfo's line to stderr
 *                      and dies the way xpfo makes it (or exits 0)
 *
 * tests/docs/blocks.py runs every case and matches each documented message
 * line (README.md, xpfo(3), xpfo(7)) against the lines these runs produce,
 * with the documentation's placeholders (ADDRESS, TID, NAME, ...) and its
 * example values (addresses, thread ids, sizes) standing for any value.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xpfo.h"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

/* Keep the compiler from seeing through a pointer. */
static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static int violation(void) /* root reads a closed compartment's page */
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		return 1;
	volatile char *p = malloc(8192);
	xpfo_leave(prev);
	return p ? p[0] : 1;
}

static int double_free(void)
{
	char *p = malloc(40);
	free(p);
	free(opaque(p));
	return 1;
}

static int free_stack(void)
{
	char buf[16];
	free(opaque(buf));
	return 1;
}

static int interior(void)
{
	char *p = malloc(40);
	free(opaque(p + 8));
	return 1;
}

static int realloc_freed(void)
{
	char *p = malloc(40);
	free(p);
	return realloc(opaque(p), 80) == NULL;
}

static int canary(void) /* one byte past a 40-byte block (size class 48) */
{
	for (int i = 0; i < 64; i++) {
		char *p = opaque(malloc(40));
		size_t u = malloc_usable_size(p);
		if (((unsigned long)p + u) % 4096) { /* as tests/hardening/canary.c */
			p[u] = 'y';
			free(p);
			return 1;
		}
	}
	return 1;
}

static int write_after_free(void) /* byte 3 of a freed block, then its slot reused */
{
	for (int i = 0; i < 4096; i++) {
		char *p = opaque(malloc(40));
		free(p);
		p[3] = 'x';
		char *q = malloc(40);
		if (q != p)
			p[3] = 0;
		free(q);
	}
	return 1;
}

static int denied(void) /* a system call outside the lock's allow-list */
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", XPFO_COMPARTMENT_STRICT);
	if (!c || xpfo_lock_thread(c, 0))
		return 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	return fd == -1 && errno == EPERM ? 0 : 1;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "violation", violation },   { "double-free", double_free },
	{ "free-stack", free_stack }, { "interior", interior },
	{ "realloc-freed", realloc_freed }, { "canary", canary },
	{ "write-after-free", write_after_free }, { "denied", denied },
};

int main(int argc, char **argv)
{
	for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
		if (!strcmp(argv[1], cases[i].name))
			return cases[i].fn();
	fprintf(stderr, "usage: messages CASE; cases:");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		fprintf(stderr, " %s", cases[i].name);
	fprintf(stderr, "\n");
	return 2;
}
