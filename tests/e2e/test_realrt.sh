# End-to-end: the real ROCm runtimes users run, without a GPU: ROCm 5.7.1
# with the real RCCL 5.4.3 (Debian 13) and ROCm 6.4.3 (Debian unstable), each
# in a root filesystem of its own (scripts/rootfs.sh), newer than the host's
# C library, made the root of a mount namespace as a container's is. The
# client (sim/progs/rtcalls.c, built on the host) calls every entry point of
# the API table the release exports; the tool, on the host, must capture each
# call exactly, thread by thread, find the library through the target's root,
# say which entries are missing, and leave no probe behind. Real BPF, root.
# (Debian 12's ROCm 5.2.3 on the host: tests/e2e/test_attach.sh.)
# Building both roots the first time takes minutes (make test builds them
# first, make rootfs); run alone on a clean tree this test may build them:
# e2e-timeout: 900
# shellcheck shell=sh
. tests/e2e/lib.sh

needs_namespaces "real runtimes" unshare pivot_root bpftool || exit 0
RT=$B/sim/rtcalls

# --- scripts/rootfs.sh on roots that are not there or not whole (no network)
FB=$TMP/fakeb
rootfs_says() { # EXPECTED-EXIT PATTERN ARGS...: one line on stderr matching PATTERN
	rs_rc=$1 rs_pat=$2
	shift 2
	B=$FB scripts/rootfs.sh "$@" >"$TMP/rs.out" 2>"$TMP/rs.err"
	test $? = "$rs_rc" && test "$(wc -l <"$TMP/rs.err")" = 1 && grep -q -- "$rs_pat" "$TMP/rs.err"
}
check "rootfs: a missing root named in one line (--check)" \
	rootfs_says 1 "$FB/rootfs/trixie is missing: build it with scripts/rootfs.sh trixie" --check trixie
mkdir -p "$FB/rootfs/sid/usr"
check "rootfs: a half-built root (no stamp) named in one line" \
	rootfs_says 1 "$FB/rootfs/sid is half-built (no stamp)" --check sid
echo 0000 >"$FB/rootfs/sid/.nanlog-rootfs"
check "rootfs: a root of another package list is out of date" \
	rootfs_says 1 "$FB/rootfs/sid is out of date (its package list changed)" --check sid
check "rootfs: an unknown root refused (exit 2)" rootfs_says 2 "unknown root 'bullseye'" bullseye
check "rootfs: no mirror to build from: exit 77 with the reason, nothing left behind" \
	sh -c "NANLOG_MIRROR=http://127.0.0.1:9/debian B='$FB' scripts/rootfs.sh trixie 2>'$TMP/rs.err'
		test \$? = 77 && grep -q 'has no trixie (or is unreachable)' '$TMP/rs.err' &&
		test ! -e '$FB/rootfs/trixie' && test -z \"\$(ls -A '$FB/rootfs' | grep -v '^\\.trixie\\.lock\$' | grep -v '^sid\$')\""
L=/usr/lib/x86_64-linux-gnu

# contained ROOT NAME ARGS...: rtcalls ARGS in a container made by hand: a
# mount namespace whose root is ROOT (a private bind mount, pivot_root), the
# client on a tmpfs at /mnt. Output in $TMP/NAME.out and .err; CPID is its
# pid once it is ready (unshare and sh exec, so it is the same process).
contained() {
	cr=$1 cn=$2
	shift 2
	mkdir -p "$TMP/$cn.root"
	# shellcheck disable=SC2016
	unshare --mount --propagation private sh -c '
		r=$1 c=$2 bin=$3
		shift 3
		mount --bind "$r" "$c" && mount -t tmpfs -o size=8m nl "$c/mnt" &&
			cp "$bin" "$c/mnt/rtcalls" && mkdir "$c/mnt/old" && cd "$c" &&
			pivot_root . mnt/old && exec /mnt/rtcalls "$@"' sh "$cr" "$TMP/$cn.root" "$RT" "$@" \
		>"$TMP/$cn.out" 2>"$TMP/$cn.err" &
	CPID=$!
	at_exit "kill -KILL $CPID 2>/dev/null"
	wait_for '^ready' "$TMP/$cn.err"
}

# entries of the table the client found missing, as one sorted JSON array
client_missing() {
	jq -sc '[.[] | .missing | strings] | sort' "$1"
}

# release NAME LABEL HIPLIB [RCCLLIB]: every check against one root filesystem
release() {
	name=$1 label=$2 hip=$3 rccl=${4:-}
	R=$(scripts/rootfs.sh "$name" 2>"$TMP/$name.rootfs")
	case $? in
	0) ;;
	77)
		skip "$label: no root filesystem: $(tail -n 1 "$TMP/$name.rootfs")"
		return
		;;
	*)
		fail "$label: root filesystem: $(tail -n 1 "$TMP/$name.rootfs")"
		return
		;;
	esac
	if [ ! -e "$R$hip" ]; then
		fail "$label: $R has no $hip"
		return
	fi

	# --- -p from the host, three threads at once (and RCCL where there is one)
	contained "$R" "$name.p" -g -t 3 ${rccl:+-r "$rccl"} "$hip"
	P=$CPID
	"$TOOL" -p "$P" --raw --no-audit -o "$TMP/$name.p.json" 2>"$TMP/$name.p.tool" &
	T=$!
	at_exit "kill -KILL $T 2>/dev/null"
	wait_for '"type":"attach".*libamdhip64' "$TMP/$name.p.json"
	[ -z "$rccl" ] || wait_for '"type":"attach".*librccl' "$TMP/$name.p.json"
	IDS=$(bpf_ids_of "$T")
	kill -USR1 "$P"
	wait "$T"
	rc=$?
	wait "$P"
	check "$label: -p: tool and client exit 0 ($rc)" test "$rc/$?" = 0/0
	hpath=$(jq -rs '[.[] | select(.type == "attach" and .lib == "libamdhip64")][0].path' "$TMP/$name.p.json")
	check "$label: the library found through the target's root ($hpath, not the host's file of that name)" \
		sh -c "case '$hpath' in $L/libamdhip64.so.*) ;; *) exit 1 ;; esac &&
			test -f '$R$hpath' && test ! '$R$hpath' -ef '$hpath'"
	if same_calls_by_thread "$TMP/$name.p.out" "$TMP/$name.p.json" "$P"; then
		pass "$label: every call captured exactly, thread by thread (arguments, rc, tid, order)"
	else
		fail "$label: every call captured exactly, thread by thread (arguments, rc, tid, order)"
		sed 's/^/  /' "$TMP/$name.p.tool" | head -5
	fi
	check "$label: HIP calls from three threads ($(jq -s '[.[] | select(.api)] | length' "$TMP/$name.p.out") calls in all)" \
		jq -es '[.[] | select(.api // "" | startswith("hip")) | .tid] | unique | length == 3' "$TMP/$name.p.out"
	check "$label: the entry points it lacks reported as missing" \
		test "$(jq -sc '[.[] | select(.type == "attach") | .missing[]] | sort' "$TMP/$name.p.json")" = \
		"$(client_missing "$TMP/$name.p.out")"
	nhip=$(jq -s '[.[] | select(.missing == null and (.api // "" | startswith("hip")))] | map(.api) | unique | length' "$TMP/$name.p.out")
	check "$label: each exported HIP entry point probed ($nhip)" \
		jq -es "[.[] | select(.type == \"attach\" and .lib == \"libamdhip64\")][0].attached == $nhip" "$TMP/$name.p.json"
	if [ -n "$IDS" ]; then
		left=$(bpf_ids_left "$IDS")
		check "$label: probes gone after exit (bpftool: none of its $(echo "$IDS" | wc -l) links and programs left${left:+: $left})" \
			test -z "$left"
	else
		fail "$label: the tool held no BPF link or program while attached"
	fi

	# --- --version -v --lib: which table entries the release exports
	"$TOOL" --version -v --lib "$R$hip" ${rccl:+--lib "$R$rccl"} >"$TMP/$name.ver"
	check "$label: --version -v --lib names the entries it lacks, as the client found them" \
		test "$(awk '$2 == "missing" {print $1}' "$TMP/$name.ver" | jq -R . | jq -sc 'sort')" = \
		"$(client_missing "$TMP/$name.p.out")"
	check "$label: --version --lib counts the exported entries ($nhip)" \
		grep -q "^library $R$hip (libamdhip64): exports $nhip of the table's" "$TMP/$name.ver"

	if [ -n "$rccl" ]; then
		check "$label: RCCL: every call reported once at the outer level, none nested" \
			jq -es '[.[] | select(.type == "call" and (.api | startswith("nccl")))] | length > 10 and all(has("coll_depth") | not)' "$TMP/$name.p.json"
		check "$label: RCCL: the six group calls ncclSend, ncclRecv and ncclCommInitAll make inside folded" \
			jq -es '[.[] | select(.type == "summary")][0].nested_folded == 6' "$TMP/$name.p.json"
		# the same without return probes: nothing can be folded, the inner calls show
		contained "$R" "$name.nr" -g -r "$rccl" "$hip"
		P=$CPID
		"$TOOL" -p "$P" --raw --no-audit --retprobes never -o "$TMP/$name.nr.json" 2>"$TMP/$name.nr.tool" &
		T=$!
		wait_for '"type":"attach".*librccl' "$TMP/$name.nr.json"
		kill -USR1 "$P"
		wait "$T"
		check "$label: RCCL without return probes: ncclSend's inner ncclGroupStart/End reported after it" \
			jq -es '[.[] | select(.type == "call" and (.api | startswith("nccl"))) | .api] | join(" ") |
				test("ncclSend ncclGroupStart ncclGroupEnd ncclRecv ncclGroupStart ncclGroupEnd ")' "$TMP/$name.nr.json"
	fi

	# --- the runtime loaded late, with dlopen, after the tool attached
	contained "$R" "$name.late" -g -L "$hip"
	P=$CPID
	"$TOOL" -p "$P" --wait-lib --raw --no-audit -o "$TMP/$name.late.json" 2>"$TMP/$name.late.tool" &
	T=$!
	sleep 0.5
	kill -USR1 "$P"
	wait "$T"
	rc=$?
	check "$label: dlopen after attach: library attached once, tool exits $rc" \
		jq -es "$rc == 0 and ([.[] | select(.type == \"attach\")] | length == 1)" "$TMP/$name.late.json"
	check "$label: dlopen after attach: every call captured exactly" \
		same_calls_by_thread "$TMP/$name.late.out" "$TMP/$name.late.json" "$P"

	# --- --all: the node agent finds the container's process by itself
	"$TOOL" --all --raw --no-audit -o "$TMP/$name.all.json" 2>"$TMP/$name.all.tool" &
	A=$!
	at_exit "kill -KILL $A 2>/dev/null"
	sleep 0.5
	contained "$R" "$name.all" -g "$hip"
	P=$CPID
	wait_for "\"type\":\"attach\",\"schema\":[0-9]*,\"pid\":$P," "$TMP/$name.all.json"
	kill -USR1 "$P"
	wait "$P"
	sleep 0.5
	kill -INT "$A"
	wait "$A"
	rc=$?
	check "$label: --all: exit 0 on SIGINT ($rc)" test "$rc" = 0
	check "$label: --all: the container's calls captured exactly" \
		same_calls_by_thread "$TMP/$name.all.out" "$TMP/$name.all.json" "$P"
}

release trixie "ROCm 5.7.1 (trixie)" $L/libamdhip64.so.5 $L/librccl.so.1
release sid "ROCm 6.4.3 (sid)" $L/libamdhip64.so.6
