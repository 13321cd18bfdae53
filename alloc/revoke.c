/* revoke.c - the revocation engine: applying a thread's gather (gather.c),
 * in the shape of the kernel's mmu_gather (include/asm-generic/tlb.h,
 * mm/mmu_gather.c).
 *
 * The ordering rule (invariant I2): revoke, flush, reuse.  A freed run is
 * queued in the thread's gather (gather.c: revoke_add) and stays out of every free structure until the
 * gather is applied (revoke_flush): its protection is removed, its frames are
 * released where that pays, and only then does pages_release() make it free
 * for any owner.  So no page reaches a new owner while its previous owner
 * can still reach it.  The one shortcut is revoke_cancel: the same thread
 * taking a queued run back for the same owner, whose ownership never
 * changed, so there is nothing to revoke.  That is what makes deferral pay:
 * the cheapest revocation is the one never applied.
 *
 * Batching: queued runs are sorted and adjacent ones coalesced at flush time,
 * one mprotect per coalesced span.  Each mprotect of a mapping that other
 * CPUs may cache costs a TLB shootdown (measured here: ~11 us for one page
 * with one thread, ~58 us with a second thread running, ~0.5 us per page over
 * a 64-page range), which is what batching saves.  Bounds: opt.batch frees or
 * opt.batch_pages freed pages since the last flush (those taken back by
 * revoke_cancel count too).  As __tlb_remove_page says when the batch runs
 * out, revoke_add returns true when the gather is full and the caller
 * flushes it.  The flush is two steps, like tlb_flush_mmu: gather_protect
 * takes access away (mprotect or pkey_mprotect to none, purge), then
 * gather_release hands the pages back (pages_release).  What to flush is
 * decided first (gather_take); pages_lock is held across the protection
 * changes only when a compartment was destroyed meanwhile (its segments must
 * not change hands under the flush).  They also bound how long a freed page stays
 * reachable by the thread that freed it: until its gather is applied.
 * revoke=eager applies every run as it comes, the baseline.  How a span is
 * revoked (guard markers, alone or batched; a fresh no-access mapping over
 * a span that would be purged anyway; mprotect; its frames released under
 * a userfaultfd, or unprotected) is chosen in one place, span_how; the
 * backing stores (secret, alias) are asked there and in the purge.
 */
#include "revoke.h"
#include "owner.h"
#include "backing.h"
#include "policy.h"

#include <errno.h>

static void quarantine(struct range *r);
static int span_close(struct range *r, unsigned i, unsigned j, size_t len, enum os_takes takes,
		      bool *done);
static int span_failed(struct range *r, unsigned i, unsigned j, size_t len, int e, bool *done);

/* Does r[i..j) hold a run that was not its segment's carver's (it was
 * transferred)?  Such a run changes owner when it is revoked: it leaves
 * with fresh frames. */
static bool span_foreign(const struct range *r, unsigned i, unsigned j)
{
	for (unsigned k = i; k < j; k++)
		if (r[k].owner != seg_of(r[k].addr)->owner)
			return true;
	return false;
}

/* Purge the coalesced page runs (not huge ones: their segments are purged
 * when released) of r[a..b) that are at least min bytes long. */
static void purge_span(struct range *r, unsigned a, unsigned b, size_t min)
{
	for (unsigned i = a; i < b;) {
		if (r[i].kind != RK_RUN) {
			i++;
			continue;
		}
		unsigned j = i + 1;
		while (j < b && r[j].kind == RK_RUN && r[j].addr == range_end(&r[j - 1]))
			j++;
		size_t len = range_end(&r[j - 1]) - r[i].addr;
		/* a transferred run, secret or aliased pages: always, and never
		 * reused unpurged */
		bool foreign = span_foreign(r, i, j) || backing_special(r[i].addr, len);
		int e = len >= min || foreign ? backing_purge(r[i].addr, len) : -1;
		if (!e) {
			stat_inc(purges);
			stat_add(pages_purged, len >> PAGE_SHIFT);
			for (unsigned k = i; k < j; k++)
				r[k].purged = 1;
		} else if (foreign && e > 0) {
			/* its old frames would reach the segment's owner: never reused */
			for (unsigned k = i; k < j; k++)
				quarantine(&r[k]);
			policy_failed("purge (changing owner)", e, r[i].addr, len >> PAGE_SHIFT);
		}
		i = j;
	}
}

/* One range of a span whose `what` failed (policy.h); the span is counted
 * and reported once, by the caller. */
static void quarantine(struct range *r)
{
	if (r->kind == RK_RUN)
		policy_quarantine(r->addr, r->npages, r->owner);
	r->npages = 0; /* dropped from the release below */
}

/* The VMA budget.  Every protection boundary inside the heap splits a VMA,
 * and past vm.max_map_count mprotect fails.  Every VMA_CHECK_EVERY flushes
 * (and at once when an mprotect fails with ENOMEM) the process's VMAs are
 * counted; over the budget, spans shorter than DEGRADE_SPAN are revoked by
 * releasing their frames instead of protecting them, until the count is
 * back under half of it, watched by the userfaultfd (a stale access is
 * reported, alloc/uffd.c: release=auto arms it here, the first time).
 * Nothing to watch with: release=mprotect releases them unprotected (the
 * next touch reads zeros, never the old data); auto and uffd keep
 * protecting (VMAs grow past the budget).  The first time, a warning says
 * which. */
#define VMA_CHECK_EVERY 64
#define DEGRADE_SPAN ((size_t)64 << 10)
static uint32_t vma_checks;

static void degrade_warn(long n, uint64_t budget, int armed)
{
	static int warned;
	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	if (armed > 0)
		xpfo_warn("%d VMAs, over the budget of %u (max_vmas), and no userfaultfd to watch "
			  "released pages (errno %d): freed spans stay protected, VMAs grow past the "
			  "budget", n, (unsigned long)budget, (long)armed);
	else
		xpfo_warn("%d VMAs, over the budget of %u (max_vmas): small freed spans are "
			  "now released instead of protected%s", n, (unsigned long)budget,
			  armed ? "" : " (watched by userfaultfd)");
}

static void vma_check(bool failed)
{
	if (!failed && __atomic_add_fetch(&vma_checks, 1, __ATOMIC_RELAXED) % VMA_CHECK_EVERY != 1)
		return;
	long n = os_count_vmas(0, UINTPTR_MAX);
	uint64_t budget = g_stats.vma_budget;
	if (n < 0)
		return;
	if ((uint64_t)n > budget || failed) {
		/* armed before the flag is up: no span is released unwatched meanwhile */
		if (!__atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED)) {
			int armed = uffd_degrade_arm();
			__atomic_store_n(&g_stats.degraded, 1, __ATOMIC_RELAXED);
			degrade_warn(n, budget, armed);
		}
	} else if ((uint64_t)n < budget / 2) {
		__atomic_store_n(&g_stats.degraded, 0, __ATOMIC_RELAXED);
	}
}

/* Revoke a span by releasing its frames only (degraded mode).  Its pages
 * stay as reachable as they were, so they are not known to be zero later:
 * the next owner's calloc zeroes them. */
static bool release_unprotected(uintptr_t a, size_t len)
{
	if (backing_purge(a, len))
		return false;
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_inc(spans_released_unprotected);
	return true;
}

/* quarantine_large: a revoked run waits in a ring before it is released;
 * returns true if r was taken (the run it displaced is released). */
static bool quarantine_run(struct tstate *t, struct range *r)
{
	struct quarantine *q = &t->q;
	if (!q->runs) {
		q->runs = meta_alloc(opt.quarantine_large * sizeof *q->runs);
		if (!q->runs)
			return false;
	}
	/* revoked, held back: fault reports say so */
	if (r->kind == RK_RUN)
		owner_set_quarantined(r->addr, r->npages, r->owner);
	else
		__atomic_store_n(&seg_of(r->addr)->releasing, 2, __ATOMIC_RELEASE);
	if (q->nruns < opt.quarantine_large) {
		q->runs[q->nruns++] = *r;
		return true;
	}
	unsigned i = (unsigned)(rng_u64(&t->rng) % q->nruns);
	struct range out = q->runs[i];
	q->runs[i] = *r;
	pages_release(&out, 1);
	return true;
}

void revoke_quarantine_drain(struct tstate *t)
{
	struct quarantine *q = &t->q;
	gather_busy(&t->g, true);
	if (q->nruns)
		pages_release(q->runs, q->nruns);
	q->nruns = 0;
	gather_busy(&t->g, false);
}

/* Released spans shorter than this stay resident (revoked) for reuse while
 * the retained total stays under opt.retain; longer ones always go back. */
#define PURGE_ALWAYS ((size_t)1 << 20)

/* the counter of each flush reason */
static uint64_t *const reason_counter[] = {
	[FR_FULL] = &g_stats.flush_full, [FR_EXPLICIT] = &g_stats.flush_explicit,
	[FR_THREAD_EXIT] = &g_stats.flush_thread_exit, [FR_REUSE] = &g_stats.flush_reuse,
	[FR_EAGER] = &g_stats.flush_eager, [FR_SWITCH] = &g_stats.flush_switch,
	[FR_OTHER] = &g_stats.flush_other,
};

static void count_flush(enum flush_reason why)
{
	stat_inc(flushes);
	__atomic_fetch_add(reason_counter[why], 1, __ATOMIC_RELAXED);
}

/* release=guard (auto where the kernel has it): 1 markers installed, 0
 * off (or refused: the kernel has none), -1 not tried yet.  No probe: the
 * first span revoked is the try, so no call is made for nothing. */
static int guard_state = -1;

/* 1: process_madvise takes PIDFD_SELF here; 0: it does not (range by range
 * from then on); -1: not tried yet. */
static int batch_state = -1;

bool revoke_marks_seen(void)
{
	return __atomic_load_n(&guard_state, __ATOMIC_RELAXED) > 0;
}

bool revoke_marks_batched(void)
{
	return !tl_sandbox_locked && !uffd_release_on() &&
	       !__atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&guard_state, __ATOMIC_RELAXED) > 0 &&
	       __atomic_load_n(&batch_state, __ATOMIC_RELAXED) > 0;
}

/* How a span is revoked, in the order span_how prefers them. */
enum revoke_how {
	HOW_NONE,        /* revoke=off: nothing taken away (purged if due) */
	HOW_WATCHED,     /* frames released, the userfaultfd watches the pages */
	HOW_UNPROTECTED, /* frames released, nothing watches (release=mprotect over the budget) */
	HOW_MARKS_BATCH, /* guard markers, with other spans in one call */
	HOW_MARKS,       /* guard markers, one madvise */
	HOW_REMAP,       /* a fresh no-access mapping over it: access and frames gone at once */
	HOW_PROTECT,     /* mprotect (pkey_mprotect) to no access */
};

/* Are r[i..j) root's page runs in root's segments (a span may run on into
 * the next segment)? */
static bool span_roots(const struct range *r, unsigned i, unsigned j)
{
	for (unsigned k = i; k < j; k++)
		if (r[k].kind != RK_RUN || r[k].owner != comp_root.id ||
		    seg_of(r[k].addr)->owner != comp_root.id)
			return false;
	return true;
}

/* 1: a mapping over heap pages was refused (EPERM: a seccomp filter of
 * the program's, or sealed pages); no remap from then on. */
static int remap_refused;

/* Would the span r[i..j) (len bytes, plain anonymous memory) be purged
 * right after its protection (purge_span: at least purge_min long, or
 * holding a transferred run)?  Then a fresh no-access mapping over it does
 * both in one call.  Page runs only (a huge block's segments get theirs
 * when released, pages.c segs_release); not in a locked thread (its
 * filter refuses a mapping over the heap); not once the heap is
 * registered with the userfaultfd (a new mapping is not: os_remap
 * registers it again, one more call, and a failure there stops the
 * watching for the process). */
static bool span_remappable(const struct range *r, unsigned i, unsigned j, size_t len,
			    size_t purge_min)
{
	if (tl_sandbox_locked || uffd_filling() || __atomic_load_n(&remap_refused, __ATOMIC_RELAXED))
		return false;
	for (unsigned k = i; k < j; k++)
		if (r[k].kind != RK_RUN)
			return false;
	return len >= purge_min || span_foreign(r, i, j);
}

/* The one place that chooses how the span r[i..j) is revoked: the first
 * mechanism, from `from` on, that applies to it (span_revoke asks again
 * from the next one when a release fails; batch_apply's spans that a
 * batch did not cover go through span_apply, and so through here).
 * Released watched: release=uffd, or a span shorter than DEGRADE_SPAN in
 * the degraded mode once the userfaultfd watches; never secret or aliased
 * pages (not plain anonymous memory).  Released unprotected: such a short
 * span where nothing can watch and release=mprotect says so.  Guard
 * markers: root's page runs in root's segments, plain anonymous memory,
 * outside a locked thread (its executor allows madvise DONTNEED only),
 * where the kernel has them (release=auto or guard; not refused): their
 * protection stays root's, which a grant back to root then need not
 * change (grant.c guard_granted); batched with other spans in one call
 * where that works, the degraded mode and release=uffd apart (there spans
 * go one by one).  Otherwise a remap where the span would be purged right
 * after its protection (span_remappable; never secret or aliased pages,
 * whose mappings are shared), else mprotect.  purge_min: the length from
 * which the flush purges a span (gather_protect). */
static enum revoke_how span_how(const struct range *r, unsigned i, unsigned j,
				enum revoke_how from, size_t purge_min)
{
	if (opt.revoke == REVOKE_OFF)
		return HOW_NONE;
	size_t len = range_end(&r[j - 1]) - r[i].addr;
	bool degraded = __atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED);
	bool small = degraded && len < DEGRADE_SPAN;
	bool special = backing_special(r[i].addr, len);
	if (from <= HOW_WATCHED && (uffd_release_on() || (small && uffd_degrade_on())) && !special)
		return HOW_WATCHED;
	/* a span released unprotected is not marked clean: it stays writable,
	 * and a write after free would reach the next calloc.  Only
	 * release=mprotect asks for that; otherwise it stays protected. */
	if (from <= HOW_UNPROTECTED && small && uffd_unwatched_ok())
		return HOW_UNPROTECTED;
	int gs = __atomic_load_n(&guard_state, __ATOMIC_RELAXED);
	bool marks = gs >= 0 ? gs : opt.release == RELEASE_AUTO || opt.release == RELEASE_GUARD;
	/* root closed (mprotect, a STRICT compartment entered): its pages are
	 * closed now, and a span marked now would be recorded open under
	 * markers (pages.c open_map) while it is not: root's next grant of
	 * it would skip the mprotect that opens it */
	bool root_shut = !pkeys_on && !__atomic_load_n(&comp_root.open, __ATOMIC_RELAXED);
	if (from > HOW_MARKS || tl_sandbox_locked || !marks || special || root_shut ||
	    !span_roots(r, i, j))
		return from <= HOW_REMAP && !special && span_remappable(r, i, j, len, purge_min)
			       ? HOW_REMAP
			       : HOW_PROTECT;
	if (from <= HOW_MARKS_BATCH && __atomic_load_n(&batch_state, __ATOMIC_RELAXED) &&
	    !uffd_release_on() && !degraded)
		return HOW_MARKS_BATCH;
	return HOW_MARKS;
}

/* Revoke the span r[i..j) by releasing its frames, watched by the
 * userfaultfd (alloc/uffd.c): no mprotect, no VMA split; a stale access
 * faults and is reported.  Its pages are known zero (missing) from now on:
 * marked purged, so they are free and clean.  Secret and aliased spans are
 * not plain anonymous memory: they are protected as before. */
static bool release_watched(struct range *r, unsigned i, unsigned j, size_t len)
{
	if (backing_special(r[i].addr, len))
		return false;
	stat_inc(revoke_syscalls); /* the madvise is this revocation's syscall */
	if (os_purge((void *)r[i].addr, len))
		return false;
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	stat_inc(spans_released_uffd);
	for (unsigned k = i; k < j; k++)
		r[k].purged = 1;
	return true;
}

/* The kernel refused markers (EINVAL, ENOSYS, EPERM) before any was
 * installed: none here (before Linux 6.13), or not allowed; mprotect for
 * good, said once. */
static void guard_refused(int e)
{
	int was = -1;
	if (!__atomic_compare_exchange_n(&guard_state, &was, 0, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	if (opt.release == RELEASE_GUARD || opt.verbose)
		xpfo_warn("release=guard: no guard markers here (errno %d; Linux 6.13 has them): "
			  "revoked pages are protected with mprotect", (long)e);
}

/* Markers were installed: the first try succeeded, if it was that. */
static void guard_worked(void)
{
	if (__atomic_load_n(&guard_state, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&guard_state, 1, __ATOMIC_RELAXED);
}

/* The span r[i..j) got its guard markers: revoked, its frames gone. */
static void span_marked(struct range *r, unsigned i, unsigned j, size_t len)
{
	stat_inc(spans_guarded);
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	for (unsigned k = i; k < j; k++)
		r[k].purged = PURGED_MARKED;
}

/* Revoke the span with guard markers: one madvise, no VMA split, its
 * frames released (so marked purged: no purge call after).  0; -1 to
 * protect it the usual way (markers refused: an older kernel, an mlocked
 * mapping, or a seccomp filter of the program's that denies the advice);
 * else the errno of a failure. */
static int release_marked(struct range *r, unsigned i, unsigned j, size_t len)
{
	int e = os_guard((void *)r[i].addr, len, true);
	stat_inc(revoke_syscalls);
	if (e == EINVAL || e == ENOSYS || e == EPERM) {
		guard_refused(e);
		return -1;
	}
	if (e)
		return e;
	guard_worked();
	span_marked(r, i, j, len);
	return 0;
}

/* Revoke the span with one fresh no-access mapping over it (os_remap, a
 * flush round of its own, where an mprotect and the purge after it make
 * two): its access and its frames go together, so it is marked purged
 * (clean).  On pkeys the fresh pages get the revoked key (nothing present:
 * no flush); where that fails they stay without access for every key, and
 * are quarantined.  0; -1 to protect it the usual way (the mapping failed:
 * the kernel refuses before it unmaps anything, or else leaves the span
 * unmapped, where the mprotect fails in turn and the span is quarantined);
 * else the errno of the quarantine. */
static int release_remapped(struct range *r, unsigned i, unsigned j, size_t len)
{
	void *a = (void *)r[i].addr;
	int e = os_remap(a, len, OS_NONE);
	stat_inc(revoke_syscalls);
	if (e) {
		if (e == EPERM)
			__atomic_store_n(&remap_refused, 1, __ATOMIC_RELAXED);
		return -1;
	}
	stat_inc(spans_remapped);
	if (key_revoked() >= 0) {
		e = os_protect_key(a, len, OS_NONE, key_revoked(), OS_TAKES_NOTHING);
		stat_inc(revoke_syscalls);
	}
	if (e) {
		for (unsigned k = i; k < j; k++)
			quarantine(&r[k]);
		policy_failed("revoke (the key of fresh pages)", e, r[i].addr, len >> PAGE_SHIFT);
		return e;
	}
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	for (unsigned k = i; k < j; k++)
		r[k].purged = 1;
	return 0;
}

/* Take access away from the span r[i..j) (contiguous) the way span_how
 * says: 0, or the errno of a failure (its runs are quarantined).  *done:
 * released already (nothing left to purge). */
static int span_revoke(struct range *r, unsigned i, unsigned j, size_t purge_min, bool *done)
{
	size_t len = range_end(&r[j - 1]) - r[i].addr;
	enum revoke_how how = span_how(r, i, j, HOW_WATCHED, purge_min);
	*done = how != HOW_NONE;
	if (how == HOW_NONE)
		return 0;
	if (how == HOW_WATCHED) {
		if (release_watched(r, i, j, len))
			return 0;
		how = span_how(r, i, j, HOW_UNPROTECTED, purge_min);
	}
	if (how == HOW_UNPROTECTED) {
		if (release_unprotected(r[i].addr, len))
			return 0;
		how = span_how(r, i, j, HOW_MARKS, purge_min);
	}
	int e = -1;
	if (how == HOW_MARKS || how == HOW_MARKS_BATCH) {
		if ((e = release_marked(r, i, j, len)) < 0)
			how = span_how(r, i, j, HOW_REMAP, purge_min);
	}
	if (how == HOW_REMAP && (e = release_remapped(r, i, j, len)) >= 0)
		return e;
	if (!e)
		return 0;
	if (e < 0)
		return span_close(r, i, j, len, OS_TAKES_AWAY, done);
	return span_failed(r, i, j, len, e, done);
}

/* Close the span r[i..j) with mprotect (pkey_mprotect to the revoked
 * key); `takes` says whether any of its pages can be present (none when
 * its frames went just before: no flush round).  0, *done false (it is
 * revoked, not yet released), or as span_failed. */
static int span_close(struct range *r, unsigned i, unsigned j, size_t len, enum os_takes takes,
		      bool *done)
{
	int e = os_protect_key((void *)r[i].addr, len, OS_NONE, key_revoked(), takes);
	stat_inc(revoke_syscalls);
	if (e)
		return span_failed(r, i, j, len, e, done);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	*done = false;
	return 0;
}

/* The span r[i..j) could not be closed (errno e): past the VMA budget
 * (ENOMEM) its frames are released instead, watched where the
 * userfaultfd can (0, *done true); else its runs are quarantined (e). */
static int span_failed(struct range *r, unsigned i, unsigned j, size_t len, int e, bool *done)
{
	if (e == ENOMEM) {
		vma_check(true);
		if ((uffd_degrade_on() && release_watched(r, i, j, len)) ||
		    release_unprotected(r[i].addr, len)) {
			*done = true;
			return 0;
		}
	}
	for (unsigned k = i; k < j; k++)
		quarantine(&r[k]);
	policy_failed("revoke", e, r[i].addr, len >> PAGE_SHIFT);
	*done = true;
	return e;
}

/* One span on its own: revoked (or released), then purged if due. */
static void span_apply(struct range *r, unsigned i, unsigned j, size_t purge_min, int *err)
{
	bool done = false;
	int e = span_revoke(r, i, j, purge_min, &done);
	if (e)
		*err = e;
	if (!done)
		purge_span(r, i, j, purge_min);
}

/* Spans waiting to get their guard markers in one call (gather_protect):
 * a flush of scattered spans made one madvise each (frag: 56,746); the
 * same for spans waiting to be zapped (zap_apply). */
struct guard_batch {
	unsigned n;
	uint16_t i[OS_GUARD_VEC], j[OS_GUARD_VEC];
};

/* The batch's spans as the vector calls take them: first address, bytes. */
static void batch_ranges(const struct range *r, const struct guard_batch *b, uintptr_t *addr,
			 size_t *len)
{
	for (unsigned k = 0; k < b->n; k++) {
		addr[k] = r[b->i[k]].addr;
		len[k] = range_end(&r[b->j[k] - 1]) - addr[k];
	}
}

/* Installing markers over populated pages zaps them range by range, each
 * with its own TLB flush (a shootdown on every CPU the process runs on):
 * a batch of 64 populated 4-page ranges took 889 us with a second thread
 * running (a standalone timing, 2 CPUs), and 112 us when their frames
 * had gone first in one MADV_DONTNEED call, which flushes once for the
 * whole vector; the markers then find nothing to zap.  Not where the
 * batches were refused (batch_state); a refusal of this call turns it off
 * (backing_purge_vec), and the markers zap as before.  In between the
 * pages read zero, never their old bytes. */
static void batch_purge(const uintptr_t *addr, const size_t *len, unsigned n)
{
	size_t done;
	if (__atomic_load_n(&batch_state, __ATOMIC_RELAXED))
		backing_purge_vec(addr, len, n, &done);
}

/* Install the batch's markers in one call; the spans it did not cover (a
 * failure stops it: the rest are untouched) go the usual way. */
static void batch_apply(struct range *r, struct guard_batch *b, size_t purge_min, int *err)
{
	uintptr_t addr[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC], done = 0;
	batch_ranges(r, b, addr, len);
	if (b->n > 1)
		batch_purge(addr, len, b->n);
	int e = b->n > 1 ? os_guard_vec(addr, len, b->n, true, OS_TAKES_AWAY, &done) : ECANCELED;
	if (e != ECANCELED)
		stat_inc(revoke_syscalls);
	/* no PIDFD_SELF, no process_madvise, not for this advice, or not
	 * allowed: range by range from now on (where markers are tried, if
	 * not yet) */
	if (e == EBADF || e == EINVAL || e == ENOSYS || e == EPERM)
		__atomic_store_n(&batch_state, 0, __ATOMIC_RELAXED);
	if (!e && done) {
		__atomic_store_n(&batch_state, 1, __ATOMIC_RELAXED);
		guard_worked();
	}
	for (unsigned k = 0; k < b->n; k++) {
		if (done >= len[k]) {
			done -= len[k];
			span_marked(r, b->i[k], b->j[k], len[k]);
		} else {
			done = 0;
			span_apply(r, b->i[k], b->j[k], purge_min, err);
		}
	}
	b->n = 0;
}

/* Spans that mprotect would revoke a flush round each (no guard markers
 * for them: Linux 6.12, another compartment's, root closed), or a remap
 * would, where one process_madvise(MADV_DONTNEED) flushes once for all its
 * ranges (Linux 6.16 and later, 6.12 with kernel/'s series): their frames
 * go first, 64 spans to a call, and each is then closed with nothing
 * present (mprotect changes no entry: no flush).  A flush round a batch
 * where there was one a span (prodcons in the QEMU guest on kernel/'s
 * 6.12: 557-753 flush rounds a run, 20-69 so, with 4 threads).  Their
 * frames go as markers' do, so the pages come back zero (clean).  Not
 * under release=mprotect (the frames stay there, as asked), nor while
 * xpfo knows of one thread only (no other CPU to interrupt: the flush is
 * local, and a span kept with its frames is reused without a page fault;
 * compartment_revoke_runs, one thread, took 41-99 ms zapped against 25-50
 * ms on the loaded 2-CPU build host), nor for what the purge vector does not take (secret
 * or aliased pages, huge blocks, a locked thread), nor once the
 * userfaultfd watches the heap.  In
 * between the owner's pages read zero, never their old bytes; an access
 * then maps a page the close flushes as usual. */
static bool span_zappable(const struct range *r, unsigned i, unsigned j, enum revoke_how how)
{
	if ((how != HOW_PROTECT && how != HOW_REMAP) || opt.release != RELEASE_AUTO ||
	    __atomic_load_n(&g_stats.threads_known, __ATOMIC_RELAXED) < 2 || uffd_filling() ||
	    !backing_purge_vec_batched())
		return false;
	for (unsigned k = i; k < j; k++)
		if (r[k].kind != RK_RUN)
			return false;
	return !backing_special(r[i].addr, range_end(&r[j - 1]) - r[i].addr);
}

/* Release the batch's frames in one call, then close each span; the
 * spans the call did not cover go the usual way. */
static void zap_apply(struct range *r, struct guard_batch *b, size_t purge_min, int *err)
{
	uintptr_t addr[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC], done = 0;
	batch_ranges(r, b, addr, len);
	if (b->n > 1 && !backing_purge_vec(addr, len, b->n, &done) && done)
		stat_inc(purges);
	for (unsigned k = 0; k < b->n; k++) {
		unsigned i = b->i[k], j = b->j[k];
		if (done >= len[k]) {
			done -= len[k];
			bool released;
			int e = span_close(r, i, j, len[k], OS_TAKES_NOTHING, &released);
			if (e)
				*err = e;
			if (e || released)
				continue;
			stat_inc(spans_zapped);
			stat_add(pages_purged, len[k] >> PAGE_SHIFT);
			for (unsigned m = i; m < j; m++)
				r[m].purged = 1;
		} else {
			done = 0;
			span_apply(r, i, j, purge_min, err);
		}
	}
	b->n = 0;
}

/* A freed huge block whose segments go straight back to the pool: they
 * are mapped afresh there (pages.c segs_release), one call that takes
 * access and frames away together, so it is not protected first (two
 * flush rounds a block).  Not where the run quarantine holds it revoked,
 * nor for a locked thread (its executor does its calls), nor under
 * release=uffd or revoke=off (nothing taken away here anyway). */
static bool remap_only(const struct range *r)
{
	return r->kind == RK_HUGE && !(r->flags & RF_KEEP) && opt.revoke != REVOKE_OFF &&
	       !opt.quarantine_large && !tl_sandbox_locked && !uffd_release_on();
}

/* Is r[i] a huge block the flush protects and keeps for its owner
 * (pages.c pages_keep_huge), with room beside the ones before it?  Not
 * where the run quarantine or a locked thread's executor takes revoked
 * blocks, nor under release=uffd (its frames go anyway). */
static bool huge_keeps(const struct range *r, unsigned i)
{
	if (r[i].kind != RK_HUGE || (r[i].flags & RF_NOKEEP) || opt.quarantine_large ||
	    tl_sandbox_locked || uffd_release_on())
		return false;
	size_t more = 0;
	for (unsigned k = 0; k < i; k++)
		if ((r[k].flags & RF_KEEP) && r[k].owner == r[i].owner)
			more += seg_of(r[k].addr)->huge_pages;
	return pages_huge_keep_room(&r[i], more);
}

/* Step one: take access away from every span (and purge what must go);
 * spans that get guard markers, in batches of OS_GUARD_VEC. */
static int gather_protect(struct range *r, unsigned n, uint64_t pages)
{
	uint64_t retained = __atomic_load_n(&g_stats.resident_pages, __ATOMIC_RELAXED) -
			    __atomic_load_n(&g_stats.mapped_pages, __ATOMIC_RELAXED) -
			    __atomic_load_n(&g_stats.huge_kept_pages, __ATOMIC_RELAXED);
	size_t purge_min = (retained + pages) << PAGE_SHIFT > opt.retain ? opt.purge : PURGE_ALWAYS;
	int err = 0;
	struct guard_batch b, z;
	b.n = z.n = 0;
	for (unsigned i = 0; i < n;) {
		if (huge_keeps(r, i))
			r[i].flags |= RF_KEEP;
		if (remap_only(&r[i])) { /* revoked by its release (gather_release) */
			stat_add(pages_revoked, r[i].npages);
			r[i].purged = 1;
			i++;
			continue;
		}
		unsigned j = i + 1;
		while (j < n && r[j].addr == range_end(&r[j - 1]) && !remap_only(&r[j]))
			j++;
		enum revoke_how how = span_how(r, i, j, HOW_WATCHED, purge_min);
		if (how == HOW_MARKS_BATCH) {
			b.i[b.n] = (uint16_t)i;
			b.j[b.n++] = (uint16_t)j;
			if (b.n == OS_GUARD_VEC)
				batch_apply(r, &b, purge_min, &err);
		} else if (span_zappable(r, i, j, how)) {
			z.i[z.n] = (uint16_t)i;
			z.j[z.n++] = (uint16_t)j;
			if (z.n == OS_GUARD_VEC)
				zap_apply(r, &z, purge_min, &err);
		} else {
			span_apply(r, i, j, purge_min, &err);
		}
		i = j;
	}
	if (b.n)
		batch_apply(r, &b, purge_min, &err);
	if (z.n)
		zap_apply(r, &z, purge_min, &err);
	return err;
}

/* The protection changes are done: what gather_take held, let go.  The
 * VMA budget is checked only after a flush that applied something (n
 * ranges): a full flush that kept every run changed no VMA (malloc/free of
 * 512 KiB flushed every 31 frees that way, each 64th reading the maps). */
static void gather_untake(bool careful, unsigned n)
{
	if (careful)
		pthread_mutex_unlock(&pages_lock);
	else
		__atomic_sub_fetch(&fast_flushes_inflight, 1, __ATOMIC_RELEASE);
	if (n)
		vma_check(false);
}

/* Does range r go back to the pages (not dropped, nor kept in the
 * thread's run quarantine)? */
static bool release_keeps(struct tstate *t, struct range *r)
{
	if (r->flags & RF_GUARDED) /* its guard leaves with it */
		stat_sub(live_guards, 1);
	return r->npages &&
	       !(opt.quarantine_large && !(r->flags & RF_SPARE) && quarantine_run(t, r));
}

/* Step two: hand the pages back (or to the thread's run quarantine). */
static void gather_release(struct tstate *t, struct range *r, unsigned n)
{
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		if (release_keeps(t, &r[i]) && !((r[i].flags & RF_KEEP) && pages_keep_huge(&r[i])))
			r[m++] = r[i];
	pages_release(r, m);
}

/* Remember the spans just revoked (adjacent runs of one owner), and halve
 * the grant span when a spare was revoked unused. */
static void note_revoked(struct gather *g, const struct range *r, unsigned n)
{
	bool spare = false;
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		while (j < n && r[j].addr == range_end(&r[j - 1]) && r[j].owner == r[i].owner)
			j++;
		for (unsigned k = i; k < j; k++)
			spare |= r[k].npages && (r[k].flags & RF_SPARE);
		if (r[i].npages) {
			struct revoked_span *s = &g->recent[g->recent_next++ % GATHER_RECENT];
			*s = (struct revoked_span){ r[i].addr, range_end(&r[j - 1]), g->free_serial,
						    r[i].owner };
		}
		i = j;
	}
	if (spare)
		grant_span_unused(g);
}

/* Spans shorter than opt.purge stay resident after their revocation
 * whatever the total (one purge call each would double the syscalls), so
 * the bound is kept here: once the revoked pages left resident exceed
 * opt.retain, one thread purges them all, segment by segment, each run of
 * free neighbours in one call (a 32 MiB bound is never reached by a heap
 * under 32 MiB, and these pages were half of such a heap's extra RSS). */
static uint64_t retained_bytes(void)
{
	uint64_t res = __atomic_load_n(&g_stats.resident_pages, __ATOMIC_RELAXED);
	uint64_t map = __atomic_load_n(&g_stats.mapped_pages, __ATOMIC_RELAXED) +
		       __atomic_load_n(&g_stats.huge_kept_pages, __ATOMIC_RELAXED);
	return res > map ? (res - map) << PAGE_SHIFT : 0;
}

/* A sweep that leaves more than retain behind (pages queued in other
 * threads' gathers, or the resident gauge counting pages that were never
 * touched) is not repeated at every flush, each walking every segment to
 * find nothing: the next waits until another retain/2 has accumulated over
 * what the last one left (`floor`, reset once under retain again). */
static void retain_trim(void)
{
	static bool trimming;
	static uint64_t floor;
	uint64_t r = retained_bytes(), f = __atomic_load_n(&floor, __ATOMIC_RELAXED);
	if (r <= opt.retain) {
		if (f)
			__atomic_store_n(&floor, 0, __ATOMIC_RELAXED);
		return;
	}
	if ((f && r <= f + opt.retain / 2) || __atomic_exchange_n(&trimming, true, __ATOMIC_ACQUIRE))
		return;
	pages_purge_all();
	r = retained_bytes();
	__atomic_store_n(&floor, r > opt.retain ? r : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&trimming, false, __ATOMIC_RELEASE);
}

int gather_apply(struct tstate *t, struct gather *g, enum flush_reason why, unsigned keep)
{
	count_flush(why);
	gather_busy(g, true); /* until the kept runs are back */
	uint64_t pages = g->pages;
	bool careful;
	unsigned n = gather_take(g, &careful, keep);
	int err = gather_protect(g->r, n, pages);
	gather_untake(careful, n);
	note_revoked(g, g->r, n);
	gather_release(t, g->r, n);
	gather_restore(g, keep);
	gather_busy(g, false);
	retain_trim();
	return err;
}

int revoke_flush(struct tstate *t, enum flush_reason why)
{
	struct gather *g = &t->g;
	int err = 0;
	if (why == FR_EXPLICIT) /* the program says a phase ends: spans start small */
		g->span = 0;
	if (!g->live)
		gather_init(g);
	else
		err = gather_apply(t, g, why, gather_keep(g, why));
	/* the runs exited threads left queued go too (gather.c's orphans),
	 * but at a thread's exit (bounded there) and at a switch (the
	 * STRICT ones apply them themselves) */
	if (why != FR_THREAD_EXIT && why != FR_SWITCH && why != FR_EAGER) {
		int e = revoke_orphans_apply(t, why);
		if (!err)
			err = e;
	}
	return err;
}

/* Under revoke=off free pages stay accessible as the rest of their
 * segment (pages.c opens each new one for good) and grants change nothing,
 * so a page closed here would never be opened again: a guard moved by
 * realloc in place, reused as a plain page, faulted its new owner (python
 * and xb-micro died under revoke=off, "violation: write of ... owned by
 * compartment root").  So nothing is closed there (tests/revoke case 8). */
int revoke_range(uintptr_t addr, size_t len)
{
	if (opt.revoke == REVOKE_OFF)
		return 0;
	int e = os_protect_key((void *)addr, len, OS_NONE, key_revoked(), OS_TAKES_AWAY);
	if (!e)
		stat_inc(revoke_syscalls);
	return e;
}
