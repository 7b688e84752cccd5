/*
 * sketch: a document's shingle sketch.  See sketch.h.
 *
 * One pass over the text, a window at a time: the window normalised as
 * simhash's kernels normalise (separators to SPACE, letters folded), its
 * terms found from a bit mask of its SPACE bytes, each term hashed and
 * looked up among the stop words mostly without a branch (window()),
 * each kept term hashed; each run of SKETCH_SHINGLE term hashes makes a
 * shingle hash, which a set of the document's hashes counts once (its
 * smallest selected at the end) or, past SKETCH_EXACT_MAX, a max-heap of
 * the SKETCH_K smallest keeps.  The set is why the count is exact.
 */
#include "sketch.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "fmix64.h"
#include "html.h"
#include "simhash_impl.h"	/* the stop words' fast table */
#include "stopwords.h"
#include "textbytes.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Bytes of text read at a time (stripped from HTML, or normalised). */
#define SKETCH_WINDOW 16384
/* Readable bytes around a window's normalised text: a term's bytes are
 * loaded as the 16 that end with it, and SPACE pads the end. */
#define NORM_BEFORE	16
#define NORM_AFTER	64
/* Terms a window can hold: a byte and a separator each. */
#define WINDOW_TERMS	(SKETCH_WINDOW / 2 + 1)
/* Where a term longer than any stop word stops being kept. */
#define SKETCH_TERM_KEEP (STOPWORDS_MAX_LEN + 1)

struct sketch_scratch {
	/* The stop words of at most 15 bytes, one probe each (simhash's
	 * table), built for stop_of; have_fast: one could be (else every
	 * term goes through stopwords_contains, as in simhash). */
	const struct stopwords *stop_of;
	struct simhash_stoptab fast;
	bool have_fast;
	/* A window of normalised text (NORM_BEFORE into buf), its SPACE
	 * bytes as bits, and the hashes of the terms it keeps. */
	uint8_t buf[NORM_BEFORE + SKETCH_WINDOW + NORM_AFTER];
	uint64_t spaces[SKETCH_WINDOW / 64 + 2];
	uint64_t kept[WINDOW_TERMS];
	uint32_t *set;		/* open addressing, 0 = empty */
	size_t set_cap;		/* a power of two */
	uint32_t *filled;	/* the slots a document filled, to clear */
	uint32_t *vals;		/* their values, to select the smallest */
	uint8_t win[SKETCH_WINDOW];
};

/* The state of one document's pass. */
struct pass {
	struct sketch_scratch *sc;
	const struct stopwords *sw;
	/* The term being read. */
	uint8_t term[SKETCH_TERM_KEEP];
	size_t term_len;
	uint64_t term_h;	/* sdbm so far */
	/* The last terms' hashes, and how many terms there were. */
	uint64_t ring[SKETCH_SHINGLE];
	uint64_t terms;
	/* The distinct hashes: counted, and the smallest kept in a heap. */
	size_t set_used;
	bool zero_seen;		/* hash 0, which the set cannot hold */
	bool overflow;		/* past SKETCH_EXACT_MAX */
	uint32_t distinct;
	uint32_t heap[SKETCH_K];
	uint32_t nheap;
};

struct sketch_scratch *
sketch_scratch_new(void)
{
	return calloc(1, sizeof(struct sketch_scratch));
}

void
sketch_scratch_free(struct sketch_scratch *sc)
{
	if (sc == NULL)
		return;
	free(sc->set);
	free(sc->filled);
	free(sc->vals);
	simhash_stoptab_free(&sc->fast);
	free(sc);
}

static inline uint64_t
rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/* The hash of a shingle of terms a, b, c (in that order); a shorter
 * document's one shingle has 0 for its missing terms. */
static inline uint32_t
shingle_hash(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint32_t)(fmix64(rotl64(a, 42) ^ rotl64(b, 21) ^ c ^
	    0x6e64646473686e67ULL) >> 32);
}

/* Sifts the heap's top down (a max-heap of the smallest hashes). */
static void
heap_down(uint32_t *h, uint32_t n, uint32_t i)
{
	uint32_t v = h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

/* Whether v is a hash the heap already holds (the set's overflow only). */
static bool
heap_has(const struct pass *ps, uint32_t v)
{
	for (uint32_t i = 0; i < ps->nheap; i++)
		if (ps->heap[i] == v)
			return true;
	return false;
}

/* Counts v in the set; whether it is new there. */
static bool
set_add(struct pass *ps, uint32_t v)
{
	struct sketch_scratch *sc = ps->sc;
	size_t mask = sc->set_cap - 1, i;

	if (v == 0) {
		bool was = ps->zero_seen;

		ps->zero_seen = true;
		return !was;
	}
	i = (size_t)(v * 0x9E3779B1u) & mask;
	while (sc->set[i] != 0) {
		if (sc->set[i] == v)
			return false;
		i = (i + 1) & mask;
	}
	sc->set[i] = v;
	sc->filled[ps->set_used++] = (uint32_t)i;
	return true;
}

/* Doubles the set; -1 when memory is short. */
static int
set_grow(struct pass *ps)
{
	struct sketch_scratch *sc = ps->sc;
	size_t cap = sc->set_cap * 2, mask = cap - 1;
	uint32_t *old = sc->set, *set = calloc(cap, sizeof(*set));
	uint32_t *filled = malloc(cap / 2 * sizeof(*filled));
	uint32_t *vals = malloc(cap / 2 * sizeof(*vals));

	if (set == NULL || filled == NULL || vals == NULL) {
		free(set);
		free(filled);
		free(vals);
		return -1;
	}
	for (size_t j = 0; j < ps->set_used; j++) {
		uint32_t v = old[sc->filled[j]];
		size_t i = (size_t)(v * 0x9E3779B1u) & mask;

		while (set[i] != 0)
			i = (i + 1) & mask;
		set[i] = v;
		filled[j] = (uint32_t)i;
	}
	free(old);
	free(sc->filled);
	free(sc->vals);
	sc->set = set;
	sc->filled = filled;
	sc->vals = vals;
	sc->set_cap = cap;
	return 0;
}

/*
 * The k smallest of v[0..n) (distinct) into out, ascending: selected in
 * place, then placed by their top PLACE_BITS bits below the largest (one
 * counting pass: hashes are uniform, so about one of SKETCH_K falls in
 * each bucket) and put in order by an insertion sort, which has little
 * left to do.
 */
#define PLACE_BITS	7
_Static_assert(1u << PLACE_BITS >= SKETCH_K, "a bucket a hash or fewer");

static void
smallest(uint32_t *v, size_t n, uint32_t k, uint32_t *out)
{
	size_t lo = 0, hi = n;
	uint32_t count[(1u << PLACE_BITS) + 1] = { 0 }, max = 0;
	unsigned shift = 0;

	/* Quickselect (Lomuto's partition, the values distinct): v[0..k)
	 * are the k smallest once the pivot lands at k - 1 or k. */
	while (k < n && hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2, store = lo;
		uint32_t a = v[lo], b = v[mid], c = v[hi - 1], pivot, t;
		size_t at = a < b ? (b < c ? mid : (a < c ? hi - 1 : lo)) :
		    (a < c ? lo : (b < c ? hi - 1 : mid));

		pivot = v[at];
		v[at] = v[hi - 1];
		v[hi - 1] = pivot;
		/* Without a branch: whether a hash is below the pivot is a
		 * coin toss, which a branch would mispredict half the time. */
		for (size_t i = lo; i + 1 < hi; i++) {
			t = v[i];
			v[i] = v[store];
			v[store] = t;
			store += t < pivot;
		}
		v[hi - 1] = v[store];
		v[store] = pivot;
		if (store == k || store + 1 == k)
			break;
		if (k < store)
			hi = store;
		else
			lo = store + 1;
	}
	if (k > n)
		k = (uint32_t)n;
	for (uint32_t i = 0; i < k; i++)
		max = v[i] > max ? v[i] : max;
	if (max >> PLACE_BITS != 0)
		shift = 32 - PLACE_BITS - (unsigned)__builtin_clz(max);
	for (uint32_t i = 0; i < k; i++)
		count[(v[i] >> shift) + 1]++;
	for (uint32_t d = 0; d < 1u << PLACE_BITS; d++)
		count[d + 1] += count[d];
	for (uint32_t i = 0; i < k; i++)
		out[count[v[i] >> shift]++] = v[i];
	for (uint32_t i = 1; i < k; i++) {
		uint32_t x = out[i], j = i;

		for (; j > 0 && out[j - 1] > x; j--)
			out[j] = out[j - 1];
		out[j] = x;
	}
}

/*
 * One shingle hash of the document: counted in the set (its smallest are
 * selected at the end); past SKETCH_EXACT_MAX distinct ones, kept in a
 * max-heap of the smallest instead.
 */
static int
add_hash(struct pass *ps, uint32_t v)
{
	struct sketch_scratch *sc = ps->sc;

	if (!ps->overflow) {
		if (!set_add(ps, v))
			return 0;
		ps->distinct++;
		if (ps->distinct >= SKETCH_EXACT_MAX) {
			/* The smallest so far, descending: a max-heap. */
			uint32_t asc[SKETCH_K];

			for (size_t j = 0; j < ps->set_used; j++)
				sc->vals[j] = sc->set[sc->filled[j]];
			smallest(sc->vals, ps->set_used, SKETCH_K, asc);
			for (uint32_t i = 0; i < SKETCH_K; i++)
				ps->heap[i] = asc[SKETCH_K - 1 - i];
			ps->nheap = SKETCH_K;
			ps->overflow = true;
		} else if (ps->set_used * 2 >= sc->set_cap &&
		    set_grow(ps) == -1)
			return -1;
		return 0;
	}
	if (v >= ps->heap[0] || heap_has(ps, v))
		return 0;
	ps->heap[0] = v;
	heap_down(ps->heap, SKETCH_K, 0);
	return 0;
}

/* The fast table of sw's stop words; -1 when memory is short. */
static int
stop_table_build(struct sketch_scratch *sc, const struct stopwords *sw)
{
	int rc;

	simhash_stoptab_free(&sc->fast);
	sc->have_fast = false;
	sc->stop_of = NULL;
	if ((rc = simhash_stoptab_build(&sc->fast, sw)) == -1)
		return -1;
	sc->have_fast = rc == 0;
	sc->stop_of = sw;
	return 0;
}

/* Whether the term (len bytes, folded) is one of the pass's stop words:
 * the way of the terms the fast table cannot tell (longer than 15 bytes,
 * carried from window to window, or of a list too large for one). */
static bool
stop_word(const struct pass *ps, const uint8_t *term, size_t len)
{
	return ps->sw != NULL && len <= STOPWORDS_MAX_LEN &&
	    stopwords_contains(ps->sw, term, len);
}

/* A kept term, h its hash (fmix64 of its sdbm), after the last ones:
 * with the two before it, a shingle. */
static int
push_term(struct pass *ps, uint64_t h)
{
	ps->ring[ps->terms % SKETCH_SHINGLE] = h;
	ps->terms++;
	if (ps->terms < SKETCH_SHINGLE)
		return 0;
	return add_hash(ps, shingle_hash(
	    ps->ring[(ps->terms - 3) % SKETCH_SHINGLE],
	    ps->ring[(ps->terms - 2) % SKETCH_SHINGLE],
	    ps->ring[(ps->terms - 1) % SKETCH_SHINGLE]));
}

/* The term carried from window to window ends: dropped if a stop word,
 * else pushed. */
static int
end_term(struct pass *ps)
{
	uint64_t h = ps->term_h;
	size_t len = ps->term_len;

	if (len == 0)
		return 0;
	ps->term_len = 0;
	ps->term_h = 0;
	if (stop_word(ps, ps->term, len))
		return 0;
	return push_term(ps, fmix64(h));
}

/* The carried term goes on with p[0..n), normalised. */
static void
term_extend(struct pass *ps, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ps->term_h = ps->term_h * SIMHASH_SDBM_MULT + p[i];
		if (ps->term_len < SKETCH_TERM_KEEP)
			ps->term[ps->term_len] = p[i];
		ps->term_len++;
	}
}

/* Where the first set bit at or after i is (a set bit follows every
 * window: its padding). */
static inline size_t
next_set(const uint64_t *bits, size_t i)
{
	size_t w = i >> 6;
	uint64_t x = bits[w] & (~0ull << (i & 63));

	while (x == 0)
		x = bits[++w];
	return (w << 6) + (size_t)__builtin_ctzll(x);
}

/* Where the first clear bit at or after i is, or n when none is below n. */
static inline size_t
next_clear(const uint64_t *bits, size_t i, size_t n)
{
	size_t w = i >> 6, nw = (n + 63) >> 6;
	uint64_t x;

	if (i >= n)
		return n;
	x = ~bits[w] & (~0ull << (i & 63));
	while (x == 0) {
		if (++w >= nw)
			return n;
		x = ~bits[w];
	}
	return (w << 6) + (size_t)__builtin_ctzll(x);
}

/* The SPACE bytes of p[0..n) as bits, 64 a word (the last word's bits
 * past n: the padding's, SPACE), then a word of set bits. */
static void
space_bits(const uint8_t *p, size_t n, uint64_t *bits)
{
	size_t nw = (n + 63) / 64;

	_Static_assert(NORM_AFTER >= 64, "the last word reads padding");
	bits[nw] = ~0ull;
	for (size_t w = 0; w < nw; w++) {
		uint64_t m = 0;
#ifdef __SSE2__
		const __m128i sp = _mm_set1_epi8(' ');

		for (int k = 0; k < 4; k++)
			m |= (uint64_t)(uint16_t)_mm_movemask_epi8(
			    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)
			    (p + 64 * w + 16 * k)), sp)) << (16 * k);
#else
		for (int k = 0; k < 64; k++)
			m |= (uint64_t)(p[64 * w + k] == ' ') << k;
#endif
		bits[w] = m;
	}
}

static uint64_t
load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* SIMHASH_SDBM_MULT^i. */
#define SDBM_P1	SIMHASH_SDBM_MULT
#define SDBM_P2	(SDBM_P1 * SDBM_P1)
#define SDBM_P3	(SDBM_P2 * SDBM_P1)
#define SDBM_P4	(SDBM_P3 * SDBM_P1)
#define SDBM_P5	(SDBM_P4 * SDBM_P1)
#define SDBM_P6	(SDBM_P5 * SDBM_P1)
#define SDBM_P7	(SDBM_P6 * SDBM_P1)
#define SDBM_P8	(SDBM_P7 * SDBM_P1)
#define B(x, k)	((x) >> (8 * (k)) & 0xff)

/* sdbm of 8 bytes, the first in the low byte of x. */
static inline uint64_t
sdbm8(uint64_t x)
{
	return B(x, 0) * SDBM_P7 + B(x, 1) * SDBM_P6 + B(x, 2) * SDBM_P5 +
	    B(x, 3) * SDBM_P4 + B(x, 4) * SDBM_P3 + B(x, 5) * SDBM_P2 +
	    B(x, 6) * SDBM_P1 + B(x, 7);
}

/* sdbm of the 16 bytes of hi then lo (leading 0 bytes add nothing). */
static inline uint64_t
sdbm16(uint64_t hi, uint64_t lo)
{
	return sdbm8(hi) * SDBM_P8 + sdbm8(lo);
}
#undef B

/* The low bytes of a word: a byte's position in the text is its place in
 * the word on little-endian CPUs. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FAST_TERMS 1
#else
#define FAST_TERMS 0
#endif

/*
 * The terms of a window's normalised text w[0..n) (SPACE separates; the
 * bytes before w and NORM_AFTER past n readable, those past n SPACE):
 * a term that goes on from the last window first, then each whole term,
 * and a term that reaches n is carried on.  A term of 16 bytes or fewer
 * is read at once as the 16 bytes that end with it, the bytes before it
 * masked off: its sdbm a sum of 16 products that do not wait for each
 * other, and its stop-word key (simhash's: SPACE on the left) the same
 * bytes, so that one probe and two compares decide.  The kept terms'
 * hashes are pushed after the window's last, in order.
 */
static int
window(struct pass *ps, const uint8_t *w, size_t n)
{
	struct sketch_scratch *sc = ps->sc;
	const struct simhash_stoptab *ft = &sc->fast;
	bool fast_stop = ps->sw != NULL && sc->have_fast;
	size_t i = 0, nk = 0;

	space_bits(w, n, sc->spaces);
	if (ps->term_len > 0) {
		i = next_set(sc->spaces, 0);
		term_extend(ps, w, i < n ? i : n);
		if (i >= n)
			return 0;
		if (end_term(ps) == -1)
			return -1;
	}
	for (;;) {
		size_t s = next_clear(sc->spaces, i, n), e, len;
		uint64_t h = 0;
		bool stop = false;

		if (s >= n)
			break;
		e = next_set(sc->spaces, s);
		if (e >= n) {
			term_extend(ps, w + s, n - s);
			break;
		}
		len = e - s;
		if (FAST_TERMS && len <= 16) {
			uint64_t lo = load64(w + e - 8), hi = load64(w + e - 16);
			uint64_t mlo = len >= 8 ? ~0ull : ~0ull << (64 - 8 * len);
			uint64_t mhi = len <= 8 ? 0 : ~0ull << (128 - 8 * len);

			lo &= mlo;
			hi &= mhi;
			h = sdbm16(hi, lo);
			if (fast_stop && len <= SIMHASH_STOP_FAST_MAX) {
				size_t slot = simhash_stop_slot(ft, h);
				const uint64_t sp = 0x2020202020202020ull;

				stop = (ft->lo[slot] == (lo | (sp & ~mlo))) &
				    (ft->hi[slot] == (hi | (sp & ~mhi)));
			} else
				stop = stop_word(ps, w + s, len);
		} else {
			for (size_t k = s; k < e; k++)
				h = h * SIMHASH_SDBM_MULT + w[k];
			stop = stop_word(ps, w + s, len);
		}
		sc->kept[nk] = fmix64(h);
		nk += !stop;
		i = e;
	}
	for (size_t k = 0; k < nk; k++)
		if (push_term(ps, sc->kept[k]) == -1)
			return -1;
	return 0;
}

/*
 * Reads n bytes of text a window at a time, each byte normalised (SPACE
 * for a separator, letters folded: textbytes_norm, by the simhash
 * kernel's vector code where it has one), or as it is when preprocessed
 * (where only SPACE separates).
 */
static int
feed(struct pass *ps, const uint8_t *p, size_t n, bool preprocessed)
{
	const struct simhash_kernel *kern = simhash_kernel();
	uint8_t *w = ps->sc->buf + NORM_BEFORE;

	for (size_t at = 0; at < n; at += SKETCH_WINDOW) {
		size_t k = n - at < SKETCH_WINDOW ? n - at : SKETCH_WINDOW;

		if (preprocessed)
			memcpy(w, p + at, k);
		else if (kern->normalize != NULL)
			kern->normalize(w, p + at, k);
		else
			for (size_t i = 0; i < k; i++)
				w[i] = textbytes_norm[p[at + i]];
		memset(w + k, ' ', NORM_AFTER);
		if (window(ps, w, k) == -1)
			return -1;
	}
	return 0;
}

/* The max-heap h[0..n) sorted ascending, in place (heapsort's second
 * half). */
static void
heap_sort(uint32_t *h, uint32_t n)
{
	while (n > 1) {
		uint32_t top = h[0];

		h[0] = h[--n];
		heap_down(h, n, 0);
		h[n] = top;
	}
}

/*
 * Clears the slots the last document filled (not the whole set: a large
 * document's set stays for the next, small ones cost what they use), and
 * makes the set if this is the first.  The set doubles as it fills, up to
 * SKETCH_EXACT_MAX * 2 slots.
 */
static int
set_reset(struct sketch_scratch *sc, size_t used)
{
	for (size_t j = 0; j < used; j++)
		sc->set[sc->filled[j]] = 0;
	if (sc->set != NULL)
		return 0;
	sc->set_cap = 1024;
	if ((sc->set = calloc(sc->set_cap, sizeof(*sc->set))) == NULL ||
	    (sc->filled = malloc(sc->set_cap / 2 * sizeof(*sc->filled))) ==
	    NULL || (sc->vals = malloc(sc->set_cap / 2 *
	    sizeof(*sc->vals))) == NULL) {
		free(sc->set);
		free(sc->filled);
		sc->set = NULL;
		sc->filled = NULL;
		return -1;
	}
	return 0;
}

int
sketch_compute(const struct stopwords *sw, struct sketch_scratch *sc,
    enum simhash_input input, const void *doc, size_t len,
    struct sketch *out)
{
	struct pass *ps;
	struct html_strip hs;
	size_t w;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		return -1;
	ps->sc = sc;
	ps->sw = input == SIMHASH_INPUT_PREPROCESSED ? NULL : sw;
	if (set_reset(sc, 0) == -1 || (ps->sw != NULL && sc->stop_of != sw &&
	    stop_table_build(sc, sw) == -1))
		goto out;
	if (input == SIMHASH_INPUT_HTML) {
		html_strip_init(&hs, doc, len);
		while ((w = html_strip_next(&hs, sc->win, sizeof(sc->win))) > 0)
			if (feed(ps, sc->win, w, false) == -1)
				goto out;
	} else if (feed(ps, doc, len, input == SIMHASH_INPUT_PREPROCESSED) ==
	    -1)
		goto out;
	if (end_term(ps) == -1)
		goto out;
	/* Fewer terms than a shingle: one shingle of them all, its missing
	 * terms 0 (no term hashes to 0: fmix64 maps only 0 there). */
	if (ps->terms == 1 && add_hash(ps, shingle_hash(0, 0,
	    ps->ring[0])) == -1)
		goto out;
	if (ps->terms == 2 && add_hash(ps, shingle_hash(0, ps->ring[0],
	    ps->ring[1])) == -1)
		goto out;
	if (!ps->overflow) {
		for (size_t j = 0; j < ps->set_used; j++)
			sc->vals[j] = sc->set[sc->filled[j]];
		out->n = ps->set_used < SKETCH_K ? (uint32_t)ps->set_used :
		    SKETCH_K;
		smallest(sc->vals, ps->set_used, out->n, out->h);
	} else {
		out->n = ps->nheap;
		memcpy(out->h, ps->heap, ps->nheap * sizeof(out->h[0]));
		heap_sort(out->h, out->n);
	}
	out->shingles = ps->distinct;
	if (ps->overflow && out->n == SKETCH_K) {
		/* k - 1 hashes below the k-th, spread evenly over 2^32. */
		double est = (double)(SKETCH_K - 1) * 4294967296.0 /
		    ((double)out->h[SKETCH_K - 1] + 1.0);

		if (est > (double)out->shingles)
			out->shingles = est >= 4294967295.0 ? UINT32_MAX :
			    (uint32_t)est;
	}
	rc = 0;
out:
	/* Empty for the next document. */
	if (sc->set != NULL)
		set_reset(sc, ps->set_used);
	free(ps);
	return rc;
}

size_t
sketch_keys(const struct sketch *s, uint32_t keys[SKETCH_KEYS])
{
	size_t n = s->n < SKETCH_KEYS ? s->n : SKETCH_KEYS;

	memcpy(keys, s->h, n * sizeof(keys[0]));
	return n;
}

/* How many of s's hashes are at most t (they ascend). */
static uint32_t
count_at_most(const struct sketch *s, uint64_t t)
{
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (s->h[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many of their first na and nb hashes a and b share: a merge
 * without branches to mispredict. */
static uint32_t
common_scalar(const struct sketch *a, uint32_t na, const struct sketch *b,
    uint32_t nb)
{
	uint32_t i = 0, j = 0, both = 0;

	while (i < na && j < nb) {
		uint32_t x = a->h[i], y = b->h[j];

		both += x == y;
		i += x <= y;
		j += y <= x;
	}
	return both;
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The same, a block of hashes at a time: every hash of b's block compared
 * at once with all of a's block, then the block that ends lower passed
 * (both, when they end alike), as the merge passes single hashes.  Blocks
 * are compared only when their ranges meet, and each hash is in one
 * block of its side, so each shared hash is counted once.  A block never
 * reads past a sketch's SKETCH_K hashes (its lanes past na are left out
 * of the count), and b's hashes past nb are never compared.
 */
_Static_assert(SKETCH_K % 16 == 0, "vector blocks tile a sketch");

__attribute__((target("avx512f"))) static uint32_t
common_avx512(const struct sketch *a, uint32_t na, const struct sketch *b,
    uint32_t nb)
{
	uint32_t i = 0, j = 0, both = 0;

	while (i < na && j < nb) {
		uint32_t ea = na - i < 16 ? na - i : 16;
		uint32_t eb = nb - j < 16 ? nb - j : 16;
		uint32_t la = a->h[i + ea - 1], lb = b->h[j + eb - 1];
		__m512i va = _mm512_loadu_si512(a->h + i);
		__mmask16 eq = 0;

		for (uint32_t k = 0; k < eb; k++)
			eq |= _mm512_cmpeq_epi32_mask(va,
			    _mm512_set1_epi32((int)b->h[j + k]));
		both += (uint32_t)__builtin_popcount(eq & ((1u << ea) - 1));
		i += la <= lb ? 16 : 0;
		j += lb <= la ? 16 : 0;
	}
	return both;
}

__attribute__((target("avx2"))) static uint32_t
common_avx2(const struct sketch *a, uint32_t na, const struct sketch *b,
    uint32_t nb)
{
	uint32_t i = 0, j = 0, both = 0;

	while (i < na && j < nb) {
		uint32_t ea = na - i < 8 ? na - i : 8;
		uint32_t eb = nb - j < 8 ? nb - j : 8;
		uint32_t la = a->h[i + ea - 1], lb = b->h[j + eb - 1];
		__m256i va = _mm256_loadu_si256((const __m256i *)(a->h + i));
		__m256i eq = _mm256_setzero_si256();

		for (uint32_t k = 0; k < eb; k++)
			eq = _mm256_or_si256(eq, _mm256_cmpeq_epi32(va,
			    _mm256_set1_epi32((int)b->h[j + k])));
		both += (uint32_t)__builtin_popcount((unsigned)
		    _mm256_movemask_ps(_mm256_castsi256_ps(eq)) &
		    ((1u << ea) - 1));
		i += la <= lb ? 8 : 0;
		j += lb <= la ? 8 : 0;
	}
	return both;
}
#endif

/* The shared hashes counted by the vector level simhash uses, so that
 * one setting ([simhash] simd) chooses for both. */
static uint32_t
common(const struct sketch *a, uint32_t na, const struct sketch *b,
    uint32_t nb)
{
#if defined(__x86_64__) && defined(__GNUC__)
	switch (simhash_simd_active()) {
	case SIMHASH_SIMD_AVX512:
		return common_avx512(a, na, b, nb);
	case SIMHASH_SIMD_AVX2:
		return common_avx2(a, na, b, nb);
	default:
		break;
	}
#endif
	return common_scalar(a, na, b, nb);
}

void
sketch_compare(const struct sketch *a, const struct sketch *b,
    struct sketch_similarity *out)
{
	/* A sketch that holds every hash of its set samples all of it;
	 * one that holds SKETCH_K samples those up to its largest. */
	uint64_t ta = a->shingles > a->n ? a->h[a->n - 1] : UINT64_MAX;
	uint64_t tb = b->shingles > b->n ? b->h[b->n - 1] : UINT64_MAX;
	uint64_t t = ta < tb ? ta : tb;
	uint32_t na = count_at_most(a, t), nb = count_at_most(b, t);
	uint32_t both = common(a, na, b, nb), either;
	double jac, inter, small;

	out->resemblance = 0;
	out->containment = 0;
	if ((either = na + nb - both) == 0)
		return;
	jac = (double)both / either;
	/* |A n B| = J (|A| + |B|) / (1 + J). */
	inter = jac * ((double)a->shingles + b->shingles) / (1.0 + jac);
	small = a->shingles < b->shingles ? a->shingles : b->shingles;
	out->resemblance = (float)jac;
	out->containment = small > 0 ? (float)(inter >= small ? 1.0 :
	    inter / small) : 0;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

size_t
sketch_encode(const struct sketch *s, uint8_t *out)
{
	out[0] = SKETCH_VERSION;
	out[1] = (uint8_t)s->n;
	put32(out + 2, s->shingles);
	for (uint32_t i = 0; i < s->n; i++)
		put32(out + 6 + 4 * i, s->h[i]);
	return 6 + 4 * (size_t)s->n;
}

int
sketch_decode(const void *data, size_t len, struct sketch *out)
{
	const uint8_t *p = data;
	uint32_t n, bad = 0;

	if (len < 6 || p[0] != SKETCH_VERSION || (n = p[1]) > SKETCH_K ||
	    len != 6 + 4 * (size_t)n)
		return -1;
	out->n = n;
	out->shingles = get32(p + 2);
	if (n != (out->shingles < SKETCH_K ? out->shingles : SKETCH_K))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		out->h[i] = get32(p + 6 + 4 * i);
	/* In order and distinct, checked without an early exit, which the
	 * compiler can vectorise: every candidate of a verified answer is
	 * decoded. */
	for (uint32_t i = 1; i < n; i++)
		bad |= out->h[i] <= out->h[i - 1];
	return bad ? -1 : 0;
}
