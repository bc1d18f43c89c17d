# shellcheck shell=sh
# Sourced by bench/bench.sh: the microbenchmark on the real ROCm runtimes, each
# in its root file system (scripts/rootfs.sh: trixie holds ROCm 5.7.1, sid
# 6.4.3), side by side in one run. bench/micro is built here and run there
# under chroot, loading the release's libamdhip64 with dlopen; no GPU is
# needed: every call fails (hipErrorNoDevice) after passing its probes. Per
# release, the micro mix and hipLaunchKernel alone, each: untraced; the
# floor at the symbols (what any tool that probes the symbol pays, as
# bpftrace does); the floor where nanlog-bpf places its probes; nanlog-bpf;
# bpftrace. Writes $W/real.json ({} when no root is there) and, for the
# table, $W/real.md.
# Environment: BENCH_REAL_CALLS (100000) calls per run.
REAL_CALLS=${BENCH_REAL_CALLS:-100000}
# release:root:soname
REAL_RELEASES="5.7.1:trixie:libamdhip64.so.5 6.4.3:sid:libamdhip64.so.6"
REAL_MODES="none floor_entry floor_placed nanlog bpftrace"

field() { echo "$1" | cut -d: -f"$2"; }

# real_root NAME: the root file system scripts/rootfs.sh gives, or nothing
real_root() {
	if [ -x scripts/rootfs.sh ]; then
		scripts/rootfs.sh "$1" 2>>"$W/rootfs.err" | tail -1
	elif [ -d "$B/rootfs/$1" ]; then
		echo "$B/rootfs/$1"
	fi
}

# real_run RELEASE ROOT SONAME KIND MODE: one run; a line
# "RELEASE KIND MODE calls elapsed_ns" in real.tsv
real_run() {
	rel=$1 root=$2 so=$3 kind=$4 m=$5 r=$W/real
	rm -rf "$r" && mkdir "$r"
	lib=$(realpath "$root/usr/lib/x86_64-linux-gnu/$so")
	taskset -c 0 chroot "$root" "$REAL_BIN" -g -e -k "$kind" -l "$so" -n "$REAL_CALLS" \
		>"$r/micro.out" 2>"$r/micro.err" &
	mp=$!
	pids="$pids $mp"
	wait_for '^ready' "$r/micro.out" 30 $mp "$r/micro.err"
	tracer_start "$m" "$mp" "$lib" "$r"
	kill -USR1 "$mp"
	wait "$mp" || die "micro failed in $root under $m: $(cat "$r/micro.err")"
	tracer_stop
	awk -v r="$rel" -v k="$kind" -v m="$m" '/^calls/ {print r, k, m, $2, $4}' "$r/micro.out" >>"$W/real.tsv"
}

real_bench() {
	: >"$W/real.tsv"
	echo '{}' >"$W/real.json"
	: >"$W/real.md"
	have=
	for spec in $REAL_RELEASES; do
		rel=$(field "$spec" 1) name=$(field "$spec" 2) so=$(field "$spec" 3)
		root=$(real_root "$name")
		if [ -z "$root" ] || [ ! -e "$root/usr/lib/x86_64-linux-gnu/$so" ]; then
			echo "bench: real $rel skipped: no root file system with $so (scripts/rootfs.sh $name)"
			continue
		fi
		have="$have $rel:$root:$so"
	done
	[ -n "$have" ] || return 0
	# the client lives in each root for the run
	for spec in $have; do
		root=$(field "$spec" 2)
		mkdir -p "$root/tmp/nanlog-bench" && cp "$B/bench/micro" "$root/tmp/nanlog-bench/micro" ||
			die "cannot copy the microbenchmark into $root"
		real_roots="${real_roots:-} $root"
	done
	REAL_BIN=/tmp/nanlog-bench/micro
	# shellcheck disable=SC2086
	set -- $REAL_MODES
	echo "bench: real runtimes ($REPS x $(echo $have | wc -w) releases x 2 kinds x $# runs of $REAL_CALLS calls)"
	for rep in $(seq 1 "$REPS"); do
		for spec in $have; do
			rel=$(field "$spec" 1) root=$(field "$spec" 2) so=$(field "$spec" 3)
			for kind in mix launch; do
				for m in "$@"; do real_run "$rel" "$root" "$so" "$kind" "$m"; done
				first=$1
				shift
				set -- "$@" "$first"
			done
		done
	done
	for root in $real_roots; do rm -rf "$root/tmp/nanlog-bench"; done
	# per release and kind: medians, the interquartile range of single
	# repetitions' added cost, and the ratios with their spread
	awk '{printf "{\"i\":%d,\"rel\":\"%s\",\"kind\":\"%s\",\"mode\":\"%s\",\"calls\":%s,\"ns\":%s}\n", NR, $1, $2, $3, $4, $5}' \
		"$W/real.tsv" | jq -s '
def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def q(p): sort | if length == 0 then null else ((length - 1) * p) as $i | ($i | floor) as $lo |
	($i | ceil) as $hi | .[$lo] + (.[$hi] - .[$lo]) * ($i - $lo) end;
def r(n): (. * pow(10; n) | round) / pow(10; n);
# one kind of one release: rows in run order, one repetition per 5 rows
def figures:
	sort_by(.i) | .[0].calls as $n |
	(map(select(.mode == "none") | .ns) | med) as $a |
	# the repetitions, each its modes by name
	[range(0; length / 5) as $k | .[$k * 5 : $k * 5 + 5] | map({(.mode): .ns}) | add] as $reps |
	def added($m): (map(select(.mode == $m) | .ns) | med) - $a | . / $n | r(1);
	def rep_added($m): [$reps[] | (.[$m] - .none) / $n];
	def iqr($m): rep_added($m) | [q(0.25), q(0.75)] | map(r(1));
	def ratio($x; $y): {median: (added($x) / added($y) | r(3)),
		iqr: ([$reps[] | (.[$x] - .none) / (.[$y] - .none)] | [q(0.25), q(0.75)] | map(r(3)))};
	{calls: $n, ns_per_call_untraced: ($a / $n | r(1)),
	 added_ns_per_call: {floor_entry: added("floor_entry"), floor_placed: added("floor_placed"),
			     nanlog: added("nanlog"), bpftrace: added("bpftrace")},
	 added_ns_per_call_iqr: {floor_entry: iqr("floor_entry"), floor_placed: iqr("floor_placed"),
				 nanlog: iqr("nanlog"), bpftrace: iqr("bpftrace")},
	 ratio: {nanlog_vs_floor_entry: ratio("nanlog"; "floor_entry"),
		 nanlog_vs_floor_placed: ratio("nanlog"; "floor_placed"),
		 nanlog_vs_bpftrace: ratio("nanlog"; "bpftrace"),
		 floor_placed_vs_floor_entry: ratio("floor_placed"; "floor_entry")}};
group_by(.rel) | map({key: .[0].rel, value: (
	(map(select(.kind == "mix")) | figures) as $mix |
	(map(select(.kind == "launch")) | figures) as $l |
	$mix + {launch_ns_per_call_untraced: $l.ns_per_call_untraced,
		launch_added_ns_per_call: $l.added_ns_per_call,
		launch_added_ns_per_call_iqr: $l.added_ns_per_call_iqr, launch_ratio: $l.ratio})}) |
from_entries' >"$W/real.json" || die "cannot summarize the real runtimes"
	jq -r '
def row($rel; $what; $k; $t):
	"| real \($rel), \($what): added per call, floor at the symbols / floor placed / nanlog-bpf / bpftrace (interquartile ranges of single repetitions) | \($k.floor_entry) / \($k.floor_placed) / \($k.nanlog) / \($k.bpftrace) ns (\($t.floor_entry | join("-")) / \($t.floor_placed | join("-")) / \($t.nanlog | join("-")) / \($t.bpftrace | join("-"))) | |";
def ratio($rel; $what; $x; $name; $target):
	"| real \($rel), \($what): nanlog-bpf \($name) | \($x.median) (IQR \($x.iqr | join("-"))) | \(if $target then "<= \($target), \(if $x.median <= $target then "met" else "**not met**" end)" else "" end) |";
to_entries[] | .key as $rel | .value as $v |
	(if $rel == "5.7.1" then {mix: 0.40, launch: null, bt: 0.35} else {mix: 0.90, launch: 0.40, bt: null} end) as $tg |
	"| real \($rel): untraced call, micro mix / hipLaunchKernel alone (no GPU: every call fails) | \($v.ns_per_call_untraced) / \($v.launch_ns_per_call_untraced) ns | |",
	row($rel; "micro mix"; $v.added_ns_per_call; $v.added_ns_per_call_iqr),
	row($rel; "hipLaunchKernel alone"; $v.launch_added_ns_per_call; $v.launch_added_ns_per_call_iqr),
	ratio($rel; "micro mix"; $v.ratio.nanlog_vs_floor_entry; "/ floor at the symbols"; $tg.mix),
	ratio($rel; "hipLaunchKernel alone"; $v.launch_ratio.nanlog_vs_floor_entry; "/ floor at the symbols"; $tg.launch),
	ratio($rel; "micro mix"; $v.ratio.nanlog_vs_floor_placed; "/ floor placed"; null),
	ratio($rel; "micro mix"; $v.ratio.nanlog_vs_bpftrace; "/ bpftrace"; $tg.bt)
' "$W/real.json" >"$W/real.md" || die "cannot make the real runtimes table"
}
