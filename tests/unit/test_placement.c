/* SPDX-License-Identifier: MIT */
/*
 * Probe placement (user/proc/placement.c): only an endbr64 followed by a push the
 * kernel emulates moves the probe, and only by the endbr64's four bytes;
 * every other start, a truncated one included, keeps it at the symbol.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/placement.h"

static void check(const uint8_t *code, size_t len, enum nl_prologue want, uint32_t delta)
{
	struct nl_placement p = { .prologue = NL_PRO_ENDBR, .delta = 99 };

	nl_place_code(code, len, &p);
	assert_int_equal(p.prologue, want);
	assert_int_equal(p.delta, delta);
}

static void test_endbr_push(void **state)
{
	/* gcc -fcf-protection -fno-omit-frame-pointer: endbr64; push %rbp; mov %rsp,%rbp */
	static const uint8_t rbp[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5 };
	static const uint8_t r15[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56 };
	static const uint8_t rbx[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53 };

	(void)state;
	check(rbp, sizeof(rbp), NL_PRO_ENDBR_PUSH, 4);
	check(r15, sizeof(r15), NL_PRO_ENDBR_PUSH, 4);
	check(rbx, sizeof(rbx), NL_PRO_ENDBR_PUSH, 4);
}

static void test_stays(void **state)
{
	static const uint8_t push[] = { 0x55, 0x48, 0x89, 0xe5 };
	static const uint8_t sub8[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x18 };
	static const uint8_t sub32[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x81, 0xec, 0, 1, 0, 0 };
	/* endbr64; mov %fs:0x28,%rax */
	static const uint8_t mov[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x64, 0x48, 0x8b, 0x04, 0x25 };
	/* endbr32, xor, a REX push the kernel does not emulate (49 55: push %r13 with REX.W) */
	static const uint8_t endbr32[] = { 0xf3, 0x0f, 0x1e, 0xfb, 0x55 };
	static const uint8_t xor[] = { 0x31, 0xc0, 0xc3 };
	static const uint8_t rexw[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x49, 0x55 };

	(void)state;
	check(push, sizeof(push), NL_PRO_PUSH, 0);
	check(sub8, sizeof(sub8), NL_PRO_ENDBR_SUB, 0);
	check(sub32, sizeof(sub32), NL_PRO_ENDBR_SUB, 0);
	check(mov, sizeof(mov), NL_PRO_ENDBR, 0);
	check(endbr32, sizeof(endbr32), NL_PRO_UNKNOWN, 0);
	check(xor, sizeof(xor), NL_PRO_UNKNOWN, 0);
	check(rexw, sizeof(rexw), NL_PRO_ENDBR, 0);
}

/* A file that ends inside the prologue: the bytes missing are never guessed. */
static void test_truncated(void **state)
{
	static const uint8_t code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57 };

	(void)state;
	for (size_t n = 0; n < 4; n++)
		check(code, n, NL_PRO_UNKNOWN, 0);
	check(code, 4, NL_PRO_ENDBR, 0);
	check(code, 5, NL_PRO_ENDBR, 0);
	check(code, 6, NL_PRO_ENDBR_PUSH, 4);
}

static void test_fd(void **state)
{
	static const uint8_t img[] = { 0xcc, 0xcc, 0xf3, 0x0f, 0x1e, 0xfa, 0x55 };
	char path[] = "/tmp/nl-placement-XXXXXX";
	struct nl_placement p;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
	assert_int_equal(nl_place_fd(fd, 2, &p), 0);
	assert_int_equal(p.prologue, NL_PRO_ENDBR_PUSH);
	assert_int_equal(p.delta, 4);
	assert_int_equal(nl_place_fd(fd, 4, &p), 0); /* the middle of the endbr64 */
	assert_int_equal(p.prologue, NL_PRO_UNKNOWN);
	assert_int_equal(nl_place_fd(fd, 100, &p), 0); /* past the end: nothing read */
	assert_int_equal(p.prologue, NL_PRO_UNKNOWN);
	close(fd);
	assert_int_equal(nl_place_fd(fd, 0, &p), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endbr_push),
		cmocka_unit_test(test_stays),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
