#!/bin/sh
# bench/vm/ipi-guest.sh: the guest side of bench/vm/ipi.sh (a test for
# tests/qemu/run.sh, run once per allocator: ALLOC=glibc, jemalloc,
# mimalloc, mimalloc-secure, xpfo, xpfo-light, xpfo-eager, or xpfo:OPTIONS,
# xpfo with XPFO_OPTIONS=OPTIONS).  Runs every line of
# /tests/files/ipi-plan ("WORKLOAD ARGS...", ipi-plan-eager for
# xpfo-eager when present) with xb-work, the same dynamic
# binary as on the host, through the dynamic loader copied next to it (the
# initramfs has no /lib), the allocator preloaded, under xb-vm-ipi, and
# prints one line per run:
#   IPI alloc=A work=W ops=N tlb=N cal=N minflt=N majflt=N status=N
#       revoke=N grant=N backend=B rounds=N protect=N purge=N guard=N
#       vector=N unmap=N madvise=N munmap=N thpfault=N thpsplit=N
# (revoke, grant, backend: xpfo's revoke_syscalls, grant_syscalls and
# backend from stats=json; rounds..unmap: its flush_rounds and their
# mechanisms; madvise, munmap: its madvise_syscalls and munmap_syscalls;
# "-" for the others.  thpfault, thpsplit: the guest's
# thp_fault_alloc and thp_split_pmd of /proc/vmstat across the run, for
# every allocator: a huge page split under a protection change is a
# flush too.)  Exit 1 when a run failed.
# With TRACE=1 (ipi.sh --trace), each run is also traced: every call of
# smp_call_function_many_cond (the sender of a TLB shootdown, or of any
# other function-call IPI to several CPUs), generic_exec_single (to one)
# and __smp_call_single_queue (a remote wakeup queued, whose IPI is
# counted as CAL as well) with its kernel stack, and every write fault
# on a present page (error code 7: a copy-on-write, as of the zero page)
# with its address and instruction pointer; the process's maps are read
# from a second run of the same line beside it (address randomization
# off, so both have one layout).  Printed as lines "TRACE ..." and
# "MAPS ..." for bench/vm/ipi-trace.py.
F=/tests/files
ld=$F/ld-linux-x86-64.so.2
opts=
case ${ALLOC:-} in
glibc) pre= ;;
jemalloc) pre=$F/libjemalloc.so.2 ;;
mimalloc) pre=$F/libmimalloc.so.2 ;;
mimalloc-secure) pre=$F/libmimalloc-secure.so ;;
xpfo) pre=$F/libxpfo.so.0; opts=stats=json ;;
xpfo-light) pre=$F/libxpfo.so.0; opts=profile=light,stats=json ;;
xpfo-eager) pre=$F/libxpfo.so.0; opts=revoke=eager,stats=json ;;
xpfo:*) pre=$F/libxpfo.so.0; opts=${ALLOC#xpfo:},stats=json ;;
*) echo "ipi-guest: unknown ALLOC '${ALLOC:-}'"; exit 99 ;;
esac
[ -z "$pre" ] || [ -r "$pre" ] || { echo "ipi-guest: $pre is missing"; exit 99; }
plan=$F/ipi-plan
# revoke=eager is far slower under TCG: it has a smaller plan of its own
[ "$ALLOC" != xpfo-eager ] || [ ! -r $F/ipi-plan-eager ] || plan=$F/ipi-plan-eager
# vmstat KEY: the guest's counter KEY of /proc/vmstat (0 when absent)
vmstat() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' /proc/vmstat; }
T=/sys/kernel/tracing
# trace_on: set the tracer up (once)
trace_on() {
	echo 0 >/proc/sys/kernel/randomize_va_space
	mount -t tracefs nodev $T 2>/dev/null
	[ -w $T/set_ftrace_filter ] || { echo "ipi-guest: no tracefs"; exit 99; }
	echo 0 >$T/tracing_on
	echo 4096 >$T/buffer_size_kb
	# the senders of function-call IPIs: to several CPUs (TLB shootdowns
	# among them), to one, and the queueing of a remote wakeup (the
	# scheduler's, which /proc/interrupts counts as CAL too)
	echo 'smp_call_function_many_cond generic_exec_single __smp_call_single_queue' \
		>$T/set_ftrace_filter
	echo function >$T/current_tracer
	echo 1 >$T/options/func_stack_trace
	echo 'error_code == 7' >$T/events/exceptions/page_fault_user/filter
	echo 1 >$T/events/exceptions/page_fault_user/enable
}
# trace_maps WORK ARGS: the maps of a run of the line, read while it runs
trace_maps() {
	LD_PRELOAD=$pre XPFO_OPTIONS=$opts "$ld" --library-path "$F" "$F/xb-work" "$@" \
		</dev/null >/dev/null 2>&1 &
	p=$! n=0
	while [ $n -lt 200 ] && ! grep -q 'libc\.so' /proc/$p/maps 2>/dev/null; do
		sleep 0.01
		n=$((n + 1))
	done
	sleep 0.05
	sed "s/^/MAPS alloc=$ALLOC work=$1 /" /proc/$p/maps 2>/dev/null
	kill $p 2>/dev/null
	wait $p 2>/dev/null
}
[ "${TRACE:-}" != 1 ] || trace_on
rc=0
while read -r work args; do
	[ -n "$work" ] || continue
	if [ "${TRACE:-}" = 1 ]; then
		# $args: split at spaces on purpose; before the counters are read,
		# so that this run is not in them
		trace_maps "$work" $args
		echo >$T/trace
		echo 1 >$T/tracing_on
	fi
	tf0=$(vmstat thp_fault_alloc) ts0=$(vmstat thp_split_pmd)
	# $args: split at spaces on purpose
	LD_PRELOAD=$pre XPFO_OPTIONS=$opts xb-vm-ipi "$ld" --library-path "$F" \
		"$F/xb-work" "$work" $args </dev/null >/tmp/ipi.out 2>&1
	if [ "${TRACE:-}" = 1 ]; then
		echo 0 >$T/tracing_on
		grep -v '^#' $T/trace | sed "s/^/TRACE alloc=$ALLOC work=$work /"
	fi
	tf=$(($(vmstat thp_fault_alloc) - tf0)) ts=$(($(vmstat thp_split_pmd) - ts0))
	c=$(sed -n 's/^xb-vm-ipi: //p' /tmp/ipi.out)
	# operations: xb-work's ops (larson, crossmix), else its objects
	# (+ medium blocks: xmalloc, prodcons, threadchurn), else hash's
	# entries per round x rounds x threads
	ops=$(awk -F'[= ]' '/^xbw: ops=/ { o = $3 } /^xbw: objects=/ { ob = $3 }
		/^xbw: medium=/ { m = $3 } /^xbw: entries_per_round=/ { e = $3 }
		/^xbw: args=/ { for (i = 3; i < NF; i++) { if ($i == "-t") t = $(i + 1); if ($i == "-r") r = $(i + 1) } }
		END { if (o != "") print o; else if (ob != "") print ob + m;
		      else if (e != "" && t != "" && r != "") print e * r * t }' /tmp/ipi.out)
	rv=- gr=- be=- more=
	if [ -n "$opts" ]; then
		be=$(grep -o '"backend": "[a-z]*"' /tmp/ipi.out | sed 's/.* "//; s/"//')
		rv=$(grep -o '"revoke_syscalls": [0-9]*' /tmp/ipi.out | sed 's/.* //')
		gr=$(grep -o '"grant_syscalls": [0-9]*' /tmp/ipi.out | sed 's/.* //')
	fi
	for k in rounds:flush_rounds protect:flush_rounds_protect purge:flush_rounds_purge \
		guard:flush_rounds_guard vector:flush_rounds_vector unmap:flush_rounds_unmap \
		madvise:madvise_syscalls munmap:munmap_syscalls; do
		v=-
		[ -z "$opts" ] || v=$(grep -o "\"${k#*:}\": [0-9]*" /tmp/ipi.out | sed 's/.* //')
		more="$more ${k%%:*}=${v:-?}"
	done
	case "$c" in *status=0) ;; *) rc=1; sed 's/^/ipi-guest: /' /tmp/ipi.out ;; esac
	echo "IPI alloc=$ALLOC work=$work ops=${ops:-?} $c revoke=${rv:-?} grant=${gr:-?} backend=${be:-?}$more thpfault=$tf thpsplit=$ts"
done <"$plan"
exit $rc
