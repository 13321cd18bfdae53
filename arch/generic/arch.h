/* generic/arch.h - no per-CPU knowledge. */
#ifndef XPFO_ARCH_IMPL_H
#define XPFO_ARCH_IMPL_H

#include <stddef.h>

/* 1: the fault in uc was a write, 0: a read, -1: cannot tell. */
static inline int arch_fault_is_write(const void *uc)
{
	(void)uc;
	return -1;
}

/* Zero n bytes of a slot (freed, or a small calloc's): libc's memset. */
static inline void arch_zero(void *p, size_t n)
{
	__builtin_memset(p, 0, n);
}

static inline void arch_init(void) {}

#endif
