/*
 * urlmem: the URLs changed since the last flush.  See urlmem.h.
 *
 * A slot is eight 64-bit words, one cache line, each read and written with
 * relaxed atomics: fingerprint (2), count and generation, first seen, last
 * seen, expiry, namespace, and the sequence counter with the record's
 * original place (segment, 20 bits, and slot, 12 bits: see urlidx.h and
 * urlrec.h).  The writer stores an odd
 * sequence, fences (release), writes the words, and stores the even
 * sequence with release; a reader loads the sequence with acquire, copies
 * the words, fences (acquire) and compares.
 */
#include "urlmem.h"

#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t fp[2];
	uint64_t count_gen;		/* count | generation << 32 */
	uint64_t first_ms;
	uint64_t last_ms;
	uint64_t expires_ms;
	uint64_t ns;
	uint64_t seq_orig;		/* place | sequence << 32 */
};

#define ORIG_SLOT_BITS 12

struct urlmem {
	struct slot *slots;
	size_t nslots;
	size_t capacity;		/* entries taken, at most */
	size_t count;			/* read by anyone: atomic */
	uint32_t gen;			/* the current generation, from 1 */
};

static uint64_t
load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void
store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static uint64_t
fp_word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static size_t
home(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN])
{
	/* The fingerprint is an MD5: any of its bits are uniform.  Bits of
	 * both halves, mixed, keep this table apart from the others'. */
	uint64_t h = (fp_word(fp) ^ fp_word(fp + 8)) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(((unsigned __int128)h * m->nslots) >> 64);
}

static size_t
next(const struct urlmem *m, size_t i)
{
	return i + 1 == m->nslots ? 0 : i + 1;
}

static uint64_t
orig_word(uint32_t seg, uint32_t slot)
{
	return (uint64_t)(seg << ORIG_SLOT_BITS | slot);
}

struct urlmem *
urlmem_new(size_t capacity)
{
	struct urlmem *m;
	size_t n = capacity / 3 * 4 + 16;	/* at most 3/4 full */

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	if ((m->slots = calloc(n, sizeof(struct slot))) == NULL) {
		free(m);
		return NULL;
	}
	m->nslots = n;
	m->capacity = capacity;
	m->gen = 1;
	return m;
}

void
urlmem_free(struct urlmem *m)
{
	if (m == NULL)
		return;
	free(m->slots);
	free(m);
}

size_t
urlmem_count(const struct urlmem *m)
{
	return __atomic_load_n(&m->count, __ATOMIC_RELAXED);
}

size_t
urlmem_capacity(const struct urlmem *m)
{
	return m->capacity;
}

size_t
urlmem_bytes(const struct urlmem *m)
{
	return sizeof(*m) + m->nslots * sizeof(struct slot);
}

static void
slot_copy(const struct slot *s, uint64_t seq_orig, struct urlmem_entry *out)
{
	uint64_t fp[2] = { load(&s->fp[0]), load(&s->fp[1]) };
	uint32_t orig = (uint32_t)seq_orig;

	memcpy(out->fp, fp, sizeof(out->fp));
	out->st.count = (uint32_t)load(&s->count_gen);
	out->st.ns = (uint32_t)load(&s->ns);
	out->st.first_seen_ms = load(&s->first_ms);
	out->st.last_seen_ms = load(&s->last_ms);
	out->st.expires_ms = load(&s->expires_ms);
	out->orig_seg = orig >> ORIG_SLOT_BITS;
	out->orig_slot = orig & ((1u << ORIG_SLOT_BITS) - 1);
}

static bool
slot_holds(const struct slot *s, uint32_t gen, uint64_t f0, uint64_t f1)
{
	return (uint32_t)(load(&s->count_gen) >> 32) == gen &&
	    load(&s->fp[0]) == f0 && load(&s->fp[1]) == f1;
}

bool
urlmem_lookup(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN],
    struct urlmem_entry *out)
{
	uint32_t gen = __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
	uint64_t f0 = fp_word(fp), f1 = fp_word(fp + 8);

	for (size_t i = home(m, fp), probes = 0; probes < m->nslots;
	    i = next(m, i), probes++) {
		const struct slot *s = &m->slots[i];
		uint64_t so;
		bool mine, used;

		for (;;) {
			so = __atomic_load_n(&s->seq_orig, __ATOMIC_ACQUIRE);
			if (so >> 32 & 1)
				continue;
			used = (uint32_t)(load(&s->count_gen) >> 32) == gen;
			mine = used && slot_holds(s, gen, f0, f1);
			if (mine)
				slot_copy(s, so, out);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (load(&s->seq_orig) == so)
				break;
		}
		if (mine)
			return true;
		if (!used)
			return false;
	}
	return false;
}

void
urlmem_prefetch(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN])
{
	__builtin_prefetch(&m->slots[home(m, fp)]);
}

/* Writer: the slot of fp, or the empty slot where it would go. */
static struct slot *
find(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN], bool *found)
{
	uint64_t f0 = fp_word(fp), f1 = fp_word(fp + 8);
	size_t i = home(m, fp);

	for (;; i = next(m, i)) {
		struct slot *s = &m->slots[i];

		if ((uint32_t)(s->count_gen >> 32) != m->gen) {
			*found = false;
			return s;
		}
		if (s->fp[0] == f0 && s->fp[1] == f1) {
			*found = true;
			return s;
		}
	}
}

bool
urlmem_get(const struct urlmem *m, const uint8_t fp[CBF_FP_LEN],
    struct urlmem_entry *out)
{
	bool found;
	struct slot *s = find(m, fp, &found);

	if (found)
		slot_copy(s, s->seq_orig, out);
	return found;
}

int
urlmem_put(struct urlmem *m, const struct urlmem_entry *e)
{
	bool found;
	struct slot *s;
	uint64_t fp[2], seq;

	if (e->orig_seg >= 1u << (32 - ORIG_SLOT_BITS) ||
	    e->orig_slot >= 1u << ORIG_SLOT_BITS)
		return -1;
	s = find(m, e->fp, &found);
	if (!found && m->count >= m->capacity)
		return -1;
	memcpy(fp, e->fp, sizeof(fp));
	seq = s->seq_orig >> 32;
	store(&s->seq_orig, (seq + 1) << 32 | (uint32_t)s->seq_orig);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	store(&s->fp[0], fp[0]);
	store(&s->fp[1], fp[1]);
	store(&s->first_ms, e->st.first_seen_ms);
	store(&s->last_ms, e->st.last_seen_ms);
	store(&s->expires_ms, e->st.expires_ms);
	store(&s->ns, e->st.ns);
	store(&s->count_gen, e->st.count | (uint64_t)m->gen << 32);
	__atomic_store_n(&s->seq_orig, (seq + 2) << 32 |
	    orig_word(e->orig_seg, e->orig_slot), __ATOMIC_RELEASE);
	if (!found)
		__atomic_store_n(&m->count, m->count + 1, __ATOMIC_RELAXED);
	return 0;
}

void
urlmem_clear(struct urlmem *m)
{
	if (m->gen == UINT32_MAX) {
		/* Once in 4 billion clears: old generations could come back;
		 * wipe them (readers see empty slots, and find the store). */
		for (size_t i = 0; i < m->nslots; i++) {
			struct slot *s = &m->slots[i];
			uint64_t seq = s->seq_orig >> 32;

			store(&s->seq_orig, (seq + 1) << 32);
			__atomic_thread_fence(__ATOMIC_RELEASE);
			store(&s->count_gen, 0);
			__atomic_store_n(&s->seq_orig, (seq + 2) << 32,
			    __ATOMIC_RELEASE);
		}
		__atomic_store_n(&m->gen, 1, __ATOMIC_RELEASE);
	} else
		__atomic_store_n(&m->gen, m->gen + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&m->count, 0, __ATOMIC_RELAXED);
}

uint32_t
urlmem_generation(const struct urlmem *m)
{
	return __atomic_load_n(&m->gen, __ATOMIC_ACQUIRE);
}

void
urlmem_foreach(const struct urlmem *m,
    void (*fn)(const struct urlmem_entry *e, void *arg), void *arg)
{
	struct urlmem_entry e;

	for (size_t i = 0; i < m->nslots; i++) {
		if ((uint32_t)(m->slots[i].count_gen >> 32) != m->gen)
			continue;
		slot_copy(&m->slots[i], m->slots[i].seq_orig, &e);
		fn(&e, arg);
	}
}
