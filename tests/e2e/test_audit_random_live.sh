# Random pipeline programs through real probes (docs/engine.md, "Model-based
# random testing"): build/audit/randrun executes the program fuzz_audit makes
# of a seed on simhip, each call from its own thread in the program's order,
# and the tool audits it live. For each seed:
#  - its audits disagree with the program's truth exactly where the same
#    program replayed in process does (same classes at the same batches,
#    fuzz_audit --check-audit: one comparison for both paths), the tool
#    starting the program as the replay does, or, for a program with streams
#    created before tracing, attached to it by pid and the replay mid-run too;
#  - every thread's calls, as the tool saw them, are the program's, API by
#    API in order.
# The sample: the first AUDIT_LIVE_SEEDS (17) seeds of 1..400 with no known
# disagreement (and the first such with pre-trace streams), and
# AUDIT_LIVE_KNOWN (3) listed in
# tests/audit/known-disagreements-counted.txt (the programs fed with their
# launches counted, as the tool gets them by default), spread over its classes (each its
# first seed without pre-trace streams), whose listed class must show up
# live too. A seed listed in
# tests/audit/known-live-differences.txt differs live in a known way: SKIP
# while it does, FAIL once it does not (remove it from the list then).
# AUDIT_LIVE_RANGE="FIRST LAST" runs every seed of that range instead (by
# hand: sh tests/e2e/test_audit_random_live.sh, no known class required).
# Needs root and BPF.
# shellcheck shell=sh
. tests/e2e/lib.sh

# the tool counts launches in runs by default: the in-process side is fed so
# too (fuzz_audit -u), and its known list is the counted one
KNOWN=tests/audit/known-disagreements-counted.txt
KNOWN_LIVE=tests/audit/known-live-differences.txt
RANDRUN=$B/audit/randrun
FUZZ=$B/audit/fuzz_audit
NFREE=${AUDIT_LIVE_SEEDS:-17}
NKNOWN=${AUDIT_LIVE_KNOWN:-3}

if why=$(bpf_unavailable); then
	skip "random programs live: $why"
	exit 0
fi
for f in "$RANDRUN" "$FUZZ"; do
	[ -x "$f" ] || { fail "random programs live: $f is not built (make)"; exit 0; }
done

# the seeds of 1..400 with no known disagreement: the first NFREE, and the
# first with streams created before tracing (attached by pid) if none of them is
allfree=$(awk '$1 ~ /^[0-9]+$/ { k[$1] = 1 } END { for (s = 1; s <= 400; s++) if (!(s in k)) print s }' "$KNOWN")
free=$(echo "$allfree" | head -n "$NFREE")
for s in $allfree; do
	"$RANDRUN" -d "$s" | grep -q pretrace || continue
	echo "$free" | grep -qx "$s" || free="$free $s"
	break
done
if [ -n "${AUDIT_LIVE_RANGE:-}" ]; then
	# shellcheck disable=SC2086 # two words
	free=$(seq $AUDIT_LIVE_RANGE)
	NKNOWN=0
fi
# NKNOWN classes spread over the known list, each with its first seed that
# runs from its start (the list is of from-start replays; a class with none
# gives way to the next) and that no class before took: "SEED CLASS"
classes=$(grep '^## ' "$KNOWN" | sed 's/^## \(.*\) ([0-9]*)$/\1/')
nc=$(echo "$classes" | grep -c .)
known=""
i=0
while [ "$i" -lt "$NKNOWN" ] && [ "$nc" -gt 0 ]; do
	j=$((i * nc / NKNOWN + 1))
	found=""
	while [ -z "$found" ] && [ "$j" -le "$nc" ]; do
		cls=$(echo "$classes" | sed -n "${j}p")
		for s in $(awk -v c="$cls" '$1 ~ /^[0-9]+$/ { s = $1; $1 = ""; sub(/^ /, ""); if ($0 == c) print s }' "$KNOWN"); do
			# one run per seed: a seed two sampled classes share runs once
			echo "$known" | awk '{ print $1 }' | grep -qx "$s" && continue
			"$RANDRUN" -d "$s" | grep -q pretrace || { found="$s $cls"; break; }
		done
		j=$((j + 1))
	done
	[ -n "$found" ] && known="$known
$found"
	i=$((i + 1))
done

# live SEED: the tool runs the program from its start (-- CMD), as the replay
# feeds it; a program with streams created before tracing is held at its
# gate instead and the tool attached by pid, mid-run (randrun makes those
# streams before the gate; fuzz_audit then replays it attached mid-run too).
# $TMP/SEED.run (randrun's truth and calls) and $TMP/SEED.json
live() {
	if ! "$RANDRUN" -d "$1" | grep -q pretrace; then
		LD_LIBRARY_PATH=$SIM "$TOOL" --raw -o "$TMP/$1.json" -- "$RANDRUN" -o "$TMP/$1.run" "$1" \
			>"$TMP/$1.out" 2>"$TMP/$1.tool" ||
			{ echo "  tool: $(cat "$TMP/$1.tool")" >&2; return 1; }
		return 0
	fi
	start_gated "$TMP/$1.out" "$TMP/$1.err" "$RANDRUN" -g -o "$TMP/$1.run" "$1" || return 1
	"$TOOL" -p "$GATED_PID" --raw -o "$TMP/$1.json" 2>"$TMP/$1.tool" &
	lt=$!
	# both libraries' probes in place before the first call (the program may
	# be done in less time than the second attach takes)
	{ wait_for '"type":"attach".*"lib":"librccl"' "$TMP/$1.json" &&
		wait_for '"type":"attach".*"lib":"libamdhip64"' "$TMP/$1.json"; } || { kill "$lt"; return 1; }
	kill -USR1 "$GATED_PID"
	wait "$GATED_PID" || { echo "  randrun: $(cat "$TMP/$1.err")" >&2; kill "$lt"; return 1; }
	wait "$lt" || { echo "  tool: $(cat "$TMP/$1.tool")" >&2; return 1; }
}

# same_thread_calls SEED: each thread's APIs in the live stream are the program's
same_thread_calls() {
	jq -n -e --slurpfile r "$TMP/$1.run" --slurpfile o "$TMP/$1.json" '
		def by_tid: reduce .[] as $c ({}; .[$c.tid | tostring] += [$c.api]);
		($r[0].pid) as $pid
		| ($r | map(select(.type == "call")) | by_tid)
		  == ($o | map(select(.type == "call" and .pid == $pid)) | by_tid)' >/dev/null
}

# same_counted SEED: each thread's launches came counted in the kernel, or
# with their kernel, as the program's model of the probes says
# (include/nanlog_rec.h: counted runs, step starts stay named)
same_counted() {
	jq -n -e --slurpfile r "$TMP/$1.run" --slurpfile o "$TMP/$1.json" '
		def by_tid: reduce .[] as $c ({}; .[$c.tid | tostring] += [[$c.api, ($c.counted // false)]]);
		($r[0].pid) as $pid
		| ($r | map(select(.type == "call")) | by_tid)
		  == ($o | map(select(.type == "call" and .pid == $pid)) | by_tid)' >/dev/null
}

n=0 calls=0
t0=$(date +%s)
for entry in $free $(echo "$known" | awk 'NF { print "k" $1 }'); do
	seed=${entry#k}
	n=$((n + 1))
	if ! live "$seed"; then
		fail "seed $seed: the program runs under the tool"
		continue
	fi
	c=$(grep -c '"type":"call"' "$TMP/$seed.run")
	calls=$((calls + c))
	if same_thread_calls "$seed"; then
		pass "seed $seed: the tool saw the program's $c calls, each thread's in order"
	else
		fail "seed $seed: the tool saw the program's $c calls, each thread's in order"
	fi
	if same_counted "$seed"; then
		pass "seed $seed: the launches counted in the kernel are those the program's model counts"
	else
		fail "seed $seed: the launches counted in the kernel are those the program's model counts"
	fi
	jq -r -f tests/audit/audit_flat.jq "$TMP/$seed.json" |
		"$FUZZ" -u --check-audit - -r "$TMP/$seed.run" >"$TMP/$seed.check"
	rc=$?
	what="seed $seed: live audits disagree with the truth exactly where the replay does"
	listed=$(awk -v s="$seed" '$1 == s { $1 = ""; sub(/^ /, ""); print; exit }' "$KNOWN_LIVE")
	if [ -n "$listed" ]; then
		if [ $rc = 1 ] && grep -E "^  (live|replay): " "$TMP/$seed.check" | grep -qF "$listed"; then
			skip "$what: known live difference ($listed)"
		elif [ $rc = 0 ]; then
			fail "$what: it does now: remove seed $seed from $KNOWN_LIVE"
		else
			sed 's/^/  /' "$TMP/$seed.check"
			fail "$what (not as $KNOWN_LIVE says)"
		fi
		continue
	fi
	if [ $rc = 0 ]; then
		pass "$what ($(sed -n '1s/.*: \([0-9]*\) live audits.*/\1/p' "$TMP/$seed.check") audits)"
	else
		sed 's/^/  /' "$TMP/$seed.check"
		fail "$what"
	fi
	case $entry in
	k*)
		cls=$(echo "$known" | awk -v s="$seed" '$1 == s { $1 = ""; sub(/^ /, ""); print; exit }')
		if grep -F "  live: " "$TMP/$seed.check" | grep -qF -- "$cls"; then
			pass "seed $seed: its known disagreement shows up live ($cls)"
		else
			fail "seed $seed: its known disagreement shows up live ($cls)"
		fi
		;;
	esac
done
echo "  $n programs, $calls calls, in $(($(date +%s) - t0)) s"
check "random programs run live" test "$n" -gt 0
