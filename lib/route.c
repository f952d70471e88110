#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "route.h"

int
fs_route_parse_id(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n;

	/* The canonical form only, the one nginx's locations match: 007 is not 7. */
	if (s == NULL || *s < '1' || *s > '9' || (n = strspn(s, "0123456789")) > FS_ROUTE_ID_DIGITS ||
	    s[n] != '\0')
		return -1;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (uint64_t)(s[i] - '0');
	*out = v;
	return 0;
}

const char *
fs_route_path_id(const char *path, const char *prefix, uint64_t *id)
{
	size_t plen = strlen(prefix), n;
	char digits[24];

	if (path == NULL || strncmp(path, prefix, plen) != 0)
		return NULL;
	path += plen;
	n = strspn(path, "0123456789");
	if (n == 0 || n >= sizeof(digits))
		return NULL;
	memcpy(digits, path, n);
	digits[n] = '\0';
	return fs_route_parse_id(digits, id) == 0 ? path + n : NULL;
}

const char *
fs_route_path_uuid(const char *path, const char *prefix, char id[FS_UUID_STRLEN + 1])
{
	size_t plen = strlen(prefix);

	if (path == NULL || strncmp(path, prefix, plen) != 0)
		return NULL;
	path += plen;
	if (strlen(path) < FS_UUID_STRLEN || fs_uuid_parse(path, FS_UUID_STRLEN, NULL) != 0)
		return NULL;
	memcpy(id, path, FS_UUID_STRLEN);
	id[FS_UUID_STRLEN] = '\0';
	return path + FS_UUID_STRLEN;
}

int
fs_route_purchase_item(const char *path, uint64_t *item)
{
	const char *rest = fs_route_path_id(path, FS_ROUTE_PURCHASE_PREFIX, item);

	return rest != NULL && strcmp(rest, FS_ROUTE_PURCHASE_SUFFIX) == 0 ? 0 : -1;
}

int
fs_route_purchase_path(char *out, size_t outlen, uint64_t item, const char *query)
{
	int n = snprintf(out, outlen, FS_ROUTE_PURCHASE_PREFIX "%" PRIu64 FS_ROUTE_PURCHASE_SUFFIX "?%s",
	    item, query);

	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}
