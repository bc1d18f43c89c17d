#!/bin/sh
# Run the unit tests (cmocka, under ASan/UBSan) and the end-to-end tests,
# then print one closing line: "N passed, N failed, N skipped".
#   tests/run.sh [unit|e2e] [NAME-FILTER]
set -u
cd "$(dirname "$0")/.." || exit 2
what=${1:-all}
filter=${2:-}
B=${B:-build}
export B
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT INT TERM
passed=0 failed=0 skipped=0 failures=""

if [ "$what" = all ] || [ "$what" = unit ]; then
	for t in "$B"/tests/test_*; do
		[ -x "$t" ] || continue
		case "$t" in *"$filter"*) ;; *) continue ;; esac
		name=$(basename "$t")
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			"$t" >"$log/$name.out" 2>&1
		rc=$?
		cat "$log/$name.out"
		p=$(sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test.*/\1/p' "$log/$name.out" | tail -1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test.*/\1/p' "$log/$name.out" | tail -1)
		passed=$((passed + ${p:-0}))
		failed=$((failed + ${f:-0}))
		if [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
			# crashed or sanitizer abort before cmocka could count
			failed=$((failed + 1))
			failures="$failures $name(exit $rc)"
		elif [ "${f:-0}" -ne 0 ]; then
			failures="$failures $name"
		fi
	done
	# the layering of user/ (tests/layers.sh): a grep, no build needed
	case test_layers in *"$filter"*)
		sh tests/test_layers.sh >"$log/test_layers.out" 2>&1
		cat "$log/test_layers.out"
		p=$(grep -c '^PASS: ' "$log/test_layers.out")
		f=$(grep -c '^FAIL: ' "$log/test_layers.out")
		passed=$((passed + p)); failed=$((failed + f))
		[ "$f" -eq 0 ] || failures="$failures test_layers"
		;;
	esac
fi

if [ "$what" = all ] || [ "$what" = e2e ]; then
	for t in tests/e2e/test_*.sh; do
		[ -f "$t" ] || continue
		case "$t" in *"$filter"*) ;; *) continue ;; esac
		name=$(basename "$t" .sh)
		echo "=== $name"
		# 300 s a script, unless it says otherwise in a "# e2e-timeout: SECONDS" line
		limit=$(sed -n 's/^# e2e-timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -n 1)
		timeout "${limit:-300}" sh "$t" >"$log/$name.out" 2>&1
		rc=$?
		cat "$log/$name.out"
		p=$(grep -c '^PASS: ' "$log/$name.out")
		f=$(grep -c '^FAIL: ' "$log/$name.out")
		s=$(grep -c '^SKIP: ' "$log/$name.out")
		passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
		if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
			failed=$((failed + 1))
			failures="$failures $name(exit $rc)"
		elif [ "$f" -ne 0 ]; then
			failures="$failures $name"
		fi
	done
fi

[ -n "$failures" ] && echo "failing:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
