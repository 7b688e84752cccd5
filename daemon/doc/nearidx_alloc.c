/*
 * nearidx_alloc: segments for a table's buckets.  See nearidx_alloc.h.
 *
 * Each segment is a 2 MiB-aligned mapping whose first 64 bytes describe
 * it, so a block finds its segment by masking its address; a block too
 * large for a segment starts 64 bytes into a larger aligned mapping of
 * its own, which then works the same way.  Bulk loads carve buckets slot
 * after slot, so those lie in memory in slot order.  A few empty segments
 * are kept for reuse; the rest go back to the system.
 */
#include "nearidx_alloc.h"

#include <stdlib.h>
#include <string.h>

#include "hugemap.h"

/* Under AddressSanitizer, memory not handed out is poisoned, so that a
 * read of a recycled segment is caught as it would be with malloc. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)	((void)(p), (void)(n))
#define UNPOISON(p, n)	((void)(p), (void)(n))
#endif

#define SEG_HEAD	((size_t)64)
#define POOL_MAX	1

struct nearidx_seg {
	struct nearidx_seg *next, *prev;	/* in use, or the pool */
	size_t bytes;		/* mapped */
	size_t used;		/* first free byte, from the segment's start */
	size_t garbage;		/* bytes of dead blocks */
	int evacuating;
};

struct nearidx_alloc {
	size_t seg_bytes;
	struct nearidx_seg *head;	/* where blocks are carved */
	struct nearidx_seg *segs;	/* every segment in use */
	struct nearidx_seg *pool;	/* empty segments kept */
	unsigned npool;
	uint64_t bytes;		/* mapped, pool included */
	uint64_t used;		/* carved in segments in use */
	uint64_t garbage;	/* dead among them */
};

static struct nearidx_seg *
seg_of(const struct nearidx_alloc *a, const void *p)
{
	return (struct nearidx_seg *)((uintptr_t)p &
	    ~(uintptr_t)(a->seg_bytes - 1));
}

static void
link_in(struct nearidx_seg **list, struct nearidx_seg *s)
{
	s->prev = NULL;
	s->next = *list;
	if (*list != NULL)
		(*list)->prev = s;
	*list = s;
}

static void
link_out(struct nearidx_seg **list, struct nearidx_seg *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		*list = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
}

/* A segment of bytes (a multiple of the segment size), from the pool if
 * it is a standard one, in use and empty. */
static struct nearidx_seg *
seg_new(struct nearidx_alloc *a, size_t bytes)
{
	struct nearidx_seg *s;

	if (bytes == a->seg_bytes && a->pool != NULL) {
		s = a->pool;
		link_out(&a->pool, s);
		a->npool--;
	} else {
		if ((s = hugemap_aligned(bytes, a->seg_bytes)) == NULL)
			return NULL;
		POISON((char *)s + SEG_HEAD, bytes - SEG_HEAD);
		a->bytes += bytes;
	}
	memset(s, 0, sizeof(*s));
	s->bytes = bytes;
	s->used = SEG_HEAD;
	link_in(&a->segs, s);
	return s;
}

struct nearidx_alloc *
nearidx_alloc_new(size_t seg_bytes)
{
	struct nearidx_alloc *a = calloc(1, sizeof(*a));

	if (a != NULL)
		a->seg_bytes = seg_bytes;
	return a;
}

static void
unmap_list(struct nearidx_seg *s)
{
	while (s != NULL) {
		struct nearidx_seg *next = s->next;
		size_t bytes = s->bytes;

		UNPOISON(s, bytes);
		hugemap_free(s, bytes);
		s = next;
	}
}

void
nearidx_alloc_destroy(struct nearidx_alloc *a)
{
	if (a == NULL)
		return;
	unmap_list(a->segs);
	unmap_list(a->pool);
	free(a);
}

void *
nearidx_alloc_get(struct nearidx_alloc *a, size_t bytes)
{
	struct nearidx_seg *s;
	char *p;

	if (bytes > a->seg_bytes - SEG_HEAD) {
		size_t mapped = (bytes + SEG_HEAD + a->seg_bytes - 1) &
		    ~(a->seg_bytes - 1);

		if ((s = seg_new(a, mapped)) == NULL)
			return NULL;
	} else {
		s = a->head;
		if (s == NULL || s->bytes - s->used < bytes) {
			if ((s = seg_new(a, a->seg_bytes)) == NULL)
				return NULL;
			a->head = s;
		}
	}
	p = (char *)s + s->used;
	s->used += bytes;
	a->used += bytes;
	UNPOISON(p, bytes);
	return p;
}

void
nearidx_alloc_dead(struct nearidx_alloc *a, void *p, size_t bytes)
{
	seg_of(a, p)->garbage += bytes;
	a->garbage += bytes;
}

struct nearidx_seg *
nearidx_alloc_victim(struct nearidx_alloc *a, unsigned min_percent,
    char **start, char **end)
{
	struct nearidx_seg *best = NULL;

	for (struct nearidx_seg *s = a->segs; s != NULL; s = s->next)
		if (s != a->head && !s->evacuating && s->garbage > 0 &&
		    (best == NULL || s->garbage > best->garbage))
			best = s;
	if (best == NULL || best->garbage * 100 <
	    (uint64_t)(best->used - SEG_HEAD) * min_percent)
		return NULL;
	best->evacuating = 1;
	*start = (char *)best + SEG_HEAD;
	*end = (char *)best + best->used;
	return best;
}

void
nearidx_alloc_keep(struct nearidx_alloc *a, struct nearidx_seg *s)
{
	(void)a;
	s->evacuating = 0;
}

void
nearidx_alloc_recycle(struct nearidx_alloc *a, struct nearidx_seg *s)
{
	link_out(&a->segs, s);
	a->used -= s->used - SEG_HEAD;
	a->garbage -= s->garbage;
	POISON((char *)s + SEG_HEAD, s->bytes - SEG_HEAD);
	if (s->bytes == a->seg_bytes && a->npool < POOL_MAX) {
		link_in(&a->pool, s);
		a->npool++;
		return;
	}
	a->bytes -= s->bytes;
	UNPOISON(s, s->bytes);
	hugemap_free(s, s->bytes);
}

uint64_t
nearidx_alloc_bytes(const struct nearidx_alloc *a)
{
	return a->bytes;
}

uint64_t
nearidx_alloc_used(const struct nearidx_alloc *a)
{
	return a->used;
}

uint64_t
nearidx_alloc_garbage(const struct nearidx_alloc *a)
{
	return a->garbage;
}
