/*
 * The error idiom of lib/, the one every module follows (the anchors are
 * ../shared/STYLE.md: hiredis's contexts, kcgi's enums, OpenBSD httpd's
 * cleanup label). There is no code here; this header is where it is told.
 *
 * 1. A function that can fail says so in its return value: 0 / -1; a count
 *    (>= 0) or -1; a pointer or NULL; or a module enum whose success is
 *    *_OK = 0 (or a first "done" value) with a *_strerror() or name table.
 * 2. A context (a connection or long-lived object: fs_redis, fs_pg,
 *    fs_stock, fs_push, fs_kafka_consumer, fs_expiry, fs_cfg) carries
 *    `int err; char errstr[N];`. Its functions set both when they fail and
 *    the caller reads them after the failing call. err is 1, or the
 *    module's error enum where callers must tell failures apart
 *    (fs_stock: FS_STOCK_ERR_IO may heal, FS_STOCK_ERR_REPLY will not).
 * 3. A module writes only its own errstr. When it fails because another
 *    context failed, it copies that text into its own errstr (or returns
 *    its own result code and leaves the other's text where it is); it
 *    never writes into another module's errstr.
 * 4. A constructor (*_new) either returns a working object or NULL with
 *    the reason in the caller's buffer (char *err, size_t errlen): it never
 *    returns a live object with err set. Functions with no context of their
 *    own (one operation over several contexts, a parser) take the same
 *    (char *err, size_t errlen) pair, last.
 * 5. One cleanup label per function: handles start at NULL / -1, every
 *    failure sets the error and jumps to it (`fail:` or `out:`), and the
 *    label frees what is set. Free functions accept NULL.
 */
#ifndef FS_ERRORS_H
#define FS_ERRORS_H
#endif
