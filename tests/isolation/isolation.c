/* isolation.c - accesses outside a thread's compartment fault, and the
 * report names the page's owner, the thread and its compartment (issue 3,
 * "What must be shown" 1).
 *
 * Each case runs in a forked child.  A fault case announces the exact line
 * it expects, makes one bad access and must die by SIGSEGV after writing
 * only that line:
 *   xpfo: violation: <read|write> of <p> owned by compartment "<owner>" from thread <tid> in compartment "<current>"
 *   xpfo: violation: read of <p> owned by the allocator (free page, revoked <N> flushes ago) from thread <tid> in compartment "<current>"
 * Control cases do the same steps with access allowed and must exit 0, so
 * a fault case cannot pass because the access faults for another reason.
 *
 * Both backends run every case (the mprotect one on the host, both in the
 * QEMU guest, tests/qemu).  Where their promises differ (README, "What may
 * not reach" means; docs/security.md, I4) the expectation follows
 * xpfo_backend(): a thread outside a compartment that another thread is
 * inside faults on pkeys (per-thread rights) and reaches the memory on
 * mprotect (open for the whole process while any thread is inside).
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#define RUN (64u << 10)         /* a page run (> 16 KiB) */
#define HUGE (3u << 20)         /* whole segments (> 2 MiB) */

#define OWNED "xpfo: violation: %s of %p owned by compartment \"%s\" from thread %d in compartment \"%s\""
#define FREED "xpfo: violation: %s of %p owned by the allocator (free page, revoked <N> flushes ago) from thread %d in compartment \"%s\""

static unsigned char rd(const void *p)
{
	return *(const volatile unsigned char *)p;
}

static void wr(void *p, unsigned char v)
{
	*(volatile unsigned char *)p = v;
}

/* In a child: give up with a distinct status when a step fails. */
static xpfo_compartment_t *mk(const char *name)
{
	xpfo_compartment_t *c = xpfo_compartment_create(name, 0);
	if (!c) {
		fprintf(stderr, "xpfo_compartment_create(%s): %s\n", name, strerror(errno));
		_exit(90);
	}
	return c;
}

/* ---- closed compartments ------------------------------------------------ */

struct closed_arg {
	size_t size;
	size_t off;
	int write;
};

static int closed_access(void *arg)
{
	struct closed_arg *a = arg;
	xpfo_compartment_t *c = mk("vault");
	unsigned char *p = xpfo_malloc_in(c, a->size);
	NEED(p, 3);
	NEED(xpfo_owner(p) == c, 4);
	NEED(xpfo_owner(p + a->off) == c, 5);
	tu_expect(OWNED, a->write ? "write" : "read", (void *)(p + a->off), "vault",
		   (int)iso_gettid(), "root");
	if (a->write)
		wr(p + a->off, 1);
	else
		rd(p + a->off);
	return 10; /* not reached: the access must fault */
}

/* Control: the same memory is usable inside, and keeps its bytes while the
 * compartment is closed in between. */
static int inside_ok(void *arg)
{
	(void)arg;
	xpfo_compartment_t *c = mk("vault");
	unsigned char *out = xpfo_malloc_in(c, RUN);
	NEED(out, 3);
	xpfo_compartment_t *prev = xpfo_enter(c);
	NEED(prev == xpfo_root(), 4);
	NEED(xpfo_current() == c, 5);
	unsigned char *small = malloc(100), *run = malloc(RUN);
	NEED(small && run, 6);
	NEED(xpfo_owner(small) == c && xpfo_owner(run) == c, 7);
	tu_fill(small, 100, 1);
	tu_fill(run, RUN, 2);
	tu_fill(out, RUN, 3);
	xpfo_leave(prev);
	NEED(xpfo_current() == xpfo_root(), 8);
	NEED(xpfo_enter(c) == xpfo_root(), 9);
	NEED(tu_verify(small, 100, 1) == (size_t)-1, 10);
	NEED(tu_verify(run, RUN, 2) == (size_t)-1, 11);
	NEED(tu_verify(out, RUN, 3) == (size_t)-1, 12);
	free(small);
	free(run);
	free(out);
	xpfo_leave(prev);
	return 0;
}

/* Control: xpfo_calloc_in / xpfo_aligned_alloc_in from outside a closed
 * compartment (the block must be zero once the compartment is entered). */
static int calloc_closed(void *arg)
{
	(void)arg;
	xpfo_compartment_t *c = mk("vault");
	unsigned char *s = xpfo_calloc_in(c, 1, 100);
	NEED(s && xpfo_owner(s) == c, 3);
	unsigned char *r = xpfo_calloc_in(c, 4, RUN / 4);
	NEED(r && xpfo_owner(r) == c, 4);
	unsigned char *al = xpfo_aligned_alloc_in(c, 8192, 8192);
	NEED(al && xpfo_owner(al) == c && ((uintptr_t)al & 8191) == 0, 5);
	xpfo_compartment_t *prev = xpfo_enter(c);
	NEED(prev, 6);
	NEED(iso_count_byte(s, 100, 0) == 100, 7);
	NEED(iso_count_byte(r, RUN, 0) == RUN, 8);
	wr(al, 1);
	xpfo_leave(prev);
	return 0;
}

/* A thread inside compartment A touches B's memory. */
static int cross_compartment(void *arg)
{
	int write = arg != NULL;
	xpfo_compartment_t *a = mk("alpha"), *b = mk("beta");
	unsigned char *p = xpfo_malloc_in(b, 200);
	NEED(p, 3);
	NEED(xpfo_enter(a), 4);
	unsigned char *mine = malloc(200);
	NEED(mine && xpfo_owner(mine) == a, 5);
	wr(mine, 1); /* its own compartment is open */
	tu_expect(OWNED, write ? "write" : "read", (void *)(p + 7), "beta", (int)iso_gettid(),
		   "alpha");
	if (write)
		wr(p + 7, 1);
	else
		rd(p + 7);
	return 10;
}

/* The bad access comes from a second thread (optionally inside "alpha"). */
struct thr_arg {
	unsigned char *p;
	xpfo_compartment_t *enter;
	const char *cur;
};

static void *thr_touch(void *arg)
{
	struct thr_arg *t = arg;
	if (t->enter && !xpfo_enter(t->enter))
		_exit(21);
	tu_expect(OWNED, "read", (void *)t->p, "beta", (int)iso_gettid(), t->cur);
	rd(t->p);
	_exit(22);
}

static int other_thread(void *arg)
{
	int inside = arg != NULL;
	xpfo_compartment_t *a = mk("alpha"), *b = mk("beta");
	unsigned char *p = xpfo_malloc_in(b, RUN);
	NEED(p, 3);
	struct thr_arg t = { p + 5000, inside ? a : NULL, inside ? "alpha" : "root" };
	pthread_t th;
	NEED(pthread_create(&th, NULL, thr_touch, &t) == 0, 4);
	pthread_join(th, NULL);
	return 10;
}

/* Compartment "vault" is open: a second thread is inside it, writing its
 * block.  This thread, outside (in root, or inside "alpha"), reads the
 * block.  pkeys: the read faults (vault's key is open only in the owner
 * thread's rights register), and the owner thread keeps working up to the
 * fault.  mprotect: vault is open for the whole process, so the read
 * returns the owner's bytes (the documented weaker promise). */
struct open_arg {
	xpfo_compartment_t *vault;
	unsigned char *p;
	volatile int ready, stop;
	volatile unsigned long writes;
};

static void *open_owner(void *arg)
{
	struct open_arg *o = arg;
	xpfo_compartment_t *prev = xpfo_enter(o->vault);
	if (!prev)
		_exit(31);
	o->p = malloc(RUN);
	if (!o->p)
		_exit(32);
	memset(o->p, 'V', RUN);
	__atomic_store_n(&o->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		o->p[100] = 'V';
		o->p[RUN - 1] = 'V';
		o->writes++;
	}
	xpfo_leave(prev);
	return NULL;
}

struct open_case {
	int inside_other; /* the toucher is inside compartment "alpha" */
	int write;
};

static int open_by_other_thread(void *arg)
{
	struct open_case *oc = arg;
	bool keys = !strcmp(xpfo_backend(), "pkeys");
	static struct open_arg o;
	o.vault = mk("vault");
	xpfo_compartment_t *alpha = mk("alpha");
	pthread_t th;
	NEED(pthread_create(&th, NULL, open_owner, &o) == 0, 3);
	while (!__atomic_load_n(&o.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	if (oc->inside_other)
		NEED(xpfo_enter(alpha), 4);
	NEED(xpfo_owner(o.p) == o.vault, 5);
	/* the owner thread is working */
	unsigned long w0 = o.writes;
	while (o.writes == w0)
		sched_yield();
	unsigned char *target = o.p + RUN / 2 + 9;
	if (keys)
		tu_expect(OWNED, oc->write ? "write" : "read", (void *)target, "vault",
			   (int)iso_gettid(), oc->inside_other ? "alpha" : "root");
	if (oc->write)
		wr(target, 'W');
	NEED(rd(target) == (oc->write ? 'W' : 'V'), 6);
	if (keys)
		return 10; /* not reached on pkeys: the access must fault */
	/* mprotect: reachable while the owner is inside, closed once it left */
	w0 = o.writes;
	while (o.writes == w0)
		sched_yield();
	__atomic_store_n(&o.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	tu_expect(OWNED, "read", (void *)target, "vault", (int)iso_gettid(),
		   oc->inside_other ? "alpha" : "root");
	rd(target);
	return 11;
}

/* A thread outside compartment "vault" frees vault's small blocks (vault
 * stays closed: no thread is inside); another thread, also outside, keeps
 * reading vault's live blocks next to the ones being freed, catching the
 * faults itself.  No read may succeed: whatever the free does to the slot
 * (zeroing, canary checks), vault's pages must not become reachable. */
#define RACE_N 100000
static unsigned char *race_blk[RACE_N];
static volatile int race_pos, race_stop;
static sigjmp_buf race_jb;

static void race_segv(int sig)
{
	(void)sig;
	siglongjmp(race_jb, 1);
}

static void *race_freer(void *arg)
{
	(void)arg;
	for (int i = 0; i + 1 < RACE_N; i += 2) {
		race_pos = i;
		free(race_blk[i]);
	}
	race_stop = 1;
	return NULL;
}

static int closed_while_freed(void *arg)
{
	(void)arg;
	xpfo_compartment_t *c = mk("vault");
	xpfo_compartment_t *prev = xpfo_enter(c);
	NEED(prev, 3);
	for (int i = 0; i < RACE_N; i++) {
		race_blk[i] = malloc(48);
		NEED(race_blk[i], 4);
		memset(race_blk[i], 'S', 40);
	}
	xpfo_leave(prev);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = race_segv;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t th;
	NEED(pthread_create(&th, NULL, race_freer, NULL) == 0, 5);
	long tries = 0, reads = 0;
	while (!race_stop) {
		int i = race_pos | 1; /* a live neighbour of the slot being freed */
		tries++;
		if (!sigsetjmp(race_jb, 0) && rd(race_blk[i] + 8) == 'S')
			reads++;
	}
	pthread_join(th, NULL);
	if (reads) {
		fprintf(stderr, "a thread outside \"vault\" read vault's live data %ld times in %ld "
				"tries while another thread outside freed vault's blocks\n", reads, tries);
		return 1;
	}
	fprintf(stderr, "%ld reads tried, all faulted\n", tries);
	return 0;
}

/* ---- transfer ------------------------------------------------------------ */

struct xfer_arg {
	size_t size;
	int write;
	int from_compartment; /* the old owner is compartment "sender", not root */
};

static int transfer_old_owner(void *arg)
{
	struct xfer_arg *a = arg;
	xpfo_compartment_t *to = mk("receiver");
	xpfo_compartment_t *from = a->from_compartment ? mk("sender") : xpfo_root();
	xpfo_compartment_t *prev = NULL;
	if (a->from_compartment)
		NEED(prev = xpfo_enter(from), 3);
	unsigned char *p = malloc(a->size);
	NEED(p && xpfo_owner(p) == from, 4);
	tu_fill(p, a->size, 42);
	if (a->from_compartment)
		xpfo_leave(prev);
	NEED(xpfo_transfer(p, to) == 0, 5);
	NEED(xpfo_owner(p) == to, 6);
	NEED(xpfo_owner(p + a->size - 1) == to, 7);
	/* the receiver sees the sender's bytes */
	NEED(prev = xpfo_enter(to), 8);
	NEED(tu_verify(p, a->size, 42) == (size_t)-1, 9);
	xpfo_leave(prev);
	/* the old owner tries again */
	if (a->from_compartment)
		NEED(xpfo_enter(from), 10);
	size_t off = a->size / 2 + 3;
	tu_expect(OWNED, a->write ? "write" : "read", (void *)(p + off), "receiver",
		   (int)iso_gettid(), a->from_compartment ? "sender" : "root");
	if (a->write)
		wr(p + off, 0);
	else
		rd(p + off);
	return 11;
}

/* Control: the receiver can use the block and free it. */
static int transfer_ok(void *arg)
{
	(void)arg;
	xpfo_compartment_t *to = mk("receiver");
	unsigned char *p = malloc(RUN);
	NEED(p, 3);
	tu_fill(p, RUN, 7);
	NEED(xpfo_transfer(p, to) == 0, 4);
	xpfo_compartment_t *prev = xpfo_enter(to);
	NEED(prev, 5);
	NEED(tu_verify(p, RUN, 7) == (size_t)-1, 6);
	tu_fill(p, RUN, 8);
	NEED(tu_verify(p, RUN, 8) == (size_t)-1, 7);
	free(p);
	xpfo_leave(prev);
	NEED(xpfo_flush() == 0, 8);
	return 0;
}

/* ---- destroy ------------------------------------------------------------- */

struct destroy_arg {
	size_t size;
	int via_transfer; /* the block sits in root's segment, given to the doomed */
};

static int after_destroy(void *arg)
{
	struct destroy_arg *a = arg;
	xpfo_compartment_t *d = mk("doomed");
	unsigned char *p;
	if (a->via_transfer) {
		p = malloc(a->size);
		NEED(p, 3);
		/* keep root's segment alive with a neighbour */
		NEED(malloc(RUN), 4);
		NEED(xpfo_transfer(p, d) == 0, 5);
	} else {
		xpfo_compartment_t *prev = xpfo_enter(d);
		NEED(prev, 6);
		p = malloc(a->size);
		NEED(p, 7);
		tu_fill(p, a->size, 9);
		xpfo_leave(prev);
	}
	NEED(xpfo_owner(p) == d, 8);
	NEED(xpfo_compartment_destroy(d) == 0, 9);
	NEED(xpfo_owner(p) == NULL, 10);
	errno = 0;
	NEED(xpfo_enter(d) == NULL && errno == EINVAL, 11);
	tu_expect(FREED, "read", (void *)(p + 1), (int)iso_gettid(), "root");
	rd(p + 1);
	return 12;
}

/* ---- use after free of a page run ---------------------------------------- */

struct uaf_arg {
	size_t size;
	int inside;
	int write;
};

static int uaf_after_flush(void *arg)
{
	struct uaf_arg *a = arg;
	xpfo_compartment_t *c = NULL, *prev = NULL;
	if (a->inside) {
		c = mk("worker");
		NEED(prev = xpfo_enter(c), 3);
	}
	unsigned char *p = malloc(a->size);
	NEED(p, 4);
	tu_fill(p, a->size, 5);
	free(p);
	NEED(xpfo_flush() == 0, 5);
	tu_expect(FREED, a->write ? "write" : "read", (void *)(p + 4096), (int)iso_gettid(),
		   a->inside ? "worker" : "root");
	if (a->write)
		wr(p + 4096, 0);
	else
		rd(p + 4096);
	return 13;
}

/* Root frees a run (its revocation is queued in root's gather); a
 * compartment holding a run transferred from the same segment is destroyed;
 * root flushes: the freed run must be revoked all the same. */
static int uaf_after_destroy_neighbour(void *arg)
{
	(void)arg;
	xpfo_compartment_t *d = mk("doomed");
	unsigned char *p1 = malloc(RUN), *p2 = malloc(RUN);
	NEED(p1 && p2, 3);
	tu_fill(p1, RUN, 1);
	NEED(xpfo_transfer(p2, d) == 0, 4);
	free(p1);
	NEED(xpfo_compartment_destroy(d) == 0, 5);
	NEED(xpfo_flush() == 0, 6);
	tu_expect(FREED, "read", (void *)(p1 + 8), (int)iso_gettid(), "root");
	rd(p1 + 8);
	return 15;
}

/* ---- STRICT, with the only thread ------------------------------------------ */

static int strict_root_closed(void *arg)
{
	(void)arg;
	xpfo_compartment_t *s = xpfo_compartment_create("locked", XPFO_COMPARTMENT_STRICT);
	NEED(s, 3);
	unsigned char *r = malloc(100);
	NEED(r && xpfo_owner(r) == xpfo_root(), 4);
	wr(r, 1);
	NEED(xpfo_enter(s), 5);
	unsigned char *mine = malloc(100);
	NEED(mine && xpfo_owner(mine) == s, 6);
	wr(mine, 2);
	tu_expect(OWNED, "read", (void *)r, "root", (int)iso_gettid(), "locked");
	rd(r);
	return 14;
}

static int strict_ok(void *arg)
{
	(void)arg;
	xpfo_compartment_t *s = xpfo_compartment_create("locked", XPFO_COMPARTMENT_STRICT);
	NEED(s, 3);
	unsigned char *r = malloc(100);
	NEED(r, 4);
	tu_fill(r, 100, 3);
	xpfo_compartment_t *prev = xpfo_enter(s);
	NEED(prev, 5);
	unsigned char *mine = malloc(RUN);
	NEED(mine, 6);
	tu_fill(mine, RUN, 4);
	xpfo_leave(prev);
	/* root is back, with its bytes */
	NEED(tu_verify(r, 100, 3) == (size_t)-1, 7);
	free(r);
	free(mine);
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	tu_prog = "isolation";
	tu_xpfo_init(1);
	bool keys = !strcmp(xpfo_backend(), "pkeys");
	if (!keys && strcmp(xpfo_backend(), "mprotect"))
		tu_hard_error("backend %s: no expectations for it here", xpfo_backend());
	iso_stdio_warmup();

	static struct closed_arg cr_small = { 100, 5, 0 }, cw_small = { 100, 5, 1 },
				 cr_run = { RUN, 40000, 0 }, cw_run = { RUN, 40000, 1 },
				 cr_huge = { HUGE, HUGE - 1, 0 };
	static struct xfer_arg x_rw = { RUN, 1, 0 }, x_rr = { RUN, 0, 0 }, x_hw = { HUGE, 1, 0 },
			       x_cw = { RUN, 1, 1 }, x_ch = { HUGE, 0, 1 };
	static struct destroy_arg d_run = { RUN, 0 }, d_small = { 100, 0 }, d_huge = { HUGE, 0 },
				  d_xfer = { RUN, 1 };
	static struct uaf_arg u_root = { RUN, 0, 0 }, u_root_w = { RUN, 0, 1 },
			      u_in = { RUN, 1, 0 }, u_huge = { HUGE, 0, 0 };
	static struct open_case o_read = { 0, 0 }, o_write = { 0, 1 }, o_other = { 1, 0 };
	static int yes = 1;
	const struct tu_case cases[] = {
		{ "control: inside a compartment", inside_ok, NULL, 0 },
		{ "control: xpfo_calloc_in into a closed compartment", calloc_closed, NULL, 0 },
		{ "closed compartment: read of a small block", closed_access, &cr_small, SIGSEGV },
		{ "closed compartment: write of a small block", closed_access, &cw_small, SIGSEGV },
		{ "closed compartment: read of a page run", closed_access, &cr_run, SIGSEGV },
		{ "closed compartment: write of a page run", closed_access, &cw_run, SIGSEGV },
		{ "closed compartment: read of a huge block", closed_access, &cr_huge, SIGSEGV },
		{ "closed compartment: read from inside another", cross_compartment, NULL, SIGSEGV },
		{ "closed compartment: write from inside another", cross_compartment, &yes, SIGSEGV },
		{ "closed compartment: read by a second thread", other_thread, NULL, SIGSEGV },
		{ "closed compartment: read by a second thread inside another", other_thread, &yes,
		  SIGSEGV },
		/* the backends differ here: see open_by_other_thread */
		{ keys ? "open compartment (a thread inside): read by a second thread outside faults"
		       : "open compartment (a thread inside): a second thread outside reads it "
			 "(open for the process), and faults once the owner left",
		  open_by_other_thread, &o_read, SIGSEGV },
		{ keys ? "open compartment (a thread inside): write by a second thread outside faults"
		       : "open compartment (a thread inside): a second thread outside writes it, "
			 "and faults once the owner left",
		  open_by_other_thread, &o_write, SIGSEGV },
		{ keys ? "open compartment (a thread inside): read by a second thread inside "
			 "another faults"
		       : "open compartment (a thread inside): a second thread inside another "
			 "reads it, and faults once the owner left",
		  open_by_other_thread, &o_other, SIGSEGV },
		{ "closed compartment: never readable while another thread frees its blocks",
		  closed_while_freed, NULL, 0 },
		{ "control: transfer, receiver uses the block", transfer_ok, NULL, 0 },
		{ "transfer: old owner root writes", transfer_old_owner, &x_rw, SIGSEGV },
		{ "transfer: old owner root reads", transfer_old_owner, &x_rr, SIGSEGV },
		{ "transfer: old owner root writes a huge block", transfer_old_owner, &x_hw, SIGSEGV },
		{ "transfer: old owner compartment writes", transfer_old_owner, &x_cw, SIGSEGV },
		{ "transfer: old owner compartment reads a huge block", transfer_old_owner, &x_ch,
		  SIGSEGV },
		{ "destroy: read of a page run", after_destroy, &d_run, SIGSEGV },
		{ "destroy: read of a small block", after_destroy, &d_small, SIGSEGV },
		{ "destroy: read of a huge block", after_destroy, &d_huge, SIGSEGV },
		{ "destroy: read of a run transferred in from root", after_destroy, &d_xfer, SIGSEGV },
		{ "use after free + flush: read of a page run (root)", uaf_after_flush, &u_root,
		  SIGSEGV },
		{ "use after free + flush: write of a page run (root)", uaf_after_flush, &u_root_w,
		  SIGSEGV },
		{ "use after free + flush: read of a page run (inside)", uaf_after_flush, &u_in,
		  SIGSEGV },
		{ "use after free + flush: read of a huge block", uaf_after_flush, &u_huge, SIGSEGV },
		{ "use after free + flush: root's run, a compartment with a run transferred from "
		  "the same segment destroyed meanwhile", uaf_after_destroy_neighbour, NULL, SIGSEGV },
		{ "control: STRICT, root usable again after leave", strict_ok, NULL, 0 },
		{ "STRICT (one thread): root's memory from inside", strict_root_closed, NULL, SIGSEGV },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		tu_run_case(&cases[i], 20, NULL);
	tu_exit();
}
