# End-to-end: per-batch audits of the TorchRec-like workload in every fault
# scenario, compared with the workload's ground truth (real BPF, root).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "workload audits: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
PROBED=$(probed_apis)

verdicts() { # NAME: "trusted,trusted,untrusted..." from the audits
	jq -r -s '[.[] | select(.type=="batch") | .verdict] | join(",")' "$TMP/$1.json"
}

check "clean, depth 2: every batch trusted, stages attributed as in the truth" audit clean --batches 8
check "clean: pipeline depth 2 and 8 ticks measured" \
	jq -e -s '.[-1] | .depth == 2 and .pipeline_ticks >= 8 and .trusted == 8' "$TMP/clean.json"
check "clean: roles inferred (copy, two sparse, compute stream 0)" \
	jq -e -s '[.[-1].streams[] | .role] | sort == ["compute","copy","sparse","sparse"]' "$TMP/clean.json"
check "depth 1" audit depth1 --depth 1 --batches 6
check "depth 1: measured" jq -e -s '.[-1].depth == 1' "$TMP/depth1.json"
check "simple copy -> forward loop" audit simple --pattern simple --batches 6
check "simple: no sparse stage, depth 1" \
	jq -e -s '.[-1].depth == 1 and ([.[] | select(.type=="batch") | .sparse] | all(. == null or .present == false or .ops == 0))' "$TMP/simple.json"

check "dropped b_data_dist_wait@3: batch 3 untrusted copy->sparse" \
	audit drop_b --batches 7 --drop b_data_dist_wait@3
check "dropped d_compute_wait@2: batch 2 untrusted sparse->forward" \
	audit drop_d --batches 6 --drop d_compute_wait@2
check "dropped a_compute_wait@2 (redundant): no cry of wolf" \
	audit drop_a --batches 6 --drop a_compute_wait@2
check "  ...all trusted" test "$(verdicts drop_a)" = "trusted,trusted,trusted,trusted,trusted,trusted"
check "simple pattern, dropped compute wait@2: copy->forward" \
	audit drop_simple --pattern simple --batches 6 --drop simple_compute_wait@2
check "dropped wait at batch 0 (during fill_pipeline)" audit drop_b0 --batches 5 --drop b_data_dist_wait@0

check "stalled copy producer: verdicts unchanged" audit stall_copy --batches 6 --stall copy@2:30
check "stalled sparse producer: verdicts unchanged" audit stall_sparse --batches 6 --stall sparse@2:30
check "stall + dropped necessary wait: untrusted, and the workload saw the stale data" \
	audit race --batches 6 --stall sparse@3:40 --drop d_compute_wait@3
check "  ...the race was real (content check failed on batch 3)" \
	jq -e -s '[.[] | select(.type=="batch" and .batch==3)][0].content_ok == false' "$TMP/race.truth"
check "stall + dropped redundant wait: trusted" \
	audit race_a --batches 6 --stall sparse@3:40 --drop a_compute_wait@3
# a step limit over a longer dataloader: the batches prefetched for the
# steps that never came are skipped not_consumed, and the run is valid
check "--steps 6 of 8 batches: the two prefetched skipped not_consumed" \
	audit steps --batches 8 --steps 6
check "  ...and the run's evidence valid" \
	jq -e -s '.[-1] | .evidence_valid and .skip_reasons.not_consumed == 2' "$TMP/steps.json"
check "--steps, simple loop, 1 prefetched" audit steps_simple --pattern simple --batches 7 --steps 6
check "--steps, the prefetched batch 6's copy->sparse dropped: untrusted, the rest not_consumed" \
	audit steps_drop --batches 8 --steps 6 --drop b_data_dist_wait@6
check "--steps, counted launches (--mlp-layers 20)" \
	audit steps_mlp --batches 8 --steps 6 --mlp-layers 20
check "abrupt exit in batch 3: in-flight batches skipped target_exited" \
	audit exit --batches 7 --exit-at 3
check "  ...none of them trusted" \
	jq -e -s '[.[] | select(.type=="batch" and .batch >= 3)] | all(.verdict == "skipped")' "$TMP/exit.json"

# attach while the job runs: batches in flight at attach come out skipped
"$SIM/pipeline" --batches 40 --iter-sleep-ms 25 --truth "$TMP/mid.truth" >"$TMP/mid.out" 2>&1 &
P=$!
at_exit "kill -KILL $P 2>/dev/null"
sleep 0.35
"$TOOL" -p "$P" --raw -o "$TMP/mid.json" 2>"$TMP/mid.tool"
check "attach mid-run: tool exit 0" test $? = 0
check "attach mid-run: in-flight batches skipped, later ones as in the truth" audit_matches mid
# attached in the middle of a collective, the nesting depth must close again:
# only RCCL's own HIP calls may be marked as made inside a collective
check "attach mid-run: no call of the job marked as RCCL's own" \
	jq -e -s '[.[] | select(.type=="call" and (.coll_depth // 0) > 0) | .api] |
		all(IN("hipExtLaunchKernel", "hipEventCreateWithFlags", "hipEventDestroy"))' "$TMP/mid.json"
check "attach mid-run: the batches after the attach audited" \
	jq -e -s '[.[] | select(.type=="batch" and .verdict == "trusted")] | length >= 10' "$TMP/mid.json"

# attached after the job created its streams, compute on the null stream: the
# dropped compute wait of batch 30 is unordered only if the data-dist streams
# are NonBlocking, which no traced call shows (docs/usage.md): skipped
# pretrace_stream, and untrusted sparse->forward with --assume-nonblocking
# (a batch in flight at the attach, skipped attached_mid_batch, and those
# open at exit, skipped target_exited, aside)
for opt in "" --assume-nonblocking; do
	"$SIM/pipeline" --batches 40 --iter-sleep-ms 25 --drop d_compute_wait@30 \
		--truth "$TMP/pre.truth" >"$TMP/pre.out" 2>&1 &
	P=$!
	at_exit "kill -KILL $P 2>/dev/null"
	sleep 0.35
	"$TOOL" -p "$P" $opt -o "$TMP/pre$opt.json" 2>"$TMP/pre.tool"
	check "attach mid-run ${opt:-without options}: tool exit 0" test $? = 0
done
# the batches not trusted, but for the one in flight at the attach and
# those still open at exit (a run of target_exited to the end: a pipeline
# found mid-run is not judged at exit, docs/engine.md)
NOT_ASIDE='[.[] | select(.type=="batch")] as $b | [range(0; $b | length) as $i | $b[$i] |
	select(.verdict != "trusted" and (.skip_reasons | index("attached_mid_batch")) == null and
		([$b[$i:][] | .verdict == "skipped" and .skip_reasons == ["target_exited"]] | all | not))]'
check "attach mid-run, a dropped wait: skipped pretrace_stream, no batch accused" \
	jq -e -s "$NOT_ASIDE"' as $n |
		($n | length) == 1 and ($n[0].skip_reasons | index("pretrace_stream")) != null' \
	"$TMP/pre.json"
check "  ...with --assume-nonblocking: that batch alone untrusted sparse->forward" \
	jq -e -s "$NOT_ASIDE"' as $n |
		($n | length) == 1 and $n[0].verdict == "untrusted" and
		$n[0].missing_edges == ["sparse->forward"]' "$TMP/pre--assume-nonblocking.json"
# ...and with --strict-attach too: the pipeline was found mid-run, so that
# batch is skipped attach_offset, and no batch at all is untrusted
"$SIM/pipeline" --batches 40 --iter-sleep-ms 25 --drop d_compute_wait@30 \
	--truth "$TMP/pre.truth" >"$TMP/pre.out" 2>&1 &
P=$!
at_exit "kill -KILL $P 2>/dev/null"
sleep 0.35
"$TOOL" -p "$P" --assume-nonblocking --strict-attach -o "$TMP/strict.json" 2>"$TMP/pre.tool"
check "attach mid-run --strict-attach: tool exit 0" test $? = 0
check "  ...that batch alone skipped attach_offset, none untrusted" \
	jq -e -s "$NOT_ASIDE"' as $n |
		($n | length) == 1 and $n[0].skip_reasons == ["attach_offset"] and
		([.[] | select(.type == "batch" and .verdict == "untrusted")] | length) == 0' \
	"$TMP/strict.json"

check "table format fits 80 columns" sh -c "
	'$SIM/pipeline' --batches 4 --gate-signal > '$TMP/tab.out' 2>&1 & p=\$!
	while ! grep -q ready '$TMP/tab.out'; do sleep 0.05; done
	'$TOOL' -p \$p --format table -o '$TMP/tab.txt' 2>/dev/null & t=\$!
	sleep 0.5; kill -USR1 \$p; wait \$t &&
	grep -q 'trusted' '$TMP/tab.txt' && test \$(awk '{ if (length > m) m = length } END { print m }' '$TMP/tab.txt') -le 80"

# Counted launches (docs/usage.md): the dense layers are runs of launches on
# the compute stream; the kernel counts them, the audits must not change.
counted() { # NAME: launches counted in the kernel, from the tool's last line
	sed -n 's/.*(and \([0-9]*\) launches counted in the kernel), \([0-9]*\) lost$/\1 \2/p' \
		"$TMP/$1.tool"
}
calls_ops() { # NAME: launches per API and ops per batch and stage (polls and
	# the workload's pooled events come as many as the timing makes)
	jq -c -s '([.[] | select(.type=="call" and (.api | test("Launch"))) | .api] |
			group_by(.) | map([.[0], length])),
		([.[] | select(.type=="batch") | [.batch, .verdict, .copy.ops, .sparse.ops, .forward.ops]])' \
		"$TMP/$1.json"
}
check "MLP layers, launches counted in the kernel: audits match the truth" \
	audit mlp --batches 6 --mlp-layers 24 --drop d_compute_wait@3
set -- $(counted mlp)
check "  ...most launches went as counts, none lost (${1:-?} counted)" \
	test "${1:-0}" -ge 200 -a "${2:-1}" = 0
check "  ...counted launches are marked, without a kernel" jq -e -s \
	'[.[] | select(.counted)] | length > 0 and all(.api == "hipLaunchKernel" and .fn == null)' \
	"$TMP/mlp.json"
TOOL_ARGS=--every-launch
check "--every-launch: audits match the truth" \
	audit mlp_every --batches 6 --mlp-layers 24 --drop d_compute_wait@3
TOOL_ARGS=
set -- $(counted mlp_every)
check "  ...no launch counted" test "${1:-1}" = 0
calls_ops mlp >"$TMP/co.counted"
calls_ops mlp_every >"$TMP/co.every"
same() { diff "$1" "$2" >&2; } # the difference, if any, where a failure shows it
check "  ...the same launches, verdicts and op counts as with counting" \
	same "$TMP/co.counted" "$TMP/co.every"
