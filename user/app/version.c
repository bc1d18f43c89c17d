// SPDX-License-Identifier: MIT
/* --version: the tool, the kernel's features, the API table, the libraries. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "attach/features.h"
#include "attach/loader.h" /* nl_find_library */
#include "out/json.h"
#include "proc/elfsym.h"
#include "proc/placement.h"
#include "proc/procmaps.h"
#include "record/call.h"

#define NANLOG_VERSION NL_APP_VERSION

/*
 * Where the probes would go in the library of this name found here
 * (LD_LIBRARY_PATH, then the usual folders): the placement of each symbol.
 */
static void print_placement(const struct nl_opts *o, int lib, const char *prefix)
{
	uint64_t offs[NL_API_COUNT];
	char path[PATH_MAX];
	int fd, n;

	if (nl_find_library(prefix, path, sizeof(path))) {
		printf("probe placement: no %s found here\n", prefix);
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -errno : nl_elf_resolve_apis(fd, lib, offs);
	if (n < 0) {
		printf("probe placement in %s: cannot read its symbols: %s\n", path, strerror(-n));
		if (fd >= 0)
			close(fd);
		return;
	}
	printf("probe placement in %s%s:\n", path, o->no_placement ? " (--no-placement)" : "");
	for (int api = 0; api < NL_API_COUNT; api++) {
		uint64_t off = offs[api];
		struct nl_placement pl;

		if (nl_api_info[api].lib != lib || !off)
			continue;
		nl_place_fd(fd, off, &pl); /* on a read error: not decoded, at the symbol */
		printf("    %-32s +%u %s: %s\n", nl_api_info[api].name,
		       o->no_placement ? 0 : pl.delta, nl_prologue_name(pl.prologue),
		       nl_placement_effect(&pl, !o->no_placement));
	}
	close(fd);
}

/*
 * --version --lib PATH: which entries of the API table the library exports,
 * as the loader would find them (name, or the alternative name); with -v
 * one line each.
 */
static int print_lib_exports(struct nl_app *a, const char *path, int verbose)
{
	uint64_t offs[NL_API_COUNT];
	int lib = nl_lib_of_path(path), fd, n, found = 0, want = 0, missing_req = 0;

	if (lib < 0) {
		a->diag(0, "%s: not a libamdhip64.so* or librccl.so* file name", path);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		n = -errno;
		a->diag(0, "%s: %s", path, strerror(-n));
		return n;
	}
	n = nl_elf_resolve_apis(fd, lib, offs);
	close(fd);
	if (n < 0) {
		a->diag(0, "%s: cannot read its symbols: %s", path,
		     n == -ENOEXEC ? "not an ELF shared object" : strerror(-n));
		return n;
	}
	for (int api = 0; api < NL_API_COUNT; api++) {
		if (nl_api_info[api].lib != lib)
			continue;
		want++;
		found += offs[api] != 0;
		missing_req += !offs[api] && !(nl_api_info[api].flags & NL_AF_OPT);
	}
	printf("library %s (%s): exports %d of the table's %d entry points%s\n", path,
	       nl_lib_name(lib), found, want, missing_req ? ", lacks required ones" : "");
	for (int api = 0; verbose && api < NL_API_COUNT; api++)
		if (nl_api_info[api].lib == lib)
			printf("    %-32s %s\n", nl_api_info[api].name,
			       offs[api] ? "exported" :
			       nl_api_info[api].flags & NL_AF_OPT ? "missing (optional)" : "missing");
	return 0;
}

/* A probe's answer: true, false, or null when it could not be asked (not root). */
static void json_probe(struct nl_json *j, const char *key, int v)
{
	if (v < 0)
		nl_json_knull(j, key);
	else
		nl_json_kbool(j, key, v == 1);
}

/* --version --format json: one line (docs/usage.md). */
static void print_version_json(const struct nl_kernel_features *k)
{
	char libbpf[32];
	struct nl_json j;

	snprintf(libbpf, sizeof(libbpf), "%d.%d", k->libbpf_major, k->libbpf_minor);
	nl_json_begin(&j, stdout);
	nl_json_kstr(&j, "type", "version");
	nl_json_ki64(&j, "schema", NL_OUTPUT_SCHEMA);
	nl_json_kstr(&j, "version", NANLOG_VERSION);
	nl_json_kstr(&j, "libbpf", libbpf);
	nl_json_ki64(&j, "record_schema", NL_RECORD_SCHEMA);
	nl_json_key(&j, "kernel");
	nl_json_obj(&j);
	nl_json_kstr(&j, "release", k->u.release);
	nl_json_kstr(&j, "machine", k->u.machine);
	nl_json_obj_end(&j);
	nl_json_key(&j, "features");
	nl_json_obj(&j);
	nl_json_kbool(&j, "btf", k->btf);
	nl_json_kbool(&j, "uprobes", k->uprobes);
	json_probe(&j, "ringbuf", k->ringbuf);
	json_probe(&j, "attach_cookies", k->cookies);
	nl_json_kbool(&j, "uprobe_multi", k->uprobe_multi);
	nl_json_kbool(&j, "uretprobe_seccomp_risk", k->seccomp_risk);
	nl_json_obj_end(&j);
	nl_json_end(&j);
}

int nl_app_print_version(struct nl_app *a, const struct nl_kernel_features *kf)
{
	const struct nl_opts *o = &a->o;
	const struct nl_kernel_features k = *kf;

	if (o->version_json) {
		print_version_json(&k);
		return 0;
	}
	printf("nanlog-bpf %s (libbpf %d.%d, record schema %d)\n", NANLOG_VERSION,
	       k.libbpf_major, k.libbpf_minor, NL_RECORD_SCHEMA);
	printf("kernel %s %s\n", k.u.release, k.u.machine);
	printf("  btf:            %s\n", k.btf ? "yes" : "no (/sys/kernel/btf/vmlinux missing)");
	printf("  uprobes:        %s\n", k.uprobes ? "yes" : "no");
	printf("  ringbuf:        %s\n", k.ringbuf == 1 ? "yes" : k.ringbuf == 0 ? "no" : "unknown (needs root)");
	printf("  attach cookies: %s\n", k.cookies == 1 ? "yes" : k.cookies == 0 ? "no" : "unknown (needs root)");
	printf("  uprobe_multi:   %s\n",
	       k.uprobe_multi ? "yes (one link per library and direction)" :
				"no or not probed without root (one perf link per symbol)");
	printf("  uretprobe/seccomp risk: %s\n",
	       k.seccomp_risk ? "yes (6.11-6.13: seccomp-filtered targets get entry probes only)" : "no");
	if (o->verbose) {
		printf("probed API table: %d entry points\n", NL_API_COUNT);
		for (int i = 0; i < NL_API_COUNT; i++)
			printf("  %-32s %-12s%s%s\n", nl_api_info[i].name, nl_lib_name(nl_api_info[i].lib),
			       nl_api_info[i].flags & NL_AF_RET ? " return-probe" : "",
			       nl_api_info[i].flags & NL_AF_OPT ? " optional" : "");
		print_placement(o, NL_LIB_HIP, "libamdhip64.so");
		print_placement(o, NL_LIB_RCCL, "librccl.so");
	}
	for (int i = 0; i < o->nlibs; i++)
		if (print_lib_exports(a, o->libs[i], o->verbose))
			return -EINVAL;
	return 0;
}

