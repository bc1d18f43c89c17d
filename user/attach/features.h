/* SPDX-License-Identifier: MIT */
/* What the kernel offers the tool, as --version reports it. */
#ifndef NANLOG_ATTACH_FEATURES_H
#define NANLOG_ATTACH_FEATURES_H

#include <stdbool.h>
#include <sys/utsname.h>

struct nl_kernel_features {
	struct utsname u;
	bool btf, uprobes, uprobe_multi, seccomp_risk;
	int ringbuf, cookies; /* 1 yes, 0 no, < 0 unknown (needs root) */
	int libbpf_major, libbpf_minor; /* the libbpf the tool runs with */
};

/* Probe them (without root, ringbuf and cookies stay unknown). */
void nl_kernel_features_probe(struct nl_kernel_features *k);

#endif
