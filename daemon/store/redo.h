/*
 * redo: the store writer's journal (store.journal in the data directory),
 * a lib/journal.h file whose frames are the LMDB operations of groups of
 * writer jobs (store.h, "Deferred commits").
 *
 * While a group runs, its puts and deletes are captured here, in order; the
 * group's frame is then written (and synced, for durability) before the
 * group's jobs are answered, and the same operations are published to the
 * readers' pending map.  Replaying the frames after the last one the store
 * committed applies the same operations again, in the same order, to the
 * state they were first applied to: the store ends as it was.
 *
 * Frame: magic "SJF1", count the operations, aux the payload's bytes; per
 * operation, table u8, kind u8 (1 put, 2 delete), key length u16, value
 * length u32 (little-endian), the key, the value.
 *
 * Threads: the store writer (and store_open, before it starts).
 */
#ifndef NDDD_REDO_H
#define NDDD_REDO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "pending.h"

struct redo;

/* One operation, as captured or replayed. */
struct redo_op {
	unsigned table;
	bool del;
	const void *key;
	size_t klen;
	const void *val;	/* a put's */
	size_t vlen;
};

/* Called per operation replayed; returns 0, or -1 to stop. */
typedef int (*redo_op_fn)(const struct redo_op *op, void *arg);

/* Opens the journal of data directory dir (size bytes at least).  NULL
 * with *cause (caller frees; NULL: out of memory). */
struct redo *redo_open(const char *dir, size_t size, char **cause);
void redo_close(struct redo *r);

/*
 * At start-up: calls fn for each operation of the frames after after_seq
 * (the last frame the store holds), then readies the journal to append.
 * Returns 0, or -1 with *cause (caller frees).
 */
int redo_replay(struct redo *r, uint64_t after_seq, redo_op_fn fn, void *arg,
    uint64_t *frames, uint64_t *ops, char **cause);
/*
 * While running: calls fn for each operation of the frames written in this
 * round after after_seq, to build them again after a transaction that held
 * them was lost.  Returns 0, or -1 with *cause (caller frees).
 */
int redo_reread(struct redo *r, uint64_t after_seq, redo_op_fn fn, void *arg,
    char **cause);

/* Starts capturing a group's operations afresh. */
void redo_capture_start(struct redo *r);
/* Captures one operation.  When memory runs out the capture is marked
 * failed (redo_capture_failed) and takes nothing more. */
void redo_capture(struct redo *r, const struct redo_op *op);
bool redo_capture_failed(const struct redo *r);
/* The operations captured, and the bytes of their frame. */
size_t redo_capture_ops(const struct redo *r);
size_t redo_capture_bytes(const struct redo *r);
/* Whether the captured frame fits in what is left of this round. */
bool redo_capture_fits(const struct redo *r);
/*
 * Writes the captured operations as the next frame.  Returns 0, or -1
 * with errno (ENOSPC: no room this round; EIO and others: the file).
 */
int redo_capture_write(struct redo *r);
/* Publishes the captured operations to p (which has room for them: its
 * count plus redo_capture_ops stays within PENDING_MAX).  Returns 0, or
 * -1 when out of memory (p then holds some of them). */
int redo_capture_publish(const struct redo *r, struct pending *p);

/* fdatasync.  Returns 0, or -1 with errno. */
int redo_sync(struct redo *r);
/* The sequence number of the last frame written. */
uint64_t redo_last_seq(const struct redo *r);
/* The store holds every frame: start the next round at offset 0. */
void redo_restart(struct redo *r);
void redo_stats(const struct redo *r, struct journal_stats *out);

#endif
