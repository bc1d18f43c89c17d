# jq -n --slurpfile t TRUTH --slurpfile a AUDIT -f pipes_match.jq
# The audits of sim/progs/multipipe (AUDIT: the tool's JSON Lines) against
# the program's ground truth (TRUTH), pipeline by pipeline. Prints every
# difference, each tagged with the check it fails:
#   presence: each (pipeline, batch) of the truth audited exactly once, every
#             batch record carries "pipeline", no batch the truth lacks;
#   verdict:  verdict and missing edges equal to the truth's (a batch not
#             audited has no verdict: it differs);
#   summary:  the process's "pipelines": verdict counts equal the truth's,
#             and copy_streams and sparse_streams (those not destroyed at
#             the end) equal the truth's "alive";
#   streams:  every stream of a pipeline in the summary says which
#             ("pipeline"), the compute stream null.
# [] when everything agrees.
($t | map(select(.type == "run"))[0]) as $run |
($t | map(select(.type == "batch"))) as $tb |
($t | map(select(.type == "streams"))) as $ts |
($t | map(select(.type == "end"))[0].alive) as $alive |
($a | map(select(.type == "batch" and .pid == $run.pid))) as $ab |
($a | map(select(.type == "summary"))[0]) as $sum |
(($sum.processes // []) | map(select(.pid == $run.pid))[0]) as $proc |
def sorted: . // [] | sort;
def audits($x): [$ab[] | select(.pipeline == $x.pipeline and .batch == $x.batch)];
def count_of($v): if type == "array" then length == $v else . == $v end;
# handle -> pipeline for the streams the truth created (eval handles come
# back in later rounds, still pipeline 1)
([$ts[] | .pipeline as $p | (.copy[], .sparse) | select(. != null) | {key: ., value: $p}]
 | from_entries) as $owner |
[
  ($ab[] | select(has("pipeline") | not) |
   {check: "presence", error: "batch record without pipeline", batch: .batch}),
  ($tb[] | . as $x | audits($x) | length | select(. != 1) |
   {check: "presence", error: "audited \(.) times", pipeline: $x.pipeline, batch: $x.batch}),
  ($ab[] | select(has("pipeline")) | . as $x |
   select([$tb[] | select(.pipeline == $x.pipeline and .batch == $x.batch)] | length == 0) |
   {check: "presence", error: "not in the truth", pipeline: $x.pipeline, batch: $x.batch,
    verdict: $x.verdict}),
  ($tb[] | . as $x | (audits($x)[0] // {verdict: "not audited"}) |
   select(.verdict != $x.verdict or (.missing_edges | sorted) != ($x.missing_edges | sorted)) |
   {check: "verdict", pipeline: $x.pipeline, batch: $x.batch,
    audit: {verdict, missing_edges, skip_reasons}, truth: {verdict: $x.verdict, missing_edges: $x.missing_edges}}),
  (if $proc == null then {check: "summary", error: "no summary for the process"}
   elif ($proc.pipelines | type) != "array" then {check: "summary", error: "no pipelines array"}
   else
     ($tb | group_by(.pipeline)[] | . as $g | $g[0].pipeline as $p |
      {batches: length, trusted: (map(select(.verdict == "trusted")) | length),
       untrusted: (map(select(.verdict == "untrusted")) | length), skipped: 0} as $want |
      ([$proc.pipelines[] | select(.pipeline == $p)]) as $got |
      if ($got | length) != 1 then {check: "summary", error: "pipeline listed \($got | length) times", pipeline: $p}
      elif ($got[0] | {batches, trusted, untrusted, skipped}) != $want then
        {check: "summary", pipeline: $p, got: ($got[0] | {batches, trusted, untrusted, skipped}), want: $want}
      else empty end),
     ($proc.pipelines[] | select(.pipeline as $p | [$tb[].pipeline] | index($p) == null) |
      {check: "summary", error: "pipeline not in the truth", got: .}),
     ($alive[] | . as $w | [$proc.pipelines[] | select(.pipeline == $w.pipeline)][0] // empty |
      select((.copy_streams | count_of($w.copy_streams) | not) or
             (.sparse_streams | count_of($w.sparse_streams) | not)) |
      {check: "summary", pipeline: $w.pipeline, copy_streams: .copy_streams,
       sparse_streams: .sparse_streams, want: $w})
   end),
  ($sum.streams // [] | .[] | select(.pid == $run.pid) |
   (if .stream == "0x0" then "none" else $owner[.stream] end) as $want |
   select($want != null and .pipeline != (if $want == "none" then null else $want end)) |
   {check: "streams", stream: .stream, role: .role, pipeline: .pipeline, want: $want})
]
