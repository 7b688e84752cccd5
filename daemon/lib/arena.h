/*
 * arena: a bump allocator for memory that lives exactly as long as one
 * piece of work (one request's decoded message, one URL's parse).
 *
 * Allocation is a pointer increment; nothing is freed individually;
 * arena_reset releases everything at once and keeps the largest block for
 * the next round, so a steady workload stops calling malloc.
 */
#ifndef NDDD_ARENA_H
#define NDDD_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;	/* current block; older ones follow */
	size_t min_block;
};

/* Initializes an empty arena whose blocks are at least min_block bytes. */
void arena_init(struct arena *a, size_t min_block);
/* Frees every block. */
void arena_release(struct arena *a);
/* Frees all allocations, keeping the largest block. */
void arena_reset(struct arena *a);

/* size bytes aligned to 16; NULL only when malloc fails. */
void *arena_alloc(struct arena *a, size_t size);

#endif
