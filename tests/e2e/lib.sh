# Shared helpers for the end-to-end tests (sourced, POSIX sh).
# Each check prints exactly one of PASS:/FAIL:/SKIP: lines, counted by run.sh.
B=${B:-build}
TOOL=$B/nanlog-bpf
SIM=$B/sim
TMP=$(mktemp -d)
cleanup_hooks=""
at_exit() { cleanup_hooks="$1; $cleanup_hooks"; }
trap 'eval "$cleanup_hooks"; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
skip() { echo "SKIP: $*"; }
check() { # check NAME CMD...
	check_name=$1
	shift
	if "$@" >/dev/null; then pass "$check_name"; else fail "$check_name"; fi
}

# Real BPF needs root, BTF and uprobes; say why when it is not there.
bpf_unavailable() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 0; }
	[ -r /sys/kernel/btf/vmlinux ] || { echo "kernel without BTF"; return 0; }
	[ -e /sys/bus/event_source/devices/uprobe ] || { echo "kernel without uprobes"; return 0; }
	return 1
}

# wait_for PATTERN FILE [TENTHS]: until grep finds PATTERN in FILE (default 10 s)
wait_for() {
	wf_n=${3:-100}
	while [ "$wf_n" -gt 0 ]; do
		grep -q -- "$1" "$2" 2>/dev/null && return 0
		sleep 0.1
		wf_n=$((wf_n - 1))
	done
	echo "  timed out waiting for '$1' in $2" >&2
	return 1
}

# start_gated OUT ERR CMD...: start a program that prints "ready PID" on
# stderr and waits for SIGUSR1; GATED_PID is its pid once it is ready.
start_gated() {
	o=$1 e=$2
	shift 2
	"$@" >"$o" 2>"$e" &
	GATED_PID=$!
	at_exit "kill -KILL $GATED_PID 2>/dev/null"
	wait_for '^ready' "$e"
}

# workload_gated OUT ARGS...: the pipeline workload, held at its gate; it
# prints "ready PID" on stdout. GATED_PID is its pid once it is ready.
workload_gated() {
	wg_o=$1
	shift
	"$SIM/pipeline" --gate-signal "$@" >"$wg_o" 2>&1 &
	GATED_PID=$!
	at_exit "kill -KILL $GATED_PID 2>/dev/null"
	wait_for '^ready' "$wg_o"
}

# same_calls LOG TRACE: a program's own log of its calls (one JSON object a
# call) against the tracer's call records: same count, same order, every
# logged key equal (rc only where a return probe ran)
same_calls() {
	jq -e -n --slurpfile e "$1" --slurpfile g "$2" '
		($g | map(select(.type == "call"))) as $c |
		($e | length) == ($c | length) and
		([range(0; $e | length) as $i | $e[$i] as $x | $c[$i] as $y |
		  ($x | to_entries | all(.key as $k | .value as $v |
			if $k == "rc" and ($y | has("rc") | not) then true
			else $y[$k] == $v end))] | all)' >/dev/null
}

# probed_apis: the API names of the tool's table, as a JSON array
probed_apis() {
	"$TOOL" --version -v | awk '/^  (hip|nccl)[A-Za-z_]* /{print $1}' | jq -R . | jq -sc .
}

# audit NAME WORKLOAD-ARGS...: the pipeline workload held at its gate with
# its truth in $TMP/NAME.truth, the tool attached by PID (extra words in
# TOOL_ARGS) writing $TMP/NAME.json, then audit_matches NAME. Needs PROBED.
audit() {
	name=$1
	shift
	workload_gated "$TMP/$name.out" --truth "$TMP/$name.truth" "$@"
	# shellcheck disable=SC2086 # TOOL_ARGS: words for the tool
	"$TOOL" -p "$GATED_PID" ${TOOL_ARGS:-} --raw -o "$TMP/$name.json" 2>"$TMP/$name.tool" &
	tool=$!
	wait_for '"type":"attach".*librccl' "$TMP/$name.json"
	kill -USR1 "$GATED_PID"
	wait "$tool"
	rc=$?
	[ $rc = 0 ] || { echo "  tool exit $rc: $(cat "$TMP/$name.tool")" >&2; return 1; }
	audit_matches "$name"
}

# audit_matches NAME: the audits agree with the truth (audit_match.jq), or
# the first differences on stderr
audit_matches() {
	jq -n --slurpfile t "$TMP/$1.truth" --slurpfile a "$TMP/$1.json" --argjson probed "$PROBED" \
		-f tests/e2e/audit_match.jq >"$TMP/$1.diff" || return 1
	r=$(cat "$TMP/$1.diff")
	[ "$r" = "[]" ] || { echo "  $r" | head -c 3000 >&2; return 1; }
}
