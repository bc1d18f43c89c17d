# nanlog-bpf build. Output goes under build/; quiet unless V=1.
# Targets: all (default), deps, rootfs, test, demo, bench, clean;
#          image (the container image, with podman: docs/kubernetes.md;
#          make test and make e2e build it first);
#          fuzz, fuzz-regress, valgrind, tsan (docs/fuzzing.md);
#          fuzz-audit (docs/engine.md, "Model-based random testing");
#          tool, install, uninstall, deb, pkgroot (docs/packaging.md).

ARCH := $(shell uname -m)
ifneq ($(ARCH),x86_64)
$(error nanlog-bpf supports x86-64 only (the HIP argument layouts and vmlinux/vmlinux.h are x86-64); this is $(ARCH))
endif

.DELETE_ON_ERROR:
.SUFFIXES:

B        := build
CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
LLVM_STRIP ?= llvm-strip

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) -MMD -MP -Iinclude -Iuser -I$(B)
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
HIP_CFLAGS := -D__HIP_PLATFORM_AMD__=1 -Isim/include
# simhip and librccl are built so that every export begins with push %rbp, as
# every probed entry point of ROCm's libamdhip64 does: a uprobe on it is
# emulated, not single-stepped, so tracing costs what it costs on ROCm
# (test_simabi checks both libraries; docs/performance.md).
SIM_ABI_CFLAGS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-shrink-wrap -fno-optimize-sibling-calls -fno-schedule-insns2

# --- user space, by layer (docs/architecture.md, user/README.md) --------------
# user/attach/ and main.c use libbpf and need root: the loader side. Every
# other folder (record, proc, engine, out, app) is the core: pure C without
# libbpf, unit-tested under ASan and UBSan (the app's tests with a stub
# loader, tests/unit/stub_loader.c). The folders are the rule; the layering
# test (tests/layers.sh) checks their includes.
LAYERS      := record proc engine out attach app
LOADER_SRCS := $(wildcard user/attach/*.c) user/main.c
CORE_SRCS   := $(filter-out $(LOADER_SRCS),$(wildcard user/*/*.c))
CORE_OBJS   := $(patsubst user/%.c,$(B)/user/%.o,$(CORE_SRCS))
CORE_SAN_OBJS := $(patsubst user/%.c,$(B)/san/user/%.o,$(CORE_SRCS))
CORE_SAN_LIB := $(B)/san/libnanlog-core.a
# the app layer prints the version (scripts/version.sh, through $(B)/version.h)
APP_SRCS    := $(wildcard user/app/*.c)
LOADER_OBJS := $(patsubst user/%.c,$(B)/user/%.o,$(LOADER_SRCS))

# --- BPF --------------------------------------------------------------------
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS    := $(patsubst bpf/%.bpf.c,$(B)/%.skel.h,$(BPF_SRCS))
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror -Ivmlinux -Iinclude -MMD -MP

# --- sim: CPU HIP runtime, RCCL simulation, workloads ------------------------
SIMHIP     := $(B)/sim/libamdhip64.so.5
SIMRCCL    := $(B)/sim/librccl.so.1
SIMHIP_SRCS := $(wildcard sim/hip/*.c)
SIMRCCL_SRCS := $(wildcard sim/rccl/*.c)
SIMHIP_OBJS := $(patsubst sim/%.c,$(B)/simobj/%.o,$(SIMHIP_SRCS))
# simhip once more with -fcf-protection, as distributions build ROCm 5.7 and
# later: every export begins with endbr64; push %rbp, whose probe the kernel
# single-steps at the symbol and emulates when placed on the push (the
# bench's controlled experiment of placement, and the tests that compare
# arguments read both ways; docs/performance.md)
SIMHIP_CF  := $(B)/sim/cf/libamdhip64.so.5
SIMHIP_CF_OBJS := $(patsubst sim/%.c,$(B)/simobj/cf/%.o,$(SIMHIP_SRCS))
SIMRCCL_OBJS := $(patsubst sim/%.c,$(B)/simobj/%.o,$(SIMRCCL_SRCS))
# Every program under sim/progs/NAME.c is a workload or helper built against
# the real HIP headers and linked against whichever libamdhip64.so.5 is found
# at run time.
SIM_PROGS  := $(patsubst sim/progs/%.c,$(B)/sim/%,$(wildcard sim/progs/*.c))
PIPELINE_SRCS := $(wildcard sim/pipeline/*.c)
PIPELINE_OBJS := $(patsubst sim/%.c,$(B)/simobj/%.o,$(PIPELINE_SRCS))
PIPELINE   := $(B)/sim/pipeline

# --- tests --------------------------------------------------------------------
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
SIM_UNIT_SRCS := $(filter tests/unit/test_sim%.c,$(UNIT_SRCS))
CORE_UNIT_SRCS := $(filter-out $(SIM_UNIT_SRCS),$(UNIT_SRCS))
UNIT_BINS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
# keep the sanitizer builds of the core between runs (pattern-rule intermediates)
.SECONDARY: $(CORE_SAN_OBJS)
# small helper programs of the end-to-end tests (no HIP), linked with the core
TEST_PROGS := $(patsubst tests/progs/%.c,$(B)/tests/progs/%,$(wildcard tests/progs/*.c))

# --- fuzzing (docs/fuzzing.md): libFuzzer harnesses under ASan and UBSan,
# built with clang into $(B)/fuzz, apart from the unit tests' gcc objects
FUZZ_CC      ?= $(CLANG)
FUZZ_CFLAGS  ?= -O1 -g
FUZZ_SECONDS ?= 20
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_SRCS    := $(wildcard tests/fuzz/fuzz_*.c)
ifeq ($(wildcard user/proc/cgroup.c),)
FUZZ_SRCS    := $(filter-out tests/fuzz/fuzz_cgroup.c,$(FUZZ_SRCS))
endif
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS    := $(patsubst %,$(B)/fuzz/fuzz_%,$(FUZZ_NAMES))
CORE_FUZZ_OBJS := $(patsubst user/%.c,$(B)/fuzz/user/%.o,$(CORE_SRCS))
FUZZ_LIB     := $(B)/fuzz/libnanlog-core-fuzz.a
# --- model-based random testing of the audit (docs/engine.md): random pipeline
# programs and their truth (tests/audit), the driver and the unit test's sample
AUDIT_GEN_SRCS := tests/audit/randprog.c tests/audit/randcheck.c
AUDIT_GEN_DEPS := $(AUDIT_GEN_SRCS) tests/audit/randprog.h
FUZZ_AUDIT   := $(B)/audit/fuzz_audit
# a random program executed on simhip, for the audit of real probes
RANDRUN      := $(B)/audit/randrun
FUZZ_AUDIT_SECONDS ?= 60
FUZZ_AUDIT_COUNT ?=
FUZZ_AUDIT_FIRST ?= 1
FUZZ_AUDIT_OUT ?= $(B)/audit/found
# --- valgrind: the core unit tests again, without ASan (it and valgrind exclude
# each other); not test_sim*, see docs/fuzzing.md; not test_audit_random, whose
# sample of random programs takes valgrind minutes (ASan runs it in make test);
# the clock-judged loop grids of test_engine_pipes run every fourth loop there
# (tests/valgrind/run.sh sets NL_VALGRIND)
VG_CFLAGS    ?= -O1 -g
CORE_VG_OBJS := $(patsubst user/%.c,$(B)/vg/user/%.o,$(CORE_SRCS))
VG_LIB       := $(B)/vg/libnanlog-core-vg.a
VG_BINS      := $(patsubst tests/unit/%.c,$(B)/vg/%,$(filter-out tests/unit/test_audit_random.c,$(CORE_UNIT_SRCS)))
# --- ThreadSanitizer: the unit tests that run threads (the metrics registry fed
# while the renderer and the HTTP server's thread read it), built apart in
# $(B)/tsan, as TSan and ASan exclude each other; a report fails make tsan
TSAN_CFLAGS  ?= -O1 -g
TSAN         := -fsanitize=thread -fno-omit-frame-pointer
TSAN_TESTS   := test_metrics
CORE_TSAN_OBJS := $(patsubst user/%.c,$(B)/tsan/user/%.o,$(CORE_SRCS))
TSAN_LIB     := $(B)/tsan/libnanlog-core-tsan.a
TSAN_BINS    := $(patsubst %,$(B)/tsan/%,$(TSAN_TESTS))

# --- bench (docs/performance.md): built by `make all`, run only by `make bench`
BENCH_BINS := $(B)/bench/micro $(B)/bench/floor $(B)/bench/bigrec $(B)/bench/enginebench
.SECONDARY: $(B)/bench/floor.bpf.o

TOOL := $(B)/nanlog-bpf

# --- version, install, package (docs/packaging.md) -----------------------------
# One version: scripts/version.sh (git describe, or the VERSION file). It goes
# into the binary through $(B)/version.h, which is rewritten only when the
# version changes, and into the man page, the unit and the package.
# (The image's dependency layer holds the Makefile without the script:
# make deps needs no version.)
VERSION  := $(shell [ ! -e scripts/version.sh ] || ./scripts/version.sh)
ifeq ($(VERSION)$(wildcard scripts/version.sh),scripts/version.sh)
$(error scripts/version.sh gave no version)
endif
# the man page's date: the package build's SOURCE_DATE_EPOCH, else the commit's
MAN_DATE := $(shell d=$${SOURCE_DATE_EPOCH:-$$(git -c safe.directory='*' log -1 --format=%ct 2>/dev/null)}; \
	date -u -d @$${d:-$$(date +%s)} +%Y-%m-%d)
PREFIX   ?= /usr/local
SBINDIR  ?= $(PREFIX)/sbin
MANDIR   ?= $(PREFIX)/share/man
DOCDIR   ?= $(PREFIX)/share/doc/nanlog-bpf
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR  ?= $(PREFIX)/lib/systemd/system
# logrotate reads only /etc/logrotate.d, whatever the prefix
LOGROTATEDIR ?= /etc/logrotate.d
INSTALL  ?= install
MAN      := $(B)/nanlog-bpf.8
UNIT     := $(B)/nanlog-bpf.service
DOCS     := README.md CHANGELOG.md $(wildcard docs/*.md)
# the man page and the unit name the folders they are installed for: make
# writes them to $(B) for the default folders, make install again for its own
SUBST    := sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@DATE@|$(MAN_DATE)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
	-e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@UNITDIR@|$(UNITDIR)|g'
# what install lays out: source:destination:mode (a .in source through SUBST)
INSTALL_FILES := $(TOOL):$(SBINDIR)/nanlog-bpf:755 man/nanlog-bpf.8.in:$(MANDIR)/man8/nanlog-bpf.8:644 \
	completions/nanlog-bpf:$(BASHCOMPDIR)/nanlog-bpf:644 \
	deploy/systemd/nanlog-bpf.service.in:$(UNITDIR)/nanlog-bpf.service:644 \
	deploy/systemd/nanlog-bpf.logrotate:$(LOGROTATEDIR)/nanlog-bpf:644 \
	$(foreach d,$(DOCS),$(d):$(DOCDIR)/$(notdir $(d)):644)
DEB      := $(B)/deb/nanlog-bpf_$(VERSION)_amd64.deb
PKGROOT  := $(B)/pkgroot/bookworm-minbase
DEB_SRCS := Makefile VERSION README.md CHANGELOG.md $(DOCS) $(wildcard user/*.[ch] user/*/*.[ch] user/*/README.md bpf/*.[ch] include/*.h vmlinux/* \
	man/* completions/* deploy/systemd/* scripts/*.sh debian/* debian/source/*)

.PHONY: all deps rootfs image image-if-podman test unit e2e demo bench clean fuzz fuzz-build fuzz-regress fuzz-seeds valgrind tsan \
	fuzz-audit tool install uninstall deb pkgroot FORCE
# The whole tool under ASan and UBSan, for the tests that replay recordings
# and attach to workloads with it (tests/e2e/test_sanitized.sh).
SAN_TOOL := $(B)/san/nanlog-bpf
SAN_LOADER_OBJS := $(patsubst user/%.c,$(B)/san/user/%.o,$(LOADER_SRCS))

all: $(TOOL) $(MAN) $(UNIT) $(SAN_TOOL) $(SIMHIP) $(SIMHIP_CF) $(SIMRCCL) $(PIPELINE) $(SIM_PROGS) \
	$(UNIT_BINS) $(TEST_PROGS) $(BENCH_BINS) $(FUZZ_AUDIT) $(RANDRUN)

deps:
	$(Q)./scripts/deps.sh

# the Dockerfile, built with podman from a local Debian 12 base (no registry);
# the base and podman's layers are cached (scripts/image.sh). make test builds
# it first for the tests that run it, unless podman cannot run here: then it
# says why, and so do those tests (SKIP).
image:
	$(Q)B=$(B) ./scripts/image.sh

# a failed build does not stop make test: the image tests then fail, saying why
image-if-podman:
	-$(Q)B=$(B) ./scripts/image.sh --if-podman

# ---- BPF object and skeleton
$(B)/bpf/%.bpf.o: bpf/%.bpf.c | $(B)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $@.tmp
	$(Q)$(LLVM_STRIP) -g $@.tmp -o $@ 2>/dev/null || mv $@.tmp $@
	$(Q)rm -f $@.tmp

$(B)/%.skel.h: $(B)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# ---- user space
$(B)/user/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LOADER_OBJS): $(SKELS) $(B)/version.h
$(foreach d,user san/user fuzz/user vg/user tsan/user,$(patsubst user/%.c,$(B)/$(d)/%.o,$(APP_SRCS))): $(B)/version.h

$(B)/san/user/%.o: user/%.c
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN) -c $< -o $@

$(SAN_LOADER_OBJS): $(SKELS) $(B)/version.h
.SECONDARY: $(SAN_LOADER_OBJS)

$(SAN_TOOL): $(SAN_LOADER_OBJS) $(CORE_SAN_OBJS)
	$(call msg,LD-SAN,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) -o $@ $^ $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf) -lelf -lz -lcap -lm -lmicrohttpd

$(B)/libnanlog-core.a: $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# the unit tests link the core as an archive: a test takes only the objects
# it uses, and the app's tests bring their stub loader
$(CORE_SAN_LIB): $(CORE_SAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TOOL): $(LOADER_OBJS) $(B)/libnanlog-core.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz) -lelf -lz -lcap -lm -lmicrohttpd $(EXTRA_LIBS)

# ---- version, man page, unit, install, package (docs/packaging.md)
$(B)/version.h: FORCE | $(B)
	$(Q)v='#define NL_APP_VERSION "$(VERSION)"'; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || { printf '  %-8s %s\n' GEN "$@ ($(VERSION))"; echo "$$v" > $@; }

FORCE:

$(MAN): man/nanlog-bpf.8.in $(B)/version.h | $(B)
	$(call msg,GEN,$@)
	$(Q)$(SUBST) $< > $@

$(UNIT): deploy/systemd/nanlog-bpf.service.in | $(B)
	$(call msg,GEN,$@)
	$(Q)$(SUBST) $< > $@

# what the package builds: the tool and its installed files, nothing else
tool: $(TOOL) $(MAN) $(UNIT)

# install checks every destination folder before it writes anything, so that
# a prefix it may not write fails at once, not half way; it never compiles (a
# `sudo make install` leaves no root-owned build output behind)
install:
	$(Q)for f in $(INSTALL_FILES); do src=$${f%%:*}; \
		[ -e "$$src" ] || { echo "make install: $$src is not built; run make first" >&2; exit 1; }; done
	$(Q)for f in $(INSTALL_FILES); do d=$${f#*:}; d=$$(dirname "$(DESTDIR)$${d%:*}"); \
		while [ ! -e "$$d" ]; do d=$$(dirname "$$d"); done; \
		[ -d "$$d" ] && [ -w "$$d" ] || { echo "make install: cannot write to $$d: Permission denied (run as root, or set PREFIX= or DESTDIR=)" >&2; exit 1; }; done
	$(Q)for f in $(INSTALL_FILES); do src=$${f%%:*}; rest=$${f#*:}; dst="$(DESTDIR)$${rest%:*}"; \
		printf '  %-8s %s\n' INSTALL "$$dst"; \
		$(INSTALL) -d -m 755 "$$(dirname "$$dst")" || exit 1; \
		case "$$src" in \
		*.in) $(SUBST) "$$src" > "$$dst" && chmod $${rest##*:} "$$dst" ;; \
		*) $(INSTALL) -m $${rest##*:} "$$src" "$$dst" ;; \
		esac || exit 1; done

uninstall:
	$(Q)for f in $(INSTALL_FILES); do rest=$${f#*:}; rm -f "$(DESTDIR)$${rest%:*}" || exit 1; done
	$(Q)rmdir "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true

# the Debian package, built by dpkg-buildpackage in a copy of the tree under
# $(B)/deb (scripts/deb.sh), which it leaves untouched
deb: $(DEB)

$(DEB): $(DEB_SRCS)
	$(call msg,DEB,$@)
	$(Q)./scripts/deb.sh "$(VERSION)" $(B)/deb

# the Debian 12 root the package test installs it into: made once, kept
pkgroot: $(PKGROOT)

$(PKGROOT):
	$(call msg,MMDEBSTRAP,$@)
	$(Q)./scripts/pkgroot.sh $@

# ---- sim
$(B)/simobj/hip/%.o: sim/hip/%.c | $(B)/simobj/hip
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) $(SIM_ABI_CFLAGS) -fPIC -fvisibility=hidden -pthread -c $< -o $@

$(B)/simobj/rccl/%.o: sim/rccl/%.c | $(B)/simobj/rccl
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) $(SIM_ABI_CFLAGS) -fPIC -fvisibility=hidden -pthread -c $< -o $@

$(SIMHIP): $(SIMHIP_OBJS) sim/hip/libamdhip64.map | $(B)/sim
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-soname,libamdhip64.so.5 -Wl,--version-script=sim/hip/libamdhip64.map -o $@ $(SIMHIP_OBJS) -lrt
	$(Q)ln -sf libamdhip64.so.5 $(B)/sim/libamdhip64.so

$(B)/simobj/cf/hip/%.o: sim/hip/%.c | $(B)/simobj/cf/hip
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) $(SIM_ABI_CFLAGS) -fcf-protection=full -fPIC -fvisibility=hidden -pthread -c $< -o $@

$(SIMHIP_CF): $(SIMHIP_CF_OBJS) sim/hip/libamdhip64.map | $(B)/sim/cf
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-soname,libamdhip64.so.5 -Wl,--version-script=sim/hip/libamdhip64.map -o $@ $(SIMHIP_CF_OBJS) -lrt

$(SIMRCCL): $(SIMRCCL_OBJS) sim/rccl/librccl.map $(SIMHIP) | $(B)/sim
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-soname,librccl.so.1 -Wl,--version-script=sim/rccl/librccl.map -o $@ $(SIMRCCL_OBJS) -L$(B)/sim -lamdhip64
	$(Q)ln -sf librccl.so.1 $(B)/sim/librccl.so

$(B)/simobj/pipeline/%.o: sim/pipeline/%.c | $(B)/simobj/pipeline
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) -pthread -c $< -o $@

$(PIPELINE): $(PIPELINE_OBJS) $(SIMHIP) $(SIMRCCL)
	$(call msg,LD,$@)
	$(Q)$(CC) -pthread -o $@ $(PIPELINE_OBJS) -L$(B)/sim -lamdhip64 -lrccl -ldl

$(B)/sim/%: sim/progs/%.c $(SIMHIP) $(SIMRCCL) | $(B)/sim
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) -pthread -o $@ $< -L$(B)/sim -Wl,--as-needed -lamdhip64 -lrccl -ldl

# ---- unit tests: always under ASan and UBSan
$(B)/tests/test_sim%: tests/unit/test_sim%.c $(SIMHIP) $(SIMRCCL) | $(B)/tests
	$(call msg,CC-TEST,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) $(SAN) -pthread -o $@ $< -L$(B)/sim -lamdhip64 -lrccl -lcmocka -Wl,-rpath,'$$ORIGIN/../sim'

$(B)/tests/test_%: tests/unit/test_%.c $(CORE_SAN_LIB) | $(B)/tests
	$(call msg,CC-TEST,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN) -o $@ $< $(CORE_SAN_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

# the app's tests link the stub of the attach layer (tests/unit/stub_loader.c)
$(B)/tests/test_app: tests/unit/test_app.c tests/unit/stub_loader.c tests/unit/stub_loader.h $(CORE_SAN_LIB) \
		$(B)/version.h | $(B)/tests
	$(call msg,CC-TEST,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SAN) -o $@ $< tests/unit/stub_loader.c $(CORE_SAN_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

$(B)/tests/test_audit_random: tests/unit/test_audit_random.c $(AUDIT_GEN_DEPS) $(CORE_SAN_LIB) | $(B)/tests
	$(call msg,CC-TEST,$@)
	$(Q)$(CC) $(BASE_CFLAGS) -Itests/audit $(CFLAGS) $(SAN) -o $@ $< $(AUDIT_GEN_SRCS) $(CORE_SAN_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

$(FUZZ_AUDIT): tests/audit/fuzz_audit.c tests/audit/livecheck.c $(AUDIT_GEN_DEPS) $(B)/libnanlog-core.a $(B)/version.h | $(B)/audit
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) -Itests/audit -I$(B) $(CFLAGS) -o $@ $< tests/audit/livecheck.c $(AUDIT_GEN_SRCS) $(B)/libnanlog-core.a -lelf -lz -lm

$(RANDRUN): tests/audit/randrun.c tests/audit/randprog.c tests/audit/randprog.h sim/progs/gate.h \
		$(B)/libnanlog-core.a $(B)/version.h $(SIMHIP) $(SIMRCCL) | $(B)/audit
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) -Itests/audit -Isim/progs -I$(B) $(CFLAGS) -pthread -o $@ $< \
		tests/audit/randprog.c $(B)/libnanlog-core.a -L$(B)/sim -Wl,--as-needed -lamdhip64 -lrccl -lelf -lz -lm \
		-Wl,-rpath,'$$ORIGIN/../sim'

$(B)/tests/progs/%: tests/progs/%.c $(B)/libnanlog-core.a | $(B)/tests/progs
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(B)/libnanlog-core.a -lelf -lm

# ---- bench: the floor tracer's BPF object and skeleton as in bpf/, the
# microbenchmark against the real HIP headers, recording and engine tools
$(B)/bench/%.bpf.o: bench/%.bpf.c | $(B)/bench
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -MT $@ -c $< -o $@.tmp
	$(Q)$(LLVM_STRIP) -g $@.tmp -o $@ 2>/dev/null || mv $@.tmp $@
	$(Q)rm -f $@.tmp

$(B)/bench/%.skel.h: $(B)/bench/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(B)/bench/micro: bench/micro.c $(SIMHIP) | $(B)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(HIP_CFLAGS) $(CFLAGS) -pthread -o $@ $< -ldl

$(B)/bench/floor: bench/floor.c $(B)/bench/floor.skel.h $(B)/user/attach/umulti.o $(B)/libnanlog-core.a
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) -I$(B)/bench $(CFLAGS) -o $@ $< $(B)/user/attach/umulti.o $(B)/libnanlog-core.a $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz) -lelf

# enginebench counts the engine's allocations: malloc, calloc, realloc wrapped
$(B)/bench/enginebench: bench/enginebench.c $(B)/libnanlog-core.a | $(B)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(B)/libnanlog-core.a -lelf -lz -lm \
		-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

$(B)/bench/%: bench/%.c $(B)/libnanlog-core.a | $(B)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -o $@ $< $(B)/libnanlog-core.a -lelf -lz -lm

# ---- fuzzing harnesses and the valgrind build of the unit tests
$(B)/fuzz/user/%.o: user/%.c
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(CORE_FUZZ_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB) | $(B)/fuzz
	$(call msg,LD-FUZZ,$@)
	$(Q)$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) -lelf -lz -lm

$(B)/vg/user/%.o: user/%.c
	$(call msg,CC-VG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(VG_CFLAGS) -c $< -o $@

$(VG_LIB): $(CORE_VG_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/vg/skip.o: tests/valgrind/skip.c | $(B)/vg
	$(call msg,CC-VG,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(VG_CFLAGS) -c $< -o $@

$(B)/vg/test_%: tests/unit/test_%.c $(B)/vg/skip.o $(VG_LIB) | $(B)/vg
	$(call msg,CC-VG,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(VG_CFLAGS) -o $@ $< $(B)/vg/skip.o $(VG_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

$(B)/vg/test_app: tests/unit/test_app.c tests/unit/stub_loader.c tests/unit/stub_loader.h $(B)/vg/skip.o $(VG_LIB) \
		$(B)/version.h | $(B)/vg
	$(call msg,CC-VG,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(VG_CFLAGS) -o $@ $< tests/unit/stub_loader.c $(B)/vg/skip.o $(VG_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

$(B)/tsan/user/%.o: user/%.c
	$(call msg,CC-TSAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(TSAN_CFLAGS) $(TSAN) -c $< -o $@

$(TSAN_LIB): $(CORE_TSAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/tsan/test_%: tests/unit/test_%.c $(TSAN_LIB) | $(B)/tsan
	$(call msg,CC-TSAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(TSAN_CFLAGS) $(TSAN) -o $@ $< $(TSAN_LIB) -lcmocka -lm -lelf -lz -lmicrohttpd

$(B)/fuzz/gen_seeds: tests/fuzz/gen/gen_seeds.c $(B)/libnanlog-core.a | $(B)/fuzz
	$(call msg,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itests/fuzz -o $@ $< $(B)/libnanlog-core.a -ldl -lelf -lz -lm

# ---- running
fuzz-build: $(FUZZ_BINS)

# regenerate the generated seeds under tests/fuzz/corpus (not run by CI)
fuzz-seeds: $(B)/fuzz/gen_seeds $(SIMHIP) $(SIMRCCL)
	$(Q)B=$(B) ./tests/fuzz/gen/seeds.sh

fuzz: $(FUZZ_BINS)
	$(Q)B=$(B) ./tests/fuzz/run.sh fuzz $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-regress: $(FUZZ_BINS)
	$(Q)B=$(B) ./tests/fuzz/run.sh regress $(FUZZ_NAMES)

# random pipeline programs through the engine for FUZZ_AUDIT_SECONDS (or
# FUZZ_AUDIT_COUNT programs from seed FUZZ_AUDIT_FIRST); each new class of
# disagreement is shrunk and written to FUZZ_AUDIT_OUT (docs/engine.md)
fuzz-audit: $(FUZZ_AUDIT)
	$(Q)$(FUZZ_AUDIT) $(if $(FUZZ_AUDIT_COUNT),-n $(FUZZ_AUDIT_COUNT),-s $(FUZZ_AUDIT_SECONDS)) \
		-f $(FUZZ_AUDIT_FIRST) -o $(FUZZ_AUDIT_OUT)

# test_concurrent_render spins a feeder thread against the renderer: valgrind
# serializes threads and takes minutes over it (ASan runs it in `make test`)
VG_SKIP ?= test_concurrent_render
valgrind: $(VG_BINS)
	$(Q)NL_VG_SKIP='$(VG_SKIP)' ./tests/valgrind/run.sh $(VG_BINS)

# every test of TSAN_TESTS under ThreadSanitizer; its first report ends the
# run with exit status 66, and make fails
tsan: $(TSAN_BINS)
	$(Q)for t in $(TSAN_BINS); do printf '  %-8s %s\n' TSAN "$$t"; \
		TSAN_OPTIONS='halt_on_error=1 exitcode=66' "$$t" || exit 1; done

# The root filesystems of the real-runtime tests (scripts/rootfs.sh: newer
# Debian userlands with ROCm 5.7.1 and RCCL 5.4.3, and ROCm 6.4.3), built once
# and cached under $(B)/rootfs. Where one cannot be built (no mmdebstrap, no
# network) the script says why and tests/e2e/test_realrt.sh skips it; make
# goes on either way, so that the other tests still run. The roots are built
# side by side: the time is mostly the mirror's.
rootfs:
	$(Q)for r in $$(B=$(B) ./scripts/rootfs.sh --list); do B=$(B) ./scripts/rootfs.sh $$r >/dev/null & done; wait

test: all rootfs image-if-podman
	$(Q)./tests/run.sh

unit: all
	$(Q)./tests/run.sh unit

e2e: all rootfs image-if-podman
	$(Q)./tests/run.sh e2e

demo: all
	$(Q)./scripts/demo.sh

bench: all
	$(Q)./bench/bench.sh

$(B) $(B)/audit $(B)/bpf $(B)/bench $(B)/sim $(B)/sim/cf $(B)/simobj/hip $(B)/simobj/cf/hip $(B)/simobj/rccl $(B)/simobj/pipeline $(B)/tests $(B)/tests/progs \
$(B)/fuzz $(B)/vg $(B)/tsan:
	$(Q)mkdir -p $@

clean:
	$(call msg,CLEAN,$(B))
	$(Q)rm -rf $(B)

# (not the package build's copy of the tree, nor the *.d folders of the
# Debian roots: the package test's and the real-runtime tests')
-include $(shell find $(B) \( -path $(B)/deb -o -path $(B)/pkgroot -o -path $(B)/rootfs \) -prune -o -name '*.d' -type f -print 2>/dev/null)
