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
static _Thread_local const char *log_request;

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
fs_log_request_id(const char *id)
{
	log_request = id;
}

/* Copies text into a quoted value: quote, backslash and newline escaped, other controls '?'. */
static size_t
quote(char *out, size_t outlen, const char *text)
{
	size_t n = 0;

	for (; *text != '\0' && n + 3 < outlen; text++) {
		unsigned char c = (unsigned char)*text;

		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
		}
	}
	out[n] = '\0';
	return n;
}

void
fs_log_set_level(enum fs_log_level level)
{
	log_min = level;
}

void
fs_log(enum fs_log_level level, const char *fmt, ...)
{
	char msg[900], line[2048];
	const char *req = log_request;
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level < log_min || level >= FS_LOG__MAX)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* key=value, one line per event: ts level prog pid [req] msg. */
	n = snprintf(line, sizeof(line),
	    "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s prog=%s pid=%ld%s%s msg=\"",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    ts.tv_nsec / 1000000, level_names[level], log_prog, (long)getpid(),
	    req != NULL ? " req=" : "", req != NULL ? req : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	quote(line + n, sizeof(line) - (size_t)n - 1, msg);
	/* One write per line keeps lines whole when processes share a log. */
	fprintf(stderr, "%s\"\n", line);
}
