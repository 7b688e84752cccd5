/*
 * simhash_scalar: the portable kernel, one byte at a time.  See
 * simhash_impl.h for the frame.  simhash_scalar_run (simhash.c) is also
 * the path the vectorised kernels take for the bytes they leave aside (the
 * ends of windows, very long terms); this kernel takes it only for those
 * too, and has a faster loop of its own for the rest of a window:
 *
 *  Terms.  No branch on the bytes: for each byte the running sdbm is
 *    multiplied by 65599 and the byte added, the result masked to 0 at a
 *    SPACE (the mask from a table), and the hash and end of the term
 *    before are written out each time, the count of terms going up by one
 *    where a term ends.  A branch per term end would be mispredicted
 *    about as often as it is taken.  The window is cut at a SPACE near
 *    its middle and both halves run interleaved: the multiply-add chain
 *    of one stream is 5 cycles a byte, two chains overlap.  The ends are
 *    written only when stop words are to be removed (not for preprocessed
 *    input).
 *  Filter.  In batches: stop words through the perfect hash table of
 *    simhash_impl.h, the term's key read from the window (its last 16
 *    bytes, those before it made SPACE), rather than a search in the list;
 *    then fmix64.
 *  Count.  8 hashes at a time through a carry-save adder tree
 *    (Harley-Seal) into bit-sliced ones, twos, fours and eights; only the
 *    eights are spread into byte counters (byte b of a[k]: bit 8b + k),
 *    which are emptied into 64-bit counters before they can overflow.
 */
#include "simhash_impl.h"

#include <string.h>

/* Terms gathered before they are filtered and counted. */
#define SCALAR_BATCH 64

/* The kernel's counters, in acc->kstate. */
struct scalar_state {
	uint64_t a[8];			/* byte b of a[k]: bit 8b + k */
	uint64_t ones, twos, fours;	/* bit-sliced, not yet in a */
	unsigned max;			/* no byte of a is above this */
};

_Static_assert(sizeof(struct scalar_state) <=
    sizeof(((struct simhash_acc *)0)->kstate), "kstate too small");

#define SCALAR_ONES 0x0101010101010101ULL
#define SCALAR_SPACES 0x2020202020202020ULL

static void
simhash_scalar_normalize(uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = textbytes_norm[src[i]];
}

static struct scalar_state *
scalar_state(struct simhash_acc *acc)
{
	struct scalar_state *st = (struct scalar_state *)(void *)acc->kstate;

	if (!acc->kstate_used) {
		memset(st, 0, sizeof(*st));
		acc->kstate_used = 1;
	}
	return st;
}

/* Adds the byte counters to cnt and clears them (rare). */
static void
scalar_empty(struct scalar_state *st, struct simhash_acc *acc)
{
	int k, b;

	if (!acc->cnt_used) {
		memset(acc->cnt, 0, sizeof(acc->cnt));
		acc->cnt_used = 1;
	}
	for (k = 0; k < 8; k++) {
		for (b = 0; b < 8; b++)
			acc->cnt[8 * b + k] += (st->a[k] >> (8 * b)) & 0xff;
		st->a[k] = 0;
	}
	st->max = 0;
}

/* a[k] += w * (bit k of each byte of x), w = 1 << sh. */
static inline void
scalar_add_bits(struct scalar_state *st, uint64_t x, int sh)
{
	int k;

	for (k = 0; k < 8; k++)
		st->a[k] += ((x >> k) & SCALAR_ONES) << sh;
}

/* The carry-save adder: h:l = a + b + c, bit by bit. */
#define SCALAR_CSA(h, l, a, b, c) do {					\
	uint64_t u_ = (a) ^ (b);					\
									\
	h = ((a) & (b)) | (u_ & (c));					\
	l = u_ ^ (c);							\
} while (0)

static void
scalar_count(struct simhash_acc *acc, const uint64_t *h, size_t n)
{
	struct scalar_state *st = scalar_state(acc);
	uint64_t ones = st->ones, twos = st->twos, fours = st->fours;
	uint64_t t2a, t2b, f4a, f4b, e8, c;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		SCALAR_CSA(t2a, ones, ones, h[i], h[i + 1]);
		SCALAR_CSA(t2b, ones, ones, h[i + 2], h[i + 3]);
		SCALAR_CSA(f4a, twos, twos, t2a, t2b);
		SCALAR_CSA(t2a, ones, ones, h[i + 4], h[i + 5]);
		SCALAR_CSA(t2b, ones, ones, h[i + 6], h[i + 7]);
		SCALAR_CSA(f4b, twos, twos, t2a, t2b);
		SCALAR_CSA(e8, fours, fours, f4a, f4b);
		/* Each eight adds 8; with ones, twos, fours at most 7 more. */
		if (st->max > 255 - 8 - 7)
			scalar_empty(st, acc);
		st->max += 8;
		scalar_add_bits(st, e8, 3);
	}
	/* The last few one at a time, carrying through the levels. */
	for (; i < n; i++) {
		c = ones & h[i];
		ones ^= h[i];
		e8 = twos & c;
		twos ^= c;
		c = fours & e8;
		fours ^= e8;
		if (c != 0) {
			if (st->max > 255 - 8 - 7)
				scalar_empty(st, acc);
			st->max += 8;
			scalar_add_bits(st, c, 3);
		}
	}
	st->ones = ones;
	st->twos = twos;
	st->fours = fours;
}

/* Bit i is set iff at least half the occurrences have it (ties give 1). */
static uint64_t
scalar_finish(struct simhash_acc *acc)
{
	struct scalar_state *st = scalar_state(acc);
	uint64_t half = (acc->nterms + 1) / 2, v = 0, n;
	int k, b;

	if (st->max > 255 - 7)
		scalar_empty(st, acc);
	scalar_add_bits(st, st->ones, 0);
	scalar_add_bits(st, st->twos, 1);
	scalar_add_bits(st, st->fours, 2);
	st->ones = st->twos = st->fours = 0;
	st->max += 7;
	for (k = 0; k < 8; k++) {
		for (b = 0; b < 8; b++) {
			n = (st->a[k] >> (8 * b)) & 0xff;
			if (acc->cnt_used)
				n += acc->cnt[8 * b + k];
			v |= (uint64_t)(n >= half) << (8 * b + k);
		}
	}
	return v;
}

/*
 * -1 for the bytes of terms, 0 for SPACE: one load rather than a compare
 * and its conversion to a mask.
 */
static const int8_t scalar_in_term[256] = {
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/* keep[k]: the top k bytes of a word. */
static const uint64_t scalar_keep[9] = {
	0, 0xff00000000000000ULL, 0xffff000000000000ULL,
	0xffffff0000000000ULL, 0xffffffff00000000ULL, 0xffffffffff000000ULL,
	0xffffffffffff0000ULL, 0xffffffffffffff00ULL, 0xffffffffffffffffULL,
};

static inline uint64_t
scalar_load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/*
 * Whether the term of len bytes ending at p + e is a stop word.  At least
 * before bytes before p are readable.  Without a branch on the term in the
 * common case (a table, a term under 16 bytes, 16 bytes readable before
 * its end): half the terms of English text are stop words.
 */
static inline int
scalar_stop(const struct simhash_acc *acc, const uint8_t *p, size_t before,
    size_t e, size_t len, uint64_t sdbm)
{
	const struct simhash *sh = acc->sh;
	const struct simhash_stoptab *tab = &sh->tab;
	uint64_t lo, hi, klo, khi;
	size_t slot, nlo;

	if (__builtin_expect(!sh->have_tab || len > SIMHASH_STOP_FAST_MAX ||
	    e + before < 16, 0))
		return len <= sh->stop_max && stopwords_contains(sh->sw,
		    p + e - len, len);
	/* The key: the term right-aligned, SPACE before it. */
	nlo = len < 8 ? len : 8;
	klo = scalar_keep[nlo];
	khi = scalar_keep[len - nlo];
	lo = (scalar_load64(p + e - 8) & klo) | (SCALAR_SPACES & ~klo);
	hi = (scalar_load64(p + e - 16) & khi) | (SCALAR_SPACES & ~khi);
	slot = simhash_stop_slot(tab, sdbm);
	return (len <= sh->stop_max) & (tab->lo[slot] == lo) &
	    (tab->hi[slot] == hi);
}

/*
 * Filters and counts n terms: hash h[i], end e[i] & 0xffff, length
 * e[i] >> 16 (e is NULL, and unused, without stop words).
 */
static void
scalar_terms(struct simhash_acc *acc, const uint8_t *p, size_t before,
    const uint64_t *h, const uint32_t *e, size_t n)
{
	uint64_t out[SCALAR_BATCH];
	size_t i, m = 0;

	if (acc->stop) {
		for (i = 0; i < n; i++) {
			out[m] = h[i];
			m += !scalar_stop(acc, p, before, e[i] & 0xffff,
			    e[i] >> 16, h[i]);
		}
	} else {
		memcpy(out, h, n * sizeof(*h));
		m = n;
	}
	if (acc->fmix)
		for (i = 0; i < m; i++)
			out[i] = fmix64(out[i]);
	acc->nterms += m;
	scalar_count(acc, out, m);
}

/*
 * Byte i of a stream (h, len: its running term; th, te, ne: the terms it
 * has ended, hash and end | length << 16).  Both the hash and the term
 * end are written each time; ne goes up where a term ends, which is
 * where the length falls (to 0).  The length is kept shifted left by 16
 * where the ends are written, ready to be or'ed in.  The hash is masked
 * after the multiply-add rather than its operands before: one operation
 * less, on a chain that two streams overlap anyway.
 */
#define SCALAR_STEP(i, h, len, th, te, ne) do {				\
	uint64_t c_ = p[i];						\
	uint64_t keep_ = (uint64_t)(int64_t)scalar_in_term[c_];		\
	uint32_t nlen_ = (len + (ends ? 0x10000 : 1)) &			\
	    (uint32_t)keep_;						\
									\
	th[ne] = h;							\
	if (ends)							\
		te[ne] = (uint32_t)(i) | len;				\
	ne += len > nlen_;						\
	h = (h * SIMHASH_SDBM_MULT + c_) & keep_;			\
	len = nlen_;							\
	if (ne == SCALAR_BATCH) {					\
		scalar_terms(acc, p, before, th, ends ? te : NULL, ne);	\
		ne = 0;							\
	}								\
} while (0)

/*
 * The terms of p[s..t): p[s - 1] (if readable) and p[t - 1] are SPACE,
 * unless t is the document's end.  ends: whether the filter needs the
 * terms' ends (stop words); one copy each way, no test in the loop.
 */
static inline __attribute__((always_inline)) void
scalar_window(struct simhash_acc *acc, const uint8_t *p, size_t before,
    size_t s, size_t t, const int ends)
{
	uint64_t tha[SCALAR_BATCH + 1], thb[SCALAR_BATCH + 1], ha = 0, hb = 0;
	/* Lengths, shifted left by 16 if ends is set (see SCALAR_STEP). */
	uint32_t tea[SCALAR_BATCH + 1], teb[SCALAR_BATCH + 1], la = 0, lb = 0;
	size_t m, i, k, na = 0, nb = 0;
	const uint8_t *q;

	/*
	 * Two streams, [s, m) and [m, t), m just after a SPACE near the
	 * middle, interleaved: each byte's multiply waits for the one
	 * before in its stream only, so two chains run at once.
	 */
	m = s + (t - s) / 2;
	if ((q = memchr(p + m, ' ', t - m)) != NULL)
		m = (size_t)(q - p) + 1;
	else
		m = t;
	for (i = s, k = m; i < m && k < t; i++, k++) {
		SCALAR_STEP(i, ha, la, tha, tea, na);
		SCALAR_STEP(k, hb, lb, thb, teb, nb);
	}
	for (; i < m; i++)
		SCALAR_STEP(i, ha, la, tha, tea, na);
	for (; k < t; k++)
		SCALAR_STEP(k, hb, lb, thb, teb, nb);
	/* The document's end ends its last term (the first stream's if m is t). */
	if (la != 0) {
		tha[na] = ha;
		tea[na++] = (uint32_t)m | la;
	}
	if (lb != 0) {
		thb[nb] = hb;
		teb[nb++] = (uint32_t)t | lb;
	}
	if (na > 0)
		scalar_terms(acc, p, before, tha, ends ? tea : NULL, na);
	if (nb > 0)
		scalar_terms(acc, p, before, thb, ends ? teb : NULL, nb);
}

static void
scalar_window_stop(struct simhash_acc *acc, const uint8_t *p, size_t before,
    size_t s, size_t t)
{
	scalar_window(acc, p, before, s, t, 1);
}

static void
scalar_window_nostop(struct simhash_acc *acc, const uint8_t *p, size_t before,
    size_t s, size_t t)
{
	scalar_window(acc, p, before, s, t, 0);
}

static void
simhash_scalar_kernel_run(struct simhash_acc *acc, struct simhash_scratch *sc,
    const uint8_t *p, size_t n, size_t before, int final)
{
	size_t s = 0, t;
	const uint8_t *q;

	(void)sc;
	if (n == 0)
		return;
	/* Windows are at most SIMHASH_WINDOW (te's 16 bits). */
	if (acc->part_len > 0) {
		if ((s = simhash_finish_carried(acc, p, n)) == n)
			return;
		s++;
	}
	if (final)
		t = n;
	else if ((q = memrchr(p + s, ' ', n - s)) != NULL)
		t = (size_t)(q - p) + 1;
	else {
		simhash_scalar_run(acc, p + s, n - s);
		return;
	}
	if (acc->stop)
		scalar_window_stop(acc, p, before, s, t);
	else
		scalar_window_nostop(acc, p, before, s, t);
	if (t < n)
		simhash_scalar_run(acc, p + t, n - t);
}

const struct simhash_kernel simhash_kernel_scalar = {
	.level = SIMHASH_SIMD_SCALAR,
	.normalize = simhash_scalar_normalize,
	.run = simhash_scalar_kernel_run,
	.count = scalar_count,
	.finish = scalar_finish,
};
