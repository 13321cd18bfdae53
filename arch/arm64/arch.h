/* arm64/arch.h */
#ifndef XPFO_ARCH_IMPL_H
#define XPFO_ARCH_IMPL_H

#include <stddef.h>

#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

/* 1: the fault in uc was a write, 0: a read, -1: cannot tell.
 *
 * The kernel stores the fault's syndrome (ESR) in a record of the signal
 * frame's reserved area: a chain of {magic, size} headers ending with a
 * zero magic.  A data abort from EL0 (exception class 0x24) has WnR, bit 6,
 * set for writes.  Emulators may leave the record out: then -1. */
#define ARM64_ESR_MAGIC 0x45535201u
#define ARM64_ESR_EC_DABT_LOW 0x24u
#define ARM64_ESR_WNR (UINT64_C(1) << 6)

static inline int arch_fault_is_write(const void *uc)
{
	const ucontext_t *u = uc;
	const unsigned char *p = (const unsigned char *)u->uc_mcontext.__reserved;
	const unsigned char *end = p + sizeof(u->uc_mcontext.__reserved);

	while (p + 8 <= end) {
		uint32_t magic, size;
		uint64_t esr;

		__builtin_memcpy(&magic, p, 4);
		__builtin_memcpy(&size, p + 4, 4);
		if (magic == 0 || size < 8 || size > (size_t)(end - p))
			return -1;
		if (magic == ARM64_ESR_MAGIC && size >= 16) {
			__builtin_memcpy(&esr, p + 8, 8);
			if (((esr >> 26) & 0x3f) != ARM64_ESR_EC_DABT_LOW)
				return -1;
			return (esr & ARM64_ESR_WNR) ? 1 : 0;
		}
		p += size;
	}
	return -1;
}

/* Zero n bytes of a slot (freed, or a small calloc's): libc's memset. */
static inline void arch_zero(void *p, size_t n)
{
	__builtin_memset(p, 0, n);
}

static inline void arch_init(void) {}

#endif
