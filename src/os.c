/* os.c - Linux implementation of os.h.  The only file that includes
 * <sys/mman.h> or issues raw syscalls. */
#include "fatal.h"
#include "os.h"
#include "pkeys.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static struct {
	int err;
	unsigned skip, count;
} inject[OS_OP_COUNT];

void os_inject(enum os_op op, int err, unsigned skip, unsigned count)
{
	inject[op].err = err;
	inject[op].skip = skip;
	inject[op].count = count;
}

__attribute__((visibility("default"))) int xpfo__test_inject(int op, int err, unsigned skip,
							     unsigned count)
{
	if (op < 0 || op >= OS_OP_COUNT)
		return fail_int(EINVAL);
	os_inject((enum os_op)op, err, skip, count);
	return 0;
}

/* Returns the errno to fake, or 0. */
static int injected(enum os_op op)
{
	if (__builtin_expect(inject[op].count == 0, 1))
		return 0;
	if (inject[op].skip) {
		inject[op].skip--;
		return 0;
	}
	inject[op].count--;
	return inject[op].err;
}

int os_injected(enum os_op op)
{
	return injected(op);
}

int os_result(bool failed, int saved)
{
	int e = failed ? errno : 0;
	errno = saved;
	return e;
}

/* size bytes of PROT_NONE address space exactly at a (no replacing of what
 * is there: MAP_FIXED_NOREPLACE, and a kernel older than 4.17, which takes
 * it for a hint, is checked too): 0 or the errno. */
static int reserve_at(uintptr_t a, size_t size)
{
	stat_inc(mmap_syscalls);
	char *p = mmap((void *)a, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	if ((uintptr_t)p == a)
		return 0;
	stat_inc(munmap_syscalls);
	return munmap(p, size) ? errno : EEXIST;
}

/* Aligned without mapping size + align for a moment (which an address-space
 * limit near 2 x size refuses): map size anywhere, then take the aligned
 * places at or around it, the one below first (the kernel places mappings
 * top-down, so the gap it chose goes on below). */
static int reserve_tight(size_t size, size_t align, void **out)
{
	stat_inc(mmap_syscalls);
	char *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	uintptr_t down = (uintptr_t)p & ~(uintptr_t)(align - 1);
	if (down == (uintptr_t)p) {
		*out = p;
		return 0;
	}
	stat_inc(munmap_syscalls);
	if (munmap(p, size))
		return errno;
	uintptr_t at[2] = { down, down + align };
	int e = ENOMEM;
	for (int i = 0; i < 2; i++) {
		if (!at[i] || at[i] + size < at[i])
			continue;
		if (!(e = reserve_at(at[i], size))) {
			*out = (void *)at[i];
			return 0;
		}
	}
	return e == EEXIST ? ENOMEM : e;
}

int os_reserve(size_t size, size_t align, void **out)
{
	int e = injected(OS_OP_RESERVE);
	if (e)
		return e;
	int saved = errno;
	size_t span = size + align;
	stat_inc(mmap_syscalls);
	char *p = mmap(NULL, span, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		e = errno;
		if (e == ENOMEM && align > 4096)
			e = reserve_tight(size, align, out);
		errno = saved;
		return e;
	}
	uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	size_t head = a - (uintptr_t)p, tail = span - head - size;
	if (head) {
		stat_inc(munmap_syscalls);
		munmap(p, head);
	}
	if (tail) {
		stat_inc(munmap_syscalls);
		munmap((char *)a + size, tail);
	}
	errno = saved;
	*out = (void *)a;
	return 0;
}

int os_map_rw(size_t size, void **out)
{
	int e = injected(OS_OP_RESERVE);
	if (e)
		return e;
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	e = p == MAP_FAILED ? errno : 0;
	errno = saved;
	if (!e)
		*out = p;
	return e;
}

int os_unmap(void *addr, size_t size)
{
	int saved = errno;
	stat_inc(munmap_syscalls);
	int e = os_result(munmap(addr, size) != 0, saved);
	if (!e)
		stat_flush_round(unmap);
	return e;
}

static int prot_bits(enum os_prot prot)
{
	return prot == OS_RW ? PROT_READ | PROT_WRITE : prot == OS_READ ? PROT_READ : PROT_NONE;
}

/* A flush round of mechanism mech (stats.h, stat_flush_round) for a call
 * that succeeded (e 0) and took something away from present pages: on x86
 * an entry that is not present (PROT_NONE, released, never touched) is not
 * cached by any CPU, so raising it needs no flush (os.h, enum os_takes). */
#define os_flushed(e, takes_away, mech) flushed_in(e, takes_away, &g_stats.flush_rounds_##mech)

static int flushed_in(int e, bool takes_away, uint64_t *mech)
{
	if (!e && takes_away)
		stat_flush_round_in(mech);
	return e;
}

/* mprotect (key < 0) or pkey_mprotect, a flush round if `flush`. */
static int protect_call(void *addr, size_t size, enum os_prot prot, int key, bool flush)
{
	int e = injected(OS_OP_PROTECT);
	if (e)
		return e;
	int saved = errno;
	long r = key < 0 ? mprotect(addr, size, prot_bits(prot))
			 : syscall(SYS_pkey_mprotect, addr, size, prot_bits(prot), key);
	return os_flushed(os_result(r != 0, saved), flush, protect);
}

int os_protect(void *addr, size_t size, enum os_prot prot)
{
	return protect_call(addr, size, prot, -1, prot != OS_RW);
}

int os_purge(void *addr, size_t size)
{
	int e = injected(OS_OP_PURGE);
	if (e)
		return e;
	int saved = errno;
	stat_inc(madvise_syscalls);
	return os_flushed(os_result(madvise(addr, size, MADV_DONTNEED) != 0, saved), true, purge);
}

#define OS_MADV_POPULATE_WRITE 23 /* linux/mman.h of 5.14 */

int os_populate(void *addr, size_t size)
{
	int saved = errno;
	stat_inc(madvise_syscalls);
	return os_result(madvise(addr, size, OS_MADV_POPULATE_WRITE) != 0, saved);
}

int os_hugepage(void *addr, size_t size, bool huge)
{
	int saved = errno;
	stat_inc(madvise_syscalls);
	return os_result(madvise(addr, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0, saved);
}

#define OS_MADV_GUARD_INSTALL 102 /* linux/mman.h of 6.13 */
#define OS_MADV_GUARD_REMOVE 103

int os_guard(void *addr, size_t size, bool install)
{
	int e = injected(OS_OP_PROTECT);
	if (e)
		return e;
	int saved = errno;
	stat_inc(madvise_syscalls);
	return os_flushed(os_result(madvise(addr, size, install ? OS_MADV_GUARD_INSTALL
								 : OS_MADV_GUARD_REMOVE) != 0,
				    saved),
			  install, guard);
}

#define OS_PIDFD_SELF (-10000) /* PIDFD_SELF_THREAD, linux/pidfd.h */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* How process_madvise names this process: 0 not known yet, 1 PIDFD_SELF,
 * 2 a pidfd of the call's own (a kernel before 6.15 answers PIDFD_SELF
 * with EBADF). */
static int vec_self;

static __thread int os_locked; /* the sandbox's, below */

/* process_madvise over the process's own pages through a pidfd opened for
 * this call: recorded as xpfo's while it is open (a lock that copies the
 * descriptor table meanwhile closes its copy), closed after it.  A locked
 * thread opens nothing (its filter refuses both calls): EPERM. */
static long vec_by_pidfd(const struct iovec *v, unsigned n, int advice)
{
	if (os_locked) {
		errno = EPERM;
		return -1;
	}
	long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
	if (fd < 0)
		return -1;
	os_fd_own((int)fd, true);
	long r = syscall(SYS_process_madvise, fd, v, (size_t)n, advice, 0u);
	int e = errno;
	os_fd_own((int)fd, false);
	close((int)fd);
	errno = e;
	return r;
}

static int madvise_vec(const uintptr_t *addr, const size_t *len, unsigned n, int advice,
		       size_t *done)
{
	struct iovec v[OS_GUARD_VEC];
	for (unsigned k = 0; k < n; k++) {
		v[k].iov_base = (void *)addr[k];
		v[k].iov_len = len[k];
	}
	int saved = errno;
	stat_inc(madvise_syscalls);
	int how = __atomic_load_n(&vec_self, __ATOMIC_RELAXED);
	long r = -1;
	if (how != 2) {
		int e = injected(OS_OP_SELF);
		if (e)
			errno = e;
		else
			r = syscall(SYS_process_madvise, OS_PIDFD_SELF, v, (size_t)n, advice, 0u);
		if (r >= 0 || errno != EBADF)
			how = 1;
		else
			how = 2;
		__atomic_store_n(&vec_self, how, __ATOMIC_RELAXED);
	}
	if (how == 2)
		r = vec_by_pidfd(v, n, advice);
	int e = r < 0 ? errno : 0;
	errno = saved;
	*done = e ? 0 : (size_t)r;
	return e;
}

/* The ranges this thread's last os_purge_vec released (their first
 * address, count and bytes): markers installed over the same ranges next
 * find no page to zap, so no flush (the revocation's batches do that:
 * alloc/revoke.c batch_purge). */
static __thread struct {
	uintptr_t first;
	unsigned n;
	size_t bytes;
} purged_vec;

static size_t vec_bytes(const size_t *len, unsigned n)
{
	size_t b = 0;
	for (unsigned k = 0; k < n; k++)
		b += len[k];
	return b;
}

/* The flush rounds of a process_madvise that covered `done` bytes of the
 * n ranges: one a range it reached (a range cut short counts as one). */
static void vec_rounds(const size_t *len, unsigned n, size_t done)
{
	for (unsigned k = 0; k < n && done; k++) {
		stat_flush_round(vector);
		done -= done < len[k] ? done : len[k];
	}
}

/* Whether the running kernel zaps all the ranges of one
 * process_madvise(MADV_DONTNEED) under one mmu_gather, one TLB flush for
 * the call: Linux 6.16 and later, and 6.12 where the call works at all
 * (mainline's 6.12 refuses the advice on the caller's own process, EINVAL:
 * kernel/'s series is what takes it, and its next patch gathers the
 * flushes).  Elsewhere each range is zapped and flushed on its own.  Read
 * once from uname; unknown counts as per range (the upper bound). */
static bool vec_purge_batched(void)
{
	static int known; /* 0 not read, 1 batched, 2 per range */
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!k) {
		struct utsname u;
		unsigned major = 0, minor = 0;
		int saved = errno;
		if (uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2)
			k = major > 6 || (major == 6 && (minor >= 16 || minor == 12)) ? 1 : 2;
		else
			k = 2;
		errno = saved;
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k == 1;
}

/* Installing markers zaps each range on its own: a flush round per range
 * the call covered (a range cut short counts as one), none where the
 * ranges' frames were released just before. */
int os_guard_vec(const uintptr_t *addr, const size_t *len, unsigned n, bool install,
		 enum os_takes takes, size_t *done)
{
	*done = 0;
	if (inject[OS_OP_PROTECT].count || n > OS_GUARD_VEC)
		return ECANCELED;
	bool empty = takes == OS_TAKES_NOTHING ||
		     (n && purged_vec.n == n && purged_vec.first == addr[0] &&
		      purged_vec.bytes == vec_bytes(len, n));
	purged_vec.n = 0;
	int e = madvise_vec(addr, len, n, install ? OS_MADV_GUARD_INSTALL : OS_MADV_GUARD_REMOVE,
			    done);
	if (install && !empty)
		vec_rounds(len, n, *done);
	return e;
}

bool os_purge_vec_one_flush(void)
{
	return vec_purge_batched();
}

/* MADV_DONTNEED over the ranges of one call: one flush for all of them
 * where the kernel gathers them (vec_purge_batched), one round; elsewhere
 * a round a range it reached. */
int os_purge_vec(const uintptr_t *addr, const size_t *len, unsigned n, size_t *done)
{
	*done = 0;
	if (inject[OS_OP_PURGE].count || n > OS_GUARD_VEC)
		return ECANCELED;
	int e = madvise_vec(addr, len, n, MADV_DONTNEED, done);
	if (!e && *done && vec_purge_batched())
		stat_flush_round(vector);
	else if (!e)
		vec_rounds(len, n, *done);
	purged_vec.n = 0;
	if (!e && n && *done == vec_bytes(len, n)) {
		purged_vec.first = addr[0];
		purged_vec.n = n;
		purged_vec.bytes = vec_bytes(len, n);
	}
	return e;
}

int os_protect_key(void *addr, size_t size, enum os_prot prot, int key, enum os_takes takes)
{
	return protect_call(addr, size, prot, key, takes == OS_TAKES_AWAY);
}

int os_remap(void *addr, size_t size, enum os_prot prot)
{
	int e = injected(OS_OP_PURGE);
	if (e)
		return e;
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *p = mmap(addr, size, prot_bits(prot),
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	e = p == MAP_FAILED ? errno : 0;
	if (!e)
		os_uffd_rearm(addr, size);
	errno = saved;
	return os_flushed(e, true, unmap); /* the old mapping is gone */
}

static int mem_io(bool write, void *addr, void *buf, size_t n);
static int fresh_copy_remap(void *addr, size_t size, bool readable, enum os_prot prot, int key);

int os_fresh_copy(void *addr, size_t size, bool readable, enum os_prot prot, int key)
{
	int e = injected(OS_OP_PROTECT);
	if (e)
		return e;
	/* Through /proc/self/mem: copy out, drop the frames, copy into fresh
	 * ones, then the new protection.  No protection opens on the way and
	 * the VMA is not replaced, so it can still merge with its neighbours. */
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *tmp = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = saved;
	if (tmp == MAP_FAILED)
		return ENOMEM;
	e = mem_io(false, addr, tmp, size);
	if (e == ENOSYS) {
		munmap(tmp, size);
		return fresh_copy_remap(addr, size, readable, prot, key);
	}
	/* the new protection before the new frames are written: pages first
	 * written under another key would never merge with their neighbours */
	if (!e)
		e = os_purge(addr, size);
	/* under a userfaultfd the purged pages are missing, and the kernel
	 * (the write below) may not fault them in: zero pages first, which
	 * are present when the protection changes (purged ones are not) */
	bool filled = !e && os_uffd_in((uintptr_t)addr);
	if (filled)
		e = os_uffd_fill(addr, size);
	if (!e)
		e = os_protect_key(addr, size, prot, key, filled ? OS_TAKES_AWAY : OS_TAKES_NOTHING);
	if (!e)
		e = mem_io(true, addr, tmp, size);
	munmap(tmp, size);
	return e;
}

static int mem_fd = -2; /* -2: not tried; -1: unavailable */

/* ---- sandbox (alloc/sandbox.c) ----
 * A locked thread may not open files: /proc/self/mem would reach every
 * page.  Its descriptor is closed, and nothing here tries to open one. */
static int os_mem_closed;                 /* for every thread: it stays closed */
static __thread int os_locked;            /* this thread opens no file */

void os_sandbox_lock(void)
{
	__atomic_store_n(&os_mem_closed, 1, __ATOMIC_RELEASE);
	int fd = __atomic_exchange_n(&mem_fd, -1, __ATOMIC_ACQ_REL);
	if (fd >= 0) {
		os_fd_own(fd, false);
		close(fd);
	}
}

void os_sandbox_thread(void)
{
	os_locked = 1;
}

/* ---- xpfo's own descriptors ----
 * One bit per descriptor number that xpfo keeps open beyond one call (the
 * memfds of shared runs, the userfaultfd, /proc/self/mem): the process's
 * record, set and cleared only by unlocked threads. */
#define OS_OWN_MAX 65536
static uint64_t own_fds[OS_OWN_MAX / 64];

int os_fd_own(int fd, bool own)
{
	if (fd < 0 || fd >= OS_OWN_MAX)
		return fd < 0 ? EBADF : EMFILE;
	uint64_t bit = (uint64_t)1 << (fd % 64);
	if (own)
		__atomic_fetch_or(&own_fds[fd / 64], bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&own_fds[fd / 64], ~bit, __ATOMIC_RELAXED);
	return 0;
}

int os_socketpair(int sv[2])
{
	int e = injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	return os_result(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0, saved);
}

int os_sandbox_files(void)
{
	int e = injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	return os_result(unshare(CLONE_FILES) != 0, saved);
}

unsigned os_sandbox_close_own(const int *keep, unsigned nkeep)
{
	unsigned n = 0;
	int saved = errno;
	for (int w = 0; w < OS_OWN_MAX / 64; w++) {
		uint64_t m = __atomic_load_n(&own_fds[w], __ATOMIC_RELAXED);
		for (; m; m &= m - 1) {
			int fd = w * 64 + __builtin_ctzll(m);
			bool kept = false;
			for (unsigned k = 0; k < nkeep; k++)
				kept |= keep[k] == fd;
			if (!kept && syscall(SYS_close, (long)fd) == 0)
				n++;
		}
	}
	errno = saved;
	return n;
}

bool os_thread_locked(void)
{
	return os_locked;
}

static int mem_open(void)
{
	int fd = __atomic_load_n(&mem_fd, __ATOMIC_ACQUIRE);
	if (fd != -2 || __atomic_load_n(&os_mem_closed, __ATOMIC_ACQUIRE))
		return fd == -2 ? -1 : fd;
	int saved = errno;
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd >= 0) { /* no room above the program's: the callers move pages instead */
		int high = os_fd_high(fd);
		if (high < 0)
			os_fd_close(fd);
		fd = high < 0 ? -1 : high;
	}
	if (fd >= 0 && os_fd_own(fd, true)) { /* the sandbox closes it in a locked thread */
		close(fd);
		fd = -1;
	}
	errno = saved;
	int expect = -2;
	if (!__atomic_compare_exchange_n(&mem_fd, &expect, fd, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (fd >= 0) {
			os_fd_own(fd, false);
			close(fd);
		}
		fd = expect;
	}
	return fd;
}

/* After fork the child has its own mm, and the inherited descriptor still
 * names the parent's: reopen lazily. */
void os_mem_forget(void)
{
	if (os_mem_closed)
		return;
	if (mem_fd >= 0) {
		os_fd_own(mem_fd, false);
		close(mem_fd);
	}
	mem_fd = -2;
}

static int mem_io(bool write, void *addr, void *buf, size_t n)
{
	if (injected(OS_OP_MEM))
		return ENOSYS;
	int fd = mem_open();
	if (fd < 0)
		return ENOSYS;
	int saved = errno, e = 0;
	char *b = buf;
	uintptr_t a = (uintptr_t)addr;
	while (n) {
		ssize_t r = write ? pwrite(fd, b, n, (off_t)a) : pread(fd, b, n, (off_t)a);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = r < 0 ? errno : EIO;
			break;
		}
		a += (size_t)r;
		b += r;
		n -= (size_t)r;
	}
	errno = saved;
	return e;
}

int os_mem_read(const void *addr, void *buf, size_t n)
{
	return mem_io(false, (void *)addr, buf, n);
}

int os_mem_write(void *addr, const void *buf, size_t n)
{
	return mem_io(true, addr, (void *)buf, n);
}

int os_mem_zero(void *addr, size_t n)
{
	static const char zero[4096];
	while (n) {
		size_t k = n < sizeof zero ? n : sizeof zero;
		int e = mem_io(true, addr, (void *)zero, k);
		if (e)
			return e;
		addr = (char *)addr + k;
		n -= k;
	}
	return 0;
}

/* The pages' frames move to a new address the kernel picks and nobody else
 * knows; [addr, addr+size) stays mapped (MREMAP_DONTUNMAP: no hole another
 * mmap could take), empty and as inaccessible as it was.  Only the moved
 * range is made prot.  On failure nothing has changed. */
int os_move_out(void *addr, size_t size, enum os_prot prot, void **out)
{
	int e = injected(OS_OP_PURGE);
	if (e)
		return e;
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *t = mremap(addr, size, size, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL);
	if (t == MAP_FAILED) {
		e = errno;
		errno = saved;
		return e == EFAULT ? os_move_out_pages(addr, size, prot, out) : e;
	}
	stat_flush_round(unmap); /* the pages left addr */
	if (prot != OS_NONE && mprotect(t, size, prot_bits(prot))) {
		e = errno;
		if (os_move_back(t, addr, size))
			os_abort(); /* cannot happen: the range was just split off */
		errno = saved;
		return e;
	}
	errno = saved;
	*out = t;
	return 0;
}

int os_move_back(void *t, void *addr, size_t size)
{
	int saved = errno, e = 0;
	if (mprotect(t, size, PROT_NONE) ||
	    mremap(t, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED)
		e = errno;
	if (!e) {
		stat_flush_round(protect); /* t closed */
		stat_flush_round(unmap); /* the pages left t */
		os_uffd_rearm(addr, size);
	}
	errno = saved;
	return e == EFAULT ? os_move_back_pages(t, addr, size) : e;
}

/* Without /proc/self/mem.  A range that is not readable is moved away to be
 * read (os_move_out): it never becomes readable at its own address. */
static int fresh_copy_remap(void *addr, size_t size, bool readable, enum os_prot prot, int key)
{
	int e = injected(OS_OP_PROTECT);
	if (e)
		return e;
	void *src = addr;
	if (!readable && (e = os_move_out(addr, size, OS_READ, &src)))
		return e;
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *tmp = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (tmp == MAP_FAILED)
		goto restore;
	memcpy(tmp, src, size);
	if ((prot != OS_RW || key > 0) &&
	    (key < 0 ? mprotect(tmp, size, prot_bits(prot))
		     : syscall(SYS_pkey_mprotect, tmp, size, prot_bits(prot), key)))
		goto unmap;
	/* atomically replaces the old mapping: no moment without one */
	if (mremap(tmp, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED)
		goto unmap;
	stat_flush_round(unmap); /* the old mapping at addr replaced */
	if (src != addr) { /* the old frames leave the process */
		munmap(src, size);
		stat_flush_round(unmap);
	}
	os_uffd_rearm(addr, size);
	errno = saved;
	return 0;
unmap:
	e = errno;
	munmap(tmp, size);
	errno = e;
restore:
	e = errno;
	if (src != addr && os_move_back(src, addr, size))
		os_abort(); /* its contents would be lost */
	errno = saved;
	return e;
}

/* Threads: from /proc/self/status: the kernel's count, exiting ones
 * included until they are reaped. */
static long status_threads(void)
{
	char buf[2048];
	long n = os_read_file("/proc/self/status", buf, sizeof buf);
	if (n < 0)
		return n;
	for (char *p = buf; *p; p++)
		if ((p == buf || p[-1] == '\n') && !strncmp(p, "Threads:", 8)) {
			long v = 0;
			for (p += 8; *p == ' ' || *p == '\t'; p++)
				;
			for (; *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (*p - '0');
			return v;
		}
	return -ENOENT;
}

/* A thread pthread_join has returned for stays counted until the kernel
 * reaps it, after its exit path has run: under load that took more than
 * 50 ms (tests/isolation/apimisuse refused a STRICT enter right after a
 * join, 1 of 3,000).  PF_EXITING is set at the start of that path, before
 * the join's wake-up, and such a thread never runs user code again.  Field
 * 9 of /proc/<tid>/stat is the task's flags. */
#define PF_EXITING_FLAG 0x4ul

static bool task_exiting(const char *tid)
{
	char path[64] = "/proc/self/task/", buf[512];
	size_t k = strlen(path);
	for (const char *p = tid; *p && k < sizeof path - 8; p++)
		path[k++] = *p;
	memcpy(path + k, "/stat", 6);
	if (os_read_file(path, buf, sizeof buf) <= 0)
		return false; /* gone, or unreadable: not known to be exiting */
	char *p = strrchr(buf, ')');
	for (int field = 2; field < 9 && p; field++) /* p: before field `field + 1` */
		p = strchr(p + 1, ' ');
	return p && (strtoul(p + 1, NULL, 10) & PF_EXITING_FLAG);
}

/* Tasks of /proc/self/task known to be exiting, or -errno; *listed: all
 * the tasks listed. */
static long exiting_threads(long *listed)
{
	int saved = errno;
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		long e = -errno;
		errno = saved;
		return e;
	}
	char buf[4096] __attribute__((aligned(8)));
	long n = 0;
	for (;;) {
		long r = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			n = -errno;
			break;
		}
		if (r == 0)
			break;
		for (long off = 0; off < r;) {
			/* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *name = buf + off + 19;
			if (name[0] >= '0' && name[0] <= '9') {
				++*listed;
				n += task_exiting(name);
			}
			off += reclen;
		}
	}
	close(fd);
	errno = saved;
	return n;
}

/* The kernel's count less the tasks seen exiting: a listing of
 * /proc/self/task can miss a thread while another one is being unhashed
 * (counting the listing let a STRICT enter through with a live thread, 1
 * of 300), so the count comes from /proc/self/status, and only a task
 * positively seen exiting is taken off: a miss refuses, it never admits.
 * A thread made and exiting after the count was read is in the listing:
 * the larger of the two counts is used. */
long os_thread_count(void)
{
	if (os_locked)
		return -EPERM;
	long n = status_threads();
	if (n <= 1)
		return n;
	long listed = 0, x = exiting_threads(&listed);
	if (x < 0)
		return n;
	return (listed > n ? listed : n) - x;
}

int os_random(void *buf, size_t n)
{
	int saved = errno;
	char *b = buf;
	while (n) {
		ssize_t r = getrandom(b, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			errno = saved;
			return e;
		}
		b += r;
		n -= (size_t)r;
	}
	errno = saved;
	return 0;
}

void os_write(int fd, const char *buf, size_t n)
{
	int saved = errno;
	while (n) {
		ssize_t r = write(fd, buf, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		buf += r;
		n -= (size_t)r;
	}
	errno = saved;
}

long os_read_file(const char *path, char *buf, size_t n)
{
	if (os_locked)
		return -EPERM;
	int saved = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		long e = -errno;
		errno = saved;
		return e;
	}
	size_t got = 0;
	while (got + 1 < n) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	close(fd);
	errno = saved;
	return (long)got;
}

/* ---- xpfo's own descriptors -------------------------------------------
 * The descriptors xpfo keeps open (the userfaultfd, /proc/self/mem, the
 * memfds behind alias views, the copy of stderr for the exit statistics)
 * live in one range at the top of the descriptor table: the FD_SPAN numbers
 * below min(RLIMIT_NOFILE, FD_TOP), never the lowest free numbers that the
 * program's next open gets.  The range is fixed by the first call that
 * finds room (os_fd_range).  Under FD_LIMIT_MIN descriptors there is no
 * room that is not the program's: EMFILE, and the caller does without (or
 * keeps the low one where the program asked for it: xpfo_share_fd). */
#define FD_SPAN 32
#define FD_TOP 1024      /* higher numbers grow the kernel's descriptor table */
#define FD_LIMIT_MIN 64
static int fd_lo = -1;

int os_fd_range(int *lo, int *hi)
{
	int l = __atomic_load_n(&fd_lo, __ATOMIC_ACQUIRE);
	if (l < 0) {
		int saved = errno;
		struct rlimit r;
		int bad = getrlimit(RLIMIT_NOFILE, &r);
		errno = saved;
		if (bad || r.rlim_cur < FD_LIMIT_MIN)
			return EMFILE;
		int top = r.rlim_cur < FD_TOP ? (int)r.rlim_cur : FD_TOP;
		int expect = -1;
		l = top - FD_SPAN;
		if (!__atomic_compare_exchange_n(&fd_lo, &expect, l, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			l = expect;
	}
	*lo = l;
	*hi = l + FD_SPAN;
	return 0;
}

/* A close-on-exec copy of fd in the range, or -errno (EMFILE: no room). */
static int fd_place(int fd)
{
	int lo, hi, e = os_fd_range(&lo, &hi);
	if (e)
		return -e;
	int saved = errno;
	int r = fcntl(fd, F_DUPFD_CLOEXEC, lo);
	e = r < 0 ? (errno == EINVAL ? EMFILE : errno) : 0; /* EINVAL: the limit fell below lo */
	if (r >= hi) {
		close(r);
		e = EMFILE;
	}
	errno = saved;
	return e ? -e : r;
}

int os_fd_high(int fd)
{
	if (fd < 0)
		return -EBADF;
	int r = fd_place(fd);
	if (r >= 0)
		os_fd_close(fd);
	return r;
}

int os_dup_high(int fd)
{
	int r = fd_place(fd);
	return r < 0 ? -1 : r;
}

/* One chunk out: a socket with MSG_NOSIGNAL (a closed peer is EPIPE, not
 * SIGPIPE), anything else (ENOTSOCK: a pipe) with write. */
static ssize_t send_some(int fd, const char *buf, size_t n, bool *sock)
{
	if (*sock) {
		ssize_t r = sendto(fd, buf, n, MSG_NOSIGNAL, NULL, 0);
		if (r >= 0 || errno != ENOTSOCK)
			return r;
		*sock = false;
	}
	return write(fd, buf, n);
}

int os_send_all(int fd, const void *buf, size_t n)
{
	int saved = errno, e = 0;
	bool sock = true;
	const char *c = buf;
	while (n) {
		ssize_t r = send_some(fd, c, n, &sock);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		c += r;
		n -= (size_t)r;
	}
	errno = saved;
	return e;
}

int os_recv_all(int fd, void *buf, size_t n, size_t *got)
{
	int saved = errno, e = 0;
	char *c = buf;
	*got = 0;
	while (*got < n) {
		ssize_t r = read(fd, c + *got, n - *got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	errno = saved;
	return e;
}

const void *os_stdout_buffer(bool *unbuffered)
{
#ifdef __GLIBC__
	/* an unbuffered stream's buffer is the byte inside the FILE */
	*unbuffered = stdout->_IO_buf_base == stdout->_shortbuf;
	return stdout->_IO_buf_base;
#else
	*unbuffered = false;
	return NULL;
#endif
}

void os_stdout_unbuffer(void)
{
	int saved = errno;
	fflush(stdout);
	setvbuf(stdout, NULL, _IONBF, 0);
	errno = saved;
}

long os_gettid(void)
{
	return syscall(SYS_gettid);
}

bool os_thread_alive(long tid)
{
	int saved = errno;
	bool alive = syscall(SYS_tgkill, (long)getpid(), tid, 0) == 0 || errno != ESRCH;
	errno = saved;
	return alive;
}

void os_raise_self(int sig)
{
	int saved = errno;
	syscall(SYS_tgkill, (long)getpid(), os_gettid(), sig);
	errno = saved;
}

static uintptr_t parse_hex(const char *s, const char **end)
{
	uintptr_t v = 0;
	for (;; s++) {
		unsigned c = (unsigned char)*s;
		unsigned d = c - '0' < 10 ? c - '0'
			: (c | 32) - 'a' < 6 ? (c | 32) - 'a' + 10 : 16;
		if (d == 16)
			break;
		v = v * 16 + d;
	}
	*end = s;
	return v;
}

long os_count_vmas(uintptr_t lo, uintptr_t hi)
{
	if (os_locked)
		return -EPERM;
	int saved = errno;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		long e = -errno;
		errno = saved;
		return e;
	}
	char buf[4096];
	size_t have = 0;
	long count = 0;
	int mid_line = 0; /* the buffer starts inside a line already seen */
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		size_t i = 0;
		for (;;) {
			size_t nl = i;
			while (nl < have && buf[nl] != '\n')
				nl++;
			if (nl == have)
				break;
			if (!mid_line) {
				const char *e;
				uintptr_t a = parse_hex(buf + i, &e);
				if (a >= lo && a < hi)
					count++;
			}
			mid_line = 0;
			i = nl + 1;
		}
		if (i == 0 && have == sizeof buf) {
			/* a line longer than the buffer: count it, skip the rest */
			if (!mid_line) {
				const char *e;
				uintptr_t a = parse_hex(buf, &e);
				if (a >= lo && a < hi)
					count++;
			}
			mid_line = 1;
			have = 0;
			continue;
		}
		have -= i;
		for (size_t k = 0; k < have; k++)
			buf[k] = buf[i + k];
	}
	close(fd);
	errno = saved;
	return count;
}

_Noreturn void os_abort(void)
{
	abort();
}

/* ---- signals, scheduling, identity, keys: the rest of the process's
 * calls, so that no other file makes one ---------------------------------- */

void os_yield(void)
{
	sched_yield();
}

uint64_t os_monotonic_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts)) /* cannot fail for this clock */
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

long os_getpid(void)
{
	return getpid();
}

bool os_is_privileged(void)
{
	return getauxval(AT_SECURE) != 0;
}

long os_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

int os_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	int saved = errno;
	return os_result(sigaction(sig, sa, old) != 0, saved);
}

int os_pkey_alloc(unsigned rights, int *key)
{
	int saved = errno;
	int k = arch_pkey_sys_alloc(0, rights);
	int e = os_result(k < 0, saved);
	*key = k;
	return e;
}

_Noreturn void os_exit(int code)
{
	_exit(code);
}

/* Can this process use keys (enum arch_pkey_status): allocates and frees a
 * key, so it lives here. */
int os_pkey_probe(void)
{
	return (int)arch_pkey_probe();
}
