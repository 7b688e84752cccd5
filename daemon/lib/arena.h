/*
 * arena: a bump allocator for memory that lives exactly as long as one
 * piece of work (one request's decoded message, one URL's parse).
 *
 * Allocation is a pointer increment; nothing is freed individually;
 * arena_reset releases everything at once and keeps the largest block for
 * the next round, so a steady workload stops calling malloc; keep_max
 * bounds what it keeps, so one large round does not hold its memory
 * forever.
 *
 * A limit bounds what an arena may hand out (say, while it decodes bytes
 * from a stranger): past it, allocations fail as if memory had run out,
 * and the arena says which of the two happened.
 */
#ifndef NDDD_ARENA_H
#define NDDD_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;	/* current block; older ones follow */
	size_t min_block;
	size_t keep_max;		/* largest block a reset keeps; 0: any */
	size_t limit;			/* bytes handed out at most; 0: none */
	size_t handed_out;		/* since the last reset */
	bool over_limit;		/* an allocation failed on the limit */
	bool out_of_memory;		/* an allocation failed in malloc */
};

/* Initializes an empty arena whose blocks are at least min_block bytes. */
void arena_init(struct arena *a, size_t min_block);
/* Frees every block. */
void arena_release(struct arena *a);
/*
 * Frees all allocations, keeping the largest block if it is not above
 * keep_max, and clears the failure flags (not the limit).
 */
void arena_reset(struct arena *a);
/*
 * From now until changed, the allocations since the last reset may total
 * at most limit bytes (0: no limit).
 */
void arena_set_limit(struct arena *a, size_t limit);

/*
 * size bytes aligned to 16; NULL when malloc fails or the limit would be
 * passed (over_limit or out_of_memory says which).
 */
void *arena_alloc(struct arena *a, size_t size);

#endif
