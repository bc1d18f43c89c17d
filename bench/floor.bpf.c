// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor tracer's programs (docs/performance.md): attached where
 * nanlog-bpf attaches its own, entry and return alike, and returning at
 * once, so a probed call costs what the kernel's uprobe machinery costs and
 * nothing more.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int floor_entry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(void *ctx)
{
	return 0;
}
