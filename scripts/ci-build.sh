#!/bin/sh
# The build steps that CI (.ci/run) and the container image (Dockerfile)
# share, so that every CI run goes through the image's build commands:
#   scripts/ci-build.sh STEP...
#   deps   scripts/deps.sh  every build and test dependency (make deps); not
#          through make, which a bare Debian base image does not have
#   build  make -j2      the tool and everything the tests need, -Werror
#   unit   make unit     unit tests (cmocka, ASan/UBSan): no root, no BPF
#   test   make test     unit and end-to-end tests (root, BPF, uprobes); it
#                        builds the container image first (make image)
#   fuzz-regress  make fuzz-regress   every committed fuzzing input once
#   valgrind      make valgrind       the core unit tests under valgrind
#   tsan          make tsan           the unit tests that run threads under
#                                     ThreadSanitizer (seconds)
#   fuzz          make fuzz FUZZ_SECONDS=10   each fuzzing harness 10 s
#   deb    make deb      the Debian package (docs/packaging.md)
#   pkgroot make pkgroot  the Debian 12 root it is installed into (mmdebstrap,
#                        made once and kept under build/); both before make
#                        test, so that tests/e2e/test_package.sh finds them
# CI runs "deps build deb pkgroot fuzz-regress valgrind fuzz tsan test": the fuzzers,
# valgrind and ThreadSanitizer before make test, so that the last line CI prints is still the
# test runner's "N passed, N failed, N skipped" (docs/fuzzing.md). The image
# build runs "deps", then "build unit", as it cannot load BPF programs, and
# its package stage "deb".
# tests/e2e/test_deploy.sh checks that the two stay so.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: scripts/ci-build.sh deps|build|unit|test|fuzz-regress|valgrind|tsan|fuzz|deb|pkgroot..." >&2; exit 2; }
for step in "$@"; do
	case "$step" in
	deps) ./scripts/deps.sh ;;
	build) make -j2 ;;
	unit) make unit ;;
	test) make test ;;
	fuzz-regress) make fuzz-regress ;;
	valgrind) make valgrind ;;
	tsan) make tsan ;;
	fuzz) make fuzz FUZZ_SECONDS=10 ;;
	deb) make deb ;;
	pkgroot) make pkgroot ;;
	*) echo "ci-build: unknown step '$step' (deps, build, unit, test, fuzz-regress, valgrind, tsan, fuzz, deb, pkgroot)" >&2; exit 2 ;;
	esac
done
