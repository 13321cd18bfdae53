/* xpfo.c - micro benchmarks that only make sense for xpfo.  Linked into
 * xb-micro-xpfo together with libxpfo (not preloaded), so the bodies can
 * read xpfo's counters and use the compartment API.
 *
 * Revocation ablation: the runner executes this binary once per mode,
 * XPFO_OPTIONS=revoke=off | revoke=eager | revoke=batched,batch=N, with the
 * allocator's own defaults otherwise.  Every body reports, per object freed,
 * the protection syscalls xpfo made and the pages each revoking syscall
 * covered, read from xpfo_stats_get() around the timed loop (process-wide,
 * so with two threads the counts cover both).  Revocations still queued when
 * the loop ends are not timed; "pending_pages" shows how many there were.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xpfo.h>

#include "xb.h"

/* The JSON context says which protection backend these numbers are for. */
__attribute__((constructor)) static void xpfo_context(void)
{
	xb_context("xpfo_backend", xpfo_backend);
}

#define PAGE 4096
/* Objects allocated, then freed, per iteration: more page runs than the
 * smaller batch sizes hold, so those flush inside the loop, and fewer than
 * the largest, where a free followed by a new allocation can take the
 * queued pages back without any syscall (pages_cancelled). */
#define OBJS 256

struct snap {
	struct xpfo_stats st;
	bool ok;
};

static void snap_take(struct snap *s)
{
	memset(&s->st, 0, sizeof s->st);
	s->ok = xpfo_stats_get(&s->st, sizeof s->st) == 0;
}

/* Thread 0 reports the process-wide deltas; with XB_PER_ITER they are
 * divided by the iterations of all threads. */
static void report(struct xb_state *s, const struct snap *a, int64_t objs_per_iter)
{
	struct snap b;

	if (xb_thread(s) != 0)
		return;
	snap_take(&b);
	if (!a->ok || !b.ok) {
		xb_skip(s, "xpfo_stats_get failed");
		return;
	}
	double revokes = (double)(b.st.revoke_syscalls - a->st.revoke_syscalls);
	double grants = (double)(b.st.grant_syscalls - a->st.grant_syscalls);
	double pages = (double)(b.st.pages_revoked - a->st.pages_revoked);
	double queued = (double)(b.st.pages_queued - a->st.pages_queued);
	double cancelled = (double)(b.st.pages_cancelled - a->st.pages_cancelled);
	double per = (double)objs_per_iter;

	xb_counter(s, "revoke_sys_per_obj", revokes / per, XB_PER_ITER);
	xb_counter(s, "grant_sys_per_obj", grants / per, XB_PER_ITER);
	xb_counter(s, "pages_revoked_per_obj", pages / per, XB_PER_ITER);
	xb_counter(s, "flushes_per_obj",
		   (double)(b.st.flushes - a->st.flushes) / per, XB_PER_ITER);
	xb_counter(s, "pages_queued_per_obj", queued / per, XB_PER_ITER);
	xb_counter(s, "pages_cancelled_per_obj", cancelled / per, XB_PER_ITER);
	xb_counter(s, "pages_per_revoke_sys", revokes > 0 ? pages / revokes : 0, 0);
	xb_counter(s, "switch_flushes_per_obj",
		   (double)(b.st.flush_switch - a->st.flush_switch) / per, XB_PER_ITER);
	xb_counter(s, "opens_per_obj",
		   (double)(b.st.compartment_opens - a->st.compartment_opens) / per,
		   XB_PER_ITER);
	xb_counter(s, "vmas", (double)b.st.vmas, 0);
}

/* Allocate OBJS runs of `pages` pages, write every page, free them all:
 * every free hands whole pages back to the allocator, so each one queues
 * (batched) or makes (eager) a revocation.  Threads 1 and 2. */
static void bm_revoke_pages(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0) * PAGE;
	void *p[OBJS];
	struct snap a;

	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run(s)) {
		for (int i = 0; i < OBJS; i++) {
			char *q = malloc(n);
			for (size_t off = 0; off < n; off += PAGE)
				q[off] = 1;
			p[i] = q;
		}
		for (int i = 0; i < OBJS; i++)
			free(p[i]);
	}
	xb_items(s, xb_iterations(s) * OBJS);
	report(s, &a, OBJS);
}
XB_BENCH(revoke_pages, "revoke_pages", bm_revoke_pages, .args = XB_ARGS(1, 4, 16),
	 .threads = XB_THREADS(1, 2), .real_time = true);

/* The same churn on one thread while a second thread of the process keeps
 * running on the other CPU, touching its own memory and never allocating:
 * each protection change must now shoot down that CPU's TLB too. */
struct peer {
	_Atomic int stop;
	char *buf;
};

static void *peer_spin(void *arg)
{
	struct peer *pe = arg;
	size_t i = 0;

	while (!atomic_load_explicit(&pe->stop, memory_order_relaxed)) {
		pe->buf[i] ^= 1; /* keep this mm live on the other CPU */
		i = (i + 64) & (64 * PAGE - 1);
	}
	return NULL;
}

static void bm_revoke_peer(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0) * PAGE;
	struct peer pe = {.stop = 0};
	pthread_t th;
	void *p[OBJS];
	struct snap a;

	pe.buf = calloc(64, PAGE);
	if (!pe.buf || pthread_create(&th, NULL, peer_spin, &pe) != 0) {
		xb_skip(s, "cannot start the peer thread");
		free(pe.buf);
		return;
	}
	snap_take(&a);
	while (xb_run(s)) {
		for (int i = 0; i < OBJS; i++) {
			char *q = malloc(n);
			for (size_t off = 0; off < n; off += PAGE)
				q[off] = 1;
			p[i] = q;
		}
		for (int i = 0; i < OBJS; i++)
			free(p[i]);
	}
	report(s, &a, OBJS);
	atomic_store(&pe.stop, 1);
	pthread_join(th, NULL);
	free(pe.buf);
	xb_items(s, xb_iterations(s) * OBJS);
}
XB_BENCH(revoke_peer, "revoke_pages_busy_peer", bm_revoke_peer,
	 .args = XB_ARGS(1, 4, 16), .real_time = true);

/* Small objects: 4096 objects of the given size allocated, then freed
 * in allocation order; slabs that become empty give pages back. */
#define SMALL_OBJS 4096
static void bm_revoke_small(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0);
	void **p = malloc(SMALL_OBJS * sizeof *p);
	struct snap a;

	if (!p) {
		xb_skip(s, "out of memory");
		return;
	}
	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run(s)) {
		for (int i = 0; i < SMALL_OBJS; i++) {
			p[i] = malloc(n);
			*(volatile char *)p[i] = 1;
		}
		for (int i = 0; i < SMALL_OBJS; i++)
			free(p[i]);
	}
	xb_items(s, xb_iterations(s) * SMALL_OBJS);
	report(s, &a, SMALL_OBJS);
	free(p);
}
XB_BENCH(revoke_small, "revoke_small", bm_revoke_small, .args = XB_ARGS(64, 1024),
	 .threads = XB_THREADS(1, 2), .real_time = true);

/* ---- compartments ----
 *
 * Each thread works in compartments of its own (created before the timed
 * loop, destroyed after it), so 1 and 2 threads measure the same thing with
 * and without a second CPU running the process.  On the mprotect backend
 * entering a closed compartment opens its pages (grant) and leaving it
 * closes them (revoke); on the pkeys backend both are a PKRU write.
 */

static void cleanup(xpfo_compartment_t *c)
{
	if (c && xpfo_compartment_destroy(c) != 0)
		perror("xpfo_compartment_destroy");
}

static xpfo_compartment_t *make(struct xb_state *s, const char *what)
{
	char name[48];
	xpfo_compartment_t *c;

	snprintf(name, sizeof name, "%s-%d", what, xb_thread(s));
	c = xpfo_compartment_create(name, 0);
	if (!c)
		xb_skip(s, "xpfo_compartment_create failed");
	return c;
}

/* Enter and leave a compartment that holds `pages` pages of live data. */
static void bm_enter_leave(struct xb_state *s)
{
	size_t pages = (size_t)xb_arg(s, 0);
	xpfo_compartment_t *c = make(s, "enter");
	void *data = NULL;
	struct snap a;

	if (!c)
		return;
	if (pages && !(data = xpfo_malloc_in(c, pages * PAGE))) {
		xb_skip(s, "xpfo_malloc_in failed");
		cleanup(c);
		return;
	}
	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run(s)) {
		xpfo_compartment_t *prev = xpfo_enter(c);
		if (!prev) {
			xb_skip(s, "xpfo_enter failed");
			break;
		}
		if (data)
			((volatile char *)data)[0]++; /* reachable inside */
		xpfo_leave(prev);
	}
	xb_items(s, xb_iterations(s));
	report(s, &a, 1);
	free(data);
	cleanup(c);
}
XB_BENCH(enter_leave, "compartment_enter_leave", bm_enter_leave,
	 .args = XB_ARGS(0, 16, 256), .threads = XB_THREADS(1, 2), .real_time = true);

/* xpfo_malloc_in from inside the compartment (the memory is written) and
 * from outside it (not touched: it may be out of reach), against plain
 * malloc in the root compartment of the same process. */
static void malloc_in_body(struct xb_state *s, int mode)
{
	size_t n = (size_t)xb_arg(s, 0);
	xpfo_compartment_t *c = mode == 0 ? NULL : make(s, "malloc_in");
	xpfo_compartment_t *prev = NULL;
	bool failed = false;
	struct snap a;

	if (mode != 0 && !c)
		return;
	if (mode == 1 && !(prev = xpfo_enter(c))) {
		xb_skip(s, "xpfo_enter failed");
		cleanup(c);
		return;
	}
	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run_batch(s, 16)) {
		for (int i = 0; i < 16; i++) {
			char *p = mode == 0 ? malloc(n) : xpfo_malloc_in(c, n);
			if (!p) {
				failed = true;
				break;
			}
			if (mode != 2)
				p[0] = (char)i;
			free(xb_escape(p));
		}
	}
	/* Leave before Google Benchmark allocates its counters: whatever is
	 * allocated inside c dies with it in cleanup(). */
	if (prev)
		xpfo_leave(prev);
	if (failed)
		xb_skip(s, "allocation failed");
	xb_items(s, xb_iterations(s));
	report(s, &a, 1);
	cleanup(c);
}

static void bm_malloc_root(struct xb_state *s) { malloc_in_body(s, 0); }
static void bm_malloc_in(struct xb_state *s) { malloc_in_body(s, 1); }
static void bm_malloc_in_outside(struct xb_state *s) { malloc_in_body(s, 2); }
XB_BENCH(malloc_root, "compartment_malloc_root", bm_malloc_root,
	 .args = XB_ARGS(64, 4096, 65536), .threads = XB_THREADS(1, 2), .real_time = true);
XB_BENCH(malloc_in, "compartment_malloc_in", bm_malloc_in,
	 .args = XB_ARGS(64, 4096, 65536), .threads = XB_THREADS(1, 2), .real_time = true);
XB_BENCH(malloc_in_out, "compartment_malloc_in_outside", bm_malloc_in_outside,
	 .args = XB_ARGS(64, 4096, 65536), .threads = XB_THREADS(1, 2), .real_time = true);

/* Move a page-aligned allocation of `pages` pages from one compartment to
 * another and back: two xpfo_transfer calls per iteration, each revoking
 * the old owner's access and moving the bytes to fresh frames. */
static void bm_transfer(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0) * PAGE;
	xpfo_compartment_t *c1 = make(s, "from"), *c2 = c1 ? make(s, "to") : NULL;
	void *p = NULL;
	struct snap a;

	if (!c1 || !c2)
		goto out;
	if (!(p = xpfo_aligned_alloc_in(c1, PAGE, n))) {
		xb_skip(s, "xpfo_aligned_alloc_in failed");
		goto out;
	}
	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run(s)) {
		if (xpfo_transfer(p, c2) != 0 || xpfo_transfer(p, c1) != 0) {
			xb_skip(s, "xpfo_transfer failed");
			break;
		}
	}
	xb_items(s, xb_iterations(s) * 2);
	report(s, &a, 2);
out:
	free(p);
	cleanup(c2);
	cleanup(c1);
}
XB_BENCH(transfer, "compartment_transfer", bm_transfer, .args = XB_ARGS(8, 64, 256),
	 .threads = XB_THREADS(1, 2), .real_time = true);

/* The batching workload of the compartments issue: page-run allocations
 * (16 KiB + 1 byte, the smallest size that is a page run of its own)
 * spread over 4 compartments and then freed, 25,000 per compartment per
 * iteration (100,000 in all).  Run under batched, eager and off (the
 * compartment modes of run.py), with 1 and 2 threads, each thread with 4
 * compartments of its own. */
#define COMP_RUNS_PER 25000
static void bm_revoke_compartments(struct xb_state *s)
{
	xpfo_compartment_t *c[4] = { 0 };
	void **p = malloc(4 * COMP_RUNS_PER * sizeof *p);
	struct snap a;

	for (int i = 0; i < 4; i++)
		if (!(c[i] = make(s, "runs")))
			goto out;
	if (!p) {
		xb_skip(s, "out of memory");
		goto out;
	}
	if (xb_thread(s) == 0)
		snap_take(&a);
	while (xb_run(s)) {
		for (int i = 0; i < 4 * COMP_RUNS_PER; i++)
			if (!(p[i] = xpfo_malloc_in(c[i % 4], 16385))) {
				xb_skip(s, "xpfo_malloc_in failed");
				goto out;
			}
		for (int i = 0; i < 4 * COMP_RUNS_PER; i++)
			free(p[i]);
		xpfo_flush();
	}
	xb_items(s, xb_iterations(s) * 4 * COMP_RUNS_PER);
	report(s, &a, 4 * COMP_RUNS_PER);
out:
	free(p);
	for (int i = 0; i < 4; i++)
		cleanup(c[i]);
}
XB_BENCH(revoke_comp, "compartment_revoke_runs", bm_revoke_compartments,
	 .threads = XB_THREADS(1, 2), .real_time = true);
