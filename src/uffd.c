/* uffd.c - the userfaultfd part of the OS boundary (os.h contract: 0 or a
 * positive errno, errno preserved, every call counted).
 *
 * One descriptor per process, opened with UFFD_FEATURE_SIGBUS: a missing
 * page in the registered range is never waited on by a handler thread; the
 * faulting thread itself gets SIGBUS (BUS_ADRERR, the address) and
 * api/fault.c answers it from the ownership tables, filling the page
 * (os_uffd_fill) or reporting it.  Registered UFFD_USER_MODE_ONLY where the
 * kernel has it (allowed without privilege); a kernel access to a missing
 * page of the range fails with EFAULT instead (so grants fill their pages).
 * A mapping made over the range (MAP_FIXED, mremap) is not registered:
 * os.c and memfd.c call os_uffd_rearm after each such mapping. */
#include "os.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

static int uffd = -1;
static uintptr_t reg_lo, reg_hi; /* the registered range */
static int uffd_lost;            /* a re-registration failed: not every page is watched */

/* A new descriptor: the syscall (user-mode only, then plain, which needs
 * privilege or vm.unprivileged_userfaultfd=1), then /dev/userfaultfd. */
static int uffd_new(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	long fd = syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_userfaultfd, flags);
	if (fd >= 0)
		return (int)fd;
	int e = errno;
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -e;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags | UFFD_USER_MODE_ONLY);
	if (fd < 0 && errno == EINVAL)
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
	if (fd < 0)
		e = errno;
	close(dev);
	return fd >= 0 ? (int)fd : -e;
}

int os_uffd_open(void)
{
	int e = os_injected(OS_OP_UFFD);
	if (e)
		return e;
	if (uffd >= 0)
		return 0;
	int saved = errno;
	stat_inc(uffd_syscalls);
	int fd = uffd_new();
	if (fd >= 0) { /* not one of the program's low numbers: none then */
		int high = os_fd_high(fd);
		if (high < 0)
			os_fd_close(fd);
		fd = high;
	}
	if (fd < 0) {
		errno = saved;
		return -fd;
	}
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_SIGBUS };
	stat_inc(uffd_syscalls);
	if (ioctl(fd, UFFDIO_API, &api) || !(api.ioctls & (1ull << _UFFDIO_REGISTER))) {
		e = errno ? errno : ENOSYS;
		close(fd);
		errno = saved;
		return e ? e : ENOSYS;
	}
	if ((e = os_fd_own(fd, true))) { /* the sandbox closes it in a locked thread */
		close(fd);
		errno = saved;
		return e;
	}
	uffd = fd;
	uffd_lost = 0;
	errno = saved;
	return 0;
}

static int do_register(uintptr_t a, size_t size)
{
	int e = os_injected(OS_OP_UFFD);
	if (e)
		return e;
	int saved = errno;
	struct uffdio_register r = { .range = { a, size }, .mode = UFFDIO_REGISTER_MODE_MISSING };
	stat_inc(uffd_syscalls);
	if (ioctl(uffd, UFFDIO_REGISTER, &r))
		e = errno;
	else if (!(r.ioctls & (1ull << _UFFDIO_ZEROPAGE)))
		e = ENOTSUP;
	errno = saved;
	return e;
}

int os_uffd_register(void *addr, size_t size)
{
	if (uffd < 0)
		return EBADF;
	/* the range first: a mapping another thread makes over it while it is
	 * registered (alloc/uffd.c arms while the heap is in use) is either
	 * covered by the register or registered again by its os_uffd_rearm */
	__atomic_store_n(&reg_lo, (uintptr_t)addr, __ATOMIC_SEQ_CST);
	__atomic_store_n(&reg_hi, (uintptr_t)addr + size, __ATOMIC_SEQ_CST);
	int e = do_register((uintptr_t)addr, size);
	if (e)
		reg_lo = reg_hi = 0;
	return e;
}

void os_uffd_rearm(void *addr, size_t size)
{
	uintptr_t a = (uintptr_t)addr;
	if (a >= __atomic_load_n(&reg_hi, __ATOMIC_SEQ_CST) || a + size <= reg_lo || uffd < 0)
		return; /* reg_hi first: published after uffd */
	if (os_thread_locked() || do_register(a, size))
		__atomic_store_n(&uffd_lost, 1, __ATOMIC_RELAXED);
}

bool os_uffd_armed(void)
{
	return uffd >= 0 && !__atomic_load_n(&uffd_lost, __ATOMIC_RELAXED);
}

bool os_uffd_in(uintptr_t a)
{
	return uffd >= 0 && a - reg_lo < reg_hi - reg_lo;
}

int os_uffd_fd(void)
{
	return uffd;
}

void os_uffd_forget(void)
{
	if (uffd >= 0) { /* the parent's: its ioctls would act on the parent */
		os_fd_own(uffd, false);
		close(uffd);
	}
	uffd = -1;
	reg_lo = reg_hi = 0;
}

/* Skip the resident pages at the start of [a, end): the first page that
 * is not resident, or end. */
static uintptr_t skip_present(uintptr_t a, uintptr_t end)
{
	unsigned char vec[256];
	while (a < end) {
		size_t n = (end - a) >> 12 < sizeof vec ? (end - a) >> 12 : sizeof vec;
		stat_inc(uffd_syscalls);
		if (mincore((void *)a, n << 12, vec))
			return a + 4096; /* one page at a time, then */
		for (size_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				return a + (i << 12);
		a += n << 12;
	}
	return end;
}

/* ZEROPAGE over [a, end): 0 or an errno.  ENOENT means the range is not
 * inside one registered VMA: adjacent anonymous VMAs do not always merge
 * (different anon_vma), so the range is halved until each part is; a
 * single page that is not registered is left alone (nothing watches it). */
static int fill_range(uintptr_t a, uintptr_t end)
{
	while (a < end) {
		struct uffdio_zeropage z = { .range = { a, end - a } };
		stat_inc(uffd_syscalls);
		if (!ioctl(uffd, UFFDIO_ZEROPAGE, &z))
			return 0;
		int e = errno;
		uintptr_t done = z.zeropage > 0 ? (uintptr_t)z.zeropage : 0;
		if (e == EAGAIN) {
			a += done;
		} else if (e == EEXIST) { /* a page is there already: go past it
					   * (mincore reads the caller's own address space: in the
					   * sandbox executor, not the filled one; one page at least) */
			a = skip_present(a + done + 4096, end);
		} else if (e == ENOENT) {
			if (end - a == 4096)
				return 0;
			uintptr_t mid = a + (((end - a) >> 13) << 12);
			e = fill_range(a, mid);
			return e ? e : fill_range(mid, end);
		} else {
			return e;
		}
	}
	return 0;
}

int os_uffd_fill(void *addr, size_t size)
{
	if (uffd < 0)
		return 0;
	int e = os_injected(OS_OP_UFFD);
	if (e)
		return e;
	int saved = errno;
	e = fill_range((uintptr_t)addr, (uintptr_t)addr + size);
	errno = saved;
	return e;
}
