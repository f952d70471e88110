#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *const level_names[FS_LOG__MAX] = { "debug", "info", "warn", "error" };

static char log_prog[32] = "flashsale";
static enum fs_log_level log_min = FS_LOG_INFO;

void
fs_log_init(const char *progname)
{
	const char *env = getenv("FLASHSALE_LOG_LEVEL");

	snprintf(log_prog, sizeof(log_prog), "%s", progname);
	if (env == NULL)
		return;
	for (int i = 0; i < FS_LOG__MAX; i++)
		if (strcmp(env, level_names[i]) == 0)
			log_min = (enum fs_log_level)i;
}

void
fs_log_set_level(enum fs_log_level level)
{
	log_min = level;
}

void
fs_log(enum fs_log_level level, const char *fmt, ...)
{
	char line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level < log_min || level >= FS_LOG__MAX)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%ld] %s: ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    ts.tv_nsec / 1000000, log_prog, (long)getpid(), level_names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line keeps lines whole when processes share a log. */
	fprintf(stderr, "%s\n", line);
}
