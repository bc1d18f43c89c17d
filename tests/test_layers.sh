#!/bin/sh
# The layering test (tests/layers.sh) on this tree, and on copies of it
# with one include against the rule, which it must refuse.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$here/tests/layers.sh" "$here"

# refused: engine/ including attach/, out/ including app/, a bare include
# of a user header, and a source outside the folders
check_refused() {
	what=$1
	rm -rf "$tmp/t" && mkdir -p "$tmp/t" && cp -r "$here/user" "$tmp/t/"
	shift
	"$@"
	if "$here/tests/layers.sh" "$tmp/t" >/dev/null; then
		echo "FAIL: the layering test accepts $what"
	else
		echo "PASS: the layering test refuses $what"
	fi
}
check_refused "engine/ including attach/" \
	sed -i '1i #include "attach/loader.h"' "$tmp/t/user/engine/engine.c"
check_refused "out/ including app/" \
	sed -i '1i #include "app/app.h"' "$tmp/t/user/out/trace.c"
check_refused "record/ including engine/" \
	sed -i '1i #include "engine/engine.h"' "$tmp/t/user/record/decode.c"
check_refused "an include without its layer" \
	sed -i '1i #include "engine.h"' "$tmp/t/user/out/raw.c"
check_refused "a source outside the layer folders" \
	cp "$here/user/out/raw.c" "$tmp/t/user/stray.c"
