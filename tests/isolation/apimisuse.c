/* apimisuse.c - every compartment function given a bad handle or a bad
 * pointer fails with errno set and does not crash, and the misuse leaks
 * nothing (issue 3, "What must be shown" 5).
 *
 * Bad handles: NULL, destroyed, root where root is refused, and pointers
 * that were never handles (stack, static, a heap block, a handle + 1, a
 * small integer).  Bad pointers for xpfo_transfer: small blocks, a
 * page-aligned small block, interior pointers, freed blocks (before and after
 * the flush), foreign memory (stack, static, mmap, NULL).  Enter/leave
 * misuse: leave without enter, leave to a bad handle, destroy while inside
 * (EBUSY, also from another thread), STRICT with other threads (EPERM).
 * Leaks: live_bytes and the live compartment count are the same before and
 * after (stats), after 1,000 rounds of all of it; compartment ids are
 * recycled (more create/destroy cycles than there are ids), and running out
 * of them is EMFILE, not a crash.
 *
 * Usage: apimisuse [--rounds N] [--joins N]: N rounds of all of it after the
 * first (1,000), N thread joins before a STRICT enter (3,000); the QEMU
 * guest runs fewer (tests/qemu/pkeys-rig.sh).  Both backends behave the
 * same here (STRICT included: docs/security.md).
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#define RUN (64u << 10)

static int quiet; /* after the first round, report failures only */

/* errno after a call that must fail with `want`. */
#define EXPECT_ERR(call, failed, want)                                           \
	do {                                                                     \
		errno = 0;                                                       \
		__typeof__(call) r_ = (call);                                    \
		int e_ = errno;                                                  \
		CHECK(failed(r_) && e_ == (want), "%s: returned %s, errno %s (want %s)", \
		      #call, failed(r_) ? "failure" : "success", strerrorname_np(e_),  \
		      strerrorname_np(want));                                    \
	} while (0)
#define IS_NULL(r) ((r) == NULL)
#define IS_NEG1(r) ((r) == -1)

static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static int static_thing[64];

/* Every handle-taking function with handle h must fail with EINVAL. */
static void bad_handle(xpfo_compartment_t *h, const char *what, void *run)
{
	unsigned long before = tu_failures;
	xpfo_compartment_t *cur = xpfo_current();
	EXPECT_ERR(xpfo_enter(h), IS_NULL, EINVAL);
	CHECK(xpfo_current() == cur, "%s: xpfo_enter changed the current compartment", what);
	EXPECT_ERR(xpfo_malloc_in(h, 10), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_malloc_in(h, RUN), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_calloc_in(h, 1, 10), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_aligned_alloc_in(h, 64, 64), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_transfer(run, h), IS_NEG1, EINVAL);
	CHECK(xpfo_owner(run) == cur, "%s: a failed transfer changed the owner", what);
	((volatile char *)run)[100] = 1; /* still ours */
	EXPECT_ERR(xpfo_compartment_destroy(h), IS_NEG1, EINVAL);
	/* leave to a bad handle from inside a real compartment: refused, and
	 * the thread stays where it is */
	xpfo_compartment_t *c = xpfo_compartment_create("leaver", 0);
	CHECK(c != NULL, "create: %s", strerror(errno));
	xpfo_compartment_t *prev = xpfo_enter(c);
	CHECK(prev == cur, "enter");
	errno = 0;
	xpfo_leave(h);
	CHECK(errno == EINVAL, "%s: xpfo_leave(bad): errno %s", what, strerrorname_np(errno));
	CHECK(xpfo_current() == c, "%s: xpfo_leave(bad) left the compartment", what);
	xpfo_leave(prev);
	CHECK(xpfo_current() == cur, "leave");
	CHECK(xpfo_compartment_destroy(c) == 0, "destroy: %s", strerror(errno));
	if (!quiet && tu_failures == before)
		fprintf(stderr, "ok   bad handle: %s\n", what);
}

static void *inside_thread(void *arg)
{
	xpfo_compartment_t **cs = arg;
	xpfo_enter(cs[0]);
	__atomic_store_n((int *)&cs[2], 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n((int *)&cs[3], __ATOMIC_ACQUIRE))
		usleep(1000);
	xpfo_leave(xpfo_root());
	return NULL;
}

static void *idle_thread(void *arg)
{
	while (!__atomic_load_n((int *)arg, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/* "Threads:" of /proc/self/status. */
static int threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Threads:", 8))
			n = atoi(line + 8);
	if (f)
		fclose(f);
	return n;
}

static void *no_op(void *arg)
{
	return arg;
}

/* Once pthread_join returned, the process is single-threaded: entering a
 * STRICT compartment must work every time. */
static void strict_after_join(int tries)
{
	xpfo_compartment_t *s = xpfo_compartment_create("strict", XPFO_COMPARTMENT_STRICT);
	CHECK(s != NULL, "create STRICT");
	int refused = 0;
	for (int i = 0; i < tries; i++) {
		pthread_t th;
		CHECK(pthread_create(&th, NULL, no_op, NULL) == 0, "pthread_create");
		pthread_join(th, NULL);
		xpfo_compartment_t *prev = xpfo_enter(s);
		if (!prev) {
			refused++;
			continue;
		}
		xpfo_leave(prev);
	}
	CHECK(refused == 0, "xpfo_enter(STRICT) right after pthread_join (one thread left) was "
			    "refused %d of %d times", refused, tries);
	CHECK(xpfo_compartment_destroy(s) == 0, "destroy STRICT");
	if (!refused)
		fprintf(stderr, "ok   STRICT enter right after pthread_join, %d times\n", tries);
}

/* With a live thread just made, entering a STRICT compartment must be
 * refused every time: counting the /proc/self/task listing alone let 1 of
 * 300 through (a listing can miss a thread while another is unhashed). */
static void strict_with_new_thread(int tries)
{
	xpfo_compartment_t *s = xpfo_compartment_create("strict", XPFO_COMPARTMENT_STRICT);
	CHECK(s != NULL, "create STRICT");
	int admitted = 0;
	for (int i = 0; i < tries; i++) {
		int stop = 0;
		pthread_t th;
		CHECK(pthread_create(&th, NULL, idle_thread, &stop) == 0, "pthread_create");
		xpfo_compartment_t *prev = xpfo_enter(s);
		if (prev) {
			admitted++;
			xpfo_leave(prev);
		}
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
	}
	CHECK(admitted == 0, "xpfo_enter(STRICT) with another thread alive was admitted %d of %d "
			     "times", admitted, tries);
	CHECK(xpfo_compartment_destroy(s) == 0, "destroy STRICT");
	if (!admitted)
		fprintf(stderr, "ok   STRICT enter refused with a thread just made, %d times\n", tries);
}

static void one_round(void)
{
	unsigned long before = tu_failures;
	void *run = malloc(RUN);
	CHECK(run != NULL, "malloc");

	/* creation */
	EXPECT_ERR(xpfo_compartment_create(NULL, 0), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_compartment_create("x", 0x80u), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_compartment_create("x", ~0u), IS_NULL, EINVAL);
	errno = 0;
	xpfo_compartment_t *sec = xpfo_compartment_create("secret", XPFO_COMPARTMENT_SECRET);
	CHECK(sec || errno == ENOSYS, "create SECRET: NULL with errno %s (want a handle or "
				       "ENOSYS)", strerrorname_np(errno));
	if (sec)
		CHECK(xpfo_compartment_destroy(sec) == 0, "destroy SECRET");
	EXPECT_ERR(xpfo_compartment_name(NULL), IS_NULL, EINVAL);
	errno = 1234;
	CHECK(xpfo_owner(NULL) == NULL && errno == 1234, "xpfo_owner(NULL) changed errno");

	/* bad handles */
	xpfo_compartment_t *d = xpfo_compartment_create("doomed", 0);
	CHECK(d != NULL, "create");
	CHECK(xpfo_compartment_destroy(d) == 0, "destroy");
	int stack_thing[16] = { 0 };
	void *heap_thing = malloc(256);
	memset(heap_thing, 0, 256);
	xpfo_compartment_t *live = xpfo_compartment_create("live", 0);
	bad_handle(NULL, "NULL", run);
	bad_handle(d, "destroyed", run);
	bad_handle(opaque(stack_thing), "stack address", run);
	bad_handle(opaque(static_thing), "static address", run);
	bad_handle(opaque(heap_thing), "heap block", run);
	bad_handle(opaque((char *)live + 1), "handle + 1", run);
	bad_handle(opaque((void *)(uintptr_t)16), "small integer", run);
	free(heap_thing);
	CHECK(xpfo_compartment_destroy(live) == 0, "destroy");
	EXPECT_ERR(xpfo_compartment_destroy(xpfo_root()), IS_NEG1, EINVAL);

	/* leave without enter */
	CHECK(xpfo_current() == xpfo_root(), "not in root");
	errno = 0;
	xpfo_leave(xpfo_root());
	CHECK(errno == EINVAL, "leave without enter: errno %s", strerrorname_np(errno));
	CHECK(xpfo_current() == xpfo_root(), "leave without enter moved the thread");
	xpfo_compartment_t *a = xpfo_compartment_create("a", 0);
	xpfo_compartment_t *b = xpfo_compartment_create("b", 0);
	CHECK(xpfo_enter(a) == xpfo_root() && xpfo_enter(b) == a, "nested enter");
	xpfo_leave(a);
	CHECK(xpfo_current() == a, "nested leave");
	xpfo_leave(xpfo_root());
	CHECK(xpfo_current() == xpfo_root(), "nested leave");
	errno = 0;
	xpfo_leave(a);
	CHECK(errno == EINVAL, "leave once too often: errno %s", strerrorname_np(errno));
	CHECK(xpfo_current() == xpfo_root(), "leave once too often moved the thread");

	/* destroy while inside: this thread, then another thread */
	CHECK(xpfo_enter(a) == xpfo_root(), "enter");
	EXPECT_ERR(xpfo_compartment_destroy(a), IS_NEG1, EBUSY);
	xpfo_leave(xpfo_root());
	xpfo_compartment_t *shared[4] = { b, NULL, NULL, NULL };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, inside_thread, shared) == 0, "pthread_create");
	while (!__atomic_load_n((int *)&shared[2], __ATOMIC_ACQUIRE))
		usleep(1000);
	EXPECT_ERR(xpfo_compartment_destroy(b), IS_NEG1, EBUSY);
	__atomic_store_n((int *)&shared[3], 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK(xpfo_compartment_destroy(b) == 0, "destroy after the thread left: %s",
	      strerror(errno));

	/* STRICT with another thread alive: refused */
	xpfo_compartment_t *s = xpfo_compartment_create("strict", XPFO_COMPARTMENT_STRICT);
	CHECK(s != NULL, "create STRICT");
	int stop = 0;
	CHECK(pthread_create(&th, NULL, idle_thread, &stop) == 0, "pthread_create");
	EXPECT_ERR(xpfo_enter(s), IS_NULL, EPERM);
	CHECK(xpfo_current() == xpfo_root(), "a refused STRICT enter moved the thread");
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	/* the kernel may list the joined thread for a moment longer (see
	 * strict_after_join for that race) */
	while (threads_now() != 1)
		usleep(100);
	CHECK(xpfo_enter(s) == xpfo_root(), "STRICT enter alone: %s", strerror(errno));
	xpfo_leave(xpfo_root());
	CHECK(xpfo_compartment_destroy(s) == 0, "destroy STRICT");

	/* allocation arguments */
	EXPECT_ERR(xpfo_aligned_alloc_in(a, 0, 64), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_aligned_alloc_in(a, 48, 64), IS_NULL, EINVAL);
	EXPECT_ERR(xpfo_calloc_in(a, SIZE_MAX / 2, 4), IS_NULL, ENOMEM);
	EXPECT_ERR(xpfo_malloc_in(a, SIZE_MAX - 4096), IS_NULL, ENOMEM);

	/* transfer: pointers that are not whole-page blocks */
	char *small = malloc(100);
	char *pa = aligned_alloc(4096, 2048); /* page aligned, but a slab slot (4096 bytes or more: a run) */
	char *run2 = malloc(RUN);
	char *freed = malloc(RUN), *freed2 = malloc(RUN);
	char *mm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char local[64];
	free(freed);
	EXPECT_ERR(xpfo_transfer(small, a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(pa, a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(run2 + 4096, a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(run2 + 1, a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(freed, a), IS_NEG1, EINVAL); /* queued */
	free(freed2);
	xpfo_flush();
	EXPECT_ERR(xpfo_transfer(freed2, a), IS_NEG1, EINVAL); /* revoked */
	EXPECT_ERR(xpfo_transfer(opaque(local), a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(opaque(static_thing), a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(mm, a), IS_NEG1, EINVAL);
	EXPECT_ERR(xpfo_transfer(NULL, a), IS_NEG1, EINVAL);
	CHECK(xpfo_owner(small) == xpfo_root() && xpfo_owner(pa) == xpfo_root() &&
		      xpfo_owner(run2) == xpfo_root(), "a refused transfer changed an owner");
	small[0] = pa[0] = run2[0] = 1; /* all still root's */
	CHECK(xpfo_transfer(run2, xpfo_root()) == 0, "transfer to its own owner");
	munmap(mm, 4096);
	free(small);
	free(pa);
	free(run2);
	free(run);
	CHECK(xpfo_compartment_destroy(a) == 0, "destroy");
	xpfo_flush();
	if (!quiet && tu_failures == before)
		fprintf(stderr, "ok   creation, root, leave, EBUSY, STRICT/EPERM, allocation "
				"arguments, transfer of non-page-run pointers\n");
}

/* Compartment ids run out (EMFILE) and come back after destroy. */
static void exhaust(void)
{
	struct xpfo_stats s0, s1;
	tu_stats(&s0);
	enum { MAX = 8192 };
	static xpfo_compartment_t *cs[MAX];
	int n = 0;
	errno = 0;
	while (n < MAX && (cs[n] = xpfo_compartment_create("many", 0)))
		n++;
	int e = errno;
	CHECK(n < MAX && e == EMFILE, "created %d compartments, then errno %s (want EMFILE)", n,
	      strerrorname_np(e));
	/* each works */
	for (int i = 0; i < n; i += 97) {
		char *p = xpfo_malloc_in(cs[i], 32);
		CHECK(p && xpfo_owner(p) == cs[i], "malloc_in compartment %d", i);
		free(p);
	}
	for (int i = 0; i < n; i++)
		CHECK(xpfo_compartment_destroy(cs[i]) == 0, "destroy %d: %s", i, strerror(errno));
	tu_stats(&s1);
	CHECK(s1.compartments == s0.compartments, "compartments %llu after destroying all, %llu "
		"before", (unsigned long long)s1.compartments, (unsigned long long)s0.compartments);
	/* more cycles than ids: ids are recycled */
	for (int i = 0; i < 3 * n; i++) {
		xpfo_compartment_t *c = xpfo_compartment_create("cycle", 0);
		if (!c) {
			CHECK(0, "create/destroy cycle %d: %s", i, strerror(errno));
			break;
		}
		CHECK(xpfo_compartment_destroy(c) == 0, "destroy in cycle %d", i);
	}
	fprintf(stderr, "ok   %d compartments, then EMFILE; all destroyed; %d create/destroy "
			"cycles\n", n, 3 * n);
}

static int count_arg(const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || end == v || n < 1 || n > 1000000)
		tu_hard_error("bad count '%s' (usage: apimisuse [--rounds N] [--joins N])", v);
	return (int)n;
}

int main(int argc, char **argv)
{
	int rounds = 1000, joins = 3000;
	tu_prog = "apimisuse";
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			tu_hard_error("usage: apimisuse [--rounds N] [--joins N]");
		if (!strcmp(argv[i], "--rounds"))
			rounds = count_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--joins"))
			joins = count_arg(argv[i + 1]);
		else
			tu_hard_error("usage: apimisuse [--rounds N] [--joins N]");
	}
	tu_xpfo_init(1);
	iso_stdio_warmup();
	struct xpfo_stats s0, s1;
	one_round(); /* first use makes per-thread state; measure after */
	xpfo_flush();
	tu_stats(&s0);
	quiet = 1;
	for (int i = 0; i < rounds; i++)
		one_round();
	xpfo_flush();
	tu_stats(&s1);
	CHECK(s1.live_bytes == s0.live_bytes, "live_bytes %llu after %d rounds, %llu before",
	      (unsigned long long)s1.live_bytes, rounds, (unsigned long long)s0.live_bytes);
	CHECK(s1.compartments == s0.compartments, "compartments %llu after %d rounds, %llu before",
	      (unsigned long long)s1.compartments, rounds, (unsigned long long)s0.compartments);
	CHECK(s1.violations == 0, "%llu violations", (unsigned long long)s1.violations);
	fprintf(stderr, "     after %d rounds: live_bytes %llu -> %llu, compartments %llu -> %llu, "
			"metadata_bytes %llu -> %llu, mapped_bytes %llu -> %llu\n",
		rounds, (unsigned long long)s0.live_bytes, (unsigned long long)s1.live_bytes,
		(unsigned long long)s0.compartments, (unsigned long long)s1.compartments,
		(unsigned long long)s0.metadata_bytes, (unsigned long long)s1.metadata_bytes,
		(unsigned long long)s0.mapped_bytes, (unsigned long long)s1.mapped_bytes);
	CHECK(s1.metadata_bytes <= s0.metadata_bytes + (4u << 20),
	      "metadata grew by %llu bytes over %d rounds",
	      (unsigned long long)(s1.metadata_bytes - s0.metadata_bytes), rounds);
	exhaust();
	strict_after_join(joins);
	strict_with_new_thread(300);
	tu_exit();
}
