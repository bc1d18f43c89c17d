# The committed random-program fixtures (tests/fixtures/audit-random, made by
# `build/audit/fuzz_audit -w SEED -o DIR`) replayed through the tool: every
# batch's verdict and edge against the program's truth (docs/engine.md,
# "Model-based random testing"). A fixture listed as "fixture NAME" in
# tests/audit/known-disagreements.txt is a known disagreement: SKIP while the
# engine still disagrees, FAIL once it agrees (remove it from the list then).
# Needs no root and no BPF.
# shellcheck shell=sh
. tests/e2e/lib.sh

KNOWN=tests/audit/known-disagreements.txt

# The disagreements of an audit output with a truth file, one a line.
disagreements() {
	jq -r -n --slurpfile t "$1" --slurpfile o "$2" '
		def key: "\(.pipeline // 0)/\(.batch)";
		def count($ps; $p): $ps | map(select(. == $p)) | length;
		# which pipeline is 0 is the order the engine found them in, not
		# compared (as in the random testing): where the batch counts of
		# two pipelines match only the other way round, the engine found
		# the second pipeline of the program first
		($o | map(select(.type == "batch"))) as $raw
		| ($t[0].batches | map(.pipeline // 0)) as $tp
		| ($raw | map(.pipeline // 0)) as $gp
		| (count($tp; 0) != count($gp; 0) and count($tp; 0) == count($gp; 1) and
		   count($tp; 1) == count($gp; 0) and ($gp | max) == 1) as $swap
		| ($raw | map(if $swap then .pipeline = 1 - (.pipeline // 0) else . end)) as $got
		| ($got | map({key: key, value: .}) | from_entries) as $by
		| ($t[0].batches | map({key: key, value: true}) | from_entries) as $want
		| ($t[0].batches[] | . as $b | $by[$b | key] as $g
		   | if $g == null then "batch \($b | key): no audit"
		     elif $g.verdict != $b.verdict then
		       "batch \($b | key): \($g.verdict) \($g.missing_edges | join(",")), truth \($b.verdict) \($b.edge // "")"
		     elif $b.verdict == "untrusted"
		          and ((($g.missing_edges | index($b.edge)) == null)
		               or (($g.missing_edges - $b.edges) | length) > 0) then
		       "batch \($b | key): edges \($g.missing_edges | join(",")), truth \($b.edge)"
		     else empty end),
		  ($got[] | select($want[key] == null) | "batch \(key): not in the program"),
		  # a handle two streams took in turn (a recreated one) is
		  # compared with its last, the one the summary names
		  (($o | map(select(.type == "summary")) | last | .streams // []) as $ss
		   | ($t[0].streams | reverse | unique_by([.stream, .tid]))[] | . as $w
		   | ($ss | map(select(.stream == $w.stream and (.stream_tid // 0) == $w.tid)) | first) as $s
		   | select($s != null and $s.role != $w.role)
		   | "stream \($w.name) \($w.stream): role \($s.role), truth \($w.role)")'
}

n=0
for rec in tests/fixtures/audit-random/*.rec; do
	[ -f "$rec" ] || continue
	name=$(basename "$rec" .rec)
	truth=tests/fixtures/audit-random/$name.json
	n=$((n + 1))
	"$TOOL" --replay "$rec" -q -o "$TMP/$name.json"
	check "$name: replay exit 0" test $? = 0
	disagreements "$truth" "$TMP/$name.json" >"$TMP/$name.diff"
	if grep -q "^fixture $name\$" "$KNOWN"; then
		if [ -s "$TMP/$name.diff" ]; then
			skip "$name: known disagreement ($(jq -r .class "$truth")): $(head -1 "$TMP/$name.diff")"
		else
			fail "$name: the engine agrees with the truth now: remove 'fixture $name' from $KNOWN"
		fi
	elif [ -s "$TMP/$name.diff" ]; then
		sed 's/^/  /' "$TMP/$name.diff"
		fail "$name: audits match the program's truth"
	else
		pass "$name: audits match the program's truth"
	fi
done
check "random-program fixtures present" test "$n" -gt 0
