/*
 * Logging to standard error, one key=value line per event:
 *   ts=2026-12-01T17:00:00.123Z level=warn prog=flashsale-purchase pid=42 req=<id> msg="..."
 * req is nginx's request id while a request is in hand. Never log a secret.
 */
#ifndef FS_LOG_H
#define FS_LOG_H

enum fs_log_level { FS_LOG_DEBUG, FS_LOG_INFO, FS_LOG_WARN, FS_LOG_ERROR, FS_LOG__MAX };

/* Names the program in every line; call once at start. */
void fs_log_init(const char *progname);
/*
 * Tags this thread's lines with a request id (nginx's), or stops (NULL).
 * The string must live until the next call.
 */
void fs_log_request_id(const char *id);
/* Lines below this level are dropped (FLASHSALE_LOG_LEVEL sets it at init). */
void fs_log_set_level(enum fs_log_level);
void fs_log(enum fs_log_level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define fs_log_info(...) fs_log(FS_LOG_INFO, __VA_ARGS__)
#define fs_log_warn(...) fs_log(FS_LOG_WARN, __VA_ARGS__)
#define fs_log_error(...) fs_log(FS_LOG_ERROR, __VA_ARGS__)
#define fs_log_debug(...) fs_log(FS_LOG_DEBUG, __VA_ARGS__)

#endif
