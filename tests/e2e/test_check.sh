# --check: the exit status says whether to trust the run, and the jq
# one-liner of docs/output.md prints why. Replays of the recorded fixtures
# (no root), then live runs of the pipeline workload, started by the tool
# (-- CMD) and attached by PID (real BPF, root).
# shellcheck shell=sh
. tests/e2e/lib.sh

# --- replay: no root, no BPF
"$TOOL" --check --replay tests/fixtures/clean.rec -q -o "$TMP/clean.json" 2>"$TMP/clean.err"
check "replay clean.rec --check: exit 0" test $? = 0
check "  ...summary says evidence_valid" \
	jq -e -s '[.[] | select(.type=="summary")][0] | .evidence_valid == true and .invalid_reasons == [] and .missing_stages == []' "$TMP/clean.json"
"$TOOL" --check --replay tests/fixtures/drop_copy_sparse.rec -q -o "$TMP/drop.json" 2>"$TMP/drop.err"
check "replay drop_copy_sparse.rec --check: exit 3" test $? = 3
check "  ...the reason on the summary and nothing on stderr with -q" \
	sh -c "jq -e -s '[.[] | select(.type==\"summary\")][0].invalid_reasons == [\"untrusted_batches\"]' '$TMP/drop.json' && test ! -s '$TMP/drop.err'"
"$TOOL" --check --replay tests/fixtures/exit_mid_batch.rec -o "$TMP/exit.json" 2>"$TMP/exit.err"
check "replay exit_mid_batch.rec --check: exit 3, stderr says why" \
	sh -c "test $? = 3 && grep -q 'check: evidence not valid: skipped_batches' '$TMP/exit.err'"
"$TOOL" --replay tests/fixtures/drop_copy_sparse.rec -q -o "$TMP/nocheck.json"
check "without --check a finding is no failure: exit 0" test $? = 0
"$TOOL" --check --no-audit --replay tests/fixtures/clean.rec -q -o "$TMP/na.json" 2>"$TMP/na.err"
check "--check --no-audit: usage error (exit 2), one line" \
	sh -c "test $? = 2 && test \$(wc -l <'$TMP/na.err') = 1"

# --- the documented one-liners, taken from docs/output.md and run on real summaries
ONE=$(sed -n 's/^\(jq -r .select(.type=="summary") | "evidence_valid=.*\) out\.json$/\1/p' docs/output.md)
GATE=$(sed -n 's/^\(jq -e .select(.type=="summary") | \.evidence_valid.\) out\.json$/\1/p' docs/output.md)
check "docs/output.md has both one-liners" test -n "$ONE" -a -n "$GATE"
pid_of() { jq -r 'select(.type=="summary") | .processes[0].pid' "$1"; }
check "one-liner on clean.rec's summary" test "$(eval "$ONE" "$TMP/clean.json")" = \
	"evidence_valid=true reasons= missing_stages= | pid $(pid_of "$TMP/clean.json"): 5 batches, 5 trusted, 0 untrusted, 0 skipped"
check "one-liner on drop_copy_sparse.rec's summary" test "$(eval "$ONE" "$TMP/drop.json")" = \
	"evidence_valid=false reasons=untrusted_batches missing_stages= | pid $(pid_of "$TMP/drop.json"): 5 batches, 4 trusted, 1 untrusted, 0 skipped"
check "gate one-liner: exit 0 on clean" sh -c "$GATE '$TMP/clean.json' >/dev/null"
check "gate one-liner: exit 1 on drop_copy_sparse" sh -c "! $GATE '$TMP/drop.json' >/dev/null"

# --- live: real probes
if why=$(bpf_unavailable); then
	skip "live --check runs: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"

# live NAME ARGS...: the tool starts the workload (cmd_NAME.*); LIVE_RC: its status
live() {
	name=$1
	shift
	"$TOOL" --check -o "$TMP/cmd_$name.json" -- "$SIM/pipeline" "$@" >"$TMP/cmd_$name.out" 2>"$TMP/cmd_$name.err"
	LIVE_RC=$?
}

live clean --batches 6
check "-- pipeline, clean: exit 0" test $LIVE_RC = 0
check "  ...evidence_valid, 6 trusted batches" \
	jq -e -s '[.[] | select(.type=="summary")][0] | .evidence_valid and .trusted == 6' "$TMP/cmd_clean.json"
# the CI smoke run of docs/usage.md: a step limit over a longer dataloader
live steps --batches 10 --steps 6 --mlp-layers 8
check "-- pipeline --steps 6 of 10 batches: exit 0" test $LIVE_RC = 0
check "  ...the two prefetched batches skipped not_consumed, the evidence valid" \
	jq -e -s '[.[] | select(.type=="summary")][0] | .evidence_valid and .trusted == 6 and .skipped == 2 and .skip_reasons.not_consumed == 2' "$TMP/cmd_steps.json"
live steps_drop --batches 10 --steps 6 --drop b_data_dist_wait@6
check "-- pipeline --steps, a prefetched batch's sparse stage unordered: exit 3" test $LIVE_RC = 3
live drop --batches 6 --drop b_data_dist_wait@2
check "-- pipeline, dropped data-dist wait: exit 3" test $LIVE_RC = 3
check "  ...untrusted_batches named on stderr" grep -q 'evidence not valid: untrusted_batches' "$TMP/cmd_drop.err"
live simple_drop --pattern simple --batches 6 --drop simple_compute_wait@2
check "-- pipeline, simple loop, dropped compute wait: exit 3" test $LIVE_RC = 3
live exit --batches 6 --exit-at 3
check "-- pipeline that fails (_exit(3) in batch 3): exit 4, the command's failure first" \
	test $LIVE_RC = 4
check "  ...stderr gives its status" grep -q 'check: .*pipeline exited with status 3' "$TMP/cmd_exit.err"
check "  ...and the summary still says the evidence is not valid" \
	jq -e -s '[.[] | select(.type=="summary")][0] | .evidence_valid == false' "$TMP/cmd_exit.json"
"$TOOL" --check -q -o "$TMP/true.json" -- true
check "-- a command without HIP work: no batches, exit 3" \
	sh -c "test $? = 3 && jq -e -s '[.[] | select(.type==\"summary\")][0].invalid_reasons == [\"no_batches\"]' '$TMP/true.json'"

# -p: attached to a gated workload that then runs to its end
attach_check() { # NAME WORKLOAD-ARGS...: LIVE_RC the tool's exit status
	name=$1
	shift
	workload_gated "$TMP/$name.wl" "$@"
	"$TOOL" --check -p "$GATED_PID" -q -o "$TMP/$name.json" 2>"$TMP/$name.err" &
	tool=$!
	wait_for '"type":"attach".*librccl' "$TMP/$name.json"
	kill -USR1 "$GATED_PID"
	wait "$tool"
	LIVE_RC=$?
}
attach_check p_clean --batches 6
check "-p, clean: exit 0" test $LIVE_RC = 0
attach_check p_drop --batches 6 --drop d_compute_wait@2
check "-p, dropped compute wait: exit 3" test $LIVE_RC = 3
check "  ...sparse->forward on the summary" \
	jq -e -s '[.[] | select(.type=="summary")][0] | .missing_edges["sparse->forward"] == 1 and .invalid_reasons == ["untrusted_batches"]' "$TMP/p_drop.json"
