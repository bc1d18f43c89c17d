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
	n=$1; shift
	if "$@"; then pass "$n"; else fail "$n"; fi
}

# Real BPF needs root, BTF and uprobes; say why when it is not there.
bpf_unavailable() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 0; }
	[ -r /sys/kernel/btf/vmlinux ] || { echo "kernel without BTF"; return 0; }
	[ -e /sys/bus/event_source/devices/uprobe ] || { echo "kernel without uprobes"; return 0; }
	return 1
}
