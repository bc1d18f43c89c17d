// SPDX-License-Identifier: MIT
/* What the kernel offers the tool, probed once for --version. */
#include <unistd.h>

#include <bpf/libbpf.h>

#include "attach/features.h"
#include "attach/umulti.h"
#include "proc/policy.h"

void nl_kernel_features_probe(struct nl_kernel_features *k)
{
	int maj = 0, min = 0, patch = 0;

	uname(&k->u);
	nl_parse_kernel_release(k->u.release, &maj, &min, &patch);
	k->btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	k->uprobes = access("/sys/bus/event_source/devices/uprobe/type", R_OK) == 0;
	k->ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
	k->cookies = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL);
	k->uprobe_multi = nl_uprobe_multi_supported();
	k->seccomp_risk = nl_kernel_uretprobe_seccomp_risk(maj, min);
	k->libbpf_major = (int)libbpf_major_version();
	k->libbpf_minor = (int)libbpf_minor_version();
}
