/*
 * Tests for urlrec: records byte for byte at the offsets urlrec.h documents,
 * and segments built as it prescribes (records in place, then urlseg_init),
 * searched with urlseg_locate and urlseg_find for every record and for many
 * absent fingerprints, against a linear scan of the set the segment was
 * built from.
 *
 * Besides uniform fingerprints, the sets include the shapes that defeat
 * interpolation: every record sharing its first 4 bytes (the fences all
 * equal), a few tight clusters, a skewed spread, and prefixes of 0 and
 * 0xffffffff (the fence past the last record is UINT32_MAX).  A lookup may
 * be slow on those, never wrong.
 *
 * urlrec_sort is checked against qsort, on item sizes and distributions
 * that fill one counting bucket or many; urlrec_cmp_fp against memcmp.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlrec.h"
#include "testutil.h"

/* Segment sizes: empty, one, around a fence (64), and full. */
static const uint32_t sizes[] = {
	0, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum shape {
	SHAPE_UNIFORM,
	SHAPE_SAME4,		/* all share the first 4 bytes */
	SHAPE_HALF_SAME4,	/* half of them do, the rest uniform */
	SHAPE_CLUSTERS,		/* 5 clusters of 2^12 prefixes each */
	SHAPE_SKEWED,		/* prefix shifted right 0..31 bits */
	SHAPE_FEW_PREFIXES,	/* 3 distinct prefixes: fences repeat */
	SHAPE_EXTREMES,		/* prefixes 0 and 0xffffffff, and uniform */
	NSHAPES
};

static const char *shape_names[] = {
	"uniform", "same4", "half-same4", "clusters", "skewed",
	"few-prefixes", "extremes",
};

static void
random_bytes(uint64_t *seed, uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)tu_rand(seed);
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The first 8 bytes of a fingerprint, big-endian: for the scans. */
static uint64_t
prefix64(const uint8_t *fp)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | fp[i];
	return v;
}

static void
shaped_fp(uint64_t *seed, enum shape shape, uint8_t fp[CBF_FP_LEN])
{
	static const uint32_t centres[] = {
		0x00001000u, 0x3fff0000u, 0x40000000u, 0x9abcdef0u, 0xfffff000u,
	};
	static const uint32_t few[] = { 0x11111111u, 0x80000000u, 0x80000001u };
	uint32_t a, b;

	random_bytes(seed, fp, CBF_FP_LEN);
	/* Drawn apart: the order of two draws in one expression is not
	 * defined, and the sets must not depend on the compiler. */
	a = (uint32_t)tu_rand(seed);
	b = (uint32_t)tu_rand(seed);
	switch (shape) {
	case SHAPE_UNIFORM:
		break;
	case SHAPE_SAME4:
		put_be32(fp, 0x5eed5eedu);
		break;
	case SHAPE_HALF_SAME4:
		if (a % 2)
			put_be32(fp, 0x5eed5eedu);
		break;
	case SHAPE_CLUSTERS:
		put_be32(fp, centres[a % 5] + (b >> 20));
		break;
	case SHAPE_SKEWED:
		put_be32(fp, a >> (b % 32));
		break;
	case SHAPE_FEW_PREFIXES:
		put_be32(fp, few[a % 3]);
		break;
	case SHAPE_EXTREMES:
		switch (a % 3) {
		case 0:
			put_be32(fp, 0);
			break;
		case 1:
			put_be32(fp, UINT32_MAX);
			break;
		}
		break;
	default:
		ck_abort_msg("shape %d", shape);
	}
}

static int
cmp_fp(const void *a, const void *b)
{
	return memcmp(a, b, CBF_FP_LEN);
}

/* n distinct fingerprints of a shape, sorted by memcmp. */
static uint8_t (*sorted_fps(uint64_t *seed, enum shape shape, uint32_t n))
    [CBF_FP_LEN]
{
	uint8_t (*fps)[CBF_FP_LEN] = calloc(n + 1, CBF_FP_LEN);
	uint32_t have = 0;

	ck_assert_ptr_nonnull(fps);
	while (have < n) {
		uint32_t k = 0;

		for (uint32_t i = have; i < n; i++)
			shaped_fp(seed, shape, fps[i]);
		qsort(fps, n, CBF_FP_LEN, cmp_fp);
		/* Drop repeats (all but impossible) and draw again. */
		for (uint32_t i = 0; i < n; i++)
			if (k == 0 || memcmp(fps[k - 1], fps[i], CBF_FP_LEN))
				memmove(fps[k++], fps[i], CBF_FP_LEN);
		have = k;
	}
	return fps;
}

static void
random_record(uint64_t *seed, const uint8_t fp[CBF_FP_LEN],
    struct url_record *r)
{
	/* Blocks up to 2^25 - 1, so that every index fits 32 bits. */
	uint32_t block = (uint32_t)tu_rand_below(seed, 1u << 25);

	memcpy(r->fp, fp, CBF_FP_LEN);
	r->st.count = (uint32_t)tu_rand(seed);
	for (int i = 0; i < CBF_K; i++)
		r->idx[i] = block * CBF_BLOCK +
		    (uint32_t)tu_rand_below(seed, CBF_BLOCK);
	r->st.first_seen_ms = tu_rand(seed);
	r->st.last_seen_ms = tu_rand(seed);
	r->st.expires_ms = tu_rand(seed);
	r->st.ns = (uint32_t)tu_rand(seed);
}

static void
assert_record_eq(const struct url_record *a, const struct url_record *b,
    const char *what)
{
	if (memcmp(a->fp, b->fp, CBF_FP_LEN) != 0 ||
	    a->st.count != b->st.count ||
	    memcmp(a->idx, b->idx, sizeof(a->idx)) != 0 ||
	    a->st.first_seen_ms != b->st.first_seen_ms ||
	    a->st.last_seen_ms != b->st.last_seen_ms ||
	    a->st.expires_ms != b->st.expires_ms || a->st.ns != b->st.ns)
		ck_abort_msg("%s: the records differ", what);
}

START_TEST(test_record_round_trip_and_layout)
{
	uint64_t seed = 21;
	uint8_t out[URLREC_LEN], fp[CBF_FP_LEN];

	for (int round = 0; round < 20000; round++) {
		struct url_record r, d;
		uint32_t block;

		random_bytes(&seed, fp, sizeof(fp));
		random_record(&seed, fp, &r);
		block = r.idx[0] / CBF_BLOCK;
		memset(out, 0xa5, sizeof(out));
		if (urlrec_encode(&r, out) != 0)
			ck_abort_msg("round %d: a record in one block refused",
			    round);
		/* The documented layout, read here byte by byte. */
		if (memcmp(out, r.fp, CBF_FP_LEN) != 0 ||
		    le32(out + 16) != r.st.count || le32(out + 20) != block ||
		    le64(out + 32) != r.st.first_seen_ms ||
		    le64(out + 40) != r.st.last_seen_ms ||
		    le64(out + 48) != r.st.expires_ms ||
		    le32(out + 56) != r.st.ns || le32(out + 60) != 0)
			ck_abort_msg("round %d: a field is not where urlrec.h "
			    "puts it", round);
		for (int i = 0; i < CBF_K; i++)
			if (out[24 + i] != r.idx[i] - block * CBF_BLOCK)
				ck_abort_msg("round %d: off[%d] is %u, want %u",
				    round, i, out[24 + i],
				    r.idx[i] - block * CBF_BLOCK);
		memset(&d, 0x5a, sizeof(d));
		urlrec_decode(out, &d);
		assert_record_eq(&r, &d, "decode");
		/* Format 2's reading of the same first 48 bytes. */
		memset(&d, 0x5a, sizeof(d));
		urlrec_decode_v2(out, &d);
		r.st.expires_ms = 0;
		r.st.ns = 0;
		assert_record_eq(&r, &d, "decode_v2");
		if (urlrec_cmp_fp(out, r.fp) != 0)
			ck_abort_msg("round %d: a record differs from its own "
			    "fingerprint", round);
		/* Order: the sign of memcmp. */
		random_bytes(&seed, fp, sizeof(fp));
		if ((urlrec_cmp_fp(out, fp) < 0) != (memcmp(r.fp, fp,
		    CBF_FP_LEN) < 0) || (urlrec_cmp_fp(out, fp) > 0) !=
		    (memcmp(r.fp, fp, CBF_FP_LEN) > 0))
			ck_abort_msg("round %d: urlrec_cmp_fp disagrees with "
			    "memcmp", round);
	}
}
END_TEST

START_TEST(test_record_fixed_bytes)
{
	struct url_record r = {
		.idx = { 5 * 128 + 0, 5 * 128 + 1, 5 * 128 + 127, 5 * 128 + 64,
		    5 * 128 + 2, 5 * 128 + 3, 5 * 128 + 126, 5 * 128 + 9 },
		.st = {
			.count = 0x04030201u,
			.first_seen_ms = 0x1112131415161718ull,
			.last_seen_ms = 0x2122232425262728ull,
			.expires_ms = 0x3132333435363738ull,
			.ns = 0x44434241u,
		},
	};
	static const uint8_t want[URLREC_LEN - CBF_FP_LEN] = {
		0x01, 0x02, 0x03, 0x04,			/* count */
		0x05, 0x00, 0x00, 0x00,			/* block */
		0, 1, 127, 64, 2, 3, 126, 9,		/* off[8] */
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,
		0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31,	/* expires */
		0x41, 0x42, 0x43, 0x44,			/* ns */
		0, 0, 0, 0,				/* reserved */
	};
	uint8_t out[URLREC_LEN];

	for (int i = 0; i < CBF_FP_LEN; i++)
		r.fp[i] = (uint8_t)(0xf0 + i);
	ck_assert_int_eq(urlrec_encode(&r, out), 0);
	for (int i = 0; i < CBF_FP_LEN; i++)
		ck_assert_uint_eq(out[i], 0xf0 + i);
	ck_assert_mem_eq(out + CBF_FP_LEN, want, sizeof(want));
}
END_TEST

START_TEST(test_record_refuses_two_blocks)
{
	uint64_t seed = 22;
	uint8_t out[URLREC_LEN], fp[CBF_FP_LEN] = { 0 };
	struct url_record r;

	for (int round = 0; round < 20000; round++) {
		int which = (int)tu_rand_below(&seed, CBF_K);
		uint32_t block;

		random_record(&seed, fp, &r);
		block = r.idx[0] / CBF_BLOCK;
		/* One index in the block before or after. */
		if (which == 0 || tu_rand_below(&seed, 2))
			r.idx[which] = (block + 1) * CBF_BLOCK +
			    (uint32_t)tu_rand_below(&seed, CBF_BLOCK);
		else if (block > 0)
			r.idx[which] = (block - 1) * CBF_BLOCK +
			    (uint32_t)tu_rand_below(&seed, CBF_BLOCK);
		else
			r.idx[which] = CBF_BLOCK;
		if (urlrec_encode(&r, out) != -1)
			ck_abort_msg("round %d: indices %u and %u of two "
			    "blocks accepted", round, r.idx[0], r.idx[which]);
	}
	/* The edges of a block: 127 and 128 are apart, 0 and 127 are not. */
	for (int i = 0; i < CBF_K; i++)
		r.idx[i] = i % 2 ? 127 : 0;
	ck_assert_int_eq(urlrec_encode(&r, out), 0);
	r.idx[CBF_K - 1] = 128;
	ck_assert_int_eq(urlrec_encode(&r, out), -1);
	for (int i = 0; i < CBF_K; i++)
		r.idx[i] = 128;
	r.idx[3] = 127;
	ck_assert_int_eq(urlrec_encode(&r, out), -1);
}
END_TEST

/* A segment of the n sorted fingerprints, as urlrec.h says to build one. */
static uint8_t *
build_segment(uint64_t *seed, uint8_t (*fps)[CBF_FP_LEN], uint32_t n,
    size_t *len)
{
	uint8_t *seg;

	*len = URLSEG_LEN(n);
	/* Room for a record more, to present wrong lengths. */
	seg = malloc(*len + URLREC_LEN);
	ck_assert_ptr_nonnull(seg);
	memset(seg, 0xee, *len + URLREC_LEN);
	for (uint32_t i = 0; i < n; i++) {
		struct url_record r;

		random_record(seed, fps[i], &r);
		if (urlrec_encode(&r, seg + URLSEG_HEADER +
		    (size_t)i * URLREC_LEN) != 0)
			ck_abort_msg("record %u refused", i);
	}
	urlseg_init(seg, n);
	return seg;
}

static void
check_header(uint8_t *seg, uint8_t (*fps)[CBF_FP_LEN], uint32_t n,
    size_t len)
{
	uint8_t save[4];

	if (le32(seg) != URLSEG_MAGIC || le32(seg + 4) != n)
		ck_abort_msg("n %u: the header says magic %08x, %u records", n,
		    le32(seg), le32(seg + 4));
	for (uint32_t j = 0; j < URLSEG_FENCES; j++) {
		uint32_t want = j * URLSEG_RUN < n ?
		    (uint32_t)fps[j * URLSEG_RUN][0] << 24 |
		    (uint32_t)fps[j * URLSEG_RUN][1] << 16 |
		    (uint32_t)fps[j * URLSEG_RUN][2] << 8 |
		    fps[j * URLSEG_RUN][3] : UINT32_MAX;

		if (le32(seg + 8 + 4 * j) != want)
			ck_abort_msg("n %u: fence %u is %08x, want %08x", n, j,
			    le32(seg + 8 + 4 * j), want);
	}
	for (uint32_t i = 0; i < n; i++)
		if (urlseg_record(seg, i) != seg + URLSEG_HEADER +
		    (size_t)i * URLREC_LEN ||
		    urlrec_cmp_fp(urlseg_record(seg, i), fps[i]) != 0)
			ck_abort_msg("n %u: record %u is not in place", n, i);

	/* The length must be exact, the magic right. */
	if (urlseg_check(seg, len) != (int64_t)n)
		ck_abort_msg("n %u: urlseg_check gives %lld", n,
		    (long long)urlseg_check(seg, len));
	if (urlseg_check(seg, len + 1) != -1 ||
	    urlseg_check(seg, len + URLREC_LEN) != -1 ||
	    urlseg_check(seg, len - 1) != -1 ||
	    urlseg_check(seg, URLSEG_HEADER - 1) != -1 ||
	    urlseg_check(seg, 0) != -1)
		ck_abort_msg("n %u: a wrong length accepted", n);
	if (n > 0 && urlseg_check(seg, len - URLREC_LEN) != -1)
		ck_abort_msg("n %u: a record short accepted", n);
	memcpy(save, seg, 4);
	for (int b = 0; b < 4; b++) {
		seg[b] ^= 0x20;
		if (urlseg_check(seg, len) != -1)
			ck_abort_msg("n %u: a wrong magic accepted", n);
		seg[b] ^= 0x20;
	}
	ck_assert_mem_eq(seg, save, 4);
}

/* The reference: where fp is in the sorted set, by a linear scan. */
static int64_t
linear_find(uint8_t (*fps)[CBF_FP_LEN], const uint64_t *prefix, uint32_t n,
    const uint8_t fp[CBF_FP_LEN])
{
	uint64_t p = prefix64(fp);

	for (uint32_t i = 0; i < n; i++)
		if (prefix[i] == p && memcmp(fps[i], fp, CBF_FP_LEN) == 0)
			return i;
	return -1;
}

struct search_stats {
	uint64_t lookups;
	uint64_t present;
	uint64_t near;		/* present, guess within 8 of the index */
};

/* Locates and finds fp; the answer must be the linear scan's. */
static void
search_one(const uint8_t *seg, uint8_t (*fps)[CBF_FP_LEN],
    const uint64_t *prefix, uint32_t n, const uint8_t fp[CBF_FP_LEN],
    const char *what, struct search_stats *st)
{
	int64_t want = linear_find(fps, prefix, n, fp), got;
	uint32_t lo = UINT32_MAX, hi = UINT32_MAX, guess = UINT32_MAX;

	urlseg_locate(seg, n, fp, &lo, &hi, &guess);
	if (lo > n || hi > n || (lo < hi ? guess < lo || guess >= hi :
	    guess != lo))
		ck_abort_msg("%s, n %u: locate gives [%u, %u) guess %u", what,
		    n, lo, hi, guess);
	got = urlseg_find(seg, lo, hi, guess, fp);
	if (got != want)
		ck_abort_msg("%s, n %u: found at %lld, the scan says %lld "
		    "(locate [%u, %u) guess %u)", what, n, (long long)got,
		    (long long)want, lo, hi, guess);
	if (want >= 0 && ((uint32_t)want < lo || (uint32_t)want >= hi))
		ck_abort_msg("%s, n %u: record %lld outside [%u, %u)", what,
		    n, (long long)want, lo, hi);
	st->lookups++;
	if (want >= 0) {
		int64_t d = (int64_t)guess - want;

		st->present++;
		st->near += d >= -8 && d <= 8;
	}
}

/* Every record, and absent fingerprints of every kind. */
static void
search_all(uint64_t *seed, const uint8_t *seg, uint8_t (*fps)[CBF_FP_LEN],
    uint32_t n, enum shape shape, struct search_stats *st)
{
	uint64_t *prefix = malloc((n + 1) * sizeof(*prefix));
	uint8_t fp[CBF_FP_LEN];
	char what[64];

	ck_assert_ptr_nonnull(prefix);
	for (uint32_t i = 0; i < n; i++)
		prefix[i] = prefix64(fps[i]);
	snprintf(what, sizeof(what), "%s", shape_names[shape]);
	for (uint32_t i = 0; i < n; i++) {
		int64_t at;

		search_one(seg, fps, prefix, n, fps[i], what, st);
		/* The scan must agree on the index: distinct records. */
		at = linear_find(fps, prefix, n, fps[i]);
		if (at != (int64_t)i)
			ck_abort_msg("record %u found by the scan at %lld", i,
			    (long long)at);
	}
	/* Absent: of the set's shape, and uniform. */
	for (uint32_t i = 0; i < n + 64; i++) {
		shaped_fp(seed, shape, fp);
		search_one(seg, fps, prefix, n, fp, "absent, shaped", st);
		random_bytes(seed, fp, sizeof(fp));
		search_one(seg, fps, prefix, n, fp, "absent, uniform", st);
	}
	/* Absent, sharing the first 4 or 8 bytes of a present one, or just
	 * beside it. */
	for (uint32_t i = 0; i < n; i++) {
		memcpy(fp, fps[i], CBF_FP_LEN);
		random_bytes(seed, fp + 4, CBF_FP_LEN - 4);
		search_one(seg, fps, prefix, n, fp, "absent, first 4 bytes",
		    st);
		memcpy(fp, fps[i], CBF_FP_LEN);
		random_bytes(seed, fp + 8, CBF_FP_LEN - 8);
		search_one(seg, fps, prefix, n, fp, "absent, first 8 bytes",
		    st);
		memcpy(fp, fps[i], CBF_FP_LEN);
		fp[CBF_FP_LEN - 1] ^= 1;
		search_one(seg, fps, prefix, n, fp, "absent, last bit", st);
		memcpy(fp, fps[i], CBF_FP_LEN);
		fp[4] ^= 0x80;
		search_one(seg, fps, prefix, n, fp, "absent, fifth byte", st);
	}
	/* Below the first, above the last. */
	memset(fp, 0, sizeof(fp));
	search_one(seg, fps, prefix, n, fp, "all zeros", st);
	memset(fp, 0xff, sizeof(fp));
	search_one(seg, fps, prefix, n, fp, "all ones", st);
	if (n > 0) {
		memcpy(fp, fps[0], CBF_FP_LEN);
		for (int b = CBF_FP_LEN - 1; b >= 0 && fp[b]-- == 0; b--)
			;
		search_one(seg, fps, prefix, n, fp, "before the first", st);
		memcpy(fp, fps[n - 1], CBF_FP_LEN);
		for (int b = CBF_FP_LEN - 1; b >= 0 && ++fp[b] == 0; b--)
			;
		search_one(seg, fps, prefix, n, fp, "after the last", st);
	}
	free(prefix);
}

static void
run_shape(enum shape shape, uint64_t seed)
{
	struct search_stats st = { 0 };

	for (size_t s = 0; s < NSIZES; s++) {
		uint32_t n = sizes[s];
		uint8_t (*fps)[CBF_FP_LEN] = sorted_fps(&seed, shape, n);
		size_t len;
		uint8_t *seg = build_segment(&seed, fps, n, &len);

		check_header(seg, fps, n, len);
		search_all(&seed, seg, fps, n, shape, &st);
		free(seg);
		free(fps);
	}
	printf("urlrec: %s: %llu lookups, %llu present, guess within 8 "
	    "records for %.1f%%\n", shape_names[shape],
	    (unsigned long long)st.lookups, (unsigned long long)st.present,
	    st.present ? 100.0 * st.near / st.present : 0.0);
}

START_TEST(test_segment_uniform)
{
	run_shape(SHAPE_UNIFORM, 31);
}
END_TEST

START_TEST(test_segment_shared_prefix)
{
	run_shape(SHAPE_SAME4, 32);
	run_shape(SHAPE_HALF_SAME4, 33);
	run_shape(SHAPE_FEW_PREFIXES, 34);
}
END_TEST

START_TEST(test_segment_clustered)
{
	run_shape(SHAPE_CLUSTERS, 35);
	run_shape(SHAPE_SKEWED, 36);
	run_shape(SHAPE_EXTREMES, 37);
}
END_TEST

START_TEST(test_segment_records_decode)
{
	/* The records read back through urlseg_record are the ones put. */
	uint64_t seed = 38, rseed;
	uint32_t n = 300;
	uint8_t (*fps)[CBF_FP_LEN] = sorted_fps(&seed, SHAPE_UNIFORM, n);
	size_t len;
	uint8_t *seg;

	rseed = seed;
	seg = build_segment(&seed, fps, n, &len);
	ck_assert_int_eq(urlseg_check(seg, len), n);
	for (uint32_t i = 0; i < n; i++) {
		struct url_record want, got;

		random_record(&rseed, fps[i], &want);
		urlrec_decode(urlseg_record(seg, i), &got);
		assert_record_eq(&want, &got, "segment record");
	}
	free(seg);
	free(fps);
}
END_TEST

START_TEST(test_segment_bad_headers)
{
	/* A count past URLSEG_MAX is refused even with a matching length. */
	size_t len = URLSEG_LEN(URLSEG_MAX + 1);
	uint8_t *seg = calloc(1, len);
	uint8_t (*fps)[CBF_FP_LEN] = calloc(1, CBF_FP_LEN);
	uint64_t seed = 39;
	size_t len0;
	uint8_t *empty;

	ck_assert_ptr_nonnull(seg);
	urlseg_init(seg, URLSEG_MAX + 1);
	ck_assert_int_eq(urlseg_check(seg, len), -1);
	urlseg_init(seg, URLSEG_MAX);
	ck_assert_int_eq(urlseg_check(seg, URLSEG_LEN(URLSEG_MAX)), URLSEG_MAX);
	ck_assert_int_eq(urlseg_check(seg, len), -1);
	/* A huge count must not wrap the length computation. */
	seg[4] = seg[5] = seg[6] = seg[7] = 0xff;
	ck_assert_int_eq(urlseg_check(seg, len), -1);
	free(seg);
	/* The empty segment is its header, with every fence past the end. */
	empty = build_segment(&seed, fps, 0, &len0);
	ck_assert_uint_eq(len0, URLSEG_HEADER);
	ck_assert_int_eq(urlseg_check(empty, len0), 0);
	for (uint32_t j = 0; j < URLSEG_FENCES; j++)
		ck_assert_uint_eq(le32(empty + 8 + 4 * j), UINT32_MAX);
	free(empty);
	free(fps);
}
END_TEST

START_TEST(test_find_any_range)
{
	/* urlseg_find alone: any range, any guess (even outside it), must
	 * find exactly what a scan of that range finds. */
	uint64_t seed = 40;
	uint32_t n = 2000;
	uint8_t (*fps)[CBF_FP_LEN] = sorted_fps(&seed, SHAPE_CLUSTERS, n);
	size_t len;
	uint8_t *seg = build_segment(&seed, fps, n, &len);
	uint8_t fp[CBF_FP_LEN];

	for (int round = 0; round < 50000; round++) {
		uint32_t lo = (uint32_t)tu_rand_below(&seed, n + 1);
		uint32_t hi = lo + (uint32_t)tu_rand_below(&seed, n - lo + 1);
		uint32_t guess = (uint32_t)tu_rand_below(&seed, n + 2);
		int64_t want = -1, got;

		if (tu_rand_below(&seed, 2)) {
			uint32_t i = (uint32_t)tu_rand_below(&seed, n);

			memcpy(fp, fps[i], CBF_FP_LEN);
			if (i >= lo && i < hi)
				want = i;
		} else {
			size_t at;

			memcpy(fp, fps[tu_rand_below(&seed, n)], CBF_FP_LEN);
			at = CBF_FP_LEN - 1 - tu_rand_below(&seed, 12);
			fp[at] ^= (uint8_t)(1 + tu_rand_below(&seed, 255));
			for (uint32_t i = lo; i < hi; i++)
				if (memcmp(fps[i], fp, CBF_FP_LEN) == 0)
					want = i;
		}
		got = urlseg_find(seg, lo, hi, guess, fp);
		if (got != want)
			ck_abort_msg("round %d: [%u, %u) guess %u: %lld, want "
			    "%lld", round, lo, hi, guess, (long long)got,
			    (long long)want);
	}
	free(seg);
	free(fps);
}
END_TEST

START_TEST(test_guess_accuracy)
{
	/* For uniform fingerprints in full segments the fences and the
	 * interpolation put the guess within 8 records of the record for
	 * nearly every lookup: that is what keeps a lookup to one page. */
	uint64_t seed = 41, near = 0, total = 0, exact = 0, sum = 0;

	for (int s = 0; s < 16; s++) {
		uint8_t (*fps)[CBF_FP_LEN] = sorted_fps(&seed, SHAPE_UNIFORM,
		    URLSEG_MAX);
		size_t len;
		uint8_t *seg = build_segment(&seed, fps, URLSEG_MAX, &len);

		for (uint32_t i = 0; i < URLSEG_MAX; i++) {
			uint32_t lo, hi, guess;
			int64_t d;

			urlseg_locate(seg, URLSEG_MAX, fps[i], &lo, &hi,
			    &guess);
			d = (int64_t)guess - i;
			if (d < 0)
				d = -d;
			near += d <= 8;
			exact += d == 0;
			sum += (uint64_t)d;
			total++;
		}
		free(seg);
		free(fps);
	}
	printf("urlrec: guess within 8 records for %.2f%% of %llu lookups "
	    "(exact %.1f%%, mean distance %.2f)\n", 100.0 * near / total,
	    (unsigned long long)total, 100.0 * exact / total,
	    (double)sum / total);
	ck_assert_msg(near * 100 >= total * 95, "guess within 8 records for "
	    "only %.2f%%", 100.0 * near / total);
}
END_TEST

/*
 * urlrec_sort: items of a size, each a fingerprint then a payload naming
 * the item, from distributions that fill one counting bucket or many;
 * checked against qsort.
 */
enum sort_shape {
	SORT_UNIFORM,
	SORT_SAME8,		/* all share 8 bytes: one bucket */
	SORT_CLUSTERS,		/* a few leading values, 24 bits each */
	SORT_DESCENDING,	/* one bucket, in reverse order */
	SORT_DUPLICATES,	/* a few fingerprints, many times each */
	SORT_ZERO_MAX,		/* 00.. and ff.. fingerprints */
	NSORT_SHAPES
};

static size_t sort_size;

/* The reference order: fingerprint, then the rest of the item. */
static int
cmp_item(const void *a, const void *b)
{
	return memcmp(a, b, sort_size);
}

static void
sort_case(uint64_t *seed, enum sort_shape shape, size_t n, size_t size)
{
	const size_t guard = 64;
	uint8_t *items = malloc(n * size + guard), *tmp = malloc(n * size +
	    guard), *want = malloc(n * size + 1);

	ck_assert(items != NULL && tmp != NULL && want != NULL);
	for (size_t i = 0; i < n; i++) {
		uint8_t *p = items + i * size;
		uint64_t hi;

		random_bytes(seed, p, size);
		switch (shape) {
		case SORT_UNIFORM:
			break;
		case SORT_SAME8:
			memset(p, 0x42, 8);
			break;
		case SORT_CLUSTERS:
			hi = tu_rand(seed);
			put_be32(p, (uint32_t)(hi >> 62) << 30 |
			    (uint32_t)(hi & 0xff));
			break;
		case SORT_DESCENDING:
			/* Leading bytes equal, the next ones falling. */
			hi = UINT64_MAX - i;
			memset(p, 0x77, 8);
			for (int b = 0; b < 8; b++)
				p[8 + b] = (uint8_t)(hi >> (56 - 8 * b));
			break;
		case SORT_DUPLICATES:
			memset(p, 0, CBF_FP_LEN);
			p[0] = (uint8_t)tu_rand_below(seed, 3);
			p[15] = (uint8_t)tu_rand_below(seed, 3);
			break;
		case SORT_ZERO_MAX:
			memset(p, tu_rand_below(seed, 2) ? 0xff : 0, 8);
			break;
		default:
			ck_abort_msg("shape %d", shape);
		}
		/* The payload names the item: the output is then a
		 * permutation exactly when it matches the reference. */
		if (size >= CBF_FP_LEN + 4)
			put_be32(p + CBF_FP_LEN, (uint32_t)i);
	}
	memset(items + n * size, 0xc3, guard);
	memset(tmp + n * size, 0xc3, guard);
	memcpy(want, items, n * size);
	sort_size = size;
	qsort(want, n, size, cmp_item);

	if (urlrec_sort(items, n, size, tmp) != 0)
		ck_abort_msg("urlrec_sort failed");
	for (size_t i = 0; i < guard; i++)
		if (items[n * size + i] != 0xc3 || tmp[n * size + i] != 0xc3)
			ck_abort_msg("shape %d, n %zu, size %zu: written past "
			    "the end", shape, n, size);
	for (size_t i = 1; i < n; i++)
		if (memcmp(items + (i - 1) * size, items + i * size,
		    CBF_FP_LEN) > 0)
			ck_abort_msg("shape %d, n %zu, size %zu: items %zu and "
			    "%zu out of order", shape, n, size, i - 1, i);
	/* Equal fingerprints may come in any order: compare as sets. */
	qsort(items, n, size, cmp_item);
	if (n > 0 && memcmp(items, want, n * size) != 0)
		ck_abort_msg("shape %d, n %zu, size %zu: not a permutation of "
		    "the items", shape, n, size);
	free(items);
	free(tmp);
	free(want);
}

START_TEST(test_sort)
{
	static const size_t ns[] = { 0, 1, 2, 3, 5, 64, 1000, 4096, 4097 };
	static const size_t item_sizes[] = { 16, 20, 36, 48, 64 };
	uint64_t seed = 42;

	for (int shape = 0; shape < NSORT_SHAPES; shape++)
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			for (size_t k = 0; k < sizeof(item_sizes) /
			    sizeof(item_sizes[0]); k++)
				sort_case(&seed, shape, ns[i], item_sizes[k]);
	/* Large: many buckets, and the cap on their number's bits. */
	sort_case(&seed, SORT_UNIFORM, 300000, 48);
	sort_case(&seed, SORT_CLUSTERS, 20000, 48);
	sort_case(&seed, SORT_DUPLICATES, 50000, 20);
}
END_TEST

START_TEST(test_cmp_fp)
{
	/* The sign of memcmp over 16 bytes, whatever the alignment. */
	uint8_t buf[64];
	uint64_t seed = 43;

	for (int round = 0; round < 200000; round++) {
		size_t ao = tu_rand_below(&seed, 16), bo = 32 +
		    tu_rand_below(&seed, 16);
		int want, got;

		random_bytes(&seed, buf, sizeof(buf));
		/* Often equal up to a random byte. */
		if (tu_rand_below(&seed, 2)) {
			size_t same = tu_rand_below(&seed, CBF_FP_LEN + 1);

			memcpy(buf + bo, buf + ao, same);
		}
		want = memcmp(buf + ao, buf + bo, CBF_FP_LEN);
		got = urlrec_cmp_fp(buf + ao, buf + bo);
		if ((want > 0) != (got > 0) || (want < 0) != (got < 0))
			ck_abort_msg("round %d: %d, memcmp %d", round, got,
			    want);
		if (urlrec_be64(buf + ao) != prefix64(buf + ao))
			ck_abort_msg("round %d: urlrec_be64", round);
	}
}
END_TEST

Suite *urlrec_suite(void);

Suite *
urlrec_suite(void)
{
	Suite *s = suite_create("urlrec");
	TCase *tc = tcase_create("urlrec");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_record_round_trip_and_layout);
	tcase_add_test(tc, test_record_fixed_bytes);
	tcase_add_test(tc, test_record_refuses_two_blocks);
	tcase_add_test(tc, test_segment_uniform);
	tcase_add_test(tc, test_segment_shared_prefix);
	tcase_add_test(tc, test_segment_clustered);
	tcase_add_test(tc, test_segment_records_decode);
	tcase_add_test(tc, test_segment_bad_headers);
	tcase_add_test(tc, test_find_any_range);
	tcase_add_test(tc, test_guess_accuracy);
	tcase_add_test(tc, test_sort);
	tcase_add_test(tc, test_cmp_fp);
	suite_add_tcase(s, tc);
	return s;
}
