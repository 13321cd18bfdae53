/* pkeys.h - protection keys: one per-thread rights register, a few keys
 * per process, and the kernel's pkey_* system calls.
 *
 * x86-64 has MPK (16 keys, the PKRU register), arm64 has POE (8 keys, the
 * POR_EL0 register, Linux 6.12 and later); elsewhere there are no keys and
 * arch_pkey_probe() says so.  Key 0 is every page's default key and is
 * never handed out.
 *
 *   arch_pkey_probe()            can this process use keys?  ARCH_PKEY_OK or
 *                                the reason it cannot (arch_pkey_status_str)
 *   arch_pkey_reg_read/write()   this thread's rights register (only after
 *                                arch_pkey_probe() == ARCH_PKEY_OK)
 *   arch_pkey_reg_set(r, k, rt)  r with key k's rights set to rt: pure
 *   arch_pkey_reg_get(r, k)      key k's rights in r: pure
 *   arch_pkey_reg_only_key0()    the register value that opens key 0 only
 *   arch_pkey_sys_alloc/free/mprotect()  the system calls, by number
 *   arch_pkey_fault_key(si)      the key of a SIGSEGV, or -1 if not a key
 *                                fault
 *   arch_pkey_frame_set(uc, k, rt)  in a signal handler's ucontext: key k's
 *                                rights in the register the interrupted
 *                                code gets back at sigreturn (0, or -1 if
 *                                the frame holds none or already gives k
 *                                those rights; x86-64 only)
 *
 * Rights are ARCH_PKEY_NONE, ARCH_PKEY_READ, ARCH_PKEY_RW.  A register
 * value is arch_pkey_reg_t; compute one with arch_pkey_reg_set() and write
 * it with arch_pkey_reg_write(), which is the only cost of entering or
 * leaving a compartment.  The register is per thread; a signal handler
 * starts with the kernel's choice of rights (see docs/security.md) and
 * sigreturn restores the interrupted thread's value from the signal frame.
 */
#ifndef XPFO_ARCH_PKEYS_H
#define XPFO_ARCH_PKEYS_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "x86_64/pkeys.h"
#include "arm64/pkeys.h"
#include "generic/pkeys.h"

enum arch_pkey_rights {
	ARCH_PKEY_NONE = 0, /* no read, no write */
	ARCH_PKEY_READ = 1, /* read only */
	ARCH_PKEY_RW = 3,   /* read and write */
};

enum arch_pkey_status {
	ARCH_PKEY_OK = 0,
	ARCH_PKEY_NO_ARCH,   /* xpfo has no key support for this CPU architecture */
	ARCH_PKEY_NO_CPU,    /* the CPU lacks keys or the kernel did not enable them */
	ARCH_PKEY_NO_KERNEL, /* pkey_alloc is missing or refused (ENOSYS, EINVAL) */
	ARCH_PKEY_NO_FREE,   /* pkey_alloc works but every key is taken (ENOSPC) */
};

/* si_code of a SIGSEGV raised by a key (x86 and arm64 alike). */
#define ARCH_SEGV_PKUERR 4

#if defined(__x86_64__)

typedef uint32_t arch_pkey_reg_t;
#define ARCH_PKEY_KEYS X86_PKRU_KEYS
#define ARCH_PKEY_REG_NAME "PKRU"
#define ARCH_NR_pkey_mprotect 329
#define ARCH_NR_pkey_alloc 330
#define ARCH_NR_pkey_free 331
static inline int arch_pkey_cpu_enabled(void) { return x86_pkru_os_enabled(); }
static inline arch_pkey_reg_t arch_pkey_reg_read(void) { return x86_pkru_read(); }
static inline void arch_pkey_reg_write(arch_pkey_reg_t v) { x86_pkru_write(v); }
static inline arch_pkey_reg_t arch_pkey_reg_set(arch_pkey_reg_t r, int key, int rights)
{
	return x86_pkru_set(r, key, rights);
}
static inline int arch_pkey_reg_get(arch_pkey_reg_t r, int key) { return x86_pkru_get(r, key); }
static inline arch_pkey_reg_t arch_pkey_reg_only_key0(void) { return X86_PKRU_ONLY_KEY0; }
static inline int arch_pkey_frame_set(void *uc, int key, int rights)
{
	unsigned char *w = x86_xsave_pkru((unsigned char *)((ucontext_t *)uc)->uc_mcontext.fpregs);
	uint32_t pkru;

	if (!w)
		return -1;
	__builtin_memcpy(&pkru, w, 4);
	if (x86_pkru_get(pkru, key) == rights)
		return -1; /* nothing to change: the fault was not about these rights */
	pkru = x86_pkru_set(pkru, key, rights);
	__builtin_memcpy(w, &pkru, 4);
	return 0;
}

#elif defined(__aarch64__)

typedef uint64_t arch_pkey_reg_t;
#define ARCH_PKEY_KEYS ARM64_POR_KEYS
#define ARCH_PKEY_REG_NAME "POR_EL0"
#define ARCH_NR_pkey_mprotect 288
#define ARCH_NR_pkey_alloc 289
#define ARCH_NR_pkey_free 290
static inline int arch_pkey_cpu_enabled(void) { return arm64_por_os_enabled(); }
static inline arch_pkey_reg_t arch_pkey_reg_read(void) { return arm64_por_read(); }
static inline void arch_pkey_reg_write(arch_pkey_reg_t v) { arm64_por_write(v); }
static inline arch_pkey_reg_t arch_pkey_reg_set(arch_pkey_reg_t r, int key, int rights)
{
	return arm64_por_set(r, key, rights);
}
static inline int arch_pkey_reg_get(arch_pkey_reg_t r, int key) { return arm64_por_get(r, key); }
static inline arch_pkey_reg_t arch_pkey_reg_only_key0(void) { return ARM64_POR_ONLY_KEY0; }
/* POR_EL0 in the signal frame (its poe_context record): not done */
static inline int arch_pkey_frame_set(void *uc, int key, int rights)
{
	(void)uc;
	(void)key;
	(void)rights;
	return -1;
}

#else /* no keys */

typedef uint32_t arch_pkey_reg_t;
#define ARCH_PKEY_KEYS 0
#define ARCH_PKEY_REG_NAME "none"
static inline int arch_pkey_cpu_enabled(void) { return 0; }
static inline arch_pkey_reg_t arch_pkey_reg_read(void) { return 0; }
static inline void arch_pkey_reg_write(arch_pkey_reg_t v) { (void)v; }
static inline arch_pkey_reg_t arch_pkey_reg_set(arch_pkey_reg_t r, int key, int rights)
{
	(void)key;
	(void)rights;
	return r;
}
static inline int arch_pkey_reg_get(arch_pkey_reg_t r, int key)
{
	(void)r;
	(void)key;
	return ARCH_PKEY_RW;
}
static inline arch_pkey_reg_t arch_pkey_reg_only_key0(void) { return 0; }
static inline int arch_pkey_frame_set(void *uc, int key, int rights)
{
	(void)uc;
	(void)key;
	(void)rights;
	return -1;
}

#endif

/* The system calls by number, so that the C library's version does not
 * matter (glibc has wrappers only from 2.27).  In the library only src/os.c
 * calls these and arch_pkey_probe (the tests in tests/qemu use them too).  Each returns what syscall()
 * returns: the result, or -1 with errno set.  Without keys, ENOSYS. */
static inline int arch_pkey_sys_alloc(unsigned int flags, unsigned int init_rights)
{
#ifdef ARCH_NR_pkey_alloc
	return (int)syscall(ARCH_NR_pkey_alloc, flags, init_rights);
#else
	(void)flags;
	(void)init_rights;
	errno = ENOSYS;
	return -1;
#endif
}

static inline int arch_pkey_sys_free(int key)
{
#ifdef ARCH_NR_pkey_free
	return (int)syscall(ARCH_NR_pkey_free, key);
#else
	(void)key;
	errno = ENOSYS;
	return -1;
#endif
}

static inline int arch_pkey_sys_mprotect(void *addr, size_t len, int prot, int key)
{
#ifdef ARCH_NR_pkey_mprotect
	return (int)syscall(ARCH_NR_pkey_mprotect, addr, len, prot, key);
#else
	(void)addr;
	(void)len;
	(void)prot;
	(void)key;
	errno = ENOSYS;
	return -1;
#endif
}

/* Can this process use keys?  Checks the CPU and kernel (CPUID OSPKE on
 * x86-64, HWCAP2_POE on arm64), then allocates and frees one key.  Costs
 * two system calls: call it once at start.  errno is preserved. */
static inline enum arch_pkey_status arch_pkey_probe(void)
{
	int saved = errno, key, e;

	if (ARCH_PKEY_KEYS == 0)
		return ARCH_PKEY_NO_ARCH;
	if (!arch_pkey_cpu_enabled())
		return ARCH_PKEY_NO_CPU;
	key = arch_pkey_sys_alloc(0, 0);
	e = errno;
	errno = saved;
	if (key < 0)
		return e == ENOSPC ? ARCH_PKEY_NO_FREE : ARCH_PKEY_NO_KERNEL;
	arch_pkey_sys_free(key);
	errno = saved;
	return ARCH_PKEY_OK;
}

static inline const char *arch_pkey_status_str(enum arch_pkey_status s)
{
	switch (s) {
	case ARCH_PKEY_OK:
		return "protection keys available";
	case ARCH_PKEY_NO_ARCH:
		return "no protection key support for this CPU architecture";
	case ARCH_PKEY_NO_CPU:
#if defined(__x86_64__)
		return "the CPU has no protection keys (CPUID OSPKE clear: no PKU, or the kernel did not enable it)";
#elif defined(__aarch64__)
		return "the CPU has no permission overlays (no HWCAP2_POE: no FEAT_S1POE, or a kernel before 6.12)";
#else
		return "the CPU has no protection keys";
#endif
	case ARCH_PKEY_NO_KERNEL:
		return "the kernel refused pkey_alloc (no pkey support)";
	case ARCH_PKEY_NO_FREE:
		return "pkey_alloc works but every protection key is taken";
	}
	return "unknown protection key status";
}

/* The key of a SIGSEGV, or -1 if the fault was not a key fault.
 *
 * The kernel puts the key right after si_addr and a pad of
 * max(alignof(void *), sizeof(short)) bytes (the union of _addr_lsb,
 * _addr_bnd and _addr_pkey in the kernel's siginfo).  Older glibc headers
 * do not name it si_pkey, so it is read by that layout; the unit test
 * checks the layout against glibc's si_pkey where it exists. */
#define ARCH_SI_PKEY_OFFSET \
	(sizeof(void *) + (_Alignof(void *) > sizeof(short) ? _Alignof(void *) : sizeof(short)))

static inline uint32_t arch_si_pkey(const siginfo_t *si)
{
	const unsigned char *p = (const unsigned char *)&si->si_addr + ARCH_SI_PKEY_OFFSET;
	uint32_t key;

	__builtin_memcpy(&key, p, sizeof(key));
	return key;
}

static inline int arch_pkey_fault_key(const siginfo_t *si)
{
	uint32_t key;

	if (si->si_signo != SIGSEGV || si->si_code != ARCH_SEGV_PKUERR)
		return -1;
	key = arch_si_pkey(si);
	return key < (uint32_t)ARCH_PKEY_KEYS ? (int)key : -1;
}

#endif
