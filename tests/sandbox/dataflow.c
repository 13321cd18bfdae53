/* dataflow.c - data into and out of compartments (issue 34): xpfo_move,
 * xpfo_send and xpfo_recv.
 *
 * 1. xpfo_move of the blocks xpfo_transfer refuses: a 1000-byte block and
 *    an 8192-byte one root made before the first compartment existed (a
 *    slab slot: xpfo_transfer says EINVAL) are copied into the target's
 *    pages, same bytes, at least the old usable size, the old block freed;
 *    a page run moves in place (same pointer, new owner); its errors
 *    (EINVAL, ENOMEM with p intact) and a locked thread's (EPERM).
 * 2. The fork deployment (mprotect, as on the host): per request a child
 *    moves root's input into the parser compartment, locks itself into it,
 *    parses, and sends the result back with xpfo_send; the parent takes it
 *    with xpfo_recv, in root.  Inputs of 1000, 8192 (made before any
 *    compartment) and 100,000 bytes.
 * 3. xpfo_recv never trusts the peer: EMSGSIZE before any allocation,
 *    EPROTO for a bad magic, a bad pad, a cut header or body (nothing
 *    kept), ENODATA at a clean end, reads assembled from 1-byte writes and
 *    across signals (EINTR), into a closed compartment; xpfo_send's EPIPE
 *    on a socket whose peer is gone (no SIGPIPE).
 * 4. The thread hand-over: a worker makes its results inside a compartment
 *    and hands them over; the unlocked thread moves them to root.  With
 *    protection keys (the QEMU rig, backend=pkeys) the worker is locked
 *    into the compartment as in the pkeys deployment: it gives its page
 *    run away itself, may not copy (EPERM), and the service thread takes
 *    the rest after it handed them over (copies: a locked compartment's
 *    runs never change owner in place from outside): once after the
 *    worker's exit (join), once by a pipe while the worker still lives.
 *    Also a block between two compartments closed to the caller.
 */
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static xpfo_compartment_t *root;

/* Made before any compartment: root keeps them in slab slots. */
#define NIN 3
static const size_t in_size[NIN] = { 1000, 8192, 100000 };
static char *input[NIN];

static int in_comp(xpfo_compartment_t *c, const void *p, size_t n, uint64_t seed)
{
	xpfo_compartment_t *prev = c == root ? NULL : xpfo_enter(c);
	size_t bad = tu_verify(p, n, seed);
	if (prev)
		xpfo_leave(prev);
	return bad == (size_t)-1;
}

static uint64_t counter(int which)
{
	struct xpfo_stats s;
	if (xpfo_stats_get(&s, sizeof s))
		tu_hard_error("xpfo_stats_get: %s", strerror(errno));
	return which ? s.frees : s.allocs;
}

/* ---- 1. xpfo_move ------------------------------------------------------- */

static void move_copy(xpfo_compartment_t *c, char *p, size_t n, uint64_t seed)
{
	size_t usable = malloc_usable_size(p);
	errno = 0;
	CHECK(xpfo_transfer(p, c) == -1 && errno == EINVAL,
	      "%zu-byte slab block: xpfo_transfer did not refuse it (errno %d)", n, errno);
	char *q = xpfo_move(p, c);
	CHECK(q != NULL && q != p, "%zu bytes: xpfo_move gave %p (%s)", n, (void *)q,
	      q ? "in place" : strerror(errno));
	if (!q || q == p)
		return;
	CHECK(xpfo_owner(q) == c, "%zu bytes: owner after the move is not the target", n);
	CHECK(in_comp(c, q, n, seed), "%zu bytes: contents changed by the move", n);
	xpfo_compartment_t *prev = xpfo_enter(c);
	size_t nu = malloc_usable_size(q);
	xpfo_leave(prev);
	CHECK(nu >= usable, "%zu bytes: usable size %zu after the move, %zu before", n, nu, usable);
	errno = 0;
	CHECK(xpfo_move(p, c) == NULL && errno == EINVAL, "the old block is still live (errno %d)",
	      errno);
	char *back = xpfo_move(q, root);
	CHECK(back != NULL && xpfo_owner(back) == root && in_comp(root, back, n, seed),
	      "%zu bytes back to root: %s", n, back ? "wrong owner or contents" : strerror(errno));
	free(back);
}

static void move_cases(xpfo_compartment_t *c, char *pre1000, char *pre8192)
{
	move_copy(c, pre1000, 1000, 11);
	move_copy(c, pre8192, 8192, 12);

	/* a page run changes owner in place */
	char *run = xpfo_malloc_in(c, 65536);
	xpfo_compartment_t *prev = xpfo_enter(c);
	tu_fill(run, 65536, 13);
	xpfo_leave(prev);
	char *r = xpfo_move(run, root);
	CHECK(r == run && xpfo_owner(run) == root && tu_verify(run, 65536, 13) == (size_t)-1,
	      "page run: xpfo_move gave %p for %p (%s)", (void *)r, (void *)run, strerror(errno));
	CHECK(xpfo_move(run, root) == run, "moving a block to its own owner is not a no-op");

	/* a small block of a closed compartment to root, and root's into it */
	char *s = xpfo_malloc_in(c, 100);
	prev = xpfo_enter(c);
	tu_fill(s, 100, 14);
	xpfo_leave(prev);
	char *t = xpfo_move(s, root);
	CHECK(t && t != s && xpfo_owner(t) == root && tu_verify(t, 100, 14) == (size_t)-1,
	      "100 bytes of a closed compartment to root: %s", t ? "bytes" : strerror(errno));
	free(t);

	/* between two compartments closed to the caller (a page at a time
	 * through a buffer) */
	xpfo_compartment_t *d = xpfo_compartment_create("other", 0);
	char *u = xpfo_malloc_in(c, 3000);
	prev = xpfo_enter(c);
	tu_fill(u, 3000, 16);
	xpfo_leave(prev);
	char *x = xpfo_move(u, d);
	CHECK(x && x != u && xpfo_owner(x) == d && in_comp(d, x, 3000, 16),
	      "3000 bytes between closed compartments: %s", x ? "owner or bytes" : strerror(errno));
	free(x);
	xpfo_compartment_destroy(d);

	/* inside a STRICT compartment root's pages are closed: no copy from
	 * or into root, no frame received into root (EPERM); its own block
	 * to another compartment still moves */
	xpfo_compartment_t *st = xpfo_compartment_create("strict", XPFO_COMPARTMENT_STRICT);
	char *rb = malloc(200);
	int sp[2];
	if (!st || !rb || pipe(sp))
		tu_hard_error("strict case: %s", strerror(errno));
	prev = xpfo_enter(st);
	CHECK(prev != NULL, "enter STRICT: %s", strerror(errno));
	char *own = malloc(200);
	errno = 0;
	char *m1 = xpfo_move(own, root);
	int e1 = errno;
	errno = 0;
	char *m2 = xpfo_move(rb, st);
	int e2 = errno;
	char *m3 = xpfo_move(own, c);
	int e3 = errno;
	xpfo_send(sp[1], "abc", 3);
	errno = 0;
	void *m4 = xpfo_recv(sp[0], root, 10, NULL);
	int e4 = errno;
	if (prev)
		xpfo_leave(prev);
	CHECK(!m1 && e1 == EPERM, "STRICT: its block to root: %p errno %d", (void *)m1, e1);
	CHECK(!m2 && e2 == EPERM, "STRICT: root's block in: %p errno %d", (void *)m2, e2);
	CHECK(m3 && xpfo_owner(m3) == c, "STRICT: its block to another compartment: errno %d", e3);
	CHECK(!m4 && e4 == EPERM, "STRICT: a frame into root: %p errno %d", m4, e4);
	free(m3);
	free(rb);
	close(sp[0]), close(sp[1]);
	xpfo_compartment_destroy(st);

	/* errors: p untouched and valid */
	char *v = malloc(100);
	tu_fill(v, 100, 15);
	char local[16];
	struct { void *p; xpfo_compartment_t *to; const char *what; } bad[] = {
		{ NULL, c, "NULL" }, { local, c, "a stack address" }, { v + 1, c, "an interior pointer" },
		{ v, NULL, "a NULL compartment" }, { v, (xpfo_compartment_t *)local, "a bogus handle" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		CHECK(xpfo_move(bad[i].p, bad[i].to) == NULL && errno == EINVAL,
		      "xpfo_move of %s: errno %d, not EINVAL", bad[i].what, errno);
	}
	xpfo_compartment_t *dead = xpfo_compartment_create("dead", 0);
	xpfo_compartment_destroy(dead);
	errno = 0;
	CHECK(xpfo_move(v, dead) == NULL && errno == EINVAL, "into a destroyed compartment: errno %d",
	      errno);

	/* out of memory: the target, open (the thread is inside it: a closed
	 * one's new pages need no syscall), has no pages yet and none can be
	 * granted */
	xpfo_compartment_t *fresh = xpfo_compartment_create("fresh", 0);
	prev = xpfo_enter(fresh);
	xpfo__test_inject(TU_OS_PROTECT, ENOMEM, 0, 1000);
	xpfo__test_inject(TU_OS_RESERVE, ENOMEM, 0, 1000);
	errno = 0;
	char *w = xpfo_move(v, fresh);
	int e = errno;
	xpfo__test_inject(TU_OS_PROTECT, 0, 0, 0);
	xpfo__test_inject(TU_OS_RESERVE, 0, 0, 0);
	xpfo_leave(prev);
	CHECK(w == NULL && e == ENOMEM, "xpfo_move with no memory: %p, errno %d", (void *)w, e);
	CHECK(xpfo_owner(v) == root && tu_verify(v, 100, 15) == (size_t)-1,
	      "the block after a failed move is not root's with its bytes");
	w = xpfo_move(v, fresh);
	CHECK(w != NULL && in_comp(fresh, w, 100, 15), "the move once memory is back: %s",
	      strerror(errno));
	free(w);
	free(run);
	xpfo_compartment_destroy(fresh);
}

/* ---- 2. the fork deployment --------------------------------------------- */

struct request {
	int fd;        /* the reply's pipe */
	size_t n;
	char *in;      /* root's input */
	uint64_t seed;
};

/* The parser's work: the input's bytes, each plus one, then its length. */
static size_t parse(const char *in, size_t n, char **out)
{
	char *r = malloc(n + sizeof n);
	if (!r)
		return 0;
	for (size_t i = 0; i < n; i++)
		r[i] = (char)(in[i] + 1);
	memcpy(r + n, &n, sizeof n);
	*out = r;
	return n + sizeof n;
}

static int check_reply(const char *r, size_t len, const struct request *q)
{
	size_t n;
	if (len != q->n + sizeof n)
		return 0;
	memcpy(&n, r + q->n, sizeof n);
	if (n != q->n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((char)(r[i] - 1) != q->in[i])
			return 0;
	return 1;
}

static int child_parse(void *arg)
{
	struct request *q = arg;
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (!c)
		return 2;
	char *in = xpfo_move(q->in, c); /* before the lock: root is closed after */
	if (!in)
		return 3;
	if (xpfo_lock_thread(c, 0))
		return 4;
	char *out;
	size_t len = parse(in, q->n, &out);
	if (!len)
		return 5;
	/* a locked thread copies into no other compartment */
	char *small = malloc(100);
	errno = 0;
	if (!small || xpfo_move(small, root) != NULL || errno != EPERM)
		return 6;
	free(small);
	/* the input stays readable: it is the parser's own */
	free(in);
	if (xpfo_send(q->fd, out, len))
		return 7;
	free(out);
	/* a page run of its own it may give away in place */
	char *run = malloc(20000);
	if (!run || xpfo_move(run, root) != run)
		return 8;
	return 0;
}

static void fork_deployment(void)
{
	for (int i = 0; i < NIN; i++) {
		int fds[2];
		if (pipe(fds))
			tu_hard_error("pipe: %s", strerror(errno));
		struct request q = { fds[1], in_size[i], input[i], 20 + (uint64_t)i };
		/* the reply can be larger than the pipe: a child to read it */
		pid_t reader = fork();
		if (reader < 0)
			tu_hard_error("fork: %s", strerror(errno));
		struct tu_child res;
		if (reader == 0) {
			close(fds[0]);
			tu_run_child(child_parse, &q, 60, &res);
			if (res.errlen)
				fprintf(stderr, "%s", res.err);
			_exit(WIFEXITED(res.status) ? WEXITSTATUS(res.status) : 100);
		}
		close(fds[1]);
		size_t len = 0;
		uint64_t allocs = counter(0);
		char *r = xpfo_recv(fds[0], NULL, 1 << 20, &len);
		CHECK(r != NULL, "request of %zu bytes: xpfo_recv: %s", q.n, strerror(errno));
		CHECK(!r || (xpfo_owner(r) == root && check_reply(r, len, &q)),
		      "request of %zu bytes: wrong reply (%zu bytes)", q.n, len);
		uint64_t made = counter(0) - allocs;
		CHECK(made == 1, "xpfo_recv made %lu allocations", (unsigned long)made);
		free(r);
		close(fds[0]);
		int st;
		waitpid(reader, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "request of %zu bytes: the child %s", q.n,
		      tu_status_str(st));
	}
}

/* ---- 3. the frames ------------------------------------------------------- */

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		tu_hard_error("write: %s", strerror(errno));
}

struct hdr {
	char magic[4];
	uint32_t pad;
	uint64_t len;
};

/* fds[0] gets what `fill` wrote to fds[1] (closed after); xpfo_recv's end. */
static void *recv_of(const struct hdr *h, const void *body, size_t blen, size_t max, int *err,
		     uint64_t *allocs, uint64_t *frees)
{
	int fds[2];
	if (pipe(fds))
		tu_hard_error("pipe");
	if (h)
		put(fds[1], h, sizeof *h);
	if (blen)
		put(fds[1], body, blen);
	close(fds[1]);
	uint64_t a = counter(0), f = counter(1);
	errno = 0;
	size_t len = 12345;
	void *r = xpfo_recv(fds[0], NULL, max, &len);
	*err = errno;
	*allocs = counter(0) - a;
	*frees = counter(1) - f;
	close(fds[0]);
	return r;
}

static volatile sig_atomic_t ticks;
static void tick(int sig)
{
	(void)sig;
	ticks++;
}

static void frame_cases(xpfo_compartment_t *c)
{
	struct hdr h = { { 'x', 'p', 'f', 'o' }, 0, 1000 };
	static char body[1000];
	int e;
	uint64_t na, nf;
	void *r = recv_of(&h, body, 1000, 999, &e, &na, &nf);
	CHECK(!r && e == EMSGSIZE && na == 0, "length above max: %p errno %d, %lu allocations",
	      r, e, (unsigned long)na);
	r = recv_of(&h, body, 10, 1000, &e, &na, &nf);
	CHECK(!r && e == EPROTO && na == nf, "body cut short: errno %d, %lu allocations %lu frees",
	      e, (unsigned long)na, (unsigned long)nf);
	struct hdr m = h;
	m.magic[0] = 'X';
	r = recv_of(&m, body, 1000, 1000, &e, &na, &nf);
	CHECK(!r && e == EPROTO && na == 0, "bad magic: errno %d", e);
	m = h;
	m.pad = 1;
	r = recv_of(&m, body, 1000, 1000, &e, &na, &nf);
	CHECK(!r && e == EPROTO && na == 0, "bad pad: errno %d", e);
	r = recv_of(NULL, &h, 5, 1000, &e, &na, &nf);
	CHECK(!r && e == EPROTO && na == 0, "header cut short: errno %d", e);
	r = recv_of(NULL, NULL, 0, 1000, &e, &na, &nf);
	CHECK(!r && e == ENODATA && na == 0, "end of file before a frame: errno %d", e);
	m = h;
	m.len = ~0ull;
	r = recv_of(&m, body, 0, (size_t)-1, &e, &na, &nf);
	CHECK(!r && (e == ENOMEM || e == EPROTO) && na == nf, "length 2^64-1: errno %d", e);

	/* an empty block, and a round trip through a socket */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		tu_hard_error("socketpair");
	CHECK(xpfo_send(sv[0], NULL, 0) == 0, "send of an empty block: %s", strerror(errno));
	size_t len = 99;
	r = xpfo_recv(sv[1], NULL, 0, &len);
	CHECK(r != NULL && len == 0, "empty block: %p, %zu bytes (%s)", r, len, strerror(errno));
	free(r);
	errno = 0;
	CHECK(xpfo_send(sv[0], NULL, 5) == -1 && errno == EINVAL, "send of NULL: errno %d", errno);
	close(sv[1]);
	errno = 0;
	CHECK(xpfo_send(sv[0], body, 1000) == -1 && errno == EPIPE,
	      "send to a closed socket: errno %d (and no SIGPIPE)", errno);
	close(sv[0]);
	errno = 0;
	CHECK(xpfo_recv(-1, NULL, 10, NULL) == NULL && errno == EBADF, "bad descriptor: errno %d",
	      errno);
	errno = 0;
	CHECK(xpfo_recv(0, (xpfo_compartment_t *)body, 10, NULL) == NULL && errno == EINVAL,
	      "bogus compartment: errno %d", errno);

	/* into a closed compartment, from 1-byte writes, across signals */
	int fds[2];
	if (pipe(fds))
		tu_hard_error("pipe");
	pid_t w = fork();
	if (w == 0) {
		close(fds[0]);
		static char data[3000];
		tu_fill(data, sizeof data, 31);
		struct hdr k = h;
		k.len = sizeof data;
		char frame[sizeof k + sizeof data];
		memcpy(frame, &k, sizeof k);
		memcpy(frame + sizeof k, data, sizeof data);
		for (size_t i = 0; i < sizeof frame; i++) {
			if (write(fds[1], frame + i, 1) != 1)
				_exit(1);
			if (i % 256 == 0)
				usleep(2000);
		}
		_exit(0);
	}
	close(fds[1]);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tick;
	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: reads fail with EINTR */
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	r = xpfo_recv(fds[0], c, 4096, &len);
	e = errno;
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	CHECK(r && len == 3000 && xpfo_owner(r) == c && in_comp(c, r, 3000, 31),
	      "slow frame into a closed compartment: %s", r ? "wrong bytes or owner" : strerror(e));
	CHECK(ticks > 0, "no signal came during the slow frame");
	free(r);
	close(fds[0]);
	waitpid(w, NULL, 0);
}

/* ---- 4. the thread hand-over --------------------------------------------- */

struct handover {
	xpfo_compartment_t *c;
	int lock;
	char *in;          /* moved into c by the service thread, before the lock */
	char *small, *run, *given; /* the results */
	int err;           /* what went wrong in the worker */
	int alive;         /* the hand-over by pipes, the worker alive meanwhile */
	int done[2], go[2];
};

static void *worker(void *arg)
{
	struct handover *h = arg;
	xpfo_compartment_t *prev = NULL;
	if (h->lock ? xpfo_lock_thread(h->c, 0) != 0 : (prev = xpfo_enter(h->c)) == NULL) {
		h->err = 1;
		return NULL;
	}
	h->small = malloc(700);
	h->run = malloc(50000);
	h->given = malloc(30000);
	if (!h->small || !h->run || !h->given) {
		h->err = 2;
		return NULL;
	}
	memcpy(h->small, h->in, 700);
	memcpy(h->run, h->in, 1000);
	tu_fill(h->run + 1000, 49000, 41);
	tu_fill(h->given, 30000, 42);
	if (h->lock) {
		/* its own run it gives away in place; a copy it may not make */
		errno = 0;
		if (xpfo_move(h->small, root) != NULL || errno != EPERM)
			h->err = 3;
		else if (xpfo_move(h->given, root) != h->given)
			h->err = 4;
	} else
		xpfo_leave(prev);
	if (h->alive) {
		/* a locked thread's hand-over: a byte on a pipe, then it
		 * waits (write and read are allowed) */
		char b = 1;
		if (write(h->done[1], &b, 1) != 1 || read(h->go[0], &b, 1) != 1)
			h->err = 5;
	}
	return NULL;
}

static void thread_handover(int lock, int alive)
{
	struct handover h = { .lock = lock, .alive = alive };
	if (alive && (pipe(h.done) || pipe(h.go)))
		tu_hard_error("pipe");
	h.c = xpfo_compartment_create(lock ? "locked" : "worker", 0);
	h.in = xpfo_move(input[0], h.c); /* 1000 bytes made before any compartment */
	CHECK(h.in && h.in != input[0], "the input into the worker's compartment: %s",
	      strerror(errno));
	if (!h.in)
		return;
	input[0] = NULL;
	pthread_t th;
	if (pthread_create(&th, NULL, worker, &h))
		tu_hard_error("pthread_create");
	char b;
	if (alive ? read(h.done[0], &b, 1) != 1 : pthread_join(th, NULL) != 0) /* the hand-over */
		tu_hard_error("the hand-over");
	CHECK(h.err == 0, "worker (lock %d): step %d failed", lock, h.err);
	if (h.err)
		return;
	if (!lock) /* not moved by a locked worker: the service thread's in place */
		CHECK(xpfo_move(h.given, root) == h.given, "an unlocked compartment's run: not in place");
	CHECK(xpfo_owner(h.given) == root && tu_verify(h.given, 30000, 42) == (size_t)-1,
	      "the run the worker gave away (lock %d)", lock);
	/* the service's check of a handed-over pointer (README): the locked
	 * compartment's, not root's (a forged hand-over of root's block
	 * would be moved as it is) */
	CHECK(xpfo_owner(h.small) == h.c && xpfo_owner(h.run) == h.c && xpfo_owner(input[1]) == root,
	      "owners of the handed-over results (lock %d)", lock);
	char *s = xpfo_move(h.small, root);
	CHECK(s && s != h.small && xpfo_owner(s) == root && tu_verify(s, 700, 20) == (size_t)-1,
	      "the small result (lock %d): %s", lock, s ? "owner or bytes" : strerror(errno));
	char *r = xpfo_move(h.run, root);
	CHECK(r && (lock ? r != h.run : r == h.run) && xpfo_owner(r) == root &&
	      tu_verify(r, 1000, 20) == (size_t)-1 && tu_verify(r + 1000, 49000, 41) == (size_t)-1,
	      "the run result (lock %d): %s", lock, r ? "place, owner or bytes" : strerror(errno));
	free(s);
	free(r);
	free(h.given);
	if (alive) {
		b = 0;
		if (write(h.go[1], &b, 1) != 1 || pthread_join(th, NULL))
			tu_hard_error("the worker's end");
		CHECK(h.err == 0, "worker (alive): step %d failed", h.err);
		close(h.done[0]), close(h.done[1]), close(h.go[0]), close(h.go[1]);
	}
	CHECK(xpfo_compartment_destroy(h.c) == 0, "destroy after the hand-over: %s", strerror(errno));
}

int main(void)
{
	tu_prog = "sandbox/dataflow";
	tu_timeout(300);
	for (int i = 0; i < NIN; i++) {
		input[i] = malloc(in_size[i]);
		if (!input[i])
			tu_hard_error("malloc");
		tu_fill(input[i], in_size[i], 20);
	}
	char *pre1000 = malloc(1000), *pre8192 = malloc(8192);
	if (!pre1000 || !pre8192)
		tu_hard_error("malloc");
	tu_fill(pre1000, 1000, 11);
	tu_fill(pre8192, 8192, 12);
	root = xpfo_root();

	fork_deployment(); /* its children make the first compartment */
	xpfo_compartment_t *c = xpfo_compartment_create("target", 0);
	if (!c)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	move_cases(c, pre1000, pre8192);
	frame_cases(c);
	thread_handover(0, 0);
	if (strcmp(xpfo_backend(), "pkeys") == 0) {
		for (int alive = 0; alive < 2; alive++) {
			input[0] = malloc(1000);
			tu_fill(input[0], 1000, 20);
			thread_handover(1, alive);
		}
	}
	xpfo_compartment_destroy(c);
	tu_exit();
}
