/*
 * libFuzzer harness of the configuration parser (lib/cfg): the input is
 * NAME=VALUE lines set in the environment (only the names the table knows,
 * each cleared first). A load that succeeds has every integer setting in
 * its range and the hold age beyond the Kafka delivery timeout; one that
 * fails says why.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_cfg cfg;
	char *text = malloc(size + 1), *line, *save = NULL, *eq;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (int k = 0; k < FS_CFG__MAX; k++)
		unsetenv(fs_cfg_name((enum fs_cfg_key)k));
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if ((eq = strchr(line, '=')) == NULL)
			continue;
		*eq = '\0';
		for (int k = 0; k < FS_CFG__MAX; k++)
			if (strcmp(line, fs_cfg_name((enum fs_cfg_key)k)) == 0)
				setenv(line, eq + 1, 1);
	}
	if (fs_cfg_load(&cfg, 0) == 0) {
		if (fs_cfg_long(&cfg, FS_CFG_PURCHASE_THREADS) < 1 ||
		    fs_cfg_long(&cfg, FS_CFG_PURCHASE_THREADS) > 256 ||
		    fs_cfg_long(&cfg, FS_CFG_HOLD_MAX_AGE) * 1000 <
			fs_cfg_long(&cfg, FS_CFG_KAFKA_TIMEOUT_MS) + FS_CFG_HOLD_MARGIN_MS)
			abort();
	} else if (cfg.errstr[0] == '\0')
		abort();
	free(text);
	return 0;
}
