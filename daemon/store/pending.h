/*
 * pending: the writes the store writer has journaled but not yet committed
 * to LMDB, as readers must see them (store.h, "Deferred commits").
 *
 * A map from (table, key) to the newest value written, or to "deleted".
 * One thread writes (the store writer, which publishes a group's changes
 * once they are in the journal); any number read at the same time, without
 * a lock: an entry, once published, is never moved nor freed until the
 * map is, and a newer value for the same key replaces the old one with
 * one atomic store.  The map is freed once the store holds everything in
 * it and no reader uses it any more.
 *
 * It holds at most PENDING_MAX entries (distinct keys): the writer commits
 * before a group would take it past that.
 */
#ifndef NDDD_PENDING_H
#define NDDD_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PENDING_MAX	(1u << 17)

struct pending;

/* A new, empty map, or NULL when out of memory. */
struct pending *pending_new(void);
void pending_free(struct pending *p);

/*
 * Writer: table t's key now holds val[0..vlen) (deleted false), or nothing
 * (deleted true); t is below 16.  Returns 0, or -1 when out of memory or
 * full (then the map is unchanged).
 */
int pending_set(struct pending *p, unsigned t, const void *key, size_t klen,
    const void *val, size_t vlen, bool deleted);
/*
 * Any thread: what the map says of table t's key: 0 if nothing (read the
 * store), 1 if it holds a value (*val, *vlen: valid while the map is) or
 * was deleted (*val NULL).
 */
int pending_get(const struct pending *p, unsigned t, const void *key,
    size_t klen, const void **val, size_t *vlen);
/* An entry, as pending_entries lists them. */
struct pending_entry {
	const void *key;
	size_t klen;
	const void *val;	/* NULL: deleted */
	size_t vlen;
};

/*
 * Any thread: the entries of table t, in no order, in a new array *out
 * (caller frees; valid while the map is).  Returns their number, or -1
 * when out of memory.
 */
long pending_entries(const struct pending *p, unsigned t,
    struct pending_entry **out);
/* Any thread: the distinct keys the map holds. */
size_t pending_count(const struct pending *p);
/* Writer: bytes of memory it takes. */
size_t pending_bytes(const struct pending *p);

#endif
