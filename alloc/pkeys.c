/* pkeys.c - the pkeys backend: per-thread exclusivity with protection keys.
 *
 * Each live compartment that holds a key has its pages tagged with that key
 * and read-write; a thread reaches them only while its rights register
 * (PKRU, POR_EL0) opens the key, which xpfo_enter/xpfo_leave set with one
 * register write: no system call, no TLB shootdown (I4 in full).  Root's
 * pages keep key 0, so code that runs with the kernel's default rights (a
 * signal handler on Linux 6.1) still reaches them.  Free pages carry the
 * allocator's key and no access; with seal_meta so does the metadata, and
 * the allocator's key is open only inside xpfo's entry points.
 *
 * Keys are few (15 on x86-64).  A compartment that has none is "parked": its
 * pages are inaccessible and carry the allocator's key, and it works the
 * mprotect way.  Entering a parked compartment takes a key back, evicting
 * the least recently entered keyed compartment that no thread is inside
 * (its pages are re-tagged to the parking state in one coalesced walk, one
 * pkey_mprotect per span, counted in key_evictions).  A key only moves from
 * a compartment no thread is inside, and every leave rewrites the leaving
 * thread's register, so no thread still holds rights to a key when it is
 * handed to another compartment; the one exception is a register saved in
 * a signal frame and restored by sigreturn (docs/security.md).
 *
 * One more key, key_root, is reserved at start (root_key=1) and open in the
 * rights of every thread that is not locked.  No page carries it until the
 * first xpfo_lock_thread moves root's pages to it (alloc/sandbox.c): then a
 * locked thread's rights, which close it, keep root out of that thread's
 * reach while the other threads keep theirs.  It is reserved at start
 * because rights are per thread: a key allocated at the lock would be
 * closed in every other thread's register, which only that thread can
 * change.
 */
#include "alloc.h"
#include "pkeys.h"

#include <string.h>

__thread uint64_t tl_pkru __attribute__((tls_model("initial-exec")));
__thread uint64_t tl_pkru_open __attribute__((tls_model("initial-exec")));
__thread unsigned tl_seal_depth __attribute__((tls_model("initial-exec")));

/* pkey_alloc sets the calling thread's rights for the new key to this:
 * none, so a key never opens by being allocated */
#define PKEY_NO_ACCESS 1

static pthread_mutex_t pk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xpfo_compartment *key_owner[ARCH_PKEY_KEYS ? ARCH_PKEY_KEYS : 1];
static bool key_ours[ARCH_PKEY_KEYS ? ARCH_PKEY_KEYS : 1];
static uint64_t enter_tick;

/* xpfo's gate: the one place in libxpfo that writes the rights register
 * (src/gadgets.c exempts this section, and only it, from the lock's scan).
 * It checks what the register holds before it returns, so a jump straight
 * to the write with a value of the attacker's does not keep a key open in
 * a locked thread (gate_check, alloc/gate.c). */
__attribute__((noinline, section("xpfo_gate")))
void pkeys_write(uint64_t v)
{
	arch_pkey_reg_write((arch_pkey_reg_t)v);
	gate_check();
}

void pkeys_init(void)
{
	if (opt.backend == BACKEND_MPROTECT) {
		xpfo_sealed.g.backend_note = "chosen by backend=mprotect";
		return;
	}
	enum arch_pkey_status st = (enum arch_pkey_status)os_pkey_probe();
	if (st != ARCH_PKEY_OK) {
		if (opt.backend == BACKEND_PKEYS) {
			char line[256];
			size_t n = fmt_str(line, sizeof line - 1, "xpfo: error: backend=pkeys: %s\n",
					   arch_pkey_status_str(st));
			os_write(2, line, n);
			os_exit(2);
		}
		xpfo_sealed.g.backend_note = arch_pkey_status_str(st);
		return;
	}
	int k;
	if (os_pkey_alloc(PKEY_NO_ACCESS, &k)) {
		if (opt.backend == BACKEND_PKEYS) {
			os_write(2, "xpfo: error: backend=pkeys: no key for the allocator\n", 53);
			os_exit(2);
		}
		xpfo_sealed.g.backend_note = "pkey_alloc failed";
		return;
	}
	key_alloc = k;
	key_ours[k] = true;
	/* no key for root: a lock then needs a single thread (sandbox.c) */
	key_root = -1;
	if (opt.root_key && !os_pkey_alloc(PKEY_NO_ACCESS, &k) && k > 0 && k < ARCH_PKEY_KEYS) {
		key_root = k;
		key_ours[k] = true;
	}
	pkeys_on = 1;
	seal_meta = opt.seal_metadata;
	xpfo_sealed.g.backend_note = seal_meta ? "metadata sealed" : NULL;
}

/* Start-up sealed the metadata in the middle of the call that started xpfo:
 * that call now counts as the outermost entry, with the allocator's key
 * open until it returns. */
/* Key 0, and key_root unless the thread is locked. */
static arch_pkey_reg_t rights_base(bool root)
{
	arch_pkey_reg_t r = arch_pkey_reg_only_key0();
	return root && key_root > 0 ? arch_pkey_reg_set(r, key_root, ARCH_PKEY_RW) : r;
}

void pkeys_sealed(void)
{
	tl_pkru = rights_base(true);
	tl_pkru_open = arch_pkey_reg_set((arch_pkey_reg_t)tl_pkru, key_alloc, ARCH_PKEY_RW);
	tl_seal_depth = 1;
	pkeys_write(tl_pkru_open);
}

int pkeys_comp_key(struct xpfo_compartment *c)
{
	return pkeys_on && c != &comp_root ? c->key : -1;
}

/* The rights for a thread in compartment c: key 0, key_root (not in a
 * locked thread), and c's key if it has one; everything else closed. */
void pkeys_thread_update(struct tstate *t)
{
	if (!pkeys_on)
		return;
	arch_pkey_reg_t r = rights_base(!t->root_denied);
	struct xpfo_compartment *c = t->heap->comp;
	if (c != &comp_root && c->key > 0)
		r = arch_pkey_reg_set(r, c->key, ARCH_PKEY_RW);
	tl_pkru = r;
	tl_pkru_open = seal_meta ? arch_pkey_reg_set(r, key_alloc, ARCH_PKEY_RW) : r;
	pkeys_write(tl_seal_depth ? tl_pkru_open : tl_pkru);
}


static int key_new(void)
{
	for (int k = 1; k < ARCH_PKEY_KEYS; k++)
		if (key_ours[k] && !key_owner[k] && k != key_alloc && k != key_root)
			return k;
	int k;
	if (os_pkey_alloc(PKEY_NO_ACCESS, &k) || k <= 0 || k >= ARCH_PKEY_KEYS)
		return -1;
	key_ours[k] = true;
	return k;
}

/* pk_lock held: a key for c, taken from the least recently entered keyed
 * compartment no thread is inside if none is free. */
static int key_take(struct xpfo_compartment *c, comp_retag_fn *retag)
{
	int k = key_new();
	if (k < 0) {
		struct xpfo_compartment *v = NULL;
		for (int i = 1; i < ARCH_PKEY_KEYS; i++) {
			struct xpfo_compartment *o = key_owner[i];
			if (o && o != c && o->inside == 0 && (!v || o->last_enter < v->last_enter))
				v = o;
		}
		if (!v)
			return -1;
		k = v->key;
		pthread_mutex_lock(&v->lock);
		v->key = -1;
		retag(v, -1);
		pthread_mutex_unlock(&v->lock);
		key_owner[k] = NULL;
		stat_inc(key_evictions);
		stat_sub(keys_in_use, 1);
	}
	pthread_mutex_lock(&c->lock);
	c->key = k;
	retag(c, k);
	pthread_mutex_unlock(&c->lock);
	key_owner[k] = c;
	stat_inc(keys_in_use);
	return k;
}

/* Before a compartment's lock (key_take takes them under it). */
void pkeys_fork_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&pk_lock);
	else
		pthread_mutex_unlock(&pk_lock);
}

bool pkeys_enter(struct xpfo_compartment *c, comp_retag_fn *retag)
{
	if (!pkeys_on || c == &comp_root)
		return false;
	pthread_mutex_lock(&pk_lock);
	if (c->key < 0)
		key_take(c, retag);
	bool keyed = c->key > 0;
	if (keyed) {
		c->inside++;
		c->last_enter = ++enter_tick;
	}
	pthread_mutex_unlock(&pk_lock);
	return keyed;
}

void pkeys_leave(struct xpfo_compartment *c)
{
	pthread_mutex_lock(&pk_lock);
	c->inside--;
	pthread_mutex_unlock(&pk_lock);
}

/* c gives its key back (pk_lock held). */
static void key_drop(struct xpfo_compartment *c)
{
	if (c->key > 0) {
		key_owner[c->key] = NULL;
		stat_sub(keys_in_use, 1);
	}
	c->key = -1;
}

void pkeys_comp_destroyed(struct xpfo_compartment *c)
{
	if (!pkeys_on)
		return;
	pthread_mutex_lock(&pk_lock);
	key_drop(c);
	pthread_mutex_unlock(&pk_lock);
}

const char *pkeys_key_owner(int key)
{
	if (key == key_alloc)
		return NULL;
	if (key > 0 && key < ARCH_PKEY_KEYS && key_owner[key])
		return key_owner[key]->pub_name;
	return NULL;
}

/* Give a compartment created in pkeys mode a key if one is free. */
void pkeys_comp_created(struct xpfo_compartment *c)
{
	c->key = -1;
	if (!pkeys_on)
		return;
	pthread_mutex_lock(&pk_lock);
	int k = key_new();
	if (k > 0) {
		c->key = k;
		c->last_enter = ++enter_tick;
		key_owner[k] = c;
		stat_inc(keys_in_use);
	}
	pthread_mutex_unlock(&pk_lock);
}
