/* random.c - a ChaCha20 keystream per thread, keyed from getrandom(2).
 *
 * The block function follows RFC 8439 (20 rounds, 32-bit counter, 96-bit
 * nonce).  Each thread keys its own stream once, so drawing a byte is a load
 * from a buffer of four blocks.  The four are computed together, one in each
 * lane of SSE2-sized vectors (GCC and clang vector extensions): the same
 * keystream as four blocks one after another, in less than half the
 * instructions (the slot randomisation draws a byte per small malloc). */
#include "base.h"

#include <string.h>

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                   \
	do {                                             \
		a += b; d ^= a; d = ROTL(d, 16);         \
		c += d; b ^= c; b = ROTL(b, 12);         \
		a += b; d ^= a; d = ROTL(d, 8);          \
		c += d; b ^= c; b = ROTL(b, 7);          \
	} while (0)
/* The 20 rounds (ten column-then-diagonal double rounds) over x[16]: scalar
 * words for one block, or vectors of that word in four blocks. */
#define CHACHA_ROUNDS(x)                                         \
	do {                                                     \
		for (int r_ = 0; r_ < 10; r_++) {                \
			QR(x[0], x[4], x[8], x[12]);             \
			QR(x[1], x[5], x[9], x[13]);             \
			QR(x[2], x[6], x[10], x[14]);            \
			QR(x[3], x[7], x[11], x[15]);            \
			QR(x[0], x[5], x[10], x[15]);            \
			QR(x[1], x[6], x[11], x[12]);            \
			QR(x[2], x[7], x[8], x[13]);             \
			QR(x[3], x[4], x[9], x[14]);             \
		}                                                \
	} while (0)

static void chacha_block(const uint32_t in[16], uint32_t out[16])
{
	uint32_t x[16];
	memcpy(x, in, sizeof x);
	CHACHA_ROUNDS(x);
	for (int i = 0; i < 16; i++)
		out[i] = x[i] + in[i];
}

typedef uint32_t v4u __attribute__((vector_size(16)));

/* word i of four blocks, from x[i..i+3] holding those words of each block */
static void transpose_store(const v4u *x, uint32_t *out)
{
	v4u t0 = __builtin_shufflevector(x[0], x[1], 0, 4, 1, 5);
	v4u t1 = __builtin_shufflevector(x[0], x[1], 2, 6, 3, 7);
	v4u t2 = __builtin_shufflevector(x[2], x[3], 0, 4, 1, 5);
	v4u t3 = __builtin_shufflevector(x[2], x[3], 2, 6, 3, 7);
	v4u b[4] = {
		__builtin_shufflevector(t0, t2, 0, 1, 4, 5),
		__builtin_shufflevector(t0, t2, 2, 3, 6, 7),
		__builtin_shufflevector(t1, t3, 0, 1, 4, 5),
		__builtin_shufflevector(t1, t3, 2, 3, 6, 7),
	};
	for (int k = 0; k < 4; k++)
		memcpy(out + 16 * k, &b[k], sizeof b[k]);
}

/* Blocks with counters in[12] .. in[12] + 3 (no wrap: the caller's). */
static void chacha_block4(const uint32_t in[16], uint32_t out[64])
{
	v4u s[16], x[16];
	for (int i = 0; i < 16; i++)
		s[i] = (v4u){ in[i], in[i], in[i], in[i] };
	s[12] += (v4u){ 0, 1, 2, 3 };
	memcpy(x, s, sizeof x);
	CHACHA_ROUNDS(x);
	for (int i = 0; i < 16; i++)
		x[i] += s[i];
	for (int i = 0; i < 16; i += 4)
		transpose_store(&x[i], out + i);
}

void rng_init(struct rng *r)
{
	static const uint32_t sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };
	memcpy(r->state, sigma, sizeof sigma);
	if (os_random(&r->state[4], 8 * sizeof(uint32_t) + 3 * sizeof(uint32_t)))
		xpfo_fatal("getrandom failed: cannot key the slot randomisation");
	r->state[12] = 0; /* block counter; state[13..15]: nonce (random above) */
	r->used = sizeof r->buf;
}

void rng_refill(struct rng *r)
{
	uint32_t *out = (uint32_t *)r->buf;
	if (r->state[12] <= UINT32_MAX - 3) {
		chacha_block4(r->state, out);
		if ((r->state[12] += 4) == 0)
			r->state[13]++; /* 2^32 blocks: move to the next nonce */
	} else {
		for (int k = 0; k < 4; k++) {
			chacha_block(r->state, out + 16 * k);
			if (++r->state[12] == 0)
				r->state[13]++;
		}
	}
	r->used = 0;
}

uint64_t rng_u64(struct rng *r)
{
	if (r->used > sizeof r->buf - 8)
		rng_refill(r);
	uint64_t v;
	memcpy(&v, r->buf + r->used, 8);
	r->used += 8;
	return v;
}
