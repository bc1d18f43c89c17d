# End-to-end: the privileges the Kubernetes manifests grant are enough, and
# each one is needed (docs/kubernetes.md, "Privileges"). The tool runs as
# root holding exactly the capabilities deploy/kubernetes/*.yaml add (read
# from the manifests), bounding set and all, under no_new_privs, with a
# read-only /sys of its own, as a container would; the workload, a root
# process with every capability like a training container, starts after it,
# as under the native sidecar's --comm. Real BPF, root; no container engine.
# shellcheck shell=sh
. tests/e2e/lib.sh

needs_namespaces "deploy capabilities" yq setpriv unshare || exit 0
export LD_LIBRARY_PATH="$SIM"

# "+bpf,+perfmon,+sys_ptrace" from the manifests' nanlog-bpf containers
manifest_caps() {
	yq -c '.. | objects | select((.image // "") | test("/nanlog-bpf:")) | .securityContext.capabilities.add' "$1" |
		jq -rs 'add | unique | map("+" + ascii_downcase) | join(",")'
}
CAPS=$(manifest_caps deploy/kubernetes/daemonset.yaml)
check "the sidecar and the agent add the same capabilities ($CAPS)" \
	test "$(manifest_caps deploy/kubernetes/sidecar.yaml)" = "$CAPS"

# A name no other process has: --comm must find only this test's workload.
NAME=nlcap$$
ln -s "$(pwd)/$SIM/pipeline" "$TMP/$NAME"

# contained CAPS NAME ARGS...: the tool in a container-like privilege set
contained() {
	cn_caps=$1 cn_name=$2
	shift 2
	unshare --mount --propagation private sh -c 'mount -o remount,bind,ro /sys && exec "$@"' sh \
		setpriv --bounding-set "-all,$cn_caps" --inh-caps "-all,$cn_caps" --no-new-privs \
		"$TOOL" --comm "$NAME" "$@" >"$TMP/$cn_name.json" 2>"$TMP/$cn_name.err"
}

# run CAPS NAME: the tool waits, the workload starts a second later
run() {
	contained "$1" "$2" -v --metrics 127.0.0.1:0 --duration 5 &
	rn_tool=$!
	at_exit "kill -KILL $rn_tool 2>/dev/null"
	sleep 1
	"$TMP/$NAME" --batches 40 --iter-sleep-ms 20 >"$TMP/$2.wl" 2>&1 &
	rn_wl=$!
	at_exit "kill -KILL $rn_wl 2>/dev/null"
	wait "$rn_tool"
	RC=$?
	wait "$rn_wl"
}

run "$CAPS" ok
check "the manifests' capabilities: --comm finds the workload, exit 0" test "$RC" = 0
check "  ...it waited for the workload first" grep -q 'waiting for one' "$TMP/ok.err"
check "  ...batches audited" jq -es '[.[] | select(.type == "batch")] | length >= 20' "$TMP/ok.json"
check "  ...every record of the workload names its pid" \
	jq -es '[.[] | select(.type == "batch" or .type == "attach") | .pid | numbers] | length > 0 and (unique | length == 1)' "$TMP/ok.json"
check "  ...metrics served with these capabilities" grep -q 'metrics: serving http://127.0.0.1:' "$TMP/ok.err"
check "  ...it kept exactly those after attaching" \
	grep -q 'permitted kept for late libraries: cap_bpf,cap_perfmon,cap_sys_ptrace$' "$TMP/ok.err"
[ "$RC" = 0 ] || sed 's/^/  /' "$TMP/ok.err" | head -20

# each capability is needed: without BPF or PERFMON the tool stops at once
for c in bpf perfmon; do
	less=$(echo "$CAPS" | tr ',' '\n' | grep -v "^+$c$" | paste -sd, -)
	contained "$less" "no$c" --duration 5
	rc=$?
	check "without $c ($less): exit 1, not enough privilege" \
		sh -c "test $rc = 1 && grep -q 'not enough privilege' '$TMP/no$c.err'"
done
# without SYS_PTRACE it finds the process but may not open its libraries
run "$(echo "$CAPS" | tr ',' '\n' | grep -v '^+sys_ptrace$' | paste -sd, -)" noptrace
check "without sys_ptrace: the libraries in the target's root refused, no batch" \
	sh -c "grep -q 'Permission denied' '$TMP/noptrace.err' &&
		jq -es '[.[] | select(.type == \"batch\")] | length == 0' '$TMP/noptrace.json'"

# --- the perf-link fallback every kernel before 6.6 takes (forced here): one
# perf event a probe, which kernels carrying the fix for CVE-2025-38466 open
# for uprobes only with CAP_SYS_ADMIN; daemonset-pre66.yaml adds it
PRE66=$(manifest_caps deploy/kubernetes/daemonset-pre66.yaml)
export NANLOG_NO_UPROBE_MULTI=1
run "$CAPS" fb
if grep -q 'cannot attach probes' "$TMP/fb.err"; then
	check "perf links, the manifests' capabilities: refused, the message names CAP_SYS_ADMIN and why" \
		sh -c "grep 'cannot attach probes' '$TMP/fb.err' | grep 'Permission denied: CAP_SYS_ADMIN missing' |
			grep -q 'CVE-2025-38466' && jq -es '[.[] | select(.type == \"batch\")] | length == 0' '$TMP/fb.json'"
else
	check "perf links, the manifests' capabilities: enough on this kernel (without the CVE-2025-38466 fix)" \
		jq -es '[.[] | select(.type == "batch")] | length >= 20' "$TMP/fb.json"
fi
run "$PRE66" fb66
check "perf links, daemonset-pre66.yaml's capabilities ($PRE66): batches audited" \
	jq -es '[.[] | select(.type == "batch")] | length >= 20' "$TMP/fb66.json"
check "  ...it kept CAP_SYS_ADMIN for late libraries, as perf links need it" \
	grep -q 'permitted kept for late libraries: cap_bpf,cap_perfmon,cap_sys_ptrace,cap_sys_admin$' "$TMP/fb66.err"
unset NANLOG_NO_UPROBE_MULTI
run "$PRE66" um66
check "uprobe_multi links, daemonset-pre66.yaml's capabilities: CAP_SYS_ADMIN dropped after attach" \
	sh -c "jq -es '[.[] | select(.type == \"batch\")] | length >= 20' '$TMP/um66.json' >/dev/null &&
		grep -q 'permitted kept for late libraries: cap_bpf,cap_perfmon,cap_sys_ptrace$' '$TMP/um66.err'"
