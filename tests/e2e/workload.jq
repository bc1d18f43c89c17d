# Self-consistency of a pipeline ground-truth file, read with jq -s.
# Prints one line per problem found; nothing when the file is consistent.
# $rc: the exit code the run had.

def calls: [.[] | select(.type == "call")];
def hex: type == "string" and test("^0x[0-9a-f]+$");

. as $all
| ($all[0]) as $run
| calls as $c
| [.[] | select(.type == "edge")] as $edges
| [.[] | select(.type == "batch")] as $batches
| [.[] | select(.type == "end")] as $fin
| ($c | map({key: (.seq | tostring), value: .}) | from_entries) as $byseq
| [
    (if $run.type != "run" or $run.schema != 1 then "first line is not a schema-1 run header" else empty end),
    (if ($all | map(has("type")) | all) then empty else "a line without a type" end),
    (if ($c | map(.seq)) == [range(0; $c | length)] then empty
     else "call seq is not 0,1,2,... in file order" end),
    ($c[] | select((.api | type) != "string" or (.tid | type) != "number" or (.rc | type) != "number")
          | "call \(.seq): api, tid or rc missing"),
    ($c[] | select(.stage as $s | ["copy","sparse","forward","backward","setup","teardown","allocator","watchdog"] | index($s) | not)
          | "call \(.seq): bad stage \(.stage)"),
    ($c[] | select(.step != null and (.step as $s | ["fill","a","b","c","d","e","f"] | index($s) | not))
          | "call \(.seq): bad step \(.step)"),
    ($c[] | select((has("stream") and (.stream | hex | not)) or (has("event") and (.event | hex | not))
                   or (has("dst") and (.dst | hex | not)) or (has("src") and (.src | hex | not)))
          | "call \(.seq): a handle or pointer is not a 0x lowercase hex string"),
    # per thread, entry times follow seq: each thread's calls are in program order
    ($c | group_by(.tid)[] | select((map(.ts_ns)) != (map(.ts_ns) | sort))
        | "thread \(.[0].tid): calls out of order"),
    # events are used only while alive: created (any generation) and not yet destroyed
    ($c | reduce .[] as $x ({live: {}, bad: []};
        if ($x.api | startswith("hipEventCreate")) and $x.rc == 0 then .live[$x.handle] = true
        elif $x.api == "hipEventDestroy" then
            (if .live[$x.event] then del(.live[$x.event]) else .bad += ["destroy of dead event at \($x.seq)"] end)
        elif ($x | has("event")) and $x.event != "0x0" and (.live[$x.event] | not) then
            .bad += ["\($x.api) at \($x.seq) on a dead event \($x.event)"]
        else . end) | .bad[]),
    # token rule 1: a record on the copy stream separates the copy segments
    # of different batches, so each batch's copy mints its own token
    (([$all[] | select(.type == "streams") | .copy][0]) as $m
     | [$c[] | select(.stream == $m and (.api == "hipEventRecord" or .api == "hipMemcpyAsync" or .api == "hipLaunchKernel"))]
     | reduce .[] as $x ({last: null, sep: true, bad: []};
         if $x.api == "hipEventRecord" then .sep = true
         else (if .last != null and .last != $x.batch and (.sep | not)
               then .bad += ["copies of batches \(.last) and \($x.batch) share a segment at \($x.seq)"] else . end)
              | .last = $x.batch | .sep = false end)
     | .bad[]),
    # every edge points at its record and wait calls
    ($edges[] | select(.dropped | not)
        | . as $e
        | select(($byseq[$e.record_seq | tostring] | .api != "hipEventRecord" or .event != $e.event or .stream != $e.from_stream)
              or ($byseq[$e.wait_seq | tostring] | .api != "hipStreamWaitEvent" or .event != $e.event or .stream != $e.to_stream))
        | "edge \(.name) of batch \(.batch) at \(.wait_seq) does not match its calls"),
    ($edges[] | select(.dropped and (.event != null or .record_seq != null))
        | "dropped edge \(.name) of batch \(.batch) has calls"),
    ($batches[] | select(.verdict as $v | ["trusted","untrusted","skipped"] | index($v) | not)
        | "batch \(.batch): bad verdict"),
    ($batches[] | select((.verdict == "untrusted") != ((.missing_edges | length) > 0))
        | "batch \(.batch): missing_edges do not match the verdict"),
    ($batches[] | select((.verdict == "skipped") != ((.skip_reasons | length) > 0))
        | "batch \(.batch): skip_reasons do not match the verdict"),
    (if ($batches | map(.batch)) == [range(0; $batches | length)] then empty
     else "batch records are not 0..N-1 in order" end),
    (if $fin | length != 1 then "not exactly one end record"
     elif $fin[0].calls != ($c | length) then "end.calls \($fin[0].calls) != \($c | length) call lines"
     elif $fin[0].exit_code != $rc then "end.exit_code \($fin[0].exit_code) != exit status \($rc)"
     elif $all[-1].type != "end" then "end record is not the last line"
     else empty end)
  ]
| .[]
