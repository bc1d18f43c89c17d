# Shared by the tests that run containers with podman (sourced after lib.sh,
# POSIX sh): the skips, the image, the workload container.
#   podman_ready WHAT [base]   skip (print SKIP, return 1) without root, BPF or
#                   podman; make the image (or only the base) when missing
#   workload NAME ARGS...      the pipeline workload in a container $N-NAME
# IMAGE, BASE_IMAGE: the image `make image` tags and the base it builds from.
# shellcheck shell=sh
. scripts/podman.sh
N=nl-e2e-$$
BASE_IMAGE=$(sed -n 's/^ARG BASE=\(.*\)$/\1/p' Dockerfile)
IMAGE=${IMAGE:-localhost/nanlog-bpf:$(scripts/version.sh | tr + -)}
podman_containers=""
at_exit 'for c in $podman_containers; do $PODMAN rm -f -t 0 "$c" >/dev/null 2>&1; done'

# check_or_show NAME FILE CMD...: check NAME CMD...; on a failure, the end
# of FILE (what the command looked at) on stderr
check_or_show() {
	cs_name=$1 cs_file=$2
	shift 2
	if "$@" >/dev/null; then
		pass "$cs_name"
	else
		fail "$cs_name"
		tail -c 2000 "$cs_file" | sed 's/^/  /' >&2
	fi
}

podman_ready() {
	if pr_why=$(bpf_unavailable) || pr_why=$(podman_unavailable); then
		skip "$1: $pr_why"
		return 1
	fi
	# CI builds the image before make test (scripts/ci-build.sh image); build
	# it here when it is missing, from podman's layer cache where it can
	if ! $PODMAN image exists "$BASE_IMAGE" || { [ "${2:-}" != base ] && ! $PODMAN image exists "$IMAGE"; }; then
		echo "  $IMAGE or $BASE_IMAGE missing: scripts/image.sh ${2:-}" >&2
		# shellcheck disable=SC2086 # ${2:-}: no word or "base"
		if ! IMAGE=$IMAGE scripts/image.sh ${2:-} >"$TMP/image.log" 2>&1; then
			fail "$1: scripts/image.sh ${2:-} failed"
			tail -20 "$TMP/image.log" | sed 's/^/  /' >&2
			return 1
		fi
	fi
	if ! pr_err=$($PODMAN run --rm $PODMAN_RUN "$BASE_IMAGE" true 2>&1); then
		skip "$1: podman cannot start a container here: $(echo "$pr_err" | tail -1)"
		return 1
	fi
	return 0
}

# workload NAME ARGS...: the pipeline workload (simhip) in a container of the
# base image, the build tree mounted read-only, held at a gate file
# ($TMP/NAME/go) in a folder of its own that also takes its ground truth
# ($TMP/NAME/truth.jsonl). With WL_HOLD=1 the container outlives the
# workload, as a pod's pause process does: its exit code goes to
# $TMP/NAME/rc, and its PID namespace stays, with what else runs in it.
workload() {
	wl_name=$1
	shift
	mkdir -p "$TMP/$wl_name"
	set -- /nanlog/build/sim/pipeline --gate-file /out/go --truth /out/truth.jsonl "$@"
	[ -n "${WL_HOLD:-}" ] && set -- sh -c '"$@"; echo $? >/out/rc; exec sleep 100000' sh "$@"
	podman_containers="$podman_containers $N-$wl_name"
	$PODMAN run -d --name "$N-$wl_name" $PODMAN_RUN -v "$PWD/$B:/nanlog/build:ro" -v "$TMP/$wl_name:/out" \
		-e LD_LIBRARY_PATH=/nanlog/build/sim "$BASE_IMAGE" "$@" >/dev/null
}
