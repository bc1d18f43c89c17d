#!/bin/sh
# make deb: the Debian package nanlog-bpf_VERSION_amd64.deb, built with the
# distribution's tools (debian/, debhelper, dpkg-buildpackage) in a copy of
# the tree, so that the build, `debian/rules clean` and the files
# dpkg-buildpackage writes next to the source never touch the tree.
#   scripts/deb.sh VERSION OUTDIR
# The copy's VERSION file holds VERSION (scripts/version.sh reads it there);
# when VERSION is not the newest entry of debian/changelog (a build between
# releases), the copy's changelog gets an entry for it, so that the package's
# version is the binary's.
set -eu
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/deb.sh VERSION OUTDIR" >&2; exit 2; }
v=$1 out=$2
case "$out" in /*) ;; *) out=$(pwd)/$out ;; esac
for t in dpkg-buildpackage dh dpkg-parsechangelog; do
	command -v "$t" >/dev/null 2>&1 || { echo "deb: $t not found (make deps installs dpkg-dev and debhelper)" >&2; exit 1; }
done
src=$out/src/nanlog-bpf-$v
rm -rf "$out/src"
mkdir -p "$src"
tar -C . --exclude=./build --exclude=./.git -cf - . | tar -C "$src" -xf -
echo "$v" >"$src/VERSION"
top=$(dpkg-parsechangelog -l debian/changelog -S Version)
if [ "$top" != "$v" ]; then
	maint=$(sed -n 's/^Maintainer: //p' debian/control)
	when=$(git -c safe.directory='*' log -1 --format=%aD 2>/dev/null || date -R)
	{
		printf 'nanlog-bpf (%s) unstable; urgency=medium\n\n' "$v"
		printf '  * Built from the tree between releases, after %s.\n\n' "$top"
		printf ' -- %s  %s\n\n' "$maint" "$when"
		cat debian/changelog
	} >"$src/debian/changelog"
fi
log=$out/build.log
echo "  (dpkg-buildpackage log: $log)"
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=${DEB_JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc) >"$log" 2>&1; then
	tail -30 "$log" >&2
	echo "deb: dpkg-buildpackage failed (the whole log: $log)" >&2
	exit 1
fi
deb=nanlog-bpf_${v}_amd64.deb
rm -f "$out"/nanlog-bpf_*_amd64.deb
mv "$out/src/$deb" "$out/$deb"
rm -rf "$out/src"
echo "  $out/$deb"
