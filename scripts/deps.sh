#!/bin/sh
# Install every build and test dependency from the distribution's archive.
# Idempotent: does nothing when all packages are present.
set -eu
# libclang-rt-14-dev: clang 14's libFuzzer and sanitizer runtimes (make fuzz:
# -fsanitize=fuzzer links libclang_rt.fuzzer-x86_64.a from it). clang only
# recommends it, and recommends are not installed below. (libfuzzer-14-dev is
# not needed: it is the standalone libFuzzer.a, not what -fsanitize=fuzzer uses.)
# The package and its tests (docs/packaging.md): build-essential (dpkg-buildpackage
# checks for it), debhelper and dpkg-dev build
# it (make deb), lintian checks it, mmdebstrap makes the Debian 12 root it is
# installed into, groff and man-db render the man page, bash-completion runs
# the completion, systemd's systemd-analyze checks the unit, logrotate its
# snippet.
# podman, runc, catatonit, mmdebstrap: `make image` and the tests that run it
# (docs/kubernetes.md): a local Debian 12 base image, no registry; runc, as
# crun refuses a hybrid cgroup layout; catatonit, for the pause image of
# podman kube play, built locally.
# mmdebstrap also makes the newer Debian root filesystems of the real-runtime
# tests (scripts/rootfs.sh, make rootfs).
PKGS="make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev pkg-config
libcmocka-dev libcap-dev libamdhip64-dev libamdhip64-5 jq libmicrohttpd-dev util-linux
yamllint yq python3-kubernetes
procps psmisc iproute2 tmux curl prometheus bpftrace time
libclang-rt-14-dev valgrind
build-essential debhelper dpkg-dev lintian mmdebstrap groff man-db bash-completion systemd logrotate
podman runc catatonit"

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: not a Debian/Ubuntu system; install these packages (or equivalents): $(echo $PKGS)" >&2
	exit 1
fi
missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
		echo "deps: missing packages:$missing; run as root to install them" >&2; exit 1
	fi
else
	SUDO=
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
