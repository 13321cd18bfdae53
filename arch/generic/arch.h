/* generic/arch.h - no per-CPU knowledge. */
#ifndef XPFO_ARCH_IMPL_H
#define XPFO_ARCH_IMPL_H

/* 1: the fault in uc was a write, 0: a read, -1: cannot tell. */
static inline int arch_fault_is_write(const void *uc)
{
	(void)uc;
	return -1;
}

#endif
