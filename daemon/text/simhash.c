/*
 * simhash: the engine's front end.  See simhash.h for the definition and
 * simhash_impl.h for how the work is split between here and the kernels.
 *
 * This file holds what every level shares: options, names, the choice of
 * kernel, the stop-word table, windows, the accumulator and its scalar
 * paths (carried terms, rare long terms), and the final fingerprint.
 */
#include "simhash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "simhash_impl.h"
#include "stopwords.h"
#include "textbytes.h"

const uint64_t simhash_pow[17] = {
	0x0000000000000001ULL, 0x000000000001003fULL,
	0x00000001007e0f81ULL, 0x000100bd2e86d0bfULL,
	0x00fc5d1543ec5f01ULL, 0x9b302c28162c613fULL,
	0x5d02f409d62aee81ULL, 0xd7c3e496a311b1bfULL,
	0xfdcbe423d319be01ULL, 0x5950f7eab156c23fULL,
	0xf2d7b4186698cd81ULL, 0x772db89a0d1b92bfULL,
	0x0cda7b04cc881d01ULL, 0xa4c912b67280233fULL,
	0xa0320d6650c7ac81ULL, 0x79b79cf58da473bfULL,
	0x91252e124f377c01ULL,
};

static const char *simhash_simd_names[] = {
	[SIMHASH_SIMD_AUTO] = "auto",
	[SIMHASH_SIMD_SCALAR] = "scalar",
	[SIMHASH_SIMD_AVX2] = "avx2",
	[SIMHASH_SIMD_AVX512] = "avx512",
};

struct simhash_profile simhash_profile;

/* The selected kernel; NULL until the first use or selection. */
static const struct simhash_kernel *simhash_active;

const char *
simhash_term_hash_name(enum simhash_term_hash th)
{
	switch (th) {
	case SIMHASH_TERM_HASH_SDBM_FMIX64:
		return "sdbm-fmix64";
	case SIMHASH_TERM_HASH_SDBM:
		return "sdbm";
	}
	return NULL;
}

int
simhash_term_hash_parse(const char *name, enum simhash_term_hash *out)
{
	if (strcmp(name, "sdbm-fmix64") == 0)
		*out = SIMHASH_TERM_HASH_SDBM_FMIX64;
	else if (strcmp(name, "sdbm") == 0)
		*out = SIMHASH_TERM_HASH_SDBM;
	else
		return -1;
	return 0;
}

const char *
simhash_simd_name(enum simhash_simd level)
{
	if ((unsigned)level >= sizeof(simhash_simd_names) /
	    sizeof(simhash_simd_names[0]))
		return NULL;
	return simhash_simd_names[level];
}

int
simhash_simd_parse(const char *name, enum simhash_simd *out)
{
	size_t i;

	for (i = 0; i < sizeof(simhash_simd_names) /
	    sizeof(simhash_simd_names[0]); i++) {
		if (strcmp(name, simhash_simd_names[i]) == 0) {
			*out = (enum simhash_simd)i;
			return 0;
		}
	}
	return -1;
}

int
simhash_simd_supported(enum simhash_simd level)
{
	switch (level) {
	case SIMHASH_SIMD_AUTO:
	case SIMHASH_SIMD_SCALAR:
		return 1;
#if defined(__x86_64__) && defined(__GNUC__)
	case SIMHASH_SIMD_AVX2:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("bmi2") &&
		    __builtin_cpu_supports("popcnt");
	case SIMHASH_SIMD_AVX512:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512vl") &&
		    __builtin_cpu_supports("avx512dq") &&
		    __builtin_cpu_supports("avx512cd") &&
		    __builtin_cpu_supports("avx512vbmi") &&
		    __builtin_cpu_supports("avx512vbmi2") &&
		    __builtin_cpu_supports("avx512bitalg") &&
		    __builtin_cpu_supports("gfni") &&
		    __builtin_cpu_supports("bmi2") &&
		    __builtin_cpu_supports("popcnt");
#else
	case SIMHASH_SIMD_AVX2:
	case SIMHASH_SIMD_AVX512:
		return 0;
#endif
	}
	return 0;
}

static const struct simhash_kernel *
simhash_kernel_of(enum simhash_simd level)
{
	switch (level) {
	case SIMHASH_SIMD_AVX512:
		return &simhash_kernel_avx512;
	case SIMHASH_SIMD_AVX2:
		return &simhash_kernel_avx2;
	default:
		return &simhash_kernel_scalar;
	}
}

int
simhash_simd_select(enum simhash_simd level, char **cause)
{
	if (level == SIMHASH_SIMD_AUTO) {
		if (simhash_simd_supported(SIMHASH_SIMD_AVX512))
			level = SIMHASH_SIMD_AVX512;
		else if (simhash_simd_supported(SIMHASH_SIMD_AVX2))
			level = SIMHASH_SIMD_AVX2;
		else
			level = SIMHASH_SIMD_SCALAR;
	} else if (simhash_simd_name(level) == NULL ||
	    !simhash_simd_supported(level)) {
		if (asprintf(cause, "this CPU cannot run the %s code",
		    simhash_simd_name(level) != NULL ?
		    simhash_simd_name(level) : "unknown") == -1)
			*cause = NULL;
		return -1;
	}
	__atomic_store_n(&simhash_active, simhash_kernel_of(level),
	    __ATOMIC_RELEASE);
	return 0;
}

const struct simhash_kernel *
simhash_kernel(void)
{
	const struct simhash_kernel *k;
	char *cause = NULL;

	k = __atomic_load_n(&simhash_active, __ATOMIC_ACQUIRE);
	if (k == NULL) {
		simhash_simd_select(SIMHASH_SIMD_AUTO, &cause);
		k = __atomic_load_n(&simhash_active, __ATOMIC_ACQUIRE);
	}
	return k;
}

enum simhash_simd
simhash_simd_active(void)
{
	return simhash_kernel()->level;
}

void
simhash_prefetch(const void *doc, size_t len)
{
	const char *p = doc;
	size_t off;

	/* The first KiB: the hardware prefetcher takes over from there. */
	for (off = 0; off < len && off < 1024; off += 64)
		__builtin_prefetch(p + off);
}

uint64_t
simhash_fmix64(uint64_t h)
{
	return fmix64(h);
}

uint64_t
simhash_term(enum simhash_term_hash th, const void *term, size_t len)
{
	const uint8_t *p = term;
	uint64_t h = 0;

	while (len-- > 0)
		h = h * SIMHASH_SDBM_MULT + *p++;
	return th == SIMHASH_TERM_HASH_SDBM ? h : fmix64(h);
}

void
simhash_format(uint64_t fp, char out[SIMHASH_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = SIMHASH_HEX_LEN - 1; i >= 0; i--) {
		out[i] = hex[fp & 0xf];
		fp >>= 4;
	}
	out[SIMHASH_HEX_LEN] = '\0';
}

int
simhash_byte_is_separator(uint8_t c)
{
	return textbytes_is_separator(c);
}

uint8_t
simhash_byte_fold(uint8_t c)
{
	return textbytes_fold(c);
}

static void *
simhash_alloc64(size_t size)
{
	void *p;

	return posix_memalign(&p, 64, size) == 0 ? p : NULL;
}

/*
 * The key of a stop word of at most 15 bytes: right-aligned in 16 bytes,
 * SPACE on the left.
 */
static void
simhash_stop_key(const char *w, size_t n, uint64_t *hi, uint64_t *lo)
{
	uint8_t b[16];

	memset(b, ' ', sizeof(b));
	memcpy(b + 16 - n, w, n);
	memcpy(hi, b, 8);
	memcpy(lo, b + 8, 8);
}

static uint64_t
simhash_splitmix(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int
simhash_stoptab_build(struct simhash_stoptab *t, const struct stopwords *sw)
{
	const char *const *words = stopwords_list(sw);
	uint64_t *h = NULL, seed = 0x6e646464u;
	uint32_t mul = 0;
	uint32_t *stamp = NULL;
	size_t n = 0, i, bits, m, tries, try;
	int rc = -1, found = 0;

	for (i = 0; words[i] != NULL; i++)
		if (strlen(words[i]) <= SIMHASH_STOP_FAST_MAX)
			n++;
	if ((h = calloc(n + 1, sizeof(*h))) == NULL)
		goto out;
	for (i = 0, n = 0; words[i] != NULL; i++)
		if (strlen(words[i]) <= SIMHASH_STOP_FAST_MAX)
			h[n++] = simhash_term(SIMHASH_TERM_HASH_SDBM, words[i],
			    strlen(words[i]));
	/* n^2 / 2m <= 8: a collision-free multiplier within ~3000 tries. */
	for (bits = 6; bits < 16 && (double)n * n / (2.0 * (1u << bits)) > 8;
	    bits++)
		;
	for (; bits <= 16 && !found; bits++) {
		m = (size_t)1 << bits;
		free(stamp);
		if ((stamp = calloc(m, sizeof(*stamp))) == NULL)
			goto out;
		tries = 30000;
		for (try = 1; try <= tries && !found; try++) {
			mul = (uint32_t)simhash_splitmix(&seed) | 1;
			t->mul = mul;
			t->shift = (unsigned)(32 - bits);
			found = 1;
			for (i = 0; i < n; i++) {
				size_t s = simhash_stop_slot(t, h[i]);

				if (stamp[s] == (uint32_t)try) {
					found = 0;
					break;
				}
				stamp[s] = (uint32_t)try;
			}
		}
		if (found)
			break;
	}
	if (!found) {
		rc = 1;
		goto out;
	}
	m = (size_t)1 << bits;
	t->bits = (unsigned)bits;
	t->shift = (unsigned)(32 - bits);
	t->mul = mul;
	if ((t->lo = simhash_alloc64(m * sizeof(uint64_t))) == NULL ||
	    (t->hi = simhash_alloc64(m * sizeof(uint64_t))) == NULL)
		goto out;
	for (i = 0; i < m; i++)
		t->lo[i] = t->hi[i] = 0x2020202020202020ULL;
	for (i = 0; words[i] != NULL; i++) {
		size_t len = strlen(words[i]), s;

		if (len > SIMHASH_STOP_FAST_MAX)
			continue;
		s = simhash_stop_slot(t, simhash_term(SIMHASH_TERM_HASH_SDBM,
		    words[i], len));
		simhash_stop_key(words[i], len, &t->hi[s], &t->lo[s]);
	}
	rc = 0;
out:
	free(h);
	free(stamp);
	return rc;
}

struct simhash *
simhash_new(enum simhash_term_hash th, const struct stopwords *sw,
    char **cause)
{
	struct simhash *sh;
	int rc;

	if (simhash_term_hash_name(th) == NULL) {
		*cause = strdup("unknown term hash");
		return NULL;
	}
	if ((sh = calloc(1, sizeof(*sh))) == NULL)
		goto err;
	sh->th = th;
	if (sw != NULL && stopwords_count(sw) > 0) {
		sh->sw = sw;
		sh->stop_max = stopwords_max_len(sw);
		if ((rc = simhash_stoptab_build(&sh->tab, sw)) == -1)
			goto err;
		sh->have_tab = rc == 0;
	}
	/* Choose the kernel now, before threads use it. */
	simhash_kernel();
	return sh;
err:
	simhash_free(sh);
	*cause = strdup(strerror(ENOMEM));
	return NULL;
}

void
simhash_free(struct simhash *sh)
{
	if (sh == NULL)
		return;
	simhash_stoptab_free(&sh->tab);
	free(sh);
}

void
simhash_stoptab_free(struct simhash_stoptab *t)
{
	free(t->lo);
	free(t->hi);
	t->lo = t->hi = NULL;
}

enum simhash_term_hash
simhash_term_hash_of(const struct simhash *sh)
{
	return sh->th;
}

const struct stopwords *
simhash_stopwords(const struct simhash *sh)
{
	return sh->sw;
}

struct simhash_scratch *
simhash_scratch_new(void)
{
	struct simhash_scratch *sc;

	if ((sc = simhash_alloc64(sizeof(*sc))) == NULL)
		return NULL;
	memset(sc, 0, offsetof(struct simhash_scratch, acc));
	sc->window = SIMHASH_WINDOW;
	sc->buf = simhash_alloc64(SIMHASH_PAD + SIMHASH_WINDOW + 64);
	sc->stage = simhash_alloc64(SIMHASH_STAGE_SIZE);
	if (sc->buf == NULL || sc->stage == NULL) {
		simhash_scratch_free(sc);
		return NULL;
	}
	memset(sc->buf, ' ', SIMHASH_PAD + SIMHASH_WINDOW + 64);
	sc->win = sc->buf + SIMHASH_PAD;
	return sc;
}

void
simhash_scratch_free(struct simhash_scratch *sc)
{
	if (sc == NULL)
		return;
	free(sc->buf);
	free(sc->stage);
	free(sc);
}

void
simhash_scratch_set_window(struct simhash_scratch *sc, size_t window)
{
	if (window < HTML_STRIP_MIN_OUT)
		window = HTML_STRIP_MIN_OUT;
	if (window > SIMHASH_WINDOW)
		window = SIMHASH_WINDOW;
	sc->window = window;
}

void
simhash_acc_init(struct simhash_acc *acc, const struct simhash *sh,
    enum simhash_input input)
{
	acc->cnt_used = 0;
	acc->nterms = 0;
	acc->sh = sh;
	acc->k = simhash_kernel();
	acc->stop = input != SIMHASH_INPUT_PREPROCESSED && sh->sw != NULL;
	acc->fmix = sh->th == SIMHASH_TERM_HASH_SDBM_FMIX64;
	acc->part_h = 0;
	acc->part_len = 0;
	acc->npend = 0;
	acc->kstate_used = 0;
}

void
simhash_count_scalar(struct simhash_acc *acc, const uint64_t *h, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL;
	uint64_t a[8];
	size_t m, j;
	int k, b;

	if (!acc->cnt_used && n > 0) {
		memset(acc->cnt, 0, sizeof(acc->cnt));
		acc->cnt_used = 1;
	}
	while (n > 0) {
		m = n < 255 ? n : 255;
		memset(a, 0, sizeof(a));
		for (j = 0; j < m; j++)
			for (k = 0; k < 8; k++)
				a[k] += (h[j] >> k) & ones;
		for (k = 0; k < 8; k++)
			for (b = 0; b < 8; b++)
				acc->cnt[8 * b + k] += (a[k] >> (8 * b)) & 0xff;
		h += m;
		n -= m;
	}
}

uint64_t
simhash_finish_scalar(struct simhash_acc *acc)
{
	uint64_t v = 0, half = (acc->nterms + 1) / 2;
	int i;

	if (!acc->cnt_used)
		return 0;
	/* V[i] = cnt[i] - (nterms - cnt[i]) >= 0, ties give 1. */
	for (i = 0; i < 64; i++)
		v |= (uint64_t)(acc->cnt[i] >= half) << i;
	return v;
}

void
simhash_acc_flush(struct simhash_acc *acc)
{
	if (acc->npend > 0)
		acc->k->count(acc, acc->pend, acc->npend);
	acc->npend = 0;
}

void
simhash_acc_term(struct simhash_acc *acc, uint64_t sdbm,
    const uint8_t *term, size_t len)
{
	if (acc->stop && len <= acc->sh->stop_max &&
	    stopwords_contains(acc->sh->sw, term, len))
		return;
	acc->pend[acc->npend++] = acc->fmix ? fmix64(sdbm) :
	    sdbm;
	acc->nterms++;
	if (acc->npend == SIMHASH_PEND)
		simhash_acc_flush(acc);
}

void
simhash_scalar_run(struct simhash_acc *acc, const uint8_t *p, size_t n)
{
	uint64_t h = acc->part_h;
	size_t len = acc->part_len, max = acc->stop ? acc->sh->stop_max : 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t c = p[i];

		if (c == ' ') {
			if (len > 0) {
				simhash_acc_term(acc, h, acc->part_buf, len);
				h = 0;
				len = 0;
			}
			continue;
		}
		if (len < max)
			acc->part_buf[len] = c;
		h = h * SIMHASH_SDBM_MULT + c;
		len++;
	}
	acc->part_h = h;
	acc->part_len = len;
}

void
simhash_long_term(struct simhash_acc *acc, const uint8_t *p, size_t lo,
    size_t e)
{
	size_t b = e;
	uint64_t h = 0;

	while (b > lo && p[b - 1] != ' ')
		b--;
	for (size_t i = b; i < e; i++)
		h = h * SIMHASH_SDBM_MULT + p[i];
	simhash_acc_term(acc, h, p + b, e - b);
}

int
simhash_stop_slow(const struct simhash *sh, const uint8_t *p, size_t lo,
    size_t e)
{
	size_t b = e;

	while (b > lo && p[b - 1] != ' ')
		b--;
	return stopwords_contains(sh->sw, p + b, e - b);
}

size_t
simhash_finish_carried(struct simhash_acc *acc, const uint8_t *p, size_t n)
{
	const uint8_t *q = memchr(p, ' ', n);
	size_t s = q != NULL ? (size_t)(q - p) : n;

	simhash_scalar_run(acc, p, q != NULL ? s + 1 : n);
	return s;
}

enum simhash_status
simhash_acc_finish(struct simhash_acc *acc, uint64_t *fp)
{
	if (acc->part_len > 0) {
		simhash_acc_term(acc, acc->part_h, acc->part_buf,
		    acc->part_len);
		acc->part_len = 0;
		acc->part_h = 0;
	}
	simhash_acc_flush(acc);
	if (acc->nterms == 0)
		return SIMHASH_EMPTY_DOCUMENT;
	*fp = acc->k->finish(acc);
	return SIMHASH_OK;
}

enum simhash_status
simhash_compute(const struct simhash *sh, struct simhash_scratch *sc,
    enum simhash_input input, const void *doc, size_t len, uint64_t *fp)
{
	const struct simhash_kernel *k = simhash_kernel();
	struct simhash_acc *acc = &sc->acc;
	const uint8_t *p = doc;
	struct html_strip hs;
	size_t off, w;

	simhash_acc_init(acc, sh, input);
	switch (input) {
	case SIMHASH_INPUT_PREPROCESSED:
		for (off = 0; off < len; off += w) {
			w = len - off < sc->window ? len - off : sc->window;
			k->run(acc, sc, p + off, w, off < SIMHASH_PAD ? off :
			    SIMHASH_PAD, off + w == len);
		}
		break;
	case SIMHASH_INPUT_TEXT:
		for (off = 0; off < len; off += w) {
			SIMHASH_PROF_T(t0);

			w = len - off < sc->window ? len - off : sc->window;
			k->normalize(sc->win, p + off, w);
			SIMHASH_PROF_ADD(normalize, t0);
			k->run(acc, sc, sc->win, w, SIMHASH_PAD, off + w == len);
		}
		break;
	case SIMHASH_INPUT_HTML:
		html_strip_init(&hs, doc, len);
		while ((w = html_strip_next(&hs, sc->win, sc->window)) > 0) {
			k->normalize(sc->win, sc->win, w);
			k->run(acc, sc, sc->win, w, SIMHASH_PAD, hs.p == hs.end);
		}
		break;
	}
	return simhash_acc_finish(acc, fp);
}

int
simhash_preprocess(const struct simhash *sh, struct simhash_scratch *sc,
    enum simhash_input input, const void *doc, size_t len, uint8_t **out,
    size_t *outlen)
{
	const struct stopwords *sw = input == SIMHASH_INPUT_PREPROCESSED ?
	    NULL : sh->sw;
	const uint8_t *p = doc, *q;
	struct html_strip hs;
	size_t cap = len + len / 5 + 16, o = 0, ts = 0, off = 0, w, i;
	uint8_t *buf;
	int in_term = 0;

	if ((buf = malloc(cap + 1)) == NULL)
		return -1;
	if (input == SIMHASH_INPUT_HTML)
		html_strip_init(&hs, doc, len);
	for (;;) {
		if (input == SIMHASH_INPUT_HTML) {
			w = html_strip_next(&hs, sc->win, sc->window);
			q = sc->win;
		} else {
			w = len - off < sc->window ? len - off : sc->window;
			q = p + off;
			off += w;
		}
		if (w == 0)
			break;
		for (i = 0; i < w; i++) {
			uint8_t c = input == SIMHASH_INPUT_PREPROCESSED ? q[i] :
			    textbytes_norm[q[i]];

			if (c != ' ') {
				if (!in_term) {
					if (o > 0)
						buf[o++] = ' ';
					ts = o;
					in_term = 1;
				}
				buf[o++] = c;
				continue;
			}
			if (in_term && stopwords_contains(sw, buf + ts, o - ts))
				o = ts > 0 ? ts - 1 : 0;
			in_term = 0;
		}
	}
	if (in_term && stopwords_contains(sw, buf + ts, o - ts))
		o = ts > 0 ? ts - 1 : 0;
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
}
