#!/bin/sh
# make bench: the performance figures of docs/performance.md, measured side by
# side in one run, written as a table into docs/performance.md (between the
# BENCH-TABLE markers) and as JSON into $B/bench.json. Needs root (BPF),
# bpftrace, /usr/bin/time (Debian package time) and jq. Takes about 2 minutes,
# and some 5 more for the real runtimes (bench/real.sh) when their root file
# systems are there (scripts/rootfs.sh). BENCH_ONLY=real runs only those and
# writes only their part of $B/bench.json, leaving docs/performance.md alone.
#
# Environment: BENCH_REPS (5) repetitions, interleaved; BENCH_CALLS (100000)
# probed calls per microbenchmark run; BENCH_BATCHES (300) workload batches;
# BENCH_BIG_ITER (100000) iterations in the long recording; BENCH_MLP_LAYERS (200)
# dense layers and BENCH_MLP_BATCHES (100) batches in the second workload; B (build).
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
REPS=${BENCH_REPS:-5}
CALLS=${BENCH_CALLS:-100000}
BATCHES=${BENCH_BATCHES:-300}
BIG_ITER=${BENCH_BIG_ITER:-100000}
TOOL=$B/nanlog-bpf
JSON=$B/bench.json
DOC=docs/performance.md

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (BPF programs and uprobes)"
for c in bpftrace bpftool jq taskset sysctl; do command -v $c >/dev/null || die "$c missing (make deps)"; done
[ -x /usr/bin/time ] || die "/usr/bin/time missing (Debian package time; make deps)"
for f in $TOOL $B/bench/micro $B/bench/floor $B/bench/bigrec $B/bench/enginebench \
	$B/sim/pipeline $B/sim/knowncalls $B/sim/cf/libamdhip64.so.5; do
	[ -x "$f" ] || die "$f missing: make all"
done

W=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for r in ${real_roots:-}; do rm -rf "$r/tmp/nanlog-bench"; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
LIB=$(realpath "$B/sim/libamdhip64.so.5")
# simhip built with -fcf-protection: endbr64; push %rbp, single-stepped at the
# symbol, emulated where nanlog-bpf places its probes
LIB_SS=$(realpath "$B/sim/cf/libamdhip64.so.5")

now_ns() { date +%s%N; }
# wait_for PATTERN FILE [SECONDS [PID ERRFILE]]: PID must stay alive meanwhile;
# an empty PATTERN waits for FILE to exist
wait_for() {
	wf_n=$(( ${3:-30} * 20 ))
	while [ "$wf_n" -gt 0 ]; do
		if [ -z "$1" ]; then [ -e "$2" ] && return 0; else grep -q -- "$1" "$2" 2>/dev/null && return 0; fi
		if [ -n "${4:-}" ] && ! kill -0 "$4" 2>/dev/null; then
			die "exited before '$1' showed in $2: $(tail -5 "$5" 2>/dev/null)"
		fi
		sleep 0.05
		wf_n=$((wf_n - 1))
	done
	die "timed out waiting for '$1' in $2: $(tail -5 "${5:-/dev/null}" 2>/dev/null)"
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "null"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
# col FILE MODE FIELD: the values of one mode
col() { awk -v m="$2" -v f="$3" '$1 == m {print $f}' "$1"; }

# ---------------------------------------------------------------------------
# 1. Added cost per probed call. The job (micro) runs on CPU 0, the tracer on
#    CPU 1: a training process and the tool do not share a core. simhip's
#    stream workers (the simulated device) run under SCHED_BATCH: a real
#    device does not take the host thread's CPU, and workers woken on CPU 0
#    preempted the host thread more often the slower its calls were, which
#    added some 2.5 times the probes' own cost to every figure.
# ---------------------------------------------------------------------------
# bpftrace: the same fields nanlog-bpf records (pid, tid, entry time, the six
# register arguments, the stack arguments; at return the return time and rc),
# printed as text to a file, for the APIs the microbenchmark calls. The pid
# predicate is needed besides -p: bpftrace 0.17 places library uprobes for
# every process. Its output to a file is block-buffered, so readiness is a
# file that BEGIN (run once every probe is in place) creates: --unsafe.
bt_script() { # PID READY-FILE LIB
	L=$3
	cat <<EOF
BEGIN { system("touch $2"); }
uprobe:$L:hipEventRecord, uprobe:$L:hipStreamWaitEvent, uprobe:$L:hipMemcpyAsync
/pid == $1/
{ printf("%s %d %d %llu %lx %lx %lx %lx %lx %lx\\n", probe, pid, tid, nsecs, arg0, arg1, arg2, arg3, arg4, arg5); }
uprobe:$L:hipLaunchKernel
/pid == $1/
{ printf("%s %d %d %llu %lx %lx %lx %lx %lx %lx %lx %lx\\n", probe, pid, tid, nsecs, arg0, arg1, arg2, arg3, arg4, arg5, *(uint64 *)(reg("sp") + 8), *(uint64 *)(reg("sp") + 16)); }
uprobe:$L:hipEventQuery, uprobe:$L:hipStreamSynchronize
/pid == $1/
{ @s[tid] = (nsecs, arg0, arg1, arg2, arg3, arg4, arg5); }
uretprobe:$L:hipEventQuery, uretprobe:$L:hipStreamSynchronize
/pid == $1 && @s[tid].0/
{ \$e = @s[tid]; printf("%s %d %d %llu %llu %d %lx %lx %lx %lx %lx %lx\\n", probe, pid, tid, \$e.0, nsecs, (int32)retval, \$e.1, \$e.2, \$e.3, \$e.4, \$e.5, \$e.6); delete(@s[tid]); }
END { clear(@s); }
EOF
}

# tracer_start MODE PID LIB DIR: the tracer of MODE attached to PID and ready
# (LIB: the runtime's file, for the floor and bpftrace; DIR: its files); tp
# is its pid, empty for none. floor* at the symbols, *_placed and floor_ssp
# where nanlog-bpf places its probes (floor -P).
tracer_start() {
	ts_m=$1 ts_p=$2 ts_lib=$3 ts_d=$4
	tp=
	case $ts_m in
	floor* | capture | ring)
		fm=floor fo=
		case $ts_m in capture | ring) fm=$ts_m ;; *_placed | floor_ssp) fo=-P ;; esac
		taskset -c 1 "$B/bench/floor" -m $fm $fo -p "$ts_p" "$ts_lib" >"$ts_d/t.out" 2>"$ts_d/t.err" &
		tp=$!
		wait_for '^attached' "$ts_d/t.out" 30 $tp "$ts_d/t.err" ;;
	nanlog*)
		taskset -c 1 "$TOOL" -p "$ts_p" -o "$ts_d/t.out" 2>"$ts_d/t.err" &
		tp=$!
		wait_for 'symbols attached' "$ts_d/t.err" 60 $tp "$ts_d/t.err" ;;
	stalled)
		# the reader stopped for the timed calls (a sidecar at its CPU limit)
		taskset -c 1 "$TOOL" -p "$ts_p" --ringbuf-size "$STALL_RING" -o "$ts_d/t.out" 2>"$ts_d/t.err" &
		tp=$!
		wait_for 'symbols attached' "$ts_d/t.err" 30 $tp "$ts_d/t.err"
		kill -STOP "$tp" ;;
	bpftrace*)
		bt_script "$ts_p" "$ts_d/bt.ready" "$ts_lib" >"$ts_d/m.bt"
		taskset -c 1 bpftrace --unsafe -p "$ts_p" -o "$ts_d/t.out" "$ts_d/m.bt" >/dev/null 2>"$ts_d/t.err" &
		tp=$!
		wait_for '' "$ts_d/bt.ready" 120 $tp "$ts_d/t.err" ;;
	esac
	[ -z "$tp" ] || pids="$pids $tp"
}
tracer_stop() {
	if [ -n "$tp" ]; then
		kill -INT "$tp" 2>/dev/null
		wait "$tp"
	fi
}

# micro_run MODE: one run; appends "MODE calls elapsed_ns captured" to micro.tsv
micro_run() {
	m=$1 r=$W/run
	rm -rf "$r" && mkdir "$r"
	libdir=$B/sim lib=$LIB
	case $m in *_ss | *_ssp) libdir=$B/sim/cf lib=$LIB_SS ;; esac
	env LD_LIBRARY_PATH="$libdir" SIMHIP_BANDWIDTH_MBPS=0 SIMHIP_TIME_SCALE=0 \
		SIMHIP_BATCH_WORKERS=1 taskset -c 0 "$B/bench/micro" -g -n "$CALLS" \
		>"$r/micro.out" 2>"$r/micro.err" &
	mp=$!
	pids="$pids $mp"
	wait_for '^ready' "$r/micro.out"
	tracer_start "$m" "$mp" "$lib" "$r"
	kill -USR1 "$mp"
	wait "$mp" || die "micro failed under $m: $(cat "$r/micro.err")"
	[ "$m" = stalled ] && kill -CONT "$tp"
	tracer_stop
	case $m in
	nanlog | stalled | nanlog_ss)
		cap=$(jq -s 'map(select(.type == "summary"))[0].records // 0' "$r/t.out")
		# the tool's own CPU time per record: ring, decoding, engine, audit
		# lines; its start (loading the BPF object, attaching) included
		[ "$m" = nanlog ] &&
			jq -s 'map(select(.type == "summary"))[0] | .cpu_ms * 1e6 / .records' "$r/t.out" \
				>>"$W/toolcpu.txt" ;;
	bpftrace | bpftrace_ss) cap=$(grep -c "^u.*probe:.* $mp " "$r/t.out") ;;
	ring) cap=$(awk '/^records/ {print $2}' "$r/t.out") ;;
	*) cap=0 ;;
	esac
	awk -v m="$m" -v c="$cap" '/^calls/ {print m, $2, $4, c}' "$r/micro.out" >>"$W/micro.tsv"
}

# The real runtimes (bench/real.sh), alone with BENCH_ONLY=real
. bench/real.sh
if [ "${BENCH_ONLY:-}" = real ]; then
	real_bench
	jq '{real_lib: .}' "$W/real.json" >"$JSON" || die "cannot write $JSON"
	echo "bench: wrote $JSON"
	cat "$W/real.md"
	exit 0
fi

# the stalled reader's ring: the smallest power of two over 80 bytes a call, so
# that it holds every record of the mix (about 70 bytes each with the ring's
# header) and is past a quarter full after about a third of the calls
STALL_RING=4096
while [ "$STALL_RING" -lt $((CALLS * 80)) ]; do STALL_RING=$((STALL_RING * 2)); done
# capture and ring: the floor tracer's other programs (bench/floor.bpf.c), the
# least any tracer adds: the time, thread and registers of every hit kept in a
# per-CPU buffer (g), and the same sent through a ring buffer (h)
# floor_ss, floor_ssp, nanlog_ss and bpftrace_ss: on simhip built with
# -fcf-protection, the floor at the symbols (single-stepped) and where
# nanlog-bpf places its probes (emulated), the tool, and bpftrace (at the
# symbols, single-stepped)
MODES="none floor nanlog bpftrace floor_ss floor_ssp stalled capture ring nanlog_ss bpftrace_ss"
# shellcheck disable=SC2086
set -- $MODES
NMODES=$#
echo "bench: 1/5 added cost per probed call ($REPS x $NMODES runs of $CALLS calls)"
: >"$W/micro.tsv"
: >"$W/toolcpu.txt"
for rep in $(seq 1 "$REPS"); do
	# a different order each repetition, so drift does not favour one mode
	for m in "$@"; do micro_run "$m"; done
	first=$1
	shift
	set -- "$@" "$first"
done
# floor_ss: the floor once more, on the simhip whose probes are single-stepped
# (its untraced calls cost what simhip's do: the prologue is a few instructions)
for m in $MODES; do
	col "$W/micro.tsv" $m 3 | median >"$W/med.$m"
	col "$W/micro.tsv" $m 4 | median >"$W/cap.$m"
done
MCALLS=$(col "$W/micro.tsv" none 2 | head -1)
# the ratios of each repetition alone (NMODES consecutive lines, one per
# variant), to show how far one run can stray from the medians: "min max"
rep_ratios() { # NUMERATOR-MODE DENOMINATOR-MODE
	awk -v n="$1" -v d="$2" -v k="$NMODES" '
		{ v[$1] = $3 }
		NR % k == 0 { r = (v[n] - v["none"]) / (v[d] - v["none"])
			if (NR == k || r < lo) lo = r; if (NR == k || r > hi) hi = r }
		END { printf "[%.3f, %.3f]\n", lo, hi }' "$W/micro.tsv"
}
RANGE_FLOOR=$(rep_ratios nanlog floor)
RANGE_BT=$(rep_ratios nanlog bpftrace)
RANGE_CAPTURE=$(rep_ratios capture floor)
RANGE_RING=$(rep_ratios ring floor)
RANGE_SS=$(rep_ratios nanlog_ss floor_ss)
TOOL_CPU=$(median <"$W/toolcpu.txt")
real_bench

# ---------------------------------------------------------------------------
# 2. The workload's iteration time, traced and untraced.
# ---------------------------------------------------------------------------
# wl_run TAG MODE [WORKLOAD-ARGS [TOOL-ARGS]]: one run; a line
# "TAG ns records nested counted tool-cpu-ms"
wl_run() {
	tag=$1 m=$2 wargs=${3:-} targs=${4:-} r=$W/wl
	rm -rf "$r" && mkdir "$r"
	# shellcheck disable=SC2086 # wargs: words
	env LD_LIBRARY_PATH="$B/sim" ${WL_ENV:-} taskset -c 0 "$B/sim/pipeline" --gate-signal \
		--batches "${WL_BATCHES:-$BATCHES}" $wargs >"$r/p.out" 2>"$r/p.err" &
	pp=$!
	pids="$pids $pp"
	wait_for '^ready' "$r/p.out"
	tp=
	if [ "$m" = nanlog ]; then
		# shellcheck disable=SC2086 # targs: words
		taskset -c 1 "$TOOL" -p "$pp" $targs -o "$r/t.out" 2>"$r/t.err" &
		tp=$!
		pids="$pids $tp"
		wait_for 'symbols attached' "$r/t.err"
	fi
	t0=$(now_ns)
	kill -USR1 "$pp"
	wait "$pp" || die "pipeline failed under $m: $(cat "$r/p.err")"
	t1=$(now_ns)
	rec=0 nest=0 cnt=0 cpu=0
	if [ -n "$tp" ]; then
		kill -INT "$tp" 2>/dev/null
		wait "$tp"
		# ring-buffer records and launches counted in the kernel, from the last line
		set -- $(sed -n 's/.* \([0-9]*\) records processed (and \([0-9]*\) launches counted.*/\1 \2/p' "$r/t.err")
		rec=${1:-0} cnt=${2:-0}
		nest=$(jq -s 'map(select(.type == "summary"))[0].nested_folded // 0' "$r/t.out")
		cpu=$(jq -s 'map(select(.type == "summary"))[0].cpu_ms // 0' "$r/t.out")
	fi
	echo "$tag $((t1 - t0)) $rec $nest $cnt $cpu" >>"$W/wl.tsv"
}
echo "bench: 2/5 workload iteration time ($REPS x 2 runs of $BATCHES batches)"
: >"$W/wl.tsv"
for rep in $(seq 1 "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then wl_run none none; wl_run nanlog nanlog; else wl_run nanlog nanlog; wl_run none none; fi
done
# The same with dense layers: runs of launches on the compute stream, as a
# real model makes them; counted in the kernel, and one record per launch.
# No simulated GPU time and no host sleep: the host's calls are the
# iteration, so what tracing adds to them shows whole.
MLP=${BENCH_MLP_LAYERS:-200}
MLP_BATCHES=${BENCH_MLP_BATCHES:-100}
echo "bench: 2b/5 workload with $MLP dense layers ($REPS x 3 runs of $MLP_BATCHES batches)"
WL_ENV="SIMHIP_TIME_SCALE=0 SIMHIP_BANDWIDTH_MBPS=0" WL_BATCHES=$MLP_BATCHES
mlp_run() {
	case $1 in
	0) wl_run mlp_none none "--mlp-layers $MLP --iter-sleep-ms 0" ;;
	1) wl_run mlp_counted nanlog "--mlp-layers $MLP --iter-sleep-ms 0" ;;
	2) wl_run mlp_every nanlog "--mlp-layers $MLP --iter-sleep-ms 0" --every-launch ;;
	esac
}
for rep in $(seq 1 "$REPS"); do
	# the order rotates from one repetition to the next
	for k in 0 1 2; do mlp_run $(((rep + k) % 3)); done
done
WL_ENV= WL_BATCHES=
MLP_NONE=$(col "$W/wl.tsv" mlp_none 2 | median)
MLP_COUNTED=$(col "$W/wl.tsv" mlp_counted 2 | median)
MLP_EVERY=$(col "$W/wl.tsv" mlp_every 2 | median)
MLP_REC_COUNTED=$(col "$W/wl.tsv" mlp_counted 3 | median)
MLP_REC_EVERY=$(col "$W/wl.tsv" mlp_every 3 | median)
MLP_CNT=$(col "$W/wl.tsv" mlp_counted 5 | median)
MLP_CPU_COUNTED=$(col "$W/wl.tsv" mlp_counted 6 | median)
MLP_CPU_EVERY=$(col "$W/wl.tsv" mlp_every 6 | median)
WL_NONE=$(col "$W/wl.tsv" none 2 | median)
WL_NANLOG=$(col "$W/wl.tsv" nanlog 2 | median)
WL_REC=$(col "$W/wl.tsv" nanlog 3 | median)
WL_NEST=$(col "$W/wl.tsv" nanlog 4 | median)
# probe hits per iteration, counted by the kernel: one more traced run with
# kernel.bpf_stats_enabled, whose run_cnt of nl_entry and nl_return is every
# entry and return probe hit (folded nested calls and their returns included).
# Its timing is not used: the statistics cost a little per hit.
r=$W/hits && mkdir -p "$r"
env LD_LIBRARY_PATH="$B/sim" "$B/sim/pipeline" --gate-signal --batches "$BATCHES" >"$r/p.out" 2>"$r/p.err" &
pp=$!
pids="$pids $pp"
wait_for '^ready' "$r/p.out"
"$TOOL" -p "$pp" -o /dev/null 2>"$r/t.err" &
tp=$!
pids="$pids $tp"
wait_for 'symbols attached' "$r/t.err" 30 $tp "$r/t.err"
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
kill -USR1 "$pp"
wait "$pp" || die "pipeline failed: $(cat "$r/p.err")"
# run_cnt of the tool's two programs (no other nanlog-bpf may run meanwhile)
runcnt() { bpftool -j prog show | jq --arg n "$1" '[.[] | select(.name == $n) | .run_cnt // 0] | add // 0'; }
WL_HITS_ENTRY=$(runcnt nl_entry)
WL_HITS_RET=$(runcnt nl_return)
sysctl -q -w kernel.bpf_stats_enabled="$STATS_WAS"
kill -INT "$tp"
wait "$tp"
[ "$WL_HITS_ENTRY" -gt 0 ] || die "no probe hits counted (bpftool prog show: no run_cnt?)"

# ---------------------------------------------------------------------------
# 3 and 4. Engine throughput and memory, from a long recording.
# ---------------------------------------------------------------------------
echo "bench: 3/5 engine throughput (recording of $BIG_ITER iterations)"
env LD_LIBRARY_PATH="$B/sim" "$TOOL" -q --record "$W/seed.rec" -o /dev/null -- \
	"$B/sim/pipeline" --batches 400 >/dev/null 2>"$W/seed.err" || die "recording failed: $(cat "$W/seed.err")"
"$B/bench/bigrec" -b "$BIG_ITER" -r 5000000 "$W/seed.rec" "$W/big.rec" >"$W/big.txt" || die "bigrec failed"
"$B/bench/bigrec" -b 1000 "$W/seed.rec" "$W/k1.rec" >"$W/k1.txt" || die "bigrec failed"
BIG_RECORDS=$(awk '{print $2}' "$W/big.txt")
: >"$W/eng.tsv"
: >"$W/rep.tsv"
for rep in $(seq 1 "$REPS"); do
	taskset -c 0 "$B/bench/enginebench" "$W/big.rec" >>"$W/eng.tsv" || die "enginebench failed"
	/usr/bin/time -f '%e %U %S %M' -o "$W/time.out" taskset -c 0 "$TOOL" --replay "$W/big.rec" -q \
		-o "$W/big.out" --force || die "replay failed"
	echo "$(cat "$W/time.out") $(jq -s 'map(select(.type == "summary"))[0].batches' "$W/big.out")" >>"$W/rep.tsv"
done
ENG_NS=$(awk '{print $8}' "$W/eng.tsv" | median)
ENG_ALLOCS=$(awk '{print $12}' "$W/eng.tsv" | median)
REP_WALL=$(awk '{print $1}' "$W/rep.tsv" | median)
REP_CPU=$(awk '{print $2 + $3}' "$W/rep.tsv" | median)
RSS_100K=$(awk '{print $4}' "$W/rep.tsv" | median)
BATCHES_100K=$(awk '{print $5}' "$W/rep.tsv" | head -1)
echo "bench: 4/5 memory after 1,000 and $BATCHES_100K batches"
: >"$W/k1.tsv"
for rep in $(seq 1 "$REPS"); do
	/usr/bin/time -f '%M' -o "$W/time.out" "$TOOL" --replay "$W/k1.rec" -q -o "$W/k1.out" --force ||
		die "replay failed"
	echo "$(cat "$W/time.out") $(jq -s 'map(select(.type == "summary"))[0].batches' "$W/k1.out")" >>"$W/k1.tsv"
done
RSS_1K=$(awk '{print $1}' "$W/k1.tsv" | median)
BATCHES_1K=$(awk '{print $2}' "$W/k1.tsv" | head -1)

# ---------------------------------------------------------------------------
# 5. Attach and detach on Debian's real libamdhip64.so.5.
# ---------------------------------------------------------------------------
echo "bench: 5/5 attach and detach on the real libamdhip64.so.5"
REAL=$(ldconfig -p | awk '/libamdhip64\.so\.5 /{print $NF; exit}')
[ -n "$REAL" ] || die "Debian's libamdhip64.so.5 is not installed (make deps)"
REALDIR=$(dirname "$(realpath "$REAL")")
: >"$W/att.tsv"
for rep in $(seq 1 "$REPS"); do
	r=$W/att
	rm -rf "$r" && mkdir "$r"
	env LD_LIBRARY_PATH="$REALDIR" "$B/sim/knowncalls" -g >"$r/k.out" 2>"$r/k.err" &
	kp=$!
	pids="$pids $kp"
	wait_for '^ready' "$r/k.err"
	t0=$(now_ns)
	"$TOOL" -p "$kp" -o "$r/t.out" 2>"$r/t.err" &
	tp=$!
	pids="$pids $tp"
	wait_for 'symbols attached' "$r/t.err" 60
	t1=$(now_ns)
	kill -INT "$tp"
	wait "$tp"
	t2=$(now_ns)
	kill -KILL "$kp" 2>/dev/null
	wait "$kp" 2>/dev/null
	ins=$(jq -s 'map(select(.type == "summary"))[0].attach_ns' "$r/t.out")
	probes=$(jq -s 'map(select(.type == "summary"))[0].probes_attached' "$r/t.out")
	echo "$ins $((t1 - t0)) $((t2 - t1)) $probes" >>"$W/att.tsv"
done
ATT_IN=$(awk '{print $1}' "$W/att.tsv" | median)
ATT_EXT=$(awk '{print $2}' "$W/att.tsv" | median)
DET_EXT=$(awk '{print $3}' "$W/att.tsv" | median)
ATT_PROBES=$(awk '{print $4}' "$W/att.tsv" | head -1)

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------
CPU=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo)
NCPU=$(nproc)
KERNEL=$(uname -r)
VIRT=$(systemd-detect-virt 2>/dev/null || echo unknown)
BTV=$(bpftrace --version 2>/dev/null | awk '{print $2}')
jq -n \
	--arg cpu "$CPU" --argjson cores "$NCPU" --arg kernel "$KERNEL" --arg virt "$VIRT" \
	--arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg bpftrace "$BTV" \
	--argjson reps "$REPS" --argjson calls "$MCALLS" \
	--argjson a "$(cat "$W/med.none")" --argjson b "$(cat "$W/med.floor")" \
	--argjson c "$(cat "$W/med.nanlog")" --argjson d "$(cat "$W/med.bpftrace")" \
	--argjson e "$(cat "$W/med.floor_ss")" --argjson tool_cpu "$TOOL_CPU" \
	--argjson e_p "$(cat "$W/med.floor_ssp")" --slurpfile real "$W/real.json" \
	--argjson g "$(cat "$W/med.capture")" --argjson h "$(cat "$W/med.ring")" \
	--argjson cap_h "$(cat "$W/cap.ring")" --argjson range_g "$RANGE_CAPTURE" \
	--argjson range_h "$RANGE_RING" \
	--argjson c_ss "$(cat "$W/med.nanlog_ss")" --argjson d_ss "$(cat "$W/med.bpftrace_ss")" \
	--argjson cap_c_ss "$(cat "$W/cap.nanlog_ss")" --argjson cap_d_ss "$(cat "$W/cap.bpftrace_ss")" \
	--argjson range_ss "$RANGE_SS" \
	--argjson f "$(cat "$W/med.stalled")" --argjson cap_f "$(cat "$W/cap.stalled")" \
	--argjson stall_ring "$STALL_RING" \
	--argjson range_floor "$RANGE_FLOOR" --argjson range_bt "$RANGE_BT" \
	--argjson cap_c "$(cat "$W/cap.nanlog")" --argjson cap_d "$(cat "$W/cap.bpftrace")" \
	--argjson batches "$BATCHES" --argjson wl_none "$WL_NONE" --argjson wl_nanlog "$WL_NANLOG" \
	--argjson wl_rec "$WL_REC" --argjson wl_nest "$WL_NEST" \
	--argjson mlp "$MLP" --argjson mlp_batches "$MLP_BATCHES" --argjson mlp_none "$MLP_NONE" --argjson mlp_counted "$MLP_COUNTED" \
	--argjson mlp_every "$MLP_EVERY" --argjson mlp_rec_counted "$MLP_REC_COUNTED" \
	--argjson mlp_rec_every "$MLP_REC_EVERY" --argjson mlp_cnt "$MLP_CNT" \
	--argjson mlp_cpu_counted "$MLP_CPU_COUNTED" --argjson mlp_cpu_every "$MLP_CPU_EVERY" \
	--argjson wl_hits_entry "$WL_HITS_ENTRY" --argjson wl_hits_ret "$WL_HITS_RET" \
	--argjson big_records "$BIG_RECORDS" --argjson eng_ns "$ENG_NS" --argjson eng_allocs "$ENG_ALLOCS" \
	--argjson rep_wall "$REP_WALL" --argjson rep_cpu "$REP_CPU" \
	--argjson rss_1k "$RSS_1K" --argjson rss_100k "$RSS_100K" \
	--argjson b1k "$BATCHES_1K" --argjson b100k "$BATCHES_100K" \
	--argjson att_in "$ATT_IN" --argjson att_ext "$ATT_EXT" --argjson det_ext "$DET_EXT" \
	--argjson att_probes "$ATT_PROBES" '
def r(n): (. * pow(10; n) | round) / pow(10; n);
{
  machine: {cpu: $cpu, cores: $cores, kernel: $kernel, virtualization: $virt, date: $date,
            bpftrace: $bpftrace},
  method: {repetitions: $reps, interleaved: true, statistic: "median"},
  micro: {
    calls: $calls,
    elapsed_ns: {untraced: $a, floor: $b, nanlog: $c, bpftrace: $d, floor_single_step: $e,
                 floor_single_step_placed: $e_p,
                 nanlog_reader_stopped: $f, bound_capture: $g, bound_ring: $h,
                 nanlog_single_step: $c_ss, bpftrace_single_step: $d_ss},
    ns_per_call_untraced: ($a / $calls | r(1)),
    added_ns_per_call: {floor: (($b - $a) / $calls | r(1)), nanlog: (($c - $a) / $calls | r(1)),
                        bpftrace: (($d - $a) / $calls | r(1)),
                        floor_single_step: (($e - $a) / $calls | r(1)),
                        floor_single_step_placed: (($e_p - $a) / $calls | r(1)),
                        nanlog_reader_stopped: (($f - $a) / $calls | r(1)),
                        bound_capture: (($g - $a) / $calls | r(1)),
                        bound_ring: (($h - $a) / $calls | r(1)),
                        nanlog_single_step: (($c_ss - $a) / $calls | r(1)),
                        bpftrace_single_step: (($d_ss - $a) / $calls | r(1))},
    reader_stopped: {ring_bytes: $stall_ring, records_after_resume: $cap_f},
    single_step_vs_emulated: ((($e - $a) / ($b - $a)) | r(2)),
    records_captured: {nanlog: $cap_c, bpftrace: $cap_d, bound_ring: $cap_h,
                       nanlog_single_step: $cap_c_ss, bpftrace_single_step: $cap_d_ss},
    tool_cpu_ns_per_record: ($tool_cpu | round)
  },
  overhead_ratio_vs_floor: ((($c - $a) / ($b - $a)) | r(3)),
  overhead_ratio_vs_bpftrace: ((($c - $a) / ($d - $a)) | r(3)),
  overhead_ratio_range_over_repetitions: {vs_floor: $range_floor, vs_bpftrace: $range_bt},
  bound_ratio_vs_floor: {capture: ((($g - $a) / ($b - $a)) | r(3)), ring: ((($h - $a) / ($b - $a)) | r(3)),
                         range_over_repetitions: {capture: $range_g, ring: $range_h}},
  single_step: {overhead_ratio_vs_floor: ((($c_ss - $a) / ($e - $a)) | r(3)),
                overhead_ratio_vs_floor_placed: ((($c_ss - $a) / ($e_p - $a)) | r(3)),
                overhead_ratio_vs_bpftrace: ((($c_ss - $a) / ($d_ss - $a)) | r(3)),
                bpftrace_vs_floor: ((($d_ss - $a) / ($e - $a)) | r(2)),
                overhead_ratio_vs_floor_range_over_repetitions: $range_ss},
  workload: {
    batches: $batches,
    iteration_ns_untraced: ($wl_none / $batches | round),
    iteration_ns_traced: ($wl_nanlog / $batches | round),
    records_per_iteration: ($wl_rec / $batches | r(1)),
    nested_calls_per_iteration: ($wl_nest / $batches | r(1)),
    entry_hits_per_iteration: ($wl_hits_entry / $batches | r(1)),
    return_hits_per_iteration: ($wl_hits_ret / $batches | r(1)),
    probe_hits_per_iteration: (($wl_hits_entry + $wl_hits_ret) / $batches | r(1)),
    added_ns_per_hit: ((($wl_nanlog - $wl_none) / ($wl_hits_entry + $wl_hits_ret)) | round)
  },
  iteration_slowdown: (($wl_nanlog / $wl_none) | r(3)),
  workload_dense: {
    mlp_layers: $mlp,
    batches: $mlp_batches,
    iteration_ns: {untraced: ($mlp_none / $mlp_batches | round), counted: ($mlp_counted / $mlp_batches | round),
                   every_launch: ($mlp_every / $mlp_batches | round)},
    iteration_slowdown: {counted: (($mlp_counted / $mlp_none) | r(3)),
                         every_launch: (($mlp_every / $mlp_none) | r(3))},
    records_per_iteration: {counted: ($mlp_rec_counted / $mlp_batches | r(1)),
                            every_launch: ($mlp_rec_every / $mlp_batches | r(1))},
    launches_counted_per_iteration: ($mlp_cnt / $mlp_batches | r(1)),
    tool_cpu_us_per_iteration: {counted: ($mlp_cpu_counted * 1e3 / $mlp_batches | r(1)),
                                every_launch: ($mlp_cpu_every * 1e3 / $mlp_batches | r(1))}
  },
  engine_records: $big_records,
  engine_records_per_s: ((1e9 / $eng_ns) | round),
  engine_ns_per_record: ($eng_ns | r(1)),
  engine_allocs_per_record: $eng_allocs,
  replay: {wall_s: $rep_wall, cpu_s: ($rep_cpu | r(2)),
           records_per_cpu_s: (($big_records / $rep_cpu) | round)},
  rss_mib_1k: (($rss_1k / 1024) | r(1)),
  rss_mib_100k: (($rss_100k / 1024) | r(1)),
  rss_batches: {small: $b1k, large: $b100k},
  attach_ms: (($att_in / 1e6) | r(1)),
  attach_ms_external: (($att_ext / 1e6) | r(1)),
  attach_probes: $att_probes,
  detach_ms: (($det_ext / 1e6) | r(1)),
  real_lib: $real[0],
  targets: {overhead_ratio_vs_floor: 1.10, overhead_ratio_vs_bpftrace: 0.50,
            engine_records_per_s: 5000000, rss_mib: 32}
}' >"$JSON" || die "cannot write $JSON"
echo "bench: wrote $JSON"

# the table in docs/performance.md, between its markers
ok() { if [ "$1" = true ]; then echo met; else echo "**not met**"; fi; }
table=$W/table.md
jq -r --arg ok1 "$(ok "$(jq '.overhead_ratio_vs_floor <= 1.10' "$JSON")")" \
	--arg ok2 "$(ok "$(jq '.overhead_ratio_vs_bpftrace <= 0.50' "$JSON")")" \
	--arg ok3 "$(ok "$(jq '.engine_records_per_s >= 5000000' "$JSON")")" \
	--arg ok4 "$(ok "$(jq '.rss_mib_100k <= 32 and .rss_mib_1k <= 32' "$JSON")")" '
"Machine: \(.machine.cpu), \(.machine.cores) cores, Linux \(.machine.kernel) (systemd-detect-virt: \(.machine.virtualization)), bpftrace \(.machine.bpftrace); \(.machine.date). Medians of \(.method.repetitions) interleaved repetitions.",
"",
"| figure | value | target |",
"|---|---|---|",
"| untraced call (simhip, micro mix) | \(.micro.ns_per_call_untraced) ns | |",
"| added per call: floor tracer (b) | \(.micro.added_ns_per_call.floor) ns | |",
"| added per call: nanlog-bpf (c) | \(.micro.added_ns_per_call.nanlog) ns | |",
"| added per call: bpftrace, same fields to a file (d) | \(.micro.added_ns_per_call.bpftrace) ns | |",
"| added per call: floor tracer, simhip built with -fcf-protection (endbr64; push %rbp), at the symbols: single-stepped (e) / placed past endbr64: emulated (e'"'"') | \(.micro.added_ns_per_call.floor_single_step) ns (\(.micro.single_step_vs_emulated) x (b)) / \(.micro.added_ns_per_call.floor_single_step_placed) ns | |",
"| added per call: nanlog-bpf with its reader stopped during the calls (ring \(.micro.reader_stopped.ring_bytes / 1048576) MiB, past a quarter full for most of them) | \(.micro.added_ns_per_call.nanlog_reader_stopped) ns (\(.micro.reader_stopped.records_after_resume) records read after it resumed) | |",
"| CPU time of nanlog-bpf itself per record (c), its start included | \(.micro.tool_cpu_ns_per_record) ns | |",
"| `overhead_ratio_vs_floor` (c-a)/(b-a) | \(.overhead_ratio_vs_floor) (single repetitions: \(.overhead_ratio_range_over_repetitions.vs_floor[0])-\(.overhead_ratio_range_over_repetitions.vs_floor[1])) | <= 1.10, \($ok1) |",
"| the least a tracer adds: the floor'"'"'s probes taking the time, thread and registers, kept per CPU (g) / sent through a ring buffer, one record per hit (h) | \(.micro.added_ns_per_call.bound_capture) ns / \(.micro.added_ns_per_call.bound_ring) ns (\(.micro.records_captured.bound_ring) records read) | |",
"| the same as ratios to the floor, (g-a)/(b-a) / (h-a)/(b-a) | \(.bound_ratio_vs_floor.capture) / \(.bound_ratio_vs_floor.ring) (single repetitions: \(.bound_ratio_vs_floor.range_over_repetitions.capture[0])-\(.bound_ratio_vs_floor.range_over_repetitions.capture[1]) / \(.bound_ratio_vs_floor.range_over_repetitions.ring[0])-\(.bound_ratio_vs_floor.range_over_repetitions.ring[1])) | |",
"| on simhip with -fcf-protection: added per call by nanlog-bpf (placed) / by bpftrace (at the symbols) | \(.micro.added_ns_per_call.nanlog_single_step) ns / \(.micro.added_ns_per_call.bpftrace_single_step) ns (bpftrace \(.single_step.bpftrace_vs_floor) x (e)) | |",
"| the same: nanlog-bpf'"'"'s ratios to the floor at the symbols (e) / placed (e'"'"') / to bpftrace | \(.single_step.overhead_ratio_vs_floor) (single repetitions: \(.single_step.overhead_ratio_vs_floor_range_over_repetitions[0])-\(.single_step.overhead_ratio_vs_floor_range_over_repetitions[1])) / \(.single_step.overhead_ratio_vs_floor_placed) / \(.single_step.overhead_ratio_vs_bpftrace) | |",
"| `overhead_ratio_vs_bpftrace` (c-a)/(d-a) | \(.overhead_ratio_vs_bpftrace) (single repetitions: \(.overhead_ratio_range_over_repetitions.vs_bpftrace[0])-\(.overhead_ratio_range_over_repetitions.vs_bpftrace[1])) | <= 0.50, \($ok2) |",
"| workload iteration, untraced / traced | \(.workload.iteration_ns_untraced / 1e3 | floor) us / \(.workload.iteration_ns_traced / 1e3 | floor) us | |",
"| `iteration_slowdown` | \(.iteration_slowdown) | |",
"| probe hits per iteration, counted by the kernel (entry + return) | \(.workload.probe_hits_per_iteration) (\(.workload.entry_hits_per_iteration) + \(.workload.return_hits_per_iteration)); \(.workload.records_per_iteration) records, \(.workload.nested_calls_per_iteration) nested calls folded | |",
"| added time per probe hit in the workload (traced - untraced) / hits | \(.workload.added_ns_per_hit) ns | |",
"| workload with \(.workload_dense.mlp_layers) dense layers, no GPU time and no host sleep: iteration untraced \(.workload_dense.iteration_ns.untraced / 1e3 | floor) us; slowdown with launches counted / one record per launch (`--every-launch`) | \(.workload_dense.iteration_slowdown.counted) / \(.workload_dense.iteration_slowdown.every_launch) | |",
"| the same: ring-buffer records per iteration, counted / one record per launch | \(.workload_dense.records_per_iteration.counted) / \(.workload_dense.records_per_iteration.every_launch) (\(.workload_dense.launches_counted_per_iteration) launches counted in the kernel) | |",
"| the same: CPU time of nanlog-bpf per iteration, counted / one record per launch | \(.workload_dense.tool_cpu_us_per_iteration.counted) us / \(.workload_dense.tool_cpu_us_per_iteration.every_launch) us | |",
"| `engine_records_per_s` (engine alone, \(.engine_records) records) | \(.engine_records_per_s) (\(.engine_ns_per_record) ns/record, \(.engine_allocs_per_record) allocations/record) | >= 5,000,000, \($ok3) |",
"| `--replay` of the same file, whole tool | \(.replay.records_per_cpu_s) records per CPU second (\(.replay.cpu_s) s CPU, \(.replay.wall_s) s wall) | |",
"| `rss_mib_1k` / `rss_mib_100k` (peak RSS after \(.rss_batches.small) / \(.rss_batches.large) batches) | \(.rss_mib_1k) MiB / \(.rss_mib_100k) MiB | flat, <= 32 MiB, \($ok4) |",
"| `attach_ms` (real libamdhip64.so.5, \(.attach_probes) probes; start to probes in place) | \(.attach_ms) ms (\(.attach_ms_external) ms seen from outside) | |",
"| `detach_ms` (SIGINT to exit) | \(.detach_ms) ms | |"
' "$JSON" >"$table" || die "cannot make the table"
cat "$W/real.md" >>"$table"
if [ -f "$DOC" ] && grep -q '^<!-- BENCH-TABLE -->' "$DOC" && grep -q '^<!-- /BENCH-TABLE -->' "$DOC"; then
	awk -v t="$table" '
		/^<!-- BENCH-TABLE -->/ {print; while ((getline l < t) > 0) print l; skip = 1; next}
		/^<!-- \/BENCH-TABLE -->/ {skip = 0}
		!skip {print}' "$DOC" >"$W/doc.md" && cat "$W/doc.md" >"$DOC"
	echo "bench: table updated in $DOC"
else
	echo "bench: $DOC has no BENCH-TABLE markers; the table:"
fi
cat "$table"
