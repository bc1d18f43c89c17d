# make install / make uninstall (docs/packaging.md): the layout under DESTDIR
# and PREFIX, a prefix the user may not write refused before anything is
# written, the bash completion, the systemd unit (systemd-analyze verify and
# security) and the logrotate snippet. Root for the non-root user's run.
# shellcheck shell=sh disable=SC2016
# (SC2016: the jq programs and inner shell scripts are in single quotes on purpose)
. tests/e2e/lib.sh

if [ ! -x "$TOOL" ] || [ ! -f "$B/nanlog-bpf.8" ] || [ ! -f "$B/nanlog-bpf.service" ]; then
	fail "$TOOL, its man page or its unit not built (make)"
	exit 0
fi

# --- make install into a DESTDIR, twice over: the default prefix and /usr
D=$TMP/dest
make -s install DESTDIR="$D" >"$TMP/install.out" 2>&1
rc=$?
check "make install DESTDIR=... exits 0" test $rc = 0
for f in /usr/local/sbin/nanlog-bpf /usr/local/share/man/man8/nanlog-bpf.8 \
	/usr/local/share/bash-completion/completions/nanlog-bpf \
	/usr/local/lib/systemd/system/nanlog-bpf.service /etc/logrotate.d/nanlog-bpf \
	/usr/local/share/doc/nanlog-bpf/README.md /usr/local/share/doc/nanlog-bpf/CHANGELOG.md \
	/usr/local/share/doc/nanlog-bpf/usage.md /usr/local/share/doc/nanlog-bpf/security.md; do
	check "make install lays out $f" test -f "$D$f"
done
check "the installed binary is the built one, executable" sh -c "cmp -s '$TOOL' '$D/usr/local/sbin/nanlog-bpf' && test -x '$D/usr/local/sbin/nanlog-bpf'"
check "the installed unit runs the binary of its prefix" \
	grep -q '^ExecStart=.* /usr/local/sbin/nanlog-bpf --all ' "$D/usr/local/lib/systemd/system/nanlog-bpf.service"
check "the installed man page names the unit of its prefix" \
	grep -qF '/usr/local/lib/systemd/system/nanlog' "$D/usr/local/share/man/man8/nanlog-bpf.8"
make -s uninstall DESTDIR="$D" >"$TMP/uninstall.out" 2>&1
left=$(find "$D" -type f | sed "s|^$D||")
check "make uninstall removes every file it installed (left: ${left:-none})" test -z "$left"

D2=$TMP/dest2
make -s install DESTDIR="$D2" PREFIX=/usr UNITDIR=/lib/systemd/system >/dev/null 2>&1
check "PREFIX=/usr: /usr/sbin, /usr/share/man/man8, UNITDIR as given" sh -c \
	"test -x '$D2/usr/sbin/nanlog-bpf' && test -f '$D2/usr/share/man/man8/nanlog-bpf.8' &&
	 grep -q '^ExecStart=.* /usr/sbin/nanlog-bpf ' '$D2/lib/systemd/system/nanlog-bpf.service'"

# --- a user who may not write the prefix: one permission error, nothing written
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	# the user must be able to read the checkout (a clone in a mktemp -d
	# folder is 0700): open it to others for these checks, then close it
	if ! asnobody test -r Makefile; then
		mode=$(stat -c %a .)
		chmod o+rx .
		at_exit "chmod $mode '$(pwd)'"
	fi
	mkdir -p "$TMP/ro" && chmod 755 "$TMP" "$TMP/ro"
	asnobody make -s install DESTDIR="$TMP/ro" >"$TMP/ro.out" 2>&1
	rc=$?
	check "non-root make install into a root-owned DESTDIR fails (exit $rc)" test $rc -ne 0
	check "... with a permission error naming the folder" grep -q "cannot write to $TMP/ro: Permission denied" "$TMP/ro.out"
	check "... and writes nothing" test -z "$(find "$TMP/ro" -mindepth 1)"
	before=$(ls -d /usr/local/sbin/nanlog-bpf /usr/local/share/man/man8/nanlog-bpf.8 2>/dev/null)
	asnobody make -s install >"$TMP/sys.out" 2>&1
	rc=$?
	after=$(ls -d /usr/local/sbin/nanlog-bpf /usr/local/share/man/man8/nanlog-bpf.8 2>/dev/null)
	check "non-root make install into /usr/local fails with Permission denied (exit $rc), nothing written" \
		sh -c "test $rc -ne 0 && grep -q 'Permission denied' '$TMP/sys.out' && test '$before' = '$after'"
	sed 's/^/  /' "$TMP/sys.out" | head -3
else
	skip "non-root make install: not root, or no setpriv"
fi

# --- bash completion: options from --help, -p offers HIP processes
if [ -f /usr/share/bash-completion/bash_completion ] && command -v bash >/dev/null 2>&1; then
	holder=""
	if [ -x "$SIM/pipeline" ]; then
		LD_LIBRARY_PATH=$SIM workload_gated "$TMP/w.out" --batches 1 && holder=$GATED_PID
	fi
	cat >"$TMP/comp.bash" <<EOC
. /usr/share/bash-completion/bash_completion
. completions/nanlog-bpf
PATH=$B:\$PATH
comp() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); COMP_LINE="\$*"; COMP_POINT=\${#COMP_LINE}
	COMPREPLY=(); _nanlog_bpf nanlog-bpf "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"; printf '%s\n' "\${COMPREPLY[@]}"; }
echo "== --re"; comp nanlog-bpf --re
echo "== --format"; comp nanlog-bpf --format ""
echo "== -p"; comp nanlog-bpf -p ""
EOC
	bash "$TMP/comp.bash" >"$TMP/comp.out" 2>"$TMP/comp.err"
	sect() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' "$TMP/comp.out" | sort | tr '\n' ' '; }
	check "completion: --re offers --record --replay --retprobes" test "$(sect --re)" = "--record --replay --retprobes "
	check "completion: --format offers json table" test "$(sect --format)" = "json table "
	if [ -n "$holder" ]; then
		check "completion: -p offers the workload ($holder), which maps libamdhip64" sh -c "echo ' $(sect -p)' | grep -q ' $holder '"
		# (another test's process may have exited since it was offered: its maps
		# are gone, or empty for a zombie)
		check "completion: -p offers only processes that map libamdhip64" sh -c \
			"for p in $(sect -p); do m=\$(cat /proc/\$p/maps 2>/dev/null); [ -z \"\$m\" ] || echo \"\$m\" | grep -q libamdhip64 || exit 1; done"
	else
		skip "completion of -p: no workload built (make)"
	fi
else
	skip "bash completion: bash-completion is not installed (make deps)"
fi

# --- the unit: systemd's own checks, and the score docs/security.md quotes
U=$B/nanlog-bpf.service
if command -v systemd-analyze >/dev/null 2>&1; then
	# --man=no: the man page it documents is not installed on this host
	( cd "$TMP" && systemd-analyze verify --man=no "$OLDPWD/$U" ) >"$TMP/verify.out" 2>&1
	rc=$?
	check "systemd-analyze verify accepts $U (exit $rc, no message)" sh -c "test $rc = 0 && ! test -s '$TMP/verify.out'"
	sed 's/^/  /' "$TMP/verify.out" | head -5
	systemd-analyze security --offline=true --no-pager "$U" >"$TMP/sec.out" 2>&1
	score=$(sed -n 's/.*Overall exposure level for nanlog-bpf.service: \([0-9.]*\) .*/\1/p' "$TMP/sec.out")
	doc=$(sed -n 's/.*`systemd-analyze security` scores it \*\*\([0-9.]*\)\*\*.*/\1/p' docs/security.md)
	check "systemd-analyze security scores the unit $score, as docs/security.md says ($doc)" \
		sh -c "test -n '$score' && test '$score' = '$doc'"
	for d in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes LogsDirectory=nanlog-bpf; do
		check "the unit sets $d" grep -qx "$d" "$U"
	done
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$U" | tr ' ' '\n' | sort | tr '\n' ' ')
	doccaps=$(sed -n 's/^| \(CAP_[A-Z_]*\) |.*/\1/p' docs/security.md | sort | tr '\n' ' ')
	check "CapabilityBoundingSet ($caps) is the table of docs/security.md ($doccaps)" \
		sh -c "test -n '$caps' && test '$caps' = '$doccaps'"
	check "the unit is not enabled by the package's install: WantedBy only in [Install]" \
		sh -c "sed -n '/^\[Install\]/,\$p' '$U' | grep -qx 'WantedBy=multi-user.target'"
else
	skip "systemd-analyze: systemd is not installed (make deps)"
fi

# --- logrotate: the snippet parses and names the unit's log
if command -v logrotate >/dev/null 2>&1; then
	logrotate -d -s "$TMP/lr.state" deploy/systemd/nanlog-bpf.logrotate >"$TMP/lr.out" 2>&1
	rc=$?
	check "logrotate -d accepts the snippet (exit $rc)" sh -c "test $rc = 0 && ! grep -qi 'error' '$TMP/lr.out'"
	log=$(sed -n "s/^ExecStart=.*>>\([^']*\)'\$/\1/p" "$U")
	check "the snippet rotates the unit's log ($log) with copytruncate" sh -c \
		"case '$log' in /var/log/nanlog-bpf/*.jsonl) ;; *) exit 1 ;; esac &&
		 grep -q '^/var/log/nanlog-bpf/\*.jsonl {' deploy/systemd/nanlog-bpf.logrotate && grep -q copytruncate deploy/systemd/nanlog-bpf.logrotate"
else
	skip "logrotate: not installed (make deps)"
fi
