/*
 * Named cases of a unit program: main lists them and hands them to
 * fs_test_cases(), which runs them all in order, or with `--only NAME`
 * (repeatable) only those named, and with `--list` prints their names.
 * A case reports with check() (expect.h); the program's exit status is
 * what fs_test_cases() returns: 0 when every check held, 1 when one failed,
 * 2 on a bad argument (an unknown case is an error, never a silent pass).
 */
#ifndef FS_TEST_CASES_H
#define FS_TEST_CASES_H

#include <stdio.h>
#include <string.h>

#include "expect.h"

struct fs_test_case {
	const char *name;
	void (*run)(void);
};

/* Whether NAME is one of the cases (a NULL-named entry ends the list). */
static inline int
fs_test_case_known(const struct fs_test_case *cases, const char *name)
{
	for (; cases->name != NULL; cases++)
		if (strcmp(cases->name, name) == 0)
			return 1;
	return 0;
}

/* Whether the arguments name CASE with --only, or name no case at all. */
static inline int
fs_test_case_chosen(int argc, char **argv, const char *name)
{
	int any = 0;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--only") != 0)
			continue;
		any = 1;
		if (strcmp(argv[++i], name) == 0)
			return 1;
	}
	return !any;
}

static inline int
fs_test_cases(int argc, char **argv, const struct fs_test_case *cases)
{
	const struct fs_test_case *c;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--list") == 0) {
			for (c = cases; c->name != NULL; c++)
				printf("%s\n", c->name);
			return 0;
		}
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
		    fs_test_case_known(cases, argv[i + 1])) {
			i++;
			continue;
		}
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			fprintf(stderr, "%s: no case named \"%s\" (--list names them)\n", argv[0],
			    argv[i + 1]);
		else
			fprintf(stderr, "%s: %s: usage: [--list] [--only CASE]...\n", argv[0], argv[i]);
		return 2;
	}
	for (c = cases; c->name != NULL; c++) {
		if (!fs_test_case_chosen(argc, argv, c->name))
			continue;
		printf("# case %s\n", c->name);
		fflush(stdout); /* a case that forks must not print it twice */
		c->run();
	}
	return failures == 0 ? 0 : 1;
}

#endif
