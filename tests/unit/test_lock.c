/*
 * Unit test of lib/lock: once a writer waits, a new reader queues behind
 * it, however many readers hold the lock (glibc's default would let the
 * reader in, and a stream of readers starve the writer).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "expect.h"
#include "lock.h"

static pthread_rwlock_t lock;
static atomic_int wrote;

static void *
writer(void *arg)
{
	(void)arg;
	pthread_rwlock_wrlock(&lock);
	atomic_store(&wrote, 1);
	pthread_rwlock_unlock(&lock);
	return NULL;
}

int
main(void)
{
	struct timespec tick = { 0, 1000000 };
	pthread_t w;
	int queued = 0;

	check(fs_lock_rw_init(&lock) == 0, "a writer-first lock");
	pthread_rwlock_rdlock(&lock);
	pthread_create(&w, NULL, writer, NULL);
	/* Bounded (5 s): a writer-first lock refuses the reader once the writer waits. */
	for (int i = 0; i < 5000 && !queued; i++) {
		if (pthread_rwlock_tryrdlock(&lock) == EBUSY)
			queued = 1;
		else {
			pthread_rwlock_unlock(&lock);
			nanosleep(&tick, NULL);
		}
	}
	check(queued, "a new reader queues behind the waiting writer");
	check(!atomic_load(&wrote), "the writer waits for the reader that holds the lock");
	pthread_rwlock_unlock(&lock);
	pthread_join(w, NULL);
	check(atomic_load(&wrote), "then it writes");
	pthread_rwlock_destroy(&lock);
	return failures == 0 ? 0 : 1;
}
