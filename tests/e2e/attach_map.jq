# jq -n --slurpfile t TRUTH --slurpfile a AUDIT -f attach_map.jq
# The audits of sim/progs/multipipe replayed as if attached mid-run
# (--attach-at) against the program's ground truth: batch numbers and
# pipeline numbers are the tool's own after such an attach (the first batch
# it sees is its batch 0), so each audited batch is paired with the truth
# batch of the copy call nearest its first copy (the program stamps its
# calls with its own clock, the probes at entry). Prints the judged batches
# (not skipped) whose verdict or missing edges differ from their truth
# batch's, or that no truth batch pairs with; [] when none.
([$t[] | select(.type == "call" and .stage == "copy" and .batch != null) |
  {ts: .ts_ns, k: [.pipeline, .batch]}]) as $copies |
([$t[] | select(.type == "batch") | {key: ([.pipeline, .batch] | tostring), value: .}] |
 from_entries) as $truth |
[$a[] | select(.type == "batch" and .verdict != "skipped") | . as $x |
 (if .copy.first_ns then ($copies | min_by((.ts - $x.copy.first_ns) | fabs) | .k) else null end) as $k |
 (if $k then $truth[$k | tostring] else null end) as $y |
 select($y == null or $y.verdict != $x.verdict or
        (($y.missing_edges // []) | sort) != (($x.missing_edges // []) | sort)) |
 {pipeline: .pipeline, batch: .batch, truth: $k, verdict: .verdict, missing: .missing_edges,
  truth_verdict: $y.verdict, truth_missing: $y.missing_edges}]
