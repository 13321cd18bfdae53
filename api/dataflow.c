/* dataflow.c - data into and out of compartments: xpfo_move (alloc/move.c
 * does the work), and xpfo_send / xpfo_recv, one block over a pipe or a
 * socket (the fork deployment's way back from a locked child).
 *
 * A frame is a header of 16 bytes, then the block's bytes:
 *
 *     "xpfo" (4 bytes), 4 zero bytes, the length (8 bytes, host order)
 *
 * Both ends run on the same machine (a parent and its forked child, two
 * threads).  The receiver trusts nothing in it: a bad magic or a non-zero
 * pad is EPROTO, a length past the caller's bound EMSGSIZE before anything
 * is allocated, a frame cut short EPROTO (the block made for it is freed).
 * The blocking reads happen outside xpfo's entry points (XPFO_ENTRY), so a
 * thread waiting for its peer holds no lock and no key of xpfo's open.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

XPFO_EXPORT void *xpfo_move(void *p, xpfo_compartment_t *to)
{
	XPFO_ENTRY;
	return comp_move(tstate_get(), p, to);
}

struct frame {
	char magic[4];
	uint32_t pad;
	uint64_t len;
};
_Static_assert(sizeof(struct frame) == 16, "the frame header is 16 bytes");
static const char frame_magic[4] = { 'x', 'p', 'f', 'o' };

XPFO_EXPORT int xpfo_send(int fd, const void *p, size_t len)
{
	if (!p && len)
		return fail_int(EINVAL);
	struct frame h = { .pad = 0, .len = len };
	memcpy(h.magic, frame_magic, sizeof h.magic);
	int e = os_send_all(fd, &h, sizeof h);
	if (!e && len)
		e = os_send_all(fd, p, len);
	return e ? fail_int(e) : 0;
}

/* The compartment the block goes to and whether the thread reaches its
 * pages itself (then the bytes are read straight into the block). */
struct recv_to {
	struct xpfo_compartment *c;
	bool direct;
};

static int recv_target(xpfo_compartment_t *to, struct recv_to *r)
{
	XPFO_ENTRY;
	struct tstate *t = tstate_get();
	r->c = to ? comp_check(to) : t->heap->comp;
	if (!r->c)
		return EINVAL;
	/* a locked thread allocates only in its own compartment; root's
	 * pages are closed while a STRICT compartment is inside */
	if (tl_sandbox_locked ? r->c != t->heap->comp : r->c == &comp_root && comp_root_closed_by())
		return EPERM;
	r->direct = comp_reaches(t, r->c);
	return 0;
}

static void *recv_alloc(struct xpfo_compartment *c, size_t n)
{
	XPFO_ENTRY;
	return comp_malloc_in(tstate_get(), c, n ? n : 1);
}

static void recv_store(struct xpfo_compartment *c, void *dst, const void *buf, size_t n)
{
	XPFO_ENTRY;
	struct tstate *t = tstate_get();
	heap_copy(t, dst, c->id, buf, t->heap->comp->id, n);
}

static void recv_drop(void *q)
{
	XPFO_ENTRY;
	heap_free(tstate_get(), q);
}

/* The block's bytes into q: straight in, or a page at a time through a
 * buffer the thread owns.  0, EPROTO (end of file first) or the errno. */
static int recv_body(int fd, const struct recv_to *r, char *q, size_t n)
{
	size_t got;
	if (r->direct) {
		int e = os_recv_all(fd, q, n, &got);
		return e ? e : got < n ? EPROTO : 0;
	}
	char buf[4096];
	for (size_t off = 0; off < n; off += got) {
		size_t k = n - off < sizeof buf ? n - off : sizeof buf;
		int e = os_recv_all(fd, buf, k, &got);
		if (e)
			return e;
		if (got < k)
			return EPROTO;
		recv_store(r->c, q + off, buf, k);
	}
	return 0;
}

XPFO_EXPORT void *xpfo_recv(int fd, xpfo_compartment_t *to, size_t max, size_t *len)
{
	struct recv_to r;
	int e = recv_target(to, &r);
	if (e)
		return fail_null(e);
	if (len)
		*len = 0;
	struct frame h;
	size_t got;
	e = os_recv_all(fd, &h, sizeof h, &got);
	if (e)
		return fail_null(e);
	if (got == 0)
		return fail_null(ENODATA);
	if (got < sizeof h || memcmp(h.magic, frame_magic, sizeof h.magic) || h.pad)
		return fail_null(EPROTO);
	if (h.len > max)
		return fail_null(EMSGSIZE);
	char *q = recv_alloc(r.c, (size_t)h.len);
	if (!q)
		return NULL;
	e = recv_body(fd, &r, q, (size_t)h.len);
	if (e) {
		recv_drop(q);
		return fail_null(e);
	}
	if (len)
		*len = (size_t)h.len;
	return q;
}
