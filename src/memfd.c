/* memfd.c - the OS layer's part for secret memory (memfd_secret) and alias
 * mappings (memfd_create).  Contract of os.h: 0 or a positive errno, errno
 * preserved, every call counted. */
#include "os.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

static int prot_of(enum os_prot prot)
{
	return prot == OS_RW ? PROT_READ | PROT_WRITE : prot == OS_READ ? PROT_READ : PROT_NONE;
}

/* A new memfd_secret file of size bytes, or -errno. */
static int secret_file(size_t size)
{
	int e = os_injected(OS_OP_SECRET);
	if (e)
		return -e;
	int fd = (int)syscall(SYS_memfd_secret, (unsigned)O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (size && ftruncate(fd, (off_t)size)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int os_secret_probe(void)
{
	int saved = errno;
	int fd = secret_file(0);
	errno = saved;
	if (fd < 0)
		return -fd;
	close(fd);
	return 0;
}

/* Map a new file (secret, or anon when fd < 0) at addr (MAP_FIXED) or
 * anywhere (addr NULL); *out gets the address. */
static int map_file(void *addr, size_t size, int prot, int fd, void **out)
{
	stat_inc(mmap_syscalls);
	int flags = fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE : MAP_SHARED;
	void *p = mmap(addr, size, prot, flags | (addr ? MAP_FIXED : 0), fd, 0);
	if (p == MAP_FAILED)
		return errno;
	*out = p;
	return 0;
}

/* Fault every page of a new secret mapping in now.  Kernels that charge
 * RLIMIT_MEMLOCK per fault (Debian's 6.1: secretmem_fault returns
 * VM_FAULT_SIGBUS past the limit) would otherwise kill the program at the
 * first touch past the limit.  MADV_POPULATE_WRITE cannot do it (it is
 * GUP, which secret memory refuses), but a kernel write into the pages can:
 * read(2) from /dev/zero faults them in from kernel mode, where a fault
 * that fails is EFAULT for the call, not a signal.  Newer kernels charge at
 * mmap time (EAGAIN there). */
static int populate(void *p, size_t size)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char *b = p;
	int e = 0;
	while (size) {
		ssize_t r = read(fd, b, size);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			e = ENOMEM; /* EFAULT: a page could not be had (the limit) */
			break;
		}
		b += r;
		size -= (size_t)r;
	}
	close(fd);
	return e;
}

/* A new secret file mapped read-write somewhere, populated: *out (set
 * only on success). */
static int secret_tmp(size_t size, void **out)
{
	void *p = NULL;
	int fd = secret_file(size);
	int e = fd < 0 ? -fd : map_file(NULL, size, PROT_READ | PROT_WRITE, fd, &p);
	if (fd >= 0)
		close(fd); /* the mapping holds the file */
	if (!e && (e = populate(p, size)))
		munmap(p, size);
	if (!e)
		*out = p;
	return e;
}

/* Made elsewhere and moved into place, so that the range is never open at
 * addr before it has its protection. */
int os_secret_map(void *addr, size_t size, enum os_prot prot)
{
	int saved = errno;
	void *tmp = NULL;
	int e = secret_tmp(size, &tmp);
	if (!e && prot != OS_RW && mprotect(tmp, size, prot_of(prot)))
		e = errno;
	stat_inc(mmap_syscalls);
	if (!e && mremap(tmp, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED)
		e = errno;
	if (!e)
		stat_flush_round(unmap); /* the old mapping at addr replaced */
	if (e && tmp)
		munmap(tmp, size);
	errno = saved;
	return e;
}

static int set_prot(void *p, size_t size, enum os_prot prot, int key)
{
	if (key > 0)
		return syscall(SYS_pkey_mprotect, p, size, prot_of(prot), key) ? errno : 0;
	return mprotect(p, size, prot_of(prot)) ? errno : 0;
}

/* Copy [addr, +size) into tmp (a fresh mapping, read-write), give tmp its
 * protection and put it in place of addr in one mremap; the old frames
 * leave (moved out when addr was not readable, so it never opens). */
static int copy_replace(void *addr, size_t size, bool readable, enum os_prot prot, int key, void *tmp)
{
	void *src = addr;
	int e = 0;
	if (!readable && (e = os_move_out(addr, size, OS_READ, &src)))
		goto unmap;
	memcpy(tmp, src, size);
	if ((prot != OS_RW || key > 0) && (e = set_prot(tmp, size, prot, key)))
		goto restore;
	stat_inc(mmap_syscalls);
	if (mremap(tmp, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, addr) == MAP_FAILED) {
		e = errno;
		goto restore;
	}
	stat_flush_round(unmap); /* the old mapping at addr replaced */
	if (src != addr) {
		munmap(src, size);
		stat_flush_round(unmap);
	}
	return 0;
restore:
	if (src != addr && os_move_back(src, addr, size))
		os_abort(); /* its contents would be lost */
unmap:
	munmap(tmp, size);
	return e;
}

int os_fresh_copy_anon(void *addr, size_t size, bool readable, enum os_prot prot, int key)
{
	int e = os_injected(OS_OP_PROTECT);
	if (e)
		return e;
	int saved = errno;
	void *tmp = NULL;
	e = map_file(NULL, size, PROT_READ | PROT_WRITE, -1, &tmp);
	if (!e)
		e = copy_replace(addr, size, readable, prot, key, tmp);
	if (!e)
		os_uffd_rearm(addr, size);
	errno = saved;
	return e;
}

int os_fresh_copy_secret(void *addr, size_t size, bool readable, enum os_prot prot, int key)
{
	int saved = errno;
	void *tmp = NULL;
	int e = secret_tmp(size, &tmp);
	if (!e)
		e = copy_replace(addr, size, readable, prot, key, tmp);
	errno = saved;
	return e;
}

/* os_move_out for a range over several mappings (mremap moves one at a
 * time: EFAULT): page by page into one new range.  A secret run is made of
 * one file, but an earlier move of some of its pages leaves the mapping
 * split (secret VMAs do not merge back). */
int os_move_out_pages(void *addr, size_t size, enum os_prot prot, void **out)
{
	int saved = errno, e = 0;
	char *t = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED) {
		e = errno;
		errno = saved;
		return e;
	}
	size_t moved = 0;
	for (; moved < size; moved += 4096)
		if (mremap((char *)addr + moved, 4096, 4096,
			   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, t + moved) == MAP_FAILED) {
			e = errno;
			break;
		}
	if (!e && prot != OS_NONE && mprotect(t, size, prot_of(prot)))
		e = errno;
	if (e) {
		if (os_move_back_pages(t, addr, moved))
			os_abort(); /* cannot happen: each page was just moved */
		munmap(t, size);
	}
	errno = saved;
	if (!e)
		*out = t;
	return e;
}

int os_move_back_pages(void *t, void *addr, size_t size)
{
	int saved = errno, e = 0;
	if (mprotect(t, size, PROT_NONE))
		e = errno;
	for (size_t off = 0; off < size && !e; off += 4096)
		if (mremap((char *)t + off, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
			   (char *)addr + off) == MAP_FAILED)
			e = errno;
	if (!e)
		os_uffd_rearm(addr, size);
	errno = saved;
	return e;
}

/* The seals of a shared run's memfd, added once our writable mapping of
 * it exists, before the bytes move in and any descriptor leaves.  F_SEAL_SEAL: no holder can add
 * a seal, F_SEAL_SHRINK would stop the revocation's truncation and
 * F_SEAL_WRITE or F_SEAL_FUTURE_WRITE its hole punch.  F_SEAL_GROW: a file
 * truncated by the revocation (or shrunk by a holder) never gets pages back
 * under the old mappings.  F_SEAL_FUTURE_WRITE (read-only files): no write,
 * no new writable shared mapping, no hole punch, by anyone, however the
 * file is opened again (/proc/PID/fd/N); the mapping made before it, ours,
 * keeps its right to write (mm/memfd.c, mm/shmem.c).  Truncation is still
 * allowed: only F_SEAL_SHRINK stops it. */
static int alias_seals(bool readonly)
{
	return F_SEAL_GROW | F_SEAL_SEAL | (readonly ? F_SEAL_FUTURE_WRITE : 0);
}

int os_alias_create(void *addr, size_t size, enum os_prot prot, int key, bool readonly, int *out)
{
	int e = os_injected(OS_OP_ALIAS);
	if (e)
		return e;
	int saved = errno;
	int fd = memfd_create("xpfo-share", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *tmp = NULL;
	if (fd < 0)
		e = errno;
	else if (ftruncate(fd, (off_t)size))
		e = errno;
	else if (!(e = map_file(NULL, size, PROT_READ | PROT_WRITE, fd, &tmp))) {
		/* sealed after our writable mapping exists, before the bytes
		 * move in: the run never lies in a file a holder could seal */
		if (fcntl(fd, F_ADD_SEALS, alias_seals(readonly)))
			e = errno;
		if (e)
			munmap(tmp, size);
		else
			e = copy_replace(addr, size, true, prot, key, tmp);
	}
	if (e && fd >= 0)
		close(fd);
	errno = saved;
	if (!e) { /* kept: moved high, else low (the program asked for the view) */
		int high = os_fd_high(fd);
		fd = high >= 0 ? high : fd;
		e = os_fd_own(fd, true); /* the sandbox closes it in a locked thread */
		if (e)
			close(fd);
		else
			*out = fd;
	}
	return e;
}

int os_alias_open(int fd, bool write, int *out)
{
	int saved = errno;
	char path[40];
	/* the calling thread's table: /proc/self is the thread group leader's,
	 * whose table is its own once it is locked (os_sandbox_files) */
	snprintf(path, sizeof path, "/proc/thread-self/fd/%d", fd);
	int r = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	int e = r < 0 ? errno : 0;
	errno = saved;
	if (!e)
		*out = r;
	return e;
}

int os_alias_truncate(int fd)
{
	int e = os_injected(OS_OP_ALIAS);
	if (!e && os_thread_locked())
		e = EPERM; /* its table holds none of xpfo's descriptors */
	int saved = errno;
	if (!e && ftruncate(fd, 0))
		e = errno;
	if (!e)
		stat_flush_round(unmap); /* every mapping of the file loses its pages */
	/* sealed at its creation: no holder can grow it back into new pages
	 * under the old mappings (checked: a file made otherwise is a bug) */
	int seals = e ? 0 : fcntl(fd, F_GET_SEALS);
	if (!e && seals < 0)
		e = errno;
	else if (!e && (seals & (F_SEAL_GROW | F_SEAL_SEAL)) != (F_SEAL_GROW | F_SEAL_SEAL))
		e = EINVAL;
	if (!e) {
		os_fd_own(fd, false);
		close(fd);
	}
	errno = saved;
	return e;
}

/* A locked thread closed xpfo's descriptors in its own table at the lock:
 * a number it holds now is its own (received later), never xpfo's. */
void os_fd_close(int fd)
{
	if (os_thread_locked())
		return;
	int saved = errno;
	os_fd_own(fd, false);
	close(fd);
	errno = saved;
}

int os_alias_punch(int fd, size_t off, size_t len, bool tail)
{
	int e = os_injected(OS_OP_ALIAS);
	if (!e && os_thread_locked())
		e = EPERM; /* its table holds none of xpfo's descriptors */
	int saved = errno;
	if (!e && tail && ftruncate(fd, (off_t)off))
		e = errno;
	else if (!e && !tail &&
		 fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		e = errno;
	if (!e)
		stat_flush_round(unmap);
	errno = saved;
	return e;
}

/* The value in kB of a "Name:   123 kB" line of smaps. */
static uint64_t kb_of(const char *s)
{
	uint64_t v = 0;
	while (*s == ' ')
		s++;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v << 10;
}

/* One line of /proc/self/smaps: a mapping's header or one of its fields. */
static void usage_line(const char *l, int *in, uint64_t *mapped, uint64_t *resident)
{
	if ((l[0] >= '0' && l[0] <= '9') || (l[0] >= 'a' && l[0] <= 'f'))
		*in = strstr(l, "/secretmem") != NULL;
	else if (*in && !strncmp(l, "Size:", 5))
		*mapped += kb_of(l + 5);
	else if (*in && !strncmp(l, "Rss:", 4))
		*resident += kb_of(l + 4);
}

int os_secret_usage(uint64_t *mapped, uint64_t *resident)
{
	int saved = errno;
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	*mapped = *resident = 0;
	if (fd < 0) {
		int e = errno;
		errno = saved;
		return e;
	}
	char buf[4096], l[512];
	size_t ln = 0;
	int in = 0;
	ssize_t r;
	while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] != '\n') {
				if (ln < sizeof l - 1)
					l[ln++] = buf[i];
				continue;
			}
			l[ln] = 0;
			usage_line(l, &in, mapped, resident);
			ln = 0;
		}
	close(fd);
	errno = saved;
	return 0;
}
