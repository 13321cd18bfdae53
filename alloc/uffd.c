/* uffd.c - released pages watched by a userfaultfd (release=uffd, and the
 * VMA budget's degraded mode).
 *
 * Revoking with mprotect splits a VMA at every boundary; releasing the
 * frames alone (MADV_DONTNEED) leaves the pages readable as zeros.  With
 * the heap reservation registered with a userfaultfd (src/uffd.c) a
 * released page is missing, and a user-mode access to it raises SIGBUS in
 * the faulting thread; api/fault.c asks uffd_fault() what it was:
 *   - a live page of the thread's compartment (or, on the mprotect backend,
 *     of any open one: what mprotect would let through) is filled with the
 *     zero page and the access goes on;
 *   - anything else (free, another owner's, a guard) is a violation,
 *     reported like a protection fault.
 * So that the fast path never faults through the handler, and so that the
 * kernel (which gets EFAULT from a missing page: user-mode-only
 * registration) can use a new block at once, every grant fills its pages
 * (uffd_fill_grant: one ioctl for the missing ones) once it is armed.
 *
 * When it arms.  release=uffd: at start.  release=auto: only when the
 * degraded mode of the VMA budget first starts (uffd_degrade_arm, from
 * revoke.c's vma_check), the one point where auto releases spans without
 * protecting them; a process that never nears the budget makes no
 * userfaultfd call at all.  Arming while the heap is in use: pages granted
 * before, never touched, are missing and now registered, so uffd_arm fills
 * every live span (pages_walk_live) after registering.  A grant racing it
 * either left the free map before the walk reads it, or reads `filling`
 * set after its own pages left it (a fence on each side): one of the two
 * fills its pages.  Released spans are watched (`watching`) only once that
 * walk is done, so the walk never fills a page released on purpose; until
 * then the degraded mode protects.  A kernel access (a read(2) into such a
 * page) by another thread during the walk can still get EFAULT: the one
 * window left.  Arming fails: the degraded mode keeps protecting, and
 * VMAs grow past the budget (one warning, from vma_check); at
 * vm.max_map_count an mprotect fails and the span is released unprotected
 * (zeros, never the old data) as before.
 *
 * The sandbox lock (uffd_lock_prepare) arms first under release=auto: the
 * executor is forked at the lock and must hold the descriptor to fill the
 * locked thread's grants, and a locked thread cannot make the ioctls.  So a
 * process that locks a thread pays the fills from then on.
 *
 * No handler thread: UFFD_FEATURE_SIGBUS makes the faulting thread answer
 * for itself, with its own compartment, and there is no unfiltered thread a
 * locked (seccomp) thread could ask to fill pages for it.  A locked thread
 * may not make the ioctl: its grants are filled by its executor (another
 * process holding the same descriptor), it revokes with mprotect, and a
 * missing page of its own that it touches is reported, never filled.
 *
 * fork: the child's copy of the heap is not registered (no
 * UFFD_FEATURE_EVENT_FORK) and the inherited descriptor acts on the
 * parent.  A child of an armed parent drops it and arms with a new one
 * (uffd_fork_child; the walk fills live pages the fork did not copy); if
 * that fails it protects every free page with mprotect and keeps
 * protecting.  A child of a parent not armed arms later like any process. */
#include "alloc.h"
#include "owner.h"
#include "backing.h"

#include <errno.h>

static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
static int filling;  /* registered: grants fill their pages */
static int watching; /* and every live page filled: spans may be released watched */
static int arm_error; /* release=auto: arming failed with this errno (sticky) */

bool uffd_may_arm(void)
{
	return opt.revoke != REVOKE_OFF && opt.release != RELEASE_MPROTECT;
}

static void uffd_unavailable(int e)
{
	if (opt.release_given || opt.verbose)
		xpfo_warn("userfaultfd unavailable (errno %d%s): revoked pages are protected with "
			  "mprotect", (long)e, e == EMFILE ? ": no descriptor free above the "
			  "program's, ulimit -n" : "");
}

static void fill_span(uintptr_t a, size_t npages, bool pending, void *arg)
{
	(void)pending;
	(void)arg;
	os_uffd_fill((void *)a, npages << PAGE_SHIFT); /* failed: the handler fills on touch */
}

/* Open and register; live: the heap is in use (not at start), fill its
 * live pages.  Unused segments stay PROT_NONE, so that closed
 * compartments' segments (protected whole, free pages too: see
 * compartment.c walk_segment) merge with them into few VMAs. */
static int uffd_arm(bool live)
{
	int e = os_uffd_open();
	if (!e)
		e = os_uffd_register((void *)heap_base, heap_end - heap_base);
	if (e) {
		os_uffd_forget();
		return e;
	}
	__atomic_store_n(&filling, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* pairs with uffd_fill_grant's */
	if (live)
		pages_walk_live(fill_span, NULL);
	__atomic_store_n(&watching, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&g_stats.uffd_armed, 1, __ATOMIC_RELAXED);
	return 0;
}

void uffd_init(void)
{
	int e = 0;
	if (opt.revoke != REVOKE_OFF && opt.release == RELEASE_UFFD && (e = uffd_arm(false)))
		uffd_unavailable(e);
}

/* release=auto, not armed, not failed yet: arm now (arm_lock: once). */
static int arm_auto(void)
{
	if (__atomic_load_n(&watching, __ATOMIC_ACQUIRE))
		return 0;
	if (!uffd_may_arm() || opt.release != RELEASE_AUTO)
		return -1;
	pthread_mutex_lock(&arm_lock);
	if (!__atomic_load_n(&watching, __ATOMIC_ACQUIRE) && !arm_error)
		arm_error = tl_sandbox_locked ? EPERM : uffd_arm(true);
	int e = arm_error;
	pthread_mutex_unlock(&arm_lock);
	return e;
}

int uffd_degrade_arm(void)
{
	if (!uffd_may_arm())
		return -1;
	if (opt.release == RELEASE_UFFD) /* armed at start, or it failed then */
		return __atomic_load_n(&watching, __ATOMIC_ACQUIRE) ? 0 : ENOSYS;
	return arm_auto();
}

void uffd_lock_prepare(void)
{
	if (opt.release == RELEASE_AUTO)
		arm_auto(); /* failed: the degraded mode keeps protecting (vma_check says so) */
}

bool uffd_release_on(void)
{
	return opt.release == RELEASE_UFFD && !tl_sandbox_locked &&
	       __atomic_load_n(&watching, __ATOMIC_ACQUIRE) && os_uffd_armed();
}

bool uffd_degrade_on(void)
{
	return !tl_sandbox_locked && __atomic_load_n(&watching, __ATOMIC_ACQUIRE) && os_uffd_armed();
}

bool uffd_unwatched_ok(void)
{
	return opt.release == RELEASE_MPROTECT;
}

bool uffd_filling(void)
{
	return __atomic_load_n(&filling, __ATOMIC_RELAXED);
}

int uffd_fill_grant(struct xpfo_compartment *c, uintptr_t a, size_t len)
{
	/* armed or not: pages released while it was are missing still */
	if (secret_comp(c))
		return 0;
	if (tl_sandbox_locked)
		return 0; /* the executor filled them when it let the grant through */
	/* the grant's pages left the free map before: uffd_arm's walk sees
	 * them, or this sees `filling` (not armed: no syscall at all) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&filling, __ATOMIC_RELAXED))
		return 0;
	return os_uffd_fill((void *)a, len);
}
int uffd_fault(uintptr_t a, uint16_t mine)
{
	stat_inc(uffd_faults);
	struct owner_desc d;
	owner_describe(a, (uint32_t)flush_serial(), &d);
	if (d.state != OS_OWNED && d.state != OS_OWNED_PENDING)
		return 0;
	struct xpfo_compartment *c = d.owner < MAX_COMPARTMENTS ? comp_table[d.owner] : NULL;
	bool mayuse = d.owner == mine || (!pkeys_on && c && __atomic_load_n(&c->open, __ATOMIC_RELAXED));
	if (!mayuse || tl_sandbox_locked)
		return 0;
	if (os_uffd_fill((void *)(a & ~(uintptr_t)(PAGE_SIZE - 1)), PAGE_SIZE))
		return 0;
	stat_inc(uffd_fills);
	return 1;
}

void uffd_fork_child(void)
{
	if (!os_uffd_armed())
		return; /* the parent was not armed: the child arms later, if ever */
	pthread_mutex_init(&arm_lock, NULL); /* another thread may have held it at the fork */
	os_uffd_forget();
	__atomic_store_n(&filling, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&watching, 0, __ATOMIC_RELAXED);
	int e = uffd_arm(true);
	if (!e)
		return;
	__atomic_store_n(&g_stats.uffd_armed, 0, __ATOMIC_RELAXED);
	arm_error = e; /* release=auto: the degraded mode protects from now on */
	xpfo_warn("userfaultfd unavailable in a fork child (errno %d): its free pages are "
		  "protected with mprotect", (long)e);
	pages_protect_free(); /* what the parent released, the child protects */
}
