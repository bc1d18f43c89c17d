# End-to-end fault matrix (real BPF, root): what the target and the world can
# do to the tool, and what the tool must never do to the target.
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "fault matrix: $why"
	exit 0
fi
KC=$SIM/knowncalls
# a private copy of the runtime: another tracer on this machine cannot interfere
mkdir -p "$TMP/rt"
cp "$SIM/libamdhip64.so.5" "$SIM/librccl.so.1" "$TMP/rt/"
export LD_LIBRARY_PATH="$TMP/rt"

# --- the target SIGKILLed mid-batch
"$SIM/pipeline" --batches 200 --iter-sleep-ms 10 >"$TMP/kill.out" 2>&1 &
P=$!
sleep 0.2
"$TOOL" -p "$P" -o "$TMP/kill.json" 2>"$TMP/kill.err" &
T=$!
sleep 0.8
kill -KILL "$P"
wait "$T"
check "target SIGKILLed: tool exits 0" test $? = 0
check "target SIGKILLed: the batches in flight skipped target_exited, none trusted after the kill" \
	jq -e -s '[.[] | select(.type=="batch")] | length > 5 and
		(.[-1].verdict == "skipped" and (.[-1].skip_reasons | index("target_exited") != null)) and
		([.[] | select(.verdict == "untrusted")] | length == 0)' "$TMP/kill.json"

# --- forks and execs, threads that come and go
start_gated "$TMP/fork.out" "$TMP/fork.err" "$KC" -g -n 1 -t 3 -f
P=$GATED_PID
"$TOOL" -p "$P" --raw --no-audit -o "$TMP/fork.json" 2>/dev/null &
T=$!
wait_for '"type":"attach"' "$TMP/fork.json"
kill -USR1 "$P"
wait "$T"
check "threads that exit: every call of the main thread and of three short threads" \
	same_calls "$TMP/fork.out" "$TMP/fork.json"
check "threads that exit: four threads seen" \
	jq -e -s '[.[] | select(.type=="call") | .tid] | unique | length == 4' "$TMP/fork.json"
check "fork + exec: nothing from the child, which made its calls and exec'd" \
	sh -c "jq -e -s 'all(.[] | select(.type==\"call\"); .pid == $P)' '$TMP/fork.json' >/dev/null &&
		test \$(grep -c '\"api\"' '$TMP/fork.err') = 3"
timeout 20 "$KC" -n 1 -f 2>"$TMP/fork.untraced" >/dev/null
check "fork + exec: the child's results as in an untraced run" \
	sh -c "jq -c 'del(.tid)' '$TMP/fork.untraced' > '$TMP/a'; grep '\"api\"' '$TMP/fork.err' | jq -c 'del(.tid)' > '$TMP/b'; cmp -s '$TMP/a' '$TMP/b'"

# --- the runtime dlclosed and loaded again: the same file, then another copy
cp "$TMP/rt/libamdhip64.so.5" "$TMP/copy.so" 2>/dev/null
mkdir -p "$TMP/other" && cp "$TMP/rt/libamdhip64.so.5" "$TMP/other/libamdhip64.so.5"
for how in same other; do
	lib2=$TMP/rt/libamdhip64.so.5
	[ $how = other ] && lib2=$TMP/other/libamdhip64.so.5
	start_gated "$TMP/re.$how" "$TMP/re.$how.err" "$SIM/lateload" -g "$TMP/rt/libamdhip64.so.5" "$lib2"
	P=$GATED_PID
	"$TOOL" -p "$P" --wait-lib --raw --no-audit -o "$TMP/re.$how.json" 2>/dev/null &
	T=$!
	sleep 0.4
	kill -USR1 "$P"
	wait "$T"
	check "dlclose and dlopen again ($how file): every call before and after" \
		same_calls "$TMP/re.$how" "$TMP/re.$how.json"
done
check "dlopen of another copy: attached too" \
	jq -e -s '[.[] | select(.type=="attach" and .lib=="libamdhip64")] | length == 2' "$TMP/re.other.json"

# --- a PID reused by another program after the target exits
start_gated "$TMP/long.out" "$TMP/long.err" "$KC" -g -n 1
LONG=$GATED_PID
"$KC" -g -n 1 >"$TMP/short.out" 2>"$TMP/short.err" &
SHORT=$!
wait_for '^ready' "$TMP/short.err"
"$TOOL" -p "$LONG" -p "$SHORT" --raw --no-audit -o "$TMP/reuse.json" 2>/dev/null &
T=$!
wait_for "\"type\":\"attach\".*\"pid\":$SHORT" "$TMP/reuse.json"
kill -USR1 "$SHORT"
wait "$SHORT"
sleep 0.6 # the tool notices the exit at its next poll
reused=no
for try in 1 2 3 4 5; do
	echo $((SHORT - 1)) >/proc/sys/kernel/ns_last_pid 2>/dev/null || break
	"$KC" -n 1 >"$TMP/newcomer.out" 2>/dev/null &
	NEW=$!
	wait "$NEW"
	[ "$NEW" = "$SHORT" ] && reused=yes && break
done
kill -USR1 "$LONG"
wait "$T"
if [ $reused = yes ]; then
	check "PID reuse: the newcomer on the traced PID is not traced" \
		jq -e -s "[.[] | select(.type==\"call\" and .pid==$SHORT)] | length == 16" "$TMP/reuse.json"
else
	skip "PID reuse: could not get the same PID again (ns_last_pid)"
fi
check "PID reuse: the other target complete" \
	jq -e -s "[.[] | select(.type==\"call\" and .pid==$LONG)] | length == 16" "$TMP/reuse.json"

# --- a ring buffer far too small: losses counted, affected batches skipped, never wrongly judged.
# Records are compact (40 to 104 bytes for this workload's calls) and the reader is woken
# when a quarter of the ring is full, so it can keep up with the workload on its own: it is
# stopped for a moment (a reader that falls behind: a busy node) while the job keeps running.
# Dense layers make runs of launches counted in the kernel on both sides of the losses.
workload_gated "$TMP/rb.out" --batches 100 --iter-sleep-ms 0 --mlp-layers 24
"$TOOL" -p "$GATED_PID" --ringbuf-size 4096 -o "$TMP/rb.json" 2>"$TMP/rb.err" &
T=$!
wait_for '"type":"attach"' "$TMP/rb.json"
kill -USR1 "$GATED_PID"
sleep 0.05
kill -STOP "$T"
sleep 0.05
kill -CONT "$T"
wait "$T"
check "tiny ring buffer: records lost and counted" \
	jq -e -s '.[-1].lost_records > 0' "$TMP/rb.json"
check "tiny ring buffer: launches counted in the kernel" \
	grep -Eq 'and [1-9][0-9]* launches counted' "$TMP/rb.err"
check "tiny ring buffer: batches skipped lost_records" \
	jq -e -s '.[-1].skip_reasons.lost_records > 0' "$TMP/rb.json"
check "tiny ring buffer: no batch called untrusted on a stream with holes" \
	jq -e -s '.[-1].untrusted == 0' "$TMP/rb.json"
check "tiny ring buffer: stderr says once that the audit stopped, and what avoids it" \
	test "$(grep -c 'records lost (ring buffer full.*--ringbuf-size' "$TMP/rb.err")" = 1

# --- output to a full disk: a clear error, exit 1, the target unaffected
workload_gated "$TMP/full.out" --batches 6
"$TOOL" -p "$GATED_PID" --raw -o /dev/full 2>"$TMP/full.err" &
T=$!
sleep 0.5
kill -USR1 "$GATED_PID"
wait "$T"
check "/dev/full: exit 1" test $? = 1
check "/dev/full: the error says why" grep -q 'No space left on device' "$TMP/full.err"
wait "$GATED_PID"
check "/dev/full: the target finished normally" test $? = 0

# --- the target's own output and checksums, traced and untraced, in every scenario
for sc in "--batches 6" "--batches 6 --depth 1" "--pattern simple --batches 6" \
	"--batches 6 --drop d_compute_wait@2 --stall sparse@2:30" "--batches 6 --drop a_compute_wait@2" \
	"--batches 6 --drop b_data_dist_wait@3 --stall copy@3:30" "--batches 6 --exit-at 3"; do
	# shellcheck disable=SC2086
	"$SIM/pipeline" $sc --truth "$TMP/u.truth" >"$TMP/u.out" 2>&1
	urc=$?
	# shellcheck disable=SC2086
	workload_gated "$TMP/t.out" $sc --truth "$TMP/t.truth"
	"$TOOL" -p "$GATED_PID" -q -o /dev/null &
	T=$!
	sleep 0.4
	kill -USR1 "$GATED_PID"
	wait "$GATED_PID"
	trc=$?
	wait "$T"
	grep -v '^ready' "$TMP/t.out" >"$TMP/t.cmp"
	check "identical output traced and untraced: $sc" \
		sh -c "test $urc = $trc && cmp -s '$TMP/u.out' '$TMP/t.cmp' &&
			test \"\$(jq -c 'select(.type==\"batch\") | [.batch,.content_ok,.mismatches]' '$TMP/u.truth')\" = \
			     \"\$(jq -c 'select(.type==\"batch\") | [.batch,.content_ok,.mismatches]' '$TMP/t.truth')\""
done

# --- a target in its own root (chroot): library paths resolve inside that
# root, never through an absolute symbolic link to a file of the host
if command -v chroot >/dev/null && command -v ldd >/dev/null; then
	R=$TMP/root
	mkdir -p "$R/opt/rocm/lib" "$R/evil" "$R/bin" "$TMP/hostonly"
	cp "$KC" "$R/bin/knowncalls"
	cp "$SIM/libamdhip64.so.5" "$SIM/librccl.so.1" "$R/opt/rocm/lib/"
	for l in $(LD_LIBRARY_PATH="$SIM" ldd "$KC" | grep -o '/[^ ]*' | sort -u); do
		case $l in */sim/*) continue ;; esac
		mkdir -p "$R$(dirname "$l")" && cp -L "$l" "$R$l"
	done
	# inside the root this link leads nowhere; followed from the host it would
	# reach a runtime library the target never mapped
	cp "$SIM/libamdhip64.so.5" "$TMP/hostonly/libamdhip64.so.5"
	ln -s "$TMP/hostonly/libamdhip64.so.5" "$R/evil/libamdhip64.so.5"
	env LD_LIBRARY_PATH=/opt/rocm/lib chroot "$R" /bin/knowncalls -g >"$TMP/ch.out" 2>"$TMP/ch.err" &
	CH=$!
	at_exit "kill -KILL $CH 2>/dev/null"
	wait_for '^ready' "$TMP/ch.err"
	"$TOOL" -p "$CH" --lib /evil/libamdhip64.so.5 -o "$TMP/ch.json" 2>"$TMP/ch.tool"
	check "chroot: a link out of the target's root is not followed (exit 1, one line)" \
		sh -c "test $? = 1 && grep -q 'in its root' '$TMP/ch.tool'"
	"$TOOL" -p "$CH" --raw --no-audit -o "$TMP/ch2.json" 2>/dev/null &
	T=$!
	wait_for '"type":"attach"' "$TMP/ch2.json"
	kill -USR1 "$CH"
	wait "$T"
	# the kernel names a chrooted mapping by its path from the reader's root
	check "chroot: the runtime the target mapped found (by its inode) and traced" \
		jq -e -s '([.[] | select(.type=="attach")][0].path | endswith("/opt/rocm/lib/libamdhip64.so.5")) and
			([.[] | select(.type=="call")] | length == 16)' "$TMP/ch2.json"
else
	skip "chroot: chroot or ldd missing"
fi

# --- the tool SIGKILLed while the job is in the middle of probed calls
# (return probes pending in blocked synchronizations): the job goes on
"$SIM/pipeline" --batches 30 --iter-sleep-ms 5 --truth "$TMP/mk.ref.truth" >"$TMP/mk.ref" 2>&1
workload_gated "$TMP/mk.out" --batches 30 --iter-sleep-ms 5 --truth "$TMP/mk.truth"
P=$GATED_PID
"$TOOL" -p "$P" -q -o /dev/null &
T=$!
sleep 0.4
kill -USR1 "$P"
sleep 0.25
kill -KILL "$T"
wait "$T" 2>/dev/null
wait "$P"
rc=$?
grep -v '^ready' "$TMP/mk.out" >"$TMP/mk.cmp"
check "tool SIGKILLed mid-run: the job finishes, output as untraced" \
	sh -c "test $rc = 0 && cmp -s '$TMP/mk.ref' '$TMP/mk.cmp' &&
		test \"\$(jq -c 'select(.type==\"batch\") | [.batch,.content_ok]' '$TMP/mk.ref.truth')\" = \
		     \"\$(jq -c 'select(.type==\"batch\") | [.batch,.content_ok]' '$TMP/mk.truth')\""
