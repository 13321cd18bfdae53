/*
 * kernel/extra/pkey_smoke.c: a test for kernel/test.sh --extra, run inside
 * the QEMU guest.  It checks what the allocator's pkey backend needs from the
 * kernel it runs on: a key can be allocated and attached to a page, and
 * denying access through PKRU makes a read of that page fault with
 * SEGV_PKUERR while the same read succeeds with access allowed.
 *
 * Exit 0 when all of that holds, 1 when something does not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

static sigjmp_buf env;
static volatile int fault_code;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_code = si->si_code;
	siglongjmp(env, 1);
}

static unsigned int rdpkru(void)
{
	unsigned int eax, edx, ecx = 0;

	__asm__ volatile(".byte 0x0f,0x01,0xee" : "=a"(eax), "=d"(edx) : "c"(ecx));
	return eax;
}

static void wrpkru(unsigned int pkru)
{
	__asm__ volatile(".byte 0x0f,0x01,0xef" : : "a"(pkru), "c"(0), "d"(0) : "memory");
}

int main(void)
{
	struct sigaction sa;
	volatile char *p;
	int key;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("mmap: %s\n", strerror(errno));
		return 1;
	}
	p[0] = 42;
	key = (int)syscall(SYS_pkey_alloc, 0, 0);
	if (key < 0) {
		printf("pkey_alloc: %s\n", strerror(errno));
		return 1;
	}
	if (syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_WRITE, key)) {
		printf("pkey_mprotect: %s\n", strerror(errno));
		return 1;
	}
	if (p[0] != 42) {
		printf("read with access allowed: wrong value\n");
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);

	unsigned int saved = rdpkru();

	if (sigsetjmp(env, 1) == 0) {
		wrpkru(saved | (1u << (2 * key)));	/* access disable */
		(void)p[0];
		wrpkru(saved);
		printf("read with key %d denied did not fault\n", key);
		return 1;
	}
	wrpkru(saved);
	if (fault_code != SEGV_PKUERR) {
		printf("fault si_code %d, expected SEGV_PKUERR\n", fault_code);
		return 1;
	}
	printf("pkey %d: allowed read ok, denied read faulted with SEGV_PKUERR\n",
	       key);
	return 0;
}
