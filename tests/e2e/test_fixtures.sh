# Recorded workload scenarios (tests/fixtures, made by scripts/regen-fixtures.sh)
# replayed offline through the engine: golden audits, like jq's tests.
# Needs no root and no BPF.
# shellcheck shell=sh
. tests/e2e/lib.sh

verdicts() {
	jq -r -s '[.[] | select(.type=="batch") | .verdict + (if (.missing_edges|length) > 0 then "(" + (.missing_edges|join(",")) + ")" else "" end)] | join(" ")' "$1"
}

for rec in tests/fixtures/*.rec; do
	name=$(basename "$rec" .rec)
	"$TOOL" --replay "$rec" --raw -q -o "$TMP/$name.json"
	rc=$?
	# a cut recording (the exit scenario is not cut: the tool saw the exit) still fails
	check "$name: replay exit 0" test $rc = 0
	check "$name: audits, raw calls and summary as recorded" cmp "$TMP/$name.json" "tests/fixtures/$name.expected.json"
done

# what the goldens say, spelled out, so a regenerated golden cannot silently change a verdict
check "clean: all trusted" test "$(verdicts "$TMP/clean.json")" = "trusted trusted trusted trusted trusted"
check "drop_copy_sparse: batch 2 copy->sparse" \
	test "$(verdicts "$TMP/drop_copy_sparse.json")" = "trusted trusted untrusted(copy->sparse) trusted trusted"
check "race_sparse_forward: batch 2 sparse->forward" \
	test "$(verdicts "$TMP/race_sparse_forward.json")" = "trusted trusted untrusted(sparse->forward) trusted trusted"
check "simple_copy_forward: batch 3 copy->forward" \
	test "$(verdicts "$TMP/simple_copy_forward.json")" = "trusted trusted trusted untrusted(copy->forward) trusted"
check "exit_mid_batch: batches 3-5 skipped" \
	test "$(verdicts "$TMP/exit_mid_batch.json")" = "trusted trusted trusted skipped skipped skipped"
check "fixtures name no folder of the machine they were made on" \
	sh -c "! grep -q '\"path\":\"/work\|/home/\|/root/' tests/fixtures/*.expected.json"

# role overrides: what the command line names wins over what was inferred
roles() { jq -r -s '[.[] | select(.type=="summary")][0].streams | map(.role) | join(",")' "$1"; }
S=$(jq -r -s '[.[] | select(.type=="summary")][0].streams[] | select(.role=="sparse") | .stream' "$TMP/clean.json" | head -1)
C=$(jq -r -s '[.[] | select(.type=="summary")][0].streams[] | select(.role=="copy") | .stream' "$TMP/clean.json")
"$TOOL" --replay tests/fixtures/clean.rec -q --sparse-stream "$S" -o "$TMP/ov1.json"
check "--sparse-stream: only the named stream is sparse" test "$(roles "$TMP/ov1.json")" = "copy,sparse,other,compute"
"$TOOL" --replay tests/fixtures/clean.rec -q --copy-stream "$S" --compute-stream "$C" -o "$TMP/ov2.json"
check "--copy-stream/--compute-stream: roles as named" \
	jq -e -s "[.[] | select(.type==\"summary\")][0].streams | (map(select(.stream==\"$S\"))[0].role == \"copy\") and (map(select(.stream==\"$C\"))[0].role == \"compute\")" "$TMP/ov2.json"
