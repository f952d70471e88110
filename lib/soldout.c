#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "log.h"
#include "redis.h"
#include "soldout.h"

/* Items tracked per process; a sale has a few. When full, no fast path. */
#define SLOTS 1024

struct slot {
	_Atomic uint64_t item; /* 0: free */
	atomic_uint gen;       /* bumped on every restock */
	atomic_int soldout;
};

struct fs_soldout {
	struct slot slot[SLOTS];
	char dir[512];
	char redis_addr[256];
	pthread_t listener;
	int listening;
	atomic_int stop;
	redisContext *sub; /* the listener's connection */
};

/* Finds (or, with create, claims) the item's slot; NULL when none. */
static struct slot *
slot_of(fs_soldout *s, uint64_t item, int create)
{
	size_t h = (size_t)(item * 0x9E3779B97F4A7C15ull) % SLOTS;

	for (size_t i = 0; i < SLOTS; i++) {
		struct slot *sl = &s->slot[(h + i) % SLOTS];
		uint64_t cur = atomic_load(&sl->item);

		if (cur == item)
			return sl;
		if (cur == 0) {
			uint64_t expected = 0;

			if (!create)
				return NULL;
			if (atomic_compare_exchange_strong(&sl->item, &expected, item) || expected == item)
				return sl;
		}
	}
	return NULL;
}

static void
marker_path(fs_soldout *s, uint64_t item, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%" PRIu64, s->dir, item);
}

void
fs_soldout_clear(fs_soldout *s, uint64_t item)
{
	struct slot *sl = slot_of(s, item, 1);
	char path[600];

	if (sl != NULL) {
		atomic_fetch_add(&sl->gen, 1);
		atomic_store(&sl->soldout, 0);
	}
	if (s->dir[0] != '\0') {
		marker_path(s, item, path, sizeof(path));
		if (unlink(path) != 0 && errno != ENOENT)
			fs_log_warn("soldout: cannot remove %s: %s", path, strerror(errno));
	}
}

/* After the listener (re)connects it may have missed restocks: forget all. */
static void
clear_all(fs_soldout *s)
{
	struct dirent *de;
	DIR *d;

	for (size_t i = 0; i < SLOTS; i++) {
		atomic_fetch_add(&s->slot[i].gen, 1);
		atomic_store(&s->slot[i].soldout, 0);
	}
	if (s->dir[0] == '\0' || (d = opendir(s->dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static void *
listen_restocks(void *arg)
{
	fs_soldout *s = arg;
	struct timeval poll_tv = { 0, 200000 };
	char err[128];
	redisReply *reply;
	uint64_t sale, item;
	void *r;

	while (!atomic_load(&s->stop)) {
		if ((s->sub = fs_redis_dial(s->redis_addr, err, sizeof(err))) == NULL) {
			usleep(200000); /* Redis is down: retry soon, it is a pause not a wait. */
			continue;
		}
		reply = redisCommand(s->sub, "SUBSCRIBE fs:restock");
		if (reply == NULL) {
			redisFree(s->sub);
			s->sub = NULL;
			continue;
		}
		freeReplyObject(reply);
		clear_all(s);
		/* Short read timeouts let the thread notice the stop flag. */
		redisSetTimeout(s->sub, poll_tv);
		while (!atomic_load(&s->stop)) {
			if (redisGetReply(s->sub, &r) != REDIS_OK) {
				if (s->sub->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
					s->sub->err = 0;
					s->sub->errstr[0] = '\0';
					continue;
				}
				break;
			}
			reply = r;
			if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
			    reply->element[2]->type == REDIS_REPLY_STRING &&
			    sscanf(reply->element[2]->str, "%" SCNu64 " %" SCNu64, &sale, &item) == 2)
				fs_soldout_clear(s, item);
			freeReplyObject(reply);
		}
		redisFree(s->sub);
		s->sub = NULL;
	}
	return NULL;
}

fs_soldout *
fs_soldout_new(const char *marker_dir, const char *redis_addr)
{
	fs_soldout *s;

	if (strlen(marker_dir) >= sizeof(s->dir) || strlen(redis_addr) >= sizeof(s->redis_addr))
		return NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	strcpy(s->dir, marker_dir);
	strcpy(s->redis_addr, redis_addr);
	if (pthread_create(&s->listener, NULL, listen_restocks, s) != 0) {
		free(s);
		return NULL;
	}
	s->listening = 1;
	return s;
}

void
fs_soldout_free(fs_soldout *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stop, 1);
	if (s->listening)
		pthread_join(s->listener, NULL);
	free(s);
}

int
fs_soldout_known(fs_soldout *s, uint64_t item)
{
	struct slot *sl = slot_of(s, item, 0);

	return sl != NULL && atomic_load(&sl->soldout);
}

unsigned
fs_soldout_generation(fs_soldout *s, uint64_t item)
{
	struct slot *sl = slot_of(s, item, 1);

	return sl != NULL ? atomic_load(&sl->gen) : 0;
}

void
fs_soldout_mark(fs_soldout *s, uint64_t item, unsigned gen)
{
	struct slot *sl = slot_of(s, item, 1);
	char path[600];
	int fd;

	if (sl == NULL)
		return;
	atomic_store(&sl->soldout, 1);
	/* A restock raced this answer: undo, the next request asks Redis. */
	if (atomic_load(&sl->gen) != gen) {
		atomic_store(&sl->soldout, 0);
		return;
	}
	if (s->dir[0] == '\0')
		return;
	marker_path(s, item, path, sizeof(path));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	else
		fs_log_warn("soldout: cannot create %s: %s", path, strerror(errno));
	/* Same check after the file exists, against a restock in between. */
	if (atomic_load(&sl->gen) != gen)
		fs_soldout_clear(s, item);
}
