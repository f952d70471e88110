/*
 * The unit tests' FastCGI client side, as a web server writes it: one
 * record, and a connection to a handler's unix socket.
 */
#ifndef FS_TEST_FCGI_CLIENT_H
#define FS_TEST_FCGI_CLIENT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

/* One record at out (version 1, no padding) of type and content for request id; its length. */
static inline size_t
test_fcgi_record(unsigned char *out, int type, int id, const void *content, size_t len)
{
	out[0] = 1;
	out[1] = (unsigned char)type;
	out[2] = (unsigned char)(id >> 8);
	out[3] = (unsigned char)id;
	out[4] = (unsigned char)(len >> 8);
	out[5] = (unsigned char)len;
	out[6] = 0;
	out[7] = 0;
	if (len > 0)
		memcpy(out + 8, content, len);
	return 8 + len;
}

/* A connection to the unix socket at path; the test stops (exit 2) when there is none. */
static inline int
test_fcgi_dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

#endif
