# --trace: the Chrome/Perfetto JSON trace of a recorded run (no root) and of a
# live one (real BPF): structure checks.
# shellcheck shell=sh
. tests/e2e/lib.sh

structure() { # TRACE SUMMARY-JSON
	jq -e -n --slurpfile t "$1" --slurpfile a "$2" '
		$t[0].traceEvents as $e |
		($a | map(select(.type=="summary"))[0]) as $s |
		($e | map(select(.ph=="s") | .id) | sort) == ($e | map(select(.ph=="f") | .id) | sort) and
		($e | map(select(.ph=="b") | [.cat, .id]) | sort) == ($e | map(select(.ph=="e") | [.cat, .id]) | sort) and
		($e | map(select(.ph=="X")) | all(has("dur"))) and
		($e | all(.ph | IN("X","b","e","s","f","i","M"))) and
		# one named track per stream of the audit, named by its role
		([$e[] | select(.ph=="M" and .name=="thread_name" and .tid >= 2) | .args.name] | length) == ($s.streams | length) and
		([$e[] | select(.ph=="M" and .name=="thread_name" and .tid >= 2) | .args.name | split(" ")[0]] | sort) ==
		 ([$s.streams[] | .role] | sort) and
		([$e[] | select(.ph=="s")] | length) > 0 and
		([$e[] | select(.ph=="b" and .cat=="batch")] | length) == $s.batches and
		([$e[] | select(.ph=="i" and .cat=="verdict")] | length) == $s.untrusted and
		([$e[] | select(.ph=="i" and .cat=="evidence")] | length) > 0' >/dev/null
}

"$TOOL" --replay tests/fixtures/race_sparse_forward.rec -q -o "$TMP/r.json" --trace "$TMP/r.trace"
check "trace of a recording: exit 0" test $? = 0
check "trace: valid JSON" jq -e '.traceEvents | length > 100' "$TMP/r.trace"
check "trace: flows paired, slices closed, a track per stream named by role, markers" \
	structure "$TMP/r.trace" "$TMP/r.json"
check "trace: the untrusted batch has its marker" \
	jq -e '[.traceEvents[] | select(.ph=="i" and .cat=="verdict" and (.name | test("UNTRUSTED batch 2: sparse->forward")))] | length == 1' "$TMP/r.trace"
"$TOOL" --replay tests/fixtures/race_sparse_forward.rec -q -o /dev/null --trace "$TMP/r.trace" 2>"$TMP/exists.err"
check "trace: an existing file needs --force" sh -c "test $? = 1 && grep -q exists '$TMP/exists.err'"

if why=$(bpf_unavailable); then
	skip "live trace: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
"$SIM/pipeline" --gate-signal --batches 6 --pattern simple >"$TMP/wl" 2>&1 &
wl=$!
at_exit "kill -KILL $wl 2>/dev/null"
wait_for '^ready' "$TMP/wl"
"$TOOL" -p "$wl" -q -o "$TMP/l.json" --trace "$TMP/l.trace" &
tool=$!
sleep 0.5
kill -USR1 "$wl"
wait "$tool"
check "live trace: exit 0" test $? = 0
check "live trace: structure" structure "$TMP/l.trace" "$TMP/l.json"
