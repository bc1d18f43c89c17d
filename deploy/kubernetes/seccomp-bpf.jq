# A Localhost seccomp profile for nanlog-bpf (docs/kubernetes.md, "Seccomp"):
# a container runtime's default profile, in the Docker format that podman,
# CRI-O and containerd read, with bpf() allowed to a container holding
# CAP_BPF and perf_event_open() to one holding CAP_PERFMON, as the defaults
# of containerd 1.7 and Docker 23.0 do; everything else as it was. Older
# defaults, and podman's and CRI-O's, allow the two only with CAP_SYS_ADMIN.
#
#   jq -f seccomp-bpf.jq /usr/share/containers/seccomp.json >nanlog-bpf.json
#
# Kubernetes: install the result on every node under the kubelet's seccomp
# folder (/var/lib/kubelet/seccomp/) and set the tool's securityContext to
#   seccompProfile: {type: Localhost, localhostProfile: nanlog-bpf.json}
# tests/e2e/test_image.sh and test_kube_play.sh run the image under it.
def bpf_rules($call; $cap): [
	{names: [$call], action: "SCMP_ACT_ALLOW", includes: {caps: [$cap]}},
	# without it (nor CAP_SYS_ADMIN): EPERM, as the default profile answers
	{names: [$call], action: "SCMP_ACT_ERRNO", errnoRet: 1, excludes: {caps: [$cap, "CAP_SYS_ADMIN"]}}];
.syscalls |= (
	map(if .action == "SCMP_ACT_ALLOW" then .
	    else .names |= map(select(. != "bpf" and . != "perf_event_open")) end |
	    select(.names != [])) +
	bpf_rules("bpf"; "CAP_BPF") + bpf_rules("perf_event_open"; "CAP_PERFMON"))
