/* fuzz.h - helpers shared by the libFuzzer targets of tests/fuzz: an input
 * reader and the per-block content pattern.  The targets are linked with
 * the library's sources built without the libc names (the --disable-override
 * build), so libFuzzer's own malloc stays glibc's and only the xpfo_ calls
 * reach xpfo. */
#ifndef XPFO_FUZZ_H
#define XPFO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The input, consumed byte by byte; zeros once it is used up. */
struct fz_in {
	const uint8_t *p;
	size_t n, at;
};

static inline unsigned fz_u8(struct fz_in *in)
{
	return in->at < in->n ? in->p[in->at++] : 0;
}

static inline unsigned fz_u16(struct fz_in *in)
{
	unsigned lo = fz_u8(in);
	return lo | fz_u8(in) << 8;
}

static inline int fz_more(const struct fz_in *in) { return in->at < in->n; }

/* A size: mostly small, sometimes up to 64 KiB, rarely huge (up to 4 MiB). */
static inline size_t fz_size(struct fz_in *in)
{
	unsigned sel = fz_u8(in), v = fz_u16(in);
	switch (sel >> 6) {
	case 0:
	case 1:
		return v % 1025;
	case 2:
		return v;
	default:
		return sel & 1 ? (size_t)v * 64 : 16376 + v % 24; /* the small/run border */
	}
}

/* Byte k of a block filled with seed (never zero). */
static inline uint8_t fz_pat(uint64_t seed, size_t k)
{
	uint64_t x = (seed ^ (k >> 3)) * 0x9E3779B97F4A7C15ull;
	return (uint8_t)((x >> (8 * (k & 7))) | 1);
}

/* The parts of an n-byte block the pattern covers: all of it up to 64 KiB,
 * else its first and last 8 KiB (the fuzzer stays fast on huge blocks). */
#define FZ_FULL 65536
#define FZ_EDGE 8192
static inline void fz_fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t k = 0; k < n; k++) {
		if (n > FZ_FULL && k == FZ_EDGE)
			k = n - FZ_EDGE;
		p[k] = fz_pat(seed, k);
	}
}

/* Abort (a crash for libFuzzer) at the first wrong byte among the first
 * `upto` bytes of what fz_fill wrote into an n-byte block (a realloc keeps
 * only a prefix). */
static inline void fz_verify_upto(const uint8_t *p, size_t n, size_t upto, uint64_t seed,
				  const char *what)
{
	for (size_t k = 0; k < n && k < upto; k++) {
		if (n > FZ_FULL && k == FZ_EDGE)
			k = n - FZ_EDGE;
		if (k >= upto)
			break;
		if (p[k] != fz_pat(seed, k)) {
			fprintf(stderr, "fuzz: %s: byte %zu of %zu at %p is %#x, not %#x\n", what, k, n,
				(void *)p, p[k], fz_pat(seed, k));
			abort();
		}
	}
}

static inline void fz_verify(const uint8_t *p, size_t n, uint64_t seed, const char *what)
{
	fz_verify_upto(p, n, n, seed, what);
}

/* Abort unless the n-byte block is zero: every byte up to 64 KiB, else its
 * edges and one byte per page. */
static inline void fz_zero(const uint8_t *p, size_t n, const char *what)
{
	for (size_t k = 0; k < n; k++) {
		if (n > FZ_FULL && k >= FZ_EDGE && k < n - FZ_EDGE && (k & 4095))
			k = k + 4096 - (k & 4095) < n - FZ_EDGE ? k + 4096 - (k & 4095) : n - FZ_EDGE;
		if (p[k]) {
			fprintf(stderr, "fuzz: %s: byte %zu of %zu at %p is %#x, not 0\n", what, k, n,
				(void *)p, p[k]);
			abort();
		}
	}
}

#define FZ_CHECK(cond, ...)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz: check failed: %s (%s:%d): ", #cond, \
				__FILE__, __LINE__);                               \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
			abort();                                                   \
		}                                                                  \
	} while (0)

#endif
