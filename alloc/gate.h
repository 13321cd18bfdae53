/* gate.h - the sandbox's gate (alloc/gate.c): the table of locked threads
 * and the protection keys each may hold open, which pkeys_write checks
 * after every write of the rights register.  Below pkeys.c; sandbox.c
 * fills the table at a lock. */
#ifndef XPFO_GATE_H
#define XPFO_GATE_H

#include "os.h"

#include <stdint.h>

#define GATE_MAX 64
struct sandbox_gate_entry {
	uintptr_t tls;             /* &tl_sandbox_locked of the locked thread */
	long tid;
	uint64_t allowed;          /* bit k: key k may be open */
	uint16_t comp;             /* the compartment it is locked into */
};
union sandbox_gate {
	struct {
		unsigned n;
		struct sandbox_gate_entry e[GATE_MAX];
		int plain_key;     /* key_plain() (alloc.h): 0, or key_root after a lock */
	} g;
	char page[4096];
};
extern union sandbox_gate sandbox_gate;

/* Set in a thread xpfo_lock_thread confined (sandbox.c). */
extern __thread int tl_sandbox_locked __attribute__((tls_model("initial-exec")));
/* The gate's page: writable for an update (OS_RW), read-only again after
 * it (OS_READ).  0 or an errno. */
int gate_protect(enum os_prot prot);
/* Remove entry i (the page made writable for it, read-only again). */
void gate_drop(unsigned i);
/* After every write of the rights register (pkeys_write): in a locked
 * thread, a register that opens a key the thread may not hold is fatal. */
void gate_check(void);

#endif
