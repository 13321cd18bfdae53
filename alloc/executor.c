/* executor.c - the process that decides a locked thread's memory calls.
 *
 * Forked (a raw clone: no fork handlers, no allocation) while the thread
 * being locked is already inside its compartment and before its filter is
 * loaded.  Its copy of the ownership tables is the state at the lock, and
 * the locked thread cannot change it: another address space.  From it and
 * from what it has let through since, it keeps one state per heap page
 * (below) and lets a call proceed only when every page it touches may take
 * that change, and, but for a close, lies in the segments reserved for the
 * compartment at the lock (alloc/pages.c): no one else takes those, so
 * other threads' grants since the copy cannot make the record wrong.  It never trusts the locked process's metadata after the
 * lock, and it never names a range itself: it can only let the locked
 * thread's own call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE; the arguments
 * are registers the kernel holds while the thread waits) or fail it.
 */
#include "internal.h"
#include "owner.h"
#include "backing.h"
#include "sandbox.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#ifdef HAVE_SECCOMP_H
#include <linux/seccomp.h>

/* Page states.  SNAP: not changed since the lock (read the copy).
 * PENDING: a stale page the locked thread asked to purge (MADV_DONTNEED, or
 * a fresh mapping over it).  The executor lets a call go on but never sees
 * its result, so a stale page is not taken for fresh on the strength of the
 * request: the first grant that touches it asks the kernel's page table
 * (pending_confirm) whether its frame is really gone. */
enum { PS_SNAP, PS_FOREIGN, PS_STALE, PS_FRESH, PS_MINE, PS_GONE, PS_PENDING };

struct executor {
	pid_t target;
	uint16_t id;                /* the locked compartment */
	int key;                    /* pkeys: its key, else -1 */
	unsigned flags;
	uintptr_t hb, he;           /* heap */
	uintptr_t guard[4][2];      /* never touched: metadata, sealed page, shared page, gate */
	uint8_t *state;             /* per heap page */
	int pagemap;                /* /proc/<target>/pagemap, or -1: nothing pending is confirmed */
	bool secret;                /* the compartment is memfd_secret-backed */
	uint64_t reported[16];      /* syscall numbers reported (its own: the locked
				     * thread cannot silence a report) */
	char name[48];
};

/* The state of heap page i at the lock, from the copy of the tables (read
 * through the ownership module, the one decoder of page entries). */
static int snap_state(const struct executor *x, size_t i)
{
	static const uint8_t by_snap[] = {
		[OSNAP_FREE_CLEAN] = PS_FRESH, [OSNAP_FREE_STALE] = PS_STALE,
		[OSNAP_MINE] = PS_MINE, [OSNAP_FOREIGN] = PS_FOREIGN,
	};
	return by_snap[owner_snapshot(i, x->id)];
}

static int page_state(const struct executor *x, size_t i)
{
	return x->state[i] ? x->state[i] : snap_state(x, i);
}

/* Where [a, a+len) lies: 0 outside everything guarded, 1 inside the heap,
 * -1 refused (metadata, guarded pages, across the heap's edge, wraps). */
static int where(const struct executor *x, uintptr_t a, uintptr_t len)
{
	if (len == 0)
		return 0;
	uintptr_t end = align_up(a + len, PAGE_SIZE);
	if (end <= a || len > ((uintptr_t)1 << 47))
		return -1;
	for (int k = 0; k < 4; k++)
		if (a < x->guard[k][1] && x->guard[k][0] < end)
			return -1;
	if (end <= x->hb || a >= x->he)
		return 0;
	return a >= x->hb && end <= x->he ? 1 : -1;
}

/* The arguments every rule needs before anything is recorded: a
 * page-aligned start (the kernel refuses any other with EINVAL, after the
 * executor would have recorded the change). */
static bool aligned(uint64_t a)
{
	return (a & (PAGE_SIZE - 1)) == 0;
}

/* Protections a locked thread may ask for: none, read, read-write. */
static bool prot_ok(uint64_t prot)
{
	return (prot & ~(uint64_t)(PROT_READ | PROT_WRITE)) == 0;
}

/* Pending pages of [i0, i1) whose frames the kernel really released (no
 * page-table entry: not present, not swapped: a private anonymous page
 * then reads as zero) become FRESH, the others STALE again.  Without the
 * page map, or in a memfd_secret compartment (a shared file keeps its
 * pages without a page-table entry, and a fork child's shared mappings
 * have none until touched), nothing is confirmed.  Runs while the range is
 * closed: nothing can fault a frame in between (the locked thread waits
 * in the call that asks). */
static void pending_confirm(struct executor *x, size_t i0, size_t i1)
{
	uint64_t e[64];
	for (size_t i = i0; i < i1; i++) {
		if (x->state[i] != PS_PENDING)
			continue;
		size_t n = i1 - i < 64 ? i1 - i : 64;
		uint64_t off = (uint64_t)((x->hb >> PAGE_SHIFT) + i) * 8;
		bool read = x->pagemap >= 0 && !x->secret && !os_executor_pread(x->pagemap, e, n * 8, off);
		__atomic_add_fetch(&sandbox_shared->pagemap_reads, 1, __ATOMIC_RELAXED);
		for (size_t k = 0; k < n; k++, i++)
			if (x->state[i] == PS_PENDING)
				x->state[i] = read && !(e[k] >> 62) ? PS_FRESH : PS_STALE;
		i--;
	}
}

/* Every segment of the range reserved for the compartment at its lock
 * (pages_reserve)?  Only there is the record of a page still true: no
 * other owner takes those segments, while any other free page may have
 * been granted to root by an unfiltered thread since the copy was taken,
 * and a live page of the compartment's outside them goes back to its
 * segment's owner when freed (by any thread). */
static bool reserved(const struct executor *x, size_t i0, size_t i1)
{
	for (size_t s = i0 / SEG_PAGES; s <= (i1 - 1) / SEG_PAGES; s++)
		if (!pages_reserved_for(s, x->id))
			return false;
	return true;
}

/* Is every page of [i0, i1) in a state of mask? */
static bool pages_in(struct executor *x, size_t i0, size_t i1, unsigned mask)
{
	for (size_t i = i0; i < i1; i++)
		if (!(mask >> page_state(x, i) & 1))
			return false;
	return true;
}

/* Every page of the range inside the reservation and in one of the states
 * of mask?  Then set them to `to` (unless 0).  Every call but a close
 * (always safe) comes here. */
static bool pages_move(struct executor *x, uintptr_t a, uintptr_t len, unsigned mask, int to)
{
	size_t i0 = (a - x->hb) >> PAGE_SHIFT, i1 = (align_up(a + len, PAGE_SIZE) - x->hb) >> PAGE_SHIFT;
	if (!reserved(x, i0, i1) || !pages_in(x, i0, i1, mask))
		return false;
	if (to)
		for (size_t i = i0; i < i1; i++)
			x->state[i] = (uint8_t)to;
	return true;
}

#define M(s) (1u << (s))

/* The heap pages of [a, a+len) (where() said 1). */
static void page_range(const struct executor *x, uintptr_t a, uintptr_t len, size_t *i0, size_t *i1)
{
	*i0 = (a - x->hb) >> PAGE_SHIFT;
	*i1 = (align_up(a + len, PAGE_SIZE) - x->hb) >> PAGE_SHIFT;
}

static int decide_protect(struct executor *x, const uint64_t *a, bool keyed)
{
	if (!aligned(a[0]) || !prot_ok(a[2]))
		return -1; /* PROT_EXEC and unknown bits, anywhere */
	int w = where(x, a[0], a[1]);
	if (w <= 0)
		return w;
	if (a[2] == PROT_NONE) { /* closing is always safe */
		__atomic_add_fetch(&sandbox_shared->closes, 1, __ATOMIC_RELAXED);
		return 1;
	}
	if (keyed && x->key > 0 && (int)a[3] != x->key)
		return -1;
	/* a grant that fails leaves FRESH pages recorded MINE: no page the
	 * compartment could not already open */
	size_t i0, i1;
	page_range(x, a[0], a[1], &i0, &i1);
	if (reserved(x, i0, i1))
		pending_confirm(x, i0, i1);
	if (!pages_move(x, a[0], a[1], M(PS_FRESH) | M(PS_MINE), PS_MINE))
		return -1;
	/* under a userfaultfd its missing pages are filled here: the locked
	 * thread may not make that ioctl (alloc/uffd.c).  The descriptor acts
	 * on the locked process; the range is one this grant just let open. */
	if (os_uffd_fill((void *)(uintptr_t)a[0], (size_t)a[1]))
		return -1;
	__atomic_add_fetch(&sandbox_shared->grants, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Stale pages of a purge the executor let go on wait for their
 * confirmation (PENDING); the compartment's and fresh ones keep their
 * state (a purge that fails leaves them as they were: the compartment's
 * own bytes, or zeros). */
static void pages_pending(struct executor *x, size_t i0, size_t i1)
{
	for (size_t i = i0; i < i1; i++)
		if (page_state(x, i) == PS_STALE)
			x->state[i] = PS_PENDING;
}

#define PURGEABLE (M(PS_STALE) | M(PS_PENDING) | M(PS_FRESH) | M(PS_MINE))

static int decide_madvise(struct executor *x, const uint64_t *a)
{
	if (!aligned(a[0]))
		return -1;
	int w = where(x, a[0], a[1]);
	if (w <= 0)
		return w;
	if (a[2] != MADV_DONTNEED)
		return -1;
	size_t i0, i1;
	page_range(x, a[0], a[1], &i0, &i1);
	if (!pages_move(x, a[0], a[1], PURGEABLE, 0))
		return -1;
	pages_pending(x, i0, i1);
	__atomic_add_fetch(&sandbox_shared->purges, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Move the pages and count the remap; -1 when one is in a state outside
 * mask. */
static int remap_move(struct executor *x, uintptr_t a, uintptr_t len, unsigned mask, int to)
{
	if (!pages_move(x, a, len, mask, to))
		return -1;
	__atomic_add_fetch(&sandbox_shared->remaps, 1, __ATOMIC_RELAXED);
	return 1;
}

/* mmap with MAP_FIXED: a fresh anonymous private mapping over pages that
 * are not another owner's. */
/* mmap with MAP_FIXED: a fresh anonymous private mapping over pages that
 * are not another owner's.  Every argument the kernel could refuse is
 * checked first: the start, the flags (these and MAP_NORESERVE only), the
 * descriptor and the offset (0: the kernel refuses an unaligned one).
 * The filter lets mmap without MAP_FIXED through unless it asks for
 * PROT_EXEC: any that gets here is refused. */
static int decide_mmap(struct executor *x, const uint64_t *a)
{
	const uint64_t need = MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS;
	if (!aligned(a[0]) || !prot_ok(a[2]) || (a[3] & ~(uint64_t)MAP_NORESERVE) != need ||
	    (int)a[4] != -1 || a[5] != 0)
		return -1;
	int w = where(x, a[0], a[1]);
	if (w <= 0)
		return w;
	size_t i0, i1;
	page_range(x, a[0], a[1], &i0, &i1);
	if (!pages_move(x, a[0], a[1], PURGEABLE, 0))
		return -1;
	/* a mapping that fails leaves stale pages stale (pending), and the
	 * compartment's or fresh ones as they were */
	pages_pending(x, i0, i1);
	for (size_t i = i0; i < i1; i++)
		if (x->state[i] != PS_PENDING)
			x->state[i] = a[2] == PROT_NONE ? PS_FRESH : PS_MINE;
	__atomic_add_fetch(&sandbox_shared->remaps, 1, __ATOMIC_RELAXED);
	return 1;
}

/* mremap: only a transfer's fresh copy, moved whole from outside onto the
 * compartment's own pages, which leave it for good.  Nothing else: moving
 * or growing an existing mapping could show executable bytes the lock's
 * scan never saw. */
static int decide_mremap(struct executor *x, const uint64_t *a)
{
	if (!aligned(a[0]) || !aligned(a[4]) || a[3] != (MREMAP_MAYMOVE | MREMAP_FIXED) ||
	    where(x, a[0], a[1]) != 0 || a[1] != a[2])
		return -1;
	if (where(x, a[4], a[2]) <= 0)
		return -1;
	return remap_move(x, a[4], a[2], M(PS_MINE), PS_GONE);
}

/* 0: outside (let through), 1: checked (let through), -1: refused. */
static int decide(struct executor *x, const struct seccomp_data *d)
{
	const uint64_t *a = (const uint64_t *)d->args;
	switch (d->nr) {
	case SYS_mprotect:
		return decide_protect(x, a, false);
	case SYS_pkey_mprotect:
		return decide_protect(x, a, true);
	case SYS_madvise:
		return decide_madvise(x, a);
	case SYS_mmap:
		return decide_mmap(x, a);
	case SYS_munmap:
		return where(x, a[0], a[1]) == 0 ? 0 : -1;
	case SYS_mremap:
		return decide_mremap(x, a);
	}
	return -1;
}

/* The answer.  A failure but ENOENT (the call was interrupted, or its
 * thread is gone: nothing waits) is tried again: the locked thread waits
 * in its call until it is answered.  If it never can be, the process
 * ends rather than hang. */
static void respond(struct executor *x, int lfd, struct seccomp_notif_resp *resp)
{
	int e = 0;
	for (int i = 0; i < 100; i++) {
		e = os_executor_notif_send(lfd, resp);
		if (!e || e == ENOENT)
			return;
		os_yield();
	}
	xpfo_warn("sandbox: the executor cannot answer the locked thread (errno %d): the process ends",
		  (long)e);
	os_executor_kill(x->target);
}

static void answer(struct executor *x, int lfd, struct seccomp_notif *req)
{
	int v = decide(x, &req->data);
	struct seccomp_notif_resp resp;
	memset(&resp, 0, sizeof resp);
	resp.id = req->id;
	if (v >= 0) {
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		__atomic_add_fetch(v ? &sandbox_shared->granted : &sandbox_shared->passed, 1,
				   __ATOMIC_RELAXED);
	} else {
		/* every call the filter does not allow ends here (its default
		 * action): counted and reported by a process the locked thread
		 * cannot reach, whatever it did with its signals */
		resp.error = -EPERM;
		sandbox_report(req->data.nr, req->pid, x->name, x->reported);
		if (x->flags & XPFO_LOCK_KILL)
			os_executor_kill(x->target); /* fails only once the process is gone */
	}
	respond(x, lfd, &resp);
}

static _Noreturn void serve(struct executor *x, int lfd)
{
	struct seccomp_notif req;
	for (;;) {
		bool gone = false;
		if (os_executor_wait(lfd, &gone))
			continue;
		if (gone)
			break; /* every locked thread is gone */
		memset(&req, 0, sizeof req);
		if (os_executor_notif_recv(lfd, &req))
			continue; /* EINTR, or the caller died meanwhile (ENOENT) */
		answer(x, lfd, &req);
	}
	os_exit_group(0);
}

/* Nothing of the service's: its descriptors are not the executor's, but
 * for the listener and the userfaultfd, which fills what a grant lets
 * open.  A failure leaves some open in the executor only, which never
 * uses them. */
static void close_others(int lfd)
{
	int ufd = os_uffd_fd(), lo = lfd < ufd ? lfd : ufd, hi = lfd < ufd ? ufd : lfd;
	if (lo < 0)
		lo = hi;
	if (lo > 3)
		os_executor_close_range(3, (unsigned)lo - 1);
	if (hi > lo + 1)
		os_executor_close_range((unsigned)lo + 1, (unsigned)hi - 1);
	os_executor_close_range((unsigned)hi + 1, ~0u);
}

static _Noreturn void executor_main(struct executor *x, int sock)
{
	size_t npages = (x->he - x->hb) >> PAGE_SHIFT;
	void *st = NULL;
	/* without the death signal an executor could outlive its process */
	int e = os_executor_start(x->target);
	if (!e)
		e = os_executor_map(npages, &st);
	/* the lock learns it before it loads its filter, and undoes itself */
	if (os_executor_ready(sock, e) || e)
		os_exit_group(1);
	int lfd;
	if ((e = os_executor_take(sock, &lfd))) {
		if (e != EPIPE) /* EPIPE: the lock gave up before its filter */
			xpfo_warn("sandbox: the executor could not take the locked thread's "
				  "listener (errno %d)",
				  (long)e);
		os_exit_group(1);
	}
	x->state = st;
	os_sandbox_close(sock);
	close_others(lfd);
	if (os_executor_pagemap(x->target, &x->pagemap))
		x->pagemap = -1; /* pending pages stay stale */
	serve(x, lfd);
}

pid_t executor_start(struct xpfo_compartment *c, unsigned flags, int sv[2])
{
	static struct executor x; /* the child's copy is its own */
	memset(&x, 0, sizeof x);
	x.target = os_getpid();
	x.id = c->id;
	x.key = pkeys_comp_key(c);
	x.flags = flags;
	x.secret = secret_comp(c);
	x.hb = heap_base;
	x.he = heap_end;
	meta_region(&x.guard[0][0], &x.guard[0][1]);
	x.guard[1][0] = (uintptr_t)&xpfo_sealed;
	x.guard[1][1] = x.guard[1][0] + sizeof xpfo_sealed;
	x.guard[2][0] = (uintptr_t)sandbox_shared;
	x.guard[2][1] = x.guard[2][0] + PAGE_SIZE;
	x.guard[3][0] = (uintptr_t)&sandbox_gate;
	x.guard[3][1] = x.guard[3][0] + sizeof sandbox_gate;
	fmt_str(x.name, sizeof x.name, "%s", c->pub_name);
	/* a consistent copy: no run changes hands while it is taken */
	pthread_mutex_lock(&pages_lock);
	long pid;
	int e = os_sandbox_clone(&pid);
	if (!e && pid == 0) {
		os_sandbox_close(sv[0]);
		executor_main(&x, sv[1]);
	}
	pthread_mutex_unlock(&pages_lock);
	os_sandbox_close(sv[1]);
	return e ? -e : (pid_t)pid;
}
#else
pid_t executor_start(struct xpfo_compartment *c, unsigned flags, int sv[2])
{
	return -ENOSYS;
}
#endif
