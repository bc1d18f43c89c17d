# Deployment files, checked without root, BPF, a container engine or a
# cluster: the Kubernetes manifests under deploy/kubernetes (yamllint with the
# committed config; the API schema of Debian's python3-kubernetes through
# k8s_schema.py; the fields docs/kubernetes.md relies on through yq and jq,
# definitions in deploy.jq), the manifests' arguments against the tool's own
# option parser, and the Dockerfile against CI's build steps and the
# libraries the tool links. The image built and run, and the manifests
# played with podman: test_image.sh, test_kube_play.sh.
# shellcheck shell=sh disable=SC2016
# (SC2016: the jq programs are in single quotes on purpose)
. tests/e2e/lib.sh

K=deploy/kubernetes
SIDECAR=$K/sidecar.yaml
DS=$K/daemonset.yaml
NP=$K/networkpolicy.yaml
PRE66=$K/daemonset-pre66.yaml
DOC=docs/kubernetes.md

# check_v NAME CMD...: as check, but a failure shows what CMD printed
check_v() {
	cv_name=$1
	shift
	if "$@" >"$TMP/check.out" 2>&1; then
		pass "$cv_name"
	else
		fail "$cv_name"
		sed 's/^/  /' "$TMP/check.out" | head -20
	fi
}

for f in "$SIDECAR" "$DS" "$NP" "$PRE66" "$K/.yamllint.yaml" Dockerfile scripts/ci-build.sh "$DOC"; do
	check "$f exists" test -s "$f"
done

# --- yamllint, strict: warnings fail too
if command -v yamllint >/dev/null 2>&1; then
	check_v "yamllint -s with $K/.yamllint.yaml: every manifest" yamllint -s -c "$K/.yamllint.yaml" "$K"
else
	skip "yamllint: not installed (Debian package yamllint; make deps)"
fi

# --- the API schema: Debian's python3-kubernetes is for Debian's python3,
# which a python3 found first on PATH (a virtualenv, pyenv) may not be
PY=""
for py in python3 /usr/bin/python3; do
	if "$py" -c 'import kubernetes.client, yaml' >/dev/null 2>&1; then
		PY=$py
		break
	fi
done
if [ -n "$PY" ]; then
	for f in "$SIDECAR" "$DS" "$NP" "$PRE66"; do
		check_v "API schema: $f" "$PY" tests/e2e/k8s_schema.py "$f"
	done
	printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    a: 1\nspec:\n  shareProcessNamespce: true\n  containers: [{image: x}]\n' >"$TMP/bad.yaml"
	"$PY" tests/e2e/k8s_schema.py "$TMP/bad.yaml" >"$TMP/bad.out" 2>&1
	check "API schema: a misspelt field, a number as annotation and no container name are refused" \
		sh -c "test $? = 1 && grep -q shareProcessNamespce '$TMP/bad.out' &&
			grep -q 'annotations.a: expected str' '$TMP/bad.out'"
	printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers: [{image: x}]\n' >"$TMP/bad2.yaml"
	"$PY" tests/e2e/k8s_schema.py "$TMP/bad2.yaml" >"$TMP/bad2.out" 2>&1
	check "API schema: a missing required field is refused" \
		sh -c "test $? = 1 && grep -q 'required field' '$TMP/bad2.out'"
else
	skip "API schema: no python3 with the kubernetes module (Debian package python3-kubernetes; make deps)"
fi

# --- the fields the docs rely on
if ! command -v yq >/dev/null 2>&1; then
	skip "manifest fields: yq is not installed (Debian package yq; make deps)"
	exit 0
fi
for f in "$SIDECAR" "$DS" "$NP" "$PRE66"; do
	yq -c . "$f" | jq -s . >"$TMP/$(basename "$f" .yaml).json" || fail "yq cannot read $f"
done
DEFS=$(cat tests/e2e/deploy.jq)
# jqc NAME FILE-STEM EXPR: EXPR (with deploy.jq) is true of the manifest's documents
jqc() {
	check "$1" jq -e "$DEFS $3" "$TMP/$2.json"
}

for m in sidecar daemonset; do
	jqc "$m: exactly one nanlog-bpf container" $m '[workloads | tool] | length == 1'
	jqc "$m: capabilities: ALL dropped" $m 'caps | all(.drop == ["ALL"])'
	jqc "$m: capabilities: exactly BPF, PERFMON, SYS_PTRACE added" $m \
		'caps | all(.add | sort == ["BPF", "PERFMON", "SYS_PTRACE"])'
	jqc "$m: nothing privileged" $m 'privileged_settings | all(. == false)'
	jqc "$m: no privilege escalation, read-only root file system" $m \
		'[workloads | tool.securityContext] | all(.allowPrivilegeEscalation == false and .readOnlyRootFilesystem == true)'
	jqc "$m: root with capabilities (runAsUser 0, runAsNonRoot false)" $m \
		'[workloads | tool.securityContext] | all(.runAsUser == 0 and .runAsNonRoot == false)'
	jqc "$m: the runtime's default seccomp profile" $m \
		'[workloads | (tool.securityContext.seccompProfile.type // podspec.securityContext.seccompProfile.type)] | all(. == "RuntimeDefault")'
	jqc "$m: no hostPath volume, no hostNetwork" $m \
		'[workloads | podspec | ([.volumes[]? | select(.hostPath)] | length == 0) and (.hostNetwork != true)] | all'
	jqc "$m: memory request and limit, CPU request" $m \
		'[workloads | tool.resources | .requests.memory and .limits.memory and .requests.cpu] | all'
	jqc "$m: --metrics ADDR:PORT given" $m 'metrics_addr | test("^.+:[0-9]+$")'
	jqc "$m: containerPort \"metrics\" equals the --metrics port" $m 'container_port == metrics_port'
	jqc "$m: prometheus.io/port annotation equals the --metrics port" $m \
		'annotation("prometheus.io/port") == (metrics_port | tostring)'
	jqc "$m: prometheus.io/scrape \"true\", prometheus.io/path /metrics" $m \
		'annotation("prometheus.io/scrape") == "true" and annotation("prometheus.io/path") == "/metrics"'
	jqc "$m: JSON Lines on stdout: no -o, no --format table" $m \
		'(has_flag("-o") or has_flag("--output") or argval("--format") == "table") | not'
done

# the node agent for kernels before 6.6 (docs/kubernetes.md): daemonset.yaml's
# pod with SYS_ADMIN added, only on nodes labelled with an older kernel
jqc "daemonset-pre66: exactly BPF, PERFMON, SYS_PTRACE and SYS_ADMIN added" daemonset-pre66 \
	'caps | length == 1 and all(.add | sort == ["BPF", "PERFMON", "SYS_ADMIN", "SYS_PTRACE"])'
jqc "daemonset-pre66: required node affinity: kernel major < 6, or 6 and minor < 6" daemonset-pre66 \
	'[workloads | podspec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms |
	  map(.matchExpressions | map({(.key | split(".") | last): [.operator, .values]}) | add)] ==
	 [[{"major": ["Lt", ["6"]]}, {"major": ["In", ["6"]], "minor": ["Lt", ["6"]]}]]'
check "daemonset-pre66: otherwise daemonset.yaml's DaemonSet (name, labels, affinity, capabilities apart)" \
	jq -e -n --slurpfile a "$TMP/daemonset.json" --slurpfile b "$TMP/daemonset-pre66.json" '
		def strip: del(.metadata.name, .metadata.labels["app.kubernetes.io/component"],
			.spec.selector.matchLabels["app.kubernetes.io/component"],
			.spec.template.metadata.labels["app.kubernetes.io/component"],
			.spec.template.spec.affinity,
			.spec.template.spec.containers[].securityContext.capabilities.add);
		[$a[0][] | select(.kind == "DaemonSet") | strip] == [$b[0][] | select(.kind == "DaemonSet") | strip]'

# the sidecar
jqc "sidecar: shareProcessNamespace true, no hostPID" sidecar \
	'[workloads | podspec | .shareProcessNamespace == true and .hostPID != true] | all'
jqc "sidecar: --comm NAME, neither --all nor -p" sidecar \
	'(argval("--comm") | type == "string") and (has_flag("--all") or has_flag("-p") or has_flag("--pid") | not)'
jqc "sidecar: --comm is the command name of the training container's process" sidecar \
	'argval("--comm") as $c | [workloads | others | comm_of] | index([$c]) != null'
jqc "sidecar: --metrics on the pod IP, \$(POD_IP) from status.podIP" sidecar \
	'(metrics_addr | test("^\\$\\(POD_IP\\):[0-9]+$")) and
	 ([workloads | tool.env[]? | select(.name == "POD_IP") | .valueFrom.fieldRef.fieldPath] == ["status.podIP"])'

# the node agent
jqc "daemonset: hostPID true" daemonset '[workloads | podspec.hostPID == true] | all'
jqc "daemonset: --all" daemonset 'has_flag("--all") and (has_flag("--comm") or has_flag("-p") | not)'
jqc "daemonset: --metrics on 0.0.0.0 of the pod's network namespace" daemonset \
	'metrics_addr | test("^0\\.0\\.0\\.0:[0-9]+$")'
jqc "daemonset: tolerates the amd.com/gpu taint" daemonset \
	'[workloads | podspec.tolerations[]? | select(.key == "amd.com/gpu" and .operator == "Exists")] | length > 0'
jqc "daemonset: its own ServiceAccount, no token mounted" daemonset \
	'[workloads | podspec | select(.automountServiceAccountToken == false) | .serviceAccountName] as $sa |
	 ($sa | length == 1) and
	 ([.[] | select(.kind == "ServiceAccount" and .metadata.name == $sa[0] and .automountServiceAccountToken == false)] | length == 1)'
jqc "daemonset: the selector selects the template's labels" daemonset \
	'[workloads | selects(.spec.selector.matchLabels; .spec.template.metadata.labels)] | all'
jqc "daemonset: one namespace, created here, Pod Security level privileged" daemonset \
	'([.[] | select(.kind == "Namespace")] | length == 1) and
	 ([.[] | select(.kind == "Namespace")][0] as $ns |
	  $ns.metadata.labels["pod-security.kubernetes.io/enforce"] == "privileged" and
	  ([.[] | select(.kind != "Namespace") | .metadata.namespace] | all(. == $ns.metadata.name)))'
for m in sidecar daemonset networkpolicy; do
	jqc "$m: no API permissions (no Role, ClusterRole or binding)" $m \
		'[.[] | select(.kind | test("Role"))] | length == 0'
done

# the NetworkPolicy fits the DaemonSet
ds_ns=$(jq -r '[.[] | select(.kind == "DaemonSet")][0].metadata.namespace' "$TMP/daemonset.json")
ds_labels=$(jq -c '[.[] | select(.kind == "DaemonSet")][0].spec.template.metadata.labels' "$TMP/daemonset.json")
ds_port=$(jq -r "$DEFS metrics_port" "$TMP/daemonset.json")
check "networkpolicy: in the DaemonSet's namespace, selects its pods" jq -e --arg ns "$ds_ns" \
	--argjson l "$ds_labels" "$DEFS"' .[0] | .metadata.namespace == $ns and selects(.spec.podSelector.matchLabels; $l)' \
	"$TMP/networkpolicy.json"
check "networkpolicy: admits only the metrics port; denies all egress" jq -e --argjson p "$ds_port" \
	'.[0].spec | ([.ingress[].ports[].port] | unique == [$p]) and (.policyTypes | index(["Egress"]) != null) and .egress == []' \
	"$TMP/networkpolicy.json"

# one image, in both manifests and the docs, tagged with the tool's version
img_sc=$(jq -r "$DEFS [workloads | tool.image][0]" "$TMP/sidecar.json")
img_ds=$(jq -r "$DEFS [workloads | tool.image][0]" "$TMP/daemonset.json")
check "one image in both manifests ($img_sc)" test "$img_sc" = "$img_ds"
if [ -x "$TOOL" ]; then
	version=$("$TOOL" --version 2>/dev/null | sed -n '1s/^nanlog-bpf \([^ ]*\).*/\1/p')
	# the manifests name a release: the VERSION file's, which the tool's version
	# is, or starts a snapshot's (docs/packaging.md)
	rel=$(cat VERSION)
	check "the image tag is the release in VERSION ($rel), the tool's version or its base ($version)" \
		sh -c "test '${img_sc##*:}' = '$rel' && case '$version' in '$rel' | '$rel'+*) ;; *) exit 1 ;; esac"
else
	skip "image tag: $TOOL not built, its version unknown"
fi
check "$DOC and Dockerfile build that image (docker build -t $img_sc)" \
	sh -c "grep -qF 'docker build -t $img_sc' '$DOC' && grep -qF 'docker build -t $img_sc' Dockerfile"
for w in sidecar.yaml daemonset.yaml networkpolicy.yaml --comm --all --metrics 9464 container_id pod_uid; do
	check "$DOC mentions $w" grep -qF -- "$w" "$DOC"
done
for w in "make image" "podman kube play" test_image.sh test_kube_play.sh; do
	check "$DOC says what was run here: $w" grep -qF -- "$w" "$DOC"
done

# --- the manifests' arguments, through the tool's own parser (parsing only:
# --version stops before anything is attached or bound)
if [ -x "$TOOL" ]; then
	for m in sidecar daemonset; do
		jq -r "$DEFS args | map(sub(\"\\\\$\\\\(POD_IP\\\\)\"; \"127.0.0.1\")) | @sh" "$TMP/$m.json" >"$TMP/$m.args"
		eval "set -- $(cat "$TMP/$m.args")"
		"$TOOL" "$@" --version >/dev/null 2>"$TMP/$m.err"
		check_v "$m: nanlog-bpf accepts the arguments $*" sh -c "test $? = 0 || { cat '$TMP/$m.err'; exit 1; }"
	done
else
	skip "manifest arguments: $TOOL not built"
fi

# --- Dockerfile: the build stage runs CI's steps through scripts/ci-build.sh
froms=$(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' Dockerfile)
base=$(sed -n 's/^ARG BASE=\(.*\)$/\1/p' Dockerfile)
# shellcheck disable=SC2016 # ${BASE}: Dockerfile syntax
check "Dockerfile: multi-stage, every stage from ARG BASE or the build stage, by default the local Debian 12 base ($base)" \
	sh -c "test \$(echo '$froms' | wc -l) -ge 2 && test -z \"\$(echo '$froms' | grep -vxF '\${BASE}' | grep -vx build)\" &&
		test '$base' = localhost/nanlog-bpf-base:bookworm"
ci_steps=$(sed -n 's|^[[:space:]]*\(exec \)\{0,1\}\./scripts/ci-build\.sh \(.*\)$|\2|p' .ci/run)
docker_steps=$(sed -n 's|^RUN \./scripts/ci-build\.sh \(.*\)$|\1|p' Dockerfile | tr '\n' ' ')
check "CI (.ci/run) runs scripts/ci-build.sh deps build deb pkgroot fuzz-regress valgrind fuzz tsan test" \
	test "$ci_steps" = "deps build deb pkgroot fuzz-regress valgrind fuzz tsan test"
check "Dockerfile runs scripts/ci-build.sh deps, then build unit, then deb" test "$docker_steps" = "deps build unit deb "
ok=1
for s in $docker_steps; do
	case " $ci_steps " in
	*" $s "*) ;;
	*) [ "$s" = unit ] && case " $ci_steps " in *" test "*) continue ;; esac; ok=0 ;;
	esac
done
check "every step the image build runs, CI runs too (unit as part of test)" test $ok = 1
check "Dockerfile: no make or compiler outside scripts/ci-build.sh" \
	sh -c "! grep -Eq '^RUN.*(^|[^-[:alnum:]])(make|cc|gcc|clang)([^-[:alnum:]]|$)' Dockerfile"
# deps: the script make deps runs, as a bare Debian base image has no make
check "scripts/ci-build.sh: each step is one make command (deps: the script of make deps)" sh -c \
	"grep -q '^	deps) ./scripts/deps.sh ;;' scripts/ci-build.sh &&
	 sed -n '/^deps:/,/^$/p' Makefile | grep -q '^	\$(Q)\./scripts/deps\.sh$' &&
	 grep -q '^	build) make -j2 ;;' scripts/ci-build.sh &&
	 grep -q '^	unit) make unit ;;' scripts/ci-build.sh && grep -q '^	test) make test ;;' scripts/ci-build.sh"
# the runtime stage (the last): the package of the package stage, with apt
runtime=$(awk '/^FROM/ { r = "" } { r = r $0 "\n" } END { printf "%s", r }' Dockerfile)
check "Dockerfile: the package stage builds the package from the build stage" \
	sh -c "sed -n '/^FROM build AS package\$/,/^FROM/p' Dockerfile | grep -q '^RUN \./scripts/ci-build\.sh deb\$'"
check "Dockerfile: the runtime stage installs the package with apt, ENTRYPOINT /usr/sbin/nanlog-bpf, runs as root" sh -c \
	"echo '$runtime' | grep -q '^COPY --from=package /src/build/deb/ /tmp/deb/\$' &&
	 echo '$runtime' | grep -q 'apt-get install -y --no-install-recommends /tmp/deb/nanlog-bpf_\*_amd64\.deb' &&
	 echo '$runtime' | grep -q '^ENTRYPOINT \[\"/usr/sbin/nanlog-bpf\"\]\$' &&
	 ! echo '$runtime' | grep '^USER' | grep -qv '^USER 0\(:0\)\{0,1\}\$' &&
	 ! echo '$runtime' | grep -q '^COPY .*build/nanlog-bpf '"
# (the package's Depends name the packages of every library the tool links:
# tests/e2e/test_package.sh)
