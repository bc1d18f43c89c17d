#!/bin/sh
# Regenerate the generated seeds of tests/fuzz/corpus (make fuzz-seeds).
# The hand-written ones (cgroup, options, container maps) are kept as they are.
set -eu
cd "$(dirname "$0")/../../.."
B=${B:-build}
C=tests/fuzz/corpus
"$B/fuzz/gen_seeds" "$C" "$B/sim/libamdhip64.so.5" "$B/sim/librccl.so.1"
# the capture names this checkout's folders: give it the ROCm layout instead
here=$(pwd)
sed -i -e "s|$here/$B/sim/|/opt/rocm-6.0.2/lib/|" -e "s|$here/|/src/nanlog-bpf/|" \
	"$C/procmaps/host-dlopen.maps"
# small ELF files: page alignment off so they stay a few KiB
mkdir -p "$C/elfsym"
${CC:-cc} -Os -shared -fPIC -nostdlib -Wl,--version-script=tests/fuzz/gen/tinylib.map \
	-Wl,-z,noseparate-code -Wl,-z,max-page-size=16 -Wl,--build-id=none -Wl,--hash-style=gnu \
	-o "$C/elfsym/tinylib.so" tests/fuzz/gen/tinylib.c
strip -o "$C/elfsym/tinylib-stripped.so" "$C/elfsym/tinylib.so"
echo "seeds written under $C"
