/* handlers.c - a locked thread's own signal handlers and mask change
 * nothing: under XPFO_LOCK_KILL a denied call or a violation ends the
 * process, and without it every denied call is refused, counted
 * (sandbox_denied) and reported once per name.
 *
 * The attacker (the locked thread) installs handlers for SIGSYS, SIGSEGV
 * and SIGBUS (rt_sigaction is allowed for other signals), or blocks them
 * (rt_sigprocmask is allowed), then makes 15 denied calls and touches
 * root's block.  Root's secret is in a small block. */
#include "cases.h"

#include <fcntl.h>
#include <sys/syscall.h>

static char *secret;
static volatile sig_atomic_t caught;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	caught++;
}

static void setup(unsigned flags)
{
	secret = malloc(48);
	if (!secret)
		_exit(97);
	strcpy(secret, SECRET);
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (!c || xpfo_lock_thread(c, flags)) {
		fprintf(stderr, "lock failed: %s\n", strerror(errno));
		_exit(90);
	}
}

static int install(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	return sigaction(sig, &sa, NULL);
}

static void block(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	if (sigprocmask(SIG_BLOCK, &s, NULL))
		_exit(95);
}

/* 15 denied calls of 5 kinds (3 each); how many failed with EPERM. */
static int denied_calls(void)
{
	int eperm = 0;
	for (int i = 0; i < 3; i++) {
		eperm += open("/proc/self/mem", O_RDONLY) == -1 && errno == EPERM;
		eperm += syscall(SYS_ptrace, 0, 0, 0, 0) == -1 && errno == EPERM;
		eperm += syscall(SYS_process_vm_readv, getpid(), 0, 0, 0, 0, 0) == -1 && errno == EPERM;
		eperm += dup(1) == -1 && errno == EPERM;
		eperm += syscall(SYS_userfaultfd, 0) == -1 && errno == EPERM;
	}
	return eperm;
}

static uint64_t denied_count(void)
{
	struct xpfo_stats s;
	memset(&s, 0, sizeof s);
	if (xpfo_stats_get(&s, sizeof s))
		_exit(94);
	return s.sandbox_denied;
}

#define KILL_ON(sig, name)                                                       \
	static int c_kill_##name(void *arg)                                      \
	{                                                                        \
		setup(XPFO_LOCK_KILL);                                           \
		if (install(sig) == 0)                                           \
			printf("handler installed\n");                           \
		denied_calls();                                                  \
		leak(secret, sizeof SECRET);                                     \
		return 1;                                                        \
	}
KILL_ON(SIGSYS, sigsys)
KILL_ON(SIGSEGV, sigsegv)
KILL_ON(SIGBUS, sigbus)

/* XPFO_LOCK_KILL, SIGSYS blocked: the denied call still ends it. */
static int c_kill_blocked_sigsys(void *arg)
{
	setup(XPFO_LOCK_KILL);
	block(SIGSYS);
	printf("denied with EPERM: %d\n", denied_calls());
	return 1;
}

/* XPFO_LOCK_KILL, SIGSEGV blocked: the read of root's block still ends it
 * (the kernel forces a blocked fault signal to its default action; the
 * violation line is not written then). */
static int c_kill_blocked_sigsegv(void *arg)
{
	setup(XPFO_LOCK_KILL);
	block(SIGSEGV);
	for (int i = 0; i < 5; i++)
		leak(secret, sizeof SECRET);
	return 1;
}

/* Without XPFO_LOCK_KILL: the handler is refused, every call after it is
 * refused and counted, one line per name, then the read of root's block
 * ends the process with the violation line. */
static int c_count_sigsys(void *arg)
{
	setup(0);
	int r = install(SIGSYS) == 0;
	int s = install(SIGSEGV) == 0;
	int eperm = denied_calls();
	printf("handlers installed: %d, denied with EPERM: %d, sandbox_denied: %u, caught: %d\n", r + s,
	       eperm, (unsigned)denied_count(), (int)caught);
	leak(secret, sizeof SECRET);
	return 1;
}

/* Without XPFO_LOCK_KILL, SIGSYS blocked: the same. */
static int c_count_blocked(void *arg)
{
	setup(0);
	block(SIGSYS);
	int eperm = denied_calls();
	printf("denied with EPERM: %d, sandbox_denied: %u\n", eperm, (unsigned)denied_count());
	return 0;
}

/* Still allowed: a handler for another signal, and asking what SIGSEGV's
 * action is. */
static int c_allowed(void *arg)
{
	setup(0);
	struct sigaction old;
	int q = sigaction(SIGSEGV, NULL, &old);
	int u = install(SIGUSR1);
	raise(SIGUSR1);
	printf("query %d, SIGUSR1 handler %d, caught %d\n", q, u, (int)caught);
	return 0;
}

/* The signal number with high bits set, which the kernel truncates to
 * SIGSEGV, and every signal the filter allows or refuses one by one: the
 * rules are aligned blocks of signal numbers (alloc/sandbox.c), so each
 * number on either side of a block's edge is tried.  Prints how many
 * installs were refused (EPERM) and whether the truncated one was. */
static int c_numbers(void *arg)
{
	setup(0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	long high = syscall(SYS_rt_sigaction, (1L << 32) | SIGSEGV, &sa, NULL, 8);
	int high_refused = high == -1 && errno == EPERM;
	int refused = 0, wrong = 0;
	for (int sig = 1; sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue; /* the kernel's EINVAL */
		long r = syscall(SYS_rt_sigaction, sig, &sa, NULL, 8);
		int kept = sig == SIGSYS || sig == SIGSEGV || sig == SIGBUS;
		refused += r == -1 && errno == EPERM;
		wrong += kept ? !(r == -1 && errno == EPERM) : r != 0;
	}
	printf("high bits refused %d, %d refused, %d wrong\n", high_refused, refused, wrong);
	return 0;
}

#define DENIED_ALL                                                                       \
	DENIED("openat"), DENIED("ptrace"), DENIED("process_vm_readv"), DENIED("dup"),   \
		DENIED("userfaultfd")

static const struct scase cases[] = {
	{ "XPFO_LOCK_KILL: a SIGSYS handler", c_kill_sigsys, SIGKILL, 0, { DENIED("rt_sigaction") }, 0 },
	{ "XPFO_LOCK_KILL: a SIGSEGV handler", c_kill_sigsegv, SIGKILL, 0, { DENIED("rt_sigaction") }, 0 },
	{ "XPFO_LOCK_KILL: a SIGBUS handler", c_kill_sigbus, SIGKILL, 0, { DENIED("rt_sigaction") }, 0 },
	{ "XPFO_LOCK_KILL: SIGSYS blocked", c_kill_blocked_sigsys, SIGKILL, 0, { DENIED("openat") }, 0 },
	{ "XPFO_LOCK_KILL: SIGSEGV blocked, root's block read", c_kill_blocked_sigsegv, SIGSEGV, 0,
	  { NULL }, 0 },
	{ "own SIGSYS and SIGSEGV handlers: refused, 15 calls counted", c_count_sigsys, SIGSEGV, 0,
	  { DENIED("rt_sigaction"), DENIED_ALL,
	    "handlers installed: 0, denied with EPERM: 15, sandbox_denied: 17, caught: 0", VIOLATION },
	  0 },
	{ "SIGSYS blocked: 15 calls refused and counted", c_count_blocked, 0, 0,
	  { DENIED_ALL, "denied with EPERM: 15, sandbox_denied: 15" }, 0 },
	{ "every signal number, and one with high bits set", c_numbers, 0, 0,
	  { DENIED("rt_sigaction"), "high bits refused 1, 3 refused, 0 wrong" }, 0 },
	{ "another signal's handler and a query (allowed)", c_allowed, 0, 0,
	  { "query 0, SIGUSR1 handler 0, caught 1" }, 0 },
};

int main(int argc, char **argv)
{
	tu_prog = "sandbox/handlers";
	tu_timeout(600);
	sc_check_all(cases, sizeof cases / sizeof cases[0]);
	tu_exit();
}
