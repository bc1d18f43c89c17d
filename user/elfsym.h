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

#endif
