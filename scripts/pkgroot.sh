#!/bin/sh
# make pkgroot: a fresh Debian 12 root file system (mmdebstrap, minbase, with
# man-db and the archive keyring) in a folder, which tests/e2e/test_package.sh
# copies to install the package into with apt.
#   scripts/pkgroot.sh FOLDER
# apt inside uses this host's own apt sources (whatever mirror they name), and
# its package lists are kept, so an install needs no `apt-get update` until
# the mirror moves on. Made once; delete the folder to make a new one.
set -eu
[ $# -eq 1 ] || { echo "usage: scripts/pkgroot.sh FOLDER" >&2; exit 2; }
out=$1
command -v mmdebstrap >/dev/null 2>&1 || { echo "pkgroot: mmdebstrap not found (make deps)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "pkgroot: needs root (mmdebstrap's root mode)" >&2; exit 1; }
srcs=$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
[ -n "$srcs" ] || { echo "pkgroot: no apt sources in /etc/apt" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
rm -rf "$out.tmp"
# shellcheck disable=SC2086
if ! mmdebstrap --quiet --variant=minbase --format=directory --include=debian-archive-keyring,man-db \
	--skip=cleanup/apt/lists bookworm "$out.tmp" $srcs; then
	rm -rf "$out.tmp"
	echo "pkgroot: mmdebstrap failed" >&2
	exit 1
fi
mv "$out.tmp" "$out"
