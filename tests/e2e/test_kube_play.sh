# End-to-end: the manifests of deploy/kubernetes played with `podman kube
# play`, with the image `make image` builds (docs/kubernetes.md, "What was
# run here"). Podman 4.3 plays a Pod but no Job and no DaemonSet, so each
# manifest's pod template becomes a Pod, made here from the file as it is,
# with only what podman cannot play or this machine lacks replaced (each
# replacement below says why). Root, real BPF.
# shellcheck shell=sh disable=SC2016
# (SC2016: the jq programs are in single quotes on purpose)
. tests/e2e/lib.sh
. tests/e2e/podman_lib.sh

podman_ready "kube play" || exit 0
[ -x "$TOOL" ] || { fail "kube play: $TOOL not built (make)"; exit 0; }
command -v yq >/dev/null 2>&1 || { skip "kube play: yq is not installed (Debian package yq; make deps)"; exit 0; }
# kube play takes no --ulimit: the same limits through a containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' \
	"$PODMAN_NOFILE" "$PODMAN_NOFILE" "$PODMAN_NPROC" "$PODMAN_NPROC" >"$TMP/containers.conf"
export CONTAINERS_CONF="$TMP/containers.conf"
K=deploy/kubernetes
# Seccomp (test_image.sh): podman's default profile lets bpf() through only
# with CAP_SYS_ADMIN, so the tool runs under the Localhost profile of
# docs/kubernetes.md. podman 4.3 ignores securityContext.seccompProfile and
# reads the annotation seccomp.security.alpha.kubernetes.io/pod, with
# localhost/ profiles under --seccomp-profile-root.
SECCOMP_DEFAULT=/usr/share/containers/seccomp.json
[ -r "$SECCOMP_DEFAULT" ] || { skip "kube play: no $SECCOMP_DEFAULT (Debian package golang-github-containers-common)"; exit 0; }
mkdir -p "$TMP/seccomp"
jq -f $K/seccomp-bpf.jq "$SECCOMP_DEFAULT" >"$TMP/seccomp/nanlog-bpf.json"

# --- what podman cannot play: a Job, a DaemonSet, a Namespace, a
# ServiceAccount, a NetworkPolicy (podman 4.3 plays Pod, Deployment,
# PersistentVolumeClaim and ConfigMap)
for f in sidecar daemonset networkpolicy; do
	check "kube play: podman plays none of $f.yaml as it is (no supported kind)" \
		sh -c "! $PODMAN kube play --start=false $K/$f.yaml >'$TMP/$f.play' 2>&1 &&
			grep -q 'does not contain any supported kube kind' '$TMP/$f.play'"
done

# pod_of FILE KIND NAME JQ...: the pod template of the KIND in FILE as a Pod
# named NAME, its nanlog-bpf container on the image built here and under
# the Localhost seccomp profile, then JQ, which may use train (the training
# container's stand-in: the base image running the pipeline workload as
# python3, the command the sidecar's --comm names, the build tree mounted
# read-only, held at a gate file until the tool has attached) and volumes
pod_of() {
	po_f=$1 po_kind=$2 po_name=$3
	shift 3
	yq -y --arg kind "$po_kind" --arg name "$po_name" --arg img "$IMAGE" --arg base "$BASE_IMAGE" \
		--arg build "$PWD/$B" --arg out "$TMP/$po_name" '
		def tool: (.image // "") | test("/nanlog-bpf:");
		def train: {image: $base,
			command: ["python3", "--batches", "30", "--iter-sleep-ms", "20",
				"--gate-file", "/out/go", "--truth", "/out/truth.jsonl"],
			env: [{name: "LD_LIBRARY_PATH", value: "/nanlog/build/sim"}],
			volumeMounts: [{name: "build", mountPath: "/nanlog/build", readOnly: true},
				{name: "python3", mountPath: "/usr/local/bin/python3", readOnly: true},
				{name: "out", mountPath: "/out"}]};
		def volumes: [{name: "build", hostPath: {path: $build, type: "Directory"}},
			{name: "python3", hostPath: {path: ($build + "/sim/pipeline"), type: "File"}},
			{name: "out", hostPath: {path: $out, type: "Directory"}}];
		select(.kind == $kind) | .spec.template as $t |
		{apiVersion: "v1", kind: "Pod", metadata: ($t.metadata + {name: $name}), spec: $t.spec} |
		(.spec.initContainers[]?, .spec.containers[] | select(tool)) |= (.image = $img |
			.securityContext.seccompProfile = {type: "Localhost", localhostProfile: "nanlog-bpf.json"}) |
		.metadata.annotations["seccomp.security.alpha.kubernetes.io/pod"] = "localhost/nanlog-bpf.json" |
		'"$*" "$po_f"
	mkdir -p "$TMP/$po_name"
}
play() { # NAME YAML: play a pod; its containers are NAME-CONTAINER
	podman_containers="$podman_containers $1-nanlog-bpf $1-train"
	at_exit "$PODMAN pod rm -f -t 0 $1 >/dev/null 2>&1"
	$PODMAN kube play --seccomp-profile-root "$TMP/seccomp" "$2" >"$TMP/$1.play" 2>&1 || { sed 's/^/  /' "$TMP/$1.play" >&2; return 1; }
}
wait_log() { # CONTAINER PATTERN: until its stderr shows PATTERN (30 s)
	wl_n=300
	until $PODMAN logs "$1" 2>&1 >/dev/null | grep -q -- "$2"; do
		wl_n=$((wl_n - 1))
		[ $wl_n -gt 0 ] || { echo "  timed out waiting for '$2' from $1" >&2; return 1; }
		sleep 0.1
	done
}
# pod_ip POD: the pod's address on podman's network
pod_ip() {
	$PODMAN inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$($PODMAN pod inspect -f '{{.InfraContainerID}}' "$1")"
}
metrics_of() { # POD OUT: GET /metrics on the pod's address, port 9464
	curl -s --max-time 5 "http://$(pod_ip "$1"):9464/metrics" >"$2"
}

# audit_pod NAME WHAT: play $TMP/NAME.yaml; once the tool has attached,
# release the training, then stop the tool as Kubernetes does (SIGTERM) and
# check what it wrote against the training's ground truth
audit_pod() {
	ap=$1 what=$2
	if ! play "$ap" "$TMP/$ap.yaml" || ! wait_log "$ap-nanlog-bpf" 'librccl.so.1: .*symbols attached'; then
		fail "$what: the tool never attached to the training"
		$PODMAN logs "$ap-nanlog-bpf" 2>&1 | tail -5 | sed 's/^/  /' >&2
		return
	fi
	touch "$TMP/$ap/go"
	ap_rc=$($PODMAN wait "$ap-train")
	sleep 0.6
	# the training's pid in the pod's PID namespace, which the tool shares
	ap_pid=$(jq -s '[.[] | select(.type == "run")][0].pid' "$TMP/$ap/truth.jsonl")
	metrics_of "$ap" "$TMP/$ap.metrics"
	check_or_show "$what: metrics on the pod's address, port 9464: the training's 30 batches trusted" "$TMP/$ap.metrics" \
		sh -c "grep '^nanlog_batches_total{' '$TMP/$ap.metrics' | grep 'pid=\"$ap_pid\"' |
			grep 'verdict=\"trusted\"' | grep -q ' 30\$'"
	$PODMAN stop -t 10 "$ap-nanlog-bpf" >/dev/null
	$PODMAN logs "$ap-nanlog-bpf" >"$TMP/$ap.json" 2>"$TMP/$ap.err"
	check "$what: the training ran to the end (exit $ap_rc)" test "$ap_rc" = 0
	check_or_show "$what: the tool exits 0 on SIGTERM" "$TMP/$ap.err" \
		test "$($PODMAN inspect -f '{{.State.ExitCode}}' "$ap-nanlog-bpf")" = 0
	check "$what: the tool holds BPF, PERFMON and SYS_PTRACE, no other capability" \
		sh -c "$PODMAN inspect '$ap-nanlog-bpf' | jq -e '.[0].EffectiveCaps | sort == [\"CAP_BPF\",\"CAP_PERFMON\",\"CAP_SYS_PTRACE\"]'"
	# the manifests' arguments have no --raw, so no calls to pair with the
	# truth's (test_image.sh does that): every batch, in order, with the
	# verdict and the missing edges the truth gives it
	check "$what: every batch audited as the training's ground truth says" \
		jq -e -n --slurpfile t "$TMP/$ap/truth.jsonl" --slurpfile a "$TMP/$ap.json" --argjson p "$ap_pid" '
			def v: {verdict, missing: (.missing_edges // [] | sort)};
			[$t[] | select(.type == "batch") | v] as $want |
			[$a[] | select(.type == "batch" and .pid == $p) | v] as $got |
			($want | length) == 30 and $got == $want'
	check "$what: records carry the training's pid ($ap_pid) and container id" \
		jq -e -s --arg id "$($PODMAN inspect -f '{{.Id}}' "$ap-train")" --argjson p "$ap_pid" \
			'[.[] | select(.type=="batch" and .pid == $p)] | length == 30 and all(.container_id == $id)' "$TMP/$ap.json"
}

# --- sidecar.yaml's pod. Replaced: (1) the native sidecar (an init container
# with restartPolicy Always) becomes the first of the pod's containers, as
# docs/kubernetes.md says for clusters before 1.29: podman runs init
# containers to their end before the others, and the tool never ends.
# (2) POD_IP from status.podIP and $(POD_IP) in the arguments: podman 4.3
# resolves neither, so the pod's address is written as 0.0.0.0, which in the
# pod's network namespace is the pod IP and its loopback. (3) The training
# container: the base image with the pipeline workload as python3 (the
# command the sidecar's --comm names), the build tree mounted read-only, no
# amd.com/gpu (this machine has none), held at a gate file until the
# sidecar has attached.
pod_of $K/sidecar.yaml Job "$N-sc" '
	.spec.containers = [.spec.initContainers[] | select(tool) | del(.restartPolicy) |
		.env = [.env[] | select(.name != "POD_IP")] | if .env == [] then del(.env) else . end |
		.args = [.args[] | sub("\\$\\(POD_IP\\)"; "0.0.0.0")]] + .spec.containers |
	del(.spec.initContainers) |
	(.spec.containers[] | select(tool | not)) |= (. + train | del(.resources.limits["amd.com/gpu"])) |
	.spec.volumes = volumes' >"$TMP/$N-sc.yaml"
audit_pod "$N-sc" "sidecar pod"

# --- daemonset.yaml's pod, but for the image: --all, --metrics
# 0.0.0.0:9464. Replaced: hostPID, which podman 4.3 ignores (the pod gets a
# PID namespace of its own, and the agent would see nothing): the pod
# shares one PID namespace among its containers instead, and the training
# stand-in runs as a container of the pod, so the agent finds it with
# --all as it would find it on a node. podman's restart policy is the
# pod's: Never, so that the stand-in runs once (a DaemonSet's is Always).
pod_of $K/daemonset.yaml DaemonSet "$N-ds" '
	del(.spec.hostPID) | .spec.shareProcessNamespace = true | .spec.restartPolicy = "Never" |
	.spec.containers += [{name: "train"} + train] | .spec.volumes = volumes' >"$TMP/$N-ds.yaml"
audit_pod "$N-ds" "daemonset pod"
