#!/bin/sh
# run.sh BINARY SEEDS SECONDS - run one libFuzzer target for SECONDS
# (nice'd), starting from the seed corpus SEEDS (read only: new inputs go to
# tests/fuzz/work/NAME in the build tree), and print one line: executions,
# corpus size, coverage (libFuzzer's cov: and ft: at the end).  Exit 0 when
# it found nothing, 1 with the crash's log and artifact named.  The report
# is written at the end in one piece, so that targets run at the same time
# (make fuzz FUZZ_JOBS=N) do not mix their lines.
set -u
bin=$1 seeds=$2 secs=$3
name=$(basename "$bin" | sed 's/^fuzz-//')
work=tests/fuzz/work/$name
log=tests/fuzz/$name.log
mkdir -p "$work" tests/fuzz/artifacts
# -rss_limit_mb: memory that xpfo fails to give back shows up as a crash;
# -timeout: a hang (a lost wake-up, a lock never released) as well.
nice -n 10 "$bin" -max_total_time="$secs" -print_final_stats=1 -max_len=1024 \
	-rss_limit_mb=2048 -timeout=30 -artifact_prefix=tests/fuzz/artifacts/"$name"- \
	"$work" "$seeds" > "$log" 2>&1
st=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
last=$(grep -aE '^#[0-9]+.*cov: ' "$log" | tail -n 1 | tr -cd '[:print:]')
cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p')
report=tests/fuzz/$name.report
{
	echo "fuzz $name: ${secs} s, ${execs:-?} executions, corpus ${corp:-?} (units/bytes), cov ${cov:-?}, ft ${ft:-?}"
	if [ "$st" -ne 0 ]; then
		echo "FAIL: fuzz/$name (libFuzzer exit $st); log $log:"
		grep -aE 'ERROR|fuzz:|xpfo:|SUMMARY|artifact|Test unit' "$log" | head -n 20
	else
		echo "PASS: fuzz/$name"
	fi
} > "$report"
cat "$report"
rm -f "$report"
[ "$st" -eq 0 ]
