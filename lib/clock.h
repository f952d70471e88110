/*
 * The wall clock in milliseconds, and the one form every time takes in the
 * API: ISO 8601 UTC with milliseconds ("2026-01-02T03:04:05.678Z").
 */
#ifndef FS_CLOCK_H
#define FS_CLOCK_H

#include <stdint.h>

#define FS_CLOCK_TIME_LEN 25 /* "2026-01-02T03:04:05.678Z" and the NUL */

/* Milliseconds since 1970 by the precise clock: time(3) may lag a tick. */
int64_t fs_clock_now_ms(void);
/* Milliseconds of a clock that never jumps (timeouts and deadlines), from an arbitrary start. */
int64_t fs_clock_mono_ms(void);
/* The same clock in nanoseconds (durations). */
uint64_t fs_clock_mono_ns(void);
/* Writes ms as the API shows times; out of range shows as 1970. */
void fs_clock_format(int64_t ms, char out[FS_CLOCK_TIME_LEN]);

#endif
