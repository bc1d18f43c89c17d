# The whole tool built with ASan and UBSan ($B/san/nanlog-bpf), and the
# release build under valgrind, on every recorded fixture (no root needed)
# and, with real BPF, live on the workload with every output switched on.
# shellcheck shell=sh
. tests/e2e/lib.sh

SAN_TOOL=$B/san/nanlog-bpf
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98

for rec in tests/fixtures/*.rec; do
	name=$(basename "$rec" .rec)
	"$SAN_TOOL" --replay "$rec" --raw --post-step -q -o "$TMP/$name.json" --trace "$TMP/$name.trace" 2>"$TMP/$name.err"
	rc=$?
	"$TOOL" --replay "$rec" --raw --post-step -q -o "$TMP/$name.ref"
	check "ASan/UBSan replay $name: clean, same audits as the release build" \
		sh -c "test $rc = 0 && test ! -s '$TMP/$name.err' && cmp -s '$TMP/$name.json' '$TMP/$name.ref'"
	"$SAN_TOOL" --replay "$rec" --format table -q -o /dev/null 2>"$TMP/$name.terr"
	check "ASan/UBSan replay $name, table format: clean" sh -c "test $? = 0 && test ! -s '$TMP/$name.terr'"
done
# --attach-at: the recording from one of its records on, as if attached
# by pid there (the targets held back until then), and past its end
for at in 1 37 200; do
	"$SAN_TOOL" --replay tests/fixtures/clean.rec --attach-at "$at" --raw -q -o "$TMP/at$at.json" 2>"$TMP/at$at.err"
	rc=$?
	"$TOOL" --replay tests/fixtures/clean.rec --attach-at "$at" --raw -q -o "$TMP/at$at.ref"
	check "ASan/UBSan replay --attach-at $at: clean, same audits as the release build" \
		sh -c "test $rc = 0 && test ! -s '$TMP/at$at.err' && cmp -s '$TMP/at$at.json' '$TMP/at$at.ref'"
done
"$SAN_TOOL" --replay tests/fixtures/clean.rec --attach-at 100000 -q -o /dev/null 2>"$TMP/atpast.err"
check "ASan/UBSan replay --attach-at past the end: exit 1, no report" \
	sh -c "test $? = 1 && ! grep -q 'Sanitizer\|runtime error' '$TMP/atpast.err'"
if command -v valgrind >/dev/null; then
	valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
		"$TOOL" --replay tests/fixtures/clean.rec --attach-at 37 --raw -q -o /dev/null 2>"$TMP/vgat.err"
	check "valgrind replay --attach-at 37: no error, no leak" sh -c "test $? = 0 && test ! -s '$TMP/vgat.err'"
fi
if command -v valgrind >/dev/null; then
	for rec in tests/fixtures/clean.rec tests/fixtures/exit_mid_batch.rec; do
		valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
			"$TOOL" --replay "$rec" --raw -q -o /dev/null --trace /dev/null 2>"$TMP/vg.err"
		check "valgrind replay $(basename "$rec"): no error, no leak" sh -c "test $? = 0 && test ! -s '$TMP/vg.err'"
	done
else
	skip "valgrind replay: valgrind missing"
fi

if why=$(bpf_unavailable); then
	skip "ASan/UBSan live: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
"$SIM/pipeline" --gate-signal --batches 8 --drop d_compute_wait@3 --truth "$TMP/live.truth" >"$TMP/wl" 2>&1 &
wl=$!
at_exit "kill -KILL $wl 2>/dev/null"
wait_for '^ready' "$TMP/wl"
"$SAN_TOOL" -p "$wl" --raw --post-step --heartbeat 0.2 --metrics 127.0.0.1:0 --live \
	--record "$TMP/live.rec" --trace "$TMP/live.trace" -o "$TMP/live.json" 2>"$TMP/live.err" &
tool=$!
wait_for '"type":"attach".*librccl' "$TMP/live.json"
kill -USR1 "$wl"
wait "$tool"
rc=$?
check "ASan/UBSan live with every output: exit 0, no report" \
	sh -c "test $rc = 0 && ! grep -q 'Sanitizer\|runtime error' '$TMP/live.err'"
check "ASan/UBSan live: the untrusted batch found" \
	jq -e -s '[.[] | select(.type=="batch" and .verdict=="untrusted")] | length == 1' "$TMP/live.json"
