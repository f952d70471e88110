/*
 * lib/log: one key=value line per event on standard error, its fields in
 * order, the message quoted so that no input can forge a second line or a
 * field, and levels below the threshold dropped.
 */
#include "config.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "expect.h"

static char captured[8192];

/* Runs fn with standard error sent to a temporary file; keeps what it wrote. */
static void
capture(void (*fn)(void))
{
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	if (tmp == NULL || saved < 0) {
		check(0, "capture: a temporary file and a copy of stderr");
		return;
	}
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(captured, 1, sizeof(captured) - 1, tmp);
	captured[n] = '\0';
	fclose(tmp);
}

static int
lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

static int
matches(const char *re, const char *s)
{
	regex_t r;
	int ok;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		return 0;
	ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

static void
plain(void)
{
	fs_log_warn("stock %d left", 3);
}

static void
with_request(void)
{
	fs_log_request_id("abc123");
	fs_log_error("failed");
	fs_log_request_id(NULL);
	fs_log_info("after");
}

static void
hostile(void)
{
	fs_log_info("a \"quoted\" back\\slash\nlevel=error msg=\"forged\"\r\x01 end");
}

static void
below(void)
{
	fs_log_debug("not shown");
	fs_log_set_level(FS_LOG_ERROR);
	fs_log_warn("not shown either");
	fs_log_error("shown");
	fs_log_set_level(FS_LOG_INFO);
}

static void
huge(void)
{
	static char big[5000];

	memset(big, 'x', sizeof(big) - 1);
	fs_log_info("%s", big);
}

int
main(void)
{
	char want[256];

	unsetenv("FLASHSALE_LOG_LEVEL");
	fs_log_init("test-log");
	capture(plain);
	snprintf(want, sizeof(want),
	    "^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z level=warn "
	    "prog=test-log pid=%ld msg=\"stock 3 left\"\n$", (long)getpid());
	check(matches(want, captured), "a line: ts, level, prog, pid, msg in that order");
	check(lines(captured) == 1, "one event, one line");

	capture(with_request);
	check(lines(captured) == 2, "two events, two lines");
	check(strstr(captured, "level=error prog=test-log") != NULL &&
	    strstr(captured, " req=abc123 msg=\"failed\"\n") != NULL, "a request id is tagged while in hand");
	check(strstr(captured, "msg=\"after\"\n") != NULL && strstr(strstr(captured, "after") - 40, "req=") == NULL,
	    "and not after it stops");

	capture(hostile);
	check(lines(captured) == 1, "a newline in the message cannot start a second line");
	check(strstr(captured, "msg=\"a \\\"quoted\\\" back\\\\slash\\nlevel=error msg=\\\"forged\\\"?? end\"\n") != NULL,
	    "quotes, backslashes and newlines escaped, other controls '?'");

	capture(below);
	check(lines(captured) == 1 && strstr(captured, "msg=\"shown\"") != NULL,
	    "lines below the level are dropped (debug under info, warn under error)");

	capture(huge);
	check(lines(captured) == 1 && strlen(captured) < 2048 && captured[strlen(captured) - 2] == '"',
	    "a message past the buffer is cut, still one closed line");

	setenv("FLASHSALE_LOG_LEVEL", "error", 1);
	fs_log_init("test-log-2");
	capture(plain);
	check(captured[0] == '\0', "FLASHSALE_LOG_LEVEL=error at init drops a warning");
	return failures == 0 ? 0 : 1;
}
