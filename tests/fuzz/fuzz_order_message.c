/*
 * libFuzzer harness of the order message decoder (lib/orders), which reads
 * what comes off the Kafka topic: any bytes, and what it accepts written
 * back by fs_ordertopic_encode must read back to the same order.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ordertopic.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_order o, again;
	char msg[FS_ORDERTOPIC_MESSAGE_MAX];
	int n;

	if (fs_ordertopic_decode(data, size, &o) != 0)
		return 0;
	if (o.sale == 0 || o.item == 0 || o.id[0] == '\0' || o.reserved_ms <= 0)
		abort();
	if ((n = fs_ordertopic_encode(&o, msg, sizeof(msg))) < 0 ||
	    fs_ordertopic_decode(msg, (size_t)n, &again) != 0 || strcmp(o.id, again.id) != 0 ||
	    strcmp(o.user, again.user) != 0 || o.sale != again.sale || o.item != again.item ||
	    o.reserved_ms != again.reserved_ms)
		abort();
	return 0;
}
