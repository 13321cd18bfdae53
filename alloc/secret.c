/* secret.c - secret compartments: pages out of the kernel's direct map.
 *
 * Every run granted to a secret compartment is mapped from a memfd_secret
 * file of its own (os_secret_map), so the frames are fresh, leave the
 * direct map, are locked (never swapped, charged to RLIMIT_MEMLOCK) and
 * refuse every path that pins user pages (GUP: /proc/pid/mem,
 * process_vm_readv, vmsplice, O_DIRECT, ptrace peeks).  A file's only
 * reference is its mapping: when the run is revoked and purged, a new
 * anonymous mapping replaces it (backing.c backing_purge) and the frames go back to
 * the kernel, cleared.  madvise(MADV_DONTNEED) would not do: a shared
 * file's pages stay in the file and come back at the next touch, and
 * secretmem cannot punch holes.  So ranges in segments that ever held
 * special backing are always purged by remapping (one bit per segment).
 *
 * A new file per grant needs memfd_secret at malloc time: a thread locked
 * with xpfo_lock_thread cannot make one (the sandbox denies memfd_secret),
 * so it allocates in a secret compartment only from runs the compartment
 * already holds; a new run fails with ENOMEM. */
#include "backing.h"

#include <errno.h>

static int secret_used;          /* a secret file was ever mapped */

static void secret_warn_once(int e)
{
	static int warned;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		xpfo_warn("secret compartments need memfd_secret, which failed (errno %d)%s", (long)e,
			  e == ENOSYS ? ": the kernel lacks it or was booted without secretmem.enable=1"
				      : "");
}

int secret_create_check(void)
{
	int e = os_secret_probe();
	if (!e)
		return 0;
	secret_warn_once(e);
	return e == ENOSYS || e == EPERM ? ENOSYS : e;
}

int secret_back(struct xpfo_compartment *c, uintptr_t a, size_t len)
{
	if (!secret_comp(c) || !len)
		return 0;
	backing_mark(a, len);
	__atomic_store_n(&secret_used, 1, __ATOMIC_RELAXED);
	int e = os_secret_map((void *)a, len, opt.revoke == REVOKE_OFF ? OS_RW : OS_NONE);
	return e == EAGAIN ? ENOMEM : e; /* past RLIMIT_MEMLOCK */
}

int secret_copy_in(uintptr_t a, size_t len, bool readable, enum os_prot prot, int key)
{
	backing_mark(a, len);
	__atomic_store_n(&secret_used, 1, __ATOMIC_RELAXED);
	return os_fresh_copy_secret((void *)a, len, readable, prot, key);
}

void secret_usage(uint64_t *mapped, uint64_t *resident)
{
	*mapped = *resident = 0;
	if (__atomic_load_n(&secret_used, __ATOMIC_RELAXED))
		os_secret_usage(mapped, resident);
}
