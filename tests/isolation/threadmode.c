/* threadmode.c - XPFO_OPTIONS=compartments=thread (issue 3): every thread
 * but the first runs in a compartment of its own, named "thread <tid>".
 *
 * The program runs itself with that option.  A thread allocates (a small
 * block, a page run), fills its blocks and exits; then another thread, or
 * the main thread, touches the exited thread's allocation: it must die by
 * SIGSEGV with exactly one report line naming the exited thread's
 * compartment, the toucher's thread id and the toucher's compartment:
 *   xpfo: violation: read of <p> owned by compartment "thread <tid1>" from thread <tid2> in compartment "thread <tid2>"
 * The child prints the line it expects on stdout before the access.  A
 * control case (threads using only their own memory and root's) must exit 0.
 *
 * Fast path: a thread's own slots are touched directly, not under its
 * compartment's lock (the thread is in its compartment at depth 0): 20,000
 * small malloc/free pairs there leave touches_locked unchanged, while a
 * block made with xpfo_malloc_in in another compartment (a borrowed heap)
 * takes that path, so the counter is shown to count.  Before the fix
 * (touch_direct asked for t->depth) every pair counted.
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN (64u << 10)

static unsigned char *victim;
static size_t victim_size;
static int victim_tid;
static int fail_code;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) != n)
		_exit(98);
}

static void *owner_thread(void *arg)
{
	size_t size = (size_t)(uintptr_t)arg;
	char want[64];
	victim_tid = (int)iso_gettid();
	snprintf(want, sizeof want, "thread %d", victim_tid);
	xpfo_compartment_t *cur = xpfo_current();
	if (cur == xpfo_root() || strcmp(xpfo_compartment_name(cur), want)) {
		fprintf(stderr, "thread %d runs in compartment \"%s\", expected \"%s\"\n", victim_tid,
			xpfo_compartment_name(cur), want);
		fail_code = 3;
		return NULL;
	}
	victim = malloc(size);
	victim_size = size;
	if (!victim || xpfo_owner(victim) != cur) {
		fprintf(stderr, "malloc in the thread's compartment failed or is not its own\n");
		fail_code = 4;
		return NULL;
	}
	tu_fill(victim, size, 77);
	return NULL;
}

static void *toucher_thread(void *arg)
{
	if (arg) /* allocate first: the thread's own compartment surely exists */
		free(malloc(32));
	int tid = (int)iso_gettid();
	say("xpfo: violation: read of %p owned by compartment \"thread %d\" from thread %d in "
	    "compartment \"thread %d\"", (void *)(victim + victim_size / 2), victim_tid, tid, tid);
	tu_verify(victim + victim_size / 2, 1, 0);
	_exit(10); /* not reached */
}

static int run_owner(size_t size)
{
	pthread_t th;
	if (pthread_create(&th, NULL, owner_thread, (void *)(uintptr_t)size))
		return 2;
	pthread_join(th, NULL);
	if (fail_code)
		return fail_code;
	if (xpfo_owner(victim) == NULL || xpfo_owner(victim) == xpfo_root()) {
		fprintf(stderr, "the exited thread's block is owned by %s\n",
			xpfo_owner(victim) ? "root" : "nobody");
		return 5;
	}
	return 0;
}

/* Control: threads with their own memory, and root's memory shared. */
static void *worker(void *arg)
{
	unsigned char *shared = arg;
	unsigned char *mine = malloc(RUN), *small = malloc(100);
	if (!mine || !small || xpfo_owner(mine) != xpfo_current() || xpfo_current() == xpfo_root())
		return (void *)1;
	tu_fill(mine, RUN, 5);
	tu_fill(small, 100, 6);
	if (tu_verify(shared, 4096, 9) != (size_t)-1)
		return (void *)2;
	if (tu_verify(mine, RUN, 5) != (size_t)-1 || tu_verify(small, 100, 6) != (size_t)-1)
		return (void *)3;
	free(mine);
	free(small);
	return NULL;
}

static uint64_t touches_locked(void)
{
	struct xpfo_stats st;
	if (xpfo_stats_get(&st, sizeof st))
		return (uint64_t)-1;
	return st.touches_locked;
}

static void *fast_thread(void *arg)
{
	(void)arg;
	void *warm = malloc(48); /* the thread's first slab */
	uint64_t before = touches_locked();
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(16 + (size_t)(i % 8) * 16);
		if (!p)
			return (void *)1;
		memset(p, i, 16);
		free(p);
	}
	uint64_t own = touches_locked() - before;
	free(warm);
	xpfo_compartment_t *other = xpfo_compartment_create("other", 0);
	void *q = other ? xpfo_malloc_in(other, 100) : NULL;
	if (!q)
		return (void *)2;
	uint64_t borrowed = touches_locked() - before - own;
	say("touches_locked: %llu for 20000 pairs of the thread's own, %llu for one borrowed malloc",
	    (unsigned long long)own, (unsigned long long)borrowed);
	if (own)
		return (void *)3;
	if (!borrowed)
		return (void *)4;
	return NULL;
}

static int child(const char *what)
{
	iso_stdio_warmup();
	if (!strcmp(what, "fast path")) {
		pthread_t th;
		void *r;
		if (pthread_create(&th, NULL, fast_thread, NULL))
			return 2;
		pthread_join(th, &r);
		return r ? 20 + (int)(uintptr_t)r : 0;
	}
	if (!strcmp(what, "control")) {
		unsigned char *shared = malloc(4096);
		if (!shared || xpfo_current() != xpfo_root())
			return 2;
		tu_fill(shared, 4096, 9);
		pthread_t th[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&th[i], NULL, worker, shared))
				return 3;
		for (int i = 0; i < 4; i++) {
			void *r;
			pthread_join(th[i], &r);
			if (r)
				return 10 + (int)(uintptr_t)r;
		}
		free(shared);
		return 0;
	}
	size_t size = strstr(what, "small") ? 100 : RUN;
	int e = run_owner(size);
	if (e)
		return e;
	if (strstr(what, "main")) {
		say("xpfo: violation: read of %p owned by compartment \"thread %d\" from thread %d in "
		    "compartment \"root\"", (void *)(victim + 1), victim_tid, (int)iso_gettid());
		tu_verify(victim + 1, 1, 0);
		return 11;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, toucher_thread,
			   strstr(what, "allocated first") ? (void *)1 : NULL))
		return 6;
	pthread_join(th, NULL);
	return 12;
}

static void run_case(const char *what, int want_sig)
{
	const char *args[] = { "--child", what, NULL };
	struct tu_child ch;
	if (iso_run_self("compartments=thread", args, 30, &ch))
		tu_hard_error("could not run the child");
	unsigned long before = tu_failures;
	char *nl = strchr(ch.out, '\n');
	if (nl)
		*nl = 0;
	if (want_sig) {
		CHECK(WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == want_sig,
		      "%s: child ended with %s, expected %s", what, tu_status_str(ch.status),
		      sigabbrev_np(want_sig));
		char *enl = strchr(ch.err, '\n');
		CHECK(enl && enl[1] == 0, "%s: stderr is not exactly one line", what);
		if (enl)
			*enl = 0;
		CHECK(ch.out[0] && !strcmp(ch.err, ch.out), "%s: report line\n  got:  %s\n  want: %s",
		      what, ch.err, ch.out);
	} else {
		CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
		      "%s: child ended with %s", what, tu_status_str(ch.status));
		CHECK(!strstr(ch.err, "xpfo: violation"), "%s: a violation was reported", what);
		if (ch.out[0])
			fprintf(stderr, "     %s: %s\n", what, ch.out);
	}
	if (tu_failures != before)
		fprintf(stderr, "---- %s: child stderr ----\n%s\n---- end ----\n", what, ch.err);
	else
		fprintf(stderr, "ok   %s (%s)%s%s\n", what, tu_status_str(ch.status),
			want_sig ? ": " : "", want_sig ? ch.err : "");
}

int main(int argc, char **argv)
{
	tu_prog = "threadmode";
	if (argc == 3 && !strcmp(argv[1], "--child"))
		return child(argv[2]);
	if (argc != 1)
		tu_hard_error("usage: threadmode");
	tu_xpfo_init(1);
	run_case("control", 0);
	run_case("fast path", 0);
	run_case("page run of an exited thread, touched by another thread", SIGSEGV);
	run_case("page run of an exited thread, touched by another thread that allocated first",
		 SIGSEGV);
	run_case("small block of an exited thread, touched by another thread", SIGSEGV);
	run_case("page run of an exited thread, touched by the main thread", SIGSEGV);
	run_case("small block of an exited thread, touched by the main thread", SIGSEGV);
	tu_exit();
}
