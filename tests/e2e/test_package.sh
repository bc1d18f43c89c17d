# The Debian package (docs/packaging.md): `make deb` builds it with
# debhelper and dpkg-buildpackage (CI's "deb" step builds it first, so that
# here it is up to date), lintian finds no error in it, and apt installs it
# into a fresh Debian 12 root file system (mmdebstrap, minbase, cached under
# $B/pkgroot; apt inside reaches the archive of this host's own apt
# sources), where the installed tool prints its version, replays a recorded
# fixture as the tree's tool does and has its man page. Needs root (chroot).
# Run by `make test` alone on a fresh tree it builds the package and the root
# itself, which takes minutes:
# e2e-timeout: 900
# shellcheck shell=sh
. tests/e2e/lib.sh

if [ "$(id -u)" != 0 ]; then
	skip "package: not root (chroot, apt in the root file system)"
	exit 0
fi
for t in dpkg-buildpackage dh lintian mmdebstrap; do
	if ! command -v $t >/dev/null 2>&1; then
		fail "package: $t is not installed (make deps)"
		exit 0
	fi
done

V=$(./scripts/version.sh)
DEB=$B/deb/nanlog-bpf_${V}_amd64.deb
t0=$(date +%s)
make -s deb >"$TMP/deb.out" 2>&1
rc=$?
check "make deb builds $DEB (exit $rc, $(($(date +%s) - t0)) s)" sh -c "test $rc = 0 && test -s '$DEB'"
if [ ! -s "$DEB" ]; then
	sed 's/^/  /' "$TMP/deb.out" | tail -20
	exit 0
fi

# --- what the package says and holds
field() { dpkg-deb -f "$DEB" "$1"; }
check "package version $(field Version) is scripts/version.sh's ($V)" test "$(field Version)" = "$V"
check "Package nanlog-bpf, Architecture amd64, Section admin" \
	sh -c "test '$(field Package)/$(field Architecture)/$(field Section)' = nanlog-bpf/amd64/admin"
dep=$(field Depends)
ok=1
for lib in $(readelf -d "$TOOL" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
	p=$(dpkg -S "*/$lib" 2>/dev/null | sed -n '1s/:.*//p')
	case "$dep" in *"$p "* | *"$p,"* | *"$p") ;; *) ok=0; echo "  Depends lacks $p ($lib)" ;; esac
done
check "Depends (from \${shlibs:Depends}) names the package of every library the tool links: $dep" test $ok = 1
dpkg-deb -c "$DEB" | awk '{ print $NF }' | sed 's|^\./|/|' >"$TMP/files"
for f in /usr/sbin/nanlog-bpf /usr/share/man/man8/nanlog-bpf.8.gz /lib/systemd/system/nanlog-bpf.service \
	/etc/logrotate.d/nanlog-bpf /usr/share/bash-completion/completions/nanlog-bpf \
	/usr/share/doc/nanlog-bpf/copyright /usr/share/doc/nanlog-bpf/changelog.gz \
	/usr/share/doc/nanlog-bpf/README.md /usr/share/doc/nanlog-bpf/CHANGELOG.md; do
	# (dh_compress compresses documents of 4 kB and more)
	check "the package holds $f" grep -qxE "$f(\.gz)?" "$TMP/files"
done
check "its changelog is debian/changelog, the newest entry $V" sh -c \
	"dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./usr/share/doc/nanlog-bpf/changelog.gz | zcat | head -1 | grep -qF 'nanlog-bpf ($V) '"
dpkg-deb -e "$DEB" "$TMP/ctl"
# (dh_installsystemd --no-enable --no-start: an enable only where the admin
# had enabled it before, kept across an upgrade; no start)
check "its maintainer scripts neither enable nor start the unit" sh -c \
	"test -f '$TMP/ctl/postinst' && ! grep -q 'deb-systemd-invoke' '$TMP/ctl/postinst' &&
	 test \$(grep -c 'deb-systemd-helper enable' '$TMP/ctl/postinst') = \$(grep -c 'was-enabled' '$TMP/ctl/postinst')"
check "/etc/logrotate.d/nanlog-bpf is a conffile" grep -qx /etc/logrotate.d/nanlog-bpf "$TMP/ctl/conffiles"

# --- lintian: no error (warnings and notes are printed, not failed)
lintian --fail-on error "$DEB" >"$TMP/lintian.out" 2>&1
rc=$?
check "lintian: no error (exit $rc; $(grep -c '^E:' "$TMP/lintian.out") E:, $(grep -c '^W:' "$TMP/lintian.out") W:)" \
	sh -c "test $rc = 0 && ! grep -q '^E:' '$TMP/lintian.out'"
grep -E '^[EW]:' "$TMP/lintian.out" | sed 's/^/  /' | head -20

# --- a fresh Debian 12 root file system (make pkgroot, scripts/pkgroot.sh:
# made once by mmdebstrap, a few minutes, and kept; CI's "pkgroot" step makes
# it before make test)
ROOTFS=$B/pkgroot/bookworm-minbase
if [ ! -d "$ROOTFS/etc" ]; then
	t0=$(date +%s)
	make -s pkgroot >"$TMP/pkgroot.out" 2>&1
	check "make pkgroot: a Debian 12 minbase root file system ($(($(date +%s) - t0)) s)" test -d "$ROOTFS/etc"
	[ -d "$ROOTFS/etc" ] || { tail -20 "$TMP/pkgroot.out" | sed 's/^/  /'; exit 0; }
fi
R=$TMP/root
cp -a "$ROOTFS" "$R"
check "the root file system is Debian 12" grep -q '^12\.' "$R/etc/debian_version"
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null
mount -t proc proc "$R/proc" && at_exit "umount -l '$R/proc'"
cp "$DEB" "$R/tmp/"
in_root() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
t0=$(date +%s)
inst() { in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$DEB")" >"$TMP/apt.out" 2>&1; }
inst || { in_root apt-get update -q >>"$TMP/apt.out" 2>&1 && inst; }
rc=$?
check "apt installs the package and what it depends on (exit $rc, $(($(date +%s) - t0)) s)" test $rc = 0
[ $rc = 0 ] || tail -15 "$TMP/apt.out" | sed 's/^/  /'

# --- the installed tool
in_root nanlog-bpf --version >"$TMP/ver.out" 2>&1
check "the installed nanlog-bpf --version says $V" grep -q "^nanlog-bpf $V " "$TMP/ver.out"
check "the tool is /usr/sbin/nanlog-bpf" test -x "$R/usr/sbin/nanlog-bpf"
cp tests/fixtures/clean.rec "$R/tmp/"
in_root nanlog-bpf --replay /tmp/clean.rec --raw -q -o /tmp/clean.json
rc=$?
check "the installed tool replays tests/fixtures/clean.rec exactly as recorded (exit $rc)" \
	sh -c "test $rc = 0 && cmp '$R/tmp/clean.json' tests/fixtures/clean.expected.json"
in_root env MANWIDTH=160 MANPAGER=cat man nanlog-bpf >"$TMP/man.out" 2>"$TMP/man.err"
check "man nanlog-bpf shows the page of version $V" \
	sh -c "grep -q '^NANLOG-BPF(8)' '$TMP/man.out' && grep -q 'nanlog-bpf $V ' '$TMP/man.out'"
check "the unit is installed, not enabled" sh -c "test -f '$R/lib/systemd/system/nanlog-bpf.service' &&
	test -z \"\$(find '$R/etc/systemd/system' -name nanlog-bpf.service 2>/dev/null)\""
in_root apt-get purge -y -q nanlog-bpf >"$TMP/purge.out" 2>&1
check "apt purges it: no binary, no man page, no logrotate snippet" sh -c \
	"test ! -e '$R/usr/sbin/nanlog-bpf' && test ! -e '$R/usr/share/man/man8/nanlog-bpf.8.gz' && test ! -e '$R/etc/logrotate.d/nanlog-bpf'"
