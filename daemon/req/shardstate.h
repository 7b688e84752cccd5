/*
 * shardstate: this daemon's place in a shard list, while a shard is added
 * (docs/sharding.md, "Adding a shard").
 *
 * A daemon that knows its place among n places answers only for the URLs
 * and documents it owns there (jumphash.h); the others fail with MOVED,
 * telling the client by how many places to route them again.  An
 * importing daemon (the new last place, while its keys are copied to it)
 * owns nothing yet: its clients route by the old list, n - 1 places.
 * The state is kept in the store's metadata, so a restart keeps it.
 *
 * Changing the state (shard_state_set) waits until every write admitted
 * under the old state is done: whoever changes it next (the resharding
 * procedure reads the keys changed since) then sees all that the old
 * state let through.  Writes of URLs and documents are admitted with
 * shard_admit and released when they are answered.
 *
 * Threads: all of it from any thread.
 */
#ifndef NDDD_SHARDSTATE_H
#define NDDD_SHARDSTATE_H

#include <stdbool.h>
#include <stdint.h>

#include "nddd.pb-c.h"

struct store;

/* The longest shard list kept (HOST:PORT,... as the clients name it). */
#define SHARD_LIST_MAX		2048
/* The longest MOVED message. */
#define SHARD_MOVED_MSG_LEN	48

/* The state, as a request sees it (taken once per request). */
struct shard_view {
	uint32_t place;
	uint32_t shards;		/* 0: not a shard: every key its own */
	bool importing;
	bool keep_moved_docs;		/* queries answer moved documents */
};

struct shard_state;

/* Reads the state kept in st (none: not a shard).  NULL with *cause
 * (static) if it cannot be read. */
struct shard_state *shard_state_open(struct store *st, const char **cause);
void shard_state_free(struct shard_state *ss);

void shard_state_view(struct shard_state *ss, struct shard_view *v);

/*
 * Whether a URL (or its document) of this digest (the MD5 of its canonical
 * form, default namespace) is v's to answer.  If not, *route_by is the
 * number of places the client should route it by.
 */
bool shard_view_owns(const struct shard_view *v, const uint8_t digest[16],
    uint32_t *route_by);
/* Whether v leaves other places' documents that it still holds out of
 * its answers (they are another shard's to answer). */
bool shard_view_hides(const struct shard_view *v);
/* shard_view_owns for a canonical URL. */
bool shard_view_owns_url(const struct shard_view *v, const char *url,
    size_t len);
/* The MOVED message for an item to route by route_by places. */
void shard_moved_message(uint32_t route_by, char out[SHARD_MOVED_MSG_LEN]);

/*
 * Admits a write under the current state, which *v receives; returns the
 * ticket shard_release takes once the write is answered (or refused).
 */
unsigned shard_admit(struct shard_state *ss, struct shard_view *v);
void shard_release(struct shard_state *ss, unsigned ticket);

/*
 * Replaces the state by msg's (checked: place < shards unless shards is 0;
 * importing only for the last place; a list of at most SHARD_LIST_MAX
 * bytes), keeps it in the store, then waits for the writes admitted under
 * the old state (at most 60 s: then UNAVAILABLE, the state set).  Changes
 * are one at a time: a change that finds another under way waits for it
 * to end first.  It blocks (a store write transaction and those waits),
 * holding no lock meanwhile: not for the loop thread.  Returns NULL, or
 * why it failed (static), with *code.
 */
const char *shard_state_set(struct shard_state *ss,
    const Nddd__V1__ShardState *msg, Nddd__V1__Code *code);
/*
 * The export session (shard_export), at most one: begun once the URL set
 * and the documents remember the keys that change; its id names it in
 * the steps that follow.  Not kept: a restart ends it.
 */
uint64_t shard_session_begin(struct shard_state *ss);
bool shard_session_is(struct shard_state *ss, uint64_t id);
bool shard_session_open(struct shard_state *ss);
void shard_session_end(struct shard_state *ss);

/* The state as a message, its list copied into list (SHARD_LIST_MAX + 1). */
void shard_state_message(struct shard_state *ss, Nddd__V1__ShardState *out,
    char *list);

#endif
