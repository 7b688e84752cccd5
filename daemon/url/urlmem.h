/*
 * urlmem: the URLs changed since the last flush, in memory: the index of
 * the journal.
 *
 * Every submit or delete lands here first (and in the journal file, for
 * durability); a flush then writes them all to the store at once, in
 * segments, and clears the table.  An entry is a URL's state after its
 * latest change: its count (0: deleted), first and last seen times, and
 * where its record was in the store when it entered the table (the flush
 * retires that record).  Open addressing with linear probing in 64-byte
 * slots, at most 3/4 full: about 85 bytes per entry.
 *
 * Clearing is one increment of a generation: a slot belongs to the table
 * only when it carries the current one, so a flush costs nothing here.
 *
 * Threads.  One writer (the URL writer) finds, upserts and clears; any
 * number of readers look up concurrently, without locks.  Each slot has a
 * sequence counter, odd while the writer changes it; a reader copies the
 * slot and retries when the counter moved.  A reader that probes while the
 * table is cleared may miss an entry: clearing follows the flush that put
 * every entry in the store, where the reader then finds it.
 */
#ifndef NDDD_URLMEM_H
#define NDDD_URLMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"
#include "urlrec.h"

/* A URL's state after its latest change. */
struct urlmem_entry {
	uint8_t fp[CBF_FP_LEN];
	struct url_state st;		/* count 0: deleted */
	uint32_t orig_seg;		/* its record in the store when the
					   entry was made, or 0 */
	uint32_t orig_slot;
};

struct urlmem;

/* A table for up to capacity entries.  NULL when memory is short. */
struct urlmem *urlmem_new(size_t capacity);
void urlmem_free(struct urlmem *m);

/* Entries in the table, and the most it takes.  Any thread. */
size_t urlmem_count(const struct urlmem *m);
size_t urlmem_capacity(const struct urlmem *m);
/* Memory held. */
size_t urlmem_bytes(const struct urlmem *m);

/*
 * Any thread.  Copies fp's entry to *out and returns true, or returns false
 * when the table has none.
 */
bool urlmem_lookup(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN],
    struct urlmem_entry *out);
/* Hints the CPU to fetch fp's first slot. */
void urlmem_prefetch(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN]);

/* Writer.  The same as urlmem_lookup, without the readers' protocol. */
bool urlmem_get(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN],
    struct urlmem_entry *out);
/*
 * Writer.  Sets e->fp's entry to *e, adding it when new.  Returns -1 when
 * the table is full (the caller flushes first), or the place does not fit
 * (a segment id of more than 20 bits, a slot of more than 12).
 */
int urlmem_put(struct urlmem *m, const struct urlmem_entry *e);
/* Writer.  Empties the table: a new generation. */
void urlmem_clear(struct urlmem *m);
/* The current generation (acquire): it changes with every clear. */
uint32_t urlmem_generation(const struct urlmem *m);
/* Writer.  Calls fn for every entry, in no order. */
void urlmem_foreach(const struct urlmem *m,
    void (*fn)(const struct urlmem_entry *e, void *arg), void *arg);

#endif
