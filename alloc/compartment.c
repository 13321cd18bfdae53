/* compartment.c - compartments: owners of pages, entered and left by
 * threads, on the mprotect backend.
 *
 * The mprotect backend can only protect pages for the whole process, so a
 * compartment is open (its pages read-write) while at least one thread is
 * inside it, and closed (its pages inaccessible) while none is: invariant
 * I4 holds in its weaker form, "while some thread is inside".  Opening and
 * closing walk the compartment's pages and change their protection in
 * coalesced spans, under the compartment's lock; grant_range() takes the same lock,
 * so a run handed out meanwhile gets the protection the compartment has.
 * Pages queued for revocation are closed with their compartment but not
 * reopened with it; a thread that takes one back reopens it (gather.c,
 * access_gen).
 *
 * Lock order: comp_lock, then pkeys' lock, then a compartment's lock (two:
 * lower id first), then pages_lock.  fork takes them all in that order
 * (comp_fork_lock, then init.c's).
 */
#include "alloc.h"
#include "owner.h"
#include "backing.h"
#include "policy.h"
#include "pkeys.h"

#include <errno.h>
#include <string.h>

static pthread_mutex_t comp_lock = PTHREAD_MUTEX_INITIALIZER;
static uint16_t comp_next_id = 2;              /* 1 is root */
/* Destroyed compartments, reused oldest first and only once more than
 * REUSE_DELAY wait, so a destroyed handle stays recognisably destroyed
 * (EINVAL) for at least that many later creations. */
static struct xpfo_compartment *free_head, *free_tail;
static unsigned nfree;
#define REUSE_DELAY 256
/* names as the program sees them: outside the (sealed) metadata */
static char pub_names[MAX_COMPARTMENTS][48];

/* Does c point at a live compartment of the metadata pool (not root)? */
static bool comp_valid(const struct xpfo_compartment *c)
{
	return c && meta_pool_owns(c) && !((uintptr_t)c & 63) &&
	       __atomic_load_n(&c->magic, __ATOMIC_RELAXED) == COMP_MAGIC &&
	       __atomic_load_n(&c->live, __ATOMIC_ACQUIRE);
}

struct xpfo_compartment *comp_check(const struct xpfo_compartment *c)
{
	if (c != &comp_root && !comp_valid(c))
		return fail_null(EINVAL);
	return (struct xpfo_compartment *)c;
}

/* comp_check, and not poisoned by a failed close (EIO). */
static struct xpfo_compartment *comp_usable(const struct xpfo_compartment *c)
{
	struct xpfo_compartment *u = comp_check(c);
	if (u && __atomic_load_n(&u->poisoned, __ATOMIC_ACQUIRE))
		return fail_null(EIO);
	return u;
}

/* ---- access: open and close (c->lock held) ------------------------------ */

/* A walk collects c's pages into coalesced spans under pages_lock and
 * changes their protection after dropping it (no syscall under pages_lock),
 * still under c->lock: that keeps c's live pages where they are meanwhile,
 * since grants, frees into a gather, cancels, transfers and destroy all take
 * it.  Queued pages are the exception: the gather that holds them releases
 * them under pages_lock alone, and a late close must not reach a page that
 * has a new owner by then; a span holding any is protected at once, under
 * pages_lock.
 *
 * A close that fails (mprotect: ENOMEM at vm.max_map_count, EPERM on a
 * sealed range) must not leave the pages readable.  Nothing can keep their
 * data and hide it without a VMA split (mremap splits too; a span's ends
 * already merge with PROT_NONE neighbours, so a wider span needs the same
 * split, at another owner's live page), so the span's frames are released
 * (MADV_DONTNEED needs no split): the data is gone, never readable, and the
 * compartment is poisoned (comp_close_failed). */
#define SPANS_LOCAL 32

struct span {
	uintptr_t start, end;
};

struct spans {
	uintptr_t start, end;
	bool queued;               /* the open span holds queued pages */
	bool closing, purge;       /* a close; release the frames if it fails */
	bool whole;                /* pkeys: a key given to a compartment (walk_segment) */
	enum os_prot prot;
	int key;
	enum os_takes takes;       /* from present pages (os.h) */
	uint64_t calls, pages;
	uint64_t failed_pages;     /* pages whose protection could not be changed */
	int err;                   /* the first failure's errno */
	struct span *v;            /* spans to change after pages_lock */
	unsigned n, cap;
	struct span local[SPANS_LOCAL];
};

static void span_apply(struct spans *sp, uintptr_t a, uintptr_t end)
{
	size_t len = end - a;
	int e = os_protect_key((void *)a, len, sp->prot, sp->key, sp->takes);
	sp->calls++;
	if (!e) {
		sp->pages += len >> PAGE_SHIFT;
		return;
	}
	if (!sp->err)
		sp->err = e;
	sp->failed_pages += len >> PAGE_SHIFT;
	/* a close that failed: the frames go (no split needed), or we stop */
	if (sp->closing && (!sp->purge || backing_purge(a, len)))
		xpfo_fatal("cannot close %u pages at %p (errno %d) nor release them", len >> PAGE_SHIFT,
			   (void *)a, (long)e);
}

/* pages_lock held: the span ends; change it now or keep it for later. */
static void span_flush(struct spans *sp)
{
	if (sp->end <= sp->start)
		goto out;
	if (!sp->queued && sp->n == sp->cap) {
		unsigned cap = sp->cap * 2;
		struct span *v = meta_alloc(cap * sizeof *v);
		if (v) {
			memcpy(v, sp->v, sp->n * sizeof *v);
			if (sp->v != sp->local)
				meta_free(sp->v, sp->cap * sizeof *v);
			sp->v = v;
			sp->cap = cap;
		}
	}
	if (sp->queued || sp->n == sp->cap)
		span_apply(sp, sp->start, sp->end);
	else
		sp->v[sp->n++] = (struct span){ sp->start, sp->end };
out:
	sp->start = sp->end = 0;
	sp->queued = false;
}

static void span_add(struct spans *sp, uintptr_t a, size_t len, bool queued)
{
	if (a != sp->end) {
		span_flush(sp);
		sp->start = a;
	}
	sp->end = a + len;
	sp->queued |= queued;
}

/* Pages of carved segment s owned by c: live ones, and queued ones too when
 * closing. */
static void span_of_owner(uintptr_t a, size_t npages, bool pending, void *sp)
{
	span_add(sp, a, npages << PAGE_SHIFT, pending);
}

static void walk_segment(struct spans *sp, struct segment *s, uint16_t id, unsigned what)
{
	/* release=uffd leaves guard and free pages read-write and missing
	 * (watched: a touch is a violation), so the walks take guards along,
	 * and closing takes the segment's free pages too (they only ever go
	 * to this compartment, and closing them is never unsafe): a
	 * compartment's segment stays one VMA, open or closed */
	unsigned more = !uffd_release_on() ? 0 : sp->closing ? OW_GUARD | OW_FREE : OW_GUARD;
	/* pkeys: a key given back (comp_retag) takes the clean free pages
	 * along too (missing, watched, and the key is only c's threads'),
	 * under pages_lock: so a re-keyed segment is one VMA again, as
	 * pages_key_segment made it */
	if (more && sp->whole)
		more |= OW_CLEAN;
	owner_walk(s, id, what | more, span_of_owner, sp);
}

/* pages_lock held: collect c's spans of the kinds `what` selects (OW_LIVE,
 * OW_PENDING), changing at once those with queued pages. */
static void comp_collect(struct xpfo_compartment *c, struct spans *sp, unsigned what)
{
	for (struct segment *s = c->segs; s; s = s->next) {
		if (s->kind == SEG_HUGE) {
			/* a kept block stays revoked: neither live nor queued */
			if (s->releasing == HUGE_KEPT ||
			    !(what & (s->releasing ? OW_PENDING : OW_LIVE)))
				continue;
			span_add(sp, seg_addr(s), (size_t)s->huge_pages << PAGE_SHIFT, s->releasing);
			span_flush(sp); /* the rest of its last segment stays closed */
		} else {
			walk_segment(sp, s, c->id, what);
		}
	}
	if (c->nxsegs <= COMP_XSEGS) {
		for (unsigned i = 0; i < c->nxsegs; i++)
			if (seg_table[c->xsegs[i]].kind == SEG_PAGES_K &&
			    seg_table[c->xsegs[i]].owner != c->id)
				walk_segment(sp, &seg_table[c->xsegs[i]], c->id, what);
	} else {
		for (size_t i = 0; i < heap_nsegs; i++)
			if (seg_table[i].kind == SEG_PAGES_K && seg_table[i].owner != c->id)
				walk_segment(sp, &seg_table[i], c->id, what);
	}
	span_flush(sp);
}

/* Walk c's pages that `what` selects (c->lock held): they get prot with
 * key (`takes`: what that takes from present pages, os.h); a failed close
 * releases them (closing) or is fatal.  Returns the pages that failed
 * (*err says why). */
static uint64_t comp_walk_what(struct xpfo_compartment *c, unsigned what, bool closing,
			       enum os_prot prot, int key, enum os_takes takes, int *err)
{
	__atomic_add_fetch(&c->access_gen, 1, __ATOMIC_RELEASE);
	if (opt.revoke == REVOKE_OFF)
		return 0;
	struct spans sp;
	memset(&sp, 0, offsetof(struct spans, local));
	sp.closing = closing;
	sp.purge = c != &comp_root; /* root's data cannot go: comp_set_access */
	sp.prot = prot;
	sp.key = key;
	sp.whole = prot == OS_RW && key > 0 && key == pkeys_comp_key(c);
	sp.takes = takes;
	sp.v = sp.local;
	sp.cap = SPANS_LOCAL;
	pthread_mutex_lock(&pages_lock);
	comp_collect(c, &sp, what);
	pthread_mutex_unlock(&pages_lock);
	for (unsigned i = 0; i < sp.n; i++)
		span_apply(&sp, sp.v[i].start, sp.v[i].end);
	if (sp.v != sp.local)
		meta_free(sp.v, sp.cap * sizeof *sp.v);
	if (prot == OS_RW) {
		stat_add(grant_syscalls, sp.calls);
	} else {
		stat_add(revoke_syscalls, sp.calls);
		stat_add(pages_revoked, sp.pages);
	}
	*err = sp.err;
	return sp.failed_pages;
}

/* Walk c's pages (c->lock held): live ones, and queued ones too when
 * closing, get prot with key. */
static uint64_t comp_walk(struct xpfo_compartment *c, bool closing, enum os_prot prot, int key,
			  enum os_takes takes, int *err)
{
	return comp_walk_what(c, OW_LIVE | (closing ? OW_PENDING : 0), closing, prot, key, takes,
			      err);
}

/* c->lock held: c's pages open to every thread (root's, or a keyless
 * compartment's open for the process) move to `key`; its queued pages close
 * now (reopening them could race with their revocation; a thread that takes
 * a queued run back reopens it, access_gen).  0 or an errno. */
static int comp_rekey_one(struct xpfo_compartment *c, int key)
{
	int e = 0, err = 0;
	if (!c->open || (c != &comp_root && c->key > 0))
		return 0;
	if (comp_walk_what(c, OW_LIVE, false, OS_RW, key, OS_TAKES_AWAY, &e))
		err = e;
	if (comp_walk_what(c, OW_PENDING, false, OS_NONE, key_revoked(), OS_TAKES_AWAY, &e))
		err = e;
	return err;
}

/* pkeys, the first xpfo_lock_thread (sandbox.c, key_plain() already `key`):
 * every page open to all threads moves from key 0 to `key`.  0, or the
 * errno of a page that could not be moved (the lock is refused then). */
int comp_plain_rekey(int key)
{
	int err = 0;
	pthread_mutex_lock(&comp_lock);
	for (unsigned i = 1; i < MAX_COMPARTMENTS; i++) { /* root is 1 */
		struct xpfo_compartment *c = i == comp_root.id ? &comp_root : comp_table[i];
		if (!c || !c->live)
			continue;
		pthread_mutex_lock(&c->lock);
		int e = comp_rekey_one(c, key);
		pthread_mutex_unlock(&c->lock);
		if (e && !err)
			err = e;
	}
	pthread_mutex_unlock(&comp_lock);
	return err;
}

/* A close of c failed on some pages; their frames are gone already.  The
 * compartment is poisoned: it stays closed, and entering it or allocating
 * in it fails (EIO) until it is destroyed. */
static void comp_close_failed(struct xpfo_compartment *c, uint64_t pages, int e)
{
	int saved = errno;
	stat_inc(close_failures);
	if (c == &comp_root)
		xpfo_fatal("cannot close the root heap for a STRICT compartment (errno %d)", (long)e);
	__atomic_store_n(&c->poisoned, 1, __ATOMIC_RELEASE);
	xpfo_error("cannot close compartment \"%s\" (errno %d): its data on %u pages was released "
		   "instead, and the compartment is unusable now", c->name, (long)e, (unsigned long)pages);
	errno = saved;
}

static void comp_open_pages(struct xpfo_compartment *c)
{
	int e = 0;
	/* closed pages (PROT_NONE) are not present: no flush */
	uint64_t failed = comp_walk(c, false, OS_RW, key_plain(), OS_TAKES_NOTHING, &e);
	if (failed) /* its pages stay closed: a thread inside faults, reported */
		xpfo_error("cannot open compartment \"%s\" (errno %d) on %u pages", c->name,
			   (long)e, (unsigned long)failed);
}

static void comp_close_pages(struct xpfo_compartment *c)
{
	int e = 0;
	uint64_t failed = comp_walk(c, true, OS_NONE, key_revoked(), OS_TAKES_AWAY, &e);
	if (failed)
		comp_close_failed(c, failed, e);
}

/* The mprotect way: open (read-write) or close c's pages for the process.
 * A poisoned compartment is never opened again. */
static void comp_set_access(struct xpfo_compartment *c, bool open)
{
	if (open && c->poisoned)
		return;
	c->open = open;
	if (open) {
		stat_inc(compartment_opens);
		comp_open_pages(c);
	} else {
		stat_inc(compartment_closes);
		comp_close_pages(c);
	}
}

/* pkeys: give c's pages key (> 0) or park them (key < 0); c->lock held.
 * A parked compartment open the mprotect way has its pages present under
 * key_plain: the new key is a flush there; closed ones are PROT_NONE. */
static void comp_retag(struct xpfo_compartment *c, int key)
{
	int e = 0;
	if (key > 0)
		comp_walk(c, false, OS_RW, key, c->open ? OS_TAKES_AWAY : OS_TAKES_NOTHING, &e);
	else
		comp_close_pages(c);
}

/* A thread enters (+1) or leaves (-1) c. */
static void comp_inside(struct xpfo_compartment *c, int delta)
{
	if (c == &comp_root)
		return;
	pthread_mutex_lock(&c->lock);
	c->inside += delta;
	if (delta > 0 && c->inside == 1)
		comp_set_access(c, true);
	else if (delta < 0 && c->inside == 0 && c->live)
		comp_set_access(c, false);
	pthread_mutex_unlock(&c->lock);
}

/* STRICT: while the only thread is inside, the root heap is closed. */
static const struct xpfo_compartment *root_closer; /* comp_root.lock */

static void root_access(bool open, const struct xpfo_compartment *strict)
{
	pthread_mutex_lock(&comp_root.lock);
	if (comp_root.open != open)
		comp_set_access(&comp_root, open);
	root_closer = open ? NULL : strict;
	pthread_mutex_unlock(&comp_root.lock);
}

/* A thread that starts now starts in root: closed, if this is not NULL. */
const char *comp_root_closed_by(void)
{
	if (opt.revoke == REVOKE_OFF)
		return NULL;
	pthread_mutex_lock(&comp_root.lock);
	const char *name = root_closer && !comp_root.open ? root_closer->name : NULL;
	pthread_mutex_unlock(&comp_root.lock);
	return name;
}

/* fork: every lock the child may need, in the lock order (top of file). */
void comp_fork_lock(void)
{
	pthread_mutex_lock(&comp_lock);
	pkeys_fork_lock(true);
	for (unsigned i = 1; i < MAX_COMPARTMENTS; i++) /* comp_lock keeps the table still */
		if (comp_table[i])
			pthread_mutex_lock(&comp_table[i]->lock);
}

void comp_fork_unlock(bool child)
{
	for (unsigned i = MAX_COMPARTMENTS; --i > 0;)
		if (comp_table[i])
			pthread_mutex_unlock(&comp_table[i]->lock);
	pkeys_fork_lock(false);
	pthread_mutex_unlock(&comp_lock);
	/* flushes other threads had in flight never end in the child: a
	 * destroy there would wait for them forever */
	if (child)
		__atomic_store_n(&fast_flushes_inflight, 0, __ATOMIC_RELEASE);
}

/* fork, in the child: a thread that did not survive the fork (t) was
 * perhaps between entering and leaving: thread_switch changes the count of
 * threads inside (and opens or closes the pages) before it changes t->heap,
 * and fork_prepare, which waits for the compartment's lock, lands in that
 * window more often than not (measured: 59 children of 100 found a
 * compartment open with nobody inside, tests/isolation/forkenter).  So the
 * dead thread's own record is not trusted: it leaves nothing here, and
 * comp_fork_recount derives every compartment's state from the one thread
 * that lives on. */
void comp_fork_orphan(struct tstate *t)
{
	t->heap = &t->root_heap;
	t->keyed = 0;
	t->depth = 0;
}

/* The child's compartments from the truth of its one thread (self, not
 * between an enter and a leave: it is in fork): self's compartment has one
 * thread inside and is open, every other has none and is closed (keyed
 * ones on pkeys need no change of their pages: a thread's rights are its
 * own); root is closed exactly when self is in a STRICT compartment. */
void comp_fork_recount(struct tstate *self)
{
	struct xpfo_compartment *mine = self ? self->heap->comp : &comp_root;
	pthread_mutex_lock(&comp_lock);
	for (unsigned i = 1; i < MAX_COMPARTMENTS; i++) {
		struct xpfo_compartment *c = comp_table[i];
		if (!c || c == &comp_root || !c->live)
			continue;
		int n = c == mine;
		pthread_mutex_lock(&c->lock);
		c->inside = n;
		if (!(pkeys_on && c->key > 0) && c->open != n)
			comp_set_access(c, n);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&comp_lock);
	bool strict = mine->flags & XPFO_COMPARTMENT_STRICT;
	if (strict == comp_root.open)
		root_access(!strict, strict ? mine : NULL);
}

static void thread_exit_comp(struct tstate *t, struct xpfo_compartment *cur, bool keyed);

/* ---- per-thread heaps -------------------------------------------------- */

struct theap *theap_for(struct tstate *t, struct xpfo_compartment *c)
{
	if (c == &comp_root)
		return &t->root_heap;
	if (!t->heaps) {
		t->heaps = meta_alloc(MAX_COMPARTMENTS * sizeof *t->heaps);
		if (!t->heaps)
			return NULL;
	}
	struct theap *h = t->heaps[c->id];
	if (!h) {
		h = meta_alloc(sizeof *h);
		if (!h)
			return NULL;
		t->heaps[c->id] = h;
	} else if (h->comp == c && h->epoch == c->epoch) {
		return h;
	}
	/* new, or left over from a destroyed compartment that had this id:
	 * its slabs are gone with it, so it is reset without touching them */
	slab_init_theap(h, t, c);
	h->epoch = c->epoch;
	return h;
}

static bool theap_stale(const struct theap *h)
{
	return !h->comp->live || h->epoch != h->comp->epoch;
}

void comp_thread_exit(struct tstate *t)
{
	if (t->depth || t->heap != &t->root_heap) {
		/* the thread dies inside a compartment: it leaves it */
		thread_exit_comp(t, t->heap->comp, t->keyed);
		if (t->heap->comp->flags & XPFO_COMPARTMENT_STRICT)
			root_access(true, NULL);
		t->heap = &t->root_heap;
		t->keyed = 0;
		t->depth = 0;
	}
	if (!t->heaps)
		return;
	for (unsigned i = 0; i < MAX_COMPARTMENTS; i++) {
		struct theap *h = t->heaps[i];
		if (!h)
			continue;
		if (h->comp && !theap_stale(h))
			slab_abandon(t, h);
		meta_free(h, sizeof *h);
	}
	meta_free(t->heaps, MAX_COMPARTMENTS * sizeof *t->heaps);
	t->heaps = NULL;
}

/* XPFO_OPTIONS=compartments=thread: each thread but the first runs in a
 * compartment of its own. */
void comp_thread_start(struct tstate *t)
{
	char name[32];
	fmt_str(name, sizeof name, "thread %d", t->tid);
	struct xpfo_compartment *c = comp_create(name, 0);
	if (c && comp_enter(t, c))
		t->depth = 0; /* not leavable: the thread's own */
}

/* ---- the public API's work (api/compartment.c holds the entry points) ---- */

struct xpfo_compartment *comp_create(const char *name, unsigned flags)
{
	if (!name || (flags & ~(XPFO_COMPARTMENT_SECRET | XPFO_COMPARTMENT_STRICT)))
		return fail_null(EINVAL);
	int se = flags & XPFO_COMPARTMENT_SECRET ? secret_create_check() : 0;
	if (se) {
		errno = se;
		return NULL;
	}
	struct xpfo_compartment *c = NULL;
	pthread_mutex_lock(&comp_lock);
	if (nfree > REUSE_DELAY) {
		c = free_head;
		free_head = c->next_free;
		if (!free_head)
			free_tail = NULL;
		nfree--;
	} else if (comp_next_id < MAX_COMPARTMENTS) {
		c = meta_alloc(sizeof *c);
		if (c)
			c->id = comp_next_id++;
	}
	if (!c) {
		pthread_mutex_unlock(&comp_lock);
		errno = EMFILE;
		return NULL;
	}
	uint16_t id = c->id;
	uint32_t epoch = c->epoch, gen = c->access_gen;
	memset(c, 0, sizeof *c);
	c->id = id;
	c->epoch = epoch + 1;
	c->access_gen = gen + 1;
	c->flags = flags;
	fmt_str(c->name, sizeof c->name, "%s", name);
	c->pub_name = pub_names[id];
	fmt_str(c->pub_name, sizeof pub_names[id], "%s", name);
	pthread_mutex_init(&c->lock, NULL);
	pkeys_comp_created(c);
	c->magic = COMP_MAGIC;
	comp_table[id] = c;
	__atomic_store_n(&c->live, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&comp_lock);
	stat_inc(compartments);
	heap_runs_from_page();
	return c;
}

int comp_destroy(struct xpfo_compartment *c)
{
	if (c == &comp_root || !comp_check(c))
		return fail_int(EINVAL);
	pthread_mutex_lock(&c->lock);
	if (c->inside > 0 || !c->live) {
		int busy = c->live;
		pthread_mutex_unlock(&c->lock);
		errno = busy ? EBUSY : EINVAL;
		return -1;
	}
	__atomic_store_n(&c->live, 0, __ATOMIC_RELEASE);
	c->epoch++;
	c->open = 0;
	pthread_mutex_unlock(&c->lock);
	revoke_orphans_destroy(tl_state, c);
	pkeys_comp_destroyed(c);
	comp_destroy_pages(c);
	pages_unreserve(c); /* no locked thread is left in it (inside == 0) */
	pthread_mutex_lock(&comp_lock);
	comp_table[c->id] = NULL;
	c->next_free = NULL;
	if (free_tail)
		free_tail->next_free = c;
	else
		free_head = c;
	free_tail = c;
	nfree++;
	pthread_mutex_unlock(&comp_lock);
	stat_sub(compartments, 1);
	return 0;
}

/* The thread leaves its current compartment / goes into c: with a key
 * (pkeys) only the thread's rights change; the mprotect way opens and
 * closes the compartment for the process. */
static void thread_exit_comp(struct tstate *t, struct xpfo_compartment *cur, bool keyed)
{
	if (keyed)
		pkeys_leave(cur);
	else
		comp_inside(cur, -1);
}

/* Switch the calling thread from its compartment to the one of heap h. */
static void thread_switch(struct tstate *t, struct theap *h)
{
	struct xpfo_compartment *cur = t->heap->comp, *c = h->comp;
	bool cur_keyed = t->keyed;
	/* into the new one first, so a compartment entered again stays open */
	if (pkeys_enter(c, comp_retag))
		t->keyed = 1;
	else {
		t->keyed = 0;
		comp_inside(c, +1);
	}
	thread_exit_comp(t, cur, cur_keyed);
	t->heap = h;
	stat_inc(compartment_switches);
	pkeys_thread_update(t);
}

struct xpfo_compartment *comp_enter(struct tstate *t, struct xpfo_compartment *c)
{
	if (!comp_usable(c))
		return NULL;
	struct xpfo_compartment *prev = t->heap->comp;
	bool strict = c->flags & XPFO_COMPARTMENT_STRICT;
	if (strict && !(prev->flags & XPFO_COMPARTMENT_STRICT)) {
		/* a thread just joined can linger in /proc for a moment: wait
		 * for it, 1,000 yields or 50 ms at most (on a loaded machine a
		 * yield can last a time slice: a refusal took seconds) */
		long n = os_thread_count();
		uint64_t t0 = os_monotonic_ns();
		for (int i = 0; i < 1000 && n > 1; i++) {
			os_yield();
			n = os_thread_count();
			if (!(i & 15) && os_monotonic_ns() - t0 > 50000000u)
				break;
		}
		if (n != 1) {
			errno = EPERM; /* root cannot be closed for one thread only */
			return NULL;
		}
	}
	struct theap *h = theap_for(t, c);
	if (!h)
		return fail_null(ENOMEM);
	revoke_flush(t, FR_SWITCH);
	/* root's walk (root_access) finds none of its runs queued: the
	 * orphan gathers go too */
	if (strict && !(prev->flags & XPFO_COMPARTMENT_STRICT))
		revoke_orphans_apply(t, FR_SWITCH);
	thread_switch(t, h);
	if (strict && !(prev->flags & XPFO_COMPARTMENT_STRICT))
		root_access(false, c);
	t->depth++;
	return prev;
}

void comp_leave(struct tstate *t, struct xpfo_compartment *previous)
{
	if (!t->depth || !comp_check(previous)) {
		errno = EINVAL;
		return;
	}
	struct theap *h = theap_for(t, previous);
	if (!h) {
		errno = ENOMEM;
		return;
	}
	struct xpfo_compartment *cur = t->heap->comp;
	revoke_flush(t, FR_SWITCH);
	if ((cur->flags & XPFO_COMPARTMENT_STRICT) && !(previous->flags & XPFO_COMPARTMENT_STRICT)) {
		revoke_orphans_apply(t, FR_SWITCH);
		root_access(true, NULL);
	}
	thread_switch(t, h);
	t->depth--;
}

/* The thread's heap for c, to allocate in c without entering it. */
static struct theap *borrow(struct tstate *t, xpfo_compartment_t *c)
{
	if (!comp_usable(c))
		return NULL;
	struct theap *h = theap_for(t, c);
	return h ? h : fail_null(ENOMEM);
}

/* Allocate in c without entering it: the thread borrows its heap for c. */
#define BORROW(t, h, expr)                                                  \
	({                                                                     \
		struct theap *saved_ = (t)->heap;                              \
		(t)->heap = (h);                                               \
		(t)->borrowed = (h) != saved_;                                 \
		(t)->hard = harden_flags() || (t)->borrowed;                \
		void *p_ = (expr);                                             \
		(t)->heap = saved_;                                            \
		(t)->borrowed = 0;                                             \
		(t)->hard = harden_flags();                                 \
		p_;                                                            \
	})

void *comp_malloc_in(struct tstate *t, struct xpfo_compartment *c, size_t size)
{
	struct theap *h = borrow(t, c);
	if (!h)
		return NULL;
	return BORROW(t, h, heap_malloc(t, size));
}

void *comp_aligned_alloc_in(struct tstate *t, struct xpfo_compartment *c, size_t align,
			    size_t size)
{
	if (!align || (align & (align - 1)))
		return fail_null(EINVAL);
	struct theap *h = borrow(t, c);
	if (!h)
		return NULL;
	return BORROW(t, h, heap_aligned(t, align, size));
}

void *comp_calloc_in(struct tstate *t, struct xpfo_compartment *c, size_t n, size_t size)
{
	struct theap *h = borrow(t, c);
	if (!h)
		return NULL;
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return fail_null(ENOMEM);
	void *p = BORROW(t, h, heap_malloc(t, total));
	if (p && total)
		harden_zero_in(t, c->id, p, total); /* opens it for the moment if closed */
	return p;
}

static void lock_two(struct xpfo_compartment *a, struct xpfo_compartment *b)
{
	struct xpfo_compartment *first = a->id > b->id ? b : a; /* the lock order */
	pthread_mutex_lock(&first->lock);
	pthread_mutex_lock(&(first == a ? b : a)->lock);
}

static bool xseg_known(const struct xpfo_compartment *c, uint32_t idx)
{
	for (unsigned i = 0; i < c->nxsegs && i < COMP_XSEGS; i++)
		if (c->xsegs[i] == idx)
			return true;
	return false;
}

static void add_xseg(struct xpfo_compartment *c, uint32_t idx)
{
	if (xseg_known(c, idx))
		return;
	if (c->nxsegs < COMP_XSEGS)
		c->xsegs[c->nxsegs] = idx;
	c->nxsegs++;
}

/* Give the run at p fresh frames holding its bytes, with to's access
 * (both locks held).  The copy must read the old frames: with a key, open
 * it in this thread's rights for the moment (the locks keep it from
 * moving). */
static int transfer_copy(struct xpfo_compartment *from, struct xpfo_compartment *to, void *p,
			 size_t npages)
{
	bool off = opt.revoke == REVOKE_OFF;
	int from_key = pkeys_comp_key(from), to_key = pkeys_comp_key(to);
	uint64_t saved_rights = 0;
	if (from_key > 0) {
		saved_rights = arch_pkey_reg_read();
		pkeys_write(arch_pkey_reg_set(saved_rights, from_key, ARCH_PKEY_RW));
	}
	bool readable = off || from == &comp_root || from_key > 0 || from->open;
	enum os_prot prot = off || to == &comp_root || to_key > 0 || to->open ? OS_RW : OS_NONE;
	int key = to_key > 0 ? to_key : prot == OS_RW ? key_plain() : key_revoked();
	int e = backing_transfer(from, to, (uintptr_t)p, npages << PAGE_SHIFT, readable, prot, key);
	if (e < 0)
		e = os_fresh_copy(p, npages << PAGE_SHIFT, readable, prot, key);
	if (from_key > 0)
		pkeys_write(saved_rights);
	return e;
}

/* The run (huge: its segments) is to's from now on. */
static void transfer_commit(struct xpfo_compartment *from, struct xpfo_compartment *to,
			    struct segment *s, uintptr_t a, size_t npages, uint8_t kind)
{
	pthread_mutex_lock(&pages_lock);
	if (kind == SEG_HUGE) {
		for (uint32_t k = 0; k < s->nsegs; k++)
			s[k].owner = to->id;
		seg_list_del(from, s);
		seg_list_add(to, s);
	} else {
		owner_set_owner(a, npages, to->id); /* its guard page too */
		if (s->owner != to->id)
			add_xseg(to, (uint32_t)seg_index(s));
	}
	pthread_mutex_unlock(&pages_lock);
	stat_inc(transfers);
	stat_inc(revoke_syscalls);
	stat_add(pages_revoked, npages);
}

int comp_transfer(void *p, struct xpfo_compartment *to)
{
	if (!comp_check(to))
		return -1;
	uintptr_t a = (uintptr_t)p;
	if (!in_heap(a) || (a & (PAGE_SIZE - 1)))
		return fail_int(EINVAL);
	struct blk b;
	if (owner_lookup(a, &b) != BLK_OK || b.kind == BK_SMALL) {
		errno = EINVAL; /* small, interior, freed or not a block */
		return -1;
	}
	struct segment *s = b.seg;
	size_t npages = b.usable >> PAGE_SHIFT;
	uint8_t kind = b.kind == BK_HUGE ? SEG_HUGE : SEG_PAGES_K;
	/* a huge block goes with its whole span: the pages before it too */
	if (kind == SEG_HUGE) {
		p = (void *)seg_addr(s);
		npages = s->huge_pages;
	}
	struct xpfo_compartment *from = comp_table[b.owner];
	/* sandbox.c: a locked thread gives away only its own blocks */
	if (!from || (tl_sandbox_locked && from != tl_state->heap->comp))
		return fail_int(EINVAL);
	/* a locked compartment's blocks leave it only from a locked thread:
	 * its executor's record holds them the compartment's until then, so
	 * a block given away in place by another thread could be reopened */
	if (__atomic_load_n(&from->reserved, __ATOMIC_RELAXED) && !tl_sandbox_locked && from != to)
		return fail_int(EPERM);
	if (from == to)
		return 0;
	lock_two(from, to);
	int e = transfer_copy(from, to, p, npages);
	if (!e)
		transfer_commit(from, to, s, a, npages, kind);
	pthread_mutex_unlock(&from->lock);
	pthread_mutex_unlock(&to->lock);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/* ---- destroy ------------------------------------------------------------ */

/* c-owned spans in segments that stay (they hold other owners' pages). */
struct destroy_list {
	struct range *r;
	unsigned n, cap;
};

static void dl_add(struct destroy_list *dl, uintptr_t a, size_t np, uint32_t gen)
{
	if (dl->n && dl->r[dl->n - 1].addr + ((uintptr_t)dl->r[dl->n - 1].npages << PAGE_SHIFT) == a &&
	    seg_of(dl->r[dl->n - 1].addr) == seg_of(a)) {
		dl->r[dl->n - 1].npages += (uint32_t)np;
		return;
	}
	if (dl->n == dl->cap) {
		unsigned cap = dl->cap ? dl->cap * 2 : 256;
		struct range *nr = meta_alloc(cap * sizeof *nr);
		if (!nr)
			xpfo_fatal("out of metadata memory destroying a compartment");
		if (dl->r) {
			memcpy(nr, dl->r, dl->n * sizeof *nr);
			meta_free(dl->r, dl->cap * sizeof *nr);
		}
		dl->r = nr;
		dl->cap = cap;
	}
	dl->r[dl->n++] = (struct range){ a, (uint32_t)np, 0, RK_RUN, 1, 0, 0, gen, 0, 0 };
}

/* Live pages of s owned by id into dl.  Queued ones stay with the gathers
 * that hold them: those revoke and release them as usual (the segment
 * keeps its gen, so nobody else's queued runs in it are dropped). */
static void collect_span(uintptr_t a, size_t npages, bool pending, void *dl)
{
	(void)pending;
	dl_add(dl, a, npages, seg_of(a)->gen);
}

static void collect_owned(struct destroy_list *dl, struct segment *s, uint16_t id)
{
	owner_walk(s, id, OW_LIVE | OW_GUARD, collect_span, dl);
}

/* the slab starting at page a of a destroyed segment: its metadata goes */
static void free_slab_head(uintptr_t a, uint32_t id, void *unused)
{
	(void)unused;
	struct slab *sl = &slab_table[id];
	if (sl->base == a)
		slab_meta_free(sl);
}

/* A huge allocation of the destroyed compartment: all its segments go back
 * (pages_lock held; segs_queue may drop it, so the segments are marked
 * first). */
static void huge_mark_released(struct segment *s, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		s[k].releasing = 1;
		s[k].owner = 0;
		s[k].gen++;
	}
}

static void destroy_huge(struct segment *s, size_t *rel, size_t *nrel)
{
	uint32_t n = s->nsegs;
	if (s->releasing == HUGE_KEPT) /* resident, not mapped */
		stat_sub(huge_kept_pages, s->huge_pages);
	else
		stat_sub(mapped_pages, s->huge_pages);
	stat_sub(resident_pages, s->huge_pages);
	huge_mark_released(s, n);
	for (uint32_t k = 0; k < n; k++)
		segs_queue(rel, nrel, seg_index(s) + k);
}

/* A segment the destroyed compartment carved (pages_lock held): released
 * whole, or, when it holds runs given to others, kept and carved by root
 * from now on.  Its free pages then change owner: the retained ones are
 * purged first (the queued ones are purged by their flush, as their owner
 * is no longer the segment's), so root never gets c's bytes. */
static void destroy_carved(struct xpfo_compartment *c, struct segment *s, struct destroy_list *dl,
			   size_t *rel, size_t *nrel)
{
	size_t foreign, mine;
	owner_census(s, c->id, &mine, &foreign, free_slab_head, NULL);
	if (!foreign) {
		size_t dirty = SEG_PAGES;
		for (size_t w = 0; w < SEG_WORDS; w++)
			dirty -= (size_t)__builtin_popcountll(s->clean_map[w]);
		stat_sub(mapped_pages, mine);
		stat_sub(resident_pages, dirty);
		s->releasing = 1;
		s->owner = 0;
		s->gen++;
		segs_queue(rel, nrel, seg_index(s));
		return;
	}
	collect_owned(dl, s, c->id);
	s->owner = comp_root.id;
	seg_purge_retained(s, true);
	seg_list_add(&comp_root, s);
}

/* Unless its segment was released and reused meanwhile (gen). */
static void quarantine_same_gen(const struct range *r)
{
	pthread_mutex_lock(&pages_lock);
	if (seg_of(r->addr)->gen == r->gen)
		policy_quarantine(r->addr, r->npages, r->owner);
	pthread_mutex_unlock(&pages_lock);
}

static void destroy_quarantine(struct range *r, const char *what, int e)
{
	quarantine_same_gen(r);
	policy_failed(what, e, r->addr, r->npages);
	r->npages = 0; /* never reused */
}

/* Revoke the destroyed compartment's runs that sit among other owners'
 * pages, then hand them back with fresh frames.  A run that cannot be
 * revoked or purged still holds c's bytes: quarantined (policy.h). */
static void destroy_runs(struct destroy_list *dl)
{
	for (unsigned i = 0; i < dl->n; i++) {
		struct range *r = &dl->r[i];
		size_t len = (size_t)r->npages << PAGE_SHIFT;
		int e = revoke_range(r->addr, len);
		if (e) {
			destroy_quarantine(r, "revoke (destroyed compartment)", e);
			continue;
		}
		stat_add(pages_revoked, r->npages);
		if ((e = backing_purge(r->addr, len)) == 0) {
			stat_inc(purges);
			stat_add(pages_purged, r->npages);
			continue;
		}
		destroy_quarantine(r, "purge (destroyed compartment)", e);
	}
	unsigned m = 0;
	for (unsigned i = 0; i < dl->n; i++)
		if (dl->r[i].npages)
			dl->r[m++] = dl->r[i];
	pages_release(dl->r, m);
}

void comp_destroy_pages(struct xpfo_compartment *c)
{
	size_t rel[SEGS_QUEUE_MAX];
	size_t nrel = 0;
	struct destroy_list dl = { NULL, 0, 0 };
	pthread_mutex_lock(&pages_lock);
	__atomic_add_fetch(&destroy_serial, 1, __ATOMIC_ACQ_REL);
	/* flushes that began before may not have seen it: let them finish */
	while (__atomic_load_n(&fast_flushes_inflight, __ATOMIC_ACQUIRE))
		os_yield();
	while (c->segs) {
		struct segment *s = c->segs;
		seg_list_del(c, s);
		if (s->kind == SEG_HUGE)
			destroy_huge(s, rel, &nrel);
		else
			destroy_carved(c, s, &dl, rel, &nrel);
	}
	if (c->nxsegs <= COMP_XSEGS) {
		for (unsigned i = 0; i < c->nxsegs; i++)
			if (seg_table[c->xsegs[i]].kind == SEG_PAGES_K)
				collect_owned(&dl, &seg_table[c->xsegs[i]], c->id);
	} else {
		for (size_t i = 0; i < heap_nsegs; i++)
			if (seg_table[i].kind == SEG_PAGES_K)
				collect_owned(&dl, &seg_table[i], c->id);
	}
	memset(c->abandoned, 0, sizeof c->abandoned);
	stat_sub(spare_pages, c->spare_pages);
	c->spare_pages = 0;
	c->huge_kept = 0;
	c->nxsegs = 0;
	pthread_mutex_unlock(&pages_lock);
	/* revoke, then hand back: whole segments with fresh mappings, and the
	 * runs that sit among other owners' pages */
	if (nrel)
		segs_release(rel, nrel);
	destroy_runs(&dl);
	if (dl.r)
		meta_free(dl.r, dl.cap * sizeof *dl.r);
}
