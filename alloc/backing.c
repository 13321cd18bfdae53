/* backing.c - what the rest of the allocator asks of heap pages that may
 * not be plain private anonymous memory (backing.h): which segments ever
 * held a secret compartment's file or an alias view (one bit per segment),
 * the purge that maps fresh anonymous memory over such a range (its aliases
 * revoked first), and the fresh copy of a run whose old or new owner is
 * secret or which has an alias.  The secret files are secret.c's, the
 * alias views alias.c's. */
#include "backing.h"

#include <errno.h>

static uint64_t *special_map;    /* one bit per segment (meta_alloc) */
static pthread_mutex_t special_lock = PTHREAD_MUTEX_INITIALIZER;

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

int backing_purge(uintptr_t a, size_t len)
{
	if (likely(!backing_special(a, len)))
		return os_purge((void *)a, len);
	alias_revoke_range(a, len);
	return os_remap((void *)a, len, opt.revoke == REVOKE_OFF ? OS_RW : OS_NONE);
}

/* 1: process_madvise takes MADV_DONTNEED here (for this process); 0: it
 * refused; -1: not tried yet. */
static int purge_vec_state = -1;

int backing_purge_vec(const uintptr_t *a, const size_t *len, unsigned n, size_t *done)
{
	*done = 0;
	if (n < 2 || tl_sandbox_locked || !__atomic_load_n(&purge_vec_state, __ATOMIC_RELAXED))
		return ECANCELED;
	int e = os_purge_vec(a, len, n, done);
	if (!e || *done)
		__atomic_store_n(&purge_vec_state, 1, __ATOMIC_RELAXED);
	else if (e == EINVAL || e == ENOSYS || e == EPERM || e == EBADF)
		__atomic_store_n(&purge_vec_state, 0, __ATOMIC_RELAXED);
	return e;
}

bool backing_purge_vec_batched(void)
{
	return !tl_sandbox_locked && __atomic_load_n(&purge_vec_state, __ATOMIC_RELAXED) &&
	       os_purge_vec_one_flush();
}

int backing_transfer(struct xpfo_compartment *from, struct xpfo_compartment *to, uintptr_t a,
		     size_t len, bool readable, enum os_prot prot, int key)
{
	bool alias = alias_in(a, len);
	int e;
	if (secret_comp(to)) {
		e = secret_copy_in(a, len, readable, prot, key);
	} else if (secret_comp(from) || alias) {
		e = os_fresh_copy_anon((void *)a, len, readable, prot, key);
	} else {
		return -1;
	}
	if (!e && alias) /* its mapping here is gone: now the other holders' */
		alias_revoke_range(a, len);
	return e == EAGAIN ? ENOMEM : e;
}
