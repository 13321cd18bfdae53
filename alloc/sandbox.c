/* sandbox.c - xpfo_lock_thread: confine a thread to one compartment.
 *
 * The locked thread enters its compartment (root closed, as STRICT), a
 * seccomp filter limits its system calls, and the memory calls the
 * allocator still needs (grants of fresh pages, revocations, purges) go to
 * an executor the thread cannot command: a process forked before the
 * filter, which receives them as seccomp user notifications, checks each
 * against its own record of the pages (a copy of the ownership tables taken
 * at the lock, which the locked thread cannot write: another address space)
 * and lets the call proceed in the locked thread (CONTINUE: the arguments
 * are registers, no pointer to re-read) or fails it.  docs/security.md says
 * why; alloc/executor.c holds the executor, api/compartment.c the public
 * function.
 *
 * Root out of reach: on the mprotect backend (and on pkeys without a key
 * for root, root_key=0) the compartment becomes STRICT, which closes root's
 * pages for the process, so the process must have this one thread.  On
 * pkeys with key_root (alloc/pkeys.c) the first lock moves root's pages to
 * key_root (comp_plain_rekey) and the locked thread's rights close it: the
 * other threads, those started later included, keep root, and the locked
 * thread cannot reopen it (its register is written only by xpfo's gate,
 * which checks it against the gate's table, gate.c; the scan refuses other
 * writers).
 */
#include "alloc.h"
#include "owner.h"
#include "pkeys.h"
#include "sandbox.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#ifdef HAVE_SECCOMP_H
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#endif
#if defined(HAVE_SECCOMP_H) && defined(PIC)
#include <dlfcn.h>
#endif

struct sandbox_shared *sandbox_shared;

/* pkeys: from now on pages open to every thread carry key_root (key_plain,
 * alloc.h), then those that carried 0 move to it.  The gate's page holds the
 * choice: read-only, so a locked thread's stray write cannot turn root's
 * new pages back to key 0.  0 or an errno (the lock is refused). */
static int gate_plain_rekey(void)
{
	static bool moved; /* build_lock (sandbox_lock) */
	if (moved)
		return 0;
	if (sandbox_gate.g.plain_key != key_root) {
		int e = gate_protect(OS_RW);
		if (e)
			return e;
		__atomic_store_n(&sandbox_gate.g.plain_key, key_root, __ATOMIC_RELEASE);
		e = gate_protect(OS_READ);
		if (e)
			return e;
	}
	int e = comp_plain_rekey(key_root);
	moved = !e;
	return e;
}

/* pkeys: the keys c's locked thread may open: 0, c's, and the allocator's
 * while inside xpfo when the metadata is sealed (never key_root). */
static int gate_add(struct xpfo_compartment *c)
{
	if (!pkeys_on)
		return 0;
	if (sandbox_gate.g.n >= GATE_MAX)
		return EAGAIN;
	uint64_t allowed = 1;
	if (c->key > 0)
		allowed |= (uint64_t)1 << c->key;
	if (seal_meta)
		allowed |= (uint64_t)1 << key_alloc;
	int e = gate_protect(OS_RW);
	if (e)
		return e;
	sandbox_gate.g.e[sandbox_gate.g.n] = (struct sandbox_gate_entry){
		(uintptr_t)&tl_sandbox_locked, os_gettid(), allowed, c->id };
	__atomic_store_n(&sandbox_gate.g.n, sandbox_gate.g.n + 1, __ATOMIC_RELEASE);
	return gate_protect(OS_READ);
}

/* A live thread of this process is locked into c (build_lock).  Each lock
 * has an executor of its own, whose record would still call c's a run that
 * another thread locked into c gave away: one locked thread per
 * compartment.  The gate's table is the record (read-only to locked
 * threads); an entry whose thread is gone (ESRCH; a fork child's inherited
 * entries too) does not count: its executor gets no more requests.  A
 * reused tid counts (refused: fail closed).  On mprotect the lock needs a
 * single thread, which is then the only one that can ever be locked. */
static bool gate_busy(const struct xpfo_compartment *c)
{
	for (unsigned i = 0; i < sandbox_gate.g.n && i < GATE_MAX; i++)
		if (sandbox_gate.g.e[i].comp == c->id && os_thread_alive(sandbox_gate.g.e[i].tid))
			return true;
	return false;
}

/* ---- reports (the SIGSYS handler and the executor) ---------------------- */

const char *sandbox_syscall_name(long nr, char *buf, size_t n)
{
#define N(x) case SYS_##x: return #x;
	switch (nr) {
	N(mprotect) N(pkey_mprotect) N(madvise) N(munmap) N(mremap) N(mmap) N(pkey_alloc)
	N(pkey_free) N(open) N(openat) N(openat2) N(process_vm_readv) N(process_vm_writev)
	N(ptrace) N(process_madvise) N(pidfd_getfd) N(pidfd_open) N(userfaultfd)
	N(io_uring_setup) N(io_uring_enter) N(io_uring_register) N(memfd_create)
	N(memfd_secret) N(fork) N(vfork) N(clone) N(clone3) N(execve) N(execveat) N(prctl)
	N(personality) N(socket) N(connect) N(bind) N(kill) N(tgkill) N(tkill) N(brk)
	N(fstat) N(newfstatat) N(lseek) N(pread64) N(pwrite64) N(ioctl) N(fcntl) N(dup)
	N(dup2) N(dup3) N(pipe2) N(sigaltstack) N(mincore) N(shmat) N(shmget) N(seccomp)
	N(getppid) N(setrlimit) N(prlimit64) N(wait4) N(exit_group) N(uname)
	N(rt_sigaction) N(ftruncate) N(fallocate) N(unshare) N(setns) N(socketpair) N(accept4)
#undef N
	case 462:
		return "mseal";
	}
	fmt_str(buf, n, "syscall %d", nr);
	return buf;
}

/* One line per syscall name, counted every time. */
void sandbox_report(long nr, long tid, const char *comp, uint64_t reported[16])
{
	struct sandbox_shared *sh = sandbox_shared;
	if (!sh)
		return;
	__atomic_add_fetch(&sh->denied, 1, __ATOMIC_RELAXED);
	unsigned i = nr >= 0 && nr < 1024 ? (unsigned)nr : 1023;
	uint64_t bit = (uint64_t)1 << (i & 63);
	if (reported[i >> 6] & bit)
		return;
	reported[i >> 6] |= bit;
	char name[32], line[160];
	size_t k = fmt_str(line, sizeof line - 1,
			   "xpfo: sandbox: denied %s from thread %d in compartment \"%s\"",
			   sandbox_syscall_name(nr, name, sizeof name), tid, comp);
	line[k++] = '\n';
	os_write(2, line, k);
}

#ifdef HAVE_SECCOMP_H
/* ---- libseccomp ------------------------------------------------------------ */

/* The shared library loads libseccomp while it locks a thread, not at every
 * program's start: a program run under xpfo-run, or linked to xpfo without
 * locking a thread, does not map it (80-90 KB of RSS with it loaded;
 * bench/README.md).  It is closed again before the lock: its link map came
 * from root's heap, and a locked thread that ends the process would meet
 * it in the dynamic linker's exit walk.  The static library calls it
 * directly (its programs link -lseccomp).  Not loaded: locking is refused
 * with ENOSYS and a warning that says why. */
struct sc_lib {
	__typeof__(seccomp_api_get) *api_get;
	__typeof__(seccomp_init) *init;
	__typeof__(seccomp_rule_add) *rule_add;
	__typeof__(seccomp_export_bpf) *export_bpf;
	__typeof__(seccomp_release) *release;
	void *handle;
};

#ifdef PIC
static int sc_open(struct sc_lib *l)
{
	static bool warned;
	const char *why = NULL;
	l->handle = dlopen("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!l->handle) {
		why = dlerror();
	} else {
		*(void **)&l->api_get = dlsym(l->handle, "seccomp_api_get");
		*(void **)&l->init = dlsym(l->handle, "seccomp_init");
		*(void **)&l->rule_add = dlsym(l->handle, "seccomp_rule_add");
		*(void **)&l->export_bpf = dlsym(l->handle, "seccomp_export_bpf");
		*(void **)&l->release = dlsym(l->handle, "seccomp_release");
		if (l->api_get && l->init && l->rule_add && l->export_bpf && l->release)
			return 0;
		why = "a function is missing";
		dlclose(l->handle);
	}
	if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		xpfo_warn("sandbox: cannot load libseccomp.so.2 (%s): no thread can be locked",
			  why ? why : "?");
	return ENOSYS;
}

static void sc_close(struct sc_lib *l)
{
	dlclose(l->handle);
}
#else
static int sc_open(struct sc_lib *l)
{
	*l = (struct sc_lib){ seccomp_api_get, seccomp_init, seccomp_rule_add, seccomp_export_bpf,
			      seccomp_release, NULL };
	return 0;
}

static void sc_close(struct sc_lib *l)
{
	(void)l;
}
#endif

/* libseccomp's API level (6: user notification), 0 when it cannot be loaded */
static unsigned sc_api_level(void)
{
	struct sc_lib l;
	if (sc_open(&l))
		return 0;
	unsigned api = l.api_get();
	sc_close(&l);
	return api;
}

/* ---- the filter ---------------------------------------------------------- */

/* What a locked thread may call outright (docs/security.md has a reason for
 * each).  Everything else goes to the executor (the filter's default
 * action is a user notification): memory calls are checked there, any
 * other call is refused, counted and reported (or ends the process,
 * XPFO_LOCK_KILL) by a process the locked thread cannot reach, whatever it
 * did with its own signal handlers and mask. */
static const int allowed[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(close), SCMP_SYS(futex), SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep), SCMP_SYS(sched_yield),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(getrandom),
	SCMP_SYS(restart_syscall),
};

/* Memory calls: mmap that the kernel places (it cannot replace a mapping)
 * without PROT_EXEC is allowed; the rest goes to the executor. */
static int add_memory_rules(const struct sc_lib *l, scmp_filter_ctx f)
{
	const uint64_t X = PROT_EXEC, F = MAP_FIXED;
	return l->rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 2, SCMP_A2(SCMP_CMP_MASKED_EQ, X, 0),
			   SCMP_A3(SCMP_CMP_MASKED_EQ, F, 0));
}

/* Does [lo, lo + n) hold one of the three signals a locked thread may
 * not catch? */
static bool sig_kept(int lo, int n)
{
	for (int s = lo; s < lo + n; s++)
		if (s == SIGSYS || s == SIGSEGV || s == SIGBUS)
			return true;
	return false;
}

/* rt_sigaction: any signal but the three whose handler decides whether a
 * denial or a violation ends the process (SIGSYS, SIGSEGV, SIGBUS: xpfo's
 * fault handler reports and ends), and a query (no new action) of any.
 * Signals 1 to 64 go in aligned blocks, one masked comparison each (13
 * rules, not one a signal: every rule costs libseccomp's build, about a
 * page fault and some microseconds per lock).  The number is compared
 * whole (64 bits): a value with high bits set, which the kernel would
 * truncate to one of the three, matches no rule. */
static int add_signal_rules(const struct sc_lib *l, scmp_filter_ctx f)
{
	int e = l->rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1, SCMP_A1(SCMP_CMP_EQ, 0));
	for (int sig = 1; sig <= 64;) {
		int n = 1;
		while (sig % (2 * n) == 0 && sig + 2 * n - 1 <= 64 && !sig_kept(sig, 2 * n))
			n *= 2;
		if (!sig_kept(sig, n))
			e |= l->rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1,
					 SCMP_A0(SCMP_CMP_MASKED_EQ, ~(uint64_t)(n - 1), (uint64_t)sig));
		sig += n;
	}
	return e;
}

static int add_rules(const struct sc_lib *l, scmp_filter_ctx f)
{
	int e = 0;
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		e |= l->rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
	/* signals to itself only (abort, the fault handler's re-raise) */
	uint64_t pid = (uint64_t)os_getpid();
	e |= l->rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, pid));
	e |= l->rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_EQ, pid));
	return e | add_signal_rules(l, f) | add_memory_rules(l, f);
}

/* libseccomp's program into out through a pipe: *n instructions.  0, or
 * the pipe's errno, or ENOSYS (libseccomp refused, or the program does not
 * fit). */
static int filter_export(const struct sc_lib *l, scmp_filter_ctx f, struct sock_filter *out,
			 size_t max, size_t *n)
{
	int p[2], e = os_sandbox_pipe(p);
	if (e)
		return e;
	size_t got = 0;
	e = l->export_bpf(f, p[1]) ? ENOSYS : 0;
	os_sandbox_close(p[1]);
	if (!e)
		e = os_sandbox_read(p[0], out, max * sizeof *out, &got);
	os_sandbox_close(p[0]);
	if (!e && (got == 0 || got >= max * sizeof *out || got % sizeof *out))
		e = ENOSYS;
	*n = e ? 0 : got / sizeof *out;
	return e;
}

/* The filter as a BPF program, built before the executor starts (building
 * allocates; nothing may be granted between the executor's copy of the
 * tables and the filter).  0 and *n instructions, or an errno (ENOSYS:
 * libseccomp could not make it). */
static int filter_build(struct sock_filter *out, size_t max, size_t *n)
{
	struct sc_lib l;
	*n = 0;
	if (sc_open(&l))
		return ENOSYS;
	scmp_filter_ctx f = l.api_get() >= 6 ? l.init(SCMP_ACT_NOTIFY) : NULL;
	if (!f) {
		sc_close(&l);
		return ENOSYS;
	}
	int e = add_rules(&l, f) ? ENOSYS : filter_export(&l, f, out, max, n);
	l.release(f);
	sc_close(&l);
	return e;
}

/* ---- xpfo_lock_thread ------------------------------------------------------ */

static int shared_init(void)
{
	if (sandbox_shared)
		return 0;
	void *p;
	int e = os_sandbox_shared_map(sizeof *sandbox_shared, &p);
	if (!e)
		sandbox_shared = p;
	return e;
}

/* pkeys with a key for root's pages: the lock keeps root from this thread
 * only (any number of threads). */
static bool lock_keyed(void)
{
	return pkeys_on && key_root > 0;
}

/* The calling thread is the process's only one (a thread just joined can
 * linger in /proc for a moment). */
static bool lock_single_thread(void)
{
	long n = os_thread_count();
	for (int i = 0; i < 1000 && n > 1; i++) {
		os_yield();
		n = os_thread_count();
	}
	return n == 1;
}

/* Checks that need no change: 0 or an errno. */
static int lock_precheck(struct tstate *t, xpfo_compartment_t *c, unsigned flags)
{
	if ((flags & ~XPFO_LOCK_KILL) || c == &comp_root || !comp_check(c))
		return EINVAL;
	if (tl_sandbox_locked)
		return EPERM;
	if (t->depth || t->heap != &t->root_heap)
		return EINVAL;
	if (sc_api_level() < 6)
		return ENOSYS;
	if (!lock_keyed() && !lock_single_thread()) {
		if (!pkeys_on)
			return EPERM; /* per-process protections cannot confine one thread */
		xpfo_warn("sandbox: lock refused: no protection key for root's pages and other threads "
			  "are alive (root_key=0, or no key was free at start)");
		return ENOSPC;
	}
	if (pkeys_on && gadget_check_mappings())
		return EPERM;
	return shared_init();
}

/* Undo an enter when the lock could not be made (the executor, if any,
 * killed and reaped: its socket is closed by then, so it ends by itself
 * if the kill fails). */
static int lock_undo(xpfo_compartment_t *prev, pid_t ex, int e)
{
	if (ex > 0)
		os_sandbox_reap(ex);
	tl_state->root_denied = 0; /* comp_leave rewrites the rights */
	comp_leave(tl_state, prev);
	return e;
}

/* The gate's entry of this thread goes with a lock that failed (else a
 * live thread would keep its compartment busy, and its rights, rewritten
 * by the leave, would fail the gate's check). */
static int lock_undo_gate(xpfo_compartment_t *prev, pid_t ex, int e)
{
	tl_sandbox_locked = 0;
	for (unsigned i = sandbox_gate.g.n; i-- > 0;)
		if (sandbox_gate.g.e[i].tls == (uintptr_t)&tl_sandbox_locked) {
			gate_drop(i);
			break;
		}
	return lock_undo(prev, ex, e);
}

/* A failure once the thread has a descriptor table of its own: the table
 * is a copy of the process's at that moment, so descriptors xpfo makes
 * later in other threads (a shared run's memfd) would be missing from it,
 * or their numbers another file's; the thread cannot go on unlocked. */
static _Noreturn void lock_fail_private(int e)
{
	xpfo_fatal("sandbox: the lock failed after the thread's descriptor table was made its own "
		   "(errno %d)", (long)e);
}

/* pkeys: root's pages on key_root, closed in this thread's rights from its
 * enter on, and c entered with its own key (a keyless compartment's pages
 * are key_root's: closed to the locked thread too).  0 or an errno. */
static int lock_enter_keyed(struct xpfo_compartment *c, xpfo_compartment_t **prev)
{
	int e = gate_plain_rekey();
	if (e) {
		xpfo_warn("sandbox: lock refused: root's pages could not move to their key (errno %d)",
			  (long)e);
		return e;
	}
	tl_state->root_denied = 1;
	*prev = comp_enter(tl_state, c);
	if (!*prev) {
		tl_state->root_denied = 0;
		pkeys_thread_update(tl_state);
		return errno;
	}
	if (!tl_state->keyed) {
		xpfo_warn("sandbox: lock refused: no protection key free for compartment \"%s\" (every "
			  "key is held by a compartment a thread is inside)", c->pub_name);
		lock_undo(*prev, 0, 0);
		return EAGAIN;
	}
	return 0;
}

/* A failure once the hand-off channel exists: the lock's end closed
 * first (an executor waiting on it ends), then fatal with a descriptor
 * table of the thread's own, else undone. */
static int lock_abort(xpfo_compartment_t *prev, bool private, pid_t ex, int sock, int e)
{
	if (sock >= 0)
		os_sandbox_close(sock);
	if (private)
		lock_fail_private(e);
	return lock_undo_gate(prev, ex, e);
}

/* The hand-off channel, the executor (forked, and ready to serve before
 * the filter exists), the filter, the listener handed over.  0, or an
 * errno with the lock undone (lock_abort). */
static int lock_filter(xpfo_compartment_t *c, xpfo_compartment_t *prev, unsigned flags,
		       bool private, struct sock_filter *prog, size_t n)
{
	int sv[2], e = os_socketpair(sv);
	if (e)
		return lock_abort(prev, private, 0, -1, e);
	pid_t ex = executor_start(c, flags, sv);
	if (ex < 0)
		return lock_abort(prev, private, 0, sv[0], -ex);
	if ((e = os_sandbox_ready(sv[0])))
		return lock_abort(prev, private, ex, sv[0], e);
	struct sock_fprog fp = { (unsigned short)n, prog };
	int fd;
	if ((e = os_sandbox_filter(&fp, &fd)))
		return lock_abort(prev, private, ex, sv[0], e);
	/* from here on the thread is filtered: fail closed.  close is allowed;
	 * the executor has its own copies of what it needs (the userfaultfd) */
	os_sandbox_thread();
	int keep[2] = { fd, sv[0] };
	os_sandbox_close_own(keep, 2);
	if ((e = os_sandbox_hand_off(sv[0], fd)))
		xpfo_fatal("sandbox: cannot hand the filter to the executor (errno %d)", (long)e);
	os_sandbox_close(fd); /* the locked thread must not answer its own requests */
	os_sandbox_close(sv[0]);
	return 0;
}

static int lock_install(xpfo_compartment_t *c, unsigned flags, struct sock_filter *prog,
			size_t n)
{
	xpfo_compartment_t *prev = NULL;
	if (lock_keyed()) {
		int e = lock_enter_keyed(c, &prev);
		if (e)
			return e;
	} else if (!(prev = comp_enter(tl_state, c))) {
		return errno;
	}
	tl_sandbox_locked = 1;
	int e = gate_add(c);
	if (e)
		return lock_undo_gate(prev, 0, e);
	/* xpfo's descriptors (docs/security.md): the thread gets a table of its
	 * own, where they are closed once it is filtered; the other threads
	 * keep theirs.  With one thread (mprotect, a fork child) the table is
	 * the process's and closing them there is what is meant. */
	bool private = lock_keyed();
	os_sandbox_lock(); /* /proc/self/mem: closed in the process's table */
	if (private && (e = os_sandbox_files()))
		return lock_undo_gate(prev, 0, e);
	return lock_filter(c, prev, flags, private, prog, n);
}

/* c's segments for good (alloc/pages.c, pages_reserve): the executor
 * grants only inside them.  0 or ENOMEM (the lock is refused). */
static int lock_reserve(struct xpfo_compartment *c)
{
	int e = pages_reserve(c, opt.lock_segments);
	if (e)
		xpfo_warn("sandbox: lock refused: no room in the heap for the %u segments reserved "
			  "for compartment \"%s\" (lock_segments)",
			  (unsigned long)opt.lock_segments, c->pub_name);
	return e;
}

static int lock_busy(struct xpfo_compartment *c)
{
	if (!gate_busy(c))
		return 0;
	xpfo_warn("sandbox: lock refused: compartment \"%s\" already has a live locked thread (one "
		  "executor per compartment)", c->pub_name);
	return EBUSY;
}

int sandbox_lock(struct tstate *t, struct xpfo_compartment *c, unsigned flags)
{
	int e = lock_precheck(t, c, flags);
	static struct sock_filter prog[4096];
	static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;
	if (!e) {
		pthread_mutex_lock(&build_lock);
		bool first = !c->reserved; /* set only here, under build_lock */
		e = lock_busy(c);
		if (!e)
			e = lock_reserve(c);
		if (!e && !lock_keyed()) /* root's pages out of reach: closed for the process */
			c->flags |= XPFO_COMPARTMENT_STRICT;
		size_t n = 0;
		if (!e)
			e = filter_build(prog, sizeof prog / sizeof prog[0], &n);
		if (!e)
			uffd_lock_prepare(); /* the executor forked below must inherit it */
		if (!e)
			e = lock_install(c, flags, prog, n);
		if (e && first)
			pages_unreserve(c);
		pthread_mutex_unlock(&build_lock);
	}
	return e;
}

#else /* no seccomp.h */

int sandbox_lock(struct tstate *t, struct xpfo_compartment *c, unsigned flags)
{
	(void)t;
	(void)c;
	(void)flags;
	return ENOSYS;
}
#endif

/* ---- statistics ------------------------------------------------------------ */

void sandbox_stats_fill(struct xpfo_stats *s)
{
	struct sandbox_shared *sh = sandbox_shared;
	if (!sh)
		return;
	s->sandbox_denied = __atomic_load_n(&sh->denied, __ATOMIC_RELAXED);
	s->sandbox_granted = __atomic_load_n(&sh->granted, __ATOMIC_RELAXED);
	s->sandbox_passed = __atomic_load_n(&sh->passed, __ATOMIC_RELAXED);
}

void sandbox_stats_print(int fd)
{
	struct sandbox_shared *sh = sandbox_shared;
	if (!sh)
		return;
	char buf[256];
	size_t k = fmt_str(buf, sizeof buf - 1,
			   "xpfo:   sandbox      %u denied; executor: %u heap calls checked and let through "
			   "(%u grants, %u closes, %u purges, %u remaps; %u page-map reads), %u outside "
			   "the heap",
			   sh->denied, sh->granted, sh->grants, sh->closes, sh->purges, sh->remaps,
			   sh->pagemap_reads, sh->passed);
	buf[k++] = '\n';
	os_write(fd, buf, k);
}
