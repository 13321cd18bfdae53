/*
 * kernel/ktest.c: memfd_secret checks and the direct-map measurements, run
 * as a static binary inside the QEMU guest by kernel/test.sh.
 *
 *   ktest check          functional checks, one "XPFO-KTEST: PASS|FAIL name"
 *                        line each
 *   ktest measure MIB THREADS
 *                        THREADS threads touch a MIB MiB secret region page
 *                        by page; print the CAL (function-call interrupt)
 *                        count of /proc/interrupts, the time per fault, and
 *                        how many of the pages are still in the direct map
 *   ktest churn N        N times: new secret file, touch one page, close
 *   ktest memlock0 N     the same with RLIMIT_MEMLOCK=0 (every touch is
 *                        SIGBUS), the store emptied before each one
 *   ktest dmap MIB CHUNK MIB MiB of secret churn in CHUNK MiB files; print
 *                        the direct map's page sizes and split counters
 *                        before and after
 *   ktest madv ROUNDS    ROUNDS times: populate 64 ranges of 4 pages (in 64
 *                        VMAs, then in one VMA) and release them with one
 *                        process_madvise(MADV_DONTNEED) (the kernel may
 *                        refuse: then with 64 madvise() calls, as on 6.12)
 *                        while a thread spins on every other CPU; print
 *                        the CAL and TLB interrupts per call
 *   ktest madv-check     only the process_madvise checks of "check"
 *
 * Every check can fail: the refusals (vmsplice, process_vm_readv) are checked
 * against a control on ordinary shared memory that must succeed, and a
 * missing memfd_secret is a failure, not a skip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <linux/userfaultfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <elf.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#define PAGE 4096UL
#define TAG "XPFO-KTEST: "

static int failures;

static void report(int ok, const char *name, const char *fmt, ...)
{
	char why[256] = "";
	va_list ap;

	if (fmt && !ok) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	printf(TAG "%s %s%s%s\n", ok ? "PASS" : "FAIL", name,
	       why[0] ? ": " : "", why);
	fflush(stdout);
	if (!ok)
		failures++;
}

static int secret_fd(void)
{
	return (int)syscall(SYS_memfd_secret, 0);
}

/* A shared mapping of a new secret file of @len bytes, or NULL. */
static char *secret_map(size_t len, int *fdp)
{
	int fd = secret_fd();
	char *p;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)len) != 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return p;
}

static int all_zero(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static void fill(char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(seed + i * 7);
}

static int verify(const char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (char)(seed + i * 7))
			return 0;
	return 1;
}

/* Sum of one row of /proc/interrupts ("CAL", "TLB"), -1 if absent. */
static long irq_count(const char *row)
{
	char line[1024];
	long total = -1;
	size_t n = strlen(row);
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *end;

		while (*s == ' ')
			s++;
		if (strncmp(s, row, n) != 0 || s[n] != ':')
			continue;
		s += n + 1;
		total = 0;
		for (;;) {
			long v = strtol(s, &end, 10);

			if (end == s)
				break;
			total += v;
			s = end;
		}
		break;
	}
	fclose(f);
	return total;
}

/* A /proc/meminfo field in kB, -1 if absent. */
static long meminfo(const char *field)
{
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Free pages the patched kernel keeps: KReclaimable - SReclaimable. */
static long pool_kb(void)
{
	long k = meminfo("KReclaimable"), s = meminfo("SReclaimable");

	return (k < 0 || s < 0) ? -1 : k - s;
}

/* secretmem.block_order of the patched kernel; -1 on the base kernel. */
static long block_order(void)
{
	FILE *f = fopen("/sys/module/secretmem/parameters/block_order", "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -2;
	fclose(f);
	return v;
}

/* A /proc/vmstat counter, -1 if absent. */
static long vmstat(const char *name)
{
	char key[128];
	long v, found = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%127s %ld", key, &v) == 2)
		if (strcmp(key, name) == 0) {
			found = v;
			break;
		}
	fclose(f);
	return found;
}

/*
 * The direct map as /proc/kcore shows it: its RAM segments give, for a
 * physical address, the file offset of the direct-map alias.  Reading an
 * alias that is not mapped gives zeros (the read uses
 * copy_from_kernel_nofault()); a mapped one gives the page's contents.
 */
struct kcore {
	int fd;
	size_t n;
	Elf64_Phdr ph[256];
};

static int kcore_open(struct kcore *k)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	k->n = 0;
	k->fd = open("/proc/kcore", O_RDONLY);
	if (k->fd < 0 || pread(k->fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return -1;
	for (int i = 0; i < eh.e_phnum && k->n < 256; i++) {
		if (pread(k->fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    sizeof(ph))
			return -1;
		/* RAM: a physical address, and not the kernel text alias. */
		if (ph.p_type == PT_LOAD && ph.p_paddr != (Elf64_Addr)-1 &&
		    ph.p_vaddr < 0xffffffff80000000UL)
			k->ph[k->n++] = ph;
	}
	return k->n ? 0 : -1;
}

/*
 * 1 if @len bytes at @user (not all zero) read back the same through the
 * direct-map alias of physical address @phys, 0 if they read zero, -1 if
 * that cannot be told.
 */
static int kcore_same(const struct kcore *k, uint64_t phys, const char *user,
		      size_t len)
{
	char buf[64];

	for (size_t i = 0; i < k->n; i++) {
		const Elf64_Phdr *ph = &k->ph[i];

		if (phys < ph->p_paddr || phys + len > ph->p_paddr + ph->p_memsz)
			continue;
		if (pread(k->fd, buf, len,
			  (off_t)(ph->p_offset + (phys - ph->p_paddr))) !=
		    (ssize_t)len)
			return -1;
		if (memcmp(buf, user, len) == 0)
			return 1;
		return all_zero(buf, len) ? 0 : -1;
	}
	return -1;
}

/*
 * How many pages of [p, p + len) the kernel can still read through the direct
 * map, from their frame numbers (/proc/self/pagemap) and /proc/kcore; -1 if
 * either cannot be read.  *missing counts pages that could not be judged (no
 * frame number, zero contents, no RAM segment).
 */
static long dmap_mapped(const char *p, size_t len, long *missing)
{
	size_t pages = len / PAGE;
	const size_t cmp = 16;
	uint64_t *pm = malloc(pages * sizeof(*pm));
	int fd = open("/proc/self/pagemap", O_RDONLY);
	struct kcore k = { .fd = -1 };
	long mapped = 0;

	*missing = 0;
	if (!pm || fd < 0 || kcore_open(&k) != 0) {
		free(pm);
		if (fd >= 0)
			close(fd);
		if (k.fd >= 0)
			close(k.fd);
		return -1;
	}
	if (pread(fd, pm, pages * sizeof(*pm),
		  (off_t)((uintptr_t)p / PAGE * sizeof(*pm))) !=
	    (ssize_t)(pages * sizeof(*pm)))
		mapped = -1;
	for (size_t i = 0; mapped >= 0 && i < pages; i++) {
		uint64_t pfn = pm[i] & ((1ULL << 55) - 1);
		const char *u = p + i * PAGE;
		int r = -1;

		if ((pm[i] >> 63) && pfn && !all_zero(u, cmp))
			r = kcore_same(&k, pfn * PAGE, u, cmp);
		if (r < 0)
			(*missing)++;
		else
			mapped += r;
	}
	close(fd);
	close(k.fd);
	free(pm);
	return mapped;
}

/* Every page of a touched secret region must be absent from the direct map. */
static void check_dmap_absent(const char *name, const char *p, size_t len)
{
	long missing, mapped = dmap_mapped(p, len, &missing);

	report(mapped == 0 && missing == 0, name,
	       "%ld of %zu pages in the direct map, %ld without a frame number%s",
	       mapped, len / PAGE, missing,
	       mapped < 0 ? " (pagemap or /proc/kcore unreadable)" : "");
}

static void check_available(void)
{
	int fd = secret_fd();

	if (fd < 0) {
		report(0, "available", "memfd_secret: %s (boot with secretmem.enable=1?)",
		       strerror(errno));
		return;
	}
	close(fd);
	report(1, "available", NULL);
	fd = (int)syscall(SYS_memfd_secret, 0x4);
	report(fd < 0 && errno == EINVAL, "bad-flags", "flag 0x4 gave %d (%s)",
	       fd, fd < 0 ? strerror(errno) : "accepted");
	if (fd >= 0)
		close(fd);
}

static void check_rw(void)
{
	size_t len = 64 * PAGE;
	char *p = secret_map(len, NULL);

	if (!p) {
		report(0, "read-write", "map: %s", strerror(errno));
		return;
	}
	if (!all_zero(p, len)) {
		report(0, "read-write", "new secret pages are not zero");
	} else {
		fill(p, len, 11);
		report(verify(p, len, 11), "read-write", "pattern mismatch");
	}
	check_dmap_absent("dmap-absent", p, len);
	munmap(p, len);
}

/* vmsplice and process_vm_readv must fail on secret memory, work on shm. */
static void check_gup_refused(void)
{
	size_t len = 4 * PAGE;
	char *s = secret_map(len, NULL);
	char *shm = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char buf[PAGE];
	int fds[2];
	ssize_t rs, rc;

	if (!s || shm == MAP_FAILED || pipe(fds) != 0) {
		report(0, "vmsplice-refused", "setup: %s", strerror(errno));
		report(0, "process_vm_readv-refused", "setup failed");
		return;
	}
	memset(s, 0x5a, len);
	memset(shm, 0x5a, len);

	struct iovec cv = { shm, PAGE }, sv = { s, PAGE };

	rc = vmsplice(fds[1], &cv, 1, 0);
	errno = 0;
	rs = vmsplice(fds[1], &sv, 1, 0);
	report(rc == (ssize_t)PAGE && rs < 0 && errno == EFAULT,
	       "vmsplice-refused", "control %zd, secret %zd (%s)", rc, rs,
	       strerror(errno));
	close(fds[0]);
	close(fds[1]);

	struct iovec local = { buf, PAGE };

	rc = process_vm_readv(getpid(), &local, 1, &cv, 1, 0);
	errno = 0;
	rs = process_vm_readv(getpid(), &local, 1, &sv, 1, 0);
	report(rc == (ssize_t)PAGE && rs < 0 && errno == EFAULT,
	       "process_vm_readv-refused", "control %zd, secret %zd (%s)", rc,
	       rs, strerror(errno));
	munmap(s, len);
	munmap(shm, len);
}

static void check_fork(void)
{
	size_t len = 16 * PAGE;
	char *p = secret_map(len, NULL);
	int status;
	pid_t pid;

	if (!p) {
		report(0, "fork", "map: %s", strerror(errno));
		return;
	}
	fill(p, len, 3);
	pid = fork();
	if (pid == 0) {
		if (!verify(p, len, 3))
			_exit(1);
		fill(p, len, 4);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		report(0, "fork", "fork/wait: %s", strerror(errno));
	} else {
		report(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		       verify(p, len, 4), "fork",
		       "child status %#x, parent sees child's write: %d", status,
		       verify(p, len, 4));
	}
	munmap(p, len);
}

static void check_remap(void)
{
	size_t len = 40 * PAGE;
	int fd;
	char *p = secret_map(len, &fd);
	int ok;

	if (!p) {
		report(0, "munmap-remap", "map: %s", strerror(errno));
		return;
	}
	fill(p, len, 9);
	munmap(p, len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ok = p != MAP_FAILED && verify(p, len, 9);
	report(ok, "munmap-remap", "contents lost across munmap/mmap");
	if (p != MAP_FAILED)
		munmap(p, len);
	close(fd);

	/* Freed secret pages come back zero to the next user. */
	p = secret_map(len, NULL);
	report(p && all_zero(p, len), "reuse-zero",
	       "a new secret file after close is not zero");
	if (p)
		munmap(p, len);
}

/*
 * Enough pages that the next file must get freed ones back: 8 MiB filled and
 * closed, then 8 MiB mapped again must read zero (the patched kernel zeroes
 * freed pages through a temporary mapping, or through the direct map when a
 * block goes back to the page allocator).
 */
static void check_recycled_zero(void)
{
	size_t len = 8UL << 20;
	char *p = secret_map(len, NULL);

	if (!p) {
		report(0, "recycled-zero", "map: %s", strerror(errno));
		return;
	}
	fill(p, len, 77);
	munmap(p, len);
	p = secret_map(len, NULL);
	report(p && all_zero(p, len), "recycled-zero",
	       "8 MiB mapped after 8 MiB were filled and freed is not zero");
	if (p) {
		fill(p, len, 78);
		check_dmap_absent("recycled-dmap-absent", p, len);
		munmap(p, len);
	}
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* With RLIMIT_MEMLOCK of 16 pages, the 17th page must not be populated. */
static void check_memlock(void)
{
	const size_t limit_pages = 16, len = 64 * PAGE;
	int pfd[2], status;
	pid_t pid;

	if (pipe(pfd) != 0) {
		report(0, "rlimit-memlock", "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { limit_pages * PAGE, limit_pages * PAGE };
		volatile size_t touched = 0;
		char msg[64];
		char *p;
		int fd;

		close(pfd[0]);
		/* No CAP_IPC_LOCK, and a locked_vm of our own. */
		if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
		    setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0)
			_exit(2);
		signal(SIGBUS, on_sigbus);
		fd = secret_fd();
		if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
			_exit(3);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			/* A kernel may also refuse at mmap time. */
			snprintf(msg, sizeof(msg), "mmap %d", errno);
		} else if (sigsetjmp(bus_jmp, 1) == 0) {
			for (; touched < len / PAGE; touched++)
				p[touched * PAGE] = 1;
			snprintf(msg, sizeof(msg), "nosig %zu", (size_t)touched);
		} else {
			snprintf(msg, sizeof(msg), "sigbus %zu", (size_t)touched);
		}
		if (write(pfd[1], msg, strlen(msg)) < 0)
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	char msg[64] = "";
	ssize_t n = read(pfd[0], msg, sizeof(msg) - 1);

	close(pfd[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || n <= 0) {
		report(0, "rlimit-memlock", "child failed (status %#x)", status);
		return;
	}
	msg[n] = 0;
	unsigned long got = 0;
	int eagain = strncmp(msg, "mmap ", 5) == 0 && atoi(msg + 5) == EAGAIN;
	int bus = sscanf(msg, "sigbus %lu", &got) == 1 && got == limit_pages;

	report(eagain || bus, "rlimit-memlock",
	       "expected SIGBUS at page %zu or EAGAIN, got '%s'", limit_pages,
	       msg);
}

/*
 * The node counters behind /proc/meminfo are folded from per-CPU deltas every
 * second or so: wait up to 5 s for the pool counter to reach @want.
 */
static long pool_kb_wait(long want)
{
	long v = pool_kb();

	for (int i = 0; i < 50 && v != want; i++) {
		usleep(100000);
		v = pool_kb();
	}
	return v;
}

static int drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ok = fd >= 0 && write(fd, "2", 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * The patched kernel keeps one empty block (counted in KReclaimable) and the
 * shrinker frees it; a block with a page in use is not counted and stays.
 * Pinned to one CPU (so that one CPU cache is involved), after drop_caches
 * has emptied the store: a 3 MiB file B takes a whole block X and part of a
 * block Y, then a one-page file A takes a page of Y.  Closing B empties X
 * (+block); drop_caches frees it (back to the start) and A's page is intact;
 * closing A empties Y (+block), and drop_caches frees that one too.  The
 * base kernel keeps nothing: every step is 0.
 */
static void check_pool_shrinker(void)
{
	long order = block_order(), v[5];
	long want = order >= 0 ? 4L << order : 0;
	size_t blen = 3UL << 20;
	cpu_set_t all, one;
	int fa;
	char *a, *b;

	if (sched_getaffinity(0, sizeof(all), &all) != 0 || !drop_caches()) {
		report(0, "pool-shrinker", "affinity or drop_caches: %s",
		       strerror(errno));
		return;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	usleep(1500000);	/* per-CPU counter deltas are folded every second */
	v[0] = pool_kb();
	b = secret_map(blen, NULL);
	if (b)
		fill(b, blen, 22);
	a = secret_map(PAGE, &fa);
	if (!a || !b || v[0] < 0) {
		report(0, "pool-shrinker", "setup: %s", strerror(errno));
		sched_setaffinity(0, sizeof(all), &all);
		return;
	}
	fill(a, PAGE, 21);
	munmap(b, blen);
	v[1] = pool_kb_wait(v[0] + want);
	drop_caches();
	v[2] = pool_kb_wait(v[0]);
	int intact = verify(a, PAGE, 21);

	munmap(a, PAGE);
	close(fa);
	v[3] = pool_kb_wait(v[0] + want);
	drop_caches();
	v[4] = pool_kb_wait(v[0]);
	sched_setaffinity(0, sizeof(all), &all);
	report(v[1] - v[0] == want && v[2] == v[0] && v[3] - v[0] == want &&
	       v[4] == v[0] && intact, "pool-shrinker",
	       "block order %ld: pool %ld -> %ld -> %ld -> %ld -> %ld kB, wanted +%ld, 0, +%ld, 0; page intact %d",
	       order, v[0], v[1], v[2], v[3], v[4], want, want, intact);
}

/* Several processes create, fill, verify, fork and drop secret files. */
static void check_stress(int procs, int iters)
{
	int bad = 0;

	for (int i = 0; i < procs; i++) {
		if (fork() != 0)
			continue;
		unsigned seed = 1234u + (unsigned)i * 77u;

		for (int it = 0; it < iters; it++) {
			size_t len = (1 + rand_r(&seed) % 96) * PAGE;
			char *p = secret_map(len, NULL);

			if (!p || !all_zero(p, len))
				_exit(1);
			fill(p, len, seed);
			if (it % 8 == 0) {
				pid_t c = fork();
				int st;

				if (c == 0)
					_exit(verify(p, len, seed) ? 0 : 1);
				if (c < 0 || waitpid(c, &st, 0) != c || st != 0)
					_exit(2);
			}
			if (!verify(p, len, seed))
				_exit(3);
			munmap(p, len);
		}
		_exit(0);
	}
	for (int i = 0; i < procs; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	report(bad == 0, "stress", "%d of %d processes failed", bad, procs);
}


struct toucher {
	char *p;
	size_t len;
	int cpu;
	pthread_barrier_t *start, *done;
};

static void pin(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(cpu % (n > 0 ? n : 1), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *touch_thread(void *arg)
{
	struct toucher *t = arg;

	pin(t->cpu);
	pthread_barrier_wait(t->start);
	for (size_t off = 0; off < t->len; off += PAGE)
		t->p[off] = 1;
	pthread_barrier_wait(t->done);
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * @threads threads touch consecutive slices of [p, p + len).  The CAL count
 * and the time are taken between two barriers, so that creating and ending
 * the threads (stack set-up, madvise at exit) is not counted.
 */
static int touch_parallel(char *p, size_t len, int threads, long *cal,
			  double *ns)
{
	struct toucher t[64];
	pthread_t id[64];
	pthread_barrier_t start, done;
	size_t slice = len / PAGE / (size_t)threads * PAGE;
	double t0;
	long c0;

	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		t[i] = (struct toucher){ p + i * slice,
			i == threads - 1 ? len - i * slice : slice, i,
			&start, &done };
		if (pthread_create(&id[i], NULL, touch_thread, &t[i]) != 0)
			abort();
	}
	c0 = irq_count("CAL");
	t0 = now_ns();
	pthread_barrier_wait(&start);
	pthread_barrier_wait(&done);
	if (ns)
		*ns = now_ns() - t0;
	if (cal)
		*cal = irq_count("CAL") - c0;
	for (int i = 0; i < threads; i++)
		pthread_join(id[i], NULL);
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&done);
	return 0;
}

static volatile int dropper_stop;

static void *dropper(void *arg)
{
	int *n = arg;

	while (!dropper_stop) {
		if (drop_caches())
			(*n)++;
		usleep(2000);
	}
	return NULL;
}

/*
 * Threads fault in shared secret files while another thread keeps calling
 * every shrinker (drop_caches) and processes create and drop files: the
 * contents stay right and every page stays out of the direct map.
 */
static void check_concurrent(int rounds)
{
	size_t len = 4UL << 20;
	int drops = 0, bad = 0;
	pthread_t d;

	dropper_stop = 0;
	pthread_create(&d, NULL, dropper, &drops);
	for (int r = 0; r < rounds && !bad; r++) {
		char *p = secret_map(len, NULL);

		if (!p || touch_parallel(p, len, 4, NULL, NULL) != 0) {
			bad = 1;
			break;
		}
		for (size_t off = 0; off < len; off += PAGE)
			if (p[off] != 1)
				bad = 2;
		if (r == 0)
			check_dmap_absent("concurrent-dmap-absent", p, len);
		munmap(p, len);
	}
	dropper_stop = 1;
	pthread_join(d, NULL);
	report(!bad && drops > 0, "concurrent-fault-drop_caches",
	       "bad %d after %d drop_caches", bad, drops);
}

static int unlimited_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	return setrlimit(RLIMIT_MEMLOCK, &rl);
}

/* One round: @threads threads populate a new @mib MiB secret file. */
static int measure(long mib, int threads)
{
	size_t len = (size_t)mib << 20;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), missing, mapped;
	int fd;
	char *p;

	if (irq_count("CAL") < 0 || unlimited_memlock() != 0) {
		report(0, "measure", "no CAL line or setrlimit: %s",
		       strerror(errno));
		return 1;
	}
	/*
	 * Free secret pages left by earlier work would need no flush: give
	 * them back first, so that every page of this round is flushed here.
	 */
	if (!drop_caches()) {
		report(0, "measure", "drop_caches: %s", strerror(errno));
		return 1;
	}
	p = secret_map(len, &fd);
	if (!p) {
		report(0, "measure", "map %ld MiB: %s", mib, strerror(errno));
		return 1;
	}
	long cal;
	double ns;

	touch_parallel(p, len, threads, &cal, &ns);
	mapped = dmap_mapped(p, len, &missing);
	printf(TAG "MEASURE pages=%zu threads=%d cpus=%ld cal=%ld "
	       "ns_per_fault=%.0f dmap_mapped=%ld dmap_missing=%ld order=%ld\n",
	       len / PAGE, threads, ncpu, cal, ns / (double)(len / PAGE),
	       mapped, missing, block_order());
	munmap(p, len);
	close(fd);
	return 0;
}

/* @n times: a new secret file, one page touched, closed. */
static int churn(long n)
{
	long cal0, cal1;
	double t0, t1;

	if (unlimited_memlock() != 0)
		return 1;
	cal0 = irq_count("CAL");
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		int fd;
		char *p = secret_map(PAGE, &fd);

		if (!p)
			return 1;
		p[0] = 1;
		munmap(p, PAGE);
		close(fd);
	}
	t1 = now_ns();
	cal1 = irq_count("CAL");
	printf(TAG "CHURN n=%ld ns_per_file=%.0f cal=%ld\n", n,
	       (t1 - t0) / (double)n, cal1 - cal0);
	return 0;
}

/*
 * @n times, with RLIMIT_MEMLOCK=0 (which this tree applies to root as well:
 * secretmem checks the limit, not CAP_IPC_LOCK): a new secret file, a touch
 * that must raise SIGBUS, closed.  Before each one the store is emptied
 * (drop_caches), so that a kernel taking a page before the charge would have
 * to allocate and flush a block every time; CAL is summed over the create,
 * touch and close only.  The charge-first kernel shows (almost) none.
 */
static int memlock0(long n)
{
	struct rlimit old, rl = { 0, 0 };
	volatile long buses = 0, cal = 0;
	cpu_set_t all;

	if (sched_getaffinity(0, sizeof(all), &all) != 0 ||
	    getrlimit(RLIMIT_MEMLOCK, &old) != 0 ||
	    setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return 1;
	pin(0);
	signal(SIGBUS, on_sigbus);
	for (long i = 0; i < n; i++) {
		int fd;
		char *p;
		long c0;

		if (!drop_caches())
			return 1;
		c0 = irq_count("CAL");
		p = secret_map(PAGE, &fd);
		if (!p)
			return 1;
		if (sigsetjmp(bus_jmp, 1) == 0)
			p[0] = 1;
		else
			buses++;
		munmap(p, PAGE);
		close(fd);
		cal += irq_count("CAL") - c0;
	}
	signal(SIGBUS, SIG_DFL);
	setrlimit(RLIMIT_MEMLOCK, &old);
	sched_setaffinity(0, sizeof(all), &all);
	printf(TAG "MEMLOCK0 n=%ld cal=%ld all_sigbus=%d\n", n, (long)cal,
	       buses == n);
	return 0;
}

/* The direct map's page sizes and split counters: one line. */
static void dmap_state(const char *when)
{
	printf(TAG "DMAP %s 4k=%ld 2M=%ld 1G=%ld l2_splits=%ld l3_splits=%ld\n",
	       when, meminfo("DirectMap4k"), meminfo("DirectMap2M"),
	       meminfo("DirectMap1G"), vmstat("direct_map_level2_splits"),
	       vmstat("direct_map_level3_splits"));
}

/* @mib MiB of secret churn: files of @chunk MiB, filled and closed. */
static int dmap_churn(long mib, long chunk)
{
	if (unlimited_memlock() != 0)
		return 1;
	dmap_state("before");
	for (long done = 0; done < mib; done += chunk) {
		size_t len = (size_t)chunk << 20;
		char *p = secret_map(len, NULL);

		if (!p)
			return 1;
		for (size_t off = 0; off < len; off += PAGE)
			p[off] = 1;
		munmap(p, len);
	}
	dmap_state("after");
	return 0;
}

/*
 * process_madvise(MADV_DONTNEED) over a vector of ranges of this process
 * (kernel/patches/0003 and 0004: accepted, and one TLB flush for the whole
 * vector; the stock 6.12 kernel refuses it with EINVAL, and a program
 * releases the ranges with one madvise() each instead).
 */
#define MADV_RANGES 64
#define MADV_RPAGES 4

struct madv_set {
	char *base;
	size_t len, stride;
	int n;
	struct iovec iov[MADV_RANGES];
};

/*
 * @n ranges of MADV_RPAGES pages.  Layout "vmas": each range in a VMA of
 * its own (a PROT_NONE page after each range splits the mapping); "onevma":
 * one VMA, MADV_RPAGES untouched pages between two ranges.
 */
static int madv_setup(struct madv_set *m, int n, int onevma)
{
	m->n = n;
	m->stride = (size_t)(onevma ? 2 * MADV_RPAGES : MADV_RPAGES + 1) * PAGE;
	m->len = m->stride * (size_t)n;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->base == MAP_FAILED)
		return -1;
	for (int i = 0; i < n; i++) {
		char *r = m->base + (size_t)i * m->stride;

		m->iov[i] = (struct iovec){ r, MADV_RPAGES * PAGE };
		if (!onevma && mprotect(r + MADV_RPAGES * PAGE, PAGE, PROT_NONE))
			return -1;
	}
	return 0;
}

static size_t madv_bytes(const struct madv_set *m)
{
	return (size_t)m->n * MADV_RPAGES * PAGE;
}

/* Every page of range @i gets a pattern (@full: the whole page). */
static void madv_fill(struct madv_set *m, int i, int full)
{
	char *r = m->iov[i].iov_base;

	for (size_t off = 0; off < MADV_RPAGES * PAGE; off += PAGE) {
		if (full)
			fill(r + off, PAGE, (unsigned)(i * 31 + off / PAGE));
		else
			r[off] = 1;
	}
}

static int madv_intact(const struct madv_set *m, int i)
{
	const char *r = m->iov[i].iov_base;

	for (size_t off = 0; off < MADV_RPAGES * PAGE; off += PAGE)
		if (!verify(r + off, PAGE, (unsigned)(i * 31 + off / PAGE)))
			return 0;
	return 1;
}

/* Pages of [p, p + len) that are mapped (present or swapped), -1 on error. */
static long present_pages(const char *p, size_t len)
{
	uint64_t pm[64];
	size_t pages = len / PAGE;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long n = 0;

	if (fd < 0 || pages > 64)
		return -1;
	if (pread(fd, pm, pages * sizeof(*pm),
		  (off_t)((uintptr_t)p / PAGE * sizeof(*pm))) !=
	    (ssize_t)(pages * sizeof(*pm)))
		n = -1;
	for (size_t i = 0; n >= 0 && i < pages; i++)
		n += (pm[i] >> 62) != 0;
	close(fd);
	return n;
}

/* Range @i reads zero and, if @fresh, had no page mapped before the read. */
static int madv_zero(const struct madv_set *m, int i, int fresh)
{
	const char *r = m->iov[i].iov_base;

	if (fresh && present_pages(r, MADV_RPAGES * PAGE) != 0)
		return 0;
	return all_zero(r, MADV_RPAGES * PAGE);
}

/*
 * Release the first @n ranges: one process_madvise() (@vector), else one
 * madvise() each (stopping at the first error, as process_madvise does).
 * The bytes released, or -errno when nothing was.
 */
static long madv_release(int pidfd, struct madv_set *m, int n, int advice,
			 int vector)
{
	long done = 0;

	if (vector) {
		long r = syscall(SYS_process_madvise, pidfd, m->iov, (size_t)n,
				 advice, 0u);
		return r < 0 ? -errno : r;
	}
	for (int i = 0; i < n; i++) {
		if (madvise(m->iov[i].iov_base, m->iov[i].iov_len, advice) != 0)
			return done ? done : -errno;
		done += (long)m->iov[i].iov_len;
	}
	return done;
}

/*
 * Threads on the other CPUs, so that the process's mm is live there: they
 * spin, or (readers) read every page of the ranges until told to hold, so
 * that their TLBs hold the old translations when the ranges are released,
 * then read them again once the call has returned.
 */
enum { SPIN_RUN, SPIN_HOLD, SPIN_VERIFY, SPIN_STOP };

struct spinners {
	int n, phase, held, verified, nonzero, passes;
	struct madv_set *m;	/* NULL: spin only */
	pthread_t id[64];
	struct spin_arg {
		struct spinners *s;
		int cpu;
	} arg[64];
};

static void *spinner(void *arg)
{
	struct spin_arg *a = arg;
	struct spinners *s = a->s;
	int held = 0, done = 0, passed = 0;

	pin(a->cpu);
	for (;;) {
		int ph = __atomic_load_n(&s->phase, __ATOMIC_ACQUIRE);
		volatile char sink = 0;

		if (ph == SPIN_STOP)
			break;
		if (!s->m)
			continue;
		if (ph == SPIN_RUN) {
			for (int i = 0; i < s->m->n; i++)
				for (size_t off = 0; off < MADV_RPAGES * PAGE; off += PAGE)
					sink += ((volatile char *)s->m->iov[i].iov_base)[off];
			if (!passed++)
				__atomic_fetch_add(&s->passes, 1, __ATOMIC_RELEASE);
		} else if (ph == SPIN_HOLD && !held) {
			held = 1;
			__atomic_fetch_add(&s->held, 1, __ATOMIC_RELEASE);
		} else if (ph == SPIN_VERIFY && !done) {
			int bad = 0;

			for (int i = 0; i < s->m->n; i++)
				if (!all_zero(s->m->iov[i].iov_base, MADV_RPAGES * PAGE))
					bad++;
			done = 1;
			__atomic_fetch_add(&s->nonzero, bad, __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->verified, 1, __ATOMIC_RELEASE);
		}
		(void)sink;
	}
	return NULL;
}

/* The calling thread on CPU 0, a spinner on every other CPU. */
static int spinners_start(struct spinners *s, struct madv_set *m)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	memset(s, 0, sizeof(*s));
	s->m = m;
	pin(0);
	for (int c = 1; c < ncpu && s->n < 64; c++) {
		s->arg[s->n] = (struct spin_arg){ s, c };
		if (pthread_create(&s->id[s->n], NULL, spinner, &s->arg[s->n]))
			return -1;
		s->n++;
	}
	return 0;
}

static void spinners_wait(struct spinners *s, int *counter)
{
	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < s->n)
		sched_yield();
}

static void spinners_stop(struct spinners *s, const cpu_set_t *all)
{
	__atomic_store_n(&s->phase, SPIN_STOP, __ATOMIC_RELEASE);
	for (int i = 0; i < s->n; i++)
		pthread_join(s->id[i], NULL);
	sched_setaffinity(0, sizeof(*all), all);
}

static int madv_pidfd(void)
{
	return (int)syscall(SYS_pidfd_open, getpid(), 0u);
}

/*
 * Functional checks.  Whether the kernel takes the vector (one MADVVEC line
 * for kernel/test.sh: the stock 6.12 kernel answers EINVAL); then in both
 * kernels, 64 ranges in 64 VMAs and in one VMA, released while readers on
 * the other CPUs hold their translations: every page is unmapped after the
 * call and reads zero, on this CPU and on the others.  Where the vector is
 * taken: the return value and the ranges left as they were when one range
 * fails (a hole, an mlocked VMA, a misaligned first range), as
 * process_madvise() always did (the bytes advised before the first failing
 * range, or its error); MADV_DONTNEED_LOCKED over an mlocked VMA; and a
 * range registered with userfaultfd (UFFD_FEATURE_EVENT_REMOVE, so that the
 * kernel drops mmap_lock for the monitor in the middle of the vector).
 */
static void check_madv_layout(int pidfd, int vector, int onevma)
{
	const char *name = onevma ? "madv-zero-onevma" : "madv-zero-vmas";
	struct madv_set m;
	struct spinners s;
	cpu_set_t all;
	long got;
	int fresh = 0, zero = 0;

	if (sched_getaffinity(0, sizeof(all), &all) != 0 ||
	    madv_setup(&m, MADV_RANGES, onevma) != 0) {
		report(0, name, "setup: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < m.n; i++)
		madv_fill(&m, i, 1);
	if (spinners_start(&s, &m) != 0) {
		report(0, name, "threads: %s", strerror(errno));
		return;
	}
	spinners_wait(&s, &s.passes);
	__atomic_store_n(&s.phase, SPIN_HOLD, __ATOMIC_RELEASE);
	spinners_wait(&s, &s.held);
	got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, vector);
	for (int i = 0; i < m.n; i++)
		fresh += present_pages(m.iov[i].iov_base, MADV_RPAGES * PAGE) == 0;
	__atomic_store_n(&s.phase, SPIN_VERIFY, __ATOMIC_RELEASE);
	spinners_wait(&s, &s.verified);
	for (int i = 0; i < m.n; i++)
		zero += madv_zero(&m, i, 0);
	spinners_stop(&s, &all);
	report(got == (long)madv_bytes(&m) && fresh == m.n && zero == m.n &&
	       s.nonzero == 0, name,
	       "%s returned %ld of %zu; %d of %d ranges unmapped, %d read zero here, %d non-zero on %d other CPUs",
	       vector ? "process_madvise" : "madvise loop", got, madv_bytes(&m),
	       fresh, m.n, zero, s.nonzero, s.n);
	munmap(m.base, m.len);
}

/* 8 ranges in 8 VMAs, filled; 0 or -1. */
static int madv_eight(struct madv_set *m)
{
	if (madv_setup(m, 8, 0) != 0)
		return -1;
	for (int i = 0; i < m->n; i++)
		madv_fill(m, i, 1);
	return 0;
}

/* Ranges [0, a) read zero, [a, n) are intact; @skip is not looked at. */
static int madv_state(const struct madv_set *m, int a, int skip)
{
	for (int i = 0; i < m->n; i++) {
		if (i == skip)
			continue;
		if (i < a ? !madv_zero(m, i, 0) : !madv_intact(m, i))
			return 0;
	}
	return 1;
}

static int uffd_removes;
static unsigned long uffd_remove_start, uffd_remove_end;

static void *uffd_monitor(void *arg)
{
	int fd = *(int *)arg;
	struct uffd_msg msg;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };

		if (poll(&p, 1, 5000) <= 0)
			break;
		if (read(fd, &msg, sizeof(msg)) != sizeof(msg))
			break;
		if (msg.event == UFFD_EVENT_REMOVE) {
			uffd_remove_start = msg.arg.remove.start;
			uffd_remove_end = msg.arg.remove.end;
			__atomic_fetch_add(&uffd_removes, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	return NULL;
}

static void check_madv_uffd(int pidfd)
{
	struct madv_set m;
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_EVENT_REMOVE };
	struct uffdio_register reg;
	pthread_t mon;
	long got;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	const int u = 2;

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) != 0 || madv_eight(&m) != 0) {
		report(0, "madv-uffd-remove", "userfaultfd: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	reg.range.start = (unsigned long)m.iov[u].iov_base;
	reg.range.len = MADV_RPAGES * PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
		report(0, "madv-uffd-remove", "register: %s", strerror(errno));
		close(fd);
		return;
	}
	uffd_removes = 0;
	pthread_create(&mon, NULL, uffd_monitor, &fd);
	got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, 1);
	pthread_join(mon, NULL);
	/* range u is not read: a read would wait for the monitor */
	int others = madv_state(&m, m.n, u);
	long left = present_pages(m.iov[u].iov_base, MADV_RPAGES * PAGE);

	report(got == (long)madv_bytes(&m) && others && left == 0 &&
	       uffd_removes == 1 &&
	       uffd_remove_start == (unsigned long)m.iov[u].iov_base &&
	       uffd_remove_end == uffd_remove_start + MADV_RPAGES * PAGE,
	       "madv-uffd-remove",
	       "returned %ld of %zu, other ranges zero %d, %ld pages left in the registered range, %d REMOVE events",
	       got, madv_bytes(&m), others, left, uffd_removes);
	close(fd);
	munmap(m.base, m.len);
}

static void check_madv(void)
{
	int pidfd = madv_pidfd();
	struct madv_set m;
	long got;
	int vector, err;

	unlimited_memlock();	/* for the mlocked range; root in the guest */
	if (pidfd < 0 || madv_setup(&m, 1, 1) != 0) {
		report(0, "madv-vector", "pidfd_open or setup: %s", strerror(errno));
		return;
	}
	madv_fill(&m, 0, 1);
	got = madv_release(pidfd, &m, 1, MADV_DONTNEED, 1);
	err = got < 0 ? (int)-got : 0;
	vector = got >= 0;
	printf(TAG "MADVVEC accepted=%d errno=%d\n", vector, err);
	report((vector && got == MADV_RPAGES * (long)PAGE && madv_zero(&m, 0, 1)) ||
	       (!vector && err == EINVAL), "madv-vector",
	       "process_madvise(MADV_DONTNEED) on a pidfd of this process: %ld (%s)",
	       got, strerror(err));
	munmap(m.base, m.len);

	check_madv_layout(pidfd, vector, 0);
	check_madv_layout(pidfd, vector, 1);
	if (!vector) {
		close(pidfd);
		return;
	}

	/* A hole in range 3: its pages around the hole go, 0-2 are counted. */
	if (madv_eight(&m) == 0) {
		char *r3 = m.iov[3].iov_base;

		munmap(r3 + PAGE, PAGE);
		got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, 1);
		int r3zero = all_zero(r3, PAGE) && all_zero(r3 + 2 * PAGE, 2 * PAGE);

		report(got == 3 * MADV_RPAGES * (long)PAGE && madv_state(&m, 3, 3) &&
		       r3zero, "madv-partial-hole",
		       "returned %ld (want %ld), 0-2 zero and 4-7 intact %d, range 3 around its hole zero %d",
		       got, 3 * MADV_RPAGES * (long)PAGE, madv_state(&m, 3, 3), r3zero);
		munmap(m.base, m.len);
	} else {
		report(0, "madv-partial-hole", "setup: %s", strerror(errno));
	}

	/* Range 5 mlocked: MADV_DONTNEED stops there (-EINVAL), 0-4 counted;
	 * MADV_DONTNEED_LOCKED releases all 8. */
	if (madv_eight(&m) == 0 && mlock(m.iov[5].iov_base, MADV_RPAGES * PAGE) == 0) {
		got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, 1);
		report(got == 5 * MADV_RPAGES * (long)PAGE && madv_state(&m, 5, -1),
		       "madv-partial-locked",
		       "returned %ld (want %ld), 0-4 zero and 5-7 intact %d", got,
		       5 * MADV_RPAGES * (long)PAGE, madv_state(&m, 5, -1));
		for (int i = 0; i < m.n; i++)
			madv_fill(&m, i, 1);
		got = madv_release(pidfd, &m, m.n, MADV_DONTNEED_LOCKED, 1);
		report(got == (long)madv_bytes(&m) && madv_state(&m, m.n, -1),
		       "madv-dontneed-locked",
		       "returned %ld of %zu, all zero %d", got, madv_bytes(&m),
		       madv_state(&m, m.n, -1));
		munmap(m.base, m.len);
	} else {
		report(0, "madv-partial-locked", "setup or mlock: %s", strerror(errno));
	}

	/* A misaligned first range: -EINVAL, nothing released. */
	if (madv_eight(&m) == 0) {
		m.iov[0].iov_base = (char *)m.iov[0].iov_base + 1;
		got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, 1);
		m.iov[0].iov_base = (char *)m.iov[0].iov_base - 1;
		report(got == -EINVAL && madv_state(&m, 0, -1), "madv-bad-first",
		       "returned %ld (want %d), all intact %d", got, -EINVAL,
		       madv_state(&m, 0, -1));
		munmap(m.base, m.len);
	} else {
		report(0, "madv-bad-first", "setup: %s", strerror(errno));
	}

	check_madv_uffd(pidfd);
	close(pidfd);
}

/*
 * @rounds times: populate the 64 ranges (one write a page), then release
 * them with one process_madvise (@vector) or 64 madvise() calls, a spinner
 * on every other CPU; CAL and TLB (summed over CPUs) around the release.
 */
static int madv_measure(int pidfd, long rounds, int onevma, int vector)
{
	struct madv_set m;
	struct spinners s;
	cpu_set_t all;
	long cal = 0, tlb = 0, bad = 0;
	double ns = 0;

	if (sched_getaffinity(0, sizeof(all), &all) != 0 ||
	    madv_setup(&m, MADV_RANGES, onevma) != 0 ||
	    spinners_start(&s, NULL) != 0)
		return 1;
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < m.n; i++)
			madv_fill(&m, i, 0);
		long c0 = irq_count("CAL"), t0 = irq_count("TLB");
		double n0 = now_ns();
		long got = madv_release(pidfd, &m, m.n, MADV_DONTNEED, vector);

		ns += now_ns() - n0;
		cal += irq_count("CAL") - c0;
		tlb += irq_count("TLB") - t0;
		bad += got != (long)madv_bytes(&m);
	}
	spinners_stop(&s, &all);
	munmap(m.base, m.len);
	printf(TAG "MADV layout=%s mode=%s ranges=%d pages=%d rounds=%ld cpus=%ld cal=%ld tlb=%ld ns_per_call=%.0f bad=%ld\n",
	       onevma ? "onevma" : "vmas", vector ? "vector" : "loop", m.n,
	       MADV_RPAGES, rounds, sysconf(_SC_NPROCESSORS_ONLN), cal, tlb,
	       ns / (double)rounds, bad);
	return 0;
}

/* Both layouts, the vector where the kernel takes it and the loop. */
static int madv(long rounds)
{
	int pidfd = madv_pidfd();
	struct madv_set m;
	int vector, rc = 0;

	if (pidfd < 0 || madv_setup(&m, 1, 1) != 0)
		return 1;
	m.iov[0].iov_len = PAGE;
	vector = syscall(SYS_process_madvise, pidfd, m.iov, (size_t)1,
			 MADV_DONTNEED, 0u) == (long)PAGE;
	munmap(m.base, m.len);
	for (int onevma = 0; onevma <= 1; onevma++) {
		if (vector)
			rc |= madv_measure(pidfd, rounds, onevma, 1);
		rc |= madv_measure(pidfd, rounds, onevma, 0);
	}
	close(pidfd);
	return rc;
}

int main(int argc, char **argv)
{
	long a = argc >= 3 ? atol(argv[2]) : 0;
	long b = argc >= 4 ? atol(argv[3]) : 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "check") == 0) {
		check_available();
		if (failures)
			return 1;
		check_rw();
		check_gup_refused();
		check_fork();
		check_remap();
		check_recycled_zero();
		check_memlock();
		check_pool_shrinker();
		check_stress(4, 40);
		check_concurrent(a > 0 ? (int)a : 8);
		check_madv();
		return failures ? 1 : 0;
	}
	if (argc == 4 && strcmp(argv[1], "measure") == 0 && a > 0 &&
	    b > 0 && b <= 64)
		return measure(a, (int)b);
	if (argc == 3 && strcmp(argv[1], "churn") == 0 && a > 0)
		return churn(a);
	if (argc == 3 && strcmp(argv[1], "memlock0") == 0 && a > 0)
		return memlock0(a);
	if (argc == 4 && strcmp(argv[1], "dmap") == 0 && a > 0 && b > 0)
		return dmap_churn(a, b);
	if (argc == 3 && strcmp(argv[1], "madv") == 0 && a > 0)
		return madv(a);
	if (argc == 2 && strcmp(argv[1], "madv-check") == 0) {
		check_madv();
		return failures ? 1 : 0;
	}
	fprintf(stderr, "usage: ktest check [ROUNDS] | measure MIB THREADS | "
		"churn N | memlock0 N | dmap MIB CHUNK | madv ROUNDS | madv-check\n");
	return 2;
}
