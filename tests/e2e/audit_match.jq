# jq -n --slurpfile t TRUTH --slurpfile a AUDIT --argjson probed '[...]' -f audit_match.jq
# The audits (AUDIT: the tool's JSON Lines, with --raw calls) against the
# workload's ground truth (TRUTH). Prints [] when everything agrees, else
# the first differences. Batches are paired in order of their copies; when
# the tool attached mid-run, the truth batches whose calls began before the
# first traced call must come out skipped, never trusted.
def probed_call: .type == "call" and (.api as $x | $probed | index($x) != null);
($t | map(select(.type == "run"))[0]) as $run |
($t | map(select(.type == "streams"))[0]) as $st |
($t | map(select(.type == "batch"))) as $tb |
($a | map(select(.type == "batch"))) as $ab |
($a | map(select(.type == "summary"))[0]) as $sum |
($t | map(select(probed_call and .tid == $run.pid))) as $tmain |
($a | map(select(.type == "call" and .tid == $run.pid and ((.coll_depth // 0) == 0)))) as $gmain |
(($tmain | length) - ($gmain | length)) as $skip |
# truth batches whose copy the tool saw at least in part, in copy order
([$tmain | to_entries[] | select(.key >= $skip and .value.stage == "copy" and .value.batch != null)
  | .value.batch] | unique) as $seen |
# in flight at attach: some of its main-thread calls came before the first traced one
([$tmain | to_entries[] | select(.key < $skip and .value.batch != null) | .value.batch] | unique) as $early |
# Stage attribution follows the edges, the truth's stage labels follow the
# program: they agree except next to a dropped wait (a batch whose token
# never reached a stream leaves its work to a neighbour) and on the
# first batches after a mid-run attach, which also hold work of batches the
# tool never saw minted. Attribution is compared everywhere else.
([$t[] | select(.type == "edge" and .dropped) | .batch | (. - 1, ., . + 1)] +
 (if $skip > 0 then [$seen[0:2][]] else [] end)) as $noattr |
def tcalls($k): $t | map(select(.type == "call" and .batch == $k));
def sorted: . // [] | sort;
[
  (if ($ab | length) != ($seen | length) then
     {error: "batch count", audited: ($ab | length), expected: ($seen | length)} else empty end),
  (if $sum == null then {error: "no summary"} else empty end),
  (if $sum != null and $sum.batches != ($ab | length) then
     {error: "summary batches", summary: $sum.batches, listed: ($ab | length)} else empty end),
  (range(0; [($ab | length), ($seen | length)] | min) as $j |
   $ab[$j] as $x | $seen[$j] as $k | ($tb | map(select(.batch == $k))[0]) as $y |
   if ($early | index($k)) != null then
     (if $x.verdict != "skipped" or ($x.skip_reasons | index("attached_mid_batch")) == null then
        {error: "in flight at attach but not skipped", batch: $j, truth_batch: $k,
         verdict: $x.verdict, skip: $x.skip_reasons} else empty end)
   # the first segment seen after a mid-run attach, with no record of the
   # copy stream before it, may have begun before the attach as far as the
   # calls tell (docs/output.md): skipped so, it is right even when the
   # attach came just between two batches
   elif $j == 0 and $skip > 0 and $x.verdict == "skipped" and
        ($x.skip_reasons | index("attached_mid_batch")) != null then empty
   # ...or one that waited on an event recorded before the attach: the
   # edge is not known (unknown_handle)
   elif $j == 0 and $skip > 0 and $x.verdict == "skipped" and
        ($x.skip_reasons | index("unknown_handle")) != null then empty
   # attached mid-run, the batches still open at exit are not judged
   # (docs/engine.md, "Closing, lingering, end of a run"): a run of
   # target_exited to the end is right
   elif $skip > 0 and ([$ab[$j:][] | .verdict == "skipped" and .skip_reasons == ["target_exited"]]
        | all) then empty
   elif $x.verdict != $y.verdict or ($x.missing_edges | sorted) != ($y.missing_edges | sorted)
        or (($y.skip_reasons // []) - ($x.skip_reasons // []) | length) > 0 then
     {error: "verdict", batch: $j, truth_batch: $k,
      audit: {verdict: $x.verdict, missing: $x.missing_edges, skip: $x.skip_reasons},
      truth: {verdict: $y.verdict, missing: $y.missing_edges, skip: $y.skip_reasons}}
   elif $x.verdict == "skipped" or ($noattr | index($k)) != null then empty
   else
     (tcalls($k)) as $c |
     ([$c[] | select(.stream == $st.copy and .kind == 1) | .bytes] | add // 0) as $cb |
     ([$c[] | select(.api == "ncclAllToAll" or .api == "ncclAllToAllv")] | length) as $nc |
     ([$c[] | select(.stage == "sparse" and (.bytes != null)) | .bytes] | add // 0) as $sb |
     [ (if $x.copy.bytes != $cb then {what: "copy bytes", audit: $x.copy.bytes, truth: $cb} else empty end),
       (if $x.copy.streams != [$st.copy] then {what: "copy streams", audit: $x.copy.streams} else empty end),
       (if ($x.forward.streams | index($st.compute)) == null then
          {what: "forward streams", audit: $x.forward.streams} else empty end),
       (if $run.pattern == "torchrec" then
          (if $x.sparse.collectives != $nc then
             {what: "sparse collectives", audit: $x.sparse.collectives, truth: $nc} else empty end),
          (if $x.sparse.bytes != $sb then {what: "sparse bytes", audit: $x.sparse.bytes, truth: $sb}
           else empty end),
          (if (($x.sparse.streams - [$st.data_dist, $st.collective]) | length) > 0 then
             {what: "sparse streams", audit: $x.sparse.streams} else empty end)
        else empty end) ] |
     if length > 0 then {error: "attribution", batch: $j, truth_batch: $k, diff: .} else empty end
   end)
] | .[0:6]
