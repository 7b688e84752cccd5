/*
 * shardstate: this daemon's place in a shard list.  See shardstate.h.
 *
 * Admission works as an RCU grace period with two generations: a write
 * counts itself in the current generation's counter; a change of state
 * flips the generation and waits for the old one's counter to drain.
 *
 * Changes are serialized by a state machine under the one lock: idle, or
 * changing (the flag below), from the store write to the end of the
 * drain.  A change that finds another under way waits on a condition
 * variable for it to end; the lock itself is held for a few assignments
 * only, never across the store's write transaction, the drain or another
 * lock (docs/threads.md).  What a mutex held from start to end gave
 * holds still: the store keeps the states in the order they take effect,
 * at most one generation drains at a time, and a change begins only once
 * the one before it has drained (or given up after 60 s).  Requests read
 * and admit under the old state meanwhile, until the new one is kept in
 * the store.
 */
#include "shardstate.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jumphash.h"
#include "log.h"
#include "md5.h"
#include "reply.h"
#include "store.h"

#define SHARD_META_KEY		"shard"

/* How long a change waits for the writes admitted before it. */
#define SHARD_DRAIN_MS		60000

struct shard_state {
	struct store *st;
	pthread_mutex_t lock;		/* guards all below but inflight */
	pthread_cond_t idle;		/* changing went back to false */
	bool changing;			/* a change is under way */
	struct shard_view v;
	char list[SHARD_LIST_MAX + 1];
	unsigned gen;			/* 0 or 1 */
	uint64_t inflight[2];		/* atomic */
	uint64_t session;		/* the export session's id; 0: none */
	uint64_t sessions;		/* begun since start */
};

/* The metadata value: "PLACE SHARDS IMPORTING KEEP LIST". */
static void
encode(const struct shard_view *v, const char *list, char *out, size_t len)
{
	snprintf(out, len, "%" PRIu32 " %" PRIu32 " %d %d %s", v->place,
	    v->shards, v->importing, v->keep_moved_docs, list);
}

static int
decode(const char *s, struct shard_view *v, char *list)
{
	int importing, keep, off = 0;

	if (sscanf(s, "%" SCNu32 " %" SCNu32 " %d %d %n", &v->place,
	    &v->shards, &importing, &keep, &off) != 4 || off == 0 ||
	    strlen(s + off) > SHARD_LIST_MAX)
		return -1;
	v->importing = importing != 0;
	v->keep_moved_docs = keep != 0;
	strcpy(list, s + off);
	return 0;
}

struct shard_state *
shard_state_open(struct store *st, const char **cause)
{
	struct shard_state *ss;
	struct store_txn *txn;
	char buf[SHARD_LIST_MAX + 64];
	int rc;

	if ((ss = calloc(1, sizeof(*ss))) == NULL) {
		*cause = "out of memory";
		return NULL;
	}
	ss->st = st;
	if ((txn = store_reader_new(st)) == NULL ||
	    store_reader_begin(txn) != STORE_OK) {
		store_reader_free(txn);
		free(ss);
		*cause = "cannot read the store's metadata";
		return NULL;
	}
	rc = store_meta_get(txn, SHARD_META_KEY, buf, sizeof(buf));
	store_reader_end(txn);
	store_reader_free(txn);
	if (rc == STORE_OK && decode(buf, &ss->v, ss->list) == -1) {
		free(ss);
		*cause = "the store's shard state is not readable";
		return NULL;
	}
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		free(ss);
		*cause = "cannot read the store's shard state";
		return NULL;
	}
	pthread_mutex_init(&ss->lock, NULL);
	pthread_cond_init(&ss->idle, NULL);
	reply_set_shards(ss->v.shards);
	if (ss->v.shards > 0)
		log_info("shard %" PRIu32 " of %" PRIu32 "%s", ss->v.place,
		    ss->v.shards, ss->v.importing ? ", importing" : "");
	return ss;
}

void
shard_state_free(struct shard_state *ss)
{
	if (ss == NULL)
		return;
	pthread_mutex_destroy(&ss->lock);
	pthread_cond_destroy(&ss->idle);
	free(ss);
}

void
shard_state_view(struct shard_state *ss, struct shard_view *v)
{
	pthread_mutex_lock(&ss->lock);
	*v = ss->v;
	pthread_mutex_unlock(&ss->lock);
}

bool
shard_view_owns(const struct shard_view *v, const uint8_t digest[16],
    uint32_t *route_by)
{
	if (v->shards == 0)
		return true;
	if (v->importing) {
		*route_by = v->shards - 1;
		return false;
	}
	*route_by = v->shards;
	return jump_hash_owner(digest, v->shards) == v->place;
}

bool
shard_view_owns_url(const struct shard_view *v, const char *url, size_t len)
{
	uint8_t digest[MD5_DIGEST_LEN];
	uint32_t route_by;

	if (v->shards == 0)
		return true;
	md5_digest(url, len, digest);
	return shard_view_owns(v, digest, &route_by);
}

bool
shard_view_hides(const struct shard_view *v)
{
	return v->shards > 0 && !v->keep_moved_docs;
}

void
shard_moved_message(uint32_t route_by, char out[SHARD_MOVED_MSG_LEN])
{
	snprintf(out, SHARD_MOVED_MSG_LEN, "moved: route by %" PRIu32
	    " shards", route_by);
}

unsigned
shard_admit(struct shard_state *ss, struct shard_view *v)
{
	unsigned gen;

	pthread_mutex_lock(&ss->lock);
	gen = ss->gen;
	*v = ss->v;
	__atomic_add_fetch(&ss->inflight[gen], 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ss->lock);
	return gen;
}

void
shard_release(struct shard_state *ss, unsigned ticket)
{
	__atomic_sub_fetch(&ss->inflight[ticket], 1, __ATOMIC_RELEASE);
}

/* Keeps v and list in the store's metadata. */
static int
persist(struct shard_state *ss, const struct shard_view *v, const char *list)
{
	struct store_txn *txn;
	char buf[SHARD_LIST_MAX + 64];
	int rc;

	encode(v, list, buf, sizeof(buf));
	if ((rc = store_write_begin(ss->st, &txn)) != STORE_OK)
		return rc;
	if ((rc = store_meta_put(txn, SHARD_META_KEY, buf)) != STORE_OK) {
		store_abort(txn);
		return rc;
	}
	return store_commit(txn);
}

/* Why v and list are not a state to take (static), or NULL. */
static const char *
check_state(const struct shard_view *v, const char *list)
{
	if (v->shards > 0 && v->place >= v->shards)
		return "a place is below the number of shards";
	if (v->shards == 0 && (v->place != 0 || v->importing))
		return "a daemon that is not a shard has no place";
	if (v->importing && v->place != v->shards - 1)
		return "only the last place imports (a new shard is added "
		    "at the end of the list)";
	if (strlen(list) > SHARD_LIST_MAX || strchr(list, ' ') != NULL)
		return "a shard list is at most 2048 bytes, without spaces";
	return NULL;
}

/* Waits until no other change is under way, then makes this one so. */
static void
change_begin(struct shard_state *ss)
{
	pthread_mutex_lock(&ss->lock);
	while (ss->changing)
		pthread_cond_wait(&ss->idle, &ss->lock);
	ss->changing = true;
	pthread_mutex_unlock(&ss->lock);
}

static void
change_end(struct shard_state *ss)
{
	pthread_mutex_lock(&ss->lock);
	ss->changing = false;
	pthread_cond_broadcast(&ss->idle);
	pthread_mutex_unlock(&ss->lock);
}

/* Takes state v and list for the requests admitted from now on; returns
 * the generation the earlier ones were admitted in. */
static unsigned
change_swap(struct shard_state *ss, const struct shard_view *v,
    const char *list)
{
	unsigned old;

	pthread_mutex_lock(&ss->lock);
	ss->v = *v;
	strcpy(ss->list, list);
	old = ss->gen;
	ss->gen ^= 1;
	pthread_mutex_unlock(&ss->lock);
	return old;
}

/*
 * Waits, holding no lock, for the writes admitted in generation gen to be
 * released; false after SHARD_DRAIN_MS.  It polls: shard_release stays one
 * atomic operation on every write's path, with no lock to signal under.
 */
static bool
drain(struct shard_state *ss, unsigned gen)
{
	struct timespec pause = { 0, 1000000 };
	uint64_t deadline = clock_mono_ms() + SHARD_DRAIN_MS;

	while (__atomic_load_n(&ss->inflight[gen], __ATOMIC_ACQUIRE) > 0) {
		if (clock_mono_ms() > deadline)
			return false;
		nanosleep(&pause, NULL);
	}
	return true;
}

const char *
shard_state_set(struct shard_state *ss, const Nddd__V1__ShardState *msg,
    Nddd__V1__Code *code)
{
	struct shard_view v = {
		.place = msg->place,
		.shards = msg->shards,
		.importing = msg->importing,
		.keep_moved_docs = msg->keep_moved_docs,
	};
	const char *list = msg->shard_list != NULL ? msg->shard_list : "";
	const char *why;
	unsigned old;
	bool drained;

	if ((why = check_state(&v, list)) != NULL) {
		*code = NDDD__V1__CODE__INVALID_ARGUMENT;
		return why;
	}
	change_begin(ss);
	if (persist(ss, &v, list) != STORE_OK) {
		change_end(ss);
		*code = NDDD__V1__CODE__INTERNAL;
		return "cannot keep the shard state in the store";
	}
	old = change_swap(ss, &v, list);
	reply_set_shards(v.shards);
	drained = drain(ss, old);
	change_end(ss);
	if (!drained) {
		*code = NDDD__V1__CODE__UNAVAILABLE;
		return "the state is set, but writes admitted before it are "
		    "still not done after 60 s";
	}
	if (v.shards > 0)
		log_info("shard %" PRIu32 " of %" PRIu32 "%s%s", v.place,
		    v.shards, v.importing ? ", importing" : "",
		    v.keep_moved_docs ? ", answering moved documents" : "");
	else
		log_info("not a shard");
	*code = NDDD__V1__CODE__OK;
	return NULL;
}

uint64_t
shard_session_begin(struct shard_state *ss)
{
	uint64_t id;

	pthread_mutex_lock(&ss->lock);
	/* Unlike a restart's: the time, with a count in its low bits. */
	id = ss->session = clock_wall_ms() << 16 | (++ss->sessions & 0xffff);
	pthread_mutex_unlock(&ss->lock);
	return id;
}

bool
shard_session_is(struct shard_state *ss, uint64_t id)
{
	bool is;

	pthread_mutex_lock(&ss->lock);
	is = id != 0 && ss->session == id;
	pthread_mutex_unlock(&ss->lock);
	return is;
}

bool
shard_session_open(struct shard_state *ss)
{
	bool open;

	pthread_mutex_lock(&ss->lock);
	open = ss->session != 0;
	pthread_mutex_unlock(&ss->lock);
	return open;
}

void
shard_session_end(struct shard_state *ss)
{
	pthread_mutex_lock(&ss->lock);
	ss->session = 0;
	pthread_mutex_unlock(&ss->lock);
}

void
shard_state_message(struct shard_state *ss, Nddd__V1__ShardState *out,
    char *list)
{
	nddd__v1__shard_state__init(out);
	pthread_mutex_lock(&ss->lock);
	out->place = ss->v.place;
	out->shards = ss->v.shards;
	out->importing = ss->v.importing;
	out->keep_moved_docs = ss->v.keep_moved_docs;
	strcpy(list, ss->list);
	pthread_mutex_unlock(&ss->lock);
	out->shard_list = list;
}
