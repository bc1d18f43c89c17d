#!/bin/sh
# The pipeline workload on simhip: every fault scenario, its ground truth
# checked for self-consistency and for the verdicts the fault deserves
# (docs/workload.md), exit codes, the attach gates, bad options, and a clean
# failure on Debian's real libamdhip64. No BPF, no root needed.
. "$(dirname "$0")/lib.sh"

P=$SIM/pipeline
JQ=$(dirname "$0")/workload.jq
if [ ! -x "$P" ] || [ ! -e "$SIM/libamdhip64.so.5" ] || [ ! -e "$SIM/librccl.so.1" ]; then
	skip "workload: $P or the sim libraries are not built (make)"
	exit 0
fi
if ! command -v jq >/dev/null 2>&1; then
	skip "workload: jq is not installed (make deps)"
	exit 0
fi
SIMLIBS=$SIM${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
NB=8

# run NAME ARGS...: runs the workload on simhip with the truth in $TMP/NAME.jsonl;
# sets $rc.
run() {
	name=$1
	shift
	LD_LIBRARY_PATH=$SIMLIBS timeout 30 "$P" --batches $NB "$@" --truth "$TMP/$name.jsonl" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
}

# consistent NAME: the truth file parses and agrees with itself and the exit code.
consistent() {
	f=$TMP/$1.jsonl
	if ! jq -c . "$f" >/dev/null 2>"$TMP/$1.jqerr"; then
		fail "$1: truth is not valid JSON Lines: $(head -c 200 "$TMP/$1.jqerr")"
		return
	fi
	if ! jq -rs --argjson rc "$rc" -f "$JQ" "$f" >"$TMP/$1.problems" 2>&1; then
		fail "$1: $JQ failed: $(head -c 200 "$TMP/$1.problems")"
		return
	fi
	problems=$(head -5 "$TMP/$1.problems")
	if [ -n "$problems" ]; then
		fail "$1: truth inconsistent: $(echo "$problems" | tr '\n' ';')"
	else
		pass "$1: truth consistent"
	fi
}

# verdicts NAME: "0:trusted 1:untrusted[copy->sparse] 4:skipped{target_exited}"
verdicts() {
	jq -rs '[.[] | select(.type == "batch")
		| "\(.batch):\(.verdict)"
		  + (if (.missing_edges | length) > 0 then "[\(.missing_edges | join(","))]" else "" end)
		  + (if (.skip_reasons | length) > 0 then "{\(.skip_reasons | join(","))}" else "" end)]
		| join(" ")' "$TMP/$1.jsonl"
}

# expected N [K:VERDICT...]: all batches 0..N-1 trusted except those given.
expected() {
	n=$1
	shift
	out="" k=0
	while [ $k -lt "$n" ]; do
		v="$k:trusted"
		for o in "$@"; do
			case "$o" in "$k:"*) v=$o ;; esac
		done
		out="$out${out:+ }$v"
		k=$((k + 1))
	done
	echo "$out"
}

# content_false NAME: batches whose forward saw wrong data, comma separated.
content_false() {
	jq -rs '[.[] | select(.type == "batch" and .content_ok == false) | .batch] | join(",")' \
		"$TMP/$1.jsonl"
}

# dropped NAME: the dropped edges as wait@batch:necessary.
dropped() {
	jq -rs '[.[] | select(.type == "edge" and .dropped) | "\(.wait)@\(.batch):\(.necessary)"]
		| join(" ")' "$TMP/$1.jsonl"
}

# scenario NAME WANT_RC WANT_VERDICTS WANT_CONTENT_FALSE WANT_DROPPED ARGS...
# WANT_CONTENT_FALSE "any:K" means the race may or may not show on K.
scenario() {
	name=$1 want_rc=$2 want_v=$3 want_c=$4 want_d=$5
	shift 5
	run "$name" "$@"
	if [ "$rc" -ne "$want_rc" ]; then
		fail "$name: exit $rc, expected $want_rc: $(head -c 300 "$TMP/$name.err")"
		return
	fi
	pass "$name: exit $rc"
	consistent "$name"
	got=$(verdicts "$name")
	if [ "$got" = "$want_v" ]; then pass "$name: verdicts $got"
	else fail "$name: verdicts '$got', expected '$want_v'"; fi
	got=$(content_false "$name")
	case "$want_c" in
	any:*)
		case "$got" in "" | "${want_c#any:}") pass "$name: content check (race possible on ${want_c#any:}: '${got}')" ;;
		*) fail "$name: content check failed on '$got'" ;;
		esac ;;
	*)
		if [ "$got" = "$want_c" ]; then pass "$name: content check fails exactly on '$want_c'"
		else fail "$name: content check failed on '$got', expected '$want_c'"; fi ;;
	esac
	got=$(dropped "$name")
	if [ "$got" = "$want_d" ]; then pass "$name: dropped edges '$want_d'"
	else fail "$name: dropped edges '$got', expected '$want_d'"; fi
}

T=$(expected $NB)
B3() { expected $NB "3:$1"; }

scenario clean 0 "$T" "" "" --depth 2
scenario depth1 0 "$T" "" "" --depth 1
scenario simple 0 "$T" "" "" --pattern simple
scenario drop_b 0 "$(B3 'untrusted[copy->sparse]')" any:3 "b_data_dist_wait@3:true" \
	--drop b_data_dist_wait@3
scenario drop_b_depth1 0 "$(B3 'untrusted[copy->sparse]')" any:3 "b_data_dist_wait@3:true" \
	--depth 1 --drop b_data_dist_wait@3
scenario drop_d 0 "$(B3 'untrusted[sparse->forward]')" any:3 "d_compute_wait@3:true" \
	--drop d_compute_wait@3
scenario drop_a 0 "$T" "" "a_compute_wait@3:false" --drop a_compute_wait@3
scenario drop_simple 0 "$(B3 'untrusted[copy->forward]')" any:3 "simple_compute_wait@3:true" \
	--pattern simple --drop simple_compute_wait@3
scenario stall_copy 0 "$T" "" "" --stall copy@3:80
scenario stall_sparse 0 "$T" "" "" --stall sparse@3:80
# A stalled producer behind a dropped necessary wait: forward must see stale data.
scenario race_b 0 "$(B3 'untrusted[copy->sparse]')" 3 "b_data_dist_wait@3:true" \
	--drop b_data_dist_wait@3 --stall copy@3:120
scenario race_b_depth1 0 "$(B3 'untrusted[copy->sparse]')" 3 "b_data_dist_wait@3:true" \
	--depth 1 --drop b_data_dist_wait@3 --stall copy@3:120
scenario race_b_fill 0 "$(expected $NB '0:untrusted[copy->sparse]')" 0 "b_data_dist_wait@0:true" \
	--drop b_data_dist_wait@0 --stall copy@0:120
scenario race_d 0 "$(B3 'untrusted[sparse->forward]')" 3 "d_compute_wait@3:true" \
	--drop d_compute_wait@3 --stall sparse@3:120
scenario race_simple 0 "$(B3 'untrusted[copy->forward]')" 3 "simple_compute_wait@3:true" \
	--pattern simple --drop simple_compute_wait@3 --stall copy@3:120
# The same stall behind the redundant wait: nothing races, nothing is flagged.
scenario redundant_a 0 "$T" "" "a_compute_wait@3:false" \
	--drop a_compute_wait@3 --stall sparse@3:120
scenario exit_at 3 "0:trusted 1:trusted 2:trusted 3:trusted 4:skipped{target_exited} 5:skipped{target_exited} 6:skipped{target_exited}" \
	"" "" --exit-at 4
scenario exit_at_simple 3 "0:trusted 1:trusted 2:skipped{target_exited}" "" "" \
	--pattern simple --exit-at 2

# ---- the clean run, in more detail
f=$TMP/clean.jsonl
pid=$(jq -s '.[0].pid' "$f")
check "clean: every batch 0..$((NB - 1)) has a verdict" \
	[ "$(jq -s '[.[] | select(.type == "batch") | .batch] == [range(0; '$NB')]' "$f")" = true ]
check "clean: forward checked every batch" \
	[ "$(jq -s '[.[] | select(.type == "batch") | .content_ok] | all' "$f")" = true ]
check "clean: main thread is the pid, backward on another thread, watchdog on a third" \
	[ "$(jq -s --argjson pid "$pid" '
		([.[] | select(.type == "call" and .stage == "backward" and .api != "hipLaunchKernel") | .tid] | unique) as $opt
		| ([.[] | select(.type == "call" and .stage == "backward" and .api == "hipExtModuleLaunchKernel") | .tid] | unique) as $bwd
		| ([.[] | select(.type == "call" and .stage == "watchdog") | .tid] | unique) as $wd
		| ([.[] | select(.type == "call" and .stage == "copy") | .tid] | unique) == [$pid]
		  and ($bwd | length) == 1 and $bwd[0] != $pid
		  and ($wd | length) == 1 and $wd[0] != $pid and $wd[0] != $bwd[0]' "$f")" = true ]
# Batch 4's steady-state edges: M->D once, D->C at a and d, D->N and N->D for
# both all-to-alls, C->N and N->C for the output all-to-all.
check "clean: batch 4 has the section-5 edges" \
	[ "$(jq -rs '[.[] | select(.type == "edge" and .batch == 4) | "\(.step)\(.name)"] | sort | join(" ")' "$f")" = \
	  "aD->C bD->N bM->D dC->N dD->C dN->C dN->D eD->N eN->D" ]
n=$(jq -s '[.[] | select(.type == "call")] as $c
	| ($c | map(select(.batch == 4 and .step == "a")) | .[0].seq) as $s
	| ($c | map(select(.batch == 5 and .step == "a")) | .[0].seq) as $e
	| [$c[] | select(.seq >= $s and .seq < $e and .stage != "watchdog")] | length' "$f")
check "clean: one steady-state iteration makes $n HIP/RCCL calls (30..60)" [ "$n" -ge 30 -a "$n" -le 60 ]
check "clean: event handles are recycled after hipEventDestroy" \
	[ "$(jq -s '[.[] | select(.type == "call" and .api == "hipEventCreateWithFlags") | .handle]
		| length != (unique | length)' "$f")" = true ]
check "clean: the allocator records on the copy stream and only queries" \
	[ "$(jq -s '(.[] | select(.type == "streams") | .copy) as $m
		| [.[] | select(.type == "call" and .stage == "allocator" and .api == "hipEventRecord") | .stream]
		| length > 0 and all(. == $m)' "$f")" = true ]
check "clean: the watchdog only queries and times collectives" \
	[ "$(jq -s '[.[] | select(.type == "call" and .stage == "watchdog") | .api] | unique
		| . - ["hipEventQuery", "hipEventElapsedTime", "hipEventDestroy"] == []' "$f")" = true ]
check "clean: no wait ever uses an event the watchdog or allocator recorded" \
	[ "$(jq -s '[.[] | select(.type == "call" and .stage == "allocator" and .api == "hipEventRecord") | .seq] as $rs
		| [.[] | select(.type == "edge") | .record_seq] as $er
		| ($rs - $er) == $rs' "$f")" = true ]
check "exit_at: the truth ends with the end record of an abrupt exit" \
	[ "$(jq -s '.[-1] | .type == "end" and .exit == "exit_at" and .exit_code == 3' "$TMP/exit_at.jsonl")" = true ]

# ---- options
bad_option() { # NAME ARGS...: exit 2 with exactly one line on stderr
	name=$1
	shift
	LD_LIBRARY_PATH=$SIMLIBS "$P" "$@" >"$TMP/opt.out" 2>"$TMP/opt.err"
	r=$?
	if [ $r -eq 2 ] && [ "$(wc -l <"$TMP/opt.err")" -eq 1 ] && grep -q '^pipeline: ' "$TMP/opt.err" &&
		[ ! -s "$TMP/opt.out" ]; then
		pass "bad option $name: exit 2, one line"
	else
		fail "bad option $name: exit $r, stderr: $(head -c 200 "$TMP/opt.err")"
	fi
}
bad_option unknown --bogus
bad_option batches-not-a-number --batches 10abc
bad_option batches-zero --batches 0
bad_option depth-3 --depth 3
bad_option unknown-wait --drop nosuch_wait@1
bad_option drop-out-of-range --batches 4 --drop d_compute_wait@4
bad_option stall-without-ms --stall copy@1
bad_option stall-unknown-stage --stall forward@1:10
bad_option simple-wait-in-torchrec --drop simple_compute_wait@1
bad_option sparse-stall-in-simple --pattern simple --stall sparse@1:10
bad_option depth-2-simple --pattern simple --depth 2
bad_option missing-argument --batches
bad_option stray-argument 8

# ---- gates: nothing is called before the go
LD_LIBRARY_PATH=$SIMLIBS "$P" --batches 2 --gate-file "$TMP/go" --truth "$TMP/gate.jsonl" \
	>"$TMP/gate.out" 2>&1 &
gpid=$!
sleep 0.3
ncalls=$(jq -s '[.[] | select(.type == "call")] | length' "$TMP/gate.jsonl" 2>/dev/null)
check "gate-file: ready line and no call before the file exists" \
	[ "$(head -1 "$TMP/gate.out")" = "ready $gpid" -a "$ncalls" = 0 ]
touch "$TMP/go"
wait $gpid
r=$?
check "gate-file: runs once the file exists (exit $r)" [ $r -eq 0 ]

LD_LIBRARY_PATH=$SIMLIBS "$P" --batches 2 --gate-signal --truth "$TMP/sig.jsonl" \
	>"$TMP/sig.out" 2>&1 &
gpid=$!
i=0
while [ $i -lt 50 ] && ! grep -q '^ready ' "$TMP/sig.out" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
ncalls=$(jq -s '[.[] | select(.type == "call")] | length' "$TMP/sig.jsonl" 2>/dev/null)
check "gate-signal: ready line and no call before SIGUSR1" \
	[ "$(head -1 "$TMP/sig.out")" = "ready $gpid" -a "$ncalls" = 0 ]
kill -USR1 $gpid
wait $gpid
r=$?
check "gate-signal: runs after SIGUSR1 (exit $r)" [ $r -eq 0 ]

# ---- Debian's real ROCm runtime (no GPU here): first call fails, cleanly
real=$(ldconfig -p 2>/dev/null | awk '/libamdhip64\.so\.5 /{print $NF; exit}')
if [ -z "$real" ]; then
	skip "real libamdhip64: libamdhip64.so.5 not installed (make deps)"
else
	LD_LIBRARY_PATH=$(dirname "$real"):$SIMLIBS timeout 60 "$P" --truth "$TMP/real.jsonl" \
		>"$TMP/real.out" 2>"$TMP/real.err"
	r=$?
	msg=$(cat "$TMP/real.err")
	if [ $r -eq 1 ] && echo "$msg" | grep -Eq '^pipeline: hipStreamCreateWithPriority: hipError[A-Za-z]+ \([0-9]+\)$' &&
		[ "$(wc -l <"$TMP/real.err")" -eq 1 ]; then
		pass "real libamdhip64: stops at the first call: $msg"
	else
		fail "real libamdhip64: exit $r, stderr: $(head -c 300 "$TMP/real.err")"
	fi
	check "real libamdhip64: truth has the failing call and the error" \
		[ "$(jq -s '[.[] | select(.type == "call")] as $c
			| ($c | length) == 1 and $c[0].rc != 0 and .[-1].type == "error"' "$TMP/real.jsonl")" = true ]
fi
