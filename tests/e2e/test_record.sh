# End-to-end: --record on a live run, --replay offline (real BPF for the
# recording; the replays run without privilege).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "record/replay: $why"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"

live() { # NAME TOOL-ARGS... -- WORKLOAD-ARGS...
	name=$1
	shift
	targs=""
	while [ "$1" != "--" ]; do targs="$targs $1"; shift; done
	shift
	"$SIM/pipeline" --gate-signal "$@" >"$TMP/$name.wl" 2>&1 &
	wl=$!
	at_exit "kill -KILL $wl 2>/dev/null"
	wait_for '^ready' "$TMP/$name.wl"
	# shellcheck disable=SC2086
	"$TOOL" -p "$wl" $targs 2>"$TMP/$name.tool" &
	tool=$!
	sleep 0.5
	kill -USR1 "$wl"
	wait "$tool"
}

live a --raw --record "$TMP/a.rec" -o "$TMP/a.json" -- --batches 8 --drop d_compute_wait@3
check "live run with --record: exit 0" test $? = 0
"$TOOL" --replay "$TMP/a.rec" --raw -o "$TMP/a.replay" 2>/dev/null
check "replay: exit 0" test $? = 0
check "replay: byte-identical audits, raw calls and summary" cmp "$TMP/a.json" "$TMP/a.replay"
check "replay: the untrusted batch is there" \
	jq -e -s '[.[] | select(.type=="batch" and .verdict=="untrusted")] | length == 1' "$TMP/a.replay"
"$TOOL" --replay "$TMP/a.rec" --format table >"$TMP/a.table" 2>/dev/null
check "replay: table format" grep -q 'untrusted' "$TMP/a.table"
chmod 0644 "$TMP/a.rec"
chmod 0755 "$TMP"
if command -v setpriv >/dev/null; then
	check "replay needs no privilege" sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all --bounding-set=-all '$TOOL' --replay '$TMP/a.rec' 2>/dev/null | \
		jq -e -s '.[-1].type == \"summary\"' >/dev/null"
fi

# damaged recordings: one line naming the offset, exit 1, never a crash
size=$(stat -c %s "$TMP/a.rec")
for cut in 3 40 300 $((size / 2)) $((size - 10)); do
	head -c "$cut" "$TMP/a.rec" >"$TMP/cut.rec"
	"$TOOL" --replay "$TMP/cut.rec" -o "$TMP/cut.json" --force 2>"$TMP/cut.err"
	rc=$?
	check "recording cut at $cut bytes: exit 1 with the offset" \
		sh -c "test $rc = 1 && grep -q 'offset\|not a nanlog-bpf recording\|truncated' '$TMP/cut.err'"
done
cp "$TMP/a.rec" "$TMP/flip.rec"
printf '\377' | dd of="$TMP/flip.rec" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$TOOL" --replay "$TMP/flip.rec" -o "$TMP/flip.json" --force 2>"$TMP/flip.err"
check "a flipped byte: checksum error naming the offset, exit 1" \
	sh -c "test $? = 1 && grep -q 'offset' '$TMP/flip.err'"
printf 'not a recording' >"$TMP/junk.rec"
"$TOOL" --replay "$TMP/junk.rec" 2>"$TMP/junk.err"
check "not a recording: exit 1, one line" sh -c "test $? = 1 && test \$(wc -l <'$TMP/junk.err') = 1"
"$TOOL" --replay "$TMP/missing.rec" 2>"$TMP/miss.err"
check "missing recording: exit 1, one line" sh -c "test $? = 1 && test \$(wc -l <'$TMP/miss.err') = 1"

# the recorder SIGKILLed: what was flushed still replays
"$SIM/pipeline" --batches 60 --iter-sleep-ms 20 >"$TMP/k.wl" 2>&1 &
wl=$!
at_exit "kill -KILL $wl 2>/dev/null"
sleep 0.2
"$TOOL" -p "$wl" --record "$TMP/k.rec" -o "$TMP/k.json" 2>/dev/null &
tool=$!
sleep 1
kill -KILL "$tool"
wait "$tool" 2>/dev/null
wait "$wl"
"$TOOL" --replay "$TMP/k.rec" -o "$TMP/k.replay" 2>"$TMP/k.err"
check "recorder killed: replay says the recording has no trailer, exit 1" \
	sh -c "test $? = 1 && grep -q 'no trailer' '$TMP/k.err'"
check "recorder killed: the flushed part is audited" \
	jq -e -s '[.[] | select(.type=="batch")] | length > 5' "$TMP/k.replay"

check "--record refuses an existing file" sh -c "'$TOOL' -p 1 --record '$TMP/a.rec' 2>&1 | grep -q exists"
check "--record with --replay: usage error" sh -c "'$TOOL' --replay '$TMP/a.rec' --record '$TMP/x.rec' 2>/dev/null; test \$? = 2"

# --heartbeat: progress on stderr at the interval asked, nothing with -q
"$SIM/pipeline" --batches 40 --iter-sleep-ms 30 >"$TMP/hb.wl" 2>&1 &
wl=$!
at_exit "kill -KILL $wl 2>/dev/null"
sleep 0.1
"$TOOL" -p "$wl" --heartbeat 0.3 -o /dev/null 2>"$TMP/hb.err" &
t1=$!
"$TOOL" -p "$wl" --heartbeat 0.3 -q -o /dev/null 2>"$TMP/hbq.err" &
t2=$!
wait "$wl"
wait "$t1" "$t2"
check "--heartbeat: periodic progress lines with records and batches" \
	sh -c "test \$(grep -c 'heartbeat: .* records, .* lost, batches .* trusted' '$TMP/hb.err') -ge 2"
check "--heartbeat with -q: nothing on stderr" test ! -s "$TMP/hbq.err"
