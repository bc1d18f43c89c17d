// SPDX-License-Identifier: MIT
/*
 * nl_elf_resolve on an ELF file: the input is written to a memfd (the tool
 * reads libraries from a file descriptor) and resolved for every symbol name
 * of the API table, as the loader does.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/call.h"
#include "proc/elfsym.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static const char *names[2 * NL_API_COUNT];
	uint64_t offsets[2 * NL_API_COUNT];
	int n = 0, found;

	if (fd < 0) {
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
	}
	for (int i = 0; i < NL_API_COUNT; i++) {
		names[n++] = nl_api_info[i].name;
		names[n++] = nl_api_info[i].alt; /* NULL entries are skipped */
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	found = nl_elf_resolve(fd, names, n, offsets);
	FUZZ_CHECK(found == -ENOEXEC || (found >= 0 && found <= n));
	if (found >= 0) {
		int k = 0;

		for (int i = 0; i < n; i++) {
			FUZZ_CHECK(names[i] || offsets[i] == 0);
			k += offsets[i] != 0;
		}
		FUZZ_CHECK(k == found);
	}
	FUZZ_CHECK(nl_elf_resolve(fd, names, -1, offsets) == -EINVAL);
	return 0;
}
