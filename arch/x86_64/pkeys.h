/* x86_64/pkeys.h - Memory Protection Keys (MPK/PKU) on x86-64.
 *
 * PKRU is a 32-bit per-thread register with two bits per key (16 keys):
 * bit 2k is AD (access disable: no read, no write) and bit 2k+1 is WD
 * (write disable).  Key 0 is every page's default key.  Instruction fetch
 * is never affected.
 *
 * The encoding functions (x86_pkru_*) are pure C and compile on any host,
 * so the unit test checks them everywhere; the register access and the
 * CPUID test exist only when compiling for x86-64.  Use arch/pkeys.h, not
 * this file. */
#ifndef XPFO_ARCH_X86_64_PKEYS_H
#define XPFO_ARCH_X86_64_PKEYS_H

#include <stdint.h>

#define X86_PKRU_KEYS 16
#define X86_PKRU_AD(key) (UINT32_C(1) << (2 * (key)))
#define X86_PKRU_WD(key) (UINT32_C(2) << (2 * (key)))
/* Only key 0 open: AD and WD set for keys 1..15. */
#define X86_PKRU_ONLY_KEY0 UINT32_C(0xfffffffc)
/* The kernel's initial PKRU for a new process and for signal handlers on
 * Linux up to about 6.11 (init_pkru_value): AD for keys 1..15. */
#define X86_PKRU_LINUX_INIT UINT32_C(0x55555554)

/* rights: 0 none, 1 read, 3 read and write (the ARCH_PKEY_* values). */
static inline uint32_t x86_pkru_set(uint32_t pkru, int key, int rights)
{
	uint32_t bits = 0;

	if (rights == 0)
		bits = X86_PKRU_AD(key) | X86_PKRU_WD(key);
	else if (rights == 1)
		bits = X86_PKRU_WD(key);
	return (pkru & ~(X86_PKRU_AD(key) | X86_PKRU_WD(key))) | bits;
}

static inline int x86_pkru_get(uint32_t pkru, int key)
{
	if (pkru & X86_PKRU_AD(key))
		return 0;
	if (pkru & X86_PKRU_WD(key))
		return 1;
	return 3;
}

#if defined(__x86_64__)
#include <cpuid.h>

/* CPUID.(EAX=7,ECX=0):ECX bit 3 is PKU (the CPU has it), bit 4 is OSPKE
 * (the OS set CR4.PKE, so RDPKRU/WRPKRU do not fault).  Only OSPKE
 * matters to user space. */
static inline int x86_pkru_os_enabled(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, 0) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	(void)a;
	(void)b;
	(void)d;
	return (c >> 4) & 1;
}

/* RDPKRU and WRPKRU need ECX = 0 (WRPKRU also EDX = 0) or they raise #GP.
 * They are spelled as bytes for assemblers that predate the mnemonics.
 *
 * Ordering: both are asm volatile, so the compiler keeps them in program
 * order with respect to each other.  WRPKRU carries a "memory" clobber so
 * that no load or store of the program moves across it: a store meant to
 * happen while a key is open must stay before the write that closes it.
 * The CPU needs no fence: Intel's SDM says WRPKRU is not executed
 * speculatively and accesses after it see the new value.  RDPKRU has no
 * memory clobber: reading the rights orders nothing. */
static inline uint32_t x86_pkru_read(void)
{
	uint32_t eax, edx;

	__asm__ volatile(".byte 0x0f, 0x01, 0xee" /* rdpkru */
			 : "=a"(eax), "=d"(edx)
			 : "c"(0));
	(void)edx;
	return eax;
}

static inline void x86_pkru_write(uint32_t pkru)
{
	__asm__ volatile(".byte 0x0f, 0x01, 0xef" /* wrpkru */
			 :
			 : "a"(pkru), "c"(0), "d"(0)
			 : "memory");
}
/* The rights register a signal frame gives back at sigreturn.  The frame's
 * FPU state (ucontext uc_mcontext.fpregs) is an XSAVE area in the standard
 * (not compacted) form: the 512-byte legacy region, whose bytes 464..511
 * the kernel fills with its software-reserved words (magic1 "XSFP", the
 * features saved and the area's size), the 64-byte header at 512 (XSTATE_BV,
 * one bit per component: clear means the component is in its initial state
 * and sigreturn loads that, for PKRU 0), then the components at offsets
 * CPUID leaf 0xD gives: PKRU is component 9, 4 bytes at
 * CPUID.(EAX=0xD,ECX=9):EBX.  Linux loads PKRU from there at sigreturn
 * (6.1: XRSTOR of the user frame; 6.12 writes the interrupted value there
 * itself, update_pkru_in_sigframe). */
#define X86_XFEATURE_PKRU 9
#define X86_FP_XSTATE_MAGIC1 UINT32_C(0x46505853)
#define X86_XSAVE_SW_OFFSET 464
#define X86_XSAVE_HDR_OFFSET 512
#define X86_XSAVE_EXT_OFFSET 576

/* The PKRU component's offset in a standard XSAVE area, or 0. */
static inline unsigned int x86_xsave_pkru_offset(void)
{
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, 0) < 0xd)
		return 0;
	__cpuid_count(0xd, X86_XFEATURE_PKRU, a, b, c, d);
	(void)c;
	(void)d;
	return a >= 4 && b >= X86_XSAVE_EXT_OFFSET ? b : 0;
}

/* The PKRU word of the XSAVE area fx (a signal frame's), or NULL when the
 * area holds none: no magic, PKRU not saved, or in its initial state (0,
 * every key open: nothing to open). */
static inline unsigned char *x86_xsave_pkru(unsigned char *fx)
{
	uint32_t magic, size;
	uint64_t features, bv;
	unsigned int off = x86_xsave_pkru_offset();

	if (!fx || !off)
		return 0;
	__builtin_memcpy(&magic, fx + X86_XSAVE_SW_OFFSET, 4);
	__builtin_memcpy(&features, fx + X86_XSAVE_SW_OFFSET + 8, 8);
	__builtin_memcpy(&size, fx + X86_XSAVE_SW_OFFSET + 16, 4);
	__builtin_memcpy(&bv, fx + X86_XSAVE_HDR_OFFSET, 8);
	if (magic != X86_FP_XSTATE_MAGIC1 || !(features >> X86_XFEATURE_PKRU & 1) ||
	    !(bv >> X86_XFEATURE_PKRU & 1) || off + 4 > size)
		return 0;
	return fx + off;
}
#endif /* __x86_64__ */

#endif
