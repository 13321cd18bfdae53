# bench: allocator benchmarks against glibc, jemalloc and mimalloc.
# See bench/README.md.  Nothing here runs in `make all`; `make check` only
# builds xb-work and runs bench/smoke.sh (a seconds-long dry run of the
# runner that checks the table it writes; no timing assertions).
#
#   make bench          whole suite, about 25 min on 2 cores -> bench/results/
#   make bench-quick    small scale, < 3 min -> bench/results/quick/
#   make bench-check    quick run compared with bench/results/baseline-quick.json
#   make bench-baseline quick run written as the new baseline
#   make bench-baselines  the allocators built from source (mimalloc-secure)

# Workloads: plain C, never linked to xpfo (it is preloaded like the others).
check_PROGRAMS += bench/xb-work bench/xb-spawn
bench_xb_spawn_SOURCES = bench/spawn.c
bench_xb_work_SOURCES = bench/workloads/main.c bench/workloads/xbw.h \
	bench/workloads/larson.c bench/workloads/xmalloc.c \
	bench/workloads/scratch.c bench/workloads/tree.c \
	bench/workloads/hash.c bench/workloads/frag.c \
	bench/workloads/prodcons.c bench/workloads/threadchurn.c \
	bench/workloads/bigblock.c
bench_xb_work_SOURCES += bench/workloads/crossmix.c
bench_xb_work_LDADD = -lpthread

# Micro benchmarks on Google Benchmark: built only by the bench targets.
bench_micro_common = bench/micro/xb_gbench.cc bench/micro/xb.h
if HAVE_BENCHMARK
EXTRA_PROGRAMS += bench/xb-micro bench/xb-micro-xpfo
bench_micro_progs = bench/xb-micro$(EXEEXT) bench/xb-micro-xpfo$(EXEEXT)
endif
# xb-micro: run under each allocator with LD_PRELOAD.
bench_xb_micro_SOURCES = $(bench_micro_common) bench/micro/alloc.c
bench_xb_micro_CXXFLAGS = $(BENCHMARK_CFLAGS) $(XPFO_OPT)
bench_xb_micro_LDADD = $(BENCHMARK_LIBS) -lpthread
# xb-micro-xpfo: linked to libxpfo, for the counters (revocation ablation).
bench_xb_micro_xpfo_SOURCES = $(bench_micro_common) bench/micro/xpfo.c
bench_xb_micro_xpfo_CXXFLAGS = $(BENCHMARK_CFLAGS) $(XPFO_OPT)
bench_xb_micro_xpfo_LDADD = libxpfo.la $(BENCHMARK_LIBS) -lpthread
bench_xb_micro_xpfo_LDFLAGS = -no-install

TESTS += bench/smoke.sh
EXTRA_DIST += bench/README.md bench/run.py bench/smoke.sh \
	bench/xpfobench/__init__.py bench/xpfobench/allocators.py \
	bench/xpfobench/procs.py bench/xpfobench/counters.py \
	bench/xpfobench/benches.py bench/xpfobench/measure.py \
	bench/xpfobench/machine.py bench/xpfobench/suite.py \
	bench/xpfobench/summary.py bench/xpfobench/report.py \
	bench/xpfobench/plots.py bench/xpfobench/baseline.py \
	bench/issue37.py bench/flushmech.py bench/programs/alloc_heavy.py bench/programs/sqlite-gen.sql \
	bench/programs/sqlite-query.sql bench/results/baseline-quick.json
# The measured results the READMEs show.
EXTRA_DIST += bench/results/latest.md bench/results/vm-counts.md \
	bench/results/vm-before.md bench/results/vm-before.png \
	bench/results/time_ratio.png bench/results/rss_ratio.png \
	bench/results/micro_ratio.png bench/results/revoke_batch.png \
	bench/results/issue37-before.md bench/results/issue37-before.json \
	bench/results/flush-mechanisms.md bench/results/remap.md \
	bench/results/vm-after.md bench/results/vm-after.png \
	bench/results/vm-after2.md bench/results/vm-after2.png \
	bench/results/vm-after3.md bench/results/vm-after3.png \
	bench/results/vm612p-before.md bench/results/vm612p-before.png \
	bench/results/vm612p-after.md bench/results/vm612p-after.png \
	bench/results/vm612p-small.md bench/results/vm612p-small.png \
	bench/results/vm61-after.md bench/results/vm61-after.png \
	bench/results/vm612b-after.md bench/results/vm612b-after.png \
	bench/results/vm61-trace-larson.md \
	bench/results/issue37-after-quick.md \
	bench/results/issue37-thp-quick.md bench/results/issue37-full.md \
	bench/results/issue37-progress.md bench/results/issue37-check.md \
	bench/results/issue37-before-baseline.json

PYTHON3 = python3
BENCH_RUN = $(PYTHON3) $(abs_top_srcdir)/bench/run.py \
	--builddir '$(abs_top_builddir)' --srcdir '$(abs_top_srcdir)'

bench-progs: libxpfo.la bench/xb-work$(EXEEXT) bench/xb-spawn$(EXEEXT) $(bench_micro_progs)

bench: bench-progs bench-baselines-try
	$(BENCH_RUN) --mode full --out '$(abs_top_srcdir)/bench/results'

bench-quick: bench-progs bench-baselines-try
	$(BENCH_RUN) --mode quick --out '$(abs_top_builddir)/bench/results/quick'

bench-check: bench-progs
	$(BENCH_RUN) --mode quick --out '$(abs_top_builddir)/bench/results/check' \
		--check '$(abs_top_srcdir)/bench/results/baseline-quick.json'

bench-baseline: bench-progs
	$(BENCH_RUN) --mode quick --out '$(abs_top_builddir)/bench/results/quick' \
		--write-baseline '$(abs_top_srcdir)/bench/results/baseline-quick.json'

.PHONY: bench bench-quick bench-check bench-baseline bench-progs

# Allocators compared with that Debian does not package, built from
# Debian's sources into a cache outside the tree (bench/baselines/; the
# network once, then the cache); bench-baselines fails when one cannot be
# built.  bench and bench-quick build them first (bench-baselines-try):
# there one that cannot be built is a warning, and the run reports its
# column as not run, with the reason.  bench-check and bench-baseline
# (xpfo/glibc ratios only) run them when they are built.
EXTRA_DIST += bench/baselines/mimalloc-secure.sh
BENCH_MIMALLOC_SECURE = $(SHELL) '$(abs_top_srcdir)/bench/baselines/mimalloc-secure.sh'
bench-baselines:
	@so=$$($(BENCH_MIMALLOC_SECURE)) && echo "bench-baselines: mimalloc-secure: $$so"
bench-baselines-try:
	@so=$$($(BENCH_MIMALLOC_SECURE)) && echo "bench-baselines: mimalloc-secure: $$so" || \
		echo "bench-baselines: warning: mimalloc-secure not built (why: above); the run leaves its column out" >&2
.PHONY: bench-baselines bench-baselines-try

# bench-vm: counts of the compartment workloads in the QEMU guest, pkeys
# against mprotect (bench/results/vm-counts.md).
EXTRA_PROGRAMS += bench/xb-vm-counts
bench_xb_vm_counts_SOURCES = bench/vm/counts.c
bench_xb_vm_counts_LDADD = libxpfo.la -lpthread
bench_xb_vm_counts_LDFLAGS = -all-static
EXTRA_DIST += bench/vm/run.sh
.PHONY: bench-vm bench-vm-counts bench-vm-ipi
bench-vm: bench-vm-counts bench-vm-ipi
bench-vm-counts: bench/xb-vm-counts$(EXEEXT)
	top_srcdir=$(abs_top_srcdir) top_builddir=$(abs_top_builddir) $(SHELL) $(top_srcdir)/bench/vm/run.sh

# bench-vm-ipi: TLB-shootdown IPIs (TLB + CAL interrupts) per 1,000
# operations of the multi-threaded workloads under each allocator, at 2, 4
# and 8 guest CPUs (issue 35; bench/vm/ipi.sh, bench/results/vm-ipi.md).
# BENCH_VM_IPI_ARGS passes options, e.g. --smp "2 4" or --kernel PATH.
EXTRA_PROGRAMS += bench/xb-vm-ipi
bench_xb_vm_ipi_SOURCES = bench/vm/ipi.c
bench_xb_vm_ipi_LDFLAGS = -all-static
EXTRA_DIST += bench/vm/ipi.sh bench/vm/ipi-guest.sh bench/vm/ipi-report.py \
	bench/vm/ipi-trace.py
bench-vm-ipi: libxpfo.la bench/xb-work$(EXEEXT) bench/xb-vm-ipi$(EXEEXT) bench-baselines-try
	top_srcdir=$(abs_top_srcdir) top_builddir=$(abs_top_builddir) $(SHELL) \
		$(top_srcdir)/bench/vm/ipi.sh $(BENCH_VM_IPI_ARGS)

# The example service, locked vs not vs without xpfo (the sandbox issue).
.PHONY: bench-sandbox
bench-sandbox: all
	top_srcdir=$(top_srcdir) top_builddir=$(top_builddir) $(SHELL) $(top_srcdir)/bench/sandbox.sh
EXTRA_DIST += bench/sandbox.sh

# The PNG service (examples/pngd), locked vs not vs fork per request
# without xpfo (issue 34): bench/results/pngd.md.
.PHONY: bench-pngd
bench-pngd: all
	top_srcdir=$(top_srcdir) top_builddir=$(top_builddir) $(SHELL) $(top_srcdir)/bench/pngd.sh
EXTRA_DIST += bench/pngd.sh

# xb-protflip: a page's cost at its next touch after a protection change
# or a release, in 4 KiB mappings and over huge pages (bench/README.md)
EXTRA_PROGRAMS += bench/xb-protflip
bench_xb_protflip_SOURCES = bench/micro/protflip.c

# xb-pairs: small malloc/free pairs for callgrind instruction counts
# (bench/pairs.sh; issue 11's ablation table in bench/README.md).
EXTRA_PROGRAMS += bench/xb-pairs
bench_xb_pairs_SOURCES = bench/micro/pairs.c
bench_xb_pairs_LDADD = -lpthread
EXTRA_DIST += bench/pairs.sh
