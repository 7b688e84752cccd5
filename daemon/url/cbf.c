/*
 * cbf: the counting Bloom filter in front of the URL store.  See cbf.h.
 *
 * The side table is an open-addressing hash map from counter index to true
 * count, holding exactly the saturated counters.  At the default sizing
 * (m = 20 x capacity, k = 8) the mean count is 0.4 and saturation is
 * vanishingly rare, so the table is empty in practice and costs nothing; with
 * a tiny m it carries the exactness that the 4 bits cannot.
 */
#include "cbf.h"

#include <stdlib.h>
#include <string.h>

#include "hugemap.h"
#include "le.h"
#include "log.h"

#define SIDE_EMPTY UINT32_MAX	/* no counter index can be UINT32_MAX */

struct side_entry {
	uint32_t index;
	uint32_t count;
};

struct cbf {
	uint64_t m;
	uint8_t *counters;		/* m / 2 bytes, low nibble = even index */
	size_t mapped;			/* mmap'ed length, or 0 if malloc'ed */
	struct side_entry *side;	/* power-of-two sized, or NULL */
	uint32_t side_cap;
	uint32_t side_len;
	uint64_t nonzero;		/* written by the writer, read by anyone */
	uint64_t saturated;
};

/* Large filters live in their own mapping with transparent huge pages
 * (hugemap.h), taken whole at start-up. */
static void *
counters_alloc(size_t bytes, size_t *mapped)
{
	*mapped = 0;
	if (bytes < HUGEMAP_PAGE)
		return calloc(1, bytes);
	return hugemap_new(bytes, true, mapped);
}

struct cbf *
cbf_new(uint64_t m)
{
	struct cbf *f;

	if (m == 0 || m % CBF_BLOCK != 0 || m > UINT32_MAX)
		return NULL;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->m = m;
	if ((f->counters = counters_alloc(m / 2, &f->mapped)) == NULL) {
		free(f);
		return NULL;
	}
	return f;
}

void
cbf_free(struct cbf *f)
{
	if (f == NULL)
		return;
	if (f->mapped)
		hugemap_free(f->counters, f->mapped);
	else
		free(f->counters);
	free(f->side);
	free(f);
}

void
cbf_indices(const struct cbf *f, const uint8_t fp[CBF_FP_LEN],
    uint32_t idx[CBF_K])
{
	uint64_t h1 = le_get64(fp), h2 = le_get64(fp + 8);
	uint64_t block = (uint64_t)(((unsigned __int128)h1 *
	    (f->m / CBF_BLOCK)) >> 64);
	uint32_t a = (uint32_t)h2 % CBF_BLOCK;
	uint32_t b = (uint32_t)(h2 >> 7) % CBF_BLOCK | 1;

	/* An odd step is invertible modulo 128: k < 128 distinct indices. */
	for (uint32_t i = 0; i < CBF_K; i++)
		idx[i] = (uint32_t)(block * CBF_BLOCK) +
		    (a + i * b) % CBF_BLOCK;
}

void
cbf_prefetch(const struct cbf *f, const uint32_t idx[CBF_K])
{
	/* All k counters share one cache line. */
	__builtin_prefetch(&f->counters[idx[0] >> 1]);
}

static unsigned
nibble_get(const uint8_t *counters, uint64_t i)
{
	uint8_t b = __atomic_load_n(&counters[i >> 1], __ATOMIC_RELAXED);

	return (i & 1) ? b >> 4 : b & 0x0f;
}

static void
nibble_set(uint8_t *counters, uint64_t i, unsigned v)
{
	uint8_t b = counters[i >> 1];	/* only the writer stores */

	b = (i & 1) ? (uint8_t)((b & 0x0f) | (v << 4)) :
	    (uint8_t)((b & 0xf0) | v);
	__atomic_store_n(&counters[i >> 1], b, __ATOMIC_RELAXED);
}

int
cbf_maybe(const struct cbf *f, const uint32_t idx[CBF_K])
{
	for (int i = 0; i < CBF_K; i++)
		if (nibble_get(f->counters, idx[i]) == 0)
			return 0;
	return 1;
}

static uint32_t
side_slot(uint32_t index, uint32_t cap)
{
	return (uint32_t)((index * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

static struct side_entry *
side_find(const struct cbf *f, uint32_t index)
{
	if (f->side == NULL)
		return NULL;
	for (uint32_t s = side_slot(index, f->side_cap);;
	    s = (s + 1) & (f->side_cap - 1)) {
		if (f->side[s].index == index)
			return &f->side[s];
		if (f->side[s].index == SIDE_EMPTY)
			return NULL;
	}
}

static void
side_insert(struct cbf *f, uint32_t index, uint32_t count)
{
	uint32_t s;

	if ((uint64_t)(f->side_len + 1) * 4 > (uint64_t)f->side_cap * 3) {
		uint32_t old_cap = f->side_cap;
		struct side_entry *old = f->side;
		uint32_t cap = old_cap ? old_cap * 2 : 64;

		if ((f->side = malloc(cap * sizeof(*f->side))) == NULL)
			fatal("%s: malloc", __func__);
		for (uint32_t i = 0; i < cap; i++)
			f->side[i].index = SIDE_EMPTY;
		__atomic_store_n(&f->side_cap, cap, __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < old_cap; i++) {
			if (old[i].index == SIDE_EMPTY)
				continue;
			s = side_slot(old[i].index, cap);
			while (f->side[s].index != SIDE_EMPTY)
				s = (s + 1) & (cap - 1);
			f->side[s] = old[i];
		}
		free(old);
	}
	s = side_slot(index, f->side_cap);
	while (f->side[s].index != SIDE_EMPTY)
		s = (s + 1) & (f->side_cap - 1);
	f->side[s].index = index;
	f->side[s].count = count;
	f->side_len++;
}

/* Backward-shift deletion keeps probe sequences unbroken without tombstones. */
static void
side_delete(struct cbf *f, struct side_entry *e)
{
	uint32_t mask = f->side_cap - 1;
	uint32_t hole = (uint32_t)(e - f->side);

	for (uint32_t s = (hole + 1) & mask; f->side[s].index != SIDE_EMPTY;
	    s = (s + 1) & mask) {
		uint32_t home = side_slot(f->side[s].index, f->side_cap);

		/* Move s into the hole unless its home lies in (hole, s]. */
		if (((s - home) & mask) >= ((s - hole) & mask)) {
			f->side[hole] = f->side[s];
			hole = s;
		}
	}
	f->side[hole].index = SIDE_EMPTY;
	f->side_len--;
}

void
cbf_add(struct cbf *f, const uint32_t idx[CBF_K])
{
	for (int i = 0; i < CBF_K; i++) {
		unsigned v = nibble_get(f->counters, idx[i]);

		if (v == CBF_MAX_COUNT) {
			struct side_entry *e = side_find(f, idx[i]);

			if (e == NULL)
				fatalx("%s: saturated counter %u has no count",
				    __func__, idx[i]);
			e->count++;
			continue;
		}
		nibble_set(f->counters, idx[i], v + 1);
		if (v == 0)
			__atomic_fetch_add(&f->nonzero, 1, __ATOMIC_RELAXED);
		if (v + 1 == CBF_MAX_COUNT) {
			side_insert(f, idx[i], CBF_MAX_COUNT);
			__atomic_fetch_add(&f->saturated, 1, __ATOMIC_RELAXED);
		}
	}
}

void
cbf_remove(struct cbf *f, const uint32_t idx[CBF_K])
{
	for (int i = 0; i < CBF_K; i++) {
		unsigned v = nibble_get(f->counters, idx[i]);

		if (v == 0)
			fatalx("%s: counter %u would go below zero", __func__,
			    idx[i]);
		if (v == CBF_MAX_COUNT) {
			struct side_entry *e = side_find(f, idx[i]);

			if (e == NULL)
				fatalx("%s: saturated counter %u has no count",
				    __func__, idx[i]);
			if (--e->count >= CBF_MAX_COUNT)
				continue;
			side_delete(f, e);
			__atomic_fetch_sub(&f->saturated, 1, __ATOMIC_RELAXED);
		}
		nibble_set(f->counters, idx[i], v - 1);
		if (v == 1)
			__atomic_fetch_sub(&f->nonzero, 1, __ATOMIC_RELAXED);
	}
}

unsigned
cbf_counter(const struct cbf *f, uint64_t i)
{
	return nibble_get(f->counters, i);
}

uint64_t
cbf_true_count(const struct cbf *f, uint64_t i)
{
	unsigned v = nibble_get(f->counters, i);
	const struct side_entry *e;

	if (v < CBF_MAX_COUNT)
		return v;
	e = side_find(f, (uint32_t)i);
	return e ? e->count : v;
}

uint64_t
cbf_stat_counters(const struct cbf *f)
{
	return f->m;
}

uint64_t
cbf_stat_nonzero(const struct cbf *f)
{
	return __atomic_load_n(&f->nonzero, __ATOMIC_RELAXED);
}

uint64_t
cbf_stat_saturated(const struct cbf *f)
{
	return __atomic_load_n(&f->saturated, __ATOMIC_RELAXED);
}

uint64_t
cbf_stat_bytes(const struct cbf *f)
{
	uint32_t cap = __atomic_load_n(&f->side_cap, __ATOMIC_RELAXED);

	return f->m / 2 + (uint64_t)cap * sizeof(*f->side);
}
