/* pkeys-fault.c - what the pkeys backend needs from CPU and kernel, shown
 * for real (in the QEMU guest; skipped where there are no keys).
 *
 *  1. A page tagged with a fresh key; thread B denies itself the key and
 *     its read faults with SIGSEGV, si_code SEGV_PKUERR, si_pkey = the key
 *     and si_addr = the page, while the owner thread reads and writes the
 *     page at the same time (the register is per thread).  With the key
 *     read-only, B reads and its write faults.  B restores and works.
 *  2. The owner denies itself, faults, restores: the data is intact.
 *  3. A signal handler starts with the kernel's rights (printed), and
 *     sigreturn gives the thread back its own rights; siglongjmp out of a
 *     handler does not (printed: the allocator must rewrite the register).
 *  4. pkey_mprotect with a key that is not allocated fails with EINVAL.
 *  5. A handler's key fault is answered by opening the key in the saved
 *     register of the SIGSEGV frame (arch_pkey_frame_set): the access runs
 *     again and reads, and the thread's own rights come back after.
 *
 * Only raw system calls and arch/pkeys.h.  Exit 0 pass, 1 fail, 77 when
 * the machine has no protection keys (with the reason). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "pkeys.h"

#define PAGE 4096

static int failures;
static volatile char *page;
static int key;

#define CHECK(cond, ...)                                           \
	do {                                                       \
		if (!(cond)) {                                     \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED); \
			printf("not ok: %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                       \
			printf("\n");                              \
		}                                                  \
	} while (0)

/* Per thread: where the SIGSEGV handler jumps, and what it saw. */
struct fault {
	int code;
	int key;
	void *addr;
	arch_pkey_reg_t handler_reg;
};
static __thread sigjmp_buf fault_jump;
static __thread struct fault last;
static __thread int armed;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!armed) { /* a real crash: die of it */
		signal(sig, SIG_DFL);
		return;
	}
	last.handler_reg = arch_pkey_reg_read();
	last.code = si->si_code;
	last.key = arch_pkey_fault_key(si);
	last.addr = si->si_addr;
	siglongjmp(fault_jump, 1);
}

/* try_read / try_write: 0 if the access went through, 1 if it faulted
 * (details in `last`).  The register is set back to `reg` afterwards,
 * because siglongjmp leaves the handler's rights in place. */
static int try_access(int write, arch_pkey_reg_t reg, char *value)
{
	volatile int faulted = 0;

	memset(&last, 0, sizeof(last));
	armed = 1;
	if (sigsetjmp(fault_jump, 1) == 0) {
		if (write)
			page[0] = *value;
		else
			*value = page[0];
	} else {
		faulted = 1;
	}
	armed = 0;
	if (faulted) {
		arch_pkey_reg_t after = arch_pkey_reg_read();

		if (after != reg)
			printf("# after siglongjmp out of the handler %s is %#llx "
			       "(the handler's), not %#llx: rewritten\n", ARCH_PKEY_REG_NAME,
			       (unsigned long long)after, (unsigned long long)reg);
		arch_pkey_reg_write(reg);
	}
	return faulted;
}

static void expect_key_fault(const char *who)
{
	CHECK(last.code == ARCH_SEGV_PKUERR, "%s: si_code %d, not SEGV_PKUERR", who,
	      last.code);
	CHECK(last.key == key, "%s: si_pkey %d, not %d", who, last.key, key);
	CHECK(last.addr == (void *)page, "%s: si_addr %p, not %p", who, last.addr,
	      (void *)page);
}

static pthread_barrier_t denied, owner_done;

static void *thread_b(void *arg)
{
	arch_pkey_reg_t own = arch_pkey_reg_read(), deny, ro;
	char v = 0;

	(void)arg;
	deny = arch_pkey_reg_set(own, key, ARCH_PKEY_NONE);
	ro = arch_pkey_reg_set(own, key, ARCH_PKEY_READ);
	arch_pkey_reg_write(deny);
	pthread_barrier_wait(&denied);    /* the owner works now ... */
	pthread_barrier_wait(&owner_done); /* ... and is done */

	CHECK(try_access(0, deny, &v) == 1, "B: read with the key denied did not fault");
	expect_key_fault("B read");
	printf("# B: read fault si_code=%d si_pkey=%d, handler's %s %#llx\n", last.code,
	       last.key, ARCH_PKEY_REG_NAME, (unsigned long long)last.handler_reg);
	v = 'w';
	CHECK(try_access(1, deny, &v) == 1, "B: write with the key denied did not fault");
	expect_key_fault("B write");

	arch_pkey_reg_write(ro);
	CHECK(try_access(0, ro, &v) == 0, "B: read with the key read-only faulted");
	CHECK(v == 43, "B: read %d, not the owner's 43", v);
	v = 'w';
	CHECK(try_access(1, ro, &v) == 1, "B: write with the key read-only did not fault");
	expect_key_fault("B write read-only");
	CHECK(page[0] == 43, "B: the faulting write changed the page");

	arch_pkey_reg_write(own);
	v = 44;
	CHECK(try_access(1, own, &v) == 0, "B: write after restoring faulted");
	CHECK(try_access(0, own, &v) == 0 && v == 44, "B: read after restoring");
	return NULL;
}

static void test_two_threads(void)
{
	pthread_t b;
	arch_pkey_reg_t own = arch_pkey_reg_read();
	char v = 0;

	pthread_barrier_init(&denied, NULL, 2);
	pthread_barrier_init(&owner_done, NULL, 2);
	CHECK(pthread_create(&b, NULL, thread_b, NULL) == 0, "pthread_create");
	pthread_barrier_wait(&denied);
	/* B has the key denied right now; the owner is unaffected. */
	CHECK(try_access(0, own, &v) == 0 && v == 42, "owner: read while B is denied");
	v = 43;
	CHECK(try_access(1, own, &v) == 0, "owner: write while B is denied");
	CHECK(arch_pkey_reg_read() == own, "owner's register changed by B");
	pthread_barrier_wait(&owner_done);
	pthread_join(b, NULL);
	CHECK(try_access(0, own, &v) == 0 && v == 44, "owner: read B's write");
}

static void test_owner_denies_itself(void)
{
	arch_pkey_reg_t own = arch_pkey_reg_read();
	arch_pkey_reg_t deny = arch_pkey_reg_set(own, key, ARCH_PKEY_NONE);
	char v = 0;

	page[0] = 42;
	arch_pkey_reg_write(deny);
	CHECK(try_access(0, deny, &v) == 1, "owner: read with the key denied did not fault");
	expect_key_fault("owner read");
	arch_pkey_reg_write(own);
	CHECK(try_access(0, own, &v) == 0 && v == 42, "owner: read after restoring");
}

static volatile arch_pkey_reg_t usr1_reg;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_reg = arch_pkey_reg_read();
}

static void test_sigreturn(void)
{
	arch_pkey_reg_t own = arch_pkey_reg_read();
	arch_pkey_reg_t mine = arch_pkey_reg_set(own, key, ARCH_PKEY_READ);

	signal(SIGUSR1, on_usr1);
	arch_pkey_reg_write(mine);
	raise(SIGUSR1);
	CHECK(arch_pkey_reg_read() == mine, "sigreturn left %s %#llx, not %#llx",
	      ARCH_PKEY_REG_NAME, (unsigned long long)arch_pkey_reg_read(),
	      (unsigned long long)mine);
	printf("# a signal handler started with %s %#llx (thread had %#llx); "
	       "key %d there: %s\n", ARCH_PKEY_REG_NAME, (unsigned long long)usr1_reg,
	       (unsigned long long)mine, key,
	       arch_pkey_reg_get(usr1_reg, key) == ARCH_PKEY_NONE ? "denied" : "open");
	arch_pkey_reg_write(own);
}

/* 5. A key fault in a signal handler, answered by a SIGSEGV handler that
 * opens the key in its frame's saved register (arch_pkey_frame_set) and
 * returns: the handler's access runs again and reads; after the handler
 * the thread has its own rights again (the key still denied).  This is
 * what xpfo's fault handler does for root's key (api/fault.c). */
static volatile int frame_opened, frame_read;

static void on_segv_open(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (arch_pkey_fault_key(si) != key || frame_opened ||
	    arch_pkey_frame_set(uc, key, ARCH_PKEY_RW)) {
		signal(SIGSEGV, SIG_DFL); /* the access runs again and kills */
		return;
	}
	frame_opened = 1;
}

static void on_usr2_read(int sig)
{
	(void)sig;
	frame_read = page[0];
}

static void test_frame_open(void)
{
	struct sigaction sa, old;
	arch_pkey_reg_t own = arch_pkey_reg_read();
	arch_pkey_reg_t closed = arch_pkey_reg_set(own, key, ARCH_PKEY_NONE);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv_open;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &old);
	signal(SIGUSR2, on_usr2_read);
	arch_pkey_reg_write(closed);
	raise(SIGUSR2);
	CHECK(frame_opened && frame_read == 42, "handler's read: opened %d, read %d", frame_opened,
	      frame_read);
	CHECK(arch_pkey_reg_read() == closed, "after the handler %s %#llx, not %#llx",
	      ARCH_PKEY_REG_NAME, (unsigned long long)arch_pkey_reg_read(),
	      (unsigned long long)closed);
	arch_pkey_reg_write(own);
	sigaction(SIGSEGV, &old, NULL);
}

static void test_bad_key(void)
{
	int k, used[ARCH_PKEY_KEYS > 0 ? ARCH_PKEY_KEYS : 1] = { 0 }, bad = -1;

	/* A key no one allocated: allocate all, free all, then use one. */
	while ((k = arch_pkey_sys_alloc(0, 0)) > 0 && k < ARCH_PKEY_KEYS)
		used[k] = 1;
	for (k = 1; k < ARCH_PKEY_KEYS; k++)
		if (used[k]) {
			arch_pkey_sys_free(k);
			bad = k;
		}
	CHECK(bad > 0, "no key to test with");
	if (bad <= 0)
		return;
	errno = 0;
	CHECK(arch_pkey_sys_mprotect((void *)(page + PAGE), PAGE, PROT_READ, bad) == -1 &&
		      errno == EINVAL,
	      "pkey_mprotect with unallocated key %d: errno %d, not EINVAL", bad, errno);
}

int main(void)
{
	enum arch_pkey_status st = arch_pkey_probe();
	struct sigaction sa;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (st != ARCH_PKEY_OK) {
		printf("pkeys-fault: skipped: %s\n", arch_pkey_status_str(st));
		return 77;
	}
	page = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (page == MAP_FAILED) {
		printf("pkeys-fault: mmap: %s\n", strerror(errno));
		return 99;
	}
	page[0] = 42;
	key = arch_pkey_sys_alloc(0, 0);
	if (key <= 0 || arch_pkey_sys_mprotect((void *)page, PAGE,
					       PROT_READ | PROT_WRITE, key)) {
		printf("pkeys-fault: pkey_alloc/pkey_mprotect: %s\n", strerror(errno));
		return 1;
	}
	printf("# key %d on %p, %s %#llx\n", key, (void *)page, ARCH_PKEY_REG_NAME,
	       (unsigned long long)arch_pkey_reg_read());
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);

	test_two_threads();
	test_owner_denies_itself();
	test_sigreturn();
	test_frame_open();
	CHECK(arch_pkey_sys_free(key) == 0, "pkey_free");
	test_bad_key();
	if (failures) {
		printf("pkeys-fault: %d check(s) failed\n", failures);
		return 1;
	}
	printf("pkeys-fault: all checks passed\n");
	return 0;
}
