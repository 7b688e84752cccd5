/*
 * urlns: the URL namespaces: their names, ids, settings and URL counts.
 *
 * A namespace is an independent set of URLs (one crawl, one spider, one
 * customer) sharing the URL set's filter and store.  Records keep their
 * namespace's id; the default namespace is "" with id 0, and always
 * exists.  Ids are never reused: dropping a namespace frees its name at
 * once (a submit under it starts an empty set with a new id), while the
 * records that keep the old id are forgotten in the background (urlset.h)
 * and the id is retired when none is left.
 *
 * The store's metadata holds the registry, each change in a transaction of
 * its own, committed before anything that depends on it is written:
 *
 *	urls.ns.next		the next id
 *	urls.ns/NAME		"ID DEFAULT_TTL_MS" for each namespace (the
 *				default one only once it has settings)
 *	urls.ns_drop/ID		"NAME": dropped, records not all forgotten
 *
 * Threads.  The URL writer changes the registry and the counts; any thread
 * looks names up and lists the namespaces, under a read lock.
 */
#ifndef NDDD_URLNS_H
#define NDDD_URLNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define URLNS_NAME_MAX		64
#define URLNS_DEFAULT		0		/* the default namespace's id */
#define URLNS_NONE		UINT32_MAX	/* no namespace of that name */
/* Namespaces at most, dropped ones not yet forgotten included. */
#define URLNS_MAX		16384

struct urlns_info {
	char name[URLNS_NAME_MAX + 1];
	uint32_t id;
	uint64_t default_ttl_ms;	/* 0: none */
	uint64_t urls;			/* records (expired ones included) */
	bool dropping;
};

struct urlns;

/*
 * Reads the registry from st's metadata.  Returns NULL with *cause (caller
 * frees, NULL when memory is short) on failure.
 */
struct urlns *urlns_open(struct store *st, char **cause);
void urlns_free(struct urlns *r);

/*
 * NULL when name[0..len) may name a namespace (at most URLNS_NAME_MAX
 * bytes of ASCII letters, digits, '.', '_' and '-'; empty: the default
 * one), else why not (static).
 */
const char *urlns_check_name(const char *name, size_t len);

/*
 * Any thread: the id of the namespace named name[0..len) (checked), or
 * URLNS_NONE; its default time to live in *default_ttl_ms if non-NULL.
 */
uint32_t urlns_find(struct urlns *r, const char *name, size_t len,
    uint64_t *default_ttl_ms);

/* Whether URLNS_MAX namespaces exist: no other can be created. */
bool urlns_full(struct urlns *r);
/*
 * Writer.  Creates the namespace named name (checked, absent; not
 * urlns_full), durably.  Returns a store status.
 */
int urlns_create(struct urlns *r, const char *name, uint32_t *id);
/* Writer.  Sets a namespace's default time to live, durably. */
int urlns_set_ttl(struct urlns *r, uint32_t id, uint64_t default_ttl_ms);
/*
 * Writer.  Drops namespace id (not the default one), durably: its name is
 * free from now on; it stays listed as dropping until urlns_retire.
 */
int urlns_drop(struct urlns *r, uint32_t id);
/* Writer.  Forgets dropped namespace id, whose records are all gone. */
int urlns_retire(struct urlns *r, uint32_t id);
/*
 * Writer, at start-up: a record names id, which the registry lacks (its
 * creation was lost with [store] sync = none): it is taken for a dropped
 * namespace, so that its records are forgotten.
 */
int urlns_adopt(struct urlns *r, uint32_t id);

/*
 * Writer: adds delta to namespace id's count of records.  Returns false
 * (counting nothing) if there is no such id.
 */
bool urlns_count(struct urlns *r, uint32_t id, int64_t delta);
/* Whether id is a dropped namespace (writer). */
bool urlns_dropping(struct urlns *r, uint32_t id);
/*
 * The dropped namespaces' ids, at most max of them, in ids; returns how
 * many there are (writer).
 */
size_t urlns_dropped(struct urlns *r, uint32_t *ids, size_t max);

/* Any thread: the records of dropped namespaces still there. */
uint64_t urlns_dropping_urls(struct urlns *r);
/*
 * Any thread: the namespaces, the default one first, then by name, then
 * the dropped ones, in a new array (caller frees) of *n; NULL when memory
 * is short.
 */
struct urlns_info *urlns_list(struct urlns *r, size_t *n);
/* Any thread: one namespace's information; false if there is no such id. */
bool urlns_info(struct urlns *r, uint32_t id, struct urlns_info *out);

#endif
