#!/bin/sh
# Run unit-test binaries built without ASan (make valgrind: $B/vg/test_*)
# under valgrind: any memory error or definitely lost block fails the test.
#   tests/valgrind/run.sh BIN...
# One line per binary; the valgrind log of a failing one is printed whole.
# NL_VG_SKIP: a cmocka test name pattern to leave out (skip.c): it is not run
# and not counted.
set -u
cd "$(dirname "$0")/../.." || exit 2
# the clock-judged loop grids run every fourth loop under valgrind
export NL_VALGRIND=1
B=${B:-build}
logs=$B/vg/logs
mkdir -p "$logs"
failed=""
for t in "$@"; do
	name=$(basename "$t")
	log=$logs/$name.log
	start=$(date +%s)
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
		--track-origins=yes "$t" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	if [ $rc -eq 0 ] && grep -q '^\[  PASSED  \]' "$log"; then
		n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
		echo "  VALGRIND $name: $n tests ok (${secs} s)"
	else
		cat "$log"
		echo "  VALGRIND $name: FAILED (exit $rc; log $log)"
		failed="$failed $name"
	fi
done
[ -z "$failed" ] || { echo "valgrind failed:$failed"; exit 1; }
