# nanlog-bpf's audits (JSON Lines, docs/output.md) as the lines that
# `fuzz_audit --check-audit` reads (docs/engine.md, "Model-based random testing"):
#   batch PID BATCH VERDICT SKIP_REASONS MISSING_EDGES COPY_FIRST_NS COPY_LAST_NS COPY_OPS PIPELINE
#   valid true|false                           (the summary's evidence_valid)
#   stream PID HANDLE STREAM_TID ROLE          (the summary's streams)
# Lists comma-separated; "-" for an empty list or an unknown time.
def list: if length == 0 then "-" else join(",") end;
if .type == "batch" then
	"batch \(.pid) \(.batch) \(.verdict) \(.skip_reasons | list) \(.missing_edges | list) "
	+ "\(.copy.first_ns // "-") \(.copy.last_ns // "-") \(.copy.ops // 0) \(.pipeline // 0)"
elif .type == "summary" then
	"valid \(.evidence_valid)",
	((.streams // [])[] | "stream \(.pid) \(.stream) \(.stream_tid // 0) \(.role)")
else empty end
