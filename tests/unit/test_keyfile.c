/* Unit test of lib/keyfile: exact-size raw key files and one-line secrets. */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keyfile.h"
#include "expect.h"


static int
write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd != -1 && write(fd, buf, len) == (ssize_t)len;

	if (fd != -1)
		close(fd);
	return ok ? 0 : -1;
}

static int
all_zero(const unsigned char *p, size_t len)
{
	while (len-- > 0)
		if (*p++ != 0)
			return 0;
	return 1;
}

int
main(void)
{
	char dir[] = "/tmp/test_keyfile.XXXXXX", path[256], err[512];
	char longname[5000];
	unsigned char want[33], key[32];

	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (unsigned char)(i + 1);
	check(mkdtemp(dir) != NULL, "make a keys directory");
	snprintf(path, sizeof(path), "%s/k", dir);

	check(fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_ABSENT, "a missing file is ABSENT");
	check(write_file(path, want, 32) == 0 &&
	    fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_OK && memcmp(key, want, sizeof(key)) == 0,
	    "a file of the exact size is read");
	check(write_file(path, want, 31) == 0 &&
	    fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_ERROR && strstr(err, "exactly 32 bytes") != NULL &&
	    all_zero(key, sizeof(key)), "a short file is an error, key wiped");
	check(write_file(path, want, 33) == 0 &&
	    fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_ERROR && strstr(err, "exactly 32 bytes") != NULL &&
	    all_zero(key, sizeof(key)), "a long file is an error, key wiped");
	check(write_file(path, want, 0) == 0 &&
	    fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_ERROR, "an empty file is an error");
	unlink(path);
	check(mkdir(path, 0700) == 0 &&
	    fs_keyfile_read(dir, "k", key, sizeof(key), err, sizeof(err)) ==
	    FS_KEYFILE_ERROR && strstr(err, "not a regular file") != NULL,
	    "a directory is an error");
	rmdir(path);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	check(fs_keyfile_read(dir, longname, key, sizeof(key), err,
	    sizeof(err)) == FS_KEYFILE_ERROR && strstr(err, "too long") != NULL,
	    "a path over 4095 bytes is an error");
	check(fs_keyfile_read("/dev/null/x", "k", key, sizeof(key), err,
	    sizeof(err)) == FS_KEYFILE_ERROR,
	    "a directory that is not one is an error");

	/* One-line secrets (passwords): mode 0600, one line, bounded. */
	{
		char secret[16];

		check(write_file(path, "s3cret\n", 7) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == 0 &&
		    strcmp(secret, "s3cret") == 0, "a secret's final newline is dropped");
		check(write_file(path, "s3cret", 6) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == 0 &&
		    strcmp(secret, "s3cret") == 0, "a secret without a newline is read");
		check(chmod(path, 0640) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == -1 &&
		    strstr(err, "0600") != NULL && strstr(err, "s3cret") == NULL &&
		    all_zero((unsigned char *)secret, sizeof(secret)),
		    "a group-readable secret is refused, without naming it");
		unlink(path);
		check(write_file(path, "0123456789abcdef", 16) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == -1 &&
		    strstr(err, "longer than 15") != NULL, "an overlong secret is refused");
		check(write_file(path, "a\nb\n", 4) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == -1,
		    "two lines are refused");
		check(write_file(path, "\n", 1) == 0 &&
		    fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == -1,
		    "an empty secret is refused");
		unlink(path);
		check(fs_keyfile_read_secret(path, secret, sizeof(secret), err, sizeof(err)) == -1,
		    "a missing secret file is an error");
	}
	rmdir(dir);
	return failures == 0 ? 0 : 1;
}
