# jq -n --slurpfile p PROGRAM_OUT --slurpfile g RAW -f order_check.jq
# sim/progs/orderstress wrote, into its calls' arguments, where each call is
# in its thread's program order; PROGRAM_OUT is its closing line, RAW the
# tracer's --raw records (live or replayed). Each thread's calls are rebuilt
# from the records in the order they came, a counted launch standing for the
# launch after the one before it (a run is one thread's launches of one
# kernel position after another, nothing of that thread between), and
# compared with what the program made. Prints one object per thread:
# records compared, how many sit where the program did not make them
# ("violations", 0 when the order is kept) and the first of them.
def idx($list; $v): ($list | index($v)) // -1;
def compare($tid; $want; $got):
  [range(0; [($want | length), ($got | length)] | max) as $i |
   select($want[$i] != $got[$i]) | $i] as $bad |
  {tid: $tid, records: ($got | length), expected: ($want | length),
   violations: ($bad | length),
   first: (if ($bad | length) > 0 then
             $bad[0] as $i | {at: $i, want: $want[$i], got: $got[$i],
                              got_before: $got[[$i - 3, 0] | max:$i + 3]}
           else null end)};

$p[0] as $s |
($g | map(select(.type == "call" and .pid == $s.pid))) as $calls |
# the launch thread: L<kernel position>@<compute stream>, M<bytes>
([range(0; $s.iterations) as $i | (1 + $i % $s.kmax) as $k |
  ([range(0; $k) as $j |
    "L\($j)@\(if $j < (($k + 1) / 2 | floor) then 0 else 1 end)"] + ["M\($i + 1)"])[]]) as $lwant |
($calls | map(select(.tid == $s.launch_tid and
                     (.api == "hipLaunchKernel" or .api == "hipMemcpyAsync")))
 | reduce .[] as $c ({prev: null, out: []};
     (if $c.api == "hipMemcpyAsync" then
        {tok: (if $c.stream == $s.copy then "M\($c.bytes)" else "M?\($c.stream)" end), j: null}
      else
        (if $c.counted then (if .prev == null then -99 else .prev + 1 end)
         else idx($s.kernels; $c.fn) end) as $j |
        {tok: "L\($j)@\(idx($s.compute; $c.stream))", j: $j}
      end) as $t |
     .prev = $t.j | .out += [$t.tok])
 | .out) as $lgot |
compare($s.launch_tid; $lwant; $lgot),
# each query thread: R<event index> then Q<event index>, the events in turn
($s.queries[] as $q |
 ([range(0; $q.rounds) as $r | ($r % ($q.events | length)) as $e | "R\($e)", "Q\($e)"]) as $qwant |
 ($calls | map(select(.tid == $q.tid)) |
  map(if .api == "hipEventRecord" and .stream == $q.stream then "R\(idx($q.events; .event))"
      elif .api == "hipEventQuery" then "Q\(idx($q.events; .event))"
      else .api end)) as $qgot |
 compare($q.tid; $qwant; $qgot))
