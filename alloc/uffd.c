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
 * (uffd_fill_grant: one ioctl for the missing ones).
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
 * parent.  The child drops it and registers its heap with a new one
 * (uffd_fork_child); if that fails it protects every free page with
 * mprotect and goes on with release=mprotect. */
#include "alloc.h"
#include "owner.h"
#include "backing.h"

static bool uffd_wanted(void)
{
	return opt.revoke != REVOKE_OFF && opt.release != RELEASE_MPROTECT;
}

static void uffd_unavailable(int e)
{
	if (opt.release_given || opt.verbose)
		xpfo_warn("userfaultfd unavailable (errno %d): revoked pages are protected with "
			  "mprotect%s", (long)e,
			  opt.release == RELEASE_UFFD ? "" : " (over the VMA budget they read as zeros)");
}

/* Open and register.  Unused segments stay PROT_NONE, so that closed
 * compartments' segments (protected whole, free pages too: see
 * compartment.c walk_segment) merge with them into few VMAs. */
static int uffd_arm(void)
{
	int e = os_uffd_open();
	if (!e)
		e = os_uffd_register((void *)heap_base, heap_end - heap_base);
	if (e) {
		os_uffd_forget();
		uffd_unavailable(e);
	}
	__atomic_store_n(&g_stats.uffd_armed, !e, __ATOMIC_RELAXED);
	return e;
}

void uffd_init(void)
{
	if (uffd_wanted())
		uffd_arm();
}

bool uffd_release_on(void)
{
	return opt.release == RELEASE_UFFD && !tl_sandbox_locked && os_uffd_armed();
}

bool uffd_degrade_on(void)
{
	return !tl_sandbox_locked && os_uffd_armed();
}

int uffd_fill_grant(struct xpfo_compartment *c, uintptr_t a, size_t len)
{
	/* armed or not: pages released while it was are missing still */
	if (secret_comp(c))
		return 0;
	if (tl_sandbox_locked)
		return 0; /* the executor filled them when it let the grant through */
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
		return;
	os_uffd_forget();
	if (uffd_arm())
		pages_protect_free(); /* what the parent released, the child protects */
}
