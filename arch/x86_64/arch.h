/* x86_64/arch.h */
#ifndef XPFO_ARCH_IMPL_H
#define XPFO_ARCH_IMPL_H

#include <signal.h>
#include <ucontext.h>

/* 1: the fault in uc was a write, 0: a read, -1: cannot tell.  The page
 * fault error code's bit 1 is set for writes. */
static inline int arch_fault_is_write(const void *uc)
{
	const ucontext_t *u = uc;
	return (u->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
}

#endif
