# End-to-end: probes placed past endbr64 (user/proc/placement.h) read what probes
# at the symbols read. simhip built with -fcf-protection (build/sim/cf) and,
# when their root file systems are there (scripts/rootfs.sh), the real ROCm
# 5.7.1 and 6.4.3 runtimes, run under chroot with a client built here: the
# same client traced with placement and with --no-placement, address-space
# randomization off so that both runs pass the same pointers (real BPF, root).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "placement: $why"
	exit 0
fi
CF=$SIM/cf
KC=$SIM/knowncalls
PROBED=$(probed_apis)

# the call records without what differs from run to run: time, process, thread
calls_only() { jq -c 'select(.type == "call") | del(.ts_ns, .ret_ns, .pid, .tid)' "$1"; }
# same_records A B: the same call records, and some
same_records() { [ -s "$1" ] && cmp -s "$1" "$2"; }

# traced NAME ROOT TOOL-ARGS -- CMD...: CMD (gated: "ready PID" on stdout or
# stderr) under chroot ROOT ("/" for none), the tool attached with
# --raw --no-audit -v; $TMP/NAME.json, .tool (its stderr), .out (CMD's stdout)
traced() {
	tr_name=$1 tr_root=$2
	shift 2
	tr_args=
	while [ "$1" != -- ]; do tr_args="$tr_args $1"; shift; done
	shift
	if [ "$tr_root" = / ]; then
		setarch -R "$@" >"$TMP/$tr_name.out" 2>"$TMP/$tr_name.err" &
	else
		setarch -R chroot "$tr_root" "$@" >"$TMP/$tr_name.out" 2>"$TMP/$tr_name.err" &
	fi
	tr_pid=$!
	at_exit "kill -KILL $tr_pid 2>/dev/null"
	tr_n=100
	until cat "$TMP/$tr_name.out" "$TMP/$tr_name.err" 2>/dev/null | grep -q '^ready'; do
		tr_n=$((tr_n - 1))
		[ $tr_n -gt 0 ] || { echo "  $tr_name: not ready: $(cat "$TMP/$tr_name.err")" >&2; return 1; }
		sleep 0.1
	done
	# shellcheck disable=SC2086 # tr_args: words
	"$TOOL" -p "$tr_pid" --raw --no-audit -v $tr_args -o "$TMP/$tr_name.json" 2>"$TMP/$tr_name.tool" &
	tr_tool=$!
	wait_for 'symbols attached' "$TMP/$tr_name.tool" 600 || return 1
	kill -USR1 "$tr_pid"
	wait "$tr_pid"
	wait "$tr_tool"
}

# --- simhip with -fcf-protection: every probed export placed, arguments and
# return values as the program logged them, both ways
for m in placed entry; do
	a=
	[ $m = entry ] && a=--no-placement
	traced "kc_$m" / $a -- env LD_LIBRARY_PATH="$CF:$SIM" "$KC" -g -n 2
done
n=$(jq -s '[.[] | select(.type == "attach")][0].attached' "$TMP/kc_placed.json")
check "simhip-cf: every probe placed past endbr64 ($n attached)" \
	grep -q "$n symbols attached (.*, $n placed past endbr64)" "$TMP/kc_placed.tool"
check "simhip-cf: -v says where each probe sits" \
	grep -q 'hipEventRecord at file offset 0x[0-9a-f]*+4 (endbr64; push: placed on the push, emulated)' \
	"$TMP/kc_placed.tool"
check "simhip-cf: --no-placement keeps them at the symbols" \
	sh -c "! grep -q 'placed past endbr64' '$TMP/kc_entry.tool' && grep -q '+0 (endbr64; push: single-stepped (placement off))' '$TMP/kc_entry.tool'"
check "simhip-cf, placed: every call with its logged arguments and rc" \
	same_calls "$TMP/kc_placed.out" "$TMP/kc_placed.json"
check "simhip-cf, at the symbols: every call with its logged arguments and rc" \
	same_calls "$TMP/kc_entry.out" "$TMP/kc_entry.json"
calls_only "$TMP/kc_placed.json" >"$TMP/kc_placed.calls"
calls_only "$TMP/kc_entry.json" >"$TMP/kc_entry.calls"
check "simhip-cf: placed and at-the-symbol records equal (handles returned included)" \
	same_records "$TMP/kc_placed.calls" "$TMP/kc_entry.calls"

# --- the pipeline workload on simhip-cf: the audits match the ground truth and
# do not change with placement
audit_cf() { # NAME TOOL-ARGS...
	au_name=$1
	shift
	workload_gated "$TMP/$au_name.out" --truth "$TMP/$au_name.truth" --batches 6 \
		--drop d_compute_wait@2
	"$TOOL" -p "$GATED_PID" "$@" --raw -o "$TMP/$au_name.json" 2>"$TMP/$au_name.tool" &
	au_tool=$!
	wait_for '"type":"attach".*librccl' "$TMP/$au_name.json" || return 1
	kill -USR1 "$GATED_PID"
	wait "$au_tool" || return 1
	jq -n --slurpfile t "$TMP/$au_name.truth" --slurpfile a "$TMP/$au_name.json" \
		--argjson probed "$PROBED" -f tests/e2e/audit_match.jq >"$TMP/$au_name.diff" || return 1
	[ "$(cat "$TMP/$au_name.diff")" = "[]" ] || { head -c 2000 "$TMP/$au_name.diff" >&2; return 1; }
}
verdicts() { jq -r -s '[.[] | select(.type=="batch") | "\(.batch) \(.verdict) \(.violations // [] | length)"] | join(",")' "$1"; }
export LD_LIBRARY_PATH="$CF:$SIM"
check "simhip-cf workload, placed: audits match the truth (batch 2 untrusted)" audit_cf wl_placed
check "simhip-cf workload, at the symbols: audits match the truth" audit_cf wl_entry --no-placement
check "simhip-cf workload: the same verdicts both ways" \
	test "$(verdicts "$TMP/wl_placed.json")" = "$(verdicts "$TMP/wl_entry.json")"
check "simhip-cf workload: it ran on simhip-cf, probes placed" \
	sh -c "jq -e -s '[.[] | select(.type == \"attach\" and .lib == \"libamdhip64\")][0].path | test(\"/cf/\")' '$TMP/wl_placed.json' && grep -q 'placed past endbr64' '$TMP/wl_placed.tool'"
unset LD_LIBRARY_PATH

# --- the real runtimes, each in its root file system
# NAME: the root scripts/rootfs.sh NAME builds, only when it is there already
# (the tests do not download a distribution; the bench does)
real_root() { [ -d "$B/rootfs/$1" ] && echo "$B/rootfs/$1"; }
for spec in 5.7.1:trixie:libamdhip64.so.5 6.4.3:sid:libamdhip64.so.6; do
	rel=$(echo "$spec" | cut -d: -f1) name=$(echo "$spec" | cut -d: -f2) so=$(echo "$spec" | cut -d: -f3)
	root=$(real_root "$name")
	if [ -z "$root" ] || [ ! -e "$root/usr/lib/x86_64-linux-gnu/$so" ]; then
		skip "real $rel: no root file system with $so (build it: scripts/rootfs.sh $name)"
		continue
	fi
	dir=$root/tmp/nanlog-test-$$
	mkdir -p "$dir" && cp "$B/bench/micro" "$KC" "$dir/"
	at_exit "rm -rf '$dir'"
	for m in placed entry; do
		a=
		[ $m = entry ] && a=--no-placement
		# the microbenchmark loads the release's runtime by its soname (dlopen)
		traced "r${rel}_$m" "$root" $a -- "/tmp/nanlog-test-$$/micro" -g -e -l "$so" -n 2000
	done
	n=$(jq -s '[.[] | select(.type == "attach")][0].attached' "$TMP/r${rel}_placed.json")
	p=$(sed -n "s/.*$so.*symbols attached (.*, \([0-9]*\) placed past endbr64).*/\1/p" "$TMP/r${rel}_placed.tool")
	check "real $rel: probes placed where the prologue allows (${p:-none} of $n)" test "${p:-0}" -gt 0
	calls_only "$TMP/r${rel}_placed.json" >"$TMP/r$rel.placed"
	calls_only "$TMP/r${rel}_entry.json" >"$TMP/r$rel.entry"
	check "real $rel: every call recorded both ways ($(wc -l <"$TMP/r$rel.placed") records)" \
		sh -c "[ \$(wc -l <'$TMP/r$rel.placed') -ge 2000 ] && [ \$(wc -l <'$TMP/r$rel.entry') -ge 2000 ]"
	check "real $rel: placed and at-the-symbol records equal (arguments, rc)" \
		same_records "$TMP/r$rel.placed" "$TMP/r$rel.entry"
	if [ "$so" = libamdhip64.so.5 ]; then
		for m in placed entry; do
			a=
			[ $m = entry ] && a=--no-placement
			traced "k${rel}_$m" "$root" $a -- "/tmp/nanlog-test-$$/knowncalls" -g -n 2
		done
		check "real $rel, placed: knowncalls' arguments and rc as it logged them" \
			same_calls "$TMP/k${rel}_placed.out" "$TMP/k${rel}_placed.json"
		check "real $rel, at the symbols: the same" \
			same_calls "$TMP/k${rel}_entry.out" "$TMP/k${rel}_entry.json"
	fi
done
