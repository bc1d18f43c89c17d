// SPDX-License-Identifier: MIT
/* uprobe_multi links through the raw bpf(2) call (attach/umulti.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <bpf/bpf.h>

#include "attach/umulti.h"

/*
 * libbpf 1.1 and the 6.1 UAPI headers of Debian 12 predate uprobe_multi, so
 * the attribute layout is spelled out here.
 */
struct nl_uprobe_multi_attr {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, um_flags, pid, pad;
};
#define NL_BPF_F_UPROBE_MULTI_RETURN 1

int nl_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offs,
			 const uint64_t *cookies, unsigned cnt, bool ret, pid_t pid)
{
	struct nl_uprobe_multi_attr a = {
		.prog_fd = (__u32)prog_fd,
		.attach_type = NL_BPF_TRACE_UPROBE_MULTI,
		.path = (__u64)(uintptr_t)path,
		.offsets = (__u64)(uintptr_t)offs,
		.cookies = (__u64)(uintptr_t)cookies,
		.cnt = cnt,
		.um_flags = ret ? NL_BPF_F_UPROBE_MULTI_RETURN : 0,
		.pid = (__u32)pid,
	};
	int fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));

	return fd < 0 ? -errno : fd;
}

/* A path that is no file gives EBADF on a kernel that knows the link type. */
bool nl_uprobe_multi_supported(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = NL_BPF_TRACE_UPROBE_MULTI);
	uint64_t off = 0;
	int pfd, lfd;

	if (getenv("NANLOG_NO_UPROBE_MULTI")) /* tests: exercise the fallback */
		return false;
	pfd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &po);
	if (pfd < 0)
		return false;
	lfd = nl_uprobe_multi_link(pfd, "/", &off, NULL, 1, false, 0);
	close(pfd);
	if (lfd >= 0) {
		close(lfd);
		return true;
	}
	return lfd == -EBADF;
}
