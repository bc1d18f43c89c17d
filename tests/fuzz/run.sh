#!/bin/sh
# Run the libFuzzer harnesses built under $B/fuzz (make fuzz, make fuzz-regress).
#   tests/fuzz/run.sh fuzz SECONDS NAME...   fuzz each harness for SECONDS over its
#                                            committed corpus and $B/fuzz/corpus/NAME
#   tests/fuzz/run.sh regress NAME...        run every committed input (corpus and
#                                            crashes) through its harness once
# One line per harness; the libFuzzer log of a failing one is printed whole.
# Exit 1 when any harness found a crash, a leak, a timeout or ran out of memory.
set -u
cd "$(dirname "$0")/../.." || exit 2
B=${B:-build}
mode=${1:-}
shift || true
case "$mode" in
fuzz) secs=${1:-20}; shift || true ;;
regress) ;;
*) echo "usage: $0 fuzz SECONDS NAME... | regress NAME..." >&2; exit 2 ;;
esac
# The limits of docs/fuzzing.md: 2 GiB of RSS, 10 s for one input.
opts="-rss_limit_mb=2048 -timeout=10"
logs=$B/fuzz/logs
mkdir -p "$logs"
failed=""

for name in "$@"; do
	bin=$B/fuzz/fuzz_$name
	log=$logs/$name.$mode.log
	if [ ! -x "$bin" ]; then
		echo "  FUZZ     $name: $bin missing (make fuzz-build)"
		failed="$failed $name"
		continue
	fi
	if [ "$mode" = regress ]; then
		n=$(find "tests/fuzz/corpus/$name" "tests/fuzz/crashes/$name" -type f 2>/dev/null | wc -l)
		if [ "$n" -eq 0 ]; then
			echo "  REGRESS  $name: no inputs under tests/fuzz/corpus/$name"
			failed="$failed $name"
			continue
		fi
		# files, not folders: libFuzzer then runs each once and does not fuzz
		find "tests/fuzz/corpus/$name" "tests/fuzz/crashes/$name" -type f 2>/dev/null | sort |
			xargs "$bin" $opts >"$log" 2>&1
		rc=$?
		ran=$(grep -c '^Executed ' "$log")
		if [ $rc -eq 0 ] && [ "$ran" -eq "$n" ]; then
			echo "  REGRESS  $name: $n inputs, ok"
		else
			cat "$log"
			echo "  REGRESS  $name: FAILED ($ran of $n inputs ran, exit $rc; log $log)"
			failed="$failed $name"
		fi
		continue
	fi
	work=$B/fuzz/corpus/$name
	art=$B/fuzz/artifacts/$name
	mkdir -p "$work" "$art"
	dict=
	[ -f "tests/fuzz/$name.dict" ] && dict=-dict=tests/fuzz/$name.dict
	# new inputs go to the first folder (under build/), the committed corpus is only read
	"$bin" $opts -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$art/" $dict \
		"$work" "tests/fuzz/corpus/$name" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(sed -n 's/^#[0-9]*.*cov: \([0-9]*\).*/\1/p' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "  FUZZ     $name: ${runs:-?} runs in ${secs} s, coverage ${cov:-?} edges, ok"
	else
		cat "$log"
		echo "  FUZZ     $name: FAILED (exit $rc; input saved under $art/, log $log)"
		failed="$failed $name"
	fi
done

if [ -n "$failed" ]; then
	echo "fuzz $mode failed:$failed"
	exit 1
fi
exit 0
