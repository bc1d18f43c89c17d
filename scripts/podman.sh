# Sourced (POSIX sh) by scripts/image.sh and the tests that run containers:
# how podman is invoked here, and whether it can be (docs/kubernetes.md).
#   PODMAN       podman with the global options every call takes
#   PODMAN_RUN   the options every container needs (run, build; kube play,
#                which takes no --ulimit, gets them from a containers.conf)
#   podman_unavailable   prints why podman cannot run containers, or fails
#
# runc, not crun: crun refuses a hybrid cgroup layout (v1 controllers and a
# v2 tree), which some hosts have. cgroupfs, not systemd: the cgroup manager
# must not need a systemd to talk to. Events to a file for the same reason.
# The open-files and process limits: podman's defaults (1048576 each) can
# exceed the hard limits a container may get, and where podman lacks
# CAP_SYS_RESOURCE runc then starts no container ("error setting rlimit type
# 7", or 6). Open files: the caller's hard limit. Processes: that of the
# caller, but at most the kernel's pid_max, as conmon's limit here was.
PODMAN="podman --runtime runc --cgroup-manager cgroupfs --events-backend file"
podman_limit() { # NAME MAX: the caller's hard limit (/proc/self/limits), at most MAX
	pl=$(sed -n "s/^Max $1  *[^ ]*  *\([^ ]*\) .*/\1/p" /proc/self/limits)
	case $pl in '' | unlimited) pl=$2 ;; *) [ "$pl" -gt "$2" ] && pl=$2 ;; esac
	echo "$pl"
}
PODMAN_NOFILE=$(podman_limit 'open files' 1048576)
PODMAN_NPROC=$(podman_limit processes "$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)")
PODMAN_RUN="--ulimit nofile=$PODMAN_NOFILE:$PODMAN_NOFILE --ulimit nproc=$PODMAN_NPROC:$PODMAN_NPROC"

podman_unavailable() {
	[ "$(id -u)" = 0 ] || { echo "not root (the image and its tests use podman's store of root)"; return 0; }
	command -v podman >/dev/null 2>&1 || { echo "podman is not installed (Debian package podman; make deps)"; return 0; }
	command -v runc >/dev/null 2>&1 || { echo "runc is not installed (Debian package runc; make deps)"; return 0; }
	if ! pu_err=$($PODMAN info --format '{{.Host.OCIRuntime.Name}}' 2>&1 >/dev/null); then
		echo "podman cannot run here: $(echo "$pu_err" | tail -1)"
		return 0
	fi
	return 1
}
