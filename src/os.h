/* os.h - the one OS boundary.  Every syscall xpfo makes goes through here.
 *
 * Contract: functions return 0 on success or a positive errno value; they
 * never set errno (the caller's errno is preserved); sizes and addresses are
 * page-aligned.  Every call is counted in the stats.  In test builds a fault
 * can be injected per operation (os_inject), so error paths are exercised.
 */
#ifndef XPFO_OS_H
#define XPFO_OS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

enum os_prot { OS_NONE = 0, OS_READ = 1, OS_RW = 3 };

/* Operations a test can make fail (os_inject): RESERVE covers mmap of new
 * address space (heap, metadata, temporaries), PROTECT every protection
 * change, PURGE madvise and remapping, MEM /proc/self/mem (ENOSYS: as if it
 * could not be opened). */
enum os_op { OS_OP_RESERVE, OS_OP_PROTECT, OS_OP_PURGE, OS_OP_MEM, OS_OP_SECRET, OS_OP_ALIAS,
	     OS_OP_UFFD, OS_OP_SANDBOX, OS_OP_EXECUTOR, OS_OP_SELF, OS_OP_COUNT };
/* SECRET covers memfd_secret (creation and mapping), ALIAS the memfds of
 * xpfo_share_fd (creation, mapping, truncation), UFFD the userfaultfd
 * (opening, registration, filling), SANDBOX every call the locking thread
 * makes for xpfo_lock_thread (os_socketpair, os_sandbox_files and
 * src/sandbox_os.c's os_sandbox_*: one count per system call, in the
 * order they are made), EXECUTOR every call of the executor
 * (os_executor_*; it runs in the lock's child, which inherits what was
 * armed before the lock).  SELF: process_madvise refuses PIDFD_SELF with
 * the injected errno (as a kernel before 6.15 does, EBADF), no call made;
 * the vector calls then name the process by a pidfd of their own. */

/* Reserve size bytes of inaccessible address space aligned to align (a power
 * of two >= page size).  *out gets the address. */
int os_reserve(size_t size, size_t align, void **out);
/* Map size bytes readable and writable (metadata). */
int os_map_rw(size_t size, void **out);
int os_unmap(void *addr, size_t size);
/* A flush round (stats.h) unless prot is OS_RW: its callers raise pages to
 * read-write only from PROT_NONE. */
int os_protect(void *addr, size_t size, enum os_prot prot);
/* What a change of protection or key takes from the range's present pages
 * (those with frames mapped), which decides whether the kernel flushes the
 * TLBs (x86 Linux, mm/mprotect.c and pte_needs_flush): an entry that is
 * not present (PROT_NONE, released, never touched) changes without a
 * flush, a present one whose access is lowered or whose key changes is
 * flushed.  The caller knows which the pages are. */
enum os_takes {
	OS_TAKES_NOTHING, /* no page of the range is present: no flush round */
	OS_TAKES_AWAY,    /* present pages may lose access or change key */
};
/* The same with a protection key (pkey_mprotect; key < 0: plain mprotect),
 * a flush round counted as `takes` says. */
int os_protect_key(void *addr, size_t size, enum os_prot prot, int key, enum os_takes takes);
/* Give the pages' frames back: the next touch sees zeros. */
int os_purge(void *addr, size_t size);
/* Guard markers (MADV_GUARD_INSTALL / MADV_GUARD_REMOVE, Linux 6.13): an
 * access to a marked page faults (SIGSEGV), and no VMA changes.  Installing
 * releases the pages' frames (they read zero once the markers go); removing
 * leaves the pages as they are.  Counted as madvise calls; OS_OP_PROTECT
 * injections apply (a protection change). */
int os_guard(void *addr, size_t size, bool install);
/* Fault in [addr, addr + size) for writing in one call (MADV_POPULATE_WRITE,
 * Linux 5.14): 0 or the errno. */
int os_populate(void *addr, size_t size);
/* MADV_HUGEPAGE: the range may be backed by transparent huge pages; with
 * !huge MADV_NOHUGEPAGE: never, whatever the system's setting (both only
 * flag the VMAs: no flush).  0 or the errno. */
int os_hugepage(void *addr, size_t size, bool huge);
/* Install (or remove) guard markers over n <= OS_GUARD_VEC ranges in one call
 * (process_madvise on the calling thread's own address space, named by
 * PIDFD_SELF, Linux 6.15; where the kernel refuses that (EBADF), by a
 * pidfd opened for the call and closed after it, recorded as xpfo's
 * meanwhile (os_fd_own); never in a locked thread, EPERM).  0 with *done
 * the bytes covered, which may stop short of the whole after a failure
 * (the rest untouched, in order), or the errno (*done 0).  ECANCELED: not tried (no call made): an active
 * OS_OP_PROTECT injection, so that the caller goes range by range through
 * os_guard, where it applies.  An install counts a flush round a range it
 * covered unless `takes` says no page of the ranges is present (nothing to
 * zap) or they are the ones os_purge_vec just released; a removal none. */
#define OS_GUARD_VEC 64
int os_guard_vec(const uintptr_t *addr, const size_t *len, unsigned n, bool install,
		 enum os_takes takes, size_t *done);
/* Release the frames of n <= OS_GUARD_VEC ranges in one call (MADV_DONTNEED
 * through process_madvise, as os_guard_vec): Linux 6.16 and later, and
 * 6.12 with kernel/'s series, flush the TLBs once for all of them (counted
 * one round; before, a round a range), where
 * installing markers over populated ranges flushes once a range.  Linux
 * 6.13 and later take the advice on the caller's own process (6.12 with
 * kernel/'s series), older ones answer EINVAL.  0 or the errno, *done the
 * bytes released (in order: the rest untouched); ECANCELED: an active
 * OS_OP_PURGE injection, no call made. */
int os_purge_vec(const uintptr_t *addr, const size_t *len, unsigned n, size_t *done);
/* Does a successful os_purge_vec flush the TLBs once for the whole call
 * here (the kernel's version says so; on 6.12 the call succeeds only with
 * kernel/'s series)? */
bool os_purge_vec_one_flush(void);
/* Replace [addr, addr+size) by a fresh anonymous mapping with prot: new
 * frames (zero), and one VMA where protection changes had split it. */
int os_remap(void *addr, size_t size, enum os_prot prot);
/* Give [addr, addr+size) fresh frames with the same contents, in place, and
 * protection prot.  `readable` says whether the range can be read now (else
 * it is made readable for the copy).  The old frames leave the process. */
int os_fresh_copy(void *addr, size_t size, bool readable, enum os_prot prot, int key);
/* Move the frames of [addr, addr+size) (private anonymous, one protection)
 * to a fresh address *out with protection prot, leaving addr mapped, empty
 * and inaccessible: the allocator's way to work on pages that must never be
 * reachable at their own address when /proc/self/mem cannot be used.
 * os_move_back makes them PROT_NONE and puts them back at addr.  Both
 * return 0 or an errno (os_move_out: nothing changed). */
int os_move_out(void *addr, size_t size, enum os_prot prot, void **out);
int os_move_back(void *t, void *addr, size_t size);
/* The same page by page, for a range over several mappings (src/memfd.c:
 * os_move_out and os_move_back fall back to them on EFAULT). */
int os_move_out_pages(void *addr, size_t size, enum os_prot prot, void **out);
int os_move_back_pages(void *t, void *addr, size_t size);
/* Read or write this process's memory through /proc/self/mem, which
 * ignores page protections and protection keys: for the allocator's own
 * work on pages it must not open to the process (a closed compartment's).
 * Returns 0 or an errno (ENOSYS when /proc/self/mem cannot be used). */
int os_mem_read(const void *addr, void *buf, size_t n);
int os_mem_write(void *addr, const void *buf, size_t n);
int os_mem_zero(void *addr, size_t n);
void os_mem_forget(void); /* in a fork child */
/* Threads of this process not on their way out (/proc/self/status's
 * count less the tasks whose stat flags say PF_EXITING), or -errno. */
long os_thread_count(void);
/* Random bytes from the kernel. */
int os_random(void *buf, size_t n);
/* write(2) all of buf to fd, retrying on EINTR; errors ignored. */
void os_write(int fd, const char *buf, size_t n);
/* xpfo_send and xpfo_recv's transport (the caller's descriptor, any
 * bytes, no alignment).  os_send_all: all of buf to fd, retrying on EINTR
 * and short writes; a socket is written with MSG_NOSIGNAL (a closed peer
 * is EPIPE, never SIGPIPE), a pipe or file with write.  0 or the errno.
 * os_recv_all: read until n bytes, end of file or an error, retrying on
 * EINTR; *got says how many came.  0 (end of file when *got < n) or the
 * errno. */
int os_send_all(int fd, const void *buf, size_t n);
int os_recv_all(int fd, void *buf, size_t n, size_t *got);
/* stdout for a thread about to be locked (api/compartment.c).
 * os_stdout_buffer: where stdout's buffer is (NULL: none yet, or not
 * known outside glibc) and whether it is unbuffered.  os_stdout_unbuffer:
 * flush it (write) and make it unbuffered; the C library frees the buffer
 * it had allocated (free). */
const void *os_stdout_buffer(bool *unbuffered);
void os_stdout_unbuffer(void);
/* Read a small file into buf (NUL-terminated); returns bytes or -errno. */
long os_read_file(const char *path, char *buf, size_t n);
long os_gettid(void);
/* Thread tid of this process may be alive (tgkill with signal 0: false only
 * on ESRCH). */
bool os_thread_alive(long tid);
/* xpfo's own descriptors, those it keeps open (the userfaultfd,
 * /proc/self/mem, alias memfds, the statistics' stderr), are numbered in
 * [*lo, *hi): the top of the descriptor table, below min(RLIMIT_NOFILE,
 * 1024), away from the lowest free numbers a program's open gets.  0, or
 * EMFILE: the limit (under 64) leaves no such range. */
int os_fd_range(int *lo, int *hi);
/* Move fd into that range (close-on-exec): the new descriptor, fd closed;
 * or -errno (EMFILE: no room there), fd left as it was. */
int os_fd_high(int fd);
/* A close-on-exec duplicate of fd in that range (programs close 2 at exit,
 * before xpfo's statistics are written), or -1. */
int os_dup_high(int fd);
/* Count the lines of /proc/self/maps whose start lies in [lo, hi). */
long os_count_vmas(uintptr_t lo, uintptr_t hi);
_Noreturn void os_abort(void);
/* A thread is being locked (alloc/sandbox.c): /proc/self/mem is closed for
 * the process for good.  os_sandbox_thread, once the thread is filtered: it
 * never opens a file again (os_read_file, os_count_vmas: EPERM) and never
 * uses a number of xpfo's descriptors (os_fd_close, os_alias_truncate,
 * os_alias_punch: nothing, or EPERM). */
void os_sandbox_lock(void);
void os_sandbox_thread(void);
bool os_thread_locked(void); /* the calling thread is locked */
/* xpfo's own descriptors (alias memfds, the userfaultfd, /proc/self/mem):
 * every one xpfo keeps open beyond one call is recorded (os_fd_own true when
 * it is opened, false before it is closed; EMFILE for a number past 65535,
 * which the caller closes and fails: a descriptor of xpfo's that the record
 * does not hold would stay reachable from a locked thread).
 * os_sandbox_files gives the calling thread a descriptor table of its own
 * (unshare CLONE_FILES): what it closes there stays open for the other
 * threads.  os_sandbox_close_own closes every recorded descriptor in the
 * calling thread's table (the record stays: it is the other threads' too)
 * but those in keep (numbers the record may hold stale: the lock's own)
 * and returns how many numbers it closed; from then on the thread must not
 * use any of them (a number it receives later is not xpfo's). */
int os_fd_own(int fd, bool own);
/* A close-on-exec AF_UNIX SOCK_SEQPACKET pair (the lock's hand-off to its
 * executor): 0 or the errno. */
int os_socketpair(int sv[2]);
int os_sandbox_files(void);
unsigned os_sandbox_close_own(const int *keep, unsigned nkeep);

/* ---- the lock and its executor (src/sandbox_os.c) ---------------------
 * Same contract; none allocates (the executor must not, and the locking
 * thread makes some of them once filtered).  The locking thread's:
 * os_sandbox_shared_map: size bytes shared read-write with the executors
 * (the statistics page).  os_sandbox_pipe: a close-on-exec pipe (the
 * filter's way out of libseccomp).  os_sandbox_read: one read(2), retried
 * on EINTR; *got the bytes.  os_sandbox_close: close(2), errors ignored,
 * allowed in a locked thread (for the lock's own descriptors, which xpfo
 * does not record; not injectable: a close leaves nothing to undo).
 * os_sandbox_clone: a raw clone (SIGCHLD, no fork handlers, no new
 * stack): *pid the child's pid in the parent, 0 in the child, which
 * returns from it as from fork.  os_sandbox_filter: no new privileges,
 * then the seccomp filter prog (a struct sock_fprog) with a listener,
 * *fd (two calls, two counts).  os_sandbox_ready: the executor's status
 * byte (0: it can serve; else its errno; EPIPE: it is gone).
 * os_sandbox_hand_off: the listener fd to the executor over sock
 * (SCM_RIGHTS), then its acknowledgement (two calls, two counts; EPIPE:
 * the executor is gone).  os_sandbox_reap: SIGKILL and waitpid (two
 * counts; a failed kill still waits, for an executor that ends by
 * itself). */
int os_sandbox_shared_map(size_t size, void **out);
int os_sandbox_pipe(int p[2]);
int os_sandbox_read(int fd, void *buf, size_t n, size_t *got);
void os_sandbox_close(int fd);
int os_sandbox_clone(long *pid);
int os_sandbox_filter(const void *prog, int *fd);
int os_sandbox_ready(int sock);
int os_sandbox_hand_off(int sock, int fd);
int os_sandbox_reap(long pid);
/* The executor's: os_executor_start: the death signal (SIGKILL when its
 * parent ends), then ESRCH if parent is not its parent any more.
 * os_executor_map: private read-write memory (its page record).
 * os_executor_ready: its status byte to the locking thread.
 * os_executor_take: the listener from sock and the acknowledgement (two
 * counts; EPIPE: the locking thread closed sock without one).
 * os_executor_close_range: close [lo, hi].  os_executor_pagemap: open
 * /proc/pid/pagemap.  os_executor_pread: exactly n bytes at off (EIO when
 * fewer).  os_executor_wait: poll the listener; *gone when it has no
 * request and never will (every filtered thread ended).
 * os_executor_notif_recv / _send: SECCOMP_IOCTL_NOTIF_RECV / _SEND with a
 * struct seccomp_notif / seccomp_notif_resp.  os_executor_kill: SIGKILL
 * to pid.  os_exit_group: the exit_group system call itself (no atexit
 * handlers, no C library exit path). */
int os_executor_start(long parent);
int os_executor_map(size_t size, void **out);
int os_executor_ready(int sock, int status);
int os_executor_take(int sock, int *fd);
int os_executor_close_range(unsigned lo, unsigned hi);
int os_executor_pagemap(long pid, int *fd);
int os_executor_pread(int fd, void *buf, size_t n, uint64_t off);
int os_executor_wait(int lfd, bool *gone);
int os_executor_notif_recv(int lfd, void *req);
int os_executor_notif_send(int lfd, void *resp);
int os_executor_kill(long pid);
_Noreturn void os_exit_group(int code);

/* ---- secret memory and alias mappings (src/memfd.c) ------------------
 * Same contract.  os_secret_probe: can this process create memfd_secret
 * files (ENOSYS: the kernel has none, or secretmem.enable is off).
 * os_secret_map: back [addr, addr+size) by a new memfd_secret file of its
 * own (MAP_SHARED | MAP_FIXED, protection prot): fresh frames, out of the
 * kernel's direct map; the descriptor is closed, so the mapping is the
 * file's only reference and unmapping it frees the frames.  EAGAIN/ENOMEM
 * past RLIMIT_MEMLOCK. */
int os_secret_probe(void);
int os_secret_map(void *addr, size_t size, enum os_prot prot);
/* Replace [addr, addr+size) by anonymous frames holding the same bytes, with
 * protection prot (key: pkey_mprotect, < 0 none), without reading it through
 * /proc/self/mem (which cannot read secret memory) and without opening it at
 * its own address; the old mapping's frames leave the process. */
int os_fresh_copy_anon(void *addr, size_t size, bool readable, enum os_prot prot, int key);
/* The same, into a new memfd_secret file (as os_secret_map). */
int os_fresh_copy_secret(void *addr, size_t size, bool readable, enum os_prot prot, int key);
/* Move the bytes of the readable range [addr, addr+size) into a new memfd,
 * mapped shared at the same address with protection prot; *fd gets the
 * memfd (close-on-exec).  It is sealed before the bytes move in: no holder
 * can add a seal or grow it, and with readonly no one can write it except
 * through this mapping, however the file is opened again. */
int os_alias_create(void *addr, size_t size, enum os_prot prot, int key, bool readonly, int *fd);
/* A new descriptor of the same file, read-only or read-write. */
int os_alias_open(int fd, bool write, int *out);
/* Revoke every mapping of the memfd: truncate it to nothing (sealed
 * against growing since its creation: it never grows again), close it. */
int os_alias_truncate(int fd);
/* Close a descriptor (errors ignored). */
void os_fd_close(int fd);
/* Take [off, off+len) out of the memfd (its other pages stay): tail (the
 * range ends the file) truncates it to off, else a hole is punched, which a
 * read-only memfd refuses (EPERM). */
int os_alias_punch(int fd, size_t off, size_t len, bool tail);
/* Sum of the memfd_secret mappings of this process: Size and Rss in bytes. */
int os_secret_usage(uint64_t *mapped, uint64_t *resident);
_Noreturn void os_exit(int code); /* _exit: no atexit handlers */
void os_yield(void);                /* sched_yield */
uint64_t os_monotonic_ns(void);      /* CLOCK_MONOTONIC; 0 if unreadable */
long os_getpid(void);
/* true in a privileged program (set-user-ID, set-group-ID, file
 * capabilities: the kernel's AT_SECURE), whose environment is not trusted */
bool os_is_privileged(void);
long os_page_size(void);            /* sysconf(_SC_PAGESIZE) */
struct sigaction;
int os_sigaction(int sig, const struct sigaction *sa, struct sigaction *old);
/* A new protection key with initial rights for this thread (pkey_alloc):
 * 0 and *key, or an errno (ENOSYS without keys). */
int os_pkey_alloc(unsigned rights, int *key);
/* arch_pkey_probe (arch/pkeys.h: enum arch_pkey_status), which makes the
 * pkey_alloc and pkey_free calls. */
int os_pkey_probe(void);

/* ---- userfaultfd (src/uffd.c) -----------------------------------------
 * One descriptor per process with UFFD_FEATURE_SIGBUS: a user-mode access
 * to a missing page of the registered range raises SIGBUS (BUS_ADRERR) in
 * the faulting thread; a kernel-mode one fails with EFAULT.
 * os_uffd_open: 0 or the errno that says why not (ENOSYS, EPERM, ...).
 * os_uffd_register: watch missing pages of [addr, addr+size) (one range).
 * os_uffd_rearm: the same for a new mapping made over part of that range
 * (MAP_FIXED, mremap); a failure, or a locked thread (which may not make
 * the ioctl), makes os_uffd_armed false for good (os_uffd_fill goes on).
 * os_uffd_fill: map the zero page at every missing page of the range
 * (resident ones are left alone); 0 outside registered mappings.
 * os_uffd_forget: in a fork child, drop the parent's descriptor (its ioctls
 * would act on the parent's address space). */
int os_uffd_open(void);
int os_uffd_register(void *addr, size_t size);
void os_uffd_rearm(void *addr, size_t size);
bool os_uffd_armed(void);
bool os_uffd_in(uintptr_t a);
int os_uffd_fill(void *addr, size_t size);
void os_uffd_forget(void);
int os_uffd_fd(void); /* the descriptor, or -1 (the sandbox executor keeps it) */
/* tgkill(getpid(), gettid(), sig) */
void os_raise_self(int sig);

/* Test seam: make the next `count` calls of op fail with err after `skip`
 * successful ones (count 0 disarms). */
void os_inject(enum os_op op, int err, unsigned skip, unsigned count);
/* Test seam exported for the test programs (tests/testutil.h declares it):
 * os_inject with op as an int; -1 with EINVAL for an unknown op. */
int xpfo__test_inject(int op, int err, unsigned skip, unsigned count);
/* For the OS layer's other files: the errno to fake for op now, or 0. */
int os_injected(enum os_op op);
/* For the OS layer's other files: what a call that failed (failed != 0)
 * left in errno, or 0; errno back to saved, as this header promises. */
int os_result(bool failed, int saved);

#endif
