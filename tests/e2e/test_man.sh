# The manual page nanlog-bpf(8) against the tool: it names exactly the
# options --help names (user/app/options.c), renders without a warning from man
# or groff, and carries the binary's version. No root needed.
. tests/e2e/lib.sh

MAN=$B/nanlog-bpf.8
if [ ! -x "$TOOL" ] || [ ! -f "$MAN" ]; then
	fail "$TOOL or $MAN not built (make)"
	exit 0
fi

# opts_of: the options defined on lines of option headings read from stdin:
# each field (runs of two or more blanks apart) that starts with a dash,
# e.g. "-p, --pid PID" or "--format json|table"; not the prose after them
opts_of() {
	awk '{ n = split($0, f, /   */); for (i = 1; i <= n; i++) if (f[i] ~ /^-/) print f[i] }' |
		grep -oE -- '(^|[ ,])--?[a-z][a-z-]*' | tr -d ' ,' | sort -u
}
# --help: option lines are indented by 2 to 6 blanks (longer indents continue
# a description)
"$TOOL" --help | grep -E '^ {2,6}-' | opts_of >"$TMP/help.opts"
# the man page, rendered wide: the headings of the OPTIONS section are the
# lines indented by exactly 7 blanks that start with a dash
MANWIDTH=250 man -l "$MAN" 2>/dev/null | col -b |
	awk '/^OPTIONS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
	grep -E '^ {7}-' | opts_of >"$TMP/man.opts"
n=$(wc -l <"$TMP/help.opts")
if [ "$n" -ge 30 ] && cmp -s "$TMP/help.opts" "$TMP/man.opts"; then
	pass "the man page's OPTIONS and --help name the same $n options"
else
	fail "the man page's OPTIONS and --help name different options (< --help, > man):"
	diff "$TMP/help.opts" "$TMP/man.opts" | grep '^[<>]' | sed 's/^/  /'
fi

# the comparison itself catches an option missing from one side
grep -v -- '^--every-launch$' "$TMP/man.opts" >"$TMP/man.less"
check "the comparison sees an option the man page lacks" sh -c "! cmp -s '$TMP/help.opts' '$TMP/man.less'"

# every option of the parser's table (user/app/options.c longopts) is in --help
sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*, NULL, .*/--\1/p' user/app/options.c | sort -u >"$TMP/table.opts"
check "every long option of user/app/options.c is in --help" \
	sh -c "test -s '$TMP/table.opts' && test -z \"\$(comm -23 '$TMP/table.opts' '$TMP/help.opts')\""

# rendering: man's and groff's own warnings (groff -ww: all of them)
MANWIDTH=80 man --warnings -l "$MAN" >"$TMP/man.txt" 2>"$TMP/man.err"
check "man --warnings -l renders $MAN without a warning" sh -c "test -s '$TMP/man.txt' && ! test -s '$TMP/man.err'"
[ -s "$TMP/man.err" ] && sed 's/^/  /' "$TMP/man.err" | head -5
if command -v groff >/dev/null 2>&1; then
	groff -man -ww -z "$MAN" >"$TMP/groff.err" 2>&1
	check "groff -ww finds nothing to warn about" test ! -s "$TMP/groff.err"
else
	skip "groff -ww: groff is not installed (make deps)"
fi
for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" OUTPUT PRIVILEGES FILES EXAMPLES "SEE ALSO"; do
	check "the man page has a $s section" grep -q "^$s\$" "$TMP/man.txt"
done

# one version: the binary's, the man page's footer, scripts/version.sh
v=$(./scripts/version.sh)
bv=$("$TOOL" --version | sed -n '1s/^nanlog-bpf \([^ ]*\) .*/\1/p')
# (wide: a snapshot's long version runs into the date of an 80-column footer)
mv_=$(MANWIDTH=160 man -l "$MAN" 2>/dev/null | tail -1 | grep -o "nanlog-bpf $v ")
mv_=${mv_% }
check "--version ($bv), the man page and scripts/version.sh ($v) agree" \
	sh -c "test '$bv' = '$v' && test '$mv_' = 'nanlog-bpf $v'"
