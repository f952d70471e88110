/*
 * Locks shared by worker threads. glibc's default read-write lock prefers
 * readers: with a steady stream of them (every purchase thread reading the
 * sold-out table, or producing through the Kafka producer) a writer may wait
 * for ever. Writer-first locks make new readers queue behind a waiting
 * writer. Base module: no project dependencies.
 */
#ifndef FS_LOCK_H
#define FS_LOCK_H

#include <pthread.h>

/*
 * Initialises a writer-first read-write lock; 0 or an errno value. A thread
 * must not take its read side twice (it would wait behind a waiting writer).
 */
int fs_lock_rw_init(pthread_rwlock_t *);

#endif
