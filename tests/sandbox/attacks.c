/* attacks.c - a locked thread (xpfo_lock_thread) tries to reach root's
 * secret every way the sandbox issue lists.  Each case runs in a forked
 * child: root puts a secret in a small block and in a page run, creates
 * compartment "parser", locks the thread into it, then attacks.  The case
 * states its exact outcome (exit code or signal, and every stderr line);
 * stdout and stderr together must never contain the secret (an attack that
 * got through writes what it read). */
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

static char *secret_small, *secret_run;
static xpfo_compartment_t *parser;

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

/* The child's set-up: secrets in root, then the lock.  Exit 90: no lock. */
static void setup(unsigned flags)
{
	secret_small = malloc(48);
	secret_run = malloc(RUN_SIZE);
	strcpy(secret_small, SECRET);
	strcpy(secret_run, SECRET);
	parser = xpfo_compartment_create("parser", 0);
	if (!parser || xpfo_lock_thread(parser, flags)) {
		fprintf(stderr, "lock failed: %s\n", strerror(errno));
		_exit(90);
	}
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

struct acase {
	const char *name;
	int (*fn)(void *);
	int want_sig;             /* 0: exit with want_exit */
	int want_exit;
	const char *lines[3];     /* every stderr line, in order; '*' matches any run;
				   * a leading '?': the line may be missing */
	int pkeys_only;
};

#define DENIED(n) "xpfo: sandbox: denied " n " from thread * in compartment \"parser\""
#define VIOLATION "xpfo: violation: read of 0x* owned by compartment \"root\" from thread * in compartment \"parser\""

static const struct acase cases[] = {
	{ "read root's block", a_direct_small, SIGSEGV, 0, { VIOLATION }, 0 },
	{ "read root's page run", a_direct_run, SIGSEGV, 0, { VIOLATION }, 0 },
	{ "mprotect", a_mprotect, 0, 0, { DENIED("mprotect") }, 0 },
	{ "mprotect of a slab", a_mprotect_small, 0, 0, { DENIED("mprotect") }, 0 },
	{ "pkey_mprotect", a_pkey_mprotect, 0, 0, { DENIED("pkey_mprotect") }, 0 },
	{ "madvise", a_madvise, 0, 0, { DENIED("madvise") }, 0 },
	{ "mremap", a_mremap, 0, 0, { DENIED("mremap") }, 0 },
	{ "mremap of code", a_mremap_code, 0, 0, { DENIED("mremap") }, 0 },
	{ "a result given back (allowed)", a_give_back, 0, 0, { NULL }, 0 },
	{ "munmap + mmap MAP_FIXED", a_munmap_mmap, 0, 0, { DENIED("munmap"), DENIED("mmap") }, 0 },
	{ "/proc/self/mem", a_proc_mem, 0, 0, { DENIED("openat") }, 0 },
	{ "process_vm_readv", a_process_vm_readv, 0, 0, { DENIED("process_vm_readv") }, 0 },
	{ "ptrace", a_ptrace, 0, 0, { DENIED("ptrace") }, 0 },
	{ "userfaultfd", a_userfaultfd, 0, 0, { DENIED("userfaultfd") }, 0 },
	{ "io_uring", a_io_uring, 0, 0, { DENIED("io_uring_setup") }, 0 },
	{ "executable mapping", a_exec_mapping, 0, 0, { DENIED("mmap") }, 0 },
	{ "xpfo_enter(xpfo_root())", a_enter_root, 0, 0, { NULL }, 0 },
	{ "xpfo_transfer of root's block", a_transfer_root_block, 0, 0, { NULL }, 0 },
	/* the remap comes when the freed run was its segment's last block */
	/* the denied purge quarantines the run and says so (alloc/policy.c) */
	{ "forged executor request", a_forged_request, 0, 0,
	  { DENIED("madvise"), "xpfo: error: cannot purge (changing owner) * pages at * (errno 1): "
	    "quarantined, never handed to another owner", "?" DENIED("mmap") }, 0 },
	{ "XPFO_LOCK_KILL", a_kill_flag, SIGSYS, 0, { DENIED("openat") }, 0 },
	{ "XPFO_LOCK_KILL, executor", a_kill_flag_executor, SIGKILL, 0, { DENIED("mprotect") }, 0 },
	{ "WRPKRU in an executable mapping", a_planted_wrpkru, 0, 0,
	  { "xpfo: warning: sandbox: lock refused: WRPKRU at offset 0x64 of [anonymous] (0x*)" }, 1 },
#ifdef SANDBOX_STATIC
	{ "a jump into xpfo's gate", a_gate_jump, SIGABRT, 0,
	  { "xpfo: fatal: sandbox: the rights register of locked thread * opens a key it may not hold (a jump into xpfo's gate?)" }, 1 },
#endif
};

static bool glob(const char *p, const char *s)
{
	if (*p == '*')
		return glob(p + 1, s) || (*s && glob(p, s + 1));
	return *p ? *p == *s && glob(p + 1, s + 1) : !*s;
}

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
		_exit(c->fn(NULL));
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
	int i = 0;
	for (; line; line = strtok_r(NULL, "\n", &save), i++) {
		const char *want = i < 3 ? c->lines[i] : NULL;
		want = want && *want == '?' ? want + 1 : want;
		CHECK(want && glob(want, line), "%s: unexpected line \"%s\"", c->name, line);
	}
	CHECK(i >= 3 || !c->lines[i] || *c->lines[i] == '?', "%s: expected line \"%s\" missing",
	      c->name, i < 3 ? c->lines[i] : "");
	printf("%s %s\n", ok_status ? "ok  " : "FAIL", c->name);
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
	tu_timeout(300);
	check_refusals();
	bool pkeys = strcmp(xpfo_backend(), "pkeys") == 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].pkeys_only && !pkeys)
			printf("skip %s (pkeys backend only: the QEMU rig)\n", cases[i].name);
		else
			check_case(&cases[i]);
	}
	tu_exit();
}
