/* contention.c - ownership under contention (issue 3, "What must be shown"
 * 2: I2 under contention).
 *
 * Threads (default 3) loop for --seconds (default 10; 3 with XPFO_SKIP_SLOW)
 * over K compartments (default 4): each round a thread enters a random
 * compartment X and makes 64 operations on a shared table of blocks:
 *  - allocate in a random compartment Y with xpfo_malloc_in / xpfo_calloc_in
 *    / plain malloc (Y = X), small sizes and page runs, and put the block in
 *    a random slot; the block that was there is freed by this thread, which
 *    may be inside another compartment than the block's (frees cross
 *    threads and compartments);
 *  - transfer a page run to a random compartment;
 *  - verify a block;
 *  - xpfo_flush() (in the debug build, the invariant walker runs there).
 * Blocks allocated in the thread's own compartment are filled with a
 * pattern unique to the block, and every time a thread inside the block's
 * compartment holds it, the pattern is checked: a page handed to a second
 * owner while the first still used it (I1), or handed over before the old
 * owner's queued revocation was applied and the old owner's writes landed
 * (I2), shows up as a wrong byte.  Every block's xpfo_owner is checked
 * against the compartment it was allocated in or transferred to.
 *
 * At the end, with every thread out of every compartment, the protections
 * in /proc/self/smaps are checked against the owners, per backend (README,
 * docs/security.md): on mprotect every live block of a compartment must be
 * inaccessible (---); on pkeys it is read-write under its compartment's own
 * key (ProtectionKey: one key per compartment, none shared, never 0), or
 * inaccessible if the compartment was parked for want of keys.  Every live
 * block of root must be read-write (and on key 0).  The live byte count
 * must come back to where it started once everything is freed.
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* xpfo_calloc_in into a compartment the thread is not inside (it may be
 * closed); 0 only to look past a hang there. */
#ifndef CLOSED_CALLOC
#define CLOSED_CALLOC 1
#endif

#define NSLOTS 4096
#define MAXK 64
#define SMALL_MAX 16384

struct entry {
	unsigned char *p;
	size_t size;
	int comp;        /* index in comps[]; -1 for root */
	int filled;      /* pattern written (seed) */
	uint64_t seed;
};

static struct slot {
	pthread_mutex_t lock;
	struct entry e;
} slots[NSLOTS];

static xpfo_compartment_t *comps[MAXK];
static int ncomps = 4, nthreads = 3;
static double seconds = 10;
#define MIN_ROUNDS 24 /* per thread: about 1,000 allocations and some transfers */
static uint64_t base_seed = 1;
static volatile int stop;
/* what each worker is doing, for the watchdog */
static const char *volatile doing[64];
static volatile uint64_t progress[64];

static struct counters {
	uint64_t allocs, frees, transfers, verifies, flushes, rounds, bytes_checked;
} totals;
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

#define TFAIL(...)                                                  \
	do {                                                        \
		pthread_mutex_lock(&fail_lock);                     \
		CHECK(0, __VA_ARGS__);                              \
		pthread_mutex_unlock(&fail_lock);                   \
		if (tu_failures > 20)                               \
			stop = 1;                                   \
	} while (0)

static xpfo_compartment_t *comp_of(int i)
{
	return i < 0 ? xpfo_root() : comps[i];
}

static const char *name_of(xpfo_compartment_t *c)
{
	return c ? xpfo_compartment_name(c) : "(none)";
}

static struct entry take(int i)
{
	pthread_mutex_lock(&slots[i].lock);
	struct entry e = slots[i].e;
	slots[i].e.p = NULL;
	pthread_mutex_unlock(&slots[i].lock);
	return e;
}

/* Put e in slot i; returns what was there. */
static struct entry put(int i, struct entry e)
{
	pthread_mutex_lock(&slots[i].lock);
	struct entry old = slots[i].e;
	slots[i].e = e;
	pthread_mutex_unlock(&slots[i].lock);
	return old;
}

/* Owner and, when this thread is inside the owner, contents. */
static void check_entry(const struct entry *e, int here, struct counters *k)
{
	xpfo_compartment_t *want = comp_of(e->comp);
	xpfo_compartment_t *got = xpfo_owner(e->p), *got_end = xpfo_owner(e->p + e->size - 1);
	if (got != want || got_end != want)
		TFAIL("block %p (%zu bytes) belongs to \"%s\" (last byte: \"%s\"), expected \"%s\"",
		      (void *)e->p, e->size, name_of(got), name_of(got_end), name_of(want));
	if (e->filled && e->comp == here) {
		size_t off = tu_verify(e->p, e->size, e->seed);
		k->verifies++;
		k->bytes_checked += e->size;
		if (off != (size_t)-1)
			TFAIL("block %p (%zu bytes, compartment \"%s\"): byte %zu changed while it "
			      "was live", (void *)e->p, e->size, name_of(want), off);
	}
}

static void release(struct entry *e, int here, struct counters *k)
{
	if (!e->p)
		return;
	check_entry(e, here, k);
	free(e->p);
	k->frees++;
	e->p = NULL;
}

static size_t pick_size(uint64_t *r)
{
	uint64_t x = tu_rand(r);
	if (x % 10 < 7)
		return 1 + (size_t)(tu_rand(r) % SMALL_MAX);
	return SMALL_MAX + 1 + (size_t)(tu_rand(r) % (256u << 10));
}

static void op_alloc(int here, uint64_t *r, struct counters *k)
{
	int y = (tu_rand(r) & 1) ? here : (int)(tu_rand(r) % (uint64_t)ncomps);
	size_t size = pick_size(r);
	unsigned how = (unsigned)(tu_rand(r) % 4);
	unsigned char *p;
	if (how == 0 && y == here)
		p = malloc(size);
	else if (how == 1 && (CLOSED_CALLOC || y == here))
		p = xpfo_calloc_in(comps[y], 1, size);
	else
		p = xpfo_malloc_in(comps[y], size);
	if (!p) {
		TFAIL("allocation of %zu bytes in \"%s\": %s", size, name_of(comps[y]),
		      strerror(errno));
		return;
	}
	k->allocs++;
	struct entry e = { p, size, y, 0, tu_rand(r) | 1 };
	if (y == here) {
		if (how == 1 && y == here) {
			for (size_t i = 0; i < size; i++)
				if (p[i]) {
					TFAIL("xpfo_calloc_in block %p: byte %zu is %u, not 0",
					      (void *)p, i, p[i]);
					break;
				}
		}
		tu_fill(p, size, e.seed);
		e.filled = 1;
	}
	check_entry(&e, here, k);
	struct entry old = put((int)(tu_rand(r) % NSLOTS), e);
	release(&old, here, k);
}

static void op_transfer(int here, uint64_t *r, struct counters *k)
{
	int i = (int)(tu_rand(r) % NSLOTS);
	struct entry e = take(i);
	if (!e.p)
		return;
	check_entry(&e, here, k);
	if (e.size > SMALL_MAX) {
		int to = (int)(tu_rand(r) % (uint64_t)ncomps);
		if (xpfo_transfer(e.p, comps[to]) != 0) {
			TFAIL("xpfo_transfer(%p, \"%s\"): %s", (void *)e.p, name_of(comps[to]),
			      strerror(errno));
		} else {
			e.comp = to;
			k->transfers++;
			check_entry(&e, here, k); /* same bytes, new owner */
		}
	} else {
		/* a small block: EINVAL, unless xpfo served it as a page run
		 * (sizes just under 16 KiB can be, with hardening metadata) */
		int to = (int)(tu_rand(r) % (uint64_t)ncomps);
		errno = 0;
		int rc = xpfo_transfer(e.p, comps[to]);
		if (rc == 0) {
			e.comp = to;
			k->transfers++;
			check_entry(&e, here, k);
		} else if (errno != EINVAL) {
			TFAIL("xpfo_transfer of a %zu-byte block: %s, not EINVAL", e.size,
			      strerror(errno));
		}
	}
	struct entry old = put(i, e);
	release(&old, here, k);
}

static void *worker(void *arg)
{
	int me = (int)(uintptr_t)arg;
	uint64_t r = base_seed * 0x9E3779B97F4A7C15ULL + (uint64_t)(uintptr_t)arg * 7919 + 1;
	struct counters k = { 0 };
	/* past the deadline a thread goes on until it has done MIN_ROUNDS rounds,
	 * so what the test checks never depends on how fast the machine is */
	while (!stop || k.rounds < MIN_ROUNDS) {
		int here = (int)(tu_rand(&r) % (uint64_t)ncomps);
		doing[me] = "xpfo_enter";
		xpfo_compartment_t *prev = xpfo_enter(comps[here]);
		if (!prev) {
			TFAIL("xpfo_enter: %s", strerror(errno));
			break;
		}
		if (xpfo_current() != comps[here])
			TFAIL("xpfo_current is not the compartment entered");
		for (int j = 0; j < 64 && (!stop || k.rounds < MIN_ROUNDS); j++) {
			unsigned op = (unsigned)(tu_rand(&r) % 16);
			progress[me]++;
			if (op < 10) {
				doing[me] = "allocating (xpfo_malloc_in / xpfo_calloc_in / malloc) and freeing";
				op_alloc(here, &r, &k);
			} else if (op < 12) {
				doing[me] = "transferring";
				op_transfer(here, &r, &k);
			} else if (op < 15) {
				doing[me] = "verifying and freeing";
				int i = (int)(tu_rand(&r) % NSLOTS);
				struct entry e = take(i);
				if (e.p)
					check_entry(&e, here, &k);
				struct entry old = put(i, e);
				release(&old, here, &k);
			} else {
				doing[me] = "xpfo_flush";
				if (xpfo_flush() != 0)
					TFAIL("xpfo_flush: %s", strerror(errno));
				k.flushes++;
			}
		}
		doing[me] = "xpfo_leave";
		xpfo_leave(prev);
		doing[me] = "between rounds";
		if (xpfo_current() != xpfo_root())
			TFAIL("after xpfo_leave the thread is not in root");
		k.rounds++;
		if (k.rounds % 8 == 0) {
			if (xpfo_flush() != 0)
				TFAIL("xpfo_flush: %s", strerror(errno));
			k.flushes++;
		}
	}
	pthread_mutex_lock(&totals_lock);
	totals.allocs += k.allocs;
	totals.frees += k.frees;
	totals.transfers += k.transfers;
	totals.verifies += k.verifies;
	totals.flushes += k.flushes;
	totals.rounds += k.rounds;
	totals.bytes_checked += k.bytes_checked;
	pthread_mutex_unlock(&totals_lock);
	return NULL;
}

/* ---- protections at rest -------------------------------------------------- */

struct vma {
	uintptr_t lo, hi;
	char perms[5];
	int key; /* ProtectionKey of smaps; -1 when the kernel does not show it */
};
static struct vma *vmas;
static size_t nvmas;

static void read_maps(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		tu_hard_error("/proc/self/smaps: %s", strerror(errno));
	size_t cap = 0;
	char line[512];
	nvmas = 0;
	while (fgets(line, sizeof line, f)) {
		struct vma v;
		int key;
		if (nvmas && sscanf(line, "ProtectionKey: %d", &key) == 1) {
			vmas[nvmas - 1].key = key;
			continue;
		}
		if (sscanf(line, "%lx-%lx %4s", &v.lo, &v.hi, v.perms) != 3)
			continue;
		v.key = -1;
		if (nvmas == cap) {
			cap = cap ? cap * 2 : 1024;
			vmas = realloc(vmas, cap * sizeof *vmas);
			if (!vmas)
				tu_hard_error("realloc");
		}
		vmas[nvmas++] = v;
	}
	fclose(f);
}

static const struct vma *vma_at(uintptr_t a)
{
	static const struct vma none = { 0, 0, "none", -1 };
	size_t lo = 0, hi = nvmas;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a < vmas[mid].lo)
			hi = mid;
		else if (a >= vmas[mid].hi)
			lo = mid + 1;
		else
			return &vmas[mid];
	}
	return &none;
}

/* One page of a live block of compartment comp (-1: root): does its
 * protection match the backend's promise?  keyof[] collects each
 * compartment's key on pkeys (-2: none seen yet). */
static bool page_ok(int comp, const struct vma *v, bool keys, int *keyof, size_t *parked)
{
	bool rw = !strncmp(v->perms, "rw", 2), none = !strncmp(v->perms, "---", 3);
	if (comp < 0)
		return rw && (!keys || v->key == 0);
	if (!keys)
		return none;
	if (none) {
		(*parked)++; /* a parked compartment: inaccessible, the mprotect way */
		return true;
	}
	if (!rw || v->key <= 0)
		return false;
	if (keyof[comp] == -2)
		keyof[comp] = v->key;
	return keyof[comp] == v->key;
}

static void check_at_rest(void)
{
	bool keys = !strcmp(xpfo_backend(), "pkeys");
	int keyof[MAXK];
	for (int i = 0; i < MAXK; i++)
		keyof[i] = -2;
	read_maps();
	size_t checked = 0, bad = 0, parked = 0;
	for (int i = 0; i < NSLOTS; i++) {
		struct entry *e = &slots[i].e;
		if (!e->p)
			continue;
		uintptr_t first = (uintptr_t)e->p, last = first + e->size - 1;
		for (uintptr_t a = first & ~(uintptr_t)4095; a <= last; a += 4096) {
			const struct vma *v = vma_at(a);
			bool ok = page_ok(e->comp, v, keys, keyof, &parked);
			checked++;
			if (!ok && bad++ < 5)
				CHECK(0, "at rest: page %#lx of a live block of \"%s\" is %s, key %d%s",
				      (unsigned long)a, name_of(comp_of(e->comp)), v->perms, v->key,
				      keys && e->comp >= 0 && keyof[e->comp] >= 0 ?
					      " (its compartment's other pages have another key)" : "");
		}
	}
	CHECK(bad == 0, "at rest: %zu of %zu pages of live blocks have the wrong protection", bad,
	      checked);
	/* pkeys: no two compartments share a key */
	for (int a = 0; keys && a < ncomps; a++)
		for (int b = a + 1; b < ncomps; b++)
			CHECK(keyof[a] < 0 || keyof[a] != keyof[b],
			      "at rest: compartments \"%s\" and \"%s\" share key %d",
			      name_of(comps[a]), name_of(comps[b]), keyof[a]);
	free(vmas);
	vmas = NULL;
	fprintf(stderr, "     at rest: %zu pages of live blocks checked against /proc/self/smaps, "
			"%zu wrong", checked, bad);
	if (keys) {
		fprintf(stderr, "; keys:");
		for (int i = 0; i < ncomps; i++)
			fprintf(stderr, " %s=%d", name_of(comps[i]), keyof[i]);
		fprintf(stderr, " (-2: no page seen), %zu pages parked", parked);
	}
	fprintf(stderr, "\n");
}

static void *idle(void *arg)
{
	return arg;
}

static void usage(void)
{
	fprintf(stderr, "usage: contention [--threads N] [--seconds S] [--compartments K] "
			"[--seed N]\n");
	exit(99);
}

int main(int argc, char **argv)
{
	tu_prog = "contention";
	if (iso_skip_slow())
		seconds = 3;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--threads"))
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--compartments"))
			ncomps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed"))
			base_seed = strtoull(argv[++i], NULL, 10);
		else
			usage();
	}
	if (nthreads < 2 || nthreads > 64 || ncomps < 2 || ncomps > MAXK || seconds <= 0)
		usage();
	tu_xpfo_init(1);
	iso_stdio_warmup();
	tu_timeout((unsigned)seconds + 600);
	for (int i = 0; i < NSLOTS; i++)
		pthread_mutex_init(&slots[i].lock, NULL);
	for (int i = 0; i < ncomps; i++) {
		char name[32];
		snprintf(name, sizeof name, "c%d", i);
		comps[i] = xpfo_compartment_create(name, 0);
		if (!comps[i])
			tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	}
	/* glibc keeps the stacks of joined threads, with their TLS vectors
	 * (calloc'ed), for reuse: start and join the threads once so the
	 * workers reuse them and the live byte count compares like for like */
	pthread_t th[64];
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, idle, NULL))
			tu_hard_error("pthread_create");
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	xpfo_flush();
	struct xpfo_stats s0, s1, s2;
	tu_stats(&s0);
	fprintf(stderr, "%d threads, %d compartments, %.1f s, seed %llu\n", nthreads, ncomps,
		seconds, (unsigned long long)base_seed);

	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i))
			tu_hard_error("pthread_create");
	struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	stop = 1;
	/* watchdog: a worker that makes no progress for 30 s is stuck */
	for (int i = 0; i < nthreads; i++) {
		for (;;) {
			uint64_t seen = progress[i];
			struct timespec dl;
			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_sec += 30;
			if (pthread_timedjoin_np(th[i], NULL, &dl) == 0)
				break;
			if (progress[i] == seen) {
				fprintf(stderr, "FAIL: worker %d made no progress for 30 s while %s "
						"(deadlock?)\n", i, doing[i]);
				fflush(stderr);
				_exit(1);
			}
		}
	}

	CHECK(xpfo_flush() == 0, "xpfo_flush");
	tu_stats(&s1);
	check_at_rest();
	/* free everything from root (closed compartments' blocks included) */
	struct counters k = { 0 };
	for (int i = 0; i < NSLOTS; i++) {
		struct entry e = take(i);
		release(&e, -1, &k);
	}
	CHECK(xpfo_flush() == 0, "xpfo_flush");
	tu_stats(&s2);
	CHECK(s2.live_bytes == s0.live_bytes, "live_bytes %llu after freeing everything, %llu "
		"before", (unsigned long long)s2.live_bytes, (unsigned long long)s0.live_bytes);
	CHECK(s2.violations == 0, "%llu violations", (unsigned long long)s2.violations);
	CHECK(totals.rounds > 0 && totals.allocs > 1000 && totals.transfers > 0,
	      "the workload did too little: %llu rounds, %llu allocations, %llu transfers",
	      (unsigned long long)totals.rounds, (unsigned long long)totals.allocs,
	      (unsigned long long)totals.transfers);
	fprintf(stderr, "     %llu rounds, %llu allocations, %llu frees, %llu transfers, %llu blocks "
			"verified (%llu MiB), %llu explicit flushes\n",
		(unsigned long long)totals.rounds, (unsigned long long)totals.allocs,
		(unsigned long long)totals.frees, (unsigned long long)totals.transfers,
		(unsigned long long)totals.verifies,
		(unsigned long long)(totals.bytes_checked >> 20), (unsigned long long)totals.flushes);
	fprintf(stderr, "     xpfo: %llu flushes (%llu explicit, %llu at enter/leave, %llu for "
			"reuse, %llu full), %llu revocation syscalls, %llu pages revoked, %llu "
			"opens, %llu closes, %llu transfers, %llu VMAs\n",
		(unsigned long long)(s1.flushes - s0.flushes),
		(unsigned long long)(s1.flush_explicit - s0.flush_explicit),
		(unsigned long long)(s1.flush_switch - s0.flush_switch),
		(unsigned long long)(s1.flush_reuse - s0.flush_reuse),
		(unsigned long long)(s1.flush_full - s0.flush_full),
		(unsigned long long)(s1.revoke_syscalls - s0.revoke_syscalls),
		(unsigned long long)(s1.pages_revoked - s0.pages_revoked),
		(unsigned long long)(s1.compartment_opens - s0.compartment_opens),
		(unsigned long long)(s1.compartment_closes - s0.compartment_closes),
		(unsigned long long)(s1.transfers - s0.transfers), (unsigned long long)s1.vmas);
	tu_exit();
}
