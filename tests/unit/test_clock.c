/* Unit test of lib/clock: the wall clock and the API's form of a time. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "expect.h"

int
main(void)
{
	char out[FS_CLOCK_TIME_LEN];
	int64_t now = fs_clock_now_ms(), t = (int64_t)time(NULL) * 1000;

	fs_clock_format(INT64_C(1767323045678), out);
	check(strcmp(out, "2026-01-02T03:04:05.678Z") == 0, "ISO 8601 UTC with milliseconds");
	fs_clock_format(0, out);
	check(strcmp(out, "1970-01-01T00:00:00.000Z") == 0, "the epoch");
	fs_clock_format(5, out);
	check(strcmp(out, "1970-01-01T00:00:00.005Z") == 0, "milliseconds keep their zeros");
	fs_clock_format(-1, out);
	check(strcmp(out, "1970-01-01T00:00:00.000Z") == 0, "a negative time shows as the epoch");
	fs_clock_format(INT64_C(253402300800000), out);
	check(strcmp(out, "1970-01-01T00:00:00.000Z") == 0, "a year past 9999 shows as the epoch");
	check(now > t - 2000 && now < t + 2000, "the clock agrees with time(3)");
	{
		uint64_t ns0 = fs_clock_mono_ns();
		int64_t ms = fs_clock_mono_ms();
		uint64_t ns1 = fs_clock_mono_ns();

		check(ns1 >= ns0 && (int64_t)(ns0 / 1000000) <= ms && ms <= (int64_t)(ns1 / 1000000),
		    "the monotonic clock in nanoseconds is the one in milliseconds, never backwards");
	}
	return failures == 0 ? 0 : 1;
}
