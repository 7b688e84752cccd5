/*
 * store_impl: what the store's two files share (store.c, the environment
 * and its transactions; defer.c, the deferred commits of the store
 * writer).  Nothing outside daemon/store/ includes it.
 */
#ifndef NDDD_STORE_IMPL_H
#define NDDD_STORE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <lmdb.h>

#include "store.h"

struct defer;
struct store_view;

struct store {
	MDB_env *env;
	MDB_dbi dbi[STORE_NTABLES];
	int lock_fd;
	uint64_t map_size;
	char *dir;
	struct store_ident opened;	/* store_ident_at_open */

	/* Writes refused for want of room: both writers note them, so
	 * full_lock guards the episode (full is also read without it). */
	pthread_mutex_t full_lock;
	int full;			/* 0, STORE_FULL or STORE_NOSPACE */
	uint64_t full_since_ms;		/* the episode began (monotonic) */
	uint64_t full_logged_ms;	/* the last message about it, or 0 */
	uint64_t full_refused;		/* in this episode */
	bool full_told;			/* its beginning was logged */
	uint64_t refused_total;		/* atomic */

	struct defer *defer;		/* the store writer's deferred
					   commits, or NULL (defer.h) */

	/* The data file read into the page cache at open (store.c,
	 * "Warming"): the thread, and whether it must stop. */
	pthread_t warm_thread;
	off_t warm_size;		/* the file's bytes at open */
	bool warming;
	bool warm_stop;			/* atomic */
};

struct store_txn {
	struct store *st;
	MDB_txn *txn;
	bool wrote;			/* a put, delete or reserve succeeded */
	bool capture;			/* a deferred group's: its puts and
					   deletes go to the store journal */
	struct store_view *view;	/* a reader's view of the writes not
					   committed yet, or NULL */
};

/* An LMDB return code as a store status; what names the call, for the log
 * of a failure. */
int store_status(int rc, const char *what);
/* A write's status, a refusal for want of room noted. */
int store_write_status(struct store_txn *txn, int rc, const char *what);
/* A transaction that wrote committed: a full store's episode may end. */
void store_note_room(struct store *st);
/* The status of a commit that returned rc (LMDB's), a full store noted;
 * wrote: the transaction wrote. */
int store_commit_status(struct store *st, int rc, bool wrote);

#endif
