/* harden.c - the heap's hardening: canaries, fills, the write-after-free
 * check, the quarantine of freed slots, and struct touch, which reaches a
 * slot of a compartment the calling thread is not inside.
 */
#include "heap.h"
#include "pkeys.h"

/* No /proc/self/mem: move the slot's pages away and open them there. */
static void touch_move(struct touch *x, void *p, size_t n)
{
	x->a = (uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1);
	x->len = align_up((uintptr_t)p + n, PAGE_SIZE) - x->a;
	void *t;
	int e = os_move_out((void *)x->a, x->len, OS_RW, &t);
	if (e) {
		x->skipped = true;
		x->err = e;
		stat_inc(touches_skipped);
		return;
	}
	x->moved = true;
	x->delta = (char *)t - (char *)x->a;
	stat_inc(grant_syscalls);
}

void touch_begin(struct touch *x, struct tstate *t, uint16_t owner, void *p, size_t n)
{
	x->c = NULL;
	x->indirect = x->moved = x->skipped = x->rights = false;
	x->delta = 0;
	if (touch_direct(t, owner))
		return;
	struct xpfo_compartment *c = comp_table[owner];
	if (!c || opt.revoke == REVOKE_OFF) /* root and the thread's own: touch_direct */
		return;
	pthread_mutex_lock(&c->lock);
	stat_inc(touches_locked);
	x->c = c;
	int key = pkeys_comp_key(c);
	if (key > 0) {
		x->saved = arch_pkey_reg_read();
		pkeys_write(arch_pkey_reg_set((arch_pkey_reg_t)x->saved, key, ARCH_PKEY_RW));
		x->rights = true;
		return;
	}
	if (c->open)
		return;
	char probe;
	if (os_mem_read(p, &probe, 1) == 0) {
		x->indirect = true;
		return;
	}
	touch_move(x, p, n);
}

void touch_end(struct touch *x)
{
	if (likely(!x->c))
		return;
	if (x->rights)
		pkeys_write(x->saved);
	if (x->moved) {
		int e = os_move_back((void *)(x->a + x->delta), (void *)x->a, x->len);
		if (e)
			xpfo_fatal("cannot move a slot of compartment \"%s\" back to %p (errno %d)",
				   x->c->name, (void *)x->a, (long)e);
		stat_inc(revoke_syscalls);
	}
	pthread_mutex_unlock(&x->c->lock);
}

static __attribute__((noinline, cold)) void touch_fatal(struct touch *x, const char *what)
{
	xpfo_fatal("cannot %s a slot of compartment \"%s\": no /proc/self/mem and its pages "
		   "cannot be moved (errno %d)", what, x->c->name, (long)x->err);
}

static void t_write(struct touch *x, void *p, const void *buf, size_t n)
{
	if (unlikely(x->skipped))
		touch_fatal(x, "write");
	if (!x->indirect)
		memcpy((char *)p + x->delta, buf, n);
	else if (os_mem_write(p, buf, n))
		xpfo_fatal("cannot write a slot of compartment \"%s\"", x->c->name);
}

void touch_fill(struct touch *x, void *p, int byte, size_t n)
{
	if (unlikely(x->skipped))
		touch_fatal(x, "write");
	if (!x->indirect) {
		memset((char *)p + x->delta, byte, n);
		return;
	}
	unsigned char buf[1024];
	memset(buf, byte, sizeof buf);
	for (size_t at = 0; at < n; at += sizeof buf)
		t_write(x, (char *)p + at, buf, n - at < sizeof buf ? n - at : sizeof buf);
}

/* Offset of the first byte of p[0..n) that is not `byte`, or n: 32 bytes
 * a step (the write-after-free check runs at every reuse of a slot). */
static size_t first_not(const unsigned char *p, int byte, size_t n)
{
	uint64_t pat = 0x0101010101010101ull * (unsigned char)byte;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, sizeof w);
		if ((w[0] ^ pat) | (w[1] ^ pat) | (w[2] ^ pat) | (w[3] ^ pat))
			break;
	}
	for (; i < n; i++)
		if (p[i] != (unsigned char)byte)
			return i;
	return n;
}

/* Offset of the first byte of p[0..n) that is not `byte`, or n (also when
 * the slot cannot be read: the check is skipped). */
static size_t t_first_not(struct touch *x, const void *p, int byte, size_t n)
{
	if (x->skipped)
		return n;
	if (!x->indirect)
		return first_not((const unsigned char *)p + x->delta, byte, n);
	unsigned char buf[1024];
	for (size_t at = 0; at < n; at += sizeof buf) {
		size_t k = n - at < sizeof buf ? n - at : sizeof buf;
		const unsigned char *b = (const unsigned char *)p + at + x->delta;
		if (x->indirect) {
			touch_read(x, (const unsigned char *)p + at, buf, k);
			b = buf;
		}
		for (size_t i = 0; i < k; i++)
			if (b[i] != (unsigned char)byte)
				return at + i;
	}
	return n;
}

void harden_zero_in(struct tstate *t, uint16_t owner, void *p, size_t n)
{
	struct touch x;
	touch_begin(&x, t, owner, p, n);
	touch_fill(&x, p, 0, n);
	touch_end(&x);
}

/* n bytes from src (a block of src_owner) to dst (one of dst_owner), either
 * of them closed to the thread: one touch when the other side is direct,
 * else through a buffer a page at a time (touch_begin takes the
 * compartment's lock: never two at once). */
void harden_copy(struct tstate *t, void *dst, uint16_t dst_owner, const void *src, uint16_t src_owner,
		 size_t n)
{
	struct touch x;
	if (touch_direct(t, dst_owner)) {
		touch_begin(&x, t, src_owner, (void *)src, n);
		touch_read(&x, src, dst, n);
		touch_end(&x);
		return;
	}
	if (touch_direct(t, src_owner)) {
		touch_begin(&x, t, dst_owner, dst, n);
		t_write(&x, dst, src, n);
		touch_end(&x);
		return;
	}
	unsigned char buf[PAGE_SIZE];
	for (size_t off = 0; off < n; off += sizeof buf) {
		size_t k = n - off < sizeof buf ? n - off : sizeof buf;
		const char *s = (const char *)src + off;
		char *d = (char *)dst + off;
		touch_begin(&x, t, src_owner, (void *)s, k);
		touch_read(&x, s, buf, k);
		touch_end(&x);
		touch_begin(&x, t, dst_owner, d, k);
		t_write(&x, d, buf, k);
		touch_end(&x);
	}
}

static __attribute__((noinline, cold)) void waf_fatal(void *p, size_t off, unsigned cls)
{
	struct tstate *t = tl_state;
	xpfo_fatal("write after free of %p (byte %z of the block, size class %u) (compartment \"%s\")",
		   p, off, (unsigned long)classes[cls].size, t ? t->heap->comp->name : "root");
}

/* The write-after-free check of a freed slot's user bytes: all of them, or
 * with waf_bytes=N (the default profile) the first N and the last 8, where
 * stale writes through a freed object's header, list links, reference
 * count or trailing field land; a write only in between is not seen. */
static void waf_scan(struct touch *x, void *p, unsigned cls, size_t user)
{
	size_t head = opt.waf_bytes && opt.waf_bytes + 8 < user ? opt.waf_bytes : user;
	size_t off = t_first_not(x, p, free_fill(), head);
	if (off == head && head < user)
		off = user - 8 + t_first_not(x, (char *)p + user - 8, free_fill(), 8);
	if (off < user)
		waf_fatal(p, off, cls);
}

/* Hardening work on a slot being handed out (t->hard says some is on). */
__attribute__((noinline)) void slot_prepare(struct tstate *t, struct slab *s, void *p)
{
	size_t size = classes[s->cls].size, user = size - canary_bytes;
	bool check = opt.waf_check && !t->fresh_slot;
	if (!opt.junk && touch_direct(t, s->owner) &&
	    (!check || waf_clean_direct((const unsigned char *)p, user))) {
		if (canary_bytes)
			memcpy((char *)p + user, &s->canary, canary_bytes);
		return; /* the usual case, without struct touch */
	}
	struct touch x;
	touch_begin(&x, t, s->owner, p, size);
	if (check)
		waf_scan(&x, p, s->cls, user);
	if (opt.junk)
		touch_fill(&x, p, 0xdb, user);
	if (canary_bytes)
		t_write(&x, (char *)p + user, &s->canary, sizeof s->canary);
	touch_end(&x);
}

_Noreturn __attribute__((noinline, cold)) void canary_fatal(void *p, unsigned cls)
{
	struct tstate *t = tl_state;
	xpfo_fatal("canary of %p (size class %u) corrupted: buffer overflow (compartment \"%s\")", p,
		   (unsigned long)classes[cls].size, t ? t->heap->comp->name : "root");
}

/* A quarantined slot is still waiting in its slab when its page is a slab's,
 * p a slot start and its quarantine bit set.  A compartment destroyed since
 * took the slab and its pages away (the pages may be another slab's by
 * now): such an entry is dropped, never read, never released into what
 * took the pages (found by the threads fuzz target, tests/isolation/
 * quardestroy). */
static bool quarantine_valid(uintptr_t p, struct blk *b)
{
	memset(b, 0, sizeof *b);
	if (owner_lookup(p, b) != BLK_FREED || b->kind != BK_SMALL || !b->s)
		return false;
	uint64_t bit = 1ull << (b->slot % 64);
	return (bits_load(&b->s->quar[b->slot / 64]) & bit) && (bits_load(&b->s->used[b->slot / 64]) & bit);
}

/* Out of the quarantine: check it was not written, then really free it. */
static void quarantine_evict(struct tstate *t, void *p)
{
	struct blk b;
	if (!quarantine_valid((uintptr_t)p, &b))
		return;
	struct slab *s = b.s;
	const struct size_class *k = &classes[s->cls];
	uint32_t i = b.slot;
	if (opt.waf_check) {
		struct touch x;
		touch_begin(&x, t, s->owner, p, k->size);
		size_t off = t_first_not(&x, p, free_fill(), k->size - canary_bytes);
		touch_end(&x);
		if (off < k->size - canary_bytes)
			waf_fatal(p, off, s->cls);
	}
	uint64_t bit = 1ull << (i % 64);
	if (__atomic_fetch_and(&s->quar[i / 64], ~bit, __ATOMIC_RELAXED) & bit)
		slot_release(t, s, i);
}

/* A freed slot waits: a random one of those waiting takes its turn out. */
static void quarantine_push(struct tstate *t, struct slab *s, uint32_t i, void *p)
{
	uint64_t bit = 1ull << (i % 64);
	if (__atomic_fetch_or(&s->quar[i / 64], bit, __ATOMIC_ACQ_REL) & bit) {
		struct blk b = { .owner = s->owner };
		heap_misuse("free", (uintptr_t)p, BLK_FREED, &b);
	}
	struct quarantine *q = &t->q;
	if (!q->slot) {
		q->slot = meta_alloc(opt.quarantine * sizeof *q->slot);
		if (!q->slot) {
			quarantine_evict(t, p);
			return;
		}
	}
	if (q->n < opt.quarantine) {
		q->slot[q->n++] = p;
		return;
	}
	unsigned r = (unsigned)(rng_u64(&t->rng) % q->n);
	void *out = q->slot[r];
	q->slot[r] = p;
	quarantine_evict(t, out);
}

void harden_quarantine_drain(struct tstate *t)
{
	struct quarantine *q = &t->q;
	while (q->n)
		quarantine_evict(t, q->slot[--q->n]);
	revoke_quarantine_drain(t);
}

/* The hardening part of freeing a small slot; true when the slot went to
 * the quarantine instead of being released. */
__attribute__((noinline)) bool slot_on_free(struct tstate *t, struct slab *s, uint32_t i,
					    void *p)
{
	struct touch x;
	touch_begin(&x, t, s->owner, p, classes[s->cls].size);
	if (canary_bytes)
		canary_check_x(&x, s, p);
	if (opt.zero_on_free || opt.junk)
		touch_fill(&x, p, free_fill(), classes[s->cls].size - canary_bytes);
	touch_end(&x);
	if (opt.quarantine) {
		quarantine_push(t, s, i, p);
		return true;
	}
	return false;
}

unsigned harden_flags(void)
{
	return canary_bytes || opt.waf_check || opt.junk || opt.zero_on_free || opt.quarantine;
}
