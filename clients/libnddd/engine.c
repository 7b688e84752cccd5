/*
 * engine: local fingerprints with the daemon's simhash engine (the
 * fingerprint library's simhash.c, html.c and stopwords.c, linked in), the
 * nddd_engine_* functions of nddd.h.  The settings are the daemon's
 * [simhash] section, parsed and loaded as the daemon loads them; nddctl
 * simhash makes its settings here too (engine.h), so that the library,
 * nddctl and the daemon cannot drift apart.
 */
#include "nddd.h"
#include "nddd_impl.h"
#include "engine.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docfp.h"
#include "simhash.h"
#include "sketch.h"
#include "stopwords.h"

_Static_assert(NDDD_SKETCH_MAX == SKETCH_WIRE_MAX &&
    NDDD_SKETCH_HASHES == SKETCH_K && NDDD_SKETCH_KEYS == SKETCH_KEYS &&
    NDDD_SKETCH_MIN_KEYS == SKETCH_MIN_KEYS &&
    NDDD_SKETCH_PROBES == SKETCH_PROBES,
    "libnddd's sketch sizes are the daemon's");
_Static_assert((int)NDDD_CONTENT_MAIN == (int)DOCFP_MAIN &&
    (int)NDDD_CONTENT_WHOLE == (int)DOCFP_WHOLE,
    "libnddd's content kinds are the daemon's");

struct nddd_engine {
	enum simhash_term_hash th;
	struct stopwords *sw;		/* NULL: none */
	struct simhash *sh;
	struct simhash_scratch *sc;
	struct docfp_scratch *fp;
	bool html_main;			/* [text] html = main */
	char *stopwords;		/* the file, "none" or "" */
};

/* Where a source tree's list is from a program or library built in it:
 * clients/nddctl, build/VARIANT/libnddd.so, build/VARIANT/bin/nddctl. */
static const char *const engine_tree_lists[] = {
	"../conf/stopwords.txt",
	"../../conf/stopwords.txt",
	"../../../conf/stopwords.txt",
};
/* Where make install puts it. */
#define ENGINE_SYSTEM_LIST "/etc/nddd/stopwords.txt"

/* The list of the tree that holds the file at path; NULL if none. */
static char *
engine_tree_list(const char *path)
{
	char *copy, *dir, *list;
	size_t i;

	if (path == NULL || strchr(path, '/') == NULL ||
	    (copy = strdup(path)) == NULL)
		return NULL;
	dir = dirname(copy);
	for (i = 0; i < sizeof(engine_tree_lists) /
	    sizeof(engine_tree_lists[0]); i++) {
		if (asprintf(&list, "%s/%s", dir, engine_tree_lists[i]) == -1)
			break;
		if (access(list, R_OK) == 0) {
			free(copy);
			return list;
		}
		free(list);
	}
	free(copy);
	return NULL;
}

char *
nddd_engine_default_stopwords(void)
{
	const char *env = getenv("NDDD_STOPWORDS");
	char exe[PATH_MAX], *list;
	Dl_info info;
	ssize_t n;

	if (env != NULL && *env != '\0')
		return strdup(env);
	if (access("conf/stopwords.txt", R_OK) == 0)
		return strdup("conf/stopwords.txt");
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = '\0';
		if ((list = engine_tree_list(exe)) != NULL)
			return list;
	}
	/* This code's own file: libnddd.so when a program loaded it. */
	if (dladdr((void *)nddd_engine_default_stopwords, &info) != 0 &&
	    (list = engine_tree_list(info.dli_fname)) != NULL)
		return list;
	if (access(ENGINE_SYSTEM_LIST, R_OK) == 0)
		return strdup(ENGINE_SYSTEM_LIST);
	return NULL;
}


nddd_engine *
nddd_engine_new(const struct nddd_engine_opts *opts, char **err)
{
	static const struct nddd_engine_opts defaults;
	const struct nddd_engine_opts *o = opts != NULL ? opts : &defaults;
	enum simhash_term_hash th = SIMHASH_TERM_HASH_SDBM_FMIX64;
	enum simhash_simd level;
	nddd_engine *e = NULL;
	char *cause = NULL;

	*err = NULL;
	if (o->term_hash != NULL &&
	    simhash_term_hash_parse(o->term_hash, &th) == -1) {
		errmsg_new(err, "unknown term hash \"%s\" (sdbm-fmix64 or "
		    "sdbm)", o->term_hash);
		return NULL;
	}
	if (o->simd != NULL) {
		if (simhash_simd_parse(o->simd, &level) == -1) {
			errmsg_new(err, "unknown level \"%s\" (auto, avx512, "
			    "avx2 or scalar)", o->simd);
			return NULL;
		}
		if (simhash_simd_select(level, err) == -1)
			return NULL;
	}
	if (o->html != NULL && strcmp(o->html, "main") != 0 &&
	    strcmp(o->html, "whole") != 0) {
		errmsg_new(err, "unknown html mode \"%s\" (main or whole)",
		    o->html);
		return NULL;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->th = th;
	e->html_main = o->html == NULL || strcmp(o->html, "main") == 0;
	if (o->stopwords == NULL && o->stopwords_text != NULL) {
		if ((e->stopwords = strdup("")) == NULL ||
		    (e->sw = stopwords_parse(o->stopwords_text,
		    o->stopwords_len, "stop words", &cause)) == NULL)
			goto fail;
	} else {
		e->stopwords = o->stopwords != NULL ? strdup(o->stopwords) :
		    nddd_engine_default_stopwords();
		if (e->stopwords == NULL) {
			if (o->stopwords != NULL)
				goto fail;
			errmsg_new(err, "no stop-word list found; give one "
			    "(a file, or \"none\" for none)");
			goto err;
		}
		if (strcmp(e->stopwords, "none") != 0 &&
		    (e->sw = stopwords_load(e->stopwords, &cause)) == NULL)
			goto fail;
	}
	if ((e->sh = simhash_new(th, e->sw, &cause)) == NULL ||
	    (e->sc = simhash_scratch_new()) == NULL ||
	    (e->fp = docfp_scratch_new()) == NULL)
		goto fail;
	return e;
fail:
	*err = cause;
err:
	nddd_engine_free(e);
	return NULL;
}

void
nddd_engine_free(nddd_engine *e)
{
	if (e == NULL)
		return;
	simhash_scratch_free(e->sc);
	docfp_scratch_free(e->fp);
	simhash_free(e->sh);
	stopwords_free(e->sw);
	free(e->stopwords);
	free(e);
}

/* The engine's input kind of a format; -1 for an unknown one. */
static int
engine_input(enum nddd_format format, enum simhash_input *in)
{
	switch (format) {
	case NDDD_FORMAT_TEXT:
		*in = SIMHASH_INPUT_TEXT;
		return 0;
	case NDDD_FORMAT_HTML:
		*in = SIMHASH_INPUT_HTML;
		return 0;
	case NDDD_FORMAT_PREPROCESSED:
		*in = SIMHASH_INPUT_PREPROCESSED;
		return 0;
	}
	return -1;
}

/* The text body is judged by, as docfp_text says. */
static int
engine_text(nddd_engine *e, enum simhash_input in, const void *body,
    size_t len, struct docfp_text *t, enum docfp_content *content)
{
	return docfp_text(e->fp, e->html_main, in, body, len, &t->input,
	    &t->text, &t->len, content);
}

enum nddd_code
nddd_engine_simhash(nddd_engine *e, const void *body, size_t len,
    enum nddd_format format, uint64_t *fp)
{
	enum docfp_content content;
	enum simhash_input in;
	struct docfp_text t;

	*fp = 0;
	if (engine_input(format, &in) == -1)
		return NDDD_INVALID_ARGUMENT;
	if (engine_text(e, in, body, len, &t, &content) == -1)
		return NDDD_INTERNAL;
	if (simhash_compute(e->sh, e->sc, t.input, t.text, t.len, fp) !=
	    SIMHASH_OK) {
		*fp = 0;
		return NDDD_EMPTY_DOCUMENT;
	}
	return NDDD_OK;
}

size_t
nddd_engine_simhashes(nddd_engine *e, enum nddd_format format,
    const char *bodies, const size_t *lens, size_t n, uint64_t *fps,
    unsigned char *ok)
{
	enum simhash_input in;
	size_t off = 0, nok = 0;

	if (engine_input(format, &in) == -1)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		enum nddd_code c;

		/* The next document on its way into the cache meanwhile, as
		 * the daemon's cpu backend does. */
		if (i + 1 < n)
			simhash_prefetch(bodies + off + lens[i], lens[i + 1]);
		c = nddd_engine_simhash(e, bodies + off, lens[i], format,
		    &fps[i]);
		if (c == NDDD_INTERNAL)
			return (size_t)-1;
		ok[i] = c == NDDD_OK;
		nok += ok[i];
		off += lens[i];
	}
	return nok;
}

enum nddd_code
nddd_engine_text(nddd_engine *e, const void *body, size_t len,
    enum nddd_format format, const char **text, size_t *text_len,
    enum nddd_content *content)
{
	enum docfp_content c;
	enum simhash_input in;
	struct docfp_text t;

	*text = "";
	*text_len = 0;
	*content = NDDD_CONTENT_TEXT;
	if (engine_input(format, &in) == -1)
		return NDDD_INVALID_ARGUMENT;
	if (engine_text(e, in, body, len, &t, &c) == -1)
		return NDDD_INTERNAL;
	/* The page itself (html = whole): what a reader sees of it, in the
	 * extractor's lines, which give the same terms. */
	if (t.input == SIMHASH_INPUT_HTML && docfp_whole_text(e->fp, body,
	    len, &t) == -1)
		return NDDD_INTERNAL;
	*text = (const char *)t.text;
	*text_len = t.len;
	*content = (enum nddd_content)c;
	return NDDD_OK;
}

/* The print of one document into f; a docfp_compute status. */
static int
engine_print(nddd_engine *e, enum simhash_input in, const void *body,
    size_t len, struct docfp *f)
{
	return docfp_compute(e->sh, e->sw, e->fp, e->sc, e->html_main, in,
	    body, len, f, NULL);
}

enum nddd_code
nddd_engine_print(nddd_engine *e, const void *body, size_t len,
    enum nddd_format format, struct nddd_print *out)
{
	enum simhash_input in;
	struct docfp f;
	int rc;

	memset(out, 0, sizeof(*out));
	if (engine_input(format, &in) == -1)
		return NDDD_INVALID_ARGUMENT;
	if ((rc = engine_print(e, in, body, len, &f)) == -1)
		return NDDD_INTERNAL;
	if (rc != SIMHASH_OK)
		return NDDD_EMPTY_DOCUMENT;
	out->simhash = f.fp;
	out->content = (enum nddd_content)f.content;
	out->sketch_len = sketch_encode(&f.sketch, out->sketch);
	return NDDD_OK;
}

size_t
nddd_engine_prints(nddd_engine *e, enum nddd_format format,
    const char *bodies, const size_t *lens, size_t n, uint64_t *fps,
    unsigned char *ok, unsigned char *content, uint32_t *shingles,
    uint32_t *nhashes, uint32_t *hashes)
{
	enum simhash_input in;
	size_t off = 0, nok = 0;
	struct docfp f;
	int rc;

	if (engine_input(format, &in) == -1)
		return (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		uint32_t *row = hashes + i * SKETCH_K;

		if ((rc = engine_print(e, in, bodies + off, lens[i], &f)) ==
		    -1)
			return (size_t)-1;
		off += lens[i];
		ok[i] = rc == SIMHASH_OK;
		memset(row, 0, SKETCH_K * sizeof(*row));
		if (!ok[i]) {
			fps[i] = 0;
			content[i] = 0;
			shingles[i] = nhashes[i] = 0;
			continue;
		}
		nok++;
		fps[i] = f.fp;
		content[i] = (unsigned char)f.content;
		shingles[i] = f.sketch.shingles;
		nhashes[i] = f.sketch.n;
		memcpy(row, f.sketch.h, f.sketch.n * sizeof(*row));
	}
	return nok;
}

int
nddd_sketch_compare(const void *a, size_t alen, const void *b, size_t blen,
    float *resemblance, float *containment)
{
	struct sketch sa, sb;
	struct sketch_similarity sim;

	*resemblance = *containment = 0;
	if (sketch_decode(a, alen, &sa) == -1 ||
	    sketch_decode(b, blen, &sb) == -1)
		return -1;
	sketch_compare(&sa, &sb, &sim);
	*resemblance = sim.resemblance;
	*containment = sim.containment;
	return 0;
}

/* Row i of decoded sketches as a sketch. */
static void
sketch_row(const uint32_t *shingles, const uint32_t *nhashes,
    const uint32_t *hashes, int64_t i, struct sketch *s)
{
	s->shingles = shingles[i];
	s->n = nhashes[i] <= SKETCH_K ? nhashes[i] : SKETCH_K;
	memcpy(s->h, hashes + (size_t)i * SKETCH_K, s->n * sizeof(s->h[0]));
}

void
nddd_sketch_similarities(const uint32_t *shingles, const uint32_t *nhashes,
    const uint32_t *hashes, const int64_t *a, const int64_t *b, size_t m,
    float *res, float *con)
{
	struct sketch sa, sb;
	struct sketch_similarity sim;

	for (size_t i = 0; i < m; i++) {
		sketch_row(shingles, nhashes, hashes, a[i], &sa);
		sketch_row(shingles, nhashes, hashes, b[i], &sb);
		sketch_compare(&sa, &sb, &sim);
		res[i] = sim.resemblance;
		con[i] = sim.containment;
	}
}

const char *
nddd_engine_stopwords(const nddd_engine *e)
{
	return e->stopwords;
}

size_t
nddd_engine_stopwords_count(const nddd_engine *e)
{
	return stopwords_count(e->sw);
}

const char *
nddd_engine_simd(void)
{
	return simhash_simd_name(simhash_simd_active());
}

enum simhash_term_hash
engine_term_hash(const nddd_engine *e)
{
	return e->th;
}

const struct stopwords *
engine_stopwords_set(const nddd_engine *e)
{
	return e->sw;
}
