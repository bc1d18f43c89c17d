// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "proc/placement.h"

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

/*
 * push %reg in the two encodings the kernel emulates instead of
 * single-stepping (arch/x86/kernel/uprobes.c, push_setup_xol_ops): 50+r,
 * and 41 50+r for %r8-%r15. Returns its length, 0 for anything else.
 */
static size_t push_len(const uint8_t *c, size_t len)
{
	if (len >= 1 && c[0] >= 0x50 && c[0] <= 0x57)
		return 1;
	if (len >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57)
		return 2;
	return 0;
}

/* sub $imm8,%rsp (48 83 ec ib) or sub $imm32,%rsp (48 81 ec id) */
static int is_sub_rsp(const uint8_t *c, size_t len)
{
	return len >= 4 && c[0] == 0x48 && (c[1] == 0x83 || c[1] == 0x81) && c[2] == 0xec;
}

void nl_place_code(const uint8_t *code, size_t len, struct nl_placement *out)
{
	const size_t e = sizeof(endbr64);

	out->prologue = NL_PRO_UNKNOWN;
	out->delta = 0;
	if (push_len(code, len)) {
		out->prologue = NL_PRO_PUSH;
		return;
	}
	if (len < e || memcmp(code, endbr64, e) != 0)
		return;
	if (push_len(code + e, len - e)) {
		/*
		 * A function cannot end at its endbr64, so the push is its own
		 * next instruction, not the following function's first.
		 */
		out->prologue = NL_PRO_ENDBR_PUSH;
		out->delta = (uint32_t)e;
		return;
	}
	out->prologue = is_sub_rsp(code + e, len - e) ? NL_PRO_ENDBR_SUB : NL_PRO_ENDBR;
}

int nl_place_fd(int fd, uint64_t off, struct nl_placement *out)
{
	uint8_t code[NL_PLACE_BYTES];
	ssize_t n = pread(fd, code, sizeof(code), (off_t)off);

	if (n < 0) {
		out->prologue = NL_PRO_UNKNOWN;
		out->delta = 0;
		return -errno;
	}
	nl_place_code(code, (size_t)n, out);
	return 0;
}

const char *nl_prologue_name(enum nl_prologue p)
{
	switch (p) {
	case NL_PRO_PUSH:
		return "push";
	case NL_PRO_ENDBR_PUSH:
		return "endbr64; push";
	case NL_PRO_ENDBR_SUB:
		return "endbr64; sub $N,%rsp";
	case NL_PRO_ENDBR:
		return "endbr64";
	case NL_PRO_UNKNOWN:
		break;
	}
	return "other";
}

const char *nl_placement_effect(const struct nl_placement *p, bool used)
{
	switch (p->prologue) {
	case NL_PRO_PUSH:
		return "emulated";
	case NL_PRO_ENDBR_PUSH:
		return used ? "placed on the push, emulated" : "single-stepped (placement off)";
	case NL_PRO_ENDBR_SUB:
	case NL_PRO_ENDBR:
		return "single-stepped";
	case NL_PRO_UNKNOWN:
		break;
	}
	return "not decoded: at the symbol";
}
