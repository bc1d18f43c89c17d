// SPDX-License-Identifier: MIT
/*
 * Linked into the valgrind builds of the unit tests (make valgrind): the
 * cmocka test named by NL_VG_SKIP (a pattern, * and ? allowed) is reported
 * skipped instead of run. For a test that is right under ASan but that
 * valgrind, which runs one thread at a time, makes take minutes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

__attribute__((constructor)) static void nl_vg_skip(void)
{
	const char *p = getenv("NL_VG_SKIP");

	if (p && *p)
		cmocka_set_skip_filter(p);
}
