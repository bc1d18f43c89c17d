# End-to-end: several pipelines in one process (issue 16, section 3), on
# real probes. sim/progs/multipipe runs a train pipeline and an eval
# pipeline whose streams are created, destroyed and created again on the
# recycled handles, over one compute stream, or one pipeline copying on two
# streams in turn; its ground truth comes from its own happens-before
# (docs/workload.md, "Several pipelines"). Each run is compared with it
# pipeline by pipeline (pipes_match.jq): every batch audited once, verdicts
# and missing edges, the summary's per-pipeline counts; and one run again
# through --record and --replay.
# e2e-timeout: 90
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "multi-pipeline audits: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
PROBED=$(probed_apis)
started=$(date +%s)

# pipes NAME WORKLOAD-ARGS...: multipipe held at its gate with its truth in
# $TMP/NAME.truth, the tool attached by PID (extra words in TOOL_ARGS)
# writing $TMP/NAME.json, then the differences in $TMP/NAME.diff
pipes() {
	name=$1
	shift
	start_gated "$TMP/$name.out" "$TMP/$name.err" "$SIM/multipipe" --gate \
		--truth "$TMP/$name.truth" "$@" || return 1
	# shellcheck disable=SC2086 # TOOL_ARGS: words for the tool
	"$TOOL" -p "$GATED_PID" ${TOOL_ARGS:-} --raw -o "$TMP/$name.json" 2>"$TMP/$name.tool" &
	tool=$!
	wait_for '"type":"attach"' "$TMP/$name.json" || return 1
	kill -USR1 "$GATED_PID"
	wait "$tool"
	rc=$?
	[ $rc = 0 ] || { echo "  tool exit $rc: $(cat "$TMP/$name.tool")" >&2; return 1; }
	wait "$GATED_PID" || { echo "  multipipe: $(cat "$TMP/$name.err")" >&2; return 1; }
	jq -c -n --slurpfile t "$TMP/$name.truth" --slurpfile a "$TMP/$name.json" \
		-f tests/e2e/pipes_match.jq >"$TMP/$name.diff"
}

# agrees NAME CHECK: pipes_match.jq found nothing for CHECK, else the first
# differences on stderr
agrees() {
	d=$(jq -c --arg c "$2" '.[] | select(.check == $c)' "$TMP/$1.diff" 2>&1) || return 1
	[ -z "$d" ] || { echo "$d" | head -n 4 | cut -c1-400 >&2; return 1; }
}

# truth_untrusted NAME [PIPE:BATCH:EDGE ...]: the workload's own truth has
# exactly these untrusted batches, each missing only EDGE (a check of the
# workload, whatever the tool says)
truth_untrusted() {
	n=$1
	shift
	got=$(jq -r 'select(.type == "batch" and .verdict == "untrusted") |
		"\(.pipeline):\(.batch):\(.missing_edges | join("+"))"' "$TMP/$n.truth" | sort)
	want=$(printf '%s\n' "$@" | sed '/^$/d' | sort)
	[ "$got" = "$want" ] || { echo "  truth has: $got" >&2; return 1; }
}

# matches NAME TITLE: the three comparisons, one line each
matches() {
	check "$2: every batch of every pipeline audited once" agrees "$1" presence
	check "$2: verdicts and missing edges as the truth" agrees "$1" verdict
	check "$2: summary per-pipeline counts and live copy and sparse streams" agrees "$1" summary
}

# calls_traced NAME: every probed call the workload logged is in the tool's
# --raw output once, in order, with its arguments (calls_match.jq)
calls_traced() {
	d=$(jq -c -n --slurpfile t "$TMP/$1.truth" --slurpfile g "$TMP/$1.json" --argjson probed "$PROBED" \
		-f tests/e2e/calls_match.jq) || return 1
	[ "$d" = "[]" ] || { echo "  $d" | cut -c1-600 >&2; return 1; }
}

# train_trusted NAME: every train batch (pipeline 0) audited, all trusted
train_trusted() {
	jq -e -n --slurpfile t "$TMP/$1.truth" --slurpfile a "$TMP/$1.json" '
		($t | map(select(.type == "run"))[0].batches) as $n |
		[$a[] | select(.type == "batch" and .pipeline == 0)] |
		length == $n and all(.verdict == "trusted")'
}

# same_records NAME FILTER: the live run and its replay give the same
# records through FILTER, and some
same_records() {
	x=$(jq -c "$2" "$TMP/$1.json") && y=$(jq -c "$2" "$TMP/$1.replay") && [ -n "$x" ] && [ "$x" = "$y" ]
}

# scenario NAME TITLE 'EXPECTED UNTRUSTED' WORKLOAD-ARGS...
scenario() {
	sn=$1 st=$2 sx=$3
	shift 3
	check "$st: workload and tool ran" pipes "$sn" "$@"
	# shellcheck disable=SC2086 # the expected batches are words
	check "$st: the truth says ${sx:-no batch untrusted}" truth_untrusted "$sn" $sx
	matches "$sn" "$st"
}

# control: the train pipeline alone (no eval round), one pipeline as before
scenario one "train only, batch 3 without C's wait on D" "0:3:sparse->forward" \
	--eval-every 64 --drop 0:3:sf

# trainval: 12 train batches, an eval round of 2 batches after train batches
# 3 and 7 (eval batches 0-1, then 2-3 on the recycled handles); train
# batches 4 and 8 were prefetched before a switch and consumed after. The
# first round comes after role learning (8 hand-offs, docs/engine.md "Roles")
TV="--batches 12 --eval-every 4"
# shellcheck disable=SC2086 # TV: words
{
scenario tv "trainval clean" "" $TV
check "trainval: the second eval round got the destroyed handles back, same roles" \
	jq -e -s '[.[] | select(.type == "streams" and .pipeline == 1) | .recycled] == [null, "same"]' \
	"$TMP/tv.truth"
check "trainval: train batches 4 and 8 in flight across a switch" \
	jq -e -s '[.[] | select(.type == "batch" and .in_flight_at_switch) | [.pipeline, .batch]] == [[0, 4], [0, 8]]' \
	"$TMP/tv.truth"
check "trainval: every call of the truth traced once, in order, with its arguments" \
	calls_traced tv
check "trainval clean: evidence_valid" \
	jq -e -s '[.[] | select(.type == "summary")][0] | .evidence_valid' "$TMP/tv.json"
check "trainval clean: summary streams carry their pipeline (null for compute)" agrees tv streams

scenario tv_swap "trainval, eval handles recycled in swapped roles" "" $TV --recycle swapped
check "  ...the second eval's copy stream is the first eval's data-dist stream" \
	jq -e -s '[.[] | select(.type == "streams" and .pipeline == 1)] |
		.[1].recycled == "swapped" and .[1].copy[0] == .[0].sparse' "$TMP/tv_swap.truth"
check "  ...summary streams carry their pipeline (null for compute)" agrees tv_swap streams

scenario tv_cs4 "train batch 4 (in flight across a switch) without D's wait on M" \
	"0:4:copy->sparse" $TV --drop 0:4:cs
scenario tv_sf8 "train batch 8 (in flight across the second switch) without C's wait on D" \
	"0:8:sparse->forward" $TV --drop 0:8:sf
scenario tv_sf_e1 "eval batch 1 without C's wait on D" "1:1:sparse->forward" $TV --drop 1:1:sf
check "  ...every train batch audited and trusted: nothing charged across pipelines" \
	train_trusted tv_sf_e1
scenario tv_cs_e2 "eval batch 2 (second round, swapped handles) without D's wait on M" \
	"1:2:copy->sparse" $TV --recycle swapped --drop 1:2:cs
check "  ...every train batch audited and trusted: nothing charged across pipelines" \
	train_trusted tv_cs_e2
scenario tv_cf5 "train batch 5 without C's wait on M (redundant: D carries it)" "" $TV --drop 0:5:cf
scenario tv_two "one drop in each pipeline" "0:4:sparse->forward 1:0:copy->sparse" \
	$TV --drop 0:4:sf --drop 1:0:cs
}

# no sparse stage: one hand-off a train batch, so role learning lasts 8
# train batches; eval rounds after train batches 7 and 15 (eval batches 0-1
# and 2-3)
NS="--batches 20 --eval-every 8 --no-sparse"
# shellcheck disable=SC2086 # NS: words
{
scenario tv_ns "no sparse stage, eval batch 1 without C's wait on M" "1:1:copy->forward" \
	$NS --drop 1:1:cf
check "  ...every train batch audited and trusted: nothing charged across pipelines" \
	train_trusted tv_ns
# The last eval batch is never taken: only its forward beginning again
# without the edge tells it from a batch prefetched and left unused (skipped
# target_exited), and a counted launch carries no kernel address to show
# that restart (docs/engine.md, "Tick cadence at compute"): every launch.
TOOL_ARGS=--every-launch
scenario tv_ns_last "no sparse stage, eval batch 3 (the last eval round's last) without C's wait on M (--every-launch)" \
	"1:3:copy->forward" $NS --drop 1:3:cf
TOOL_ARGS=
}

# the workload's defaults: 8 train batches, eval rounds after train batches
# 2 and 5, the first while roles are still being learned
scenario early "eval round during role learning, clean" ""
scenario early_sf "eval round during role learning, eval batch 1 without C's wait on D" \
	"1:1:sparse->forward" --drop 1:1:sf
scenario early_ns "eval round during role learning, no sparse stage, clean" "" --no-sparse
check "  ...every train batch audited and trusted: nothing charged across pipelines" \
	train_trusted early_ns

# twocopy: batch i copied on M[i % 2]; batches 3 and 5 on M[1]
scenario tc "twocopy clean" "" --mode twocopy
check "twocopy clean: evidence_valid" \
	jq -e -s '[.[] | select(.type == "summary")][0] | .evidence_valid' "$TMP/tc.json"
check "twocopy clean: summary streams carry their pipeline (null for compute)" agrees tc streams
scenario tc_cs3 "twocopy, batch 3 (copied on M[1]) without D's wait on M" "0:3:copy->sparse" \
	--mode twocopy --drop 0:3:cs
check "  ...batch 3 was copied on M[1]" jq -e -s \
	'([.[] | select(.type == "streams")][0].copy[1]) as $m1 |
		[.[] | select(.type == "batch" and .batch == 3)][0].copy_stream == $m1' "$TMP/tc_cs3.truth"
scenario tc_ns5 "twocopy, no sparse stage, batch 5 (M[1]) without C's wait on M" \
	"0:5:copy->forward" --mode twocopy --no-sparse --drop 0:5:cf

# the same run recorded, then replayed: the same audits
TOOL_ARGS="--record $TMP/rec.rec"
# shellcheck disable=SC2086 # TV: words
check "recorded run (drops in both pipelines): workload and tool ran" \
	pipes rec $TV --drop 1:1:sf --drop 0:8:cs
TOOL_ARGS=
matches rec "recorded run"
"$TOOL" --replay "$TMP/rec.rec" --raw -o "$TMP/rec.replay" 2>"$TMP/rec.replay.err"
check "replay: exit 0" test $? = 0
check "replay: the same batch audits" same_records rec 'select(.type == "batch")'
check "replay: the same summary per process and pipeline" \
	same_records rec 'select(.type == "summary") | .processes'

took=$(($(date +%s) - started))
check "the whole test took ${took} s (under 90)" test "$took" -lt 90
