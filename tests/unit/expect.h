/*
 * The unit tests' one check: prints "ok - what" or "not ok - what" and
 * counts the failures; main returns failures == 0 ? 0 : 1.
 */
#ifndef FS_TEST_EXPECT_H
#define FS_TEST_EXPECT_H

#include <stdio.h>

static int failures;

static void
check(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	if (!cond)
		failures++;
}

#endif
