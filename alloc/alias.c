/* alias.c - alias views: xpfo_share_fd.
 *
 * A shared page run is moved, in place, into a memfd (os_alias_create):
 * from then on its pages are the file's, and the descriptor handed out (a
 * new open of the same file) lets another process map them.  The
 * allocator keeps its own descriptor in the table below.  Revocation is the
 * purge of the run (backing_purge, from the gather flush, a segment's
 * release, a destroy) or its transfer: the memfd is truncated to nothing,
 * so every other mapping of it faults with SIGBUS and a holder of the
 * descriptor finds an empty file that can never hold pages again; a part
 * of the run revoked alone (realloc shrinking it) is cut off the file's
 * end.  The memfd is sealed when it is made, before any descriptor leaves
 * (os_alias_create): it cannot grow, no holder can add a seal that would
 * stop the truncation, and a run shared with XPFO_SHARE_READ alone is in a
 * file that no one can write but through the owner's own mapping, however
 * a holder opens it again (/proc/PID/fd/N with O_RDWR).  So a run is shared
 * read-only or read-write, never both (EPERM).  The local range gets a new
 * anonymous mapping in the same step, before the pages are free for anyone,
 * so no later allocation shares a frame with an old alias. */
#include "backing.h"

#include <errno.h>

#define ALIAS_MAX 4096

struct alias {
	uintptr_t addr;
	size_t len;   /* 0: a free slot */
	int fd;       /* the allocator's descriptor of the memfd */
	long pid;     /* the process that shared it (a fork child only lets go) */
	bool ro;      /* shared with XPFO_SHARE_READ alone: the memfd is read-only */
};

static struct alias *aliases;    /* ALIAS_MAX entries (meta_alloc) */
static unsigned alias_top;       /* slots ever used */
static unsigned alias_live;      /* atomic: entries in use */
static pthread_mutex_t alias_lock = PTHREAD_MUTEX_INITIALIZER;

bool alias_in(uintptr_t a, size_t len)
{
	if (likely(!__atomic_load_n(&alias_live, __ATOMIC_ACQUIRE)))
		return false;
	bool hit = false;
	pthread_mutex_lock(&alias_lock);
	for (unsigned i = 0; i < alias_top && !hit; i++)
		hit = aliases[i].len && aliases[i].addr < a + len && a < aliases[i].addr + aliases[i].len;
	pthread_mutex_unlock(&alias_lock);
	return hit;
}

/* The whole alias goes: every mapping of it, everywhere. */
static void alias_drop(struct alias *x)
{
	int e = 0;
	if (x->pid == os_getpid())
		e = os_alias_truncate(x->fd);
	else /* a fork child's copy: the share is its parent's to revoke */
		os_fd_close(x->fd);
	if (e)
		xpfo_error("cannot truncate the memfd of a shared run at %p (errno %d): other "
			   "processes keep its old pages, never reused here", (void *)x->addr, (long)e);
	x->len = 0;
	__atomic_sub_fetch(&alias_live, 1, __ATOMIC_RELEASE);
	stat_inc(alias_revocations);
	stat_sub(aliases, 1);
}

/* Part of it goes: [lo, hi) is punched out, the rest stays shared. */
/* The file's frames under [lo, hi) go back to the kernel (in the process
 * that made the memfd: a forked child's copy is not its to punch). */
static void alias_punch(struct alias *x, uintptr_t lo, uintptr_t hi)
{
	bool tail = hi == x->addr + x->len;
	int e = x->pid == os_getpid() ? os_alias_punch(x->fd, lo - x->addr, hi - lo, tail) : 0;
	if (e)
		xpfo_error("cannot punch %z bytes out of the memfd of a shared run at %p (errno %d)",
			   (size_t)(hi - lo), (void *)x->addr, (long)e);
}

static void alias_cut(struct alias *x, uintptr_t lo, uintptr_t hi)
{
	alias_punch(x, lo, hi);
	if (hi == x->addr + x->len)
		x->len = lo - x->addr; /* the usual case: a tail */
	stat_inc(alias_revocations);
}

void alias_revoke_range(uintptr_t a, size_t len)
{
	if (likely(!__atomic_load_n(&alias_live, __ATOMIC_ACQUIRE)))
		return;
	uintptr_t end = a + len;
	pthread_mutex_lock(&alias_lock);
	for (unsigned i = 0; i < alias_top; i++) {
		struct alias *x = &aliases[i];
		if (!x->len || x->addr >= end || a >= x->addr + x->len)
			continue;
		if (a <= x->addr && x->addr + x->len <= end)
			alias_drop(x);
		else
			alias_cut(x, a > x->addr ? a : x->addr,
				  end < x->addr + x->len ? end : x->addr + x->len);
	}
	while (alias_top && !aliases[alias_top - 1].len)
		alias_top--;
	pthread_mutex_unlock(&alias_lock);
}

/* The live page run at a owned by id: its length, or 0. */
static size_t run_length(uintptr_t a, uint16_t id)
{
	struct blk b;
	if (!in_heap(a) || (a & (PAGE_SIZE - 1)) || owner_lookup(a, &b) != BLK_OK ||
	    b.kind == BK_SMALL || b.owner != id)
		return 0;
	return b.usable;
}

/* The table entry for the run at a (alias_lock held): found, or a free
 * one (len 0), or NULL when full. */
static struct alias *alias_slot(uintptr_t a)
{
	if (!aliases && !(aliases = meta_alloc(ALIAS_MAX * sizeof *aliases)))
		return NULL;
	struct alias *free_slot = NULL;
	for (unsigned i = 0; i < alias_top; i++) {
		if (aliases[i].len && aliases[i].addr == a)
			return &aliases[i];
		if (!aliases[i].len && !free_slot)
			free_slot = &aliases[i];
	}
	if (!free_slot && alias_top < ALIAS_MAX)
		free_slot = &aliases[alias_top++];
	return free_slot;
}

/* Move the run into a memfd (c->lock held: its protection stays still). */
static int alias_make(struct xpfo_compartment *c, struct alias *x, uintptr_t a, size_t len, bool ro)
{
	int key = pkeys_comp_key(c);
	int e = os_alias_create((void *)a, len, OS_RW, key > 0 ? key : key_plain(), ro, &x->fd);
	if (e)
		return e;
	backing_mark(a, len);
	x->addr = a;
	x->len = len;
	x->pid = os_getpid();
	x->ro = ro;
	__atomic_add_fetch(&alias_live, 1, __ATOMIC_RELEASE);
	stat_inc(aliases);
	return 0;
}

int alias_share(struct xpfo_compartment *c, void *p, unsigned flags)
{
	uintptr_t a = (uintptr_t)p;
	size_t len = run_length(a, c->id);
	if (!flags || (flags & ~(XPFO_SHARE_READ | XPFO_SHARE_WRITE)) || !len || secret_comp(c) ||
	    opt.revoke == REVOKE_OFF) {
		errno = EINVAL;
		return -1;
	}
	int e = 0, fd = -1;
	bool ro = !(flags & XPFO_SHARE_WRITE);
	if (c != &comp_root)
		pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&alias_lock);
	struct alias *x = alias_slot(a);
	if (!x)
		e = EMFILE;
	else if (!x->len)
		e = alias_make(c, x, a, len, ro);
	else if (x->ro != ro) /* one file per run: it is read-only or not */
		e = EPERM;
	if (!e)
		e = os_alias_open(x->fd, flags & XPFO_SHARE_WRITE, &fd);
	pthread_mutex_unlock(&alias_lock);
	if (c != &comp_root)
		pthread_mutex_unlock(&c->lock);
	if (e) {
		errno = e;
		return -1;
	}
	return fd;
}
