/*
 * arena: a bump allocator.  See arena.h.
 */
#include "arena.h"

#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN 16

struct arena_block {
	struct arena_block *next;
	size_t size;
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

void
arena_init(struct arena *a, size_t min_block)
{
	a->head = NULL;
	a->min_block = min_block;
	a->keep_max = 0;
	a->limit = 0;
	a->handed_out = 0;
	a->over_limit = a->out_of_memory = false;
}

void
arena_release(struct arena *a)
{
	struct arena_block *b, *next;

	for (b = a->head; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}

void
arena_reset(struct arena *a)
{
	struct arena_block *b, *next, *keep = NULL;

	for (b = a->head; b != NULL; b = next) {
		next = b->next;
		if (keep == NULL || b->size > keep->size) {
			free(keep);
			keep = b;
		} else
			free(b);
	}
	if (keep != NULL && a->keep_max != 0 && keep->size > a->keep_max) {
		free(keep);
		keep = NULL;
	}
	if (keep != NULL) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
	a->handed_out = 0;
	a->over_limit = a->out_of_memory = false;
}

void
arena_set_limit(struct arena *a, size_t limit)
{
	a->limit = limit;
}

void *
arena_alloc(struct arena *a, size_t size)
{
	struct arena_block *b = a->head;
	size_t need;

	if (size > SIZE_MAX - ARENA_ALIGN - sizeof(*b))
		return NULL;
	need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (a->limit != 0 && (a->handed_out > a->limit ||
	    need > a->limit - a->handed_out)) {
		a->over_limit = true;
		return NULL;
	}
	if (b == NULL || b->size - b->used < need) {
		size_t bsize = a->min_block;

		if (b != NULL && b->size * 2 > bsize)
			bsize = b->size * 2;
		if (bsize < need)
			bsize = need;
		if ((b = malloc(sizeof(*b) + bsize)) == NULL) {
			a->out_of_memory = true;
			return NULL;
		}
		b->size = bsize;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += need;
	a->handed_out += need;
	return b->data + b->used - need;
}
