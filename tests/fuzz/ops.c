/* ops.c - libFuzzer target: the input is a sequence of operations on a
 * table of 16 block slots and 4 compartment slots, checked against a model.
 *
 * Operations: xpfo_malloc, xpfo_calloc, xpfo_realloc, xpfo_aligned_alloc,
 * xpfo_posix_memalign, xpfo_free, xpfo_free_sized, xpfo_usable_size,
 * xpfo_compartment_create / enter / leave / destroy, xpfo_malloc_in /
 * calloc_in / aligned_alloc_in, xpfo_transfer, xpfo_flush, and calls that
 * must fail.  The model knows each block's requested size, owner and
 * pattern seed, the compartment the thread is in and the enter stack; it
 * checks contents before every free and realloc and after every transfer,
 * usable size >= request, xpfo_owner == the model's owner, xpfo_current,
 * and the errno of every call that must fail.  One thread, mprotect
 * backend: a compartment's blocks are reachable only while the thread is
 * inside it, so the model writes and checks a block only then (a block
 * allocated from outside is written once it becomes reachable).
 * Every input ends with the state reset (leave all, free all, destroy all),
 * so inputs are independent. */
#include "internal.h" /* canary_bytes: where small blocks end */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#define NSLOT 16
#define NCOMP 4
#define MAXDEPTH 32
#define ROOT (-1)

enum kind { K_SMALL, K_RUN, K_UNKNOWN };

struct mslot {
	uint8_t *p;
	size_t req;
	uint64_t seed;
	int comp;     /* ROOT or a compartment slot */
	int written;  /* the pattern is in it */
	int aligned;  /* from an aligned entry point: no free_sized (C23) */
	enum kind kind;
};

struct mcomp {
	xpfo_compartment_t *h; /* kept after destroy: a dead handle to misuse */
	int live;
};

static struct model {
	struct mslot s[NSLOT];
	struct mcomp c[NCOMP];
	int cur;
	unsigned depth;
	int stack[MAXDEPTH];
	uint64_t serial;
} m;

static xpfo_compartment_t *handle(int ci) { return ci == ROOT ? xpfo_root() : m.c[ci].h; }

/* A dead handle that no live compartment of the table reuses (EINVAL). */
static int handle_dead(int ci)
{
	if (ci == ROOT || m.c[ci].live || !m.c[ci].h)
		return 0;
	for (int j = 0; j < NCOMP; j++)
		if (m.c[j].live && m.c[j].h == m.c[ci].h)
			return 0;
	return 1;
}

static int reachable(const struct mslot *s) { return s->comp == ROOT || s->comp == m.cur; }

static int comp_arg(struct fz_in *in)
{
	unsigned b = fz_u8(in) % (NCOMP + 1);
	return b == NCOMP ? ROOT : (int)b;
}

/* Blocks of RUN_MIN (4096) bytes or more, and alignments above a page, are
 * page runs (transferable); everything else lives in a slab. */
static enum kind kind_of(size_t size, size_t align)
{
	if (size >= RUN_MIN || align > 4096)
		return K_RUN;
	return K_SMALL;
}

static void slot_check(struct mslot *s, const char *what)
{
	FZ_CHECK(xpfo_owner(s->p) == handle(s->comp), "%s: owner %p, model %p", what,
		 (void *)xpfo_owner(s->p), (void *)handle(s->comp));
	FZ_CHECK(xpfo_usable_size(s->p) >= s->req, "%s: usable %zu < %zu", what,
		 xpfo_usable_size(s->p), s->req);
	if (!reachable(s))
		return;
	if (s->written)
		fz_verify(s->p, s->req, s->seed, what);
	else {
		fz_fill(s->p, s->req, s->seed);
		s->written = 1;
	}
}

static void slot_set(struct mslot *s, void *p, size_t req, int comp, enum kind k)
{
	s->p = p;
	s->req = req;
	s->seed = ++m.serial * 0x100000001b3ull;
	s->comp = comp;
	s->written = 0;
	s->kind = k;
	slot_check(s, "new block");
}

static void slot_free(struct mslot *s, int sized)
{
	if (!s->p)
		return;
	slot_check(s, "before free");
	if (sized && !s->aligned)
		xpfo_free_sized(s->p, s->req);
	else
		xpfo_free(s->p);
	s->p = NULL;
}

static void op_alloc(struct fz_in *in, struct mslot *s, unsigned how)
{
	size_t size = fz_size(in), n = fz_u8(in) % (size > 65536 ? 3 : 17), align = (size_t)1 << fz_u8(in) % 23;
	void *p = NULL;
	enum kind k = kind_of(size, 0);
	slot_free(s, 0);
	if (how == 0) {
		p = xpfo_malloc(size);
	} else if (how == 1) {
		p = xpfo_calloc(n, size);
		size *= n;
		k = kind_of(size, 0);
		if (p)
			fz_zero(p, size, "calloc");
	} else if (how == 2) {
		p = xpfo_aligned_alloc(align, size);
		k = kind_of(size, align);
	} else {
		int e = xpfo_posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
		FZ_CHECK(!e == !!p, "posix_memalign returned %d, p %p", e, p);
		k = kind_of(size, align);
	}
	FZ_CHECK(p, "allocation of %zu failed, errno %d", size, errno);
	FZ_CHECK(how < 2 || !((uintptr_t)p & (align - 1)), "%p not aligned to %zu", p, align);
	slot_set(s, p, size, m.cur, k);
	s->aligned = how >= 2;
}

static void op_realloc(struct fz_in *in, struct mslot *s)
{
	size_t size = fz_size(in);
	if (!s->p || !reachable(s))
		return; /* realloc reads the block: only from where it is reachable */
	slot_check(s, "before realloc");
	uint8_t *p = xpfo_realloc(s->p, size);
	if (!size) {
		FZ_CHECK(!p, "realloc(p, 0) returned %p", (void *)p);
		s->p = NULL;
		return;
	}
	FZ_CHECK(p, "realloc to %zu failed, errno %d", size, errno);
	fz_verify_upto(p, s->req, size, s->seed, "after realloc");
	xpfo_compartment_t *o = xpfo_owner(p);
	FZ_CHECK(o == handle(s->comp) || o == handle(m.cur), "realloc: owner %p", (void *)o);
	s->comp = o == handle(s->comp) ? s->comp : m.cur;
	s->p = p;
	s->req = size;
	s->kind = kind_of(size, 0);
	s->aligned = 0; /* realloc's result is malloc's */
	fz_fill(p, size, s->seed);
}

static void op_alloc_in(struct fz_in *in, struct mslot *s)
{
	int ci = comp_arg(in);
	unsigned how = fz_u8(in) % 3;
	size_t size = fz_size(in), align = (size_t)1 << fz_u8(in) % 23;
	if (how == 1)
		size %= 4096;
	slot_free(s, 0);
	errno = 0;
	void *p = how == 0 ? xpfo_malloc_in(handle(ci), size)
		: how == 1 ? xpfo_calloc_in(handle(ci), 3, size)
			   : xpfo_aligned_alloc_in(handle(ci), align, size);
	if (how == 1)
		size *= 3;
	if (handle_dead(ci)) {
		FZ_CHECK(!p && errno == EINVAL, "alloc_in(dead): %p errno %d", p, errno);
		return;
	}
	if (ci != ROOT && !m.c[ci].live)
		return; /* never created, or its handle was reused */
	FZ_CHECK(p, "alloc_in(%d, %zu) failed, errno %d", ci, size, errno);
	FZ_CHECK(how != 2 || !((uintptr_t)p & (align - 1)), "%p not aligned to %zu", p, align);
	if (how == 1 && (ci == ROOT || ci == m.cur))
		fz_zero(p, size, "calloc_in");
	slot_set(s, p, size, ci, kind_of(size, how == 2 ? align : 0));
	s->aligned = how == 2;
}

static void op_transfer(struct fz_in *in, struct mslot *s)
{
	int ci = comp_arg(in);
	if (!s->p)
		return;
	errno = 0;
	int r = xpfo_transfer(s->p, handle(ci));
	if (handle_dead(ci) || (ci != ROOT && !m.c[ci].live)) {
		FZ_CHECK(r == -1 && errno == EINVAL, "transfer to a dead compartment: %d errno %d",
			 r, errno);
		return;
	}
	if (s->kind == K_SMALL || (s->kind == K_UNKNOWN && r)) {
		FZ_CHECK(r == -1 && errno == EINVAL, "transfer of a small block: %d errno %d", r,
			 errno);
		s->kind = K_SMALL;
		slot_check(s, "after a refused transfer");
		return;
	}
	FZ_CHECK(r == 0, "transfer of a %zu-byte run failed, errno %d", s->req, errno);
	s->kind = K_RUN;
	s->comp = ci;
	slot_check(s, "after transfer");
}

static void op_create(struct fz_in *in)
{
	int ci = comp_arg(in);
	if (ci == ROOT || m.c[ci].live)
		return;
	xpfo_compartment_t *h = xpfo_compartment_create("fuzz", 0);
	FZ_CHECK(h, "compartment_create failed, errno %d", errno);
	m.c[ci].h = h;
	m.c[ci].live = 1;
}

static void op_enter(struct fz_in *in)
{
	int ci = comp_arg(in);
	if (m.depth == MAXDEPTH || (ci != ROOT && !m.c[ci].h))
		return;
	errno = 0;
	xpfo_compartment_t *prev = xpfo_enter(handle(ci));
	if (handle_dead(ci)) {
		FZ_CHECK(!prev && errno == EINVAL, "enter(dead): %p errno %d", (void *)prev, errno);
		return;
	}
	if (ci != ROOT && !m.c[ci].live)
		return;
	FZ_CHECK(prev == handle(m.cur), "enter returned %p, not %p", (void *)prev,
		 (void *)handle(m.cur));
	m.stack[m.depth++] = m.cur;
	m.cur = ci;
}

/* Leave to the real previous compartment, or to any other. */
static void op_leave(struct fz_in *in)
{
	unsigned b = fz_u8(in);
	int ci = b & 1 && m.depth ? m.stack[m.depth - 1] : comp_arg(in);
	if (ci != ROOT && !m.c[ci].h)
		return;
	int dead = handle_dead(ci);
	if (!dead && ci != ROOT && !m.c[ci].live)
		return;
	errno = 0;
	xpfo_leave(handle(ci));
	if (!m.depth || dead) {
		FZ_CHECK(errno == EINVAL, "leave (depth %u, dead %d): errno %d", m.depth, dead, errno);
		return;
	}
	m.depth--;
	m.cur = ci;
}

static void op_destroy(struct fz_in *in)
{
	int ci = comp_arg(in);
	if (ci != ROOT && !m.c[ci].h)
		return;
	int dead = handle_dead(ci);
	if (!dead && ci != ROOT && !m.c[ci].live)
		return;
	errno = 0;
	int r = xpfo_compartment_destroy(handle(ci));
	if (ci == ROOT || dead || ci == m.cur) {
		int want = ci == m.cur && ci != ROOT && !dead ? EBUSY : EINVAL;
		FZ_CHECK(r == -1 && errno == want, "destroy(%d): %d errno %d, want %d", ci, r, errno,
			 want);
		return;
	}
	FZ_CHECK(r == 0, "destroy failed, errno %d", errno);
	m.c[ci].live = 0;
	for (int i = 0; i < NSLOT; i++)
		if (m.s[i].p && m.s[i].comp == ci)
			m.s[i].p = NULL; /* its pages went with it */
}

/* Calls that must fail, with their errno. */
static void op_bad(struct fz_in *in)
{
	unsigned b = fz_u8(in) % 4;
	errno = 0;
	if (b == 0) {
		void *p = xpfo_malloc((size_t)-1 - fz_u8(in));
		FZ_CHECK(!p && errno == ENOMEM, "malloc(huge): %p errno %d", p, errno);
	} else if (b == 1) {
		void *p = xpfo_aligned_alloc(3u << (fz_u8(in) % 8), 16);
		FZ_CHECK(!p && errno == EINVAL, "aligned_alloc(bad): %p errno %d", p, errno);
	} else if (b == 2) {
		void *p = xpfo_calloc((size_t)1 << 40, (size_t)1 << 40);
		FZ_CHECK(!p && errno == ENOMEM, "calloc overflow: %p errno %d", p, errno);
	} else {
		xpfo_compartment_t *c = xpfo_compartment_create(NULL, 0);
		FZ_CHECK(!c && errno == EINVAL, "create(NULL): %p errno %d", (void *)c, errno);
	}
}

static void check_all(void)
{
	FZ_CHECK(xpfo_current() == handle(m.cur), "current %p, model %p", (void *)xpfo_current(),
		 (void *)handle(m.cur));
	for (int i = 0; i < NSLOT; i++)
		if (m.s[i].p)
			slot_check(&m.s[i], "check");
}

static int trace; /* FUZZ_TRACE=1: print each operation (to read a crash) */

static void op_one(struct fz_in *in)
{
	unsigned op = fz_u8(in) % 18;
	struct mslot *s = &m.s[fz_u8(in) % NSLOT];
	if (trace)
		fprintf(stderr, "op %u slot %d (cur %d depth %u) at %zu\n", op, (int)(s - m.s), m.cur,
			m.depth, in->at);
	switch (op) {
	case 0: case 1: case 2: case 3: op_alloc(in, s, op); break;
	case 4: op_realloc(in, s); break;
	case 5: slot_free(s, 0); break;
	case 6: slot_free(s, 1); break;
	case 7: if (s->p) slot_check(s, "usable"); break;
	case 8: op_create(in); break;
	case 9: op_enter(in); break;
	case 10: op_leave(in); break;
	case 11: op_destroy(in); break;
	case 12: op_alloc_in(in, s); break;
	case 13: op_transfer(in, s); break;
	case 14: FZ_CHECK(xpfo_flush() == 0, "flush failed, errno %d", errno); break;
	case 15: op_bad(in); break;
	default: check_all(); break;
	}
}

/* Leave every compartment, free every block from where it is reachable
 * (checking it), destroy every compartment: the next input starts clean. */
static void reset(void)
{
	while (m.depth) {
		xpfo_leave(xpfo_root());
		m.depth--;
		m.cur = ROOT;
	}
	if (m.cur != ROOT) { /* left to another than the previous at depth 1 */
		FZ_CHECK(xpfo_enter(xpfo_root()) == handle(m.cur), "reset: enter root");
		xpfo_leave(xpfo_root());
	}
	m.cur = ROOT;
	check_all();
	for (int ci = ROOT; ci < NCOMP; ci++) {
		if (ci != ROOT && !m.c[ci].live)
			continue;
		if (ci != ROOT)
			FZ_CHECK(xpfo_enter(m.c[ci].h) == xpfo_root(), "reset: enter");
		m.cur = ci;
		for (int i = 0; i < NSLOT; i++)
			if (m.s[i].p && m.s[i].comp == ci)
				slot_free(&m.s[i], i & 1);
		if (ci != ROOT)
			xpfo_leave(xpfo_root());
		m.cur = ROOT;
		if (ci != ROOT)
			FZ_CHECK(xpfo_compartment_destroy(m.c[ci].h) == 0, "reset: destroy, errno %d",
				 errno);
	}
	FZ_CHECK(xpfo_flush() == 0, "reset: flush, errno %d", errno);
	memset(&m, 0, sizeof m);
	m.cur = ROOT;
	struct xpfo_stats st;
	FZ_CHECK(xpfo_stats_get(&st, sizeof st) == 0 && st.compartments == 1,
		 "compartments left: %llu", (unsigned long long)st.compartments);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	trace = getenv("FUZZ_TRACE") != NULL;
	m.cur = ROOT;
	for (unsigned n = 0; fz_more(&in) && n < 512; n++)
		op_one(&in);
	reset();
	return 0;
}
