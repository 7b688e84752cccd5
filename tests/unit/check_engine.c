/*
 * Unit tests for libnddd's engine (nddd_engine_*), through libnddd.so
 * itself as bindings load it (dlopen; $NDDD_LIBRARY, or the libnddd.so of
 * this build): its fingerprints are the naive reference's (simhash_ref)
 * on every Reuters-21578 body and on L3S-GN1 pages, one at a time and in
 * batches, at every vector level this CPU has, with either term hash and
 * with stop words from a file, from memory or none; its errors; and it
 * exports its nddd_* functions, not the engine's own.
 */
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corpus.h"
#include "nddd.h"
#include "simhash_ref.h"
#include "stopwords.h"
#include "testutil.h"

/* The library's functions, as a binding finds them. */
static struct {
	void *dl;
	nddd_engine *(*new)(const struct nddd_engine_opts *, char **);
	void (*free)(nddd_engine *);
	enum nddd_code (*simhash)(nddd_engine *, const void *, size_t,
	    enum nddd_format, uint64_t *);
	size_t (*simhashes)(nddd_engine *, enum nddd_format, const char *,
	    const size_t *, size_t, uint64_t *, unsigned char *);
	const char *(*stopwords)(const nddd_engine *);
	size_t (*stopwords_count)(const nddd_engine *);
	const char *(*simd)(void);
	char *(*default_stopwords)(void);
	enum nddd_code (*text)(nddd_engine *, const void *, size_t,
	    enum nddd_format, const char **, size_t *, enum nddd_content *);
	enum nddd_code (*print)(nddd_engine *, const void *, size_t,
	    enum nddd_format, struct nddd_print *);
	int (*compare)(const void *, size_t, const void *, size_t, float *,
	    float *);
} lib;

static char *stoplist;			/* conf/stopwords.txt */
static struct ref_stopwords *ref_sw;

static void *
sym(const char *name)
{
	void *p = dlsym(lib.dl, name);

	ck_assert_msg(p != NULL, "libnddd.so lacks %s", name);
	return p;
}

static void
setup(void)
{
	const char *env = getenv("NDDD_LIBRARY");
	char exe[4096], path[4200], *cause = NULL;
	struct stopwords *sw;
	ssize_t n;

	if (env != NULL && *env != '\0')
		snprintf(path, sizeof(path), "%s", env);
	else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		ck_assert_int_gt(n, 0);
		exe[n] = '\0';
		snprintf(path, sizeof(path), "%s/../libnddd.so", dirname(exe));
	}
	lib.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(lib.dl != NULL, "%s", dlerror());
	lib.new = (nddd_engine *(*)(const struct nddd_engine_opts *,
	    char **))sym("nddd_engine_new");
	lib.free = (void (*)(nddd_engine *))sym("nddd_engine_free");
	lib.simhash = (enum nddd_code (*)(nddd_engine *, const void *, size_t,
	    enum nddd_format, uint64_t *))sym("nddd_engine_simhash");
	lib.simhashes = (size_t (*)(nddd_engine *, enum nddd_format,
	    const char *, const size_t *, size_t, uint64_t *,
	    unsigned char *))sym("nddd_engine_simhashes");
	lib.stopwords = (const char *(*)(const nddd_engine *))
	    sym("nddd_engine_stopwords");
	lib.stopwords_count = (size_t (*)(const nddd_engine *))
	    sym("nddd_engine_stopwords_count");
	lib.simd = (const char *(*)(void))sym("nddd_engine_simd");
	lib.default_stopwords = (char *(*)(void))
	    sym("nddd_engine_default_stopwords");
	lib.text = (enum nddd_code (*)(nddd_engine *, const void *, size_t,
	    enum nddd_format, const char **, size_t *, enum nddd_content *))
	    sym("nddd_engine_text");
	lib.print = (enum nddd_code (*)(nddd_engine *, const void *, size_t,
	    enum nddd_format, struct nddd_print *))sym("nddd_engine_print");
	lib.compare = (int (*)(const void *, size_t, const void *, size_t,
	    float *, float *))sym("nddd_sketch_compare");
	stoplist = tu_source_path("conf/stopwords.txt");
	ck_assert_msg((sw = stopwords_load(stoplist, &cause)) != NULL, "%s",
	    cause);
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	stopwords_free(sw);
}

static void
teardown(void)
{
	ref_stopwords_free(ref_sw);
	free(stoplist);
	dlclose(lib.dl);
}

static nddd_engine *
engine_html(const char *term_hash, const char *stopwords, const char *simd,
    const char *html)
{
	struct nddd_engine_opts o = { .term_hash = term_hash,
	    .stopwords = stopwords, .simd = simd, .html = html };
	char *err = NULL;
	nddd_engine *e = lib.new(&o, &err);

	ck_assert_msg(e != NULL, "%s", err != NULL ? err : "out of memory");
	return e;
}

/* An engine that takes pages whole, as the reference does. */
static nddd_engine *
engine(const char *term_hash, const char *stopwords, const char *simd)
{
	return engine_html(term_hash, stopwords, simd, "whole");
}

/*
 * Checks the engine against the reference on the first max documents of c
 * (0: all), one at a time and in batches of up to 1,000.
 */
static void
check_corpus(nddd_engine *e, const struct corpus *c, size_t max,
    enum nddd_format format, int paper, const struct ref_stopwords *rsw,
    const char *what)
{
	size_t n = max == 0 || max > c->n ? c->n : max, i, j, m, off;
	size_t *lens = malloc(1000 * sizeof(*lens));
	uint64_t *want = malloc(n * sizeof(*want)), *fps, fp;
	unsigned char *ok = malloc(1000), *valid = malloc(n);
	size_t nvalid = 0, nok;
	char *buf;

	ck_assert_ptr_nonnull(fps = malloc(1000 * sizeof(*fps)));
	for (i = 0; i < n; i++) {
		valid[i] = ref_simhash(c->docs[i].data, c->docs[i].len,
		    format == NDDD_FORMAT_HTML, paper, rsw, &want[i]) == 0;
		nvalid += valid[i];
		ck_assert_int_eq(lib.simhash(e, c->docs[i].data, c->docs[i].len,
		    format, &fp), valid[i] ? NDDD_OK : NDDD_EMPTY_DOCUMENT);
		ck_assert_msg(fp == (valid[i] ? want[i] : 0), "%s %zu: "
		    "%016llx, reference %016llx", what, i,
		    (unsigned long long)fp, (unsigned long long)want[i]);
	}
	/* Batches of 1, 7, 1000, ...: any cut gives the same. */
	for (i = 0, m = 1, nok = 0; i < n; i += m, m = m * 7 % 1001 + 1) {
		if (m > n - i)
			m = n - i;
		for (j = 0, off = 0; j < m; j++)
			off += lens[j] = c->docs[i + j].len;
		ck_assert_ptr_nonnull(buf = malloc(off + 1));
		for (j = 0, off = 0; j < m; j++) {
			memcpy(buf + off, c->docs[i + j].data, lens[j]);
			off += lens[j];
		}
		nok += lib.simhashes(e, format, buf, lens, m, fps, ok);
		for (j = 0; j < m; j++) {
			ck_assert_int_eq(ok[j], valid[i + j]);
			ck_assert_msg(fps[j] == (valid[i + j] ? want[i + j] : 0),
			    "%s %zu in a batch: %016llx, reference %016llx",
			    what, i + j, (unsigned long long)fps[j],
			    (unsigned long long)want[i + j]);
		}
		free(buf);
	}
	ck_assert_uint_eq(nok, nvalid);
	ck_assert_uint_gt(nvalid, n / 2);
	free(lens);
	free(want);
	free(fps);
	free(ok);
	free(valid);
}

/* Every Reuters body, at each level this CPU has; the default level on
 * all of them, the others on the first 3,000. */
START_TEST(test_reuters)
{
	static const char *const levels[] = { "auto", "scalar", "avx2",
	    "avx512" };
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 0);
	struct nddd_engine_opts o = { .stopwords = stoplist };
	nddd_engine *e;
	char *err = NULL;
	size_t i;

	ck_assert_ptr_nonnull(c);
	ck_assert_uint_gt(c->n, 19000);
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		o.simd = levels[i];
		if ((e = lib.new(&o, &err)) == NULL) {
			ck_assert_msg(err != NULL && strstr(err, "cannot run"),
			    "%s", err);
			printf("engine: skipping %s: %s\n", levels[i], err);
			free(err);
			err = NULL;
			continue;
		}
		if (i > 0)
			ck_assert_str_eq(lib.simd(), levels[i]);
		check_corpus(e, c, i == 0 ? 0 : 3000, NDDD_FORMAT_TEXT, 0,
		    ref_sw, "reuters");
		lib.free(e);
	}
	/* The paper's term hash, and no stop words. */
	e = engine("sdbm", stoplist, "auto");
	check_corpus(e, c, 3000, NDDD_FORMAT_TEXT, 1, ref_sw, "reuters sdbm");
	lib.free(e);
	e = engine(NULL, "none", NULL);
	ck_assert_str_eq(lib.stopwords(e), "none");
	ck_assert_uint_eq(lib.stopwords_count(e), 0);
	check_corpus(e, c, 3000, NDDD_FORMAT_TEXT, 0, NULL, "reuters none");
	lib.free(e);
	corpus_free(c);
	free(dir);
}
END_TEST

START_TEST(test_html_pages)
{
	char *dir = tu_data_path("text_corpora/l3s_gn1_html/original");
	struct corpus *c = corpus_files(dir, ".html");
	nddd_engine *e = engine("sdbm-fmix64", stoplist, NULL);

	ck_assert_ptr_nonnull(c);
	check_corpus(e, c, 200, NDDD_FORMAT_HTML, 0, ref_sw, "l3s");
	lib.free(e);
	corpus_free(c);
	free(dir);
}
END_TEST

/*
 * By default a page is judged by its main content: its fingerprint is the
 * reference's of the text nddd_engine_text gives, that text is shorter
 * than the page's whole text, and the print carries the same fingerprint
 * and a sketch that compares as identical with itself.
 */
START_TEST(test_html_main)
{
	char *dir = tu_data_path("text_corpora/l3s_gn1_html/original");
	struct corpus *c = corpus_files(dir, ".html");
	nddd_engine *e = engine_html("sdbm-fmix64", stoplist, NULL, NULL);
	nddd_engine *w = engine("sdbm-fmix64", stoplist, NULL);
	size_t mains = 0;

	ck_assert_ptr_nonnull(c);
	for (size_t i = 0; i < 100 && i < c->n; i++) {
		enum nddd_content content, wcontent;
		const char *text;
		struct nddd_print p;
		size_t tlen, wlen;
		uint64_t fp, want;
		char *copy;
		float r, con;

		ck_assert_int_eq(lib.text(w, c->docs[i].data, c->docs[i].len,
		    NDDD_FORMAT_HTML, &text, &wlen, &wcontent), NDDD_OK);
		ck_assert_int_eq(wcontent, NDDD_CONTENT_WHOLE);
		ck_assert_int_eq(lib.text(e, c->docs[i].data, c->docs[i].len,
		    NDDD_FORMAT_HTML, &text, &tlen, &content), NDDD_OK);
		ck_assert_ptr_nonnull(copy = malloc(tlen + 1));
		memcpy(copy, text, tlen);
		mains += content == NDDD_CONTENT_MAIN;
		if (content == NDDD_CONTENT_MAIN)
			ck_assert_uint_lt(tlen, wlen);
		ck_assert_int_eq(lib.simhash(e, c->docs[i].data,
		    c->docs[i].len, NDDD_FORMAT_HTML, &fp), ref_simhash(copy,
		    tlen, 0, 0, ref_sw, &want) == 0 ? NDDD_OK :
		    NDDD_EMPTY_DOCUMENT);
		ck_assert_msg(fp == want || fp == 0, "page %zu: %016llx, the "
		    "reference of its text %016llx", i,
		    (unsigned long long)fp, (unsigned long long)want);
		if (lib.print(e, c->docs[i].data, c->docs[i].len,
		    NDDD_FORMAT_HTML, &p) == NDDD_OK) {
			ck_assert_uint_eq(p.simhash, fp);
			ck_assert_int_eq(p.content, content);
			ck_assert_int_eq(lib.compare(p.sketch, p.sketch_len,
			    p.sketch, p.sketch_len, &r, &con), 0);
			ck_assert(r == 1.0f && con == 1.0f);
		}
		free(copy);
	}
	/* Nearly every news page has an article. */
	ck_assert_uint_ge(mains, 90);
	lib.free(e);
	lib.free(w);
	corpus_free(c);
	free(dir);
}
END_TEST

/* Stop words given as text are those of the same file. */
START_TEST(test_stopwords_text)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	struct corpus *c = corpus_reuters(dir, 2000);
	struct nddd_engine_opts o = { 0 };
	nddd_engine *e;
	char *err = NULL;
	size_t len;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(o.stopwords_text = tu_read_file(stoplist,
	    &len));
	o.stopwords_len = len;
	ck_assert_msg((e = lib.new(&o, &err)) != NULL, "%s", err);
	ck_assert_str_eq(lib.stopwords(e), "");
	check_corpus(e, c, 0, NDDD_FORMAT_TEXT, 0, ref_sw, "text list");
	lib.free(e);
	free((char *)o.stopwords_text);
	/* A file named wins over text. */
	o.stopwords = "none";
	o.stopwords_text = "the\n";
	o.stopwords_len = 4;
	ck_assert_ptr_nonnull(e = lib.new(&o, &err));
	ck_assert_uint_eq(lib.stopwords_count(e), 0);
	lib.free(e);
	corpus_free(c);
	free(dir);
}
END_TEST

/* With no list named: $NDDD_STOPWORDS, else the tree's own list. */
START_TEST(test_default_stopwords)
{
	char *found, *err = NULL, *tmp = tu_tmpdir(), *list, cwd[4096];
	nddd_engine *e;
	FILE *f;

	ck_assert_int_ne(asprintf(&list, "%s/words", tmp), -1);
	ck_assert_ptr_nonnull(f = fopen(list, "w"));
	fputs("alpha\nbeta\n", f);
	fclose(f);
	setenv("NDDD_STOPWORDS", list, 1);
	ck_assert_ptr_nonnull(found = lib.default_stopwords());
	ck_assert_str_eq(found, list);
	free(found);
	ck_assert_ptr_nonnull(e = lib.new(NULL, &err));
	ck_assert_str_eq(lib.stopwords(e), list);
	ck_assert_uint_eq(lib.stopwords_count(e), 2);
	lib.free(e);
	/* Elsewhere than the source tree, the library's own tree's list:
	 * the same words as conf/stopwords.txt. */
	unsetenv("NDDD_STOPWORDS");
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(tmp), 0);
	found = lib.default_stopwords();
	ck_assert_int_eq(chdir(cwd), 0);
	ck_assert_msg(found != NULL && strstr(found, "conf/stopwords.txt"),
	    "%s", found ? found : "(none)");
	ck_assert_int_eq(access(found, R_OK), 0);
	free(found);
	tu_rmtree(tmp);
	free(tmp);
	free(list);
}
END_TEST

START_TEST(test_errors)
{
	struct nddd_engine_opts o = { .stopwords = "none" };
	unsigned char ok[2];
	uint64_t fp, fps[2];
	size_t lens[2] = { 3, 5 };
	nddd_engine *e;
	char *err = NULL;

	o.term_hash = "md5";
	ck_assert_ptr_null(lib.new(&o, &err));
	ck_assert_str_eq(err, "unknown term hash \"md5\" (sdbm-fmix64 or "
	    "sdbm)");
	free(err);
	o.term_hash = NULL;
	o.simd = "sse9";
	ck_assert_ptr_null(lib.new(&o, &err));
	ck_assert_ptr_nonnull(strstr(err, "unknown level \"sse9\""));
	free(err);
	o.simd = NULL;
	o.stopwords = "/nonexistent/stop.txt";
	ck_assert_ptr_null(lib.new(&o, &err));
	ck_assert_str_eq(err, "/nonexistent/stop.txt: No such file or "
	    "directory");
	free(err);
	o.stopwords = NULL;
	o.stopwords_text = "one\ntwo words\n";
	o.stopwords_len = strlen(o.stopwords_text);
	ck_assert_ptr_null(lib.new(&o, &err));
	ck_assert_ptr_nonnull(strstr(err, "stop words:2: more than one word"));
	free(err);
	/* Documents without terms, and a format that does not exist. */
	e = engine(NULL, stoplist, NULL);
	ck_assert_int_eq(lib.simhash(e, "the of", 6, NDDD_FORMAT_TEXT, &fp),
	    NDDD_EMPTY_DOCUMENT);
	ck_assert_uint_eq(fp, 0);
	ck_assert_int_eq(lib.simhash(e, "", 0, NDDD_FORMAT_HTML, &fp),
	    NDDD_EMPTY_DOCUMENT);
	ck_assert_int_eq(lib.simhash(e, "word", 4, (enum nddd_format)9, &fp),
	    NDDD_INVALID_ARGUMENT);
	ck_assert_uint_eq(lib.simhashes(e, NDDD_FORMAT_TEXT, "the<b>x</b>",
	    lens, 2, fps, ok), 1);
	ck_assert_int_eq(ok[0], 0);
	ck_assert_int_eq(ok[1], 1);
	ck_assert_uint_eq(fps[0], 0);
	ck_assert_uint_eq(lib.simhashes(e, (enum nddd_format)9, "the<b>x</b>",
	    lens, 2, fps, ok), (size_t)-1);
	ck_assert_int_eq(lib.simhash(e, "<b>x</b>", 8, NDDD_FORMAT_HTML, &fp),
	    NDDD_OK);
	ck_assert_uint_ne(fp, 0);
	lib.free(e);
	lib.free(NULL);
}
END_TEST

/* The shared object keeps the engine's own functions to itself. */
START_TEST(test_exports)
{
	static const char *const hidden[] = { "simhash_compute",
	    "simhash_new", "stopwords_load", "html_strip_next", "engine_term_hash",
	    "urlcanon_new" };

	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		ck_assert_msg(dlsym(lib.dl, hidden[i]) == NULL,
		    "libnddd.so exports %s", hidden[i]);
}
END_TEST

Suite *engine_suite(void);

Suite *
engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reuters);
	tcase_add_test(tc, test_html_pages);
	tcase_add_test(tc, test_html_main);
	tcase_add_test(tc, test_stopwords_text);
	tcase_add_test(tc, test_default_stopwords);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_exports);
	suite_add_tcase(s, tc);
	return s;
}
