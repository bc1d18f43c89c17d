# End-to-end: --metrics serves Prometheus metrics of a live run; promtool
# accepts them and a real Prometheus server scrapes the same batch count the
# tool wrote (real BPF, root; curl, promtool and prometheus from Debian's
# prometheus and curl packages). Loopback addresses only.
# shellcheck shell=sh
. tests/e2e/lib.sh

if why=$(bpf_unavailable); then
	skip "metrics: $why"
	exit 0
fi
if ! command -v curl >/dev/null 2>&1; then
	skip "metrics: curl is not installed (Debian package curl; make deps)"
	exit 0
fi
export LD_LIBRARY_PATH="$SIM"

# A bad address is refused before anything is attached: usage error, one line.
"$TOOL" -p $$ --metrics 'localhost:http' >"$TMP/bad.out" 2>"$TMP/bad.err"
rc=$?
check "--metrics with a bad address: exit 2" test $rc = 2
check "  ...one line naming --metrics" sh -c "test \$(wc -l <'$TMP/bad.err') = 1 && grep -q -- '--metrics' '$TMP/bad.err'"

# the sum of every sample of a family in FILE
family_sum() { awk -v f="$1" 'index($1, f "{") == 1 || $1 == f { n += $2 } END { print n + 0 }' "$2"; }
batch_lines() { grep -c '"type":"batch"' "$1" 2>/dev/null || true; }

# a workload slow enough to be scraped while it runs (about 20 s at most)
"$SIM/pipeline" --gate-signal --batches 200 --iter-sleep-ms 100 >"$TMP/w.out" 2>"$TMP/w.err" &
W=$!
at_exit "kill -KILL $W 2>/dev/null"
wait_for '^ready' "$TMP/w.out" || { fail "metrics: workload did not start"; exit 0; }
"$TOOL" -p "$W" --metrics 127.0.0.1:0 -o "$TMP/m.json" 2>"$TMP/m.err" &
T=$!
at_exit "kill -KILL $T 2>/dev/null"
if ! wait_for 'metrics: serving http://' "$TMP/m.err" || ! wait_for '"type":"attach".*librccl' "$TMP/m.json"; then
	fail "metrics: the tool did not serve or attach: $(head -c 500 "$TMP/m.err")"
	exit 0
fi
URL=$(sed -n 's/.*metrics: serving \(http:[^ ]*\).*/\1/p' "$TMP/m.err" | head -1)
check "port 0: the tool reports the port it bound on loopback ($URL)" \
	sh -c "echo '$URL' | grep -Eq '^http://127\.0\.0\.1:[1-9][0-9]*/metrics$'"
kill -USR1 "$W"

# scrape until a few batches are in
n=0
while [ $n -lt 100 ]; do
	curl -sf --max-time 2 "$URL" >"$TMP/s1.txt" 2>/dev/null &&
		[ "$(family_sum nanlog_batches_total "$TMP/s1.txt")" -ge 5 ] && break
	sleep 0.1
	n=$((n + 1))
done
check "GET /metrics: 200 with batches counted" test "$(family_sum nanlog_batches_total "$TMP/s1.txt")" -ge 5
check "  ...Content-Type of the text format 0.0.4" sh -c \
	"curl -sf -o /dev/null -D - '$URL' | tr -d '\r' | grep -qi '^content-type: text/plain; version=0.0.4'"
check "  ...other paths: 404" test "$(curl -s -o /dev/null -w '%{http_code}' "${URL%/metrics}/")" = 404
check "  ...build_info, one attached target, probes attached" sh -c "
	grep -q '^nanlog_build_info{version=\"[^\"]*\"} 1$' '$TMP/s1.txt' &&
	test \"\$(awk '\$1 == \"nanlog_attached_targets\" { print \$2 }' '$TMP/s1.txt')\" = 1 &&
	test \"\$(awk '\$1 == \"nanlog_probes_attached\" { print \$2 }' '$TMP/s1.txt')\" -gt 0"
check "  ...series labelled with the workload's pid" \
	grep -q "^nanlog_batches_total{pid=\"$W\",container=\"[^\"]*\",pod_uid=\"[^\"]*\",verdict=\"trusted\"} " "$TMP/s1.txt"
check "  ...stage latency histograms" \
	grep -q "^nanlog_stage_host_latency_seconds_count{pid=\"$W\",.*stage=\"forward\"} [1-9]" "$TMP/s1.txt"
if command -v promtool >/dev/null 2>&1; then
	promtool check metrics <"$TMP/s1.txt" >"$TMP/promtool.out" 2>&1
	rc=$?
	check "promtool check metrics accepts the scrape" test $rc = 0
	[ $rc = 0 ] || head -20 "$TMP/promtool.out" >&2
else
	skip "promtool check metrics: promtool is not installed (Debian package prometheus)"
fi

# A real Prometheus scrapes the tool every second. The workload is frozen
# (SIGSTOP) so that the count holds still while the two are compared.
prom_pid=""
if command -v prometheus >/dev/null 2>&1; then
	target=${URL#http://}
	target=${target%/metrics}
	i=0
	while [ $i -lt 5 ]; do # a free loopback port: nobody answers there
		PPORT=$((20000 + ($$ * 7 + i * 7919) % 40000))
		curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$PPORT/" 2>/dev/null
		[ $? = 7 ] || { i=$((i + 1)); continue; }
		cat >"$TMP/prom.yml" <<-EOF
			global:
			  scrape_interval: 1s
			  scrape_timeout: 1s
			  evaluation_interval: 1s
			scrape_configs:
			  - job_name: nanlog
			    static_configs:
			      - targets: ['$target']
		EOF
		mkdir -p "$TMP/tsdb"
		prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
			--web.listen-address="127.0.0.1:$PPORT" >"$TMP/prom.log" 2>&1 &
		prom_pid=$!
		at_exit "kill -TERM $prom_pid 2>/dev/null; sleep 0.5; kill -KILL $prom_pid 2>/dev/null"
		n=0
		while [ $n -lt 150 ] && kill -0 $prom_pid 2>/dev/null; do
			[ "$(curl -s --max-time 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PPORT/-/ready")" = 200 ] && break
			sleep 0.1
			n=$((n + 1))
		done
		kill -0 $prom_pid 2>/dev/null && break
		prom_pid=""
		i=$((i + 1))
	done
	query() { # PromQL -> the value of its first result, empty when none
		curl -sG --max-time 2 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
			jq -r '.data.result[0].value[1] // empty' 2>/dev/null
	}
	if [ -z "$prom_pid" ]; then
		fail "prometheus server did not start: $(tail -3 "$TMP/prom.log")"
	else
		n=0
		while [ $n -lt 100 ] && [ "$(query 'up{job="nanlog"}')" != 1 ]; do
			sleep 0.2
			n=$((n + 1))
		done
		check "prometheus scrapes the tool (up == 1)" test "$(query 'up{job="nanlog"}')" = 1
		kill -STOP "$W"
		# the count is still once two scrapes of the tool and the file agree
		prev=-1 n=0
		while [ $n -lt 50 ]; do
			sleep 0.3
			curl -sf --max-time 2 "$URL" >"$TMP/s2.txt" || break
			cur=$(family_sum nanlog_batches_total "$TMP/s2.txt")
			[ "$cur" = "$prev" ] && [ "$cur" = "$(batch_lines "$TMP/m.json")" ] && break
			prev=$cur
			n=$((n + 1))
		done
		want=$(batch_lines "$TMP/m.json")
		check "the tool's count is the number of batch records it wrote ($want)" \
			test "$(family_sum nanlog_batches_total "$TMP/s2.txt")" = "$want"
		n=0
		while [ $n -lt 100 ]; do
			got=$(query 'sum(nanlog_batches_total{job="nanlog"})')
			[ "$got" = "$want" ] && break
			sleep 0.2
			n=$((n + 1))
		done
		check "prometheus: sum(nanlog_batches_total) == the tool's count ($got == $want)" \
			test "$got" = "$want"
		check "prometheus: a histogram quantile of the forward window" sh -c \
			"test -n \"\$(curl -sG --max-time 2 'http://127.0.0.1:$PPORT/api/v1/query' --data-urlencode 'query=histogram_quantile(0.5, sum by (le) (nanlog_stage_host_latency_seconds_bucket{stage=\"forward\"}))' | jq -r '.data.result[0].value[1] // empty')\""
		kill -CONT "$W"
		kill -TERM "$prom_pid" 2>/dev/null
		n=0
		while [ $n -lt 100 ] && kill -0 "$prom_pid" 2>/dev/null; do
			sleep 0.1
			n=$((n + 1))
		done
		check "prometheus server stopped" sh -c "! kill -0 $prom_pid 2>/dev/null"
	fi
else
	skip "prometheus scrape: prometheus is not installed (Debian package prometheus)"
fi
kill -CONT "$W" 2>/dev/null

# The run ends with the workload: exit 0, and the server is gone.
n=0
while [ $n -lt 600 ] && kill -0 "$T" 2>/dev/null; do
	sleep 0.1
	n=$((n + 1))
done
wait "$T"
rc=$?
check "the tool exits 0 when the workload ends" test $rc = 0
[ $rc = 0 ] || tail -5 "$TMP/m.err" >&2
check "  ...and stops serving" sh -c "! curl -s --max-time 2 -o /dev/null '$URL'"
check "  ...summary batches == batch records" sh -c \
	"test \"\$(jq -s '[.[] | select(.type==\"summary\")][0].batches' '$TMP/m.json')\" = \"\$(grep -c '\"type\":\"batch\"' '$TMP/m.json')\""

# Loopback unless told otherwise: ":PORT" binds 127.0.0.1 only.
"$SIM/pipeline" --batches 200 --iter-sleep-ms 10 >/dev/null 2>&1 &
W2=$!
at_exit "kill -KILL $W2 2>/dev/null"
sleep 0.2
"$TOOL" -p "$W2" --metrics :0 --duration 2 -o /dev/null 2>"$TMP/lo.err" &
T2=$!
wait_for 'metrics: serving' "$TMP/lo.err"
LURL=$(sed -n 's/.*metrics: serving \(http[^ ]*\).*/\1/p' "$TMP/lo.err" | head -1)
LPORT=$(echo "$LURL" | sed -n 's|http://[^:]*:\([0-9]*\)/.*|\1|p')
check "--metrics :PORT serves on loopback ($LURL)" sh -c "echo '$LURL' | grep -q '^http://127.0.0.1:'"
if command -v ss >/dev/null 2>&1; then
	check "  ...and listens on 127.0.0.1 only" sh -c \
		"ss -Hltn 'sport = :$LPORT' | grep -q '127.0.0.1:$LPORT' && ! ss -Hltn 'sport = :$LPORT' | grep -q -e '0.0.0.0:$LPORT' -e '\*:$LPORT'"
fi
wait "$T2"
kill -KILL "$W2" 2>/dev/null || true
