# End-to-end: the tracer attached by PID to the gated TorchRec-like workload
# sees every call of the workload's ground truth exactly once (real BPF, root).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "workload tracing: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
PROBED=$(probed_apis)

# trace NAME WORKLOAD-ARGS...: gated workload, tool attached by PID, raw calls
trace() {
	name=$1
	shift
	workload_gated "$TMP/$name.out" --truth "$TMP/$name.truth" "$@"
	"$TOOL" -p "$GATED_PID" --raw --no-audit -o "$TMP/$name.json" 2>"$TMP/$name.tool" &
	tool=$!
	wait_for '"type":"attach".*librccl' "$TMP/$name.json"
	kill -USR1 "$GATED_PID"
	wait "$tool"
}

calls_match() { # NAME
	jq -e -n --slurpfile t "$TMP/$1.truth" --slurpfile g "$TMP/$1.json" --argjson probed "$PROBED" \
		-f tests/e2e/calls_match.jq >"$TMP/$1.diff"
	r=$(cat "$TMP/$1.diff")
	[ "$r" = "[]" ] || { echo "  $r" | head -c 2000 >&2; return 1; }
}


trace clean --batches 6
check "clean run: tool exit 0" test $? = 0
check "clean run: every ground-truth call exactly once, per-thread order, arguments, rc" calls_match clean
check "clean run: calls from three threads (main, autograd, watchdog)" \
	jq -e -s '[.[] | select(.type=="call") | .tid] | unique | length >= 3' "$TMP/clean.json"
check "clean run: RCCL's own calls inside collectives marked with coll_depth" \
	jq -e -s '[.[] | select(.type=="call" and .api=="hipExtLaunchKernel" and (.coll_depth // 0) > 0)] | length > 0' "$TMP/clean.json"
check "clean run: nested RCCL exports folded, none lost" \
	jq -e -s '.[-1] | .type=="summary" and .nested_folded > 0 and .lost_records == 0' "$TMP/clean.json"

trace simple --pattern simple --batches 5
check "simple pattern: calls match" calls_match simple
trace depth1 --depth 1 --batches 5 --drop b_data_dist_wait@2 --stall copy@2:20
check "depth 1 with a dropped wait and a stall: calls match" calls_match depth1
trace exit --batches 6 --exit-at 3
check "abrupt exit: tool exits 0 once the target is gone" test $? = 0
check "abrupt exit: calls up to the exit match" calls_match exit
