/*
 * urljournal: the URL store's journal, an append-only file of the URL
 * changes not yet flushed into the store (urls.journal in the data
 * directory).
 *
 * Each group of changes the URL writer applies is one frame: a header
 * (magic, number of entries, sequence number, CRC-32C of the rest, length
 * of the texts), the URLs' new states (fingerprint, count, first and last
 * seen, expiry, namespace; 48 bytes each), and the texts of the URLs it
 * records as new (for the host index: urlhosts.h).  A durable group is acknowledged once its frame is written and
 * fdatasync'ed; a relaxed one once it is written (handed to the kernel).
 * When a flush has put every change into the store, recording the last
 * sequence number it holds, the journal starts again at offset 0: the
 * file is written in place, allocated and zeroed once, so a sync flushes
 * data blocks and no metadata.
 *
 * Recovery reads frames from offset 0 while each is whole (its CRC
 * matches) and carries the next sequence number after the one the store
 * recorded: a torn last frame, or the stale frames of an earlier round
 * after it, end the replay.  A frame is only acknowledged after every frame
 * before it was written, so nothing acknowledged lies beyond the first
 * frame that fails; the rest of the file is then zeroed, and the journal
 * goes on from there.  (A first frame numbered beyond the store's next
 * means the store lost commits, possible only with [store] sync = none:
 * the journal's frames are replayed all the same, with a warning.)
 *
 * Threads: the URL writer alone.
 */
#ifndef NDDD_URLJOURNAL_H
#define NDDD_URLJOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "urlmem.h"

#define URLJOURNAL_ENTRY_LEN	48
#define URLJOURNAL_FRAME_HEADER	24

struct urljournal;

struct urljournal_stats {
	uint64_t bytes;			/* in the current round */
	uint64_t bytes_written;		/* since start */
	uint64_t frames_written;
	uint64_t syncs;
};

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

void urljournal_stats(const struct urljournal *j, struct urljournal_stats *out);

#endif
