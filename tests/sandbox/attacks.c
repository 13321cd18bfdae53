/* attacks.c - a locked thread (xpfo_lock_thread) tries to reach root's
 * secret every way the sandbox issue lists.  Each case runs in a forked
 * child: root puts a secret in a small block and in a page run, creates
 * compartment "parser", locks the thread into it, then attacks.  The case
 * states its exact outcome (exit code or signal, and every stderr line);
 * stdout and stderr together must never contain the secret (an attack that
 * got through writes what it read).
 *
 * On the pkeys backend every case but a few runs a second time with a
 * second thread alive ("two threads: ..."): it entered compartment
 * "worker" before the lock, and between the lock and the attack (and after
 * an attack that returns) it reads root's secret, allocates, and starts a
 * thread that does the same; on the mprotect backend the same set-up is
 * refused (EPERM), and on pkeys without a key for root's pages (root_key=0,
 * a re-run of this program) too (ENOSPC). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "API-KEY-7f3c9e21d"
#define RUN_SIZE 65536
#define LATE_SIZE (8u << 20)

static char *secret_small, *secret_run, *worker_block;
static char *late_secret;        /* root's, allocated after the lock */
static int late_errno;
static xpfo_compartment_t *parser;
static bool threaded;            /* the case runs with a second thread */
static int to_helper[2], from_helper[2];
static const char *self_path;    /* argv[0], for the root_key=0 re-run */

/* What an attack that got through does with what it read: loads (a
 * write(2) straight from the page would only fail with EFAULT). */
static void leak(const void *p, size_t n)
{
	char buf[64];
	for (size_t i = 0; i < n && i < sizeof buf; i++)
		buf[i] = ((const volatile char *)p)[i];
	write(2, buf, n < sizeof buf ? n : sizeof buf);
	write(2, "\n", 1);
}

static void *page_of(const void *p) { return (void *)((uintptr_t)p & ~(uintptr_t)4095); }

/* ---- the second thread ----------------------------------------------------- */

/* What a thread that is not locked does: root's secret is there, and
 * allocation works (page runs included).  0 or a failure's number. */
static int root_work(void)
{
	if (memcmp(secret_small, SECRET, sizeof SECRET) || memcmp(secret_run, SECRET, sizeof SECRET))
		return 1;
	char *v[64];
	for (int round = 0; round < 16; round++) {
		for (int i = 0; i < 64; i++) {
			size_t n = (size_t)(i % 4 == 0 ? 20000 + i * 512 : 16 + i * 40);
			if (!(v[i] = malloc(n)))
				return 2;
			memset(v[i], i, n);
		}
		for (int i = 0; i < 64; i++)
			free(v[i]);
	}
	return xpfo_owner(secret_run) == xpfo_root() ? 0 : 3;
}

static void *late_thread(void *arg)
{
	return (void *)(intptr_t)root_work();
}

/* Root's work after the lock: 2, a huge block of root's holding the
 * secret (on segments that were unused at the lock); 3, the secret
 * written into it again (root's later writes). */
static void root_late(char b)
{
	xpfo_compartment_t *prev = xpfo_enter(xpfo_root());
	if (!prev)
		abort();
	if (b == 4) { /* a block of the locked compartment given away in place */
		late_errno = xpfo_transfer(late_secret, xpfo_root()) ? errno : 0;
		xpfo_leave(prev);
		return;
	}
	if (b == 2 && !(late_secret = malloc(LATE_SIZE)))
		abort();
	strcpy(late_secret, SECRET);
	xpfo_leave(prev);
}

/* A second thread locked into "parser" (the helper starts it): on a lock
 * that succeeds, it gives a run of its own to root in place (its executor
 * records the pages as gone); root then writes the secret there. */
static void *second_locked(void *arg)
{
	if (xpfo_lock_thread(parser, 0)) {
		fprintf(stderr, "second lock: %s\n", strerror(errno));
		return arg;
	}
	char *run = malloc(RUN_SIZE);
	if (run && xpfo_transfer(run, xpfo_root()) == 0)
		late_secret = run;
	return arg;
}

static void second_lock(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, second_locked, NULL) || pthread_join(th, NULL))
		abort();
	if (late_secret)
		root_late(3);
}

/* A signal handler in a thread of root's reads root's block after the
 * lock (the thread itself read it first). */
static volatile sig_atomic_t handler_read;

static void on_usr1(int sig)
{
	handler_read = memcmp(secret_run, SECRET, sizeof SECRET) == 0 ? 1 : 2;
}

static void *signalled(void *arg)
{
	if (memcmp(secret_run, SECRET, sizeof SECRET))
		return (void *)1;
	raise(SIGUSR1);
	fprintf(stderr, "signal handler in another thread: %s\n",
		handler_read == 1 ? "read root's block" : "FAILED");
	return arg;
}

static void signal_round(void)
{
	pthread_t th;
	signal(SIGUSR1, on_usr1);
	if (pthread_create(&th, NULL, signalled, NULL) || pthread_join(th, NULL))
		abort();
}

/* Inside compartment "worker" since before the lock; answers each byte on
 * to_helper (1: a round of root's work, with one line; 2, 3, 4: root_late; 5: a
 * second thread locked into "parser"; 6: a signal handler in a new thread)
 * with a byte on from_helper. */
static void *helper(void *arg)
{
	xpfo_compartment_t *w = xpfo_compartment_create("worker", 0);
	if (!w || !xpfo_enter(w) || !(worker_block = malloc(RUN_SIZE)))
		abort();
	strcpy(worker_block, "worker's own");
	char b = 0;
	write(from_helper[1], &b, 1);
	while (read(to_helper[0], &b, 1) == 1) {
		if (b >= 5) {
			if (b == 5)
				second_lock();
			else
				signal_round();
			write(from_helper[1], &b, 1);
			continue;
		}
		if (b > 1) {
			root_late(b);
			write(from_helper[1], &b, 1);
			continue;
		}
		pthread_t th;
		void *late = (void *)1;
		int e = root_work();
		if (!e && !pthread_create(&th, NULL, late_thread, NULL))
			pthread_join(th, &late);
		if (!e && strcmp(worker_block, "worker's own"))
			e = 4;
		fprintf(stderr, e || late ? "other thread: FAILED (%d, %p)\n" : "other thread: ok\n", e,
			late);
		write(from_helper[1], &b, 1);
	}
	return arg;
}

/* From the locked thread (read and write are allowed): one helper round
 * (what: 1, or root_late's 2 or 3). */
static void helper_ask(char what)
{
	char b = what;
	if (write(to_helper[1], &b, 1) != 1 || read(from_helper[0], &b, 1) != 1)
		_exit(91);
}

static void helper_round(void) { helper_ask(1); }

static void helper_start(void)
{
	pthread_t th;
	char b;
	if (pipe(to_helper) || pipe(from_helper) || pthread_create(&th, NULL, helper, NULL) ||
	    read(from_helper[0], &b, 1) != 1)
		_exit(92);
}

/* The child's set-up: secrets in root, then the lock.  Exit 90: no lock. */
static void setup(unsigned flags)
{
	secret_small = malloc(48);
	secret_run = malloc(RUN_SIZE);
	strcpy(secret_small, SECRET);
	strcpy(secret_run, SECRET);
	if (threaded)
		helper_start();
	parser = xpfo_compartment_create("parser", 0);
	if (!parser || xpfo_lock_thread(parser, flags)) {
		fprintf(stderr, "lock failed: %s\n", strerror(errno));
		_exit(90);
	}
	if (threaded)
		helper_round();
}

/* 0 when the call failed with EPERM, else leak the secret and return 1. */
static int denied(long r, const void *p)
{
	if (r == -1 && errno == EPERM)
		return 0;
	if (r != -1)
		leak(p, sizeof SECRET);
	return 1;
}

static int a_direct_small(void *arg)
{
	setup(0);
	leak(secret_small, sizeof SECRET);
	return 1;
}

static int a_direct_run(void *arg)
{
	setup(0);
	leak(secret_run, sizeof SECRET);
	return 1;
}

static int a_mprotect(void *arg)
{
	setup(0);
	return denied(mprotect(page_of(secret_run), 4096, PROT_READ), secret_run);
}

static int a_mprotect_small(void *arg)
{
	setup(0);
	return denied(mprotect(page_of(secret_small), 4096, PROT_READ | PROT_WRITE), secret_small);
}

static int a_pkey_mprotect(void *arg)
{
	setup(0);
	return denied(syscall(SYS_pkey_mprotect, page_of(secret_run), 4096, PROT_READ, 0), secret_run);
}

static int a_madvise(void *arg)
{
	setup(0);
	return denied(madvise(page_of(secret_run), 4096, MADV_DONTNEED), secret_run) ||
	       denied(madvise(page_of(secret_small), 4096, MADV_DONTNEED), secret_small);
}

static int a_mremap(void *arg)
{
	setup(0);
	void *r = mremap(page_of(secret_run), 4096, 4096, MREMAP_MAYMOVE);
	return denied(r == MAP_FAILED ? -1 : 0, r);
}

/* Move (or grow) executable code: bytes the lock's scan never saw. */
static int a_mremap_code(void *arg)
{
	setup(0);
	void *code = page_of((const void *)(uintptr_t)&getpid);
	void *r = mremap(code, 4096, 8192, MREMAP_MAYMOVE);
	return denied(r == MAP_FAILED ? -1 : 0, secret_run);
}

/* Allowed: results go back to root by transfer, any size from 4096 bytes. */
static int a_give_back(void *arg)
{
	setup(0);
	char *res = malloc(12288);
	memset(res, 'r', 12288);
	if (xpfo_transfer(res, xpfo_root()) != 0)
		return 2;
	return xpfo_owner(res) != xpfo_root();
}

static int a_munmap_mmap(void *arg)
{
	setup(0);
	void *pg = page_of(secret_run);
	if (denied(munmap(pg, 4096), pg))
		return 1;
	void *m = mmap(pg, 4096, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return denied(m == MAP_FAILED ? -1 : 0, secret_run);
}

static int a_proc_mem(void *arg)
{
	setup(0);
	int fd = open("/proc/self/mem", O_RDONLY);
	char buf[sizeof SECRET];
	if (fd >= 0 && pread(fd, buf, sizeof buf, (off_t)(uintptr_t)secret_run) > 0)
		leak(buf, sizeof buf);
	return denied(fd, buf);
}

static int a_process_vm_readv(void *arg)
{
	setup(0);
	char buf[sizeof SECRET];
	struct iovec l = { buf, sizeof buf }, r = { secret_run, sizeof buf };
	return denied(process_vm_readv(getpid(), &l, 1, &r, 1, 0), buf);
}

static int a_ptrace(void *arg)
{
	setup(0);
	return denied(ptrace(PTRACE_TRACEME, 0, 0, 0), secret_run);
}

static int a_userfaultfd(void *arg)
{
	setup(0);
	return denied(syscall(SYS_userfaultfd, O_CLOEXEC), secret_run);
}

static int a_io_uring(void *arg)
{
	setup(0);
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	return denied(syscall(SYS_io_uring_setup, 8, &p), secret_run);
}

static int a_exec_mapping(void *arg)
{
	setup(0);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return denied(m == MAP_FAILED ? -1 : 0, secret_run);
}

static int a_enter_root(void *arg)
{
	setup(0);
	xpfo_compartment_t *r = xpfo_enter(xpfo_root());
	return r || errno != EPERM;
}

static int a_transfer_root_block(void *arg)
{
	setup(0);
	if (xpfo_transfer(secret_run, parser) == 0) {
		leak(secret_run, sizeof SECRET);
		return 1;
	}
	return errno != EINVAL;
}

/* The attacker's arbitrary write makes the allocator's tables say root's
 * run is the compartment's, then uses the allocator as usual: the run is
 * freed and allocated again, and the grant that would open it goes to the
 * executor, which holds its own record. */
void xpfo__test_forge_owner(void *p);
static int a_forged_request(void *arg)
{
	setup(0);
	xpfo__test_forge_owner(secret_run);
	free(secret_run);
	xpfo_flush();
	char *again = malloc(RUN_SIZE);
	if (again == secret_run) {
		leak(again, sizeof SECRET);
		return 1;
	}
	return 0;
}

/* Another compartment's block while its thread is inside (threads only). */
static int a_worker_block(void *arg)
{
	setup(0);
	leak(worker_block, 12);
	return 1;
}

#ifdef __x86_64__
/* The locked thread's own key: the first one its rights register opens
 * (RDPKRU; key 0 aside, only the compartment's is open outside xpfo). */
static int own_key(void)
{
	unsigned eax, edx;
	__asm__ volatile(".byte 0x0f, 0x01, 0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	for (int k = 1; k < 16; k++)
		if (!(eax >> (2 * k) & 3))
			return k;
	return -1;
}

/* The executor's record is the state at the lock: root's block allocated
 * since, on segments that were unused then, must not be given to the
 * locked compartment's key. */
static int a_late_root_pkey(void *arg)
{
	setup(0);
	helper_ask(2);
	int k = own_key();
	if (k < 0)
		return 94;
	return denied(syscall(SYS_pkey_mprotect, page_of(late_secret), 4096, PROT_READ | PROT_WRITE, k),
		      late_secret);
}

/* ... nor replaced by a mapping of key 0, where root's later writes land. */
static int a_late_root_mmap(void *arg)
{
	setup(0);
	helper_ask(2);
	void *m = mmap(page_of(late_secret), 4096, PROT_READ | PROT_WRITE,
		       MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return denied(-1, late_secret);
	helper_ask(3);
	leak(late_secret, sizeof SECRET);
	return 1;
}
#endif

/* Another thread gives a block of the locked compartment to root in place:
 * refused (EPERM), else the executor's record would still call its pages
 * the compartment's, and the locked thread could reopen root's data. */
static int a_transfer_away(void *arg)
{
	setup(0);
	late_secret = malloc(RUN_SIZE);
	helper_ask(4);
	return late_errno != EPERM;
}

#ifdef __x86_64__
/* A second thread locked into the same compartment would have an executor
 * of its own: the run it gives to root would stay the compartment's in the
 * first one's record, which would let the first thread put it on its key.
 * The second lock is refused (EBUSY). */
static int a_second_lock(void *arg)
{
	setup(0);
	helper_ask(5);
	if (!late_secret)
		return 0;
	int k = own_key();
	if (k < 0)
		return 94;
	if (syscall(SYS_pkey_mprotect, page_of(late_secret), 4096, PROT_READ | PROT_WRITE, k) == 0)
		leak(late_secret, sizeof SECRET);
	return 1;
}
#endif

/* pkeys: after the lock root's pages are on root_key, and Linux starts
 * every signal handler with the default rights (key 0 only): a handler in
 * another thread that reads root's heap faults, and xpfo's fault handler
 * opens root_key in the interrupted handler's rights (the thread is not
 * locked), so the read goes on (docs/security.md). */
static int a_signal_handler(void *arg)
{
	setup(0);
	helper_ask(6);
	return 0;
}

/* The locked thread's own handler reads root's block: that thread is in
 * the gate's table, so its fault is reported and ends the process, on
 * both backends (on mprotect root is closed for the process). */
static void on_usr2(int sig)
{
	leak(secret_run, sizeof SECRET);
}

static int a_locked_handler(void *arg)
{
	setup(0);
	signal(SIGUSR2, on_usr2);
	raise(SIGUSR2);
	return 1;
}

/* The reservation used up (lock_segments=2, a re-run of this program):
 * the allocation fails with ENOMEM and one warning; a freed segment goes
 * back to it. */
static int a_reservation_out(void *arg)
{
	const char *o = getenv("XPFO_OPTIONS");
	char buf[256];
	snprintf(buf, sizeof buf, "%s%slock_segments=2", o ? o : "", o ? "," : "");
	setenv("XPFO_OPTIONS", buf, 1);
	execl(self_path, self_path, "--small-reservation", (char *)NULL);
	return 93;
}

static int small_reservation_main(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (xpfo_lock_thread(c, 0))
		return 90;
	void *v[8];
	int n = 0;
	while (n < 8 && (v[n] = malloc(3u << 20)))
		n++;
	if (n == 8 || n > 2 || errno != ENOMEM)
		return 1;
	free(v[0]);
	xpfo_flush();
	void *again = malloc(3u << 20);
	return again ? 0 : 2;
}

/* pkeys without a key for root's pages (root_key=0): with a second thread
 * alive the lock is refused (ENOSPC and its line), nothing half-open. */
static int a_no_root_key(void *arg)
{
	setenv("XPFO_OPTIONS", "backend=pkeys,root_key=0", 1);
	execl(self_path, self_path, "--no-root-key", (char *)NULL);
	return 93;
}

static int no_root_key_main(void)
{
	secret_run = malloc(RUN_SIZE);
	strcpy(secret_run, SECRET);
	secret_small = malloc(48);
	strcpy(secret_small, SECRET);
	helper_start();
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	int r = xpfo_lock_thread(c, 0);
	if (r != -1 || errno != ENOSPC)
		return 1;
	helper_round();
	return memcmp(secret_run, SECRET, sizeof SECRET) ? 2 : 0; /* still root's, open */
}

/* pkeys: an executable mapping holding a WRPKRU: the lock is refused. */
static int a_planted_wrpkru(void *arg)
{
	unsigned char *x = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(x, 0xc3, 4096);
	memcpy(x + 100, "\x0f\x01\xef", 3);
	mprotect(x, 4096, PROT_READ | PROT_EXEC);
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	return !(xpfo_lock_thread(c, 0) == -1 && errno == EPERM);
}

/* pkeys: glibc's pkey_set writes any rights its caller passes; after the
 * lock it traps (SIGILL), before opening a key (src/gadgets.c). */
static int a_pkey_set(void *arg)
{
	setup(0);
	for (int k = 1; k < 16; k++)
		pkey_set(k, 0);
	leak(secret_run, sizeof SECRET);
	return 1;
}

#ifdef SANDBOX_STATIC
/* pkeys, static build: a ROP chain jumps into xpfo's gate with a register
 * value that opens every key; the gate's check ends the process. */
extern const char __start_xpfo_gate[];
static int a_gate_jump(void *arg)
{
	setup(0);
	((void (*)(uint64_t))(uintptr_t)__start_xpfo_gate)(0);
	leak(secret_run, sizeof SECRET);
	return 1;
}
#endif

static int a_kill_flag(void *arg)
{
	setup(XPFO_LOCK_KILL);
	int fd = open("/proc/self/mem", O_RDONLY);
	return denied(fd, secret_run) + 10;
}

static int a_kill_flag_executor(void *arg)
{
	setup(XPFO_LOCK_KILL);
	return denied(mprotect(page_of(secret_run), 4096, PROT_READ), secret_run) + 10;
}

/* ---- the runner ------------------------------------------------------------ */

#define NLINES 5
struct acase {
	const char *name;
	int (*fn)(void *);
	int want_sig;             /* 0: exit with want_exit */
	int want_exit;
	const char *lines[NLINES]; /* every stderr line, in order; '*' matches any run;
				    * a leading '?': the line may be missing */
	int pkeys_only;
	int once;                 /* not again with a second thread */
};

#define DENIED(n) "xpfo: sandbox: denied " n " from thread * in compartment \"parser\""
#define VIOLATION "xpfo: violation: read of 0x* owned by compartment \"root\" from thread * in compartment \"parser\""

static const struct acase cases[] = {
	{ "read root's block", a_direct_small, SIGSEGV, 0, { VIOLATION }, 0, 0 },
	{ "read root's page run", a_direct_run, SIGSEGV, 0, { VIOLATION }, 0, 0 },
	{ "mprotect", a_mprotect, 0, 0, { DENIED("mprotect") }, 0, 0 },
	{ "mprotect of a slab", a_mprotect_small, 0, 0, { DENIED("mprotect") }, 0, 0 },
	{ "pkey_mprotect", a_pkey_mprotect, 0, 0, { DENIED("pkey_mprotect") }, 0, 0 },
	{ "madvise", a_madvise, 0, 0, { DENIED("madvise") }, 0, 0 },
	{ "mremap", a_mremap, 0, 0, { DENIED("mremap") }, 0, 0 },
	{ "mremap of code", a_mremap_code, 0, 0, { DENIED("mremap") }, 0, 0 },
	{ "a result given back (allowed)", a_give_back, 0, 0, { NULL }, 0, 0 },
	{ "munmap + mmap MAP_FIXED", a_munmap_mmap, 0, 0, { DENIED("munmap"), DENIED("mmap") }, 0, 0 },
	{ "/proc/self/mem", a_proc_mem, 0, 0, { DENIED("openat") }, 0, 0 },
	{ "process_vm_readv", a_process_vm_readv, 0, 0, { DENIED("process_vm_readv") }, 0, 0 },
	{ "ptrace", a_ptrace, 0, 0, { DENIED("ptrace") }, 0, 0 },
	{ "userfaultfd", a_userfaultfd, 0, 0, { DENIED("userfaultfd") }, 0, 0 },
	{ "io_uring", a_io_uring, 0, 0, { DENIED("io_uring_setup") }, 0, 0 },
	{ "executable mapping", a_exec_mapping, 0, 0, { DENIED("mmap") }, 0, 0 },
	{ "xpfo_enter(xpfo_root())", a_enter_root, 0, 0, { NULL }, 0, 0 },
	{ "xpfo_transfer of root's block", a_transfer_root_block, 0, 0, { NULL }, 0, 0 },
	/* the remap comes when the freed run was its segment's last block */
	/* the denied purge quarantines the run and says so (alloc/policy.c) */
	{ "forged executor request", a_forged_request, 0, 0,
	  { DENIED("madvise"), "xpfo: error: cannot purge (changing owner) * pages at * (errno 1): "
	    "quarantined, never handed to another owner", "?" DENIED("mmap") }, 0, 0 },
	{ "a signal handler in the locked thread reads root's block", a_locked_handler, SIGSEGV, 0,
	  { VIOLATION }, 0, 0 },
	{ "XPFO_LOCK_KILL", a_kill_flag, SIGKILL, 0, { DENIED("openat") }, 0, 1 },
	{ "the reserved segments used up (lock_segments=2)", a_reservation_out, 0, 0,
	  { "xpfo: warning: sandbox: compartment \"parser\" has used every segment reserved at its lock (lock_segments=2): its allocations fail (ENOMEM)" }, 0, 1 },
	{ "XPFO_LOCK_KILL, executor", a_kill_flag_executor, SIGKILL, 0, { DENIED("mprotect") }, 0, 1 },
	{ "WRPKRU in an executable mapping", a_planted_wrpkru, 0, 0,
	  { "xpfo: warning: sandbox: lock refused: WRPKRU at offset 0x64 of [anonymous] (0x*)" }, 1, 1 },
	{ "glibc's pkey_set opening every key", a_pkey_set, SIGILL, 0, { NULL }, 1, 1 },
#ifdef SANDBOX_STATIC
	{ "a jump into xpfo's gate", a_gate_jump, SIGABRT, 0,
	  { "xpfo: fatal: sandbox: the rights register of locked thread * opens a key it may not hold (a jump into xpfo's gate?)" }, 1, 1 },
#endif
};

/* Only with a second thread (pkeys). */
static const struct acase thread_cases[] = {
	{ "read another compartment's block, its thread inside", a_worker_block, SIGSEGV, 0,
	  { "other thread: ok", "xpfo: violation: read of 0x* owned by compartment \"worker\" from thread * in compartment \"parser\"" }, 1, 0 },
	{ "no key for root's pages (root_key=0)", a_no_root_key, 0, 0,
	  { "xpfo: warning: sandbox: lock refused: no protection key for root's pages and other threads are alive (root_key=0, or no key was free at start)",
	    "other thread: ok" }, 1, 0 },
	{ "another thread gives the locked compartment's block away", a_transfer_away, 0, 0,
	  { "other thread: ok", "other thread: ok" }, 1, 0 },
#ifdef __x86_64__
	{ "pkey_mprotect of root's block allocated after the lock", a_late_root_pkey, 0, 0,
	  { "other thread: ok", DENIED("pkey_mprotect"), "other thread: ok" }, 1, 0 },
	{ "mmap MAP_FIXED over root's block allocated after the lock", a_late_root_mmap, 0, 0,
	  { "other thread: ok", DENIED("mmap"), "other thread: ok" }, 1, 0 },
	{ "a signal handler in another thread reads root's block", a_signal_handler, 0, 0,
	  { "other thread: ok", "signal handler in another thread: read root's block",
	    "other thread: ok" }, 1, 0 },
	{ "a second thread locked into the same compartment", a_second_lock, 0, 0,
	  { "other thread: ok",
	    "xpfo: warning: sandbox: lock refused: compartment \"parser\" already has a live locked thread (one executor per compartment)",
	    "second lock: Device or resource busy", "other thread: ok" }, 1, 0 },
#endif
};

static bool glob(const char *p, const char *s)
{
	if (*p == '*')
		return glob(p + 1, s) || (*s && glob(p, s + 1));
	return *p ? *p == *s && glob(p + 1, s + 1) : !*s;
}

static int case_body(const struct acase *c);
static int a_no_root_key(void *arg);

/* Fork, stdout and stderr into one pipe, the case, its outcome. */
static int run(const struct acase *c, char *out, size_t n)
{
	int p[2];
	if (pipe(p))
		tu_hard_error("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		tu_hard_error("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);
		alarm(20);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		_exit(case_body(c));
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while ((r = read(p[0], out + got, n - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));
	return st;
}

static void check_case(const struct acase *c)
{
	static char out[16384];
	int st = run(c, out, sizeof out);
	bool ok_status = c->want_sig ? WIFSIGNALED(st) && WTERMSIG(st) == c->want_sig
				     : WIFEXITED(st) && WEXITSTATUS(st) == c->want_exit;
	CHECK(ok_status, "%s: ended with %s", c->name, tu_status_str(st));
	CHECK(!memmem(out, strlen(out), SECRET, strlen(SECRET)), "%s: the secret got out", c->name);
	char *save, *line = strtok_r(out, "\n", &save);
	int i = 0; /* the wanted line; an optional one that does not match is passed */
	for (; line; line = strtok_r(NULL, "\n", &save), i++) {
		while (i < NLINES && c->lines[i] && *c->lines[i] == '?' && !glob(c->lines[i] + 1, line))
			i++;
		const char *want = i < NLINES ? c->lines[i] : NULL;
		want = want && *want == '?' ? want + 1 : want;
		CHECK(want && glob(want, line), "%s: unexpected line \"%s\"", c->name, line);
	}
	while (i < NLINES && c->lines[i] && *c->lines[i] == '?')
		i++;
	CHECK(i >= NLINES || !c->lines[i], "%s: expected line \"%s\" missing", c->name,
	      i < NLINES ? c->lines[i] : "");
	printf("%s %s%s\n", ok_status ? "ok  " : "FAIL", threaded ? "two threads: " : "", c->name);
}

/* With a second thread, a case that returns gives the helper one more
 * round, but for the forged request: its free of root's run quarantined
 * that run (the executor refused the purge), so root lost its secret
 * there (denial of service, out of scope). */
static bool round_after(const struct acase *c)
{
	return !c->want_sig && c->fn != a_no_root_key && c->fn != a_forged_request &&
	       c->fn != a_reservation_out;
}

/* c again with a second thread: pkeys, the helper's line before the attack
 * (and after it when the case ends by itself); mprotect, the lock refused. */
static void check_threaded(const struct acase *c, bool pkeys)
{
	struct acase t = *c;
	memset(t.lines, 0, sizeof t.lines);
	if (!pkeys) {
		t.want_sig = 0;
		t.want_exit = 90;
		t.lines[0] = "lock failed: Operation not permitted";
		check_case(&t);
		return;
	}
	t.lines[0] = "other thread: ok";
	int i = 1;
	for (int k = 0; k < NLINES - 2 && c->lines[k]; k++)
		t.lines[i++] = c->lines[k];
	if (round_after(c))
		t.lines[i] = "other thread: ok";
	check_case(&t);
}

/* In the child: the case, then (threads, a case that returns) one more
 * helper round. */
static int case_body(const struct acase *c)
{
	int r = c->fn(NULL);
	if (threaded && round_after(c))
		helper_round();
	return r;
}

/* The lock's own refusals. */
static void *sleeper(void *arg)
{
	pause();
	return arg;
}

static void check_refusals(void)
{
	errno = 0;
	CHECK(xpfo_lock_thread(NULL, 0) == -1 && errno == EINVAL, "NULL handle: errno %d", errno);
	CHECK(xpfo_lock_thread(xpfo_root(), 0) == -1 && errno == EINVAL, "root: errno %d", errno);
	xpfo_compartment_t *c = xpfo_compartment_create("x", 0);
	CHECK(xpfo_lock_thread(c, 0x10) == -1 && errno == EINVAL, "bad flags: errno %d", errno);
	if (strcmp(xpfo_backend(), "mprotect") == 0) {
		pthread_t th;
		pthread_create(&th, NULL, sleeper, NULL);
		CHECK(xpfo_lock_thread(c, 0) == -1 && errno == EPERM,
		      "mprotect backend, two threads: errno %d", errno);
		pthread_cancel(th);
		pthread_join(th, NULL);
	}
}

int main(int argc, char **argv)
{
	tu_prog = "sandbox/attacks";
	self_path = argv[0];
	if (argc > 1 && strcmp(argv[1], "--no-root-key") == 0)
		return no_root_key_main();
	if (argc > 1 && strcmp(argv[1], "--small-reservation") == 0)
		return small_reservation_main();
	tu_timeout(600);
	check_refusals();
	bool pkeys = strcmp(xpfo_backend(), "pkeys") == 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].pkeys_only && !pkeys)
			printf("skip %s (pkeys backend only: the QEMU rig)\n", cases[i].name);
		else
			check_case(&cases[i]);
	}
	threaded = true;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (!cases[i].once && (pkeys || i == 0))
			check_threaded(&cases[i], pkeys);
	for (size_t i = 0; pkeys && i < sizeof thread_cases / sizeof thread_cases[0]; i++)
		check_case(&thread_cases[i]);
	tu_exit();
}
