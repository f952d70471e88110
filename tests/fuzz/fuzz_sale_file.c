/*
 * libFuzzer harness of the sale description parser (lib/sales, what
 * `flashsale-admin sale create FILE` reads before it writes anything): any
 * bytes give a verdict and, when refused, a message; nothing crashes.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sales.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];

	err[0] = '\0';
	if (fs_sales_check_description((const char *)data, size, err, sizeof(err)) != 0 &&
	    err[0] == '\0')
		abort();
	return 0;
}
