#!/bin/sh
# Build and cache the root filesystems of the real-runtime tests: a userland
# newer than the host's, as a container has, with the ROCm release of one
# Debian suite in it (docs/usage.md, "Runtime releases tested").
#   scripts/rootfs.sh NAME          build B/rootfs/NAME if needed, print its path
#   scripts/rootfs.sh --check NAME  print the path of a complete, current root
#                                   or say in one line why there is none
#   scripts/rootfs.sh --list        the names
# NAME    suite    packages (with their dependencies; --variant=minbase)
# trixie  trixie   libamdhip64-5 (ROCm 5.7.1), librccl1 (RCCL 5.4.3)
# sid     sid      libamdhip64-6 (ROCm 6.4.3)
# The test clients are built on the host and need only the C library.
# A root is built into a temporary directory beside it and renamed when
# mmdebstrap has finished, with a stamp holding a hash of what went into it:
# a changed package list rebuilds it, a root without its stamp is half-built.
# The mirror is the Debian one of the host's apt sources (NANLOG_MIRROR
# overrides it). Exit 0 with the path on stdout; 77 when a root cannot be
# built here (no mmdebstrap, not root, mirror unreachable), with the reason;
# 1 on any other failure; 2 on bad usage.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
NAMES="trixie sid"

die() { echo "rootfs: $*" >&2; exit 1; }
cannot() { echo "rootfs: $*" >&2; exit 77; }
usage() { echo "usage: scripts/rootfs.sh [--check] $(echo "$NAMES" | tr ' ' '|') | --list" >&2; exit 2; }

# spec NAME: sets suite, pkgs and aptopt of a root
spec() {
	aptopt=
	case "$1" in
	trixie) suite=trixie pkgs="libamdhip64-5 librccl1" ;;
	# sid's archive can be a snapshot whose Release file has expired
	sid) suite=sid pkgs="libamdhip64-6" aptopt='Acquire::Check-Valid-Until "false"' ;;
	*) echo "rootfs: unknown root '$1' (one of: $NAMES)" >&2; exit 2 ;;
	esac
}

# The stamp: everything that decides a root's contents, hashed
stamp_of() {
	printf 'suite=%s\npackages=%s\nvariant=minbase\naptopt=%s\n' "$suite" "$pkgs" "$aptopt" |
		sha256sum | cut -d' ' -f1
}

# why_not DIR: empty when DIR is a complete root of the current list
why_not() {
	if [ ! -e "$1" ]; then
		echo "$1 is missing: build it with scripts/rootfs.sh $name (or make rootfs)"
	elif [ ! -f "$1/.nanlog-rootfs" ]; then
		echo "$1 is half-built (no stamp): remove it and run scripts/rootfs.sh $name"
	elif [ "$(cat "$1/.nanlog-rootfs")" != "$(stamp_of)" ]; then
		echo "$1 is out of date (its package list changed): run scripts/rootfs.sh $name"
	fi
}

# The Debian mirror of the host's apt sources: the first URI of a deb entry
# for a suite that is not a security suite (one-line .list or deb822 .sources)
host_mirror() {
	{
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n 's/^[ \t]*deb[ \t]\{1,\}\(\[[^]]*\][ \t]\{1,\}\)\{0,1\}\([^ \t]\{1,\}\)[ \t]\{1,\}\([^ \t]\{1,\}\).*/\2 \3/p' |
			awk '$2 !~ /security/ && $1 ~ /\/debian\/?$/ { print $1 }'
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -f "$f" ] || continue
			awk 'BEGIN { RS = ""; FS = "\n" }
			{ t = u = s = ""
			  for (j = 1; j <= NF; j++) {
				if ($j ~ /^Types:/) t = $j
				if ($j ~ /^URIs:/) u = $j
				if ($j ~ /^Suites:/) s = $j
			  }
			  if (t ~ /[ \t]deb([ \t]|$)/ && s !~ /security/) {
				sub(/^URIs:[ \t]*/, "", u); split(u, a, /[ \t]+/)
				if (a[1] ~ /\/debian\/?$/) print a[1]
			  } }' "$f"
		done
	} | head -n 1
}

build() {
	dir=$B/rootfs/$name
	[ -z "$(why_not "$dir")" ] && { echo "$dir"; return 0; }
	command -v mmdebstrap >/dev/null 2>&1 || cannot "mmdebstrap not installed (make deps)"
	[ "$(id -u)" = 0 ] || cannot "building $name needs root (mmdebstrap's root mode)"
	mirror=${NANLOG_MIRROR:-$(host_mirror)}
	[ -n "$mirror" ] || cannot "no Debian mirror in the host's apt sources; set NANLOG_MIRROR"
	if command -v curl >/dev/null 2>&1 &&
		! curl -fsS -o /dev/null --max-time 20 "${mirror%/}/dists/$suite/Release" 2>/dev/null; then
		cannot "the mirror of the host's apt sources has no $suite (or is unreachable)"
	fi
	mkdir -p "$B/rootfs"
	tmp=$(mktemp -d "$B/rootfs/.$name.XXXXXX")
	# a failed or interrupted build leaves nothing behind
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
	log=$B/rootfs/$name.log
	echo "rootfs: building $name ($suite: $pkgs) into $dir" >&2
	start=$(date +%s)
	set -- --variant=minbase --include="$(echo "$pkgs" | tr ' ' ,)" --quiet
	[ -n "$aptopt" ] && set -- "$@" --aptopt="$aptopt"
	if ! mmdebstrap "$@" "$suite" "$tmp" "$mirror" >"$log" 2>&1; then
		die "mmdebstrap $suite failed: $(grep -E '^(E|W): ' "$log" | tail -n 1) (log: $log)"
	fi
	stamp_of >"$tmp/.nanlog-rootfs"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT
	echo "rootfs: $name built in $(($(date +%s) - start)) s, $(du -sm "$dir" | cut -f1) MiB" >&2
	echo "$dir"
}

[ $# -ge 1 ] || usage
case "$1" in
--list) echo "$NAMES" ;;
--check)
	[ $# -eq 2 ] || usage
	name=$2
	spec "$name"
	why=$(why_not "$B/rootfs/$name")
	[ -z "$why" ] || { echo "rootfs: $why" >&2; exit 1; }
	echo "$B/rootfs/$name"
	;;
-*) usage ;;
*)
	[ $# -eq 1 ] || usage
	name=$1
	spec "$name"
	command -v flock >/dev/null 2>&1 || die "flock not installed (util-linux)"
	mkdir -p "$B/rootfs"
	# one build of a root at a time (make -j, tests started side by side)
	exec 9>"$B/rootfs/.$name.lock"
	flock 9
	build
	;;
esac
