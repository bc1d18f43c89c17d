#!/bin/sh
# make image: the container image of the Dockerfile, built with podman from a
# local Debian 12 base image, with no registry (docs/kubernetes.md).
#   scripts/image.sh [base|--if-podman]
#   base          only the base image
#   --if-podman   when podman cannot run here, say why and succeed (make
#                 test: the tests that run the image then skip, saying why)
# 1. The base: a Debian 12 minbase root file system made by mmdebstrap from
#    Debian's archive, kept as build/image/base.tar and imported into podman's
#    store as $BASE_IMAGE. Reused while the store holds it; imported again
#    from the tarball when the store does not; the tarball is made again only
#    when missing (rm build/image/base.tar to refresh the packages).
# 2. The image: podman build (buildah) of the Dockerfile with
#    --build-arg BASE=$BASE_IMAGE, tagged $IMAGE. podman's layer cache keeps
#    each step whose inputs did not change (the dependencies' layer above all).
# Environment: B (build folder, build), BASE_IMAGE
# (localhost/nanlog-bpf-base:bookworm, the Dockerfile's default), IMAGE
# (localhost/nanlog-bpf:VERSION, VERSION as `nanlog-bpf --version` says).
set -eu
cd "$(dirname "$0")/.."
. scripts/podman.sh
B=${B:-build}
BASE_IMAGE=${BASE_IMAGE:-$(sed -n 's/^ARG BASE=\(.*\)$/\1/p' Dockerfile)}
# an image tag takes no '+': a snapshot's 0.1.0+12.gabc is tagged 0.1.0-12.gabc
VERSION=$(./scripts/version.sh | tr + -)
IMAGE=${IMAGE:-localhost/nanlog-bpf:$VERSION}
[ -n "$BASE_IMAGE" ] && [ -n "$VERSION" ] || { echo "image: no ARG BASE in Dockerfile or no version from scripts/version.sh" >&2; exit 1; }
case $#:${1:-} in
0: | 1:base | 1:--if-podman) ;;
*) echo "usage: scripts/image.sh [base|--if-podman]" >&2; exit 2 ;;
esac
if why=$(podman_unavailable); then
	if [ "${1:-}" = --if-podman ]; then
		echo "image: not built: $why"
		exit 0
	fi
	echo "image: $why" >&2
	exit 1
fi

tar=$B/image/base.tar
if ! $PODMAN image exists "$BASE_IMAGE"; then
	if [ ! -s "$tar" ]; then
		command -v mmdebstrap >/dev/null 2>&1 ||
			{ echo "image: mmdebstrap is not installed (Debian package mmdebstrap; make deps)" >&2; exit 1; }
		mkdir -p "$B/image"
		echo "image: making the Debian 12 base (mmdebstrap --variant=minbase bookworm)"
		# into a temporary file first: an interrupted run leaves no half tarball
		rm -f "$tar.tmp"
		mmdebstrap --quiet --variant=minbase --format=tar bookworm "$tar.tmp"
		mv "$tar.tmp" "$tar"
	fi
	echo "image: importing $tar as $BASE_IMAGE"
	# a tarball carries no environment: the PATH Debian's images set
	$PODMAN import --quiet --change "ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
		"$tar" "$BASE_IMAGE" >/dev/null
fi
[ "${1:-}" = base ] && exit 0

echo "image: podman build -t $IMAGE (from $BASE_IMAGE)"
# shellcheck disable=SC2086 # PODMAN_RUN: words
$PODMAN build $PODMAN_RUN --layers --build-arg "BASE=$BASE_IMAGE" \
	--build-arg "NANLOG_VERSION=$(./scripts/version.sh)" -t "$IMAGE" .
