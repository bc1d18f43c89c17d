# End-to-end: attaching to running processes with real BPF (root).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "attach tests: $why"
	exit 0
fi

KC=$SIM/knowncalls
PEEK=$B/tests/progs/peekbyte
REAL=$(ls /usr/lib/x86_64-linux-gnu/libamdhip64.so.5 2>/dev/null)


links_now() { bpftool link list 2>/dev/null | grep -c 'uprobe_multi\|perf_event'; }
BASE_LINKS=$(links_now)

# --- a real ROCm runtime without a GPU: every call fails, arguments still right
if [ -n "$REAL" ]; then
	start_gated "$TMP/kc.out" "$TMP/kc.err" env -u LD_LIBRARY_PATH "$KC" -g
	P=$GATED_PID
	"$TOOL" -p "$P" --raw --no-audit -o "$TMP/real.json" 2>"$TMP/real.err" &
	T=$!
	wait_for '"type":"attach"' "$TMP/real.json"
	check "real libamdhip64: probes in place (int3 at hipEventRecord)" \
		test "$("$PEEK" "$P" hipEventRecord)" = 0xcc
	kill -USR1 "$P"
	wait "$T"
	rc=$?
	check "real libamdhip64: tool exits 0 when the target exits" test "$rc" = 0
	check "real libamdhip64: every call captured once with its arguments, tid and rc" \
		same_calls "$TMP/kc.out" "$TMP/real.json"
	check "real libamdhip64: failing calls report the runtime's error" \
		jq -e -s '[.[] | select(.type=="call" and .api=="hipEventQuery")][0].rc == 101' "$TMP/real.json"
	check "real libamdhip64: attach record names the library and missing optional symbols" \
		jq -e -s '[.[] | select(.type=="attach")][0] | (.path | test("libamdhip64.so")) and (.missing | index("hipEventRecord_spt") != null) and .attached > 30' "$TMP/real.json"
else
	skip "real libamdhip64.so.5 not installed (package libamdhip64-5)"
fi

# --- simhip, two gated targets at once, and an untraced neighbour
export LD_LIBRARY_PATH="$SIM"
start_gated "$TMP/a.out" "$TMP/a.err" "$KC" -g -n 3
PA=$GATED_PID
start_gated "$TMP/b.out" "$TMP/b.err" "$KC" -g -n 2
PB=$GATED_PID
"$TOOL" -p "$PA" -p "$PB" --raw --no-audit -o "$TMP/two.json" 2>"$TMP/two.err" &
T=$!
wait_for '"type":"attach".*"pid":'"$PB" "$TMP/two.json"
"$KC" -n 2 >/dev/null 2>&1 # a neighbour nobody asked to trace
kill -USR1 "$PA" "$PB"
wait "$T"
check "two PIDs: tool exits 0 after both exit" test $? = 0
jq -c "select(.type==\"call\" and .pid==$PA)" "$TMP/two.json" >"$TMP/two.a"
jq -c "select(.type==\"call\" and .pid==$PB)" "$TMP/two.json" >"$TMP/two.b"
check "two PIDs: first target's calls exact" same_calls "$TMP/a.out" "$TMP/two.a"
check "two PIDs: second target's calls exact" same_calls "$TMP/b.out" "$TMP/two.b"
check "two PIDs: nothing from other processes" \
	jq -e -s "all(.[] | select(.type==\"call\"); .pid == $PA or .pid == $PB)" "$TMP/two.json"

# --- SIGKILL of the tool: no probe left, the target's output as untraced.
# The target uses a private copy of the runtime: a breakpoint in it can only
# be ours, whatever else traces the shared one on this machine.
mkdir -p "$TMP/priv"
cp "$SIM/libamdhip64.so.5" "$SIM/librccl.so.1" "$TMP/priv/"
"$KC" -n 2 2>/dev/null | jq -c 'del(.tid)' >"$TMP/untraced.out"
start_gated "$TMP/k.out" "$TMP/k.err" env LD_LIBRARY_PATH="$TMP/priv" "$KC" -g -n 2
P=$GATED_PID
"$TOOL" -p "$P" --raw --no-audit -o "$TMP/k.json" 2>/dev/null &
T=$!
wait_for '"type":"attach"' "$TMP/k.json"
before=$("$PEEK" "$P" hipEventRecord)
kill -KILL "$T"
wait "$T" 2>/dev/null
after=$("$PEEK" "$P" hipEventRecord)
check "SIGKILL: breakpoint present while attached ($before)" test "$before" = 0xcc
check "SIGKILL: breakpoint gone after the tool died ($after)" test "$after" != 0xcc
check "SIGKILL: no BPF link left" test "$(links_now)" = "$BASE_LINKS"
kill -USR1 "$P"
wait "$P"
check "SIGKILL: target exits 0" test $? = 0
jq -c 'del(.tid)' "$TMP/k.out" >"$TMP/k.cmp"
check "SIGKILL: target output identical to an untraced run" cmp -s "$TMP/untraced.out" "$TMP/k.cmp"

# --- a library loaded after attach (dlopen)
start_gated "$TMP/late.out" "$TMP/late.err" "$SIM/lateload" -g "$SIM/libamdhip64.so.5"
P=$GATED_PID
"$TOOL" -p "$P" --wait-lib --raw --no-audit -o "$TMP/late.json" 2>"$TMP/late.tool" &
T=$!
sleep 0.5
kill -USR1 "$P"
wait "$T"
check "dlopen after attach: library noticed and attached" \
	jq -e -s '[.[] | select(.type=="attach")] | length == 1' "$TMP/late.json"
check "dlopen after attach: its calls captured" same_calls "$TMP/late.out" "$TMP/late.json"
check "no HIP and no --wait-lib: refused in one line" sh -c \
	"sleep 5 & p=\$!; '$TOOL' -p \$p 2>'$TMP/nohip.err'; rc=\$?; kill \$p; test \$rc = 1 && test \$(wc -l <'$TMP/nohip.err') = 1 && grep -q 'no HIP runtime' '$TMP/nohip.err'"

# --- a target in its own mount namespace, library at a path only it can see
if unshare --mount true 2>/dev/null; then
	NS=$TMP/nsonly
	mkdir -p "$NS"
	unshare --mount --propagation private sh -c \
		"mount -t tmpfs none '$NS' && cp '$SIM/libamdhip64.so.5' '$SIM/librccl.so.1' '$NS/' && LD_LIBRARY_PATH='$NS' exec '$KC' -g" \
		>"$TMP/ns.out" 2>"$TMP/ns.err" &
	P=$!
	wait_for '^ready' "$TMP/ns.err"
	check "mount namespace: library invisible from outside" test ! -e "$NS/libamdhip64.so.5"
	"$TOOL" -p "$P" --raw --no-audit -o "$TMP/ns.json" 2>"$TMP/ns.tool" &
	T=$!
	wait_for '"type":"attach"' "$TMP/ns.json"
	kill -USR1 "$P"
	wait "$T"
	check "mount namespace: attached through /proc/PID/root" \
		jq -e -s "[.[] | select(.type==\"attach\")][0].path == \"$NS/libamdhip64.so.5\"" "$TMP/ns.json"
	check "mount namespace: calls captured" same_calls "$TMP/ns.out" "$TMP/ns.json"
else
	skip "mount namespace: unshare --mount not permitted here"
fi

# --- -- CMD mode: probes in place before the command runs
"$TOOL" --raw --no-audit -o "$TMP/cmd.json" -- "$KC" -n 2 >"$TMP/cmd.out" 2>"$TMP/cmd.err"
check "-- CMD: exit 0" test $? = 0
check "-- CMD: calls from the very first one" same_calls "$TMP/cmd.out" "$TMP/cmd.json"

# --- --duration: the tool leaves, the target goes on
start_gated "$TMP/d.out" "$TMP/d.err" "$KC" -g
P=$GATED_PID
start=$(date +%s)
"$TOOL" -p "$P" --duration 1 --no-audit -o "$TMP/d.json" 2>/dev/null
rc=$?
el=$(($(date +%s) - start))
check "--duration 1: exit 0 within 3 s" test "$rc" = 0 -a "$el" -le 3
check "--duration: target still running" kill -0 "$P"
kill -USR1 "$P"
wait "$P"
check "--duration: target finished normally" test $? = 0
check "--duration: summary written" jq -e -s '.[-1].type == "summary"' "$TMP/d.json"

# --- SIGINT: clean stop with a summary; capabilities dropped while running
start_gated "$TMP/i.out" "$TMP/i.err" env LD_LIBRARY_PATH="$TMP/priv" "$KC" -g
P=$GATED_PID
"$TOOL" -p "$P" --no-audit -v -o "$TMP/i.json" 2>"$TMP/i.tool" &
T=$!
wait_for '"type":"attach"' "$TMP/i.json"
check "capabilities: effective set empty while parsing records" \
	grep -q '^CapEff:[[:space:]]*0*$' "/proc/$T/status"
check "capabilities: permitted set reduced" \
	sh -c "! grep -q '^CapPrm:[[:space:]]*000001ffffffffff' /proc/$T/status"
check "capabilities: -v says so" grep -q 'effective set empty' "$TMP/i.tool"
kill -INT "$T"
wait "$T"
check "SIGINT: exit 0" test $? = 0
check "SIGINT: summary written" jq -e -s '.[-1].type == "summary"' "$TMP/i.json"
check "SIGINT: no probe left in the target" test "$("$PEEK" "$P" hipEventRecord)" != 0xcc
kill -USR1 "$P"
wait "$P"

# --- a seccomp-filtered target on a kernel whose return probes could kill it
start_gated "$TMP/s.out" "$TMP/s.err" "$KC" -g -s
P=$GATED_PID
check "seccomp: the target is filtered" grep -q '^Seccomp:[[:space:]]*2' "/proc/$P/status"
NANLOG_KERNEL_RELEASE=6.12.0 "$TOOL" -p "$P" --raw --no-audit -v -o "$TMP/s.json" 2>"$TMP/s.tool" &
T=$!
wait_for '"type":"attach"' "$TMP/s.json"
kill -USR1 "$P"
wait "$T"
check "seccomp on 6.11-6.13: entry probes only, and the attach record says so" \
	jq -e -s '[.[] | select(.type=="attach")][0] | .retprobes == 0 and .retprobes_allowed == false' "$TMP/s.json"
check "seccomp on 6.11-6.13: -v explains the decision" grep -q 'seccomp' "$TMP/s.tool"
check "seccomp on 6.11-6.13: calls still captured, without rc" \
	jq -e -s '[.[] | select(.type=="call")] | length == 16 and all(has("rc") | not)' "$TMP/s.json"
check "seccomp on 6.11-6.13: the target lived" test "$(wc -l <"$TMP/s.out")" = 16
start_gated "$TMP/f.out" "$TMP/f.err" "$KC" -g -s
P=$GATED_PID
NANLOG_KERNEL_RELEASE=6.12.0 "$TOOL" -p "$P" --retprobes force --raw --no-audit -o "$TMP/f.json" 2>/dev/null &
T=$!
wait_for '"type":"attach"' "$TMP/f.json"
kill -USR1 "$P"
wait "$T"
check "--retprobes force: return probes despite the policy" \
	jq -e -s '[.[] | select(.type=="attach")][0].retprobes > 0' "$TMP/f.json"

# --- bad input: one line, documented exit code, nothing left behind
one_line_error() { # CODE PATTERN CMD...
	code=$1 pat=$2
	shift 2
	"$@" >"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	[ "$rc" = "$code" ] && [ "$(wc -l <"$TMP/bad.err")" = 1 ] && grep -q "$pat" "$TMP/bad.err" ||
		{ echo "  got rc=$rc: $(cat "$TMP/bad.err")" >&2; return 1; }
}
# after the output is open, a failure also ends stdout with the JSON error line
# carrying stderr's message (docs/output.md); --format table and usage errors do not
json_error_last() {
	jq -e -s --arg m "$(sed 's/^nanlog-bpf: //' "$TMP/bad.err")" \
		'.[-1] == {type: "error", schema: 1, message: $m}' "$TMP/bad.out" >/dev/null ||
		{ echo "  stdout ends: $(tail -1 "$TMP/bad.out")" >&2; return 1; }
}
check "missing PID: exit 1, one line" one_line_error 1 "no such process" "$TOOL" -p 4194000
check "  ...stdout's last line is the JSON error" json_error_last
sleep 30 &
SP=$!
check "no HIP: exit 1, one line" one_line_error 1 "no HIP runtime" "$TOOL" -p $SP
check "  ...stdout's last line is the JSON error" json_error_last
check "no HIP, --format table: no error line on stdout" sh -c \
	"'$TOOL' -p $SP --format table >'$TMP/tbl.out' 2>/dev/null; test \$? = 1 && test ! -s '$TMP/tbl.out'"
kill $SP
check "bad flag: exit 2" one_line_error 2 "unknown option" "$TOOL" --bogus
check "  ...nothing on stdout" test ! -s "$TMP/bad.out"
check "bad PID value: exit 2" one_line_error 2 "not a process id" "$TOOL" -p 12abc
check "no target: exit 2" one_line_error 2 "no target" "$TOOL"
check "kernel without BTF: exit 1" one_line_error 1 "BTF" env NANLOG_BTF_PATH=/nonexistent "$TOOL" -p 1
check "kernel without uprobes: exit 1" one_line_error 1 "uprobes" env NANLOG_UPROBE_PMU=/nonexistent "$TOOL" -p 1
if command -v setpriv >/dev/null; then
	check "not root: exit 1" one_line_error 1 "privilege" \
		setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all "$TOOL" -p 1
else
	skip "not root: setpriv missing"
fi
: >"$TMP/exists.json"
check "existing output without --force: exit 1" one_line_error 1 "exists" "$TOOL" -p 1 -o "$TMP/exists.json"
ln -s "$TMP/exists.json" "$TMP/link.json"
check "output through a symlink: refused" one_line_error 1 "symbolic link" "$TOOL" -p 1 -o "$TMP/link.json" --force
check "no BPF link left after the failures" test "$(links_now)" = "$BASE_LINKS"
check "--version lists kernel features" sh -c "'$TOOL' --version | grep -q 'uprobes: *yes'"
# --version --format json: one line with what the text says (docs/usage.md)
version_json() {
	"$TOOL" --version --format json >"$TMP/ver.json" && [ "$(wc -l <"$TMP/ver.json")" = 1 ] &&
		jq -e --arg v "$("$TOOL" --version | sed -n '1s/^nanlog-bpf \([^ ]*\) .*/\1/p')" \
			--arg r "$(uname -r)" '.type == "version" and .schema == 1 and .version == $v and
			(.libbpf | test("^[0-9]+[.][0-9]+$")) and .record_schema == 1 and
			.kernel.release == $r and .features.uprobes == true and .features.btf == true and
			(.features | keys | length) == 6' "$TMP/ver.json" >/dev/null ||
		{ echo "  got: $(cat "$TMP/ver.json")" >&2; return 1; }
}
check "--version --format json: one line, the text's facts" version_json
check "--version --format json -v: usage error" one_line_error 2 "format json" "$TOOL" --version --format json -v

# --- kernels before 6.6: one perf link per symbol instead of uprobe_multi
start_gated "$TMP/pl.out" "$TMP/pl.err" "$KC" -g -n 2
P=$GATED_PID
NANLOG_NO_UPROBE_MULTI=1 "$TOOL" -p "$P" --raw --no-audit -v -o "$TMP/pl.json" 2>"$TMP/pl.tool" &
T=$!
wait_for '"type":"attach".*libamdhip64' "$TMP/pl.json"
kill -USR1 "$P"
wait "$T"
check "perf-link fallback: said with -v, exit 0" \
	sh -c "test $? = 0 && grep -q 'one perf link per symbol' '$TMP/pl.tool'"
check "perf-link fallback: every call captured" same_calls "$TMP/pl.out" "$TMP/pl.json"
check "perf-link fallback: no link left" test "$(links_now)" = "$BASE_LINKS"
