/* random.c - unit test of the thread streams (src/random.c), built from
 * its own sources (tests/local.mk).
 *
 * rng_refill computes four ChaCha20 blocks at once in vector lanes; its
 * buffer must be the RFC 8439 keystream: the RFC's block test vector
 * (section 2.3.2), and four blocks of a plain one-block-at-a-time
 * reference here, for random keys and for counters just before the 32-bit
 * wrap (where the nonce's first word moves on), refill after refill.
 */
#include "base.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define QR(a, b, c, d)                                                   \
	do {                                                             \
		a += b; d ^= a; d = ROTL(d, 16);                         \
		c += d; b ^= c; b = ROTL(b, 12);                         \
		a += b; d ^= a; d = ROTL(d, 8);                          \
		c += d; b ^= c; b = ROTL(b, 7);                          \
	} while (0)

static void ref_block(uint32_t st[16], uint8_t out[64])
{
	uint32_t x[16];
	memcpy(x, st, sizeof x);
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++) {
		uint32_t v = x[i] + st[i];
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (uint8_t)(v >> (8 * k)); /* little endian */
	}
	if (++st[12] == 0)
		st[13]++;
}

static void rfc_vector(void)
{
	static const uint8_t want[64] = {
		0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3,
		0x20, 0x71, 0xc4, 0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22,
		0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e, 0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa,
		0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2, 0xb5, 0x12, 0x9c, 0xd1,
		0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
	};
	struct rng r;
	rng_init(&r);
	for (int i = 0; i < 8; i++) /* key 00 01 02 .. 1f */
		r.state[4 + i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 |
				 (uint32_t)(4 * i + 2) << 16 | (uint32_t)(4 * i + 3) << 24;
	r.state[12] = 1;
	r.state[13] = 0x09000000; /* nonce 00 00 00 09 00 00 00 4a 00 00 00 00 */
	r.state[14] = 0x4a000000;
	r.state[15] = 0;
	rng_refill(&r);
	CHECK(!memcmp(r.buf, want, sizeof want), "RFC 8439 2.3.2: the first block differs");
}

/* refills from a state with counter `ctr` against the reference */
static void against_ref(uint32_t ctr, int refills)
{
	struct rng r;
	rng_init(&r);
	r.state[12] = ctr;
	uint32_t st[16];
	memcpy(st, r.state, sizeof st);
	for (int n = 0; n < refills; n++) {
		uint8_t want[sizeof r.buf];
		for (size_t b = 0; b < sizeof r.buf / 64; b++)
			ref_block(st, want + 64 * b);
		rng_refill(&r);
		CHECK(!memcmp(r.buf, want, sizeof want) && !memcmp(r.state, st, sizeof st),
		      "counter %#x, refill %d: not the reference keystream", (unsigned)ctr, n);
	}
}

int main(void)
{
	tu_prog = "unit/random";
	rfc_vector();
	against_ref(0, 64);
	for (uint32_t d = 1; d <= 8; d++) /* every position of the wrap */
		against_ref(UINT32_MAX - d, 3);
	tu_exit();
}
