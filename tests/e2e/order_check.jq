# jq -c 'select(.type == "call") | [.pid, .tid, .api, .stream, .event, .fn, .bytes, .counted]' RAW |
#   jq -n --slurpfile p PROGRAM_OUT --slurpfile g /dev/stdin -f order_check.jq
# sim/progs/orderstress wrote, into its calls' arguments, where each call is
# in its thread's program order; PROGRAM_OUT is its closing line, RAW the
# tracer's --raw records (live or replayed), cut down to what is compared.
# Each thread's calls are rebuilt from the records in the order they came, a
# counted launch standing for the launch after the one before it (a run is
# one thread's launches of one kernel position after another, nothing of that
# thread between), and compared with what the program made. Prints one object
# per thread: records compared, how many sit where the program did not make
# them ("violations", 0 when the order is kept) and the first of them.
def idx($list; $v): ($list | index($v)) // -1;
def compare($tid; $want; $got):
  [range(0; [($want | length), ($got | length)] | max) as $i |
   select($want[$i] != $got[$i]) | $i] as $bad |
  {tid: $tid, records: ($got | length), expected: ($want | length),
   violations: ($bad | length),
   first: (if ($bad | length) > 0 then
             $bad[0] as $i | {at: $i, want: $want[$i], got: $got[$i],
                              got_around: $got[[$i - 3, 0] | max:$i + 3]}
           else null end)};

$p[0] as $s |
# [pid, tid, api, stream, event, fn, bytes, counted], by thread, in arrival order
($g | map(select(.[0] == $s.pid)) | group_by(.[1]) | map({key: "\(.[0][1])", value: .})
 | from_entries) as $by |
# the launch thread: L<kernel position>@<compute stream>, M<bytes>
([range(0; $s.iterations) as $i | (1 + $i % $s.kmax) as $k |
  ([range(0; $k) as $j |
    "L\($j)@\(if $j < (($k + 1) / 2 | floor) then 0 else 1 end)"] + ["M\($i + 1)"])[]]) as $lwant |
(($by["\($s.launch_tid)"] // []) | map(select(.[2] == "hipLaunchKernel" or .[2] == "hipMemcpyAsync"))
 | [foreach .[] as $c ({prev: null};
     if $c[2] == "hipMemcpyAsync" then
       {prev: null, tok: (if $c[3] == $s.copy then "M\($c[6])" else "M?\($c[3])" end)}
     else
       (if $c[7] then (if .prev == null then -99 else .prev + 1 end)
        else idx($s.kernels; $c[5]) end) as $j |
       {prev: $j, tok: "L\($j)@\(idx($s.compute; $c[3]))"}
     end;
     .tok)]) as $lgot |
compare($s.launch_tid; $lwant; $lgot),
# each query thread: R<event index> then Q<event index>, the events in turn
($s.queries[] as $q |
 ([range(0; $q.rounds) as $r | ($r % ($q.events | length)) as $e | "R\($e)", "Q\($e)"]) as $qwant |
 (($by["\($q.tid)"] // []) |
  map(if .[2] == "hipEventRecord" and .[3] == $q.stream then "R\(idx($q.events; .[4]))"
      elif .[2] == "hipEventQuery" then "Q\(idx($q.events; .[4]))"
      else .[2] end)) as $qgot |
 compare($q.tid; $qwant; $qgot))
