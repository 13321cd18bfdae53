/* recv.c - libFuzzer target: xpfo_recv (api/dataflow.c) on any bytes a
 * peer could send (issue 34: it never trusts the peer).  The input's first
 * two bytes are the receiver's bound (max), the rest goes down a socket,
 * written whole, then the writing end is closed.  Whatever it is:
 *   - a block comes back only for a well-formed frame ("xpfo", zero pad,
 *     length <= max, all the bytes there), with exactly the frame's bytes
 *     and length, in the caller's compartment;
 *   - else NULL with EMSGSIZE (length > max), EPROTO (bad header, cut
 *     frame) or ENODATA (nothing sent), and every block xpfo made
 *     for it freed again (allocations - frees unchanged).
 * Then the same bytes go to a closed compartment (to != NULL). */
#include "internal.h"
#include "fuzz.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static xpfo_compartment_t *closed;

static uint64_t live_blocks(void)
{
	struct xpfo_stats s;
	FZ_CHECK(xpfo_stats_get(&s, sizeof s) == 0, "xpfo_stats_get");
	return s.allocs - s.frees;
}

/* What a correct receiver says about the frame in d[0..n). */
static int expect(const uint8_t *d, size_t n, size_t max, uint64_t *len)
{
	if (n == 0)
		return ENODATA;
	if (n < 16 || memcmp(d, "xpfo", 4) || d[4] | d[5] | d[6] | d[7])
		return EPROTO;
	memcpy(len, d + 8, 8);
	if (*len > max)
		return EMSGSIZE;
	return *len > n - 16 ? EPROTO : 0;
}

static void one(const uint8_t *d, size_t n, size_t max, xpfo_compartment_t *to)
{
	int sv[2];
	FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	FZ_CHECK(write(sv[0], d, n) == (ssize_t)n, "write of %zu bytes", n);
	close(sv[0]);
	uint64_t want_len = 0, before = live_blocks();
	int want = expect(d, n, max, &want_len);
	size_t len = 7;
	errno = 0;
	uint8_t *r = xpfo_recv(sv[1], to, max, &len);
	int e = errno;
	close(sv[1]);
	if (want == 0) {
		FZ_CHECK(r != NULL, "a well-formed frame of %lu bytes refused (errno %d)",
			 (unsigned long)want_len, e);
		FZ_CHECK(len == want_len, "length %zu, the frame said %lu", len, (unsigned long)want_len);
		FZ_CHECK(xpfo_owner(r) == (to ? to : xpfo_current()), "the block's owner");
		xpfo_compartment_t *prev = to ? xpfo_enter(to) : NULL;
		FZ_CHECK(memcmp(r, d + 16, len) == 0, "the block's bytes");
		if (prev)
			xpfo_leave(prev);
		xpfo_free(r);
	} else {
		FZ_CHECK(r == NULL && e == want,
			 "expected errno %d, got %p errno %d", want, (void *)r, e);
		FZ_CHECK(len == 0, "*len %zu after a failure", len);
	}
	FZ_CHECK(live_blocks() == before, "%ld blocks left behind", (long)(live_blocks() - before));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (!closed)
		closed = xpfo_compartment_create("peer", 0);
	size_t max = (size_t)data[0] | (size_t)data[1] << 8;
	one(data + 2, size - 2, max, NULL);
	one(data + 2, size - 2, max, closed);
	return 0;
}
