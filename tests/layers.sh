#!/bin/sh
# The layering of user/ (user/README.md, docs/architecture.md): each folder
# may include only its own headers and those of the layers below it. Prints
# one PASS: or FAIL: line per check; exits 1 when one failed.
#   tests/layers.sh [ROOT]     ROOT: the tree to check (default: this one)
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
status=0

# what each layer may include besides itself
allowed() {
	case $1 in
	base) echo "" ;;
	record) echo "base" ;;
	proc) echo "record base" ;;
	engine) echo "record base" ;;
	out) echo "engine record base" ;;
	attach) echo "proc record base" ;;
	app) echo "attach out engine proc record base" ;;
	*) return 1 ;;
	esac
}

bad=""
stray=""
for f in user/*.[ch] user/*/*.[ch]; do
	[ -e "$f" ] || continue
	case $f in
	user/main.c) layer=main ;;
	user/*/*) layer=${f#user/}; layer=${layer%%/*} ;;
	*) stray="$stray $f"; continue ;;
	esac
	if [ "$layer" != main ] && ! allowed "$layer" >/dev/null; then
		stray="$stray $f"
		continue
	fi
	ok="$layer $(allowed "$layer" 2>/dev/null)"
	# every quoted include: "layer/name.h", or a header from include/ or the build
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		case $inc in
		nanlog_*.h | version.h | *.skel.h) continue ;;
		*/*) to=${inc%%/*} ;;
		*) bad="$bad $f:$inc(no-layer)"; continue ;;
		esac
		[ "$layer" = main ] && continue
		case " $ok " in
		*" $to "*) ;;
		*) bad="$bad $f:$inc" ;;
		esac
	done
done

if [ -z "$stray" ]; then
	echo "PASS: every source of user/ is in a layer folder (or is main.c)"
else
	echo "FAIL: sources outside the layer folders:$stray"
	status=1
fi
if [ -z "$bad" ]; then
	echo "PASS: no layer includes a higher one, and every include names its layer"
else
	echo "FAIL: includes against the layering:$bad"
	status=1
fi
exit $status
