# End-to-end, standing in for a cluster on one machine: node-agent mode
# (--all), selection by cgroup, container and command name, workloads in
# their own PID and mount namespaces inside container-like cgroups.
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "fleet: $why"
	exit 0
fi
CGROOT=
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -f "$d/cgroup.procs" ] && [ -w "$d" ] && grep -q "^0::" /proc/self/cgroup && CGROOT=$d && break
done
if [ -z "$CGROOT" ] || ! unshare --pid --fork --mount true 2>/dev/null; then
	skip "fleet: needs a writable cgroup v2 hierarchy and PID/mount namespaces"
	exit 0
fi

CID=$(printf '%064x' $$ | tr ' ' 0)
POD=1b2c3d4e-5f60-7182-93a4-$(printf '%012x' $$)
SLICE=nanlog-e2e-$$.slice
CG=$CGROOT/$SLICE/kubepods-pod$(echo "$POD" | tr - _).slice/cri-containerd-$CID.scope
mkdir -p "$CG"
at_exit "rmdir '$CG' '$CGROOT/$SLICE/kubepods-pod$(echo "$POD" | tr - _).slice' '$CGROOT/$SLICE' 2>/dev/null"

# a "pod": own cgroup, own PID and mount namespaces, runtime at a path only it sees
pod_workload() { # OUT ARGS...
	out=$1
	shift
	NS=$TMP/nsroot.$$.$(date +%N)
	mkdir -p "$NS"
	sh -c "echo \$\$ > '$CG/cgroup.procs' && exec unshare --pid --fork --mount --propagation private \
		sh -c \"mount -t tmpfs none '$NS' && cp '$SIM/libamdhip64.so.5' '$SIM/librccl.so.1' '$NS/' && \
		LD_LIBRARY_PATH='$NS' exec '$SIM/pipeline' $*\"" >"$out" 2>&1 &
	POD_SH=$!
	at_exit "kill -KILL $POD_SH 2>/dev/null"
}

host_workload() { # OUT ARGS...
	out=$1
	shift
	LD_LIBRARY_PATH="$SIM" "$SIM/pipeline" "$@" >"$out" 2>&1 &
	HOST_WL=$!
	at_exit "kill -KILL $HOST_WL 2>/dev/null"
}

batches_of() { # FILE PID
	jq -s "[.[] | select(.type==\"batch\" and .pid==$2)]" "$1"
}

# --- node agent first, workloads after it; it outlives them
"$TOOL" --all --raw -v -o "$TMP/all.json" 2>"$TMP/all.err" &
agent=$!
at_exit "kill -KILL $agent 2>/dev/null"
sleep 0.5
# long enough that a busy machine cannot hide them between two scans
pod_workload "$TMP/pod.out" --batches 60 --iter-sleep-ms 40
host_workload "$TMP/host.out" --batches 60 --iter-sleep-ms 40
sleep 1
MEMBERS=$(cat "$CG/cgroup.procs" | tr '\n' ' ')
wait "$POD_SH"
HOST1=$HOST_WL
wait "$HOST_WL"
sleep 0.6
# one more, after the first two are gone: it is traced in a slot they gave
# back. Held at its gate until the agent attached to it: started free, its
# first batch now and then began before the agent's scan found it, and was
# rightly skipped attached_mid_batch (seen in CI by the diagnostics below)
host_workload "$TMP/host2.out" --batches 40 --iter-sleep-ms 20 --gate-signal
HOST2=$HOST_WL
wait_for "pid $HOST2: [^ ]*libamdhip64[^:]*: .*symbols attached" "$TMP/all.err" 100
kill -USR1 "$HOST2"
wait "$HOST2"
sleep 0.6
check "--all: the agent keeps running after its targets exit" kill -0 "$agent"
kill -INT "$agent"
wait "$agent"
check "--all: exit 0 on SIGINT" test $? = 0
PODPID=$(jq -r -s "[.[] | select(.type==\"call\" and .container_id==\"$CID\")][0].pid" "$TMP/all.json")
check "--all: the pod's process found in its PID namespace and attributed to its container" \
	test "$PODPID" != null
[ "$PODPID" != null ] || { echo "  pod members: $MEMBERS host: $HOST_WL" >&2; grep -E 'found|container|not traced|cannot' "$TMP/all.err" "$TMP/pod.out" >&2; }
check "--all: its runtime attached at the path only its mount namespace has" \
	jq -e -s "[.[] | select(.type==\"attach\" and .pid==$PODPID and .lib==\"libamdhip64\")][0].path | startswith(\"$TMP/nsroot\")" "$TMP/all.json"
check "--all: the pod's batches carry container_id and pod_uid" \
	sh -c "batches_of() { jq -s \"[.[] | select(.type==\\\"batch\\\" and .pid==\$2)]\" \"\$1\"; }; \
		batches_of '$TMP/all.json' $PODPID | jq -e 'length >= 30 and all(.container_id==\"$CID\" and .pod_uid==\"$POD\")'"
check "--all: the host workload attributed to its own pid, without container" \
	sh -c "jq -e -s '[.[] | select(.type==\"batch\" and .pid==$HOST1)] | length >= 30 and all(has(\"container_id\") | not)' '$TMP/all.json'"
slot_of() { sed -n "s/^.*pid $1: slot \([0-9]*\) of the targets map$/\1/p" "$TMP/all.err"; }
S2=$(slot_of "$HOST2")
check "--all: a process that came after the others exited took a slot one of them held" \
	sh -c "[ -n '$S2' ] && { [ '$S2' = '$(slot_of "$HOST1")' ] || [ '$S2' = '$(slot_of "$PODPID")' ]; }"
check "--all: that process audited, every batch trusted" \
	sh -c "jq -e -s '[.[] | select(.type==\"batch\" and .pid==$HOST2)] | length >= 20 and all(.verdict==\"trusted\")' '$TMP/all.json' && \
		jq -e -s '[.[] | select(.type==\"call\" and .pid==$HOST2)] | length > 0' '$TMP/all.json'"
# what it saw of that process, when the check above did not pass (it failed
# now and then in CI and never in local runs: the slots, the batch count and
# every verdict that was not trusted say which part)
jq -e -s "[.[] | select(.type==\"batch\" and .pid==$HOST2)] | length >= 20 and all(.verdict==\"trusted\")" \
	"$TMP/all.json" >/dev/null 2>&1 || {
	grep 'slot' "$TMP/all.err" >&2
	echo "  host1 $HOST1 pod $PODPID host2 $HOST2" >&2
	jq -c -s "[.[] | select(.type==\"batch\" and .pid==$HOST2)] | {batches: length,
		not_trusted: [.[] | select(.verdict != \"trusted\") | {batch, verdict, missing_edges, skip_reasons}]}" \
		"$TMP/all.json" >&2
	jq -c -s "[.[] | select(.type==\"call\")] | group_by(.pid) | map({pid: .[0].pid, calls: length})" \
		"$TMP/all.json" >&2
}
check "--all: the pod's batches trusted" \
	sh -c "jq -e -s '[.[] | select(.type==\"batch\" and .pid==$PODPID and .verdict != \"trusted\")] | length <= 2' '$TMP/all.json'"

# --- --cgroup and --container select the pod only; --comm waits for its process
for mode in cgroup container comm; do
	case $mode in
	cgroup) sel="--cgroup /$SLICE" ;;
	container) sel="--container $(echo "$CID" | cut -c1-12)" ;;
	comm) sel="--comm pipeline" ;;
	esac
	# shellcheck disable=SC2086
	"$TOOL" $sel -q -o "$TMP/$mode.json" &
	agent=$!
	at_exit "kill -KILL $agent 2>/dev/null"
	sleep 0.5
	pod_workload "$TMP/pod.$mode" --batches 40 --iter-sleep-ms 40
	if [ $mode != comm ]; then
		host_workload "$TMP/host.$mode" --batches 40 --iter-sleep-ms 40
	fi
	wait "$POD_SH"
	[ $mode != comm ] && wait "$HOST_WL"
	sleep 0.6
	kill -INT "$agent"
	wait "$agent"
	check "--$mode: exit 0" test $? = 0
	check "--$mode: the pod's workload audited" \
		jq -e -s "[.[] | select(.type==\"batch\" and .container_id==\"$CID\")] | length >= 20" "$TMP/$mode.json" ||
		{ cat "$TMP/pod.$mode" >&2; false; }
	if [ $mode != comm ]; then
		check "--$mode: nothing from outside the selection" \
			jq -e -s "[.[] | select(.type==\"batch\")] | all(.container_id==\"$CID\")" "$TMP/$mode.json"
	fi
done

check "bad selections: usage errors" sh -c "
	'$TOOL' --cgroup relative 2>/dev/null; a=\$?
	'$TOOL' --container xyz 2>/dev/null; b=\$?
	'$TOOL' --comm '' 2>/dev/null; c=\$?
	'$TOOL' --all -p 1 2>/dev/null; d=\$?
	test \$a = 2 -a \$b = 2 -a \$c = 2 -a \$d = 2"

# --- a sidecar as deploy/kubernetes/sidecar.yaml runs it: --comm, started
# first, in the workload's PID namespace (shareProcessNamespace), not the
# initial one: it knows the workload by that namespace's pid, and so must
# the records
unshare --pid --fork --mount-proc sh -c "
	'$TOOL' -v --raw --comm pipeline -o '$TMP/sc.json' 2>'$TMP/sc.err' &
	tp=\$!
	LD_LIBRARY_PATH='$SIM' '$SIM/pipeline' --batches 30 --iter-sleep-ms 20 --gate-signal \
		>'$TMP/sc.wl' 2>&1 &
	wp=\$!
	echo \$wp >'$TMP/sc.pid'
	n=0
	until grep -q 'libamdhip64.so.5: .*symbols attached' '$TMP/sc.err' || [ \$n -ge 300 ]; do
		sleep 0.05; n=\$((n + 1))
	done
	kill -USR1 \$wp
	wait \$wp
	sleep 0.6
	kill -INT \$tp
	wait \$tp" >/dev/null 2>&1
SCPID=$(cat "$TMP/sc.pid" 2>/dev/null || echo none)
check "sidecar: the tool says it runs in a PID namespace of its own" \
	grep -q "in PID namespace [0-9]*: records carry its ids" "$TMP/sc.err"
check "sidecar: the workload audited under its pid in the namespace, every batch trusted" \
	sh -c "jq -e -s '[.[] | select(.type==\"batch\")] | length >= 25 and all(.pid==$SCPID and .verdict==\"trusted\")' '$TMP/sc.json'"
check "sidecar: calls carry the namespace's ids (the main thread's tid is the pid)" \
	sh -c "jq -e -s '[.[] | select(.type==\"call\")] | length > 0 and all(.pid==$SCPID) and any(.tid==$SCPID)' '$TMP/sc.json'"

# --- the same selections against real containers: podman's container ids and
# cgroup paths (its cgroupfs manager: /libpod_parent/libpod-ID), next to the
# hand-made ones above
. tests/e2e/podman_lib.sh
if podman_ready "fleet, podman containers" base; then
	workload pa --batches 40 --iter-sleep-ms 20
	workload pb --batches 40 --iter-sleep-ms 20
	IDA=$($PODMAN inspect -f '{{.Id}}' "$N-pa")
	IDB=$($PODMAN inspect -f '{{.Id}}' "$N-pb")
	PA=$($PODMAN inspect -f '{{.State.Pid}}' "$N-pa")
	PB=$($PODMAN inspect -f '{{.State.Pid}}' "$N-pb")
	CGB=$($PODMAN inspect -f '{{.State.CgroupPath}}' "$N-pb")
	check "podman: a container's cgroup path (podman inspect) is the one /proc/PID/cgroup shows" \
		grep -qxF "0::$CGB" "/proc/$PB/cgroup"
	"$TOOL" --container "$(echo "$IDA" | cut -c1-12)" -o "$TMP/pc.json" 2>"$TMP/pc.err" &
	agent_c=$!
	"$TOOL" --cgroup "$CGB" -o "$TMP/pg.json" 2>"$TMP/pg.err" &
	agent_g=$!
	at_exit "kill -KILL $agent_c $agent_g 2>/dev/null"
	wait_for 'librccl.so.1: .*symbols attached' "$TMP/pc.err" 300
	wait_for 'librccl.so.1: .*symbols attached' "$TMP/pg.err" 300
	host_workload "$TMP/host.podman" --batches 40 --iter-sleep-ms 20
	touch "$TMP/pa/go" "$TMP/pb/go"
	$PODMAN wait "$N-pa" "$N-pb" >/dev/null
	wait "$HOST_WL"
	sleep 0.6
	kill -INT "$agent_c" "$agent_g"
	wait "$agent_c"
	rc_c=$?
	wait "$agent_g"
	rc_g=$?
	check "podman: --container and --cgroup exit 0" test "$rc_c$rc_g" = 00
	check "podman: --container ID-PREFIX: all of that container's batches, with its id and host pid, trusted" \
		jq -e -s --arg id "$IDA" --argjson pid "$PA" \
			'[.[] | select(.type=="batch")] | length == 40 and all(.container_id == $id and .pid == $pid and .verdict == "trusted")' \
			"$TMP/pc.json"
	check "podman: --cgroup PATH: all of that container's batches, with its id and host pid, trusted" \
		jq -e -s --arg id "$IDB" --argjson pid "$PB" \
			'[.[] | select(.type=="batch")] | length == 40 and all(.container_id == $id and .pid == $pid and .verdict == "trusted")' \
			"$TMP/pg.json"
fi
