#!/bin/sh
# make demo: the bundled TorchRec-like workload, started gated, one wait
# dropped at batch 3 (with a stalled sparse producer, so the race is real);
# nanlog-bpf attaches by PID, the gate opens, the audits print as they come.
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
if [ "$(id -u)" != 0 ]; then
	echo "demo: nanlog-bpf loads BPF programs: run as root (sudo make demo)" >&2
	exit 1
fi
export LD_LIBRARY_PATH="$B/sim"
tmp=$(mktemp -d)
trap 'kill $wl 2>/dev/null || true; rm -rf "$tmp"' EXIT INT TERM

echo "== workload: 8 batches, TorchRec pipeline depth 2, step d's compute wait dropped at batch 3"
"$B/sim/pipeline" --batches 8 --iter-sleep-ms 20 --drop d_compute_wait@3 \
	--stall sparse@3:40 --gate-signal --truth "$tmp/truth.json" >"$tmp/wl.out" 2>&1 &
wl=$!
while ! grep -q '^ready' "$tmp/wl.out" 2>/dev/null; do sleep 0.05; done
echo "== sudo nanlog-bpf -p $wl --format table"
"$B/nanlog-bpf" -p "$wl" --format table &
tool=$!
sleep 1
kill -USR1 "$wl"
wait "$tool" || true
echo
echo "== what the workload itself saw (its forward checks the bytes it read):"
grep -v '^ready' "$tmp/wl.out" || true
echo "== ground truth verdicts the workload wrote:"
jq -r 'select(.type=="batch") | "batch \(.batch): \(.verdict) \(.missing_edges | join(","))"' "$tmp/truth.json"
