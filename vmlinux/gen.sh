#!/bin/sh
# Regenerate vmlinux/vmlinux.h (x86-64) from the running kernel's BTF.
# The committed header only needs the types the BPF programs use (pt_regs and
# the basic integer types), so any BTF-enabled kernel of the same arch will do.
set -eu
[ "$(uname -m)" = x86_64 ] || { echo "gen.sh: only x86-64 is supported" >&2; exit 1; }
btf=${1:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen.sh: $btf not readable: kernel built without CONFIG_DEBUG_INFO_BTF" >&2; exit 1; }
out=$(dirname "$0")/vmlinux.h
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
