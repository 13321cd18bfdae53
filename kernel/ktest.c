/*
 * kernel/ktest.c: memfd_secret checks and the direct-map flush measurement,
 * run as a static binary inside the QEMU guest by kernel/test.sh.
 *
 *   ktest check          functional checks, one "XPFO-KTEST: PASS|FAIL name"
 *                        line each
 *   ktest measure MIB ROUNDS
 *                        touch a MIB MiB secret region page by page while a
 *                        busy thread runs on the other CPU; print the CAL
 *                        (function-call interrupt) and TLB counts of
 *                        /proc/interrupts and the time per fault
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
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
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

/* Pages the patched kernel keeps in its pool: KReclaimable - SReclaimable. */
static long pool_kb(void)
{
	long k = meminfo("KReclaimable"), s = meminfo("SReclaimable");

	return (k < 0 || s < 0) ? -1 : k - s;
}

/* secretmem.batch of the patched kernel; 0 on a kernel without it. */
static long batch_param(void)
{
	FILE *f = fopen("/sys/module/secretmem/parameters/batch", "r");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
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

/*
 * On the patched kernel, the first fault leaves batch - 1 pages in the pool,
 * counted as KReclaimable; closing the last secret file empties it.  On the
 * base kernel nothing may be counted.
 */
static void check_pool_accounting(void)
{
	long batch = batch_param(), before, during, after;
	int fd;
	char *p;

	if (batch < 0) {
		report(0, "pool-accounting", "unreadable secretmem.batch");
		return;
	}
	before = pool_kb();
	p = secret_map(PAGE, &fd);
	if (!p || before < 0) {
		report(0, "pool-accounting", "setup: %s", strerror(errno));
		return;
	}
	p[0] = 1;

	long want = batch > 1 ? (batch - 1) * (long)(PAGE / 1024) : 0;

	during = pool_kb_wait(before + want);
	munmap(p, PAGE);
	close(fd);
	after = pool_kb_wait(before);

	report(during - before == want && after == before, "pool-accounting",
	       "batch %ld: misc reclaimable %ld -> %ld -> %ld kB, wanted +%ld then back",
	       batch, before, during, after, want);
}

/*
 * Patch 2's shrinker: with a secret file still open, dropping the kernel's
 * reclaimable caches (which calls every shrinker at full strength) must empty
 * the pool, and the file's own page must be unaffected.
 */
static void check_shrinker(void)
{
	long batch = batch_param(), before, during, after;
	int fd, dc;
	char *p;

	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (dc < 0) {
		report(0, "shrinker", "/proc/sys/vm/drop_caches: %s",
		       strerror(errno));
		return;
	}
	before = pool_kb();
	p = secret_map(PAGE, &fd);
	if (!p || before < 0) {
		report(0, "shrinker", "setup: %s", strerror(errno));
		close(dc);
		return;
	}
	fill(p, PAGE, 21);

	long want = batch > 1 ? (batch - 1) * (long)(PAGE / 1024) : 0;

	during = pool_kb_wait(before + want);
	if (write(dc, "2", 1) != 1) {
		report(0, "shrinker", "drop_caches: %s", strerror(errno));
	} else {
		after = pool_kb_wait(before);
		report(during - before == want && after == before &&
		       verify(p, PAGE, 21), "shrinker",
		       "batch %ld: pool %ld -> %ld -> %ld kB after drop_caches, page intact %d",
		       batch, before, during, after, verify(p, PAGE, 21));
	}
	close(dc);
	munmap(p, PAGE);
	close(fd);
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

static volatile int busy_stop;

static void *busy(void *arg)
{
	volatile unsigned long n = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	sched_setaffinity(0, sizeof(set), &set);
	(void)arg;
	while (!busy_stop)
		n++;
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int measure(long mib, int rounds)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	size_t len = (size_t)mib << 20;
	cpu_set_t set;
	pthread_t t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		report(0, "measure", "needs 2 online CPUs, have %ld",
		       sysconf(_SC_NPROCESSORS_ONLN));
		return 1;
	}
	if (irq_count("CAL") < 0) {
		report(0, "measure", "no CAL line in /proc/interrupts");
		return 1;
	}
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
		report(0, "measure", "setrlimit: %s", strerror(errno));
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	busy_stop = 0;
	pthread_create(&t, NULL, busy, NULL);
	usleep(100000);
	for (int r = 1; r <= rounds; r++) {
		int fd;
		char *p = secret_map(len, &fd);

		if (!p) {
			report(0, "measure", "map %ld MiB: %s", mib,
			       strerror(errno));
			return 1;
		}
		long cal0 = irq_count("CAL"), tlb0 = irq_count("TLB");
		double t0 = now_ns();

		for (size_t off = 0; off < len; off += PAGE)
			p[off] = 1;
		double t1 = now_ns();
		long cal1 = irq_count("CAL"), tlb1 = irq_count("TLB");

		printf(TAG "MEASURE round=%d pages=%zu cal=%ld tlb=%ld "
		       "ns_per_fault=%.0f batch=%ld\n", r, len / PAGE,
		       cal1 - cal0, tlb1 - tlb0, (t1 - t0) / (double)(len / PAGE),
		       batch_param());
		fflush(stdout);
		munmap(p, len);
		close(fd);
	}
	busy_stop = 1;
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "check") == 0) {
		check_available();
		if (failures)
			return 1;
		check_rw();
		check_gup_refused();
		check_fork();
		check_remap();
		check_memlock();
		check_pool_accounting();
		check_shrinker();
		check_stress(argc >= 3 ? atoi(argv[2]) : 4,
			     argc >= 4 ? atoi(argv[3]) : 40);
		return failures ? 1 : 0;
	}
	if (argc == 4 && strcmp(argv[1], "measure") == 0) {
		long mib = atol(argv[2]);
		int rounds = atoi(argv[3]);

		if (mib <= 0 || rounds <= 0) {
			fprintf(stderr, "ktest: bad measure arguments\n");
			return 2;
		}
		return measure(mib, rounds);
	}
	fprintf(stderr, "usage: ktest check [PROCS ITERS] | ktest measure MIB ROUNDS\n");
	return 2;
}
