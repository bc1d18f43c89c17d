/* SPDX-License-Identifier: MIT */
/*
 * Where a probe goes on a function: at its first byte, or past an endbr64
 * onto an instruction the kernel emulates (docs/performance.md, "Probe
 * placement"). Only the few encodings that decide it are decoded; anything
 * else keeps the probe at the symbol.
 */
#ifndef NANLOG_PLACEMENT_H
#define NANLOG_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The prologue a function was found to begin with. */
enum nl_prologue {
	NL_PRO_UNKNOWN,   /* not one of those below: the probe stays at the symbol */
	NL_PRO_PUSH,      /* push %reg: emulated at the symbol */
	NL_PRO_ENDBR_PUSH, /* endbr64; push %reg: placed on the push, emulated */
	NL_PRO_ENDBR_SUB, /* endbr64; sub $N,%rsp: stays at the symbol, single-stepped */
	NL_PRO_ENDBR,     /* endbr64 and anything else: stays, single-stepped */
};

struct nl_placement {
	enum nl_prologue prologue;
	uint32_t delta; /* bytes past the symbol where the probe goes */
};

/* Bytes nl_place_code looks at, at most. */
#define NL_PLACE_BYTES 16

/*
 * Decide from the first len bytes of a function. delta is non-zero only
 * where the skipped bytes are an endbr64, which changes no register and no
 * memory: a probe past it sees the arguments, the stack and the return
 * address at [rsp] exactly as at the symbol.
 */
void nl_place_code(const uint8_t *code, size_t len, struct nl_placement *out);

/*
 * The same for the function at file offset off of the ELF file open on fd;
 * a read error leaves it not decoded, at the symbol, and returns -errno.
 */
int nl_place_fd(int fd, uint64_t off, struct nl_placement *out);

/* The prologue, as -v and --version -v name it. */
const char *nl_prologue_name(enum nl_prologue p);

/*
 * How the kernel takes the probe's instruction: "emulated", "single-stepped"
 * or "not decoded"; used says whether the placement was taken (not with
 * --no-placement).
 */
const char *nl_placement_effect(const struct nl_placement *p, bool used);

#endif
