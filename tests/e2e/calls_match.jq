# jq -n --slurpfile t TRUTH --slurpfile g TRACE --argjson probed '["hipMemcpyAsync",...]' -f calls_match.jq
# Every call of the workload's ground truth appears exactly once in the
# tracer's raw output, in the same order per thread, with the same api and
# arguments (rc where the tracer had a return probe). Calls that RCCL makes
# inside a collective (coll_depth > 0) are not the workload's own and are
# left out, and so are the workload's calls of APIs the tool does not probe
# (hipMalloc, ...). Prints [] when all match, else the first differences.
def cmpkeys: ["api","tid","stream","event","stop_event","dst","src","bytes","kind",
              "flags","prio","count","peer","handle","graph","exec","ms","rc"];
def same($x; $y):
  [cmpkeys[] as $k | select($x | has($k)) |
   select(($k == "rc" and ($y | has("rc") | not)) | not) |
   select($x[$k] != $y[$k]) | {key: $k, truth: $x[$k], traced: $y[$k]}];
($t | map(select(.type == "call" and (.api as $a | $probed | index($a) != null)))
   | group_by(.tid)) as $tt |
($g | map(select(.type == "call" and ((.coll_depth // 0) == 0)))) as $gc |
($t | map(select(.type == "run")) | .[0].pid) as $pid |
(if ($gc | map(select(.pid != $pid)) | length) > 0
 then [{error: "calls from other processes", pids: ($gc | map(.pid) | unique)}] else [] end) +
(($gc | map(.tid) | unique) - ($tt | map(.[0].tid)) |
  if length > 0 then [{error: "threads absent from the truth", tids: .}] else [] end) +
[ $tt[] as $calls | ($calls[0].tid) as $tid |
  ($gc | map(select(.tid == $tid))) as $got |
  if ($calls | length) != ($got | length) then
    {error: "count", tid: $tid, truth: ($calls | length), traced: ($got | length),
     first_diff: ([range(0; [($calls|length), ($got|length)] | min) as $i |
                   select($calls[$i].api != $got[$i].api) |
                   {i: $i, truth: $calls[$i].api, traced: $got[$i].api}] | .[0])}
  else
    (range(0; $calls | length) as $i | same($calls[$i]; $got[$i]) |
     select(length > 0) | {error: "args", tid: $tid, seq: $calls[$i].seq, diff: .})
  end ] | .[0:5]
