/* protflip.c - what a page costs at its next touch after its protection
 * was taken away and given back, or after its frame was released, in
 * 4 KiB mappings and over transparent huge pages.  8 MiB, 2 MiB aligned,
 * written once; then 100 rounds of (nothing | mprotect PROT_NONE and
 * PROT_READ|PROT_WRITE | MADV_DONTNEED) and one write per page.  Prints
 * nanoseconds per page and round for each.  No allocator involved.
 *
 *	make bench/xb-protflip && bench/xb-protflip
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define LEN ((size_t)8 << 20)
#define HUGE ((size_t)2 << 20)
#define ROUNDS 100

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int must(int r, const char *what)
{
	if (r) {
		perror(what);
		exit(1);
	}
	return r;
}

static double run(int huge, int mode)
{
	char *raw = mmap(NULL, LEN + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	must(madvise(p, LEN, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE), "madvise");
	for (size_t i = 0; i < LEN; i += 4096)
		p[i] = 1;
	double t = now();
	for (int r = 0; r < ROUNDS; r++) {
		if (mode == 1) {
			must(mprotect(p, LEN, PROT_NONE), "mprotect");
			must(mprotect(p, LEN, PROT_READ | PROT_WRITE), "mprotect");
		} else if (mode == 2) {
			must(madvise(p, LEN, MADV_DONTNEED), "madvise");
		}
		for (size_t i = 0; i < LEN; i += 4096)
			p[i] = (char)r;
	}
	double ns = (now() - t) * 1e9 / (ROUNDS * (double)(LEN / 4096));
	munmap(raw, LEN + HUGE);
	return ns;
}

int main(void)
{
	static const char *const what[] = { "touch only", "mprotect none+rw", "MADV_DONTNEED" };
	printf("%-18s %14s %14s\n", "ns a page", "4 KiB pages", "huge pages");
	for (int mode = 0; mode < 3; mode++)
		printf("%-18s %14.1f %14.1f\n", what[mode], run(0, mode), run(1, mode));
	return 0;
}
