# End-to-end: the container image (Dockerfile, `make image`) run for real
# with podman: --version, then as a sidecar in the PID namespace of a
# workload container, holding exactly the capabilities the manifests grant,
# auditing the pipeline workload against its ground truth; a workload
# container that dies while the sidecar attaches leaves no probes
# (docs/kubernetes.md, "What was run here"). Root, real BPF.
# shellcheck shell=sh
. tests/e2e/lib.sh
. tests/e2e/podman_lib.sh

podman_ready image || exit 0
[ -x "$TOOL" ] || { fail "image: $TOOL not built (make)"; exit 0; }
VERSION=$("$TOOL" --version | sed -n '1s/^nanlog-bpf \([^ ]*\).*/\1/p')

check "image: --version is the tool's, $VERSION" \
	sh -c "$PODMAN run --rm $PODMAN_RUN '$IMAGE' --version >'$TMP/version' &&
		head -1 '$TMP/version' | grep -qx 'nanlog-bpf $VERSION (.*)' &&
		test \"\$(head -1 '$TMP/version')\" = \"\$('$TOOL' --version | head -1)\""

# The capabilities the manifests add (both add the same; test_deploy checks),
# as podman's --cap-add list: BPF,PERFMON,SYS_PTRACE. CAP_SYS_ADMIN is not
# among them: with uprobe_multi links (Linux 6.6 and later) BPF and PERFMON
# suffice. Older kernels attach through perf links, and those carrying the
# fix for CVE-2025-38466 let only CAP_SYS_ADMIN make a uprobe there: on them
# the sidecar gets SYS_ADMIN too (docs/kubernetes.md, "Privileges").
CAPS=$(yq -c '.. | objects | select((.image // "") | test("/nanlog-bpf:")) | .securityContext.capabilities.add' \
	deploy/kubernetes/sidecar.yaml | jq -rs 'add | unique | join(",")')
if "$TOOL" --version | grep -q '^  uprobe_multi: *yes'; then
	SC_CAPS=$CAPS
else
	SC_CAPS=$CAPS,SYS_ADMIN
fi
echo "  sidecar capabilities: $SC_CAPS" >&2
check "image: the manifests add BPF, PERFMON and SYS_PTRACE" test "$CAPS" = BPF,PERFMON,SYS_PTRACE

# Seccomp: podman's default profile (containers-common) allows bpf() and
# perf_event_open() only with CAP_SYS_ADMIN, like CRI-O's: the tool fails at
# its first BPF call. The Localhost profile docs/kubernetes.md describes, the
# default with those two allowed to CAP_BPF and CAP_PERFMON, lets it run.
SECCOMP_DEFAULT=/usr/share/containers/seccomp.json
if [ -r "$SECCOMP_DEFAULT" ]; then
	$PODMAN run --rm $PODMAN_RUN --cap-drop ALL --cap-add "$SC_CAPS" --security-opt no-new-privileges \
		--read-only "$IMAGE" --comm pipeline --duration 1 >/dev/null 2>"$TMP/rtdefault.err"
	rt_rc=$?
	# does the default let bpf() through to CAP_BPF without CAP_SYS_ADMIN?
	if jq -e '[.syscalls[] | select(.action == "SCMP_ACT_ALLOW" and (.names | index("bpf")) and
		((.includes.caps // []) | index("CAP_SYS_ADMIN") | not))] | length > 0' "$SECCOMP_DEFAULT" >/dev/null; then
		check_or_show "image: podman's default seccomp profile lets the tool run (exit 0)" "$TMP/rtdefault.err" \
			test "$rt_rc" = 0
	else
		check_or_show "image: under podman's default seccomp profile (bpf() with CAP_SYS_ADMIN only), exit 1" \
			"$TMP/rtdefault.err" sh -c "test $rt_rc = 1 &&
				grep -q 'cannot load the BPF programs: Operation not permitted' '$TMP/rtdefault.err'"
	fi
	jq -f deploy/kubernetes/seccomp-bpf.jq "$SECCOMP_DEFAULT" >"$TMP/seccomp.json"
	SECCOMP="--security-opt seccomp=$TMP/seccomp.json"
else
	skip "image: no $SECCOMP_DEFAULT (Debian package golang-github-containers-common): podman's own profile"
	SECCOMP=
fi

# sidecar NAME TARGET ARGS...: the image in TARGET's PID namespace, as a
# Kubernetes pod with shareProcessNamespace and the manifests'
# securityContext runs it: every capability dropped but theirs, no_new_privs,
# read-only root, the seccomp profile above. TARGET "host": the node's PID
# namespace, as the DaemonSet's hostPID.
sidecar() {
	sc_name=$1 sc_pid=container:$N-$2
	[ "$2" = host ] && sc_pid=host
	shift 2
	podman_containers="$podman_containers $N-$sc_name"
	$PODMAN run --rm --name "$N-$sc_name" $PODMAN_RUN --pid "$sc_pid" \
		--cap-drop ALL --cap-add "$SC_CAPS" --security-opt no-new-privileges --read-only $SECCOMP \
		"$IMAGE" "$@" >"$TMP/$sc_name.json" 2>"$TMP/$sc_name.err" &
	SC_PID=$!
	at_exit "kill -KILL $SC_PID 2>/dev/null"
}
# The BPF links a process holds are the link_id of its file descriptors
# (Debian's bpftool shows no owner); listed PID...: how many of those links
# `bpftool link list` lists
link_ids() { # PID: the ids, one a line
	grep -h '^link_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un
}
listed() { # IDS (words): how many of them bpftool lists
	# shellcheck disable=SC2086 # the words of $1
	bpftool -j link list | jq --argjson ids "[$(echo $1 | tr ' ' ,)]" '[.[] | select(.id as $i | $ids | index($i))] | length'
}
host_pid() { $PODMAN inspect -f '{{.State.Pid}}' "$1" 2>/dev/null || echo 0; }

# --- the sidecar, waiting by name before the training starts, audits it.
# The workload container outlives the workload, as the pod's pause process
# does: the PID namespace ends with its first process, and every process in
# it, the sidecar too, with it.
WL_HOLD=1 workload wl --batches 30 --iter-sleep-ms 20
sidecar sc wl -v --raw --comm pipeline
if wait_for 'libamdhip64.so.5: .*symbols attached' "$TMP/sc.err" 300 &&
	wait_for '"type":"attach".*librccl' "$TMP/sc.json" 100; then
	SC_LINKS=$(link_ids "$(host_pid "$N-sc")" | tr '\n' ' ')
	n_links=$(echo $SC_LINKS | wc -w)
	check "sidecar: bpftool lists its $n_links probe links while it traces" \
		test "$n_links" -gt 0 -a "$(listed "$SC_LINKS")" = "$n_links"
	touch "$TMP/wl/go"
	wait_for . "$TMP/wl/rc" 600
	sleep 0.6
	$PODMAN kill --signal INT "$N-sc" >/dev/null
	wait "$SC_PID"
	sc_rc=$?
	WPID=$(jq -s '[.[] | select(.type == "run")][0].pid' "$TMP/wl/truth.jsonl")
	check "sidecar: the workload ran to the end (exit $(cat "$TMP/wl/rc"))" test "$(cat "$TMP/wl/rc")" = 0
	check_or_show "sidecar: exit 0 on SIGINT" "$TMP/sc.err" test "$sc_rc" = 0
	check "sidecar: it says it runs in the workload's PID namespace" \
		grep -q "in PID namespace [0-9]*: records carry its ids" "$TMP/sc.err"
	check "sidecar: 30 batches under the workload's pid in its container ($WPID)" \
		jq -e -s --argjson p "$WPID" '[.[] | select(.type=="batch")] | length == 30 and all(.pid == $p)' "$TMP/sc.json"
	jq -n --slurpfile t "$TMP/wl/truth.jsonl" --slurpfile a "$TMP/sc.json" --argjson probed "$(probed_apis)" \
		-f tests/e2e/audit_match.jq >"$TMP/sc.diff" 2>&1
	check_or_show "sidecar: every batch audited as the workload's ground truth says" "$TMP/sc.diff" \
		test "$(cat "$TMP/sc.diff")" = "[]"
	check "sidecar: records carry the workload container's id (podman)" \
		jq -e -s --arg id "$($PODMAN inspect -f '{{.Id}}' "$N-wl")" \
			'[.[] | select(.type=="batch")] | length > 0 and all(.container_id == $id)' "$TMP/sc.json"
	check "sidecar: bpftool lists none of its links once it is gone" test "$(listed "$SC_LINKS")" = 0
else
	fail "sidecar: never attached to the workload"
	sed 's/^/  /' "$TMP/sc.err" >&2
fi

# --- a workload container that exits while the image attaches to it: the
# image as the agent (host PID namespace, --container ID) goes on waiting,
# and holds no probe link
workload wl2 --batches 1000000 --iter-sleep-ms 2 --gate-timeout-ms 0
touch "$TMP/wl2/go"
sidecar ag host -v --container "$($PODMAN inspect -f '{{.Id}}' "$N-wl2")"
wait_for ': attaching to' "$TMP/ag.err" 300
AG_HOST=$(host_pid "$N-ag")
AG_LINKS=$(link_ids "$AG_HOST" | tr '\n' ' ')
$PODMAN kill "$N-wl2" >/dev/null 2>&1
AG_LINKS="$AG_LINKS $(link_ids "$AG_HOST" | tr '\n' ' ')"
$PODMAN wait "$N-wl2" >/dev/null 2>&1
sleep 1
echo "  links of the agent while it attached: $AG_LINKS" >&2
check "exit mid-attach: the agent goes on waiting" sh -c "test '$AG_HOST' -gt 0 && kill -0 $SC_PID"
check "exit mid-attach: the agent holds no link, and bpftool lists none it held" \
	test -z "$(link_ids "$AG_HOST")" -a "$(listed "$AG_LINKS")" = 0
$PODMAN kill --signal INT "$N-ag" >/dev/null 2>&1
wait "$SC_PID"
check_or_show "exit mid-attach: exit 0 on SIGINT" "$TMP/ag.err" test $? = 0
