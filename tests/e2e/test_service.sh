# The node service's command, run as nanlog-bpf.service would run it, without
# a booted systemd (it is not PID 1 on the project's machines): the unit's
# own ExecStart (from build/nanlog-bpf.service) as root holding only the
# unit's CapabilityBoundingSet, under no_new_privs, in a mount namespace with
# the file system read-only but the log folder (ProtectSystem=strict,
# LogsDirectory=), and /home, /root and /tmp hidden (ProtectHome=,
# PrivateTmp=). The workload runs from a folder under /tmp that the tool
# cannot see: its libraries are opened through /proc/PID/root. What this
# does not stand in for: the unit's system call filter, address families,
# MemoryDenyWriteExecute and the other kernel-level restrictions.
# Real BPF, root.
# shellcheck shell=sh disable=SC2016
# (SC2016: the jq programs and inner shell scripts are in single quotes on purpose)
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "node service: $why"
	exit 0
fi
if ! command -v setpriv >/dev/null 2>&1 || ! unshare --mount true 2>/dev/null; then
	skip "node service: needs setpriv and a mount namespace"
	exit 0
fi
U=$B/nanlog-bpf.service
[ -f "$U" ] || { fail "$U not built (make)"; exit 0; }

# the unit's command, with the tool of this tree, a free metrics port (other
# runs may hold 9464), a log folder of the test and a duration
cmd=$(sed -n "s/^ExecStart=\/bin\/sh -c '\(.*\)'\$/\1/p" "$U")
# the tool and the log folder under /var/tmp, which the sandbox keeps in
# sight wherever this checkout lives (under /tmp or /home it is hidden)
SVC=$(mktemp -d /var/tmp/nanlog-bpf-service.XXXXXX)
at_exit "rm -rf '$SVC'"
LOG=$SVC/log
mkdir -p "$LOG"
cp "$TOOL" "$SVC/nanlog-bpf"
run=$(echo "$cmd" | sed -e "s|[^ ]*/sbin/nanlog-bpf |$SVC/nanlog-bpf |" -e 's|127\.0\.0\.1:9464|127.0.0.1:0|' \
	-e "s| >>/var/log/nanlog-bpf/| --duration 6 >>$LOG/|")
check "the unit's ExecStart is the node agent appending to /var/log/nanlog-bpf ($cmd)" sh -c \
	"echo '$cmd' | grep -q '^exec [^ ]*/sbin/nanlog-bpf --all --metrics 127.0.0.1:9464 >>/var/log/nanlog-bpf/audit.jsonl\$' &&
	 test '$run' != '$cmd'"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U" | tr '[:upper:]' '[:lower:]' | sed -e 's/cap_/+/g' -e 's/ /,/g')

# the job, from a folder the service's /tmp hides
mkdir -p "$TMP/job"
cp "$SIM/pipeline" "$SIM/libamdhip64.so.5" "$SIM/librccl.so.1" "$TMP/job/"
echo '{"type":"marker","note":"written before the service started"}' >"$LOG/audit.jsonl"

# (the sandbox proves itself before the tool starts: the job's folder is out
# of sight and / refuses a write, or the command exits 3)
unshare --mount --propagation private sh -c '
	log=$1 job=$2; shift 2
	mount --bind "$log" "$log" && mount -o remount,bind,ro / &&
	for d in /home /root /tmp; do [ ! -d "$d" ] || mount -t tmpfs -o mode=755 none "$d" || exit 1; done &&
	{ [ ! -e "$job/pipeline" ] && ! touch /.nanlog-bpf-ro-check 2>/dev/null || exit 3; } &&
	exec "$@"' sh "$LOG" "$TMP/job" \
	setpriv --bounding-set "-all,$caps" --inh-caps -all --no-new-privs /bin/sh -c "$run" 2>"$TMP/svc.err" &
svc=$!
at_exit "kill -KILL $svc 2>/dev/null"
sleep 1
LD_LIBRARY_PATH=$TMP/job "$TMP/job/pipeline" --batches 60 --iter-sleep-ms 20 >"$TMP/wl.out" 2>&1 &
wl=$!
at_exit "kill -KILL $wl 2>/dev/null"
wait "$svc"
rc=$?
wait "$wl"
check "the service's command exits 0 after --duration (exit $rc)" test $rc = 0
[ $rc = 0 ] || sed 's/^/  /' "$TMP/svc.err" | head -10
A=$LOG/audit.jsonl
check "its audits were appended: the line before them is kept" \
	sh -c "head -1 '$A' | grep -q '\"type\":\"marker\"'"
check "the workload under the hidden /tmp was attached and audited (pid $wl, >= 20 batches)" \
	jq -es --argjson p "$wl" '([.[] | select(.type == "attach" and .pid == $p)] | length > 0) and
		([.[] | select(.type == "batch" and .pid == $p)] | length >= 20)' "$A"
# (a batch the agent joined half way, or one cut by --duration, is skipped)
check "none of its batches is untrusted, 20 or more trusted (the workload orders every stage)" \
	jq -es --argjson p "$wl" '[.[] | select(.type == "batch" and .pid == $p) | .verdict] |
		(map(select(. == "untrusted")) | length == 0) and (map(select(. == "trusted")) | length >= 20)' "$A"
check "the tool needed to write nowhere but its log folder" sh -c \
	"! grep -qi 'read-only file system' '$TMP/svc.err'"
echo "  verdicts of the workload's batches: $(jq -rs --argjson p "$wl" '[.[] | select(.type == "batch" and .pid == $p) | .verdict] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' "$A")"
