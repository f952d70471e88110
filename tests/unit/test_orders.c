/* Unit test of lib/orders: the documents, and a status push that fails. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "orders.h"
#include "expect.h"

/* What fs_orders_publish_one(push) writes on standard error. */
static void
stderr_of_publish_one(fs_push *push, const struct fs_order *o, char *out, size_t outlen)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	if (f == NULL || saved < 0)
		exit(99);
	fflush(stderr);
	dup2(fileno(f), 2);
	fs_orders_publish_one(push, o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	fclose(f);
}

/* A failed push costs only the push: one warning names the order; no push, no line. */
static void
test_publish_one(const struct fs_order *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	char url[64], err[128], out[1024];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	fs_push *push;

	/* A port bound but not listening refuses every connection. */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		exit(99);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/pub", ntohs(sa.sin_port));
	if ((push = fs_push_new(url, err, sizeof(err))) == NULL)
		exit(99);
	stderr_of_publish_one(push, o, out, sizeof(out));
	check(strstr(out, " level=warn ") != NULL &&
		strstr(out, " msg=\"status push for 01900000-0000-7000-8000-000000000001 failed: ") !=
		    NULL &&
		strchr(out, '\n') == out + strlen(out) - 1,
	    "a push refused: one warning line naming the order");
	fs_push_free(push);
	close(fd);

	if ((push = fs_push_new("", err, sizeof(err))) == NULL)
		exit(99);
	stderr_of_publish_one(push, o, out, sizeof(out));
	check(out[0] == '\0', "no push configured: nothing to say");
	fs_push_free(push);
}

int
main(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "a/b", .reserved_ms = INT64_C(1767323045678) };
	char doc[FS_ORDERS_DOC_MAX];
	int n;

	o.status = FS_ORDER_PENDING;
	o.expires_ms = INT64_C(1767323045678);
	n = fs_orders_receipt(&o, doc, sizeof(doc));
	check(n > 0 && strcmp(doc, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"status\":\"PENDING\",\"expiresAt\":\"2026-01-02T03:04:05.678Z\"}") == 0,
	    "the receipt of an accepted purchase");
	n = fs_orders_document(&o, doc, sizeof(doc));
	check(n > 0 && strcmp(doc, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"itemId\":11,\"status\":\"PENDING\","
				"\"expiresAt\":\"2026-01-02T03:04:05.678Z\"}") == 0,
	    "the status document");
	check(fs_orders_document(&o, doc, 30) == -1, "a small buffer is refused");
	test_publish_one(&o);
	return failures == 0 ? 0 : 1;
}
