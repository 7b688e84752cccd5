/*
 * urljournal: the URL store's journal, an append-only file of the URL
 * changes not yet flushed into the store (urls.journal in the data
 * directory).
 *
 * Each group of changes the URL writer applies is one frame of the journal
 * (lib/journal.h): the URLs' new states (fingerprint, count, first and
 * last seen, expiry, namespace; 48 bytes each), then the texts of the URLs
 * it records as new (for the host index: urlhosts.h).  A durable group is
 * acknowledged once its frame is written and fdatasync'ed; a relaxed one
 * once it is written (handed to the kernel).  When a flush has put every
 * change into the store, recording the last sequence number it holds, the
 * journal starts again at offset 0.
 *
 * Threads: the URL writer alone.
 */
#ifndef NDDD_URLJOURNAL_H
#define NDDD_URLJOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "urlmem.h"

#define URLJOURNAL_ENTRY_LEN	48
#define URLJOURNAL_FRAME_HEADER	JOURNAL_FRAME_HEADER

struct urljournal;

/* Bytes a frame of n entries takes. */
static inline size_t
urljournal_frame_len(size_t n)
{
	return URLJOURNAL_FRAME_HEADER + n * URLJOURNAL_ENTRY_LEN;
}

/*
 * Opens (creating and zeroing it to size bytes if needed) the journal of
 * data directory dir; a file made larger before keeps its length.  Returns
 * NULL with *cause (caller frees).
 */
struct urljournal *urljournal_open(const char *dir, size_t size, char **cause);
void urljournal_close(struct urljournal *j);

/*
 * Replays the frames that follow the store's last one (after_seq): calls fn
 * for each entry, in order, and text_fn for each frame's texts, if any.  Afterwards the rest of the file is zeroed and
 * the journal appends after the last whole frame.  Returns 0, or -1 with
 * *cause (caller frees) when the file cannot be read or written, or fn
 * fails.
 */
int urljournal_replay(struct urljournal *j, uint64_t after_seq,
    int (*fn)(const struct urlmem_entry *e, void *arg),
    int (*text_fn)(const uint8_t *text, size_t len, void *arg), void *arg,
    uint64_t *frames, uint64_t *entries, char **cause);

/* Bytes still free in this round. */
size_t urljournal_room(const struct urljournal *j);
/*
 * Writes one frame of n entries (their fp and state) and text_len bytes of
 * texts.  Returns 0, or
 * -1 with errno (ENOSPC: the disk is full); a failed frame is overwritten
 * by the next one.
 */
int urljournal_append(struct urljournal *j, const struct urlmem_entry *e,
    size_t n, const uint8_t *text, size_t text_len);
/* fdatasync.  Returns 0, or -1 with errno. */
int urljournal_sync(struct urljournal *j);
/* The sequence number of the last frame written. */
uint64_t urljournal_last_seq(const struct urljournal *j);
/* The store now holds every frame: start the next round at offset 0. */
void urljournal_restart(struct urljournal *j);
/* Frees the frame buffer kept between appends (a quiet writer's memory). */
void urljournal_release(struct urljournal *j);

void urljournal_stats(const struct urljournal *j, struct journal_stats *out);

#endif
