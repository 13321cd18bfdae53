/* grant.c - access for pages taken from the allocator: a run granted to
 * its compartment as the compartment is now (open: read-write; closed: it
 * stays inaccessible), guard markers removed where revocation installed
 * them, secret frames made, missing pages filled under a userfaultfd; and
 * how many pages a grant takes at once (grant spans). */
#include "revoke.h"
#include "owner.h"
#include "backing.h"
#include "policy.h"

#include <errno.h>
#include <limits.h>

/* Grant spans: a thread that needs pages takes a span of its
 * owner's free pages with one protection change, and the rest waits in the
 * gather as a spare its next runs and slabs take back without a syscall.
 * The span doubles at every grant, from GRANT_MIN up to GRANT_MAX pages,
 * and halves when a flush revokes spare pages nobody used.  The spare's
 * pages are the owner's from then on (I3 holds: they never leave it until
 * revoked like any freed run).  revoke=eager takes no spare: it would be
 * revoked at once, a syscall for nothing. */
#define GRANT_MIN 16
#define GRANT_MAX 256

/* The thread's grant span, doubled for the next grant up to GRANT_MAX. */
static size_t grant_span_next(struct gather *g)
{
	size_t span = g->span ? g->span : GRANT_MIN;
	if (span < GRANT_MAX)
		g->span = (uint32_t)span * 2;
	return span;
}

size_t grant_span_size(struct tstate *t, size_t npages, bool guarded)
{
	if (opt.revoke == REVOKE_EAGER || npages >= GRANT_MAX)
		return npages;
	size_t span = grant_span_next(&t->g);
	/* guarded runs: one range each in grant_guarded_span's call */
	if (guarded && span > npages * OS_GUARD_VEC)
		span = npages * OS_GUARD_VEC;
	return span < npages ? npages : span / npages * npages;
}

void grant_span_unused(struct gather *g)
{
	if (g->span > GRANT_MIN)
		g->span /= 2;
}

/* The statistic that says whether keeping hot runs works: a grant of
 * pages this thread revoked from the same owner within `batch` frees. */
static void count_regrant(uint16_t owner, uintptr_t addr, size_t len)
{
	struct gather *g = tl_state ? &tl_state->g : NULL;
	for (unsigned i = 0; g && i < GATHER_RECENT; i++) {
		const struct revoked_span *s = &g->recent[i];
		if (s->owner == owner && s->lo < addr + len && addr < s->hi &&
		    g->free_serial - s->at <= opt.batch) {
			stat_inc(regrants_soon);
			return;
		}
	}
}

static int grant_now(uint16_t owner, uintptr_t addr, size_t len, int key, enum os_takes takes)
{
	stat_inc(grant_syscalls);
	count_regrant(owner, addr, len);
	return os_protect_key((void *)addr, len, OS_RW, key, takes);
}

/* The key a grant to c opens pages with, or KEY_CLOSED: c is closed, and
 * its pages stay as their revocation left them until it opens (c->lock
 * held, unless c is root). */
#define KEY_CLOSED INT_MIN
static int grant_key(struct xpfo_compartment *c)
{
	if (c == &comp_root) /* closed only while a single thread is in a STRICT one */
		return comp_root.open ? key_plain() : KEY_CLOSED; /* -1 or key_root */
	int key = pkeys_comp_key(c);
	if (key > 0)
		return key;
	return c->open ? key_plain() : KEY_CLOSED;
}

/* pkeys, release=uffd: a grant to keyed compartment c in a segment it
 * carved and has not yet given its key whole gives it all of it in one
 * call (pages.c pages_key_segment): its guard and free pages missing,
 * watched, the segment one VMA.  True when done, the grant included. */
static bool grant_whole_segment(struct xpfo_compartment *c, uintptr_t addr, size_t len, int key)
{
	struct segment *s = seg_of(addr);
	uintptr_t base = seg_addr(s);
	if (c == &comp_root || key <= 0 || key != pkeys_comp_key(c) ||
	    !__atomic_load_n(&s->unkeyed, __ATOMIC_RELAXED) ||
	    !uffd_release_on() || secret_comp(c) || addr + len > base + SEG_SIZE ||
	    backing_special(base, SEG_SIZE))
		return false;
	if (pages_key_segment(c, s, key))
		return false;
	stat_inc(grant_syscalls);
	count_regrant(c->id, addr, len);
	return true;
}

/* c->lock held (unless c is root). */
int grant_range_locked(struct xpfo_compartment *c, uintptr_t addr, size_t len,
		       enum os_takes takes)
{
	if (opt.revoke == REVOKE_OFF)
		return 0;
	int key = grant_key(c);
	if (key == KEY_CLOSED || grant_whole_segment(c, addr, len, key))
		return 0;
	return grant_now(c->id, addr, len, key, takes);
}

/* Pages whose grant failed after their markers were removed may be open
 * (root's protection, no markers), and they go back to the free pages:
 * every page gets markers again (they may have had them, or a closed
 * protection, or root's after the grant's call), or PROT_NONE where
 * markers fail; 0 when closed. */
static int grant_close(uintptr_t a, size_t len)
{
	stat_inc(revoke_syscalls);
	if (!os_guard((void *)a, len, true))
		return 0;
	stat_inc(revoke_syscalls);
	return os_protect_key((void *)a, len, OS_NONE, key_revoked(), OS_TAKES_AWAY);
}

/* Under release=guard any free page of root's segments may carry guard
 * markers (and a guard page keeps them, its own protection unknown), so
 * every grant there removes them first (one madvise; nothing to do where
 * there are none): the pages read zero from then on.  Other segments
 * never have any (revoke.c span_how; a segment that changes hands is mapped
 * afresh).  Then true when [addr, addr+len) is this thread's last take
 * of free pages (pages.c, just before the grant) and every one of its
 * pages was revoked with markers, open to root (pages.c open_map): root's
 * protection is theirs already, no mprotect.  *e: a failure's errno. */
static bool guard_granted(struct xpfo_compartment *c, uintptr_t addr, size_t len, int *e,
			  bool *removed)
{
	*e = 0;
	*removed = false;
	if (!revoke_marks_seen() || opt.revoke == REVOKE_OFF ||
	    seg_of(addr)->owner != comp_root.id)
		return false;
	struct tstate *t = tl_state;
	size_t np = len >> PAGE_SHIFT;
	/* the whole take, or all of it but its last page (a new run's guard,
	 * which keeps its markers or its closed protection: inaccessible) */
	bool open = t && addr == t->take.addr &&
		    ((np == t->take.npages && t->take.open == np) ||
		     (np + 1 == t->take.npages && t->take.open_head == np));
	if (t)
		t->take.npages = 0; /* used */
	*e = os_guard((void *)addr, len, false);
	stat_inc(grant_syscalls);
	*removed = !*e;
	return *e || (open && c == &comp_root && !pkeys_on && comp_root.open);
}

/* Markers removed, then a grant that opens nothing: the owner is closed
 * (root while a STRICT compartment is entered; a closed compartment
 * without a key), and grant_range_locked leaves the pages as their revocation
 * did, which under mprotect is PROT_NONE, reopened by the owner's next
 * open.  Under markers they kept their old protection, so they are closed
 * here (c->lock held where grant takes it). */
static int close_after_marks(struct xpfo_compartment *c, uintptr_t addr, size_t len)
{
	if (grant_key(c) != KEY_CLOSED)
		return 0;
	stat_inc(revoke_syscalls);
	/* installing the markers released the frames: nothing present */
	return os_protect_key((void *)addr, len, OS_NONE, key_revoked(), OS_TAKES_NOTHING);
}

/* May c's guarded runs be granted a span at a time (run.c run_get)?  Root,
 * open, without keys, where revocation installs guard markers and batches
 * them in one call (both seen working): a run revoked that way needs only
 * its markers removed, in one call for up to OS_GUARD_VEC runs, while its
 * guard keeps its own (markers, or a closed protection).  A guarded run
 * took a grant call of its own: cross_thread_free/16384 made 0.93 granting
 * calls per block. */
bool grant_guarded_spans(const struct xpfo_compartment *c)
{
	return opt.revoke == REVOKE_BATCHED && c == &comp_root && !pkeys_on && comp_root.open &&
	       revoke_marks_batched();
}

/* grant_guarded_span's calls (below), without the closing on failure. */
static int grant_span_try(uintptr_t a, size_t unit, size_t k, bool open, bool clean)
{
	uintptr_t addr[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC], want = 0, done = 0;
	if (k > OS_GUARD_VEC)
		return EINVAL;
	struct tstate *t = tl_state;
	if (t)
		t->take.npages = 0; /* used */
	count_regrant(comp_root.id, a, (k * unit) << PAGE_SHIFT);
	int e = 0;
	if (!open) {
		for (size_t j = 0; j < k; j++) {
			addr[j] = a + ((j * unit + unit - 1) << PAGE_SHIFT);
			len[j] = PAGE_SIZE;
		}
		/* clean: no page has frames, the markers zap nothing */
		e = os_guard_vec(addr, len, (unsigned)k, true,
				 clean ? OS_TAKES_NOTHING : OS_TAKES_AWAY, &done);
		if (e == ECANCELED) /* an injected failure: no call made */
			return e;
		stat_inc(grant_syscalls);
		if (e || done != k * PAGE_SIZE)
			return e ? e : EIO;
		stat_inc(grant_syscalls);
		e = os_protect((void *)a, (k * unit) << PAGE_SHIFT, OS_RW);
		if (e)
			return e;
	}
	for (size_t j = 0; j < k; j++) {
		addr[j] = a + ((j * unit) << PAGE_SHIFT);
		len[j] = (unit - 1) << PAGE_SHIFT;
		want += len[j];
	}
	e = os_guard_vec(addr, len, (unsigned)k, false, OS_TAKES_NOTHING, &done);
	if (e == ECANCELED)
		return e;
	stat_inc(grant_syscalls);
	return e ? e : done == want ? 0 : EIO;
}

/* Grant the k guarded runs of unit pages each (the last the guard) from
 * a, the span this thread just took from root's free pages.  Where every
 * run's pages are open under markers (pages.c pages_alloc_span: runs_open)
 * one call removes the markers of all of them, and each guard keeps its
 * own (markers, or a closed protection).  Otherwise three: markers on
 * every guard, root's protection over the span, the runs' markers
 * removed; the guards end open under markers (clean: no page of the span
 * has frames, so those markers zap nothing: no flush round).  0, or an errno: then no run
 * is granted, and the span is closed again (grant_close), or, where
 * even that failed, *kept says its pages must never be handed out. */
int grant_guarded_span(uintptr_t a, size_t unit, size_t k, bool open, bool clean, bool *kept)
{
	int e = grant_span_try(a, unit, k, open, clean);
	int ce = e ? grant_close(a, (k * unit) << PAGE_SHIFT) : 0;
	*kept = ce != 0;
	if (ce)
		policy_failed("close a span whose grant failed", ce, a, k * unit);
	return e;
}

int grant_range(struct xpfo_compartment *c, uintptr_t addr, size_t len, int *close_err)
{
	int ge;
	bool removed;
	if (close_err)
		*close_err = 0;
	if (guard_granted(c, addr, len, &ge, &removed))
		return ge ? ge : uffd_fill_grant(c, addr, len);
	int e = secret_back(c, addr, len); /* a secret compartment's new frames */
	/* the lock keeps c's key and open state still meanwhile (root's key
	 * too: the first lock moves root's pages under it, comp_plain_rekey) */
	bool lock = !e && !(c == &comp_root && !pkeys_on) && opt.revoke != REVOKE_OFF;
	if (lock)
		pthread_mutex_lock(&c->lock);
	if (!e)
		e = grant_range_locked(c, addr, len, OS_TAKES_NOTHING);
	if (!e && removed)
		e = close_after_marks(c, addr, len);
	if (lock)
		pthread_mutex_unlock(&c->lock);
	/* the markers are gone and the pages must not go back open */
	int ce = e && removed ? grant_close(addr, len) : 0;
	if (ce && close_err)
		*close_err = ce;
	/* released or never used pages are missing: fill them now, so that
	 * neither the program nor the kernel faults on them */
	return e ? e : uffd_fill_grant(c, addr, len);
}

