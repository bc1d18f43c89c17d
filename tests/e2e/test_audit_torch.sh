# End-to-end: the workload with PyTorch's own calls (--torch: record_stream
# events, loss.item(), per-thread default stream launches, per-iteration
# timing events, the dense part captured once and replayed as a graph),
# clean and in every fault scenario, audited through real BPF and compared
# with the workload's ground truth (docs/workload.md, docs/engine.md "Graphs").
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "torch workload audits: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
PROBED=$(probed_apis)

# audit (lib.sh) with --torch
taudit() {
	n=$1
	shift
	audit "$n" --torch "$@"
}

calls_match() { # NAME
	jq -n --slurpfile t "$TMP/$1.truth" --slurpfile g "$TMP/$1.json" --argjson probed "$PROBED" \
		-f tests/e2e/calls_match.jq >"$TMP/$1.calls" || return 1
	r=$(cat "$TMP/$1.calls")
	[ "$r" = "[]" ] || { echo "  $r" | head -c 2000 >&2; return 1; }
}

check "clean, depth 2: audits match the truth" taudit clean --batches 8
check "  ...every batch judged, none skipped graph_capture" \
	jq -e -s '[.[] | select(.type=="batch")] | length == 8 and all(.verdict == "trusted")' \
	"$TMP/clean.json"
check "  ...the graph was captured once and replayed on the compute stream every iteration after" \
	jq -e -s '([.[] | select(.type=="call" and .api=="hipStreamEndCapture")] | length == 1) and
		([.[] | select(.type=="call" and .api=="hipGraphLaunch" and .stream=="0x0")] | length == 7)' \
	"$TMP/clean.json"
check "  ...the graph and exec handles traced as the workload made them" jq -e -n \
	--slurpfile t "$TMP/clean.truth" --slurpfile a "$TMP/clean.json" '
	def g($x; $api): [$x[] | select(.type=="call" and .api==$api) | {graph, exec}];
	g($t; "hipStreamEndCapture") == g($a; "hipStreamEndCapture") and
	g($t; "hipGraphInstantiateWithFlags") == g($a; "hipGraphInstantiateWithFlags") and
	g($t; "hipGraphLaunch") == g($a; "hipGraphLaunch") and
	(g($t; "hipGraphLaunch") | length) == 7'
check "  ...every call of the truth traced once, in order, with its arguments (graph, exec)" \
	calls_match clean
check "  ...per-thread default stream launches traced" \
	jq -e -s '[.[] | select(.type=="call" and .api=="hipLaunchKernel_spt")] | length == 8' \
	"$TMP/clean.json"
check "depth 1: audits match the truth" taudit depth1 --depth 1 --batches 6

check "dropped b_data_dist_wait@3: batch 3 untrusted copy->sparse" \
	taudit drop_b --batches 7 --drop b_data_dist_wait@3
check "dropped d_compute_wait@2: batch 2 untrusted sparse->forward" \
	taudit drop_d --batches 6 --drop d_compute_wait@2
check "dropped d_compute_wait@1 (the iteration that captures the graph)" \
	taudit drop_d1 --batches 5 --drop d_compute_wait@1
check "dropped a_compute_wait@2 (redundant): no cry of wolf" \
	taudit drop_a --batches 6 --drop a_compute_wait@2
check "dropped wait at batch 0 (during fill_pipeline)" \
	taudit drop_b0 --batches 5 --drop b_data_dist_wait@0
check "stalled copy producer: verdicts unchanged" taudit stall_copy --batches 6 --stall copy@2:30
check "stalled sparse producer: verdicts unchanged" \
	taudit stall_sparse --batches 6 --stall sparse@2:30
check "stall + dropped necessary wait: untrusted" \
	taudit race --batches 6 --stall sparse@3:40 --drop d_compute_wait@3
check "  ...the race was real (content check failed on batch 3)" \
	jq -e -s '[.[] | select(.type=="batch" and .batch==3)][0].content_ok == false' "$TMP/race.truth"
check "stall + dropped copy wait: untrusted" \
	taudit race_b --batches 6 --stall copy@3:40 --drop b_data_dist_wait@3
check "stall + dropped redundant wait: trusted" \
	taudit race_a --batches 6 --stall sparse@3:40 --drop a_compute_wait@3
check "abrupt exit in batch 3: in-flight batches skipped target_exited" \
	taudit exit --batches 7 --exit-at 3
check "  ...none of them trusted" \
	jq -e -s '[.[] | select(.type=="batch" and .batch >= 3)] | all(.verdict == "skipped")' \
	"$TMP/exit.json"
