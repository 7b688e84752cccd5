/*
 * journal: an append-only file of frames in the data directory, written in
 * place, that makes changes durable before the store holds them.  The URL
 * set's journal (urls.journal, url/urljournal.h) and the store writer's
 * (store.journal, store/redo.h) are two formats of it.
 *
 * A frame is a header of 24 bytes, little-endian: magic u32 (which format
 * and version), count u32, sequence number u64, CRC-32C u32 (of the count,
 * the sequence number and the payload), aux u32; then the payload, whose
 * length the format derives from the magic, count and aux.  Frames are
 * numbered in order.  Its owner appends a frame per group of changes and
 * syncs it (fdatasync) before the changes are acknowledged as durable;
 * once the store holds every change, recording the last sequence number,
 * the journal starts again at offset 0.  The file is allocated and zeroed
 * once, so a sync flushes data blocks and no metadata.
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
 * Threads: one owner (the writer whose journal it is).
 */
#ifndef NDDD_JOURNAL_H
#define NDDD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#define JOURNAL_FRAME_HEADER	24

/* A journal's kind of frames. */
struct journal_format {
	const char *file;	/* its name in the data directory */
	const char *what;	/* for messages: "the URL journal" */
	/* The payload's length of a frame with these header fields, or -1
	 * if magic is not one of this format's (the replay ends there). */
	int64_t (*payload_len)(uint32_t magic, uint32_t count, uint32_t aux);
};

/* A frame read back. */
struct journal_frame {
	uint32_t magic, count, aux;
	uint64_t seq;
	const uint8_t *payload;
	size_t len;
};

/* Called per frame replayed; returns 0, or -1 to stop with an error. */
typedef int (*journal_frame_fn)(const struct journal_frame *f, void *arg);

struct journal_stats {
	uint64_t bytes;			/* in the current round */
	uint64_t bytes_written;		/* since start */
	uint64_t frames_written;
	uint64_t syncs;
};

struct journal;

/*
 * Opens (creating and zeroing it to size bytes if needed) the journal
 * fmt->file of data directory dir; a file made larger before keeps its
 * length.  Returns NULL with *cause (caller frees; NULL: out of memory).
 */
struct journal *journal_open(const char *dir, const struct journal_format *fmt,
    size_t size, char **cause);
void journal_close(struct journal *j);

/*
 * At start-up: calls fn for each frame that follows the store's last one
 * (after_seq), in order.  Afterwards the rest of the file is zeroed and
 * the journal appends after the last whole frame.  Returns 0, or -1 with
 * *cause (caller frees) when the file cannot be read or written or fn
 * fails; *frames counts the frames replayed.
 */
int journal_replay(struct journal *j, uint64_t after_seq, journal_frame_fn fn,
    void *arg, uint64_t *frames, char **cause);
/*
 * While running: calls fn for each frame written in this round after
 * after_seq, in order, changing nothing.  Returns 0, or -1 with *cause
 * (caller frees) when a frame cannot be read back or fn fails.
 */
int journal_reread(struct journal *j, uint64_t after_seq, journal_frame_fn fn,
    void *arg, char **cause);

/* Bytes still free in this round. */
size_t journal_room(const struct journal *j);
/* The bytes a frame of a payload of len takes. */
static inline size_t
journal_frame_len(size_t len)
{
	return JOURNAL_FRAME_HEADER + len;
}
/*
 * Where to build the payload of the next frame, len bytes: valid until the
 * next call on j.  Returns NULL when out of memory.
 */
uint8_t *journal_payload(struct journal *j, size_t len);
/*
 * Frees the buffer journal_payload keeps for the next frame (as large as
 * the largest frame yet), for a writer gone quiet; the next call makes a
 * new one.
 */
void journal_payload_release(struct journal *j);
/*
 * Writes the next frame: the payload of len bytes built in
 * journal_payload's buffer, under this header.  Returns 0, or -1 with
 * errno (ENOSPC: the round's room is short; EIO: the disk); a failed frame
 * is overwritten by the next one.
 */
int journal_append(struct journal *j, uint32_t magic, uint32_t count,
    uint32_t aux, size_t len);
/* fdatasync.  Returns 0, or -1 with errno. */
int journal_sync(struct journal *j);
/* The sequence number of the last frame written. */
uint64_t journal_last_seq(const struct journal *j);
/* The store now holds every frame: start the next round at offset 0. */
void journal_restart(struct journal *j);

void journal_stats(const struct journal *j, struct journal_stats *out);

#endif
