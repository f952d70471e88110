/*
 * The unit tests' one check: prints "ok - what" or "FAIL - what" and
 * counts the failures; main returns failures == 0 ? 0 : 1.
 */
#ifndef FS_TEST_EXPECT_H
#define FS_TEST_EXPECT_H

#include <stdio.h>

static int failures;

static void
expect(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "FAIL", what);
	if (!cond)
		failures++;
}

#endif
