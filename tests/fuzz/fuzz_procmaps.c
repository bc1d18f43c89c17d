// SPDX-License-Identifier: MIT
/* nl_maps_find_libs on /proc/PID/maps text, with room for fewer libraries than found. */
#include <errno.h>

#include "fuzz.h"
#include "nanlog_apis.h"
#include "proc/procmaps.h"

#define MAXLIBS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_maplib *out = calloc(MAXLIBS, sizeof(*out));
	char *text = fuzz_strdup(data, size);
	int n;

	FUZZ_CHECK(out);
	n = nl_maps_find_libs(text, out, MAXLIBS);
	FUZZ_CHECK(n == -EINVAL || (n >= 0 && n <= MAXLIBS));
	for (int i = 0; i < n; i++) {
		size_t len = strnlen(out[i].path, sizeof(out[i].path));

		FUZZ_CHECK(len < sizeof(out[i].path) && out[i].path[0] == '/');
		FUZZ_CHECK(out[i].lib == NL_LIB_HIP || out[i].lib == NL_LIB_RCCL);
		FUZZ_CHECK(nl_lib_of_path(out[i].path) == out[i].lib);
		/* distinct files: the same device and inode once */
		for (int k = 0; k < i; k++)
			FUZZ_CHECK(out[k].dev != out[i].dev || out[k].inode != out[i].inode);
	}
	/* room for none: the same verdict on the text, nothing stored */
	FUZZ_CHECK(nl_maps_find_libs(text, out, 0) == (n < 0 ? n : 0));
	free(text);
	free(out);
	return 0;
}
