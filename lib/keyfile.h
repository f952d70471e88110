/*
 * Key files: raw bytes of an exact size in the keys directory
 * (FLASHSALE_KEYS_DIR), shared by the token and URL signature modules.
 */
#ifndef FS_KEYFILE_H
#define FS_KEYFILE_H

#include <stddef.h>

enum fs_keyfile_status {
	FS_KEYFILE_OK = 0,
	FS_KEYFILE_ABSENT,	/* no such file: the caller decides if that is fine */
	FS_KEYFILE_ERROR,	/* unreadable, not a regular file, or the wrong size */
	FS_KEYFILE__MAX
};

/*
 * Reads dir/name, which must hold exactly len bytes, into key. On
 * FS_KEYFILE_ERROR, err (errlen bytes) says why and key is wiped.
 */
enum fs_keyfile_status fs_keyfile_read(const char *dir, const char *name,
    void *key, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * Reads the whole of a secret file of up to outlen - 1 bytes at path into
 * out, NUL-terminated; *len (when not NULL) is its length. The file must be
 * a regular file that neither its group nor others may read (0600 or
 * stricter). 0, or -1 with err saying why (never the secret) and out wiped.
 */
int fs_keyfile_read_text(const char *path, char *out, size_t outlen, size_t *len, char *err,
    size_t errlen) __attribute__((warn_unused_result));

/*
 * Reads a secret of up to outlen - 1 bytes from the file at path (one line;
 * a final newline is dropped) into out, NUL-terminated. The file must be a
 * regular file that neither its group nor others may read (0600 or
 * stricter). 0, or -1 with err saying why (never the secret) and out wiped.
 */
int fs_keyfile_read_secret(const char *path, char *out, size_t outlen, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
