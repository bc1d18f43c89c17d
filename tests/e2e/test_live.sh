# End-to-end: --live redraws a terminal view of the run once a second. The
# tool runs in a detached 80x24 tmux pane (Debian package tmux) against a slow
# workload; two captures of the pane must show the batch count growing, and
# no line of the view may be wider than 80 columns (real BPF, root).
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "live view: $why"
	exit 0
fi
if ! command -v tmux >/dev/null 2>&1; then
	skip "live view: tmux is not installed (Debian package tmux; make deps)"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"
SOCK="$TMP/tmux.sock"
tm() { tmux -S "$SOCK" "$@"; }

"$SIM/pipeline" --gate-signal --batches 40 --iter-sleep-ms 100 >"$TMP/w.out" 2>"$TMP/w.err" &
W=$!
at_exit "kill -KILL $W 2>/dev/null"
wait_for '^ready' "$TMP/w.out" || { fail "live view: workload did not start"; exit 0; }

# the pane runs the tool; JSON goes to a file, the view to the terminal
cat >"$TMP/run.sh" <<EOF
exec "$TOOL" -p $W --live -o "$TMP/live.json" 2>&1
EOF
at_exit "tmux -S '$SOCK' kill-server 2>/dev/null"
tm new-session -d -s live -x 80 -y 24 "sh '$TMP/run.sh'; echo \"exit \$?\" >'$TMP/rc'; sleep 60"
# capture N: the pane's screen, wrapped lines joined (a line wider than the
# pane shows as one long line)
capture() { tm capture-pane -p -J -t live >"$TMP/cap$1.txt"; }
count() { sed -n 's/^batches \([0-9][0-9]*\) .*/\1/p' "$TMP/cap$1.txt" | tail -1; }

if ! wait_for '"type":"attach".*librccl' "$TMP/live.json" 150; then
	fail "live view: the tool did not attach"
	capture err
	sed 's/^/  | /' "$TMP/caperr.txt" >&2
	exit 0
fi
kill -USR1 "$W"
sleep 1.5
capture 1
sleep 2
capture 2
check "the view is on screen (header and target row)" sh -c "
	grep -q '^nanlog-bpf  up ' '$TMP/cap2.txt' && grep -Eq '^ *$W pipeline ' '$TMP/cap2.txt'"
c1=$(count 1)
c2=$(count 2)
check "batch count grows between two captures (${c1:-none} -> ${c2:-none})" \
	test "${c1:-0}" -ge 0 -a "${c2:-0}" -gt "${c1:-0}"
check "no line wider than 80 columns" sh -c \
	"test \$(cat '$TMP/cap1.txt' '$TMP/cap2.txt' | awk '{ if (length > m) m = length } END { print m + 0 }') -le 80"
check "no escape sequence left on the screen" sh -c "! grep -q \"\$(printf '\\033')\" '$TMP/cap1.txt' '$TMP/cap2.txt'"
[ "${c2:-0}" -gt "${c1:-0}" ] || sed 's/^/  | /' "$TMP/cap2.txt" >&2

# the workload ends, and so does the tool
n=0
while [ $n -lt 300 ] && [ ! -s "$TMP/rc" ]; do
	sleep 0.1
	n=$((n + 1))
done
check "the tool exits 0 when the workload ends" test "$(cat "$TMP/rc" 2>/dev/null)" = "exit 0"
check "  ...its JSON records went to the file, not the screen" \
	jq -e -s '[.[] | select(.type == "batch")] | length >= 30' "$TMP/live.json"
