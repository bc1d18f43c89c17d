#!/bin/sh
# The version of nanlog-bpf, from one place (docs/packaging.md):
#   - NANLOG_VERSION when set: a version computed by this script elsewhere
#     and handed on (the container image's build has no .git);
#   - in a git checkout: `git describe` of the newest v* tag, as
#     0.2.0 (at the tag), 0.2.0+3.gabc123def456 (3 commits after it); with no
#     v* tag yet, the VERSION file plus the commit count and hash; a tree with
#     uncommitted changes gets ".dirty";
#   - otherwise (a release tarball, the package build's copy): the VERSION file.
# The result is a valid Debian native version (no '-'), so the binary
# (--version), the man page and the package all carry the same string.
set -eu
cd "$(dirname "$0")/.."
if [ -n "${NANLOG_VERSION:-}" ]; then
	v=$NANLOG_VERSION
# safe.directory: the tree may belong to another user than the one asking
# (make install run as a user who cannot write the prefix, a sudo'ed build)
elif top=$(git -c safe.directory='*' rev-parse --show-toplevel 2>/dev/null) && [ "$top" = "$(pwd -P)" ]; then
	git() { command git -c safe.directory='*' "$@"; }
	if d=$(git describe --tags --match 'v[0-9]*' --abbrev=12 --dirty 2>/dev/null); then
		# v0.2.0-3-gabc123def456-dirty -> 0.2.0+3.gabc123def456.dirty
		v=$(echo "$d" | sed -e 's/^v//' -e 's/-\([0-9][0-9]*\)-g\([0-9a-f]*\)/+\1.g\2/' -e 's/-dirty$/.dirty/' -e 's/^\([^+]*\)\.dirty$/\1+dirty/')
	else
		base=$(cat VERSION)
		v="$base+$(git rev-list --count HEAD).g$(git rev-parse --short=12 HEAD)"
		git diff --quiet HEAD -- 2>/dev/null || v="$v.dirty"
	fi
else
	v=$(cat VERSION)
fi
case "$v" in
[0-9]*) ;;
*) echo "version.sh: '$v' does not start with a digit" >&2; exit 1 ;;
esac
case "$v" in
*[!0-9A-Za-z.+~]*) echo "version.sh: '$v' is not a Debian native version" >&2; exit 1 ;;
esac
echo "$v"
