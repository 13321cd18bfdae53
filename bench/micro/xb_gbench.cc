// xb_gbench.cc - the one C++ file of bench/: it adapts Google Benchmark's
// State to the C functions declared in xb.h and registers every XB_BENCH
// that the C files defined.  Everything else in bench/ is C.
#include <benchmark/benchmark.h>

#include "xb.h"

namespace {
benchmark::State *st(struct xb_state *s)
{
	return reinterpret_cast<benchmark::State *>(s);
}
struct xb_state *xs(benchmark::State &s)
{
	return reinterpret_cast<struct xb_state *>(&s);
}

struct ctx {
	const char *key;
	const char *(*fn)(void);
} contexts[8];
int ncontexts;

struct xb_bench *head;
struct xb_bench **tail = &head;
} // namespace

extern "C" {
bool xb_run(struct xb_state *s) { return st(s)->KeepRunning(); }
bool xb_run_batch(struct xb_state *s, int64_t n)
{
	return st(s)->KeepRunningBatch(n);
}
int64_t xb_arg(struct xb_state *s, int i) { return st(s)->range(i); }
int64_t xb_iterations(struct xb_state *s) { return st(s)->iterations(); }
int xb_thread(struct xb_state *s) { return st(s)->thread_index(); }
int xb_threads(struct xb_state *s) { return st(s)->threads(); }
void xb_pause(struct xb_state *s) { st(s)->PauseTiming(); }
void xb_resume(struct xb_state *s) { st(s)->ResumeTiming(); }
void xb_items(struct xb_state *s, int64_t n) { st(s)->SetItemsProcessed(n); }
void xb_skip(struct xb_state *s, const char *why) { st(s)->SkipWithError(why); }
void xb_label(struct xb_state *s, const char *l) { st(s)->SetLabel(l); }
void xb_counter(struct xb_state *s, const char *name, double v, int flags)
{
	st(s)->counters[name] = benchmark::Counter(
		v, (flags & XB_PER_ITER) ? benchmark::Counter::kAvgIterations
					 : benchmark::Counter::kDefaults);
}

// Called from constructors, before main: keep registration order.
void xb_register(struct xb_bench *b)
{
	b->next = nullptr;
	*tail = b;
	tail = &b->next;
}

void xb_context(const char *key, const char *(*fn)(void))
{
	if (ncontexts < 8)
		contexts[ncontexts++] = ctx{key, fn};
}
}

int main(int argc, char **argv)
{
	for (struct xb_bench *b = head; b; b = b->next) {
		void (*fn)(struct xb_state *) = b->fn;
		benchmark::internal::Benchmark *r = benchmark::RegisterBenchmark(
			b->name, [fn](benchmark::State &s) { fn(xs(s)); });
		for (const int64_t *a = b->args; a && *a != XB_END; a++)
			r->Arg(*a);
		for (const int *t = b->threads; t && *t != XB_END; t++)
			r->Threads(*t);
		if (b->real_time)
			r->UseRealTime();
	}
	for (int i = 0; i < ncontexts; i++) {
		const char *v = contexts[i].fn();
		benchmark::AddCustomContext(contexts[i].key, v ? v : "(null)");
	}
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
