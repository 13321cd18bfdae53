/* init.c - start-up, thread states, thread exit and fork.
 *
 * Start-up is lazy: the first call into the allocator (which may come from
 * the dynamic loader, before any constructor) runs xpfo_init().  It reads the
 * options, reserves the heap (a power-of-two sized, equally aligned region,
 * so one masked comparison matches every heap address: the seccomp rules of
 * a later lock-down depend on it) and the metadata region, and only then
 * registers the fork handlers and the thread-exit key, which may allocate.
 *
 * Lock order: the compartment locks (compartment.c: comp_lock, pkeys' lock,
 * each compartment's lock), then threads_lock, then pages_lock, then the
 * stats' merge lock, then the metadata pool's lock, then the slab table's
 * (meta.c).  The fork handlers take
 * them all in that order: the child runs the other threads' exit work
 * (their gathers, leaving their compartments), which needs every one.
 */
#include "internal.h"
#include "arch.h"

#include <errno.h>
#include <link.h>
#include <string.h>

int xpfo_ready;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tstate *threads;
static pthread_key_t exit_key;
static int exit_key_ready, hooks_done;
static unsigned long vma_limit;
static int stats_fd = -1;

int pages_init(void);
void meta_lock_all(void);
void meta_unlock_all(void);
unsigned long xpfo_vma_limit(void);

unsigned long xpfo_vma_limit(void) { return vma_limit; }

static void tstate_exit(void *arg);
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

/* The smallest heap tried when the asked one does not fit: 4 segments,
 * which with its metadata takes about 24 MiB of address space (a program
 * under `ulimit -v` of 64 MiB more than it needs itself runs).  Below
 * SMALL_RESERVE (1 GiB, the smallest heap before there was this fallback)
 * the heap may run out where the program would not, and its size classes
 * share segments (base.h): a warning says the size. */
#define MIN_RESERVE ((size_t)SEG_SIZE << 2)
#define SMALL_RESERVE ((size_t)SMALL_HEAP_SEGS << SEG_SHIFT)

/* size in GiB, or in MiB below 1 GiB: *unit says which */
static unsigned long size_in_units(size_t size, const char **unit)
{
	bool gib = size >= ((size_t)1 << 30);
	*unit = gib ? "GiB" : "MiB";
	return (unsigned long)(size >> (gib ? 30 : 20));
}

/* Reserve the heap (size bytes, aligned to itself) and the metadata sized
 * for it: 0 or the errno; *meta: the metadata's failure. */
static int heap_try(size_t size, bool *meta)
{
	void *base;
	int e = os_reserve(size, size, &base);
	*meta = false;
	if (e)
		return e;
	heap_base = (uintptr_t)base;
	heap_end = heap_base + size;
	heap_nsegs = size >> SEG_SHIFT;
	if (!(e = meta_init()))
		return 0;
	*meta = true;
	os_unmap(base, size);
	return e;
}

/* Say how big the heap is when the asked size did not fit: a warning when
 * reserve= was given or the heap is small, else only with verbose=1. */
static void heap_report(size_t want, size_t size)
{
	const char *wu, *su;
	unsigned long w = size_in_units(want, &wu), v = size_in_units(size, &su);
	if (opt.reserve_given || size < SMALL_RESERVE)
		xpfo_warn("%s: %u %s did not fit in the address space (ulimit -v?), the heap is %u %s",
			  opt.reserve_given ? "option reserve" : "heap", w, wu, v, su);
	else
		xpfo_verbose("%u %s did not fit in the address space (ulimit -v?): the heap is %u %s",
			     w, wu, v, su);
}

/* Reserve the heap and the metadata sized for it.  Under an address-space
 * limit (ulimit -v) the asked size may not fit: halve it (a power of two,
 * aligned to itself, as the seccomp rules need) down to MIN_RESERVE, and
 * say so (heap_report). */
static void heap_reserve(void)
{
	size_t want = (size_t)opt.reserve_gib << 30, size = want;
	int e = 0;
	bool meta = false; /* the last failure was the metadata's */
	for (; size >= MIN_RESERVE; size /= 2)
		if (!(e = heap_try(size, &meta)) || e != ENOMEM)
			break;
	if (e && meta && e != ENOMEM)
		xpfo_fatal("cannot map the metadata region (errno %d)", (long)e);
	const char *mu;
	unsigned long m = size_in_units(MIN_RESERVE, &mu);
	if (e)
		xpfo_fatal("cannot reserve %u GiB for the heap, nor any power of two down to %u %s "
			   "(errno %d)", (unsigned long)opt.reserve_gib, m, mu, (long)e);
	if (size != want)
		heap_report(want, size);
}

static void init_core(void)
{
	options_init();
	arch_init();
	if (os_page_size() != (long)PAGE_SIZE)
		xpfo_fatal("page size %u is not supported (this build needs %u)",
			   (unsigned long)os_page_size(), (unsigned long)PAGE_SIZE);
	if (opt.waf_check && !opt.zero_on_free && !opt.junk) {
		xpfo_warn("option waf_check needs zero_on_free or junk: turned off");
		opt.waf_check = 0;
	}
	canary_bytes = opt.canary ? 8 : 0;
	sizeclass_init();
	heap_reserve();
	uffd_init();
	int e = pages_init();
	if (e)
		xpfo_fatal("cannot map the metadata region (errno %d)", (long)e);
	pkeys_init();
	if (seal_meta) {
		pkeys_sealed(); /* open first: tagging must not lock this thread out */
		if ((e = meta_tag(key_alloc)))
			xpfo_fatal("cannot seal the metadata with the allocator's key (errno %d)", (long)e);
	}
	comp_table[comp_root.id] = &comp_root;
	stat_inc(compartments);
	char buf[64];
	vma_limit = 65530;
	if (os_read_file("/proc/sys/vm/max_map_count", buf, sizeof buf) > 0) {
		unsigned long v = 0;
		for (char *p = buf; *p >= '0' && *p <= '9'; p++)
			v = v * 10 + (unsigned long)(*p - '0');
		if (v)
			vma_limit = v;
	}
	if (opt.stats)
		stats_fd = os_dup_high(2);
	g_stats.vma_budget = opt.max_vmas ? opt.max_vmas : vma_limit / 2;
	if (opt.seal && os_protect(&xpfo_sealed, sizeof xpfo_sealed, OS_READ))
		xpfo_warn("could not seal the global table read-only");
	const char *hu;
	unsigned long hv = size_in_units(heap_end - heap_base, &hu);
	xpfo_verbose("heap %p..%p (%u %s), backend %s, revoke=%s batch=%u, vm.max_map_count %u",
		     (void *)heap_base, (void *)heap_end, hv, hu,
		     pkeys_on ? "pkeys" : "mprotect", opt.revoke == REVOKE_BATCHED ? "batched"
		     : opt.revoke == REVOKE_EAGER ? "eager" : "off",
		     (unsigned long)opt.batch, vma_limit);
}

void xpfo_init(void)
{
	pthread_mutex_lock(&init_lock);
	if (!xpfo_ready) {
		init_core();
		__atomic_store_n(&xpfo_ready, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&init_lock);
	/* These may allocate, and the allocator is ready for it now. */
	if (!__atomic_exchange_n(&hooks_done, 1, __ATOMIC_ACQ_REL)) {
		if (pthread_key_create(&exit_key, tstate_exit) == 0) {
			__atomic_store_n(&exit_key_ready, 1, __ATOMIC_RELEASE);
			if (tl_state)
				pthread_setspecific(exit_key, tl_state);
		}
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		fault_install();
	}
}

struct tstate *tstate_slow(void)
{
	if (!__atomic_load_n(&xpfo_ready, __ATOMIC_ACQUIRE))
		xpfo_init();
	if (tl_state)
		return tl_state; /* made while xpfo_init registered its hooks */
	const char *strict = comp_root_closed_by();
	if (strict)
		xpfo_fatal("thread %d started while STRICT compartment \"%s\" is entered: the root "
			   "heap it starts in is closed (unsupported)", (long)os_gettid(), strict);
	struct tstate *t = meta_alloc(sizeof *t);
	if (!t)
		xpfo_fatal("out of metadata memory for a thread state");
	/* A new block's pages read zero unwritten (meta.c), and a read maps
	 * the zero page: the first write after it replaces that mapping, a
	 * TLB flush on every CPU the process runs on.  The gather's history
	 * of revoked spans is read at every grant and written at the first
	 * flush, on the page of its first run, so every part but the runs'
	 * slots is written here first (a guest at 4 CPUs traced one such
	 * flush in a larson run, at a new thread state's first queued run). */
	memset(t, 0, offsetof(struct tstate, g.r));
	memset(&t->take, 0, sizeof t->take);
	slab_init_theap(&t->root_heap, t, &comp_root);
	gather_init(&t->g);
	rng_init(&t->rng);
	t->hard = harden_flags();
	t->heap = &t->root_heap;
	pkeys_thread_update(t);
	t->tid = os_gettid();
	pthread_mutex_lock(&threads_lock);
	t->next = threads;
	if (threads)
		threads->prev = t;
	threads = t;
	stat_inc(threads_known);
	pthread_mutex_unlock(&threads_lock);
	tl_state = t;
	if (__atomic_load_n(&exit_key_ready, __ATOMIC_ACQUIRE))
		pthread_setspecific(exit_key, t);
	if (opt.compartments == COMP_MODE_THREAD && t->tid != os_getpid())
		comp_thread_start(t);
	return t;
}

static void tstate_unlink(struct tstate *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		threads = t->next;
	if (t->next)
		t->next->prev = t->prev;
}

/* Back to the metadata pool, saying which of its gather's slots were
 * never written (most of its 130 KiB): kept resident for the next thread,
 * only the rest is cleared again (alloc/meta.c). */
static void tstate_free(struct tstate *t)
{
	meta_free_zero(t, sizeof *t, &t->g.r[t->g.hwm], &t->g.r[GATHER_MAX]);
}

/* Thread exit: hand the slabs to the compartment, the queued runs to the
 * compartments' orphan gathers (what cannot go there is applied), fold the
 * counters into the global ones.  A thread that dies inside a compartment
 * applies its gather before it leaves it, as a switch does. */
static void tstate_retire(struct tstate *t)
{
	harden_quarantine_drain(t);
	if (t->depth || t->heap != &t->root_heap)
		revoke_flush(t, FR_THREAD_EXIT);
	comp_thread_exit(t);
	slab_abandon(t, &t->root_heap);
	revoke_orphan_exit(t);
	revoke_quarantine_drain(t);
	if (t->q.slot)
		meta_free(t->q.slot, opt.quarantine * sizeof *t->q.slot);
	if (t->q.runs)
		meta_free(t->q.runs, opt.quarantine_large * sizeof *t->q.runs);
	t->q.slot = NULL;
	t->q.runs = NULL;
	stats_merge_thread(t);
}

static void tstate_exit(void *arg)
{
	XPFO_ENTRY;
	struct tstate *t = arg;
	if (!t || t != tl_state)
		return;
	tstate_retire(t);
	pthread_mutex_lock(&threads_lock);
	tstate_unlink(t);
	stat_sub(threads_known, 1);
	pthread_mutex_unlock(&threads_lock);
	tl_state = NULL;
	tstate_free(t);
}

void tstate_foreach(void (*fn)(struct tstate *, void *), void *arg)
{
	pthread_mutex_lock(&threads_lock);
	for (struct tstate *t = threads; t; t = t->next)
		fn(t, arg);
	pthread_mutex_unlock(&threads_lock);
}

static void fork_prepare(void)
{
	XPFO_ENTRY;
	comp_fork_lock();
	pthread_mutex_lock(&threads_lock);
	pthread_mutex_lock(&pages_lock);
	stats_fork_lock(true);
	meta_lock_all();
}

static void fork_unlock(bool child)
{
	meta_unlock_all();
	stats_fork_lock(false);
	pthread_mutex_unlock(&pages_lock);
	pthread_mutex_unlock(&threads_lock);
	comp_fork_unlock(child);
}

static void fork_parent(void)
{
	XPFO_ENTRY;
	fork_unlock(false);
}

/* In the child only the forking thread lives on: the other threads' gathers
 * are applied and their slabs abandoned, so nothing stays pinned to a thread
 * that no longer exists; a gather caught half changed is dropped instead
 * (revoke_fork_orphan).  Which compartments are open, and who is inside,
 * is recomputed from the forking thread alone (comp_fork_recount): the
 * others may have been halfway through an enter or a leave. */
static void fork_child(void)
{
	XPFO_ENTRY;
	fork_unlock(true);
	struct tstate *self = tl_state;
	os_mem_forget();
	uffd_fork_child(); /* before the gathers below are applied */
	if (self)
		self->tid = os_gettid();
	revoke_orphans_fork_child();
	for (;;) {
		pthread_mutex_lock(&threads_lock);
		struct tstate *t = threads;
		while (t && t == self)
			t = t->next;
		if (t) {
			tstate_unlink(t);
			stat_sub(threads_known, 1);
		}
		pthread_mutex_unlock(&threads_lock);
		if (!t)
			break;
		/* run its exit work from this thread: its gather and slabs */
		struct tstate *me = tl_state;
		tl_state = t;
		revoke_fork_orphan(t); /* a gather it was changing is dropped */
		comp_fork_orphan(t);   /* it may have been halfway into one */
		tstate_retire(t);
		tl_state = me;
		tstate_free(t);
	}
	comp_fork_recount(self);
}

/* The library's own writable pages past its read-only-after-relocation
 * part: its data, and the first page of its zero-fill (where the C
 * runtime's flag that the destructors ran lives).  A page of them first
 * read (the file's page, or the zero page) and written later is copied on
 * that write, and the copy flushes the TLB of every CPU the process runs
 * on: the runtime's flag did so at every exit (a guest at 4 CPUs traced
 * it), as would the first change of a variable with a non-zero default
 * once threads run.  So they are made the process's own here, at load,
 * before any thread.  Linked into a program, the segment is the
 * program's: past OWN_DATA_MAX pages only the two around the end of its
 * data are. */
#define OWN_DATA_MAX 16

static int own_data_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t *r = arg, self = (uintptr_t)&own_data_range;
	bool mine = false;
	uintptr_t lo = 0, fend = 0, end = 0, relro = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && self >= a && self < a + ph->p_memsz)
			mine = true;
		else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			lo = a;
			fend = a + ph->p_filesz;
			end = a + ph->p_memsz;
		} else if (ph->p_type == PT_GNU_RELRO)
			relro = (a + ph->p_memsz) & ~(uintptr_t)(PAGE_SIZE - 1);
	}
	if (!mine)
		return 0;
	if (lo && end > lo) {
		r[0] = (relro > lo ? relro : lo) & ~(uintptr_t)(PAGE_SIZE - 1);
		r[1] = align_up(fend, PAGE_SIZE) + PAGE_SIZE;
		if (r[1] > align_up(end, PAGE_SIZE))
			r[1] = align_up(end, PAGE_SIZE);
		if (r[1] - r[0] > OWN_DATA_MAX * PAGE_SIZE)
			r[0] = fend & ~(uintptr_t)(PAGE_SIZE - 1);
	}
	return 1;
}

/* Start at load time too, so a program that never allocates still gets the
 * fault reports and XPFO_OPTIONS=help answers. */
static __attribute__((constructor)) void xpfo_load(void)
{
	XPFO_ENTRY;
	uintptr_t r[2] = { 0, 0 };
	dl_iterate_phdr(own_data_range, r);
	/* but not the options' page, read-only once xpfo_init sealed it (it
	 * may have run already: the loader's own mallocs); a kernel or a
	 * filter that refuses the advice leaves things as they were */
	uintptr_t slo = (uintptr_t)&xpfo_sealed, shi = slo + sizeof xpfo_sealed;
	uintptr_t part[2][2] = { { r[0], r[1] < slo ? r[1] : slo },
				 { r[0] > shi ? r[0] : shi, r[1] } };
	for (unsigned i = 0; i < 2; i++)
		if (part[i][1] > part[i][0])
			(void)os_populate((void *)part[i][0], part[i][1] - part[i][0]);
	tstate_get();
}

static __attribute__((destructor)) void xpfo_fini(void)
{
	XPFO_ENTRY;
	if (xpfo_ready && opt.stats)
		(opt.stats == 2 ? xpfo_stats_print_json : xpfo_stats_print)(stats_fd >= 0 ? stats_fd : 2);
}
