/* quarantine.c - use of a quarantined slot.  With quarantine=N (strict:
 * 1024) a freed small slot waits in its thread's quarantine (random
 * eviction) before it can be handed out again, so a stale pointer cannot
 * write into the slot's next block meanwhile; with waf_check the write is
 * caught when the slot leaves the quarantine (evicted by later frees, or at
 * thread exit):
 *
 *   xpfo: fatal: write after free of <p> (byte 3 of the block, size class <n>) (compartment "root")
 *
 * The programs never allocate the freed slot's size class again, so with
 * quarantine=0 the slot goes straight back to its slab and is never checked:
 * they end silently.
 */
#include "harness.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static size_t canary;

/* Free a block of 64 bytes and write through the stale pointer. */
static char *stale(void)
{
	char *p = malloc(64);
	if (!p)
		_exit(97);
	size_t u = malloc_usable_size(p);
	memset(p, 'x', u);
	free(p);
	tu_expect("xpfo: fatal: write after free of %p (byte 3 of the block, size class %zu)" ROOT,
		 (void *)p, u + canary);
	((volatile char *)h_opaque(p))[3] = 'Q';
	return p;
}

static void *thread_body(void *u)
{
	(void)u;
	stale();
	return NULL; /* thread exit drains the quarantine */
}

static int c_thread_exit(const char *a)
{
	pthread_t t;
	canary = (size_t)h_arg_long(a, "canary", 0);
	if (pthread_create(&t, NULL, thread_body, NULL))
		return 97;
	pthread_join(t, NULL);
	return 0;
}

/* Later frees (of another size class) evict it. */
static int c_evicted(const char *a)
{
	canary = (size_t)h_arg_long(a, "canary", 0);
	stale();
	for (int i = 0; i < 100000; i++) {
		char *q = malloc(200);
		if (!q)
			return 97;
		free(q);
	}
	return 0;
}

/* While it waits, the slot is not handed out again: allocate the class
 * for a while (no write this time) and check the freed address never comes
 * back.  Exit 0: delayed; 3: reused at once. */
static int c_delayed(const char *a)
{
	(void)a;
	char *p = malloc(64);
	if (!p)
		return 97;
	free(p);
	for (int i = 0; i < 200; i++) {
		char *q = malloc(64);
		if (!q)
			return 97;
		if (q == p) {
			h_note("reused after %d allocations", i);
			return 3;
		}
	}
	return 0;
}

static const struct hcase cases[] = {
	{ "thread-exit", c_thread_exit },
	{ "evicted", c_evicted },
	{ "delayed-reuse", c_delayed },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"
#define ON(c, o, arg) { c, o, HX_DETECT, SIGABRT, arg, NULL, "quarantine on" }
#define OFF(c, o) { c, o, HX_SILENT, 0, NULL, NULL, "quarantine off: the slot is never checked" }
#define ONOFF(c)                                                               \
	ON(c, "profile=strict", "canary=8"),                                   \
	ON(c, "profile=strict,quarantine=1", "canary=8"),                      \
	ON(c, "profile=default,quarantine=16,waf_check=1", "canary=8"),        \
	ON(c, "profile=light,quarantine=16,waf_check=1,zero_on_free=1", "canary=0"), \
	OFF(c, "profile=strict,quarantine=0"), OFF(c, "profile=default"),      \
	OFF(c, "profile=light")

static const struct hrun runs[] = {
	ONOFF("thread-exit"),
	ONOFF("evicted"),
	{ "delayed-reuse", "profile=strict", HX_EXIT, 0, NULL, NULL, "quarantine on: reuse delayed" },
	{ "delayed-reuse", "profile=light,quarantine=1024", HX_EXIT, 0, NULL, NULL,
	  "quarantine on: reuse delayed" },
	{ "delayed-reuse", "profile=strict,quarantine=0,random_slots=0", HX_EXIT, 3, NULL, NULL,
	  "quarantine off: the slot comes back at once" },
	{ "delayed-reuse", "profile=light", HX_EXIT, 3, NULL, NULL,
	  "quarantine off: the slot comes back at once" },
	{ "thread-exit", "profile=strict,quarantine=65537", HX_DETECT, SIGABRT, "canary=8",
	  WARN("quarantine"), "out of range: strict's 1024 kept" },
	{ "thread-exit", "profile=default,quarantine=many,waf_check=1", HX_SILENT, 0, NULL,
	  WARN("quarantine"), "bad value: default's 0 kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "quarantine", cases, NELEM(cases), runs, NELEM(runs));
}
