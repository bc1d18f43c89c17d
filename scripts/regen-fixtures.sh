#!/bin/sh
# Regenerate tests/fixtures/: recordings of workload scenarios (made live,
# as root, with real BPF) and the audits their replay must print. Run after
# a change to the record layout, the API table or the audit output, then
# review the diff of the .expected.json files: it is the change in behaviour.
# The workload runs in its own mount namespace with the simulated runtime at
# /opt/rocm/lib, so the recordings name no folder of this machine.
#   scripts/regen-fixtures.sh --expected   only the .expected.json, from the
#                                          committed recordings (no root)
set -eu
cd "$(dirname "$0")/.."
B=${B:-build}
F=tests/fixtures

expected() { # NAME: the audits the replay of NAME.rec prints
	"$B/nanlog-bpf" --replay "$F/$1.rec" --raw -q --force -o "$F/$1.expected.json"
}

if [ "${1:-}" = --expected ]; then
	for rec in "$F"/*.rec; do
		expected "$(basename "$rec" .rec)"
	done
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "regen-fixtures: needs root (BPF)" >&2; exit 1; }

scenario() { # NAME WORKLOAD-ARGS...
	name=$1
	shift
	rm -f "$F/$name.rec" "$F/$name.expected.json"
	unshare --mount --propagation private sh -c '
		mkdir -p /opt/rocm/lib && mount -t tmpfs none /opt/rocm/lib &&
		cp "$0"/libamdhip64.so.5 "$0"/librccl.so.1 /opt/rocm/lib/ &&
		LD_LIBRARY_PATH=/opt/rocm/lib exec "$0"/pipeline --gate-signal "$@"' "$B/sim" "$@" >"$F/.wl" 2>&1 &
	wl=$!
	while ! grep -q '^ready' "$F/.wl"; do sleep 0.05; done
	pid=$(sed -n 's/^ready \([0-9]*\)/\1/p' "$F/.wl")
	"$B/nanlog-bpf" -p "$pid" -q --raw --record "$F/$name.rec" -o /dev/null &
	tool=$!
	sleep 0.5
	kill -USR1 "$pid"
	wait "$tool"
	wait "$wl" || true
	rm -f "$F/.wl"
	expected "$name"
	echo "$name: $(stat -c %s "$F/$name.rec") bytes, $(grep -c '"type":"batch"' "$F/$name.expected.json") batches"
}

scenario clean --batches 5
scenario drop_copy_sparse --batches 5 --drop b_data_dist_wait@2
scenario race_sparse_forward --batches 5 --drop d_compute_wait@2 --stall sparse@2:30
scenario simple_copy_forward --pattern simple --batches 5 --drop simple_compute_wait@3
scenario exit_mid_batch --batches 6 --exit-at 3
