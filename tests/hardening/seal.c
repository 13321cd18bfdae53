/* seal.c - seal=1 (every profile) makes xpfo's global table (options,
 * size classes, where the heap and its metadata are) read-only when
 * start-up ends, so a write primitive cannot retarget the allocator.
 *
 * The table has no public address.  What the seal does is visible in
 * /proc/self/maps: a read-only page of libxpfo.so above its writable data
 * (the relocation read-only pages all lie below it).  The child finds such
 * pages and tries to write to each (rewriting the byte it reads, so nothing
 * changes if the write succeeds): exit 0 when one exists and the write
 * faults (sealed), 3 when there is none (not sealed), 4 when the write
 * went through.  This relies on the table not being the first page of the
 * writable data (then its mapping could merge with the read-only one
 * below); the layout is checked, not assumed: no page found with seal=1
 * fails the test.
 */
#include "harness.h"

#include <setjmp.h>
#include <signal.h>
#include <string.h>

struct scan {
	unsigned long rw_lo;   /* lowest writable mapping of libxpfo */
	unsigned long ro[8];   /* read-only mappings above it */
	int nro;
};

static void scan_one(unsigned long lo, unsigned long hi, const char *prot, const char *path,
		     void *arg)
{
	struct scan *s = arg;
	(void)hi;
	if (!strstr(path, "/libxpfo.so"))
		return;
	if (!strcmp(prot, "rw-p") && (!s->rw_lo || lo < s->rw_lo))
		s->rw_lo = lo;
	else if (!strcmp(prot, "r--p") && s->rw_lo && lo > s->rw_lo && s->nro < 8)
		s->ro[s->nro++] = lo;
}

static sigjmp_buf env;
static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

static int c_sealed(const char *a)
{
	(void)a;
	struct scan s;
	memset(&s, 0, sizeof s);
	h_maps_foreach(scan_one, &s);
	if (!s.rw_lo)
		return 97;
	if (!s.nro)
		return 3;
	/* xpfo's fault handler passes faults outside its heap on to ours */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < s.nro; i++) {
		volatile char *p = (volatile char *)s.ro[i];
		if (sigsetjmp(env, 1) == 0) {
			char c = *p;
			*p = c;
			h_note("a read-only page of libxpfo at %#lx took a write", s.ro[i]);
			return 4;
		}
	}
	h_note("%d read-only page range(s) above libxpfo's writable data, writes fault", s.nro);
	return 0;
}

static const struct hcase cases[] = {
	{ "sealed", c_sealed },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"

static const struct hrun runs[] = {
	{ "sealed", "profile=default", HX_EXIT, 0, NULL, NULL, "seal on" },
	{ "sealed", "profile=strict", HX_EXIT, 0, NULL, NULL, "seal on" },
	{ "sealed", "profile=light", HX_EXIT, 0, NULL, NULL, "seal on" },
	{ "sealed", NULL, HX_EXIT, 0, NULL, NULL, "seal on" },
	{ "sealed", "profile=default,seal=0", HX_EXIT, 3, NULL, NULL, "seal off" },
	{ "sealed", "profile=strict,seal=0", HX_EXIT, 3, NULL, NULL, "seal off" },
	{ "sealed", "profile=light,seal=0", HX_EXIT, 3, NULL, NULL, "seal off" },
	{ "sealed", "profile=default,seal=x", HX_EXIT, 0, NULL, WARN("seal"),
	  "bad value: default (on) kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "seal", cases, NELEM(cases), runs, NELEM(runs));
}
