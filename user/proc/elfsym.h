/* SPDX-License-Identifier: MIT */
/* Function symbols -> file offsets for uprobes, through libelf. */
#ifndef NANLOG_ELFSYM_H
#define NANLOG_ELFSYM_H

#include <stdint.h>

/*
 * For each names[i] (NULL entries are skipped) find the defined function
 * symbol of that exact name in .dynsym or .symtab of the ELF file open on fd,
 * and store its file offset in offsets[i] (0 when absent). Where a name has
 * several versions, the default one (name@@VERSION) wins. Returns how many
 * were found, or -errno (-ENOEXEC: not an ELF file libelf can read).
 */
int nl_elf_resolve(int fd, const char *const *names, int n, uint64_t *offsets);

/*
 * The entry points of the API table (include/nanlog_apis.h) of library lib
 * (NL_LIB_HIP, NL_LIB_RCCL) in the ELF file open on fd: offsets[api] is the
 * file offset of its name, or else of its alternative name, or 0 (absent, or
 * an entry of the other library). offsets has NL_API_COUNT slots. Returns
 * as nl_elf_resolve.
 */
int nl_elf_resolve_apis(int fd, int lib, uint64_t *offsets);

#endif
