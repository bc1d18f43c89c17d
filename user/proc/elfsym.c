// SPDX-License-Identifier: MIT
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "record/call.h"
#include "proc/elfsym.h"

#define VERSYM_HIDDEN 0x8000 /* name@VERSION, not the default name@@VERSION */

/* File offset of a virtual address, through the executable PT_LOAD holding it. */
static int vaddr_to_offset(Elf *e, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static Elf_Data *versym_data(Elf *e)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

static void scan_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *vs,
			const char *const *names, int n, uint64_t *offsets, int *hidden)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t count;

	if (!d || !sh->sh_entsize)
		return;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < count; i++) {
		GElf_Sym s;
		const char *name;
		int h = 0;
		uint64_t off;

		if (!gelf_getsym(d, (int)i, &s))
			break;
		if ((GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC) ||
		    s.st_shndx == SHN_UNDEF || s.st_value == 0)
			continue;
		name = elf_strptr(e, sh->sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (vs && sh->sh_type == SHT_DYNSYM) {
			GElf_Versym v;

			if (gelf_getversym(vs, (int)i, &v))
				h = (v & VERSYM_HIDDEN) != 0;
		}
		for (int k = 0; k < n; k++) {
			if (!names[k] || strcmp(names[k], name) != 0)
				continue;
			/* a default version beats a hidden one; the first of equals stays */
			if (offsets[k] && !(hidden[k] && !h))
				continue;
			if (vaddr_to_offset(e, s.st_value, &off) == 0) {
				offsets[k] = off;
				hidden[k] = h;
			}
		}
	}
}

int nl_elf_resolve(int fd, const char *const *names, int n, uint64_t *offsets)
{
	int hidden[256];
	Elf_Scn *scn = NULL;
	Elf_Data *vs;
	Elf *e;
	int found = 0;

	if (n < 0 || n > 256)
		return -EINVAL;
	memset(offsets, 0, sizeof(*offsets) * (size_t)n);
	memset(hidden, 0, sizeof(hidden));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	vs = versym_data(e);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
			scan_symtab(e, scn, &sh, vs, names, n, offsets, hidden);
	}
	elf_end(e);
	for (int k = 0; k < n; k++)
		found += offsets[k] != 0;
	return found;
}

int nl_elf_resolve_apis(int fd, int lib, uint64_t *offsets)
{
	const char *names[2 * NL_API_COUNT];
	uint64_t offs[2 * NL_API_COUNT];
	int n;

	for (int api = 0; api < NL_API_COUNT; api++) {
		names[2 * api] = nl_api_info[api].lib == lib ? nl_api_info[api].name : NULL;
		names[2 * api + 1] = nl_api_info[api].lib == lib ? nl_api_info[api].alt : NULL;
	}
	n = nl_elf_resolve(fd, names, 2 * NL_API_COUNT, offs);
	for (int api = 0; api < NL_API_COUNT; api++)
		offsets[api] = n < 0 ? 0 : offs[2 * api] ? offs[2 * api] : offs[2 * api + 1];
	return n;
}
