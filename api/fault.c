/* fault.c - violation reports.  A SIGSEGV or SIGBUS at a heap address is an
 * access to a page the thread does not own: one line says what was touched,
 * whose it is and who touched it, then the signal takes its default action.
 * A SIGBUS on a page released under the userfaultfd (alloc/uffd.c) is first
 * offered to uffd_fault, which fills a page the thread may use; otherwise
 * it is reported the same way, "(released page)", and ends by SIGSEGV.
 * Faults elsewhere go to the handler the program had, untouched.  The handler
 * allocates nothing and takes no lock.  On pkeys, a fault of a signal
 * handler on key_root in a thread that is not locked is not a violation:
 * the key is opened for the interrupted handler (handler_root_open). */
#include "internal.h"
#include "owner.h"
#include "backing.h"
#include "arch.h"
#include "pkeys.h"
#include "sandbox.h"

#include <signal.h>
#include <string.h>
#include <ucontext.h>

static struct sigaction old_segv, old_bus;

/* The default action for sig from now on.  A locked thread may not change
 * the action of SIGSEGV or SIGBUS (alloc/sandbox.c): the signal is blocked
 * in the interrupted context instead, and the kernel forces a fault signal
 * that finds itself blocked to its default action when the access runs
 * again. */
static void to_default(int sig, void *uc)
{
	if (tl_sandbox_locked && uc) {
		sigaddset(&((ucontext_t *)uc)->uc_sigmask, sig);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	os_sigaction(sig, &sa, NULL);
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, si, uc);
	} else if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
		to_default(sig, uc); /* returning re-runs the access, which now kills */
	} else {
		old->sa_handler(sig);
	}
}

/* Whose is the page at a: writes "owned by compartment "x"" or the free
 * page's story into buf. */
static void describe_owner(char *buf, size_t n, uintptr_t a)
{
	struct owner_desc d;
	owner_describe(a, (uint32_t)flush_serial(), &d);
	struct xpfo_compartment *c = d.owner < MAX_COMPARTMENTS ? comp_table[d.owner] : NULL;
	switch (d.state) {
	case OS_OWNED:
		fmt_str(buf, n, "owned by %scompartment \"%s\"", secret_comp(c) ? "secret " : "",
			c ? c->name : "?");
		return;
	case OS_OWNED_PENDING:
		fmt_str(buf, n, "owned by %scompartment \"%s\" (freed, revocation queued)",
			secret_comp(c) ? "secret " : "", c ? c->name : "?");
		return;
	case OS_FREE:
		fmt_str(buf, n, "owned by the allocator (free page, revoked %u flushes ago)",
			(unsigned long)d.age);
		return;
	case OS_FREE_HUGE:
		fmt_str(buf, n, "owned by the allocator (free page)");
		return;
	case OS_QUARANTINED:
		fmt_str(buf, n, "owned by the allocator (quarantined page)");
		return;
	default:
		fmt_str(buf, n, "owned by the allocator (guard page)");
		return;
	}
}

/* The faulting thread's compartment id. */
static uint16_t my_compartment(void)
{
	struct tstate *t = tl_state;
	return t && t->heap ? t->heap->comp->id : comp_root.id;
}

/* A released page (missing in the userfaultfd's range) ends the process the
 * way a protected one does: SIGSEGV, default action. */
static void die_released(void *uc)
{
	to_default(SIGSEGV, uc);
	to_default(SIGBUS, uc);
	if (!tl_sandbox_locked) /* locked: the access runs again, SIGBUS ends it */
		os_raise_self(SIGSEGV);
}

/* Is thread tid in the gate's table of locked threads?  The table's page
 * is read-only to every thread and guarded by the executors; the thread id
 * comes from the kernel (a TLS address would not do: a new thread often
 * gets a dead locked thread's).  Every slot is read, not only the first n:
 * an update (sandbox.c gate_drop) moves the last entry into a freed slot
 * without clearing the old one, so a live entry is always in some slot,
 * and a stale one only makes a thread that got a dead locked thread's id
 * count as locked (fail closed). */
static bool gate_lists(long tid)
{
	const unsigned max = sizeof sandbox_gate.g.e / sizeof sandbox_gate.g.e[0];
	if (!__atomic_load_n(&sandbox_gate.g.n, __ATOMIC_ACQUIRE))
		return false; /* never a lock: the table is empty */
	for (unsigned i = 0; i < max; i++)
		if (__atomic_load_n(&sandbox_gate.g.e[i].tid, __ATOMIC_RELAXED) == tid)
			return true;
	return false;
}

/* pkeys, after the first xpfo_lock_thread: root's pages (and keyless
 * compartments open for the process) carry key_root, open in the rights of
 * every thread that is not locked, but Linux starts a signal handler with
 * key 0 only.  A key fault on key_root in a thread the gate's table does
 * not list (and not in a STRICT compartment) is such a handler (or code it
 * called) reaching what its thread may reach: key_root is opened in the
 * rights the interrupted code gets back at sigreturn, and the access runs
 * again.  Nothing the faulting thread can write decides it: the fault's
 * key comes from the kernel's siginfo (a locked thread cannot queue a
 * forged one: rt_sigqueueinfo is denied), key_root must be the gate's
 * plain key (read-only page), the thread is named by gettid.  The frame
 * is the faulting thread's own, so a locked thread gains nothing that a
 * forged sigreturn frame (SROP, docs/security.md) would not give it.  A
 * frame that already opens the key is not edited (the fault is then
 * reported): a kernel that did not load the register from the frame would
 * otherwise fault here again and again. */
static bool handler_root_open(const siginfo_t *si, void *uc)
{
	int key = arch_pkey_fault_key(si);
	if (!pkeys_on || key <= 0 || key != key_root || key != key_plain())
		return false;
	struct tstate *t = tl_state;
	if (t && t->heap && (t->heap->comp->flags & XPFO_COMPARTMENT_STRICT))
		return false;
	if (gate_lists(os_gettid()))
		return false;
	return arch_pkey_frame_set(uc, key, ARCH_PKEY_RW) == 0;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	XPFO_ENTRY;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (!__atomic_load_n(&xpfo_ready, __ATOMIC_ACQUIRE) || !in_heap(a) ||
	    (sig == SIGSEGV && si->si_code != SEGV_ACCERR && si->si_code != SEGV_MAPERR &&
	     si->si_code != 4 /* SEGV_PKUERR */)) {
		chain(sig, si, uc);
		return;
	}
	if (sig == SIGSEGV && handler_root_open(si, uc))
		return; /* key_root open for the interrupted code: the access runs again */
	bool released = sig == SIGBUS && si->si_code == BUS_ADRERR && os_uffd_in(a);
	if (released && uffd_fault(a, my_compartment()))
		return; /* filled: the access runs again */
	if (!opt.report) {
		if (released)
			die_released(uc);
		else
			chain(sig, si, uc);
		return;
	}
	stat_inc(violations);
	char owner[128], line[320];
	describe_owner(owner, sizeof owner, a);
	if (released)
		fmt_str(owner + strlen(owner), sizeof owner - strlen(owner), " (released page)");
	int w = arch_fault_is_write(uc);
	struct tstate *t = tl_state;
	long tid = os_gettid();
	char cname[48];
	if (t && t->heap)
		fmt_str(cname, sizeof cname, "%s", t->heap->comp->name);
	else if (opt.compartments == COMP_MODE_THREAD && tid != os_getpid())
		fmt_str(cname, sizeof cname, "thread %d", tid); /* the one it gets first */
	else
		fmt_str(cname, sizeof cname, "root");
	size_t len = fmt_str(line, sizeof line - 1,
			     "xpfo: violation: %s of %p %s from thread %d in compartment \"%s\"",
			     w < 0 ? "access" : w ? "write" : "read", (void *)a, owner, tid, cname);
	line[len++] = '\n';
	os_write(2, line, len);
	if (released)
		die_released(uc);
	else
		to_default(sig, uc); /* the access runs again and the default action ends it */
}

/* The action for SIGSEGV and SIGBUS: on_fault with its siginfo, on the
 * alternate stack, the signal not blocked while it runs (SA_NODEFER). */
static void fault_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sa_sigaction = on_fault;
	sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa->sa_mask);
}

void fault_install(void)
{
	if (!opt.report && !uffd_may_arm()) /* release=auto arms later: filled pages need it */
		return;
	struct sigaction sa;
	fault_action(&sa);
	os_sigaction(SIGSEGV, &sa, &old_segv);
	os_sigaction(SIGBUS, &sa, &old_bus);
}
