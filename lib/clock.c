#include "config.h"

#include <stdio.h>
#include <time.h>

#include "clock.h"

int64_t
fs_clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
fs_clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t
fs_clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
fs_clock_format(int64_t ms, char out[FS_CLOCK_TIME_LEN])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || gmtime_r(&s, &tm) == NULL || tm.tm_year + 1900 > 9999) {
		snprintf(out, FS_CLOCK_TIME_LEN, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(out, FS_CLOCK_TIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}
