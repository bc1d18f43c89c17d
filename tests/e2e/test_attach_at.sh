# End-to-end: the workload recorded once from its start, then audited as if
# the tool had attached by pid at each of its calls (--replay --attach-at N),
# against the workload's ground truth: at every attach point the batches in
# flight are skipped, every later batch is judged as in the truth (a dropped
# wait named on its batch, no healthy batch accused), and nothing else is
# audited; with two pipelines, every batch judged is as in the truth. Attaching by pid to a running job is the tool's usual mode; one
# live attach (test_audit_workload.sh) lands at one point of an iteration,
# this sweep lands at all of them. Real BPF for the recordings, root.
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "attach-point sweep: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
PROBED=$(probed_apis)

# sweep NAME STEP UPTO_PCT MATCH REPLAY_OPTS PROGRAM ARGS...: record PROGRAM
# (in $SIM) from its start, then replay it attached at records 1, 1+STEP,
# ... up to UPTO_PCT % of them, each time running MATCH, a function that
# compares $TMP/at.json with the truth $TMP/NAME.truth; sets sw_points,
# sw_bad (the attach points MATCH failed at) and sw_named (those where a
# batch was judged untrusted)
sweep() {
	sw_name=$1 sw_step=$2 sw_pct=$3 sw_match=$4 sw_opts=$5 sw_prog=$6
	shift 6
	sw_points=0 sw_bad="" sw_named=0
	rm -f "$TMP/$sw_name.rec"
	if ! "$TOOL" --record "$TMP/$sw_name.rec" -o /dev/null -- \
		"$SIM/$sw_prog" --truth "$TMP/$sw_name.truth" "$@" >"$TMP/$sw_name.out" 2>&1; then
		sw_bad="record"
		return
	fi
	# the recording's records (the summary counts the launches counted in
	# runs too): the error an attach past its end gives names them
	sw_n=$("$TOOL" --replay "$TMP/$sw_name.rec" --attach-at 1000000000 -o /dev/null 2>&1 |
		sed -n 's/.*the recording has \([0-9][0-9]*\) records.*/\1/p')
	[ -n "$sw_n" ] || sw_n=0
	sw_k=1
	while [ "$sw_k" -le $((sw_n * sw_pct / 100)) ]; do
		rm -f "$TMP/at.json"
		# shellcheck disable=SC2086 # sw_opts: zero or more options
		"$TOOL" --replay "$TMP/$sw_name.rec" --attach-at "$sw_k" $sw_opts --raw \
			-o "$TMP/at.json" 2>/dev/null
		"$sw_match" "$sw_name" || sw_bad="$sw_bad $sw_k"
		# nothing lost: a run of launches begun before the attach point
		# was never counted, as live
		jq -e -s '[.[] | select(.type == "summary")][0].lost_records == 0' "$TMP/at.json" \
			>/dev/null || sw_bad="$sw_bad $sw_k(lost)"
		jq -e -s 'any(.[]; .type == "batch" and .verdict == "untrusted")' \
			"$TMP/at.json" >/dev/null && sw_named=$((sw_named + 1))
		sw_points=$((sw_points + 1))
		sw_k=$((sw_k + sw_step))
	done
}

# the workload's matcher (tests/e2e/audit_match.jq): batches paired in copy
# order, those in flight at the attach skipped
pipeline_matches() {
	cp "$TMP/$1.truth" "$TMP/at.truth"
	audit_matches at 2>"$TMP/at.diff"
}

# sim/progs/multipipe's: each judged batch paired with the truth batch of
# its first copy (tests/e2e/attach_map.jq)
multipipe_matches() {
	test "$(jq -c -n --slurpfile t "$TMP/$1.truth" --slurpfile a "$TMP/at.json" \
		-f tests/e2e/attach_map.jq)" = "[]"
}

# agreed NAME WHAT HOW: one check that the last sweep (NAME) had at least 60
# attach points and agreed at every one, and the points it did not, for
# the log
agreed() {
	check "$2, attached at each of $sw_points calls: $3" test -z "$sw_bad" -a "$sw_points" -ge 60
	[ -z "$sw_bad" ] || echo "  $1: attached at records$sw_bad: differ from the truth" >&2
}

# to its end: attached in the drain, after the copy stream's last copy, the
# data-dist stream copying its splits between its kernels is no copy
# stream, and no batch is made of its copies (four to seven were before)
sweep td2 3 100 pipeline_matches "" pipeline --batches 12 --depth 2
agreed td2 "TorchRec depth 2, to its end" "every audit as in the truth"
check "  ...and no batch accused at any of them" test "$sw_named" = 0

# compute on the null stream, the data-dist streams created before the
# attach: only --assume-nonblocking lets a missing compute wait be judged
# (docs/usage.md); without it the batch is skipped pretrace_stream
sweep td1 3 75 pipeline_matches --assume-nonblocking pipeline --batches 12 --depth 1 --drop d_compute_wait@8
agreed td1 "TorchRec depth 1, dropped compute wait of batch 8" "as in the truth"
# batch 8's forward runs in the ninth of twelve iterations: an attach in
# the first two thirds of the sweep sees the batch whole; judged, it is
# untrusted (checked above), and it must not be skipped at them all
check "  ...the dropped wait named at $sw_named of $sw_points attach points (two in three at least)" \
	test "$sw_named" -ge $((sw_points * 50 / 75))
# --strict-attach at points of the first third past the streams' creation:
# the pipeline was found mid-run, so its fault is skipped attach_offset,
# never named, and no batch of it is judged untrusted (docs/usage.md)
st_named=0 st_bad=""
for k in 31 61 91 121 151; do
	rm -f "$TMP/strict.json"
	"$TOOL" --replay "$TMP/td1.rec" --attach-at "$k" --assume-nonblocking --strict-attach \
		-o "$TMP/strict.json" 2>/dev/null || st_bad="$st_bad $k(exit)"
	jq -e -s 'any(.[]; .type == "batch" and .verdict == "untrusted") | not' \
		"$TMP/strict.json" >/dev/null || st_bad="$st_bad $k"
	jq -e -s 'any(.[]; .type == "batch" and (.skip_reasons | index("attach_offset")) != null)' \
		"$TMP/strict.json" >/dev/null && st_named=$((st_named + 1))
done
check "--strict-attach: no batch untrusted, attached at records 31-151 of td1" test -z "$st_bad"
[ -z "$st_bad" ] || echo "  strict: untrusted at records$st_bad" >&2
check "  ...the dropped wait's batch skipped attach_offset at each of them" test "$st_named" = 5

sweep sd 2 75 pipeline_matches --assume-nonblocking pipeline --batches 12 --pattern simple \
	--drop simple_compute_wait@8
agreed sd "copy -> forward only, dropped compute wait of batch 8" "as in the truth"
check "  ...the dropped wait named at $sw_named of $sw_points attach points (two in three at least)" \
	test "$sw_named" -ge $((sw_points * 50 / 75))

# dense layers: launches counted in runs in the kernel, runs an attach
# point falls inside
# the data-dist stream's wait on the copy stream dropped for batch 6, attached
# at every call of the first batches: at the last copy of a batch, the
# first segment seen is that batch's tail, no batch size (one call of the
# sweep cut every later segment into one-copy batches before)
sweep tdd 1 45 pipeline_matches --assume-nonblocking pipeline --batches 12 --depth 1 \
	--drop b_data_dist_wait@6
agreed tdd "TorchRec depth 1, dropped data-dist wait of batch 6" "as in the truth"

sweep tml 4 100 pipeline_matches --assume-nonblocking pipeline --batches 10 --mlp-layers 12 \
	--drop a_compute_wait@5
agreed tml "launches counted in runs, to the run's end" "as in the truth, nothing lost"

# two pipelines (sim/progs/multipipe: training, and an evaluation round
# every three batches on streams destroyed and made again), NonBlocking
# streams and compute on the null stream: attached during an evaluation
# round, the evaluation's streams are learned first and training's found
# by their edges later (docs/engine.md, "Pipelines")

sweep mpc 3 100 multipipe_matches --assume-nonblocking multipipe --batches 12
agreed mpc "train + eval" "every judged batch as in the truth"
check "  ...and no batch accused at any of them" test "$sw_named" = 0
sweep mpe 3 100 multipipe_matches --assume-nonblocking multipipe --batches 12 --drop 1:2:sf
agreed mpe "train + eval, the eval's compute wait of its batch 2 dropped" "as in the truth"
check "  ...the dropped wait named at $sw_named of $sw_points attach points (one in three at least)" \
	test "$sw_named" -ge $((sw_points / 3))
sweep mpd 3 100 multipipe_matches --assume-nonblocking multipipe --batches 12 --drop 0:7:sf
agreed mpd "train + eval, training's compute wait of batch 7 dropped" "as in the truth"
check "  ...the dropped wait named at $sw_named of $sw_points attach points (one in three at least)" \
	test "$sw_named" -ge $((sw_points / 3))

# the option itself: past the last record, or without --replay
rm -f "$TMP/past.json"
"$TOOL" --replay "$TMP/sd.rec" --attach-at 1000000 -o "$TMP/past.json" 2>"$TMP/past.err"
check "--attach-at past the last record: exit 1" test $? = 1
check "  ...one line naming the record count" grep -q 'attach-at 1000000: the recording has [0-9]* records' "$TMP/past.err"
"$TOOL" --attach-at 3 -p 1 >/dev/null 2>"$TMP/noreplay.err"
check "--attach-at without --replay: a usage error (exit 2)" test $? = 2
check "  ...that names --replay" grep -q -- '--attach-at replays a recording' "$TMP/noreplay.err"
"$TOOL" --replay "$TMP/sd.rec" --attach-at 0 >/dev/null 2>"$TMP/zero.err"
check "--attach-at 0: a usage error (exit 2)" test $? = 2
