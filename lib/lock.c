#include "config.h"

#include "lock.h"

int
fs_lock_rw_init(pthread_rwlock_t *l)
{
	pthread_rwlockattr_t attr;
	int rc;

	if ((rc = pthread_rwlockattr_init(&attr)) != 0)
		return rc;
	if ((rc = pthread_rwlockattr_setkind_np(&attr,
		 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)) == 0)
		rc = pthread_rwlock_init(l, &attr);
	pthread_rwlockattr_destroy(&attr);
	return rc;
}
