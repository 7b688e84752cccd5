/*
 * nearidx_alloc: log-structured memory for one table of the
 * near-duplicate index.
 *
 * A table's buckets are many small blocks that grow and get replaced all
 * the time, and every query reads several at random.  So blocks are cut
 * one after the other from 2 MiB segments on transparent huge pages
 * (where random reads seldom miss the TLB), never freed one by one: a
 * replaced block is counted as garbage in its segment.  When garbage
 * grows, the table evacuates the segment with the most of it (copies its
 * live blocks to the current segment) and hands the segment back once no
 * reader can still see it.  Blocks too large for a segment get a segment
 * of their own.  Memory stays compact under any mix of growth and
 * deletion, without a general-purpose allocator's per-block headers.
 *
 * One thread at a time: the index's writer.
 */
#ifndef NDDD_NEARIDX_ALLOC_H
#define NDDD_NEARIDX_ALLOC_H

#include <stddef.h>
#include <stdint.h>

struct nearidx_alloc;
struct nearidx_seg;

/*
 * An empty allocator with segments of seg_bytes (a power of two, at least
 * 64 KiB; 2 MiB is one huge page).  NULL if memory is short.
 */
struct nearidx_alloc *nearidx_alloc_new(size_t seg_bytes);
/* Unmaps every segment, in use or not. */
void nearidx_alloc_destroy(struct nearidx_alloc *a);

/* bytes (a multiple of 16) at a 16-byte boundary, or NULL if memory is
 * short. */
void *nearidx_alloc_get(struct nearidx_alloc *a, size_t bytes);
/* The block of bytes at p is no longer referenced: garbage. */
void nearidx_alloc_dead(struct nearidx_alloc *a, void *p, size_t bytes);

/*
 * The segment with the most garbage (never the one being filled), or
 * NULL if none has at least min_percent of its bytes in garbage; its
 * blocks lie in [*start, *end).  The caller
 * moves its live blocks out (marking each dead), then passes it to
 * nearidx_alloc_recycle once no reader can see it, or to
 * nearidx_alloc_keep if it has to stop.
 */
struct nearidx_seg *nearidx_alloc_victim(struct nearidx_alloc *a,
    unsigned min_percent, char **start, char **end);
void nearidx_alloc_keep(struct nearidx_alloc *a, struct nearidx_seg *s);
void nearidx_alloc_recycle(struct nearidx_alloc *a, struct nearidx_seg *s);

/* Bytes mapped; bytes handed out (in segments in use); garbage among
 * them. */
uint64_t nearidx_alloc_bytes(const struct nearidx_alloc *a);
uint64_t nearidx_alloc_used(const struct nearidx_alloc *a);
uint64_t nearidx_alloc_garbage(const struct nearidx_alloc *a);

#endif
