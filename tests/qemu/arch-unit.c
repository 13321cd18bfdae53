/* arch-unit.c - unit test of arch/pkeys.h and arch_fault_is_write.
 *
 * On any host: the x86 PKRU and arm64 POR_EL0 encodings (pure functions),
 * the siginfo key layout and arch_pkey_fault_key.  For the architecture it
 * is compiled for: the probe must agree with the kernel (no keys means
 * pkey_alloc fails too), and where keys work, the register must read back
 * what was written and match the rights the kernel gives a new key.
 * Runs natively, under qemu-aarch64-static (tests/qemu/arch-arm64.sh) and
 * in the QEMU guest (tests/qemu/pkeys-rig.sh), where x86 keys work.
 *
 * Exit 0 all checks passed, 1 some failed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch.h"
#include "pkeys.h"

static int failures;

#define CHECK(cond, ...)                                           \
	do {                                                       \
		if (!(cond)) {                                     \
			failures++;                                \
			printf("not ok: %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                       \
			printf("\n");                              \
		}                                                  \
	} while (0)

static const int all_rights[] = { ARCH_PKEY_NONE, ARCH_PKEY_READ, ARCH_PKEY_RW };

static void test_x86_encoding(void)
{
	static const uint32_t starts[] = { 0, 0xffffffffu, X86_PKRU_LINUX_INIT,
					   X86_PKRU_ONLY_KEY0, 0x12345678u };
	int k, i, j;

	/* Known values: AD is bit 2k, WD bit 2k+1. */
	CHECK(x86_pkru_set(0, 1, ARCH_PKEY_NONE) == 0xcu, "key 1 none");
	CHECK(x86_pkru_set(0, 1, ARCH_PKEY_READ) == 0x8u, "key 1 read = WD only");
	CHECK(x86_pkru_set(0xffffffffu, 1, ARCH_PKEY_RW) == 0xfffffff3u, "key 1 rw");
	CHECK(x86_pkru_set(0, 15, ARCH_PKEY_NONE) == 0xc0000000u, "key 15 none");
	CHECK(x86_pkru_set(X86_PKRU_LINUX_INIT, 3, ARCH_PKEY_RW) == 0x55555514u,
	      "open key 3 from the kernel's initial value");
	CHECK(x86_pkru_get(0x4u, 1) == ARCH_PKEY_NONE, "AD alone is no access");
	CHECK(x86_pkru_get(0xcu, 1) == ARCH_PKEY_NONE, "AD+WD is no access");
	CHECK(x86_pkru_get(0x8u, 1) == ARCH_PKEY_READ, "WD alone is read");
	for (k = 0; k < X86_PKRU_KEYS; k++) {
		CHECK(x86_pkru_get(X86_PKRU_ONLY_KEY0, k) ==
			      (k ? ARCH_PKEY_NONE : ARCH_PKEY_RW), "only-key0, key %d", k);
		CHECK(x86_pkru_get(X86_PKRU_LINUX_INIT, k) ==
			      (k ? ARCH_PKEY_NONE : ARCH_PKEY_RW), "linux init, key %d", k);
	}
	/* Round trip, and no other key changes. */
	for (i = 0; i < (int)(sizeof(starts) / sizeof(starts[0])); i++)
		for (k = 0; k < X86_PKRU_KEYS; k++)
			for (j = 0; j < 3; j++) {
				uint32_t r = x86_pkru_set(starts[i], k, all_rights[j]);
				uint32_t mask = X86_PKRU_AD(k) | X86_PKRU_WD(k);

				CHECK(x86_pkru_get(r, k) == all_rights[j],
				      "x86 round trip start %#x key %d rights %d", starts[i], k,
				      all_rights[j]);
				CHECK((r & ~mask) == (starts[i] & ~mask),
				      "x86 set of key %d touched other keys", k);
			}
}

static void test_arm64_encoding(void)
{
	static const uint64_t starts[] = { 0, 0xffffffffull, 0x77777777ull,
					   ARM64_POR_ONLY_KEY0, 0x12345678ull };
	int k, i, j;

	/* Known values: 4 bits per key, R=1, X=2, W=4. */
	CHECK(ARM64_POR_ONLY_KEY0 == 0x7, "POR_EL0_INIT is RWX for key 0");
	CHECK(arm64_por_set(0, 1, ARCH_PKEY_RW) == 0x50, "key 1 rw");
	CHECK(arm64_por_set(0, 1, ARCH_PKEY_READ) == 0x10, "key 1 read");
	CHECK(arm64_por_set(0x77777777ull, 2, ARCH_PKEY_NONE) == 0x77777277ull,
	      "key 2 none keeps its execute bit");
	CHECK(arm64_por_set(0x7, 7, ARCH_PKEY_RW) == 0x50000007ull, "key 7 rw");
	CHECK(arm64_por_get(0x40, 1) == ARCH_PKEY_NONE, "write-only is none");
	CHECK(arm64_por_get(0x20, 1) == ARCH_PKEY_NONE, "execute-only is none");
	for (k = 0; k < ARM64_POR_KEYS; k++)
		CHECK(arm64_por_get(ARM64_POR_ONLY_KEY0, k) ==
			      (k ? ARCH_PKEY_NONE : ARCH_PKEY_RW), "only-key0, key %d", k);
	for (i = 0; i < (int)(sizeof(starts) / sizeof(starts[0])); i++)
		for (k = 0; k < ARM64_POR_KEYS; k++)
			for (j = 0; j < 3; j++) {
				uint64_t r = arm64_por_set(starts[i], k, all_rights[j]);
				uint64_t mask = ARM64_POE_MASK << ARM64_POR_SHIFT(k);
				uint64_t x = ARM64_POE_X << ARM64_POR_SHIFT(k);

				CHECK(arm64_por_get(r, k) == all_rights[j],
				      "arm64 round trip start %#llx key %d rights %d",
				      (unsigned long long)starts[i], k, all_rights[j]);
				CHECK((r & ~mask) == (starts[i] & ~mask),
				      "arm64 set of key %d touched other keys", k);
				CHECK((r & x) == (starts[i] & x),
				      "arm64 set of key %d changed its execute bit", k);
			}
}

static void test_siginfo(void)
{
	siginfo_t si;
	unsigned char *p = (unsigned char *)&si.si_addr + ARCH_SI_PKEY_OFFSET;
	uint32_t five = 5, big = 1000;

	memset(&si, 0, sizeof(si));
	CHECK(ARCH_SI_PKEY_OFFSET + sizeof(uint32_t) +
			      ((unsigned char *)&si.si_addr - (unsigned char *)&si) <=
		      sizeof(si),
	      "si_pkey inside siginfo_t");
#ifdef si_pkey
	si.si_pkey = 9;
	CHECK(arch_si_pkey(&si) == 9, "layout agrees with glibc's si_pkey (got %u)",
	      arch_si_pkey(&si));
	printf("# glibc names si_pkey; layout agrees\n");
#else
	printf("# glibc does not name si_pkey; layout from the kernel's siginfo\n");
#endif
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSEGV;
	si.si_code = ARCH_SEGV_PKUERR;
	memcpy(p, &five, 4);
	CHECK(arch_si_pkey(&si) == 5, "raw key read back");
	CHECK(arch_pkey_fault_key(&si) == (ARCH_PKEY_KEYS > 5 ? 5 : -1),
	      "key fault with key 5");
	si.si_code = SEGV_ACCERR;
	CHECK(arch_pkey_fault_key(&si) == -1, "SEGV_ACCERR is not a key fault");
	si.si_code = ARCH_SEGV_PKUERR;
	si.si_signo = SIGBUS;
	CHECK(arch_pkey_fault_key(&si) == -1, "SIGBUS is not a key fault");
	si.si_signo = SIGSEGV;
	memcpy(p, &big, 4);
	CHECK(arch_pkey_fault_key(&si) == -1, "out-of-range key rejected");
}

/* cpuinfo_has(word): the first "flags" (x86) or "Features" (arm64) line
 * of /proc/cpuinfo contains word; -1 if there is no such line. */
static int cpuinfo_has(const char *word)
{
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *tok, *save;

		if (strncmp(line, "flags", 5) && strncmp(line, "Features", 8))
			continue;
		found = 0;
		for (tok = strtok_r(strchr(line, ':') ? strchr(line, ':') + 1 : line,
				    " \t\n", &save);
		     tok; tok = strtok_r(NULL, " \t\n", &save))
			if (!strcmp(tok, word))
				found = 1;
		break;
	}
	fclose(f);
	return found;
}

static void test_probe(void)
{
	enum arch_pkey_status st = arch_pkey_probe();
	int key, c;

	printf("# %s: probe: %s\n", ARCH_PKEY_REG_NAME, arch_pkey_status_str(st));
#if defined(__x86_64__)
	c = cpuinfo_has("ospke");
	if (c >= 0)
		CHECK(arch_pkey_cpu_enabled() == c,
		      "CPUID OSPKE (%d) disagrees with /proc/cpuinfo ospke (%d)",
		      arch_pkey_cpu_enabled(), c);
#elif defined(__aarch64__)
	c = cpuinfo_has("poe");
	if (c >= 0 && cpuinfo_has("fp") == 1) /* a real arm64 /proc/cpuinfo */
		CHECK(arch_pkey_cpu_enabled() == c, "HWCAP2_POE (%d) disagrees with "
		      "/proc/cpuinfo poe (%d)", arch_pkey_cpu_enabled(), c);
#else
	(void)c;
	CHECK(st == ARCH_PKEY_NO_ARCH, "no keys on this architecture");
#endif
	if (st != ARCH_PKEY_OK) {
		/* "No keys" must be true: the kernel refuses a key too. */
		key = arch_pkey_sys_alloc(0, 0);
		CHECK(key < 0, "probe says no keys but pkey_alloc gave key %d", key);
		if (key >= 0)
			arch_pkey_sys_free(key);
		return;
	}

	/* Keys work: the register reads back what is written. */
	arch_pkey_reg_t r0 = arch_pkey_reg_read(), r;
	printf("# %s at start: %#llx\n", ARCH_PKEY_REG_NAME, (unsigned long long)r0);
	CHECK(arch_pkey_reg_get(r0, 0) == ARCH_PKEY_RW, "key 0 open at start");
	key = arch_pkey_sys_alloc(0, 2 /* PKEY_DISABLE_WRITE */);
	CHECK(key > 0 && key < ARCH_PKEY_KEYS, "pkey_alloc gave %d", key);
	if (key <= 0)
		return;
	r = arch_pkey_reg_read();
	CHECK(arch_pkey_reg_get(r, key) == ARCH_PKEY_READ,
	      "the kernel's write-disabled key %d reads as READ (reg %#llx)", key,
	      (unsigned long long)r);
	for (int j = 0; j < 3; j++) {
		arch_pkey_reg_t want = arch_pkey_reg_set(r, key, all_rights[j]);

		arch_pkey_reg_write(want);
		CHECK(arch_pkey_reg_read() == want, "register read back, rights %d",
		      all_rights[j]);
	}
	arch_pkey_reg_write(r0);
	CHECK(arch_pkey_reg_read() == r0, "register restored");
	CHECK(arch_pkey_sys_free(key) == 0, "pkey_free");
}

static sigjmp_buf jump;
static volatile int seen_write = -2;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	seen_write = arch_fault_is_write(uc);
	siglongjmp(jump, 1);
}

static void test_fault_is_write(void)
{
	struct sigaction sa, old;
	volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile char *q = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int w, r;

	CHECK(p != MAP_FAILED && q != MAP_FAILED, "mmap");
	if (p == MAP_FAILED || q == MAP_FAILED)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(jump, 1))
		p[0] = 1;
	w = seen_write;
	seen_write = -2;
	if (!sigsetjmp(jump, 1))
		(void)q[0];
	r = seen_write;
	sigaction(SIGSEGV, &old, NULL);
	printf("# arch_fault_is_write: write fault %d, read fault %d\n", w, r);
	CHECK(w == 1 || w == -1, "write fault reported as %d", w);
	CHECK(r == 0 || r == -1, "read fault reported as %d", r);
	CHECK((w == -1) == (r == -1), "known for one kind, not the other");
#if defined(__x86_64__)
	CHECK(w == 1 && r == 0, "x86-64 always knows");
#endif
	munmap((void *)p, 4096);
	munmap((void *)q, 4096);
}

/* x86_xsave_pkru: the PKRU word of a signal frame's XSAVE area, found by
 * CPUID's offset only when the kernel's words say it is there (a made-up
 * area here; pkeys-fault edits a real frame).  Without PKRU in CPUID (this
 * host) there is none. */
static void test_xsave_pkru(void)
{
#if defined(__x86_64__)
	static unsigned char fx[8192] __attribute__((aligned(64)));
	unsigned int off = x86_xsave_pkru_offset();
	uint32_t magic = X86_FP_XSTATE_MAGIC1, size = sizeof fx;
	uint64_t feat = UINT64_C(1) << X86_XFEATURE_PKRU, bv = feat;

	memcpy(fx + X86_XSAVE_SW_OFFSET, &magic, 4);
	memcpy(fx + X86_XSAVE_SW_OFFSET + 8, &feat, 8);
	memcpy(fx + X86_XSAVE_SW_OFFSET + 16, &size, 4);
	memcpy(fx + X86_XSAVE_HDR_OFFSET, &bv, 8);
	printf("# PKRU in an XSAVE area: offset %u\n", off);
	if (!off) {
		CHECK(!x86_xsave_pkru(fx), "no PKRU component, yet a word");
		return;
	}
	CHECK(x86_xsave_pkru(fx) == fx + off, "PKRU word at %p, not %p", (void *)x86_xsave_pkru(fx),
	      (void *)(fx + off));
	bv = 0; /* PKRU in its initial state */
	memcpy(fx + X86_XSAVE_HDR_OFFSET, &bv, 8);
	CHECK(!x86_xsave_pkru(fx), "XSTATE_BV bit 9 clear, yet a word");
	bv = feat;
	memcpy(fx + X86_XSAVE_HDR_OFFSET, &bv, 8);
	size = off + 3;
	memcpy(fx + X86_XSAVE_SW_OFFSET + 16, &size, 4);
	CHECK(!x86_xsave_pkru(fx), "area too short, yet a word");
	size = sizeof fx;
	memcpy(fx + X86_XSAVE_SW_OFFSET + 16, &size, 4);
	magic = 0;
	memcpy(fx + X86_XSAVE_SW_OFFSET, &magic, 4);
	CHECK(!x86_xsave_pkru(fx), "no magic, yet a word");
	CHECK(!x86_xsave_pkru(NULL), "no area, yet a word");
#endif
}

int main(void)
{
	test_x86_encoding();
	test_xsave_pkru();
	test_arm64_encoding();
	test_siginfo();
	test_probe();
	test_fault_is_write();
	if (failures) {
		printf("arch-unit: %d check(s) failed\n", failures);
		return 1;
	}
	printf("arch-unit: all checks passed\n");
	return 0;
}
