/* gate.c - the sandbox's gate: locked threads, known by the address of
 * their TLS (FS-relative: a locked thread cannot move its TLS base,
 * arch_prctl is denied and WRFSBASE is one of the scan's sites), with the
 * keys each may hold open.  One page, read-only outside xpfo_lock_thread
 * and guarded by the executors; sandbox.c adds the entries, pkeys_write
 * checks the register against them (gate_check). */
#include "base.h"
#include "fatal.h"
#include "gate.h"
#include "pkeys.h"

__thread int tl_sandbox_locked __attribute__((tls_model("initial-exec")));
union sandbox_gate sandbox_gate __attribute__((aligned(4096)));

static bool gate_allows(uint64_t allowed)
{
	arch_pkey_reg_t r = arch_pkey_reg_read();
	for (int k = 1; k < ARCH_PKEY_KEYS; k++)
		if (!(allowed >> k & 1) && arch_pkey_reg_get(r, k) != 0)
			return false;
	return true;
}

int gate_protect(enum os_prot prot)
{
	return os_protect(&sandbox_gate, sizeof sandbox_gate, prot);
}

/* Entry i goes (a matching entry of another thread id is a dead locked
 * thread whose TLS went to a new, unfiltered thread; or a lock failed). */
void gate_drop(unsigned i)
{
	if (gate_protect(OS_RW))
		xpfo_fatal("sandbox: cannot update the gate's table");
	sandbox_gate.g.e[i] = sandbox_gate.g.e[--sandbox_gate.g.n];
	/* a table left writable could be rewritten by a locked thread */
	if (gate_protect(OS_READ))
		xpfo_fatal("sandbox: cannot make the gate's table read-only again");
}

void gate_check(void)
{
	if (likely(!__atomic_load_n(&sandbox_gate.g.n, __ATOMIC_RELAXED)))
		return;
	uintptr_t me = (uintptr_t)&tl_sandbox_locked;
	for (unsigned i = 0; i < sandbox_gate.g.n && i < GATE_MAX; i++) {
		if (sandbox_gate.g.e[i].tls != me)
			continue;
		long tid = os_gettid();
		if (sandbox_gate.g.e[i].tid != tid) {
			gate_drop(i);
			return;
		}
		if (!gate_allows(sandbox_gate.g.e[i].allowed))
			xpfo_fatal("sandbox: the rights register of locked thread %d opens a key it may "
				   "not hold (a jump into xpfo's gate?)", tid);
		return;
	}
}
