/*
 * lib/fcgi's batches: the requests an event loop took in a round go to a
 * store together, and the loop serves other events while the store answers
 * (the purchase handler's reservations, the queue handler's joins). The
 * handler says how a batch is sent and how its replies are taken; this file
 * holds when: at the end of a round, one batch out at a time, and the
 * watch of the replies' descriptors until readable or overdue.
 */
#include "config.h"

#include <string.h>

#include "fcgi.h"

/* A batch's replies are readable (or overdue): done with it; the next goes out at the round's end. */
static void
replies_ready(void *arg)
{
	fs_fcgi_batch_end(arg);
}

/* The items taken so far, sent together; the loop serves other events until the replies come. */
static void
batch_start(struct fs_fcgi_batch *b)
{
	int64_t deadline = 0;
	int nfds;

	fs_fcgi_batch_end(b); /* one batch out at a time */
	memcpy(b->flight, b->queued, b->nqueued * sizeof(b->queued[0]));
	b->nflight = b->nqueued;
	b->nqueued = 0;
	nfds = b->send(b->ctx, b->flight, b->nflight, b->fds, FS_FCGI_WATCH_MAX, &deadline);
	for (b->nfds = 0; b->nfds < nfds; b->nfds++)
		if (fs_fcgi_watch(b->fds[b->nfds], deadline, replies_ready, b) != 0)
			break;
	if (nfds <= 0 || b->nfds < nfds)
		fs_fcgi_batch_end(b); /* nothing to wait for, or the loop cannot: in place */
}

void
fs_fcgi_batch_add(struct fs_fcgi_batch *b, void *item)
{
	b->queued[b->nqueued++] = item;
	if (b->nqueued == FS_FCGI_BATCH_MAX)
		batch_start(b);
}

void
fs_fcgi_batch_round(struct fs_fcgi_batch *b)
{
	if (b->nflight == 0 && b->nqueued > 0)
		batch_start(b);
}

void
fs_fcgi_batch_end(struct fs_fcgi_batch *b)
{
	void *items[FS_FCGI_BATCH_MAX];
	size_t n = b->nflight;

	if (n == 0)
		return;
	for (int i = 0; i < b->nfds; i++)
		fs_fcgi_unwatch(b->fds[i]);
	b->nfds = 0;
	/* Ended before recv runs: an answer that uses the store again ends nothing twice. */
	memcpy(items, b->flight, n * sizeof(items[0]));
	b->nflight = 0;
	b->recv(b->ctx, items, n);
}
