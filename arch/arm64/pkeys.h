/* arm64/pkeys.h - Permission Overlay Extension (FEAT_S1POE) on arm64.
 *
 * POR_EL0 is a 64-bit per-thread register with a 4-bit field per key
 * (Linux uses 8 keys, key 0 the default): bit 0 read, bit 1 execute,
 * bit 2 write, 0 no access.  Unlike x86 PKRU the bits grant rather than
 * deny, and they cover instruction fetch.  Linux offers it from 6.12 on
 * (HWCAP2_POE, pkey_alloc and friends) and reports overlay faults as
 * SIGSEGV with si_code SEGV_PKUERR and si_pkey, like x86.
 *
 * The encoding functions (arm64_por_*) are pure C and compile on any host;
 * the register access exists only when compiling for aarch64.  Use
 * arch/pkeys.h, not this file. */
#ifndef XPFO_ARCH_ARM64_PKEYS_H
#define XPFO_ARCH_ARM64_PKEYS_H

#include <stdint.h>

#define ARM64_POR_KEYS 8
#define ARM64_POE_R UINT64_C(0x1)
#define ARM64_POE_X UINT64_C(0x2)
#define ARM64_POE_W UINT64_C(0x4)
#define ARM64_POE_MASK UINT64_C(0xf)
#define ARM64_POR_SHIFT(key) (4 * (key))
/* Only key 0 open (read, write, execute); Linux's POR_EL0_INIT. */
#define ARM64_POR_ONLY_KEY0 (ARM64_POE_R | ARM64_POE_W | ARM64_POE_X)

/* rights: 0 none, 1 read, 3 read and write (the ARCH_PKEY_* values).
 * The execute bit of the key is kept as it was: xpfo's heap pages are not
 * executable, and key 0 must stay executable for the program's text. */
static inline uint64_t arm64_por_set(uint64_t por, int key, int rights)
{
	uint64_t field = (por >> ARM64_POR_SHIFT(key)) & ARM64_POE_X;

	if (rights & 1)
		field |= ARM64_POE_R;
	if (rights & 2)
		field |= ARM64_POE_W;
	return (por & ~(ARM64_POE_MASK << ARM64_POR_SHIFT(key))) |
	       (field << ARM64_POR_SHIFT(key));
}

/* A write-only overlay (W without R) is reported as none: xpfo never
 * makes one, and a page that cannot be read is not usable data. */
static inline int arm64_por_get(uint64_t por, int key)
{
	uint64_t field = (por >> ARM64_POR_SHIFT(key)) & ARM64_POE_MASK;

	if (!(field & ARM64_POE_R))
		return 0;
	return (field & ARM64_POE_W) ? 3 : 1;
}

#if defined(__aarch64__)
#include <sys/auxv.h>

#ifndef HWCAP2_POE
#define HWCAP2_POE (UINT64_C(1) << 63)
#endif

/* The kernel sets HWCAP2_POE only when the CPU has POE and the kernel
 * enabled it for EL0; without it, POR_EL0 accesses are undefined
 * instructions. */
static inline int arm64_por_os_enabled(void)
{
	return (getauxval(AT_HWCAP2) & HWCAP2_POE) != 0;
}

/* POR_EL0 is S3_3_C10_C2_4 (spelled generically for assemblers that do not
 * know the name).  A write takes effect for later instructions only after
 * a context synchronisation, hence the ISB; the "memory" clobber keeps the
 * compiler from moving loads and stores across the write. */
static inline uint64_t arm64_por_read(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, S3_3_C10_C2_4" : "=r"(v));
	return v;
}

static inline void arm64_por_write(uint64_t v)
{
	__asm__ volatile("msr S3_3_C10_C2_4, %0\n\tisb" : : "r"(v) : "memory");
}
#endif /* __aarch64__ */

#endif
