#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "keyfile.h"

/* Reads up to len bytes, retrying on interrupts; returns the count or -1. */
static ssize_t
read_full(int fd, unsigned char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

enum fs_keyfile_status
fs_keyfile_read(const char *dir, const char *name, void *key, size_t len,
    char *err, size_t errlen)
{
	char path[4096];
	struct stat st;
	unsigned char extra;
	ssize_t n;
	int fd = -1, rc;

	rc = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rc < 0 || (size_t)rc >= sizeof(path)) {
		snprintf(err, errlen, "key file path too long: %s/%s", dir, name);
		goto fail;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		if (errno == ENOENT)
			return FS_KEYFILE_ABSENT;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if ((n = read_full(fd, key, len)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	/* The size is checked by reading, as the file may change after fstat. */
	if ((size_t)n != len || read_full(fd, &extra, 1) != 0) {
		snprintf(err, errlen, "%s: expected exactly %zu bytes", path,
		    len);
		goto fail;
	}
	close(fd);
	return FS_KEYFILE_OK;
fail:
	if (fd != -1)
		close(fd);
	sodium_memzero(key, len);
	return FS_KEYFILE_ERROR;
}

int
fs_keyfile_read_text(const char *path, char *out, size_t outlen, size_t *len, char *err,
    size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd = -1;

	if (outlen < 2) {
		snprintf(err, errlen, "%s: no room for a secret", path);
		goto fail;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: readable by group or others (want mode 0600)", path);
		goto fail;
	}
	if ((n = read_full(fd, (unsigned char *)out, outlen)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if ((size_t)n == outlen) {
		snprintf(err, errlen, "%s: longer than %zu bytes", path, outlen - 1);
		goto fail;
	}
	out[n] = '\0';
	if (len != NULL)
		*len = (size_t)n;
	close(fd);
	return 0;
fail:
	if (fd != -1)
		close(fd);
	sodium_memzero(out, outlen);
	return -1;
}

int
fs_keyfile_read_secret(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	size_t n;

	if (fs_keyfile_read_text(path, out, outlen, &n, err, errlen) != 0)
		return -1;
	if (n > 0 && out[n - 1] == '\n')
		out[--n] = '\0';
	if (n == 0 || memchr(out, '\n', n) != NULL || memchr(out, '\0', n) != NULL) {
		snprintf(err, errlen, "%s: want one non-empty line", path);
		sodium_memzero(out, outlen);
		return -1;
	}
	return 0;
}
