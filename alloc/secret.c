/* secret.c - secret compartments: pages out of the kernel's direct map.
 *
 * Every run granted to a secret compartment is mapped from a memfd_secret
 * file of its own (os_secret_map), so the frames are fresh, leave the
 * direct map, are locked (never swapped, charged to RLIMIT_MEMLOCK) and
 * refuse every path that pins user pages (GUP: /proc/pid/mem,
 * process_vm_readv, vmsplice, O_DIRECT, ptrace peeks).  A file's only
 * reference is its mapping: when the run is revoked and purged, a new
 * anonymous mapping replaces it (backing_purge) and the frames go back to
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

static uint64_t *special_map;    /* one bit per segment (meta_alloc) */
static pthread_mutex_t special_lock = PTHREAD_MUTEX_INITIALIZER;
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

void backing_mark(uintptr_t a, size_t len)
{
	if (!__atomic_load_n(&special_map, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&special_lock);
		if (!special_map) {
			uint64_t *m = meta_alloc((heap_nsegs + 63) / 64 * sizeof *m);
			if (!m)
				xpfo_fatal("out of metadata memory for the secret segment map");
			__atomic_store_n(&special_map, m, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&special_lock);
	}
	size_t i = (a - heap_base) >> SEG_SHIFT, j = (a + len - 1 - heap_base) >> SEG_SHIFT;
	for (; i <= j; i++)
		__atomic_fetch_or(&special_map[i / 64], 1ull << (i % 64), __ATOMIC_RELEASE);
}

bool backing_special(uintptr_t a, size_t len)
{
	uint64_t *m = __atomic_load_n(&special_map, __ATOMIC_ACQUIRE);
	if (likely(!m) || !in_heap(a) || !len)
		return false;
	size_t i = (a - heap_base) >> SEG_SHIFT, j = (a + len - 1 - heap_base) >> SEG_SHIFT;
	for (; i <= j; i++)
		if (__atomic_load_n(&m[i / 64], __ATOMIC_ACQUIRE) & (1ull << (i % 64)))
			return true;
	return false;
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

int backing_purge(uintptr_t a, size_t len)
{
	if (likely(!backing_special(a, len)))
		return os_purge((void *)a, len);
	alias_revoke_range(a, len);
	return os_remap((void *)a, len, opt.revoke == REVOKE_OFF ? OS_RW : OS_NONE);
}

int backing_transfer(struct xpfo_compartment *from, struct xpfo_compartment *to, uintptr_t a,
		     size_t len, bool readable, enum os_prot prot, int key)
{
	bool alias = alias_in(a, len);
	int e;
	if (secret_comp(to)) {
		backing_mark(a, len);
		__atomic_store_n(&secret_used, 1, __ATOMIC_RELAXED);
		e = os_fresh_copy_secret((void *)a, len, readable, prot, key);
	} else if (secret_comp(from) || alias) {
		e = os_fresh_copy_anon((void *)a, len, readable, prot, key);
	} else {
		return -1;
	}
	if (!e && alias) /* its mapping here is gone: now the other holders' */
		alias_revoke_range(a, len);
	return e == EAGAIN ? ENOMEM : e;
}

void secret_usage(uint64_t *mapped, uint64_t *resident)
{
	*mapped = *resident = 0;
	if (__atomic_load_n(&secret_used, __ATOMIC_RELAXED))
		os_secret_usage(mapped, resident);
}
