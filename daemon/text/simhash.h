/*
 * simhash: 64-bit simhash fingerprints of documents, exactly as DESIGN
 * section 4 defines them; docs/simhash.md states the rules in user terms.
 *
 *   1. Preprocess.  HTML input: tags, comments, declarations and the
 *      contents of script and style elements are dropped, each leaving one
 *      separator; character references are decoded to UTF-8 (see html.h).
 *      All input: ASCII letters are lower-cased; ASCII whitespace
 *      (TAB LF VT FF CR SPACE) and ASCII punctuation (the 32 characters
 *      !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) are separators; every other byte
 *      (digits, control bytes, bytes of UTF-8 sequences) belongs to a term.
 *      No character-set conversion is done: bytes are hashed as they come.
 *   2. Terms are maximal runs of non-separator bytes; terms in the stop-word
 *      set are removed.
 *   3. Term hash: 64-bit sdbm, h = c + (h << 6) + (h << 16) - h, i.e.
 *      h = h * 65599 + c, then by default MurmurHash3's fmix64.
 *   4-5. Every occurrence counts once; bit i of the fingerprint is 1 iff at
 *      least as many occurrences have bit i set in their hash as not
 *      (ties give 1).
 *   6. A document with no terms left is SIMHASH_EMPTY_DOCUMENT.
 *
 * Preprocessed input (SIMHASH_INPUT_PREPROCESSED, the accelerator format) is
 * terms separated by SPACE bytes: every other byte belongs to a term, as is,
 * and no stop word is removed.
 *
 * The work is done by vectorised code chosen at run time (AVX-512, AVX2 or
 * portable scalar; all give identical bits), process-wide, see
 * simhash_simd_select.  An engine (struct simhash) is immutable once made and
 * may be shared by threads; each thread needs its own scratch.
 */
#ifndef NDDD_SIMHASH_H
#define NDDD_SIMHASH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct stopwords;

/* sdbm's multiplier: (h << 6) + (h << 16) - h == h * 65599. */
#define SIMHASH_SDBM_MULT 65599ULL
/* Characters of a fingerprint printed as hex, without the NUL. */
#define SIMHASH_HEX_LEN 16

/* The term hash; fixed per data directory (fingerprints do not mix). */
enum simhash_term_hash {
	SIMHASH_TERM_HASH_SDBM_FMIX64 = 0,	/* default: sdbm, then fmix64 */
	SIMHASH_TERM_HASH_SDBM = 1,		/* the paper's plain sdbm */
};

/* What a document's bytes are. */
enum simhash_input {
	SIMHASH_INPUT_TEXT = 0,
	SIMHASH_INPUT_HTML = 1,
	SIMHASH_INPUT_PREPROCESSED = 2,
};

/* Instruction-set levels of the vectorised code. */
enum simhash_simd {
	SIMHASH_SIMD_AUTO = 0,	/* the best this CPU supports */
	SIMHASH_SIMD_SCALAR,
	SIMHASH_SIMD_AVX2,
	SIMHASH_SIMD_AVX512,
};

enum simhash_status {
	SIMHASH_OK = 0,
	SIMHASH_EMPTY_DOCUMENT = 1,	/* no term left after preprocessing */
};

/* "sdbm-fmix64" or "sdbm"; NULL for a value outside the enum. */
const char *simhash_term_hash_name(enum simhash_term_hash th);
/* Parses a term hash name; returns 0, or -1 if the name is unknown. */
int simhash_term_hash_parse(const char *name, enum simhash_term_hash *out);

/* "auto", "scalar", "avx2" or "avx512"; NULL outside the enum. */
const char *simhash_simd_name(enum simhash_simd level);
/* Parses a level name; returns 0, or -1 if the name is unknown. */
int simhash_simd_parse(const char *name, enum simhash_simd *out);
/* Whether this CPU (and build) can run the level; AUTO always can. */
int simhash_simd_supported(enum simhash_simd level);
/*
 * Selects the level every engine in the process uses from now on; AUTO
 * picks the best supported.  Call it at start-up, before threads compute.
 * Returns 0, or -1 with *cause set (the caller frees it) when the CPU lacks
 * the level; the selection is then unchanged.
 */
int simhash_simd_select(enum simhash_simd level, char **cause);
/* The level in use (never AUTO). */
enum simhash_simd simhash_simd_active(void);

/*
 * Makes an engine for a term hash and a stop-word set (NULL: none).  The set
 * is only read, and must outlive the engine.  Returns NULL with *cause set
 * (the caller frees it) when out of memory.  Free with simhash_free.
 */
struct simhash *simhash_new(enum simhash_term_hash th,
    const struct stopwords *sw, char **cause);
/* Frees an engine; NULL is ignored. */
void simhash_free(struct simhash *sh);
/* The engine's term hash. */
enum simhash_term_hash simhash_term_hash_of(const struct simhash *sh);
/* The engine's stop words (NULL: none). */
const struct stopwords *simhash_stopwords(const struct simhash *sh);

/*
 * Per-thread working memory (a few tens of KiB, fixed: documents of any
 * size are processed in windows).  Returns NULL when out of memory.
 */
struct simhash_scratch *simhash_scratch_new(void);
/* Frees scratch memory; NULL is ignored. */
void simhash_scratch_free(struct simhash_scratch *sc);

/*
 * Computes the fingerprint of doc (len bytes; any bytes, NUL included).
 * Returns SIMHASH_OK with *fp set, or SIMHASH_EMPTY_DOCUMENT when no term
 * is left.  Never allocates and never fails otherwise.
 */
enum simhash_status simhash_compute(const struct simhash *sh,
    struct simhash_scratch *sc, enum simhash_input input, const void *doc,
    size_t len, uint64_t *fp);

/*
 * Preprocesses doc into the accelerator format: its terms, stop words
 * removed, separated by single SPACE bytes, without leading or trailing
 * space.  simhash_compute of the result as SIMHASH_INPUT_PREPROCESSED gives
 * the same fingerprint as of doc.  Returns 0 with *out (malloc'd, the
 * caller frees it, NUL-terminated for convenience) and *outlen set, or -1
 * when out of memory.  PREPROCESSED input is copied, normalised to single
 * spaces.
 */
int simhash_preprocess(const struct simhash *sh, struct simhash_scratch *sc,
    enum simhash_input input, const void *doc, size_t len, uint8_t **out,
    size_t *outlen);

/*
 * Starts loading the beginning of a document into the cache: call it for
 * the next document before computing the current one.
 */
void simhash_prefetch(const void *doc, size_t len);

/* The hash of one term (its bytes exactly as given). */
uint64_t simhash_term(enum simhash_term_hash th, const void *term,
    size_t len);
/* MurmurHash3's 64-bit finalizer. */
uint64_t simhash_fmix64(uint64_t h);

/* Writes fp as 16 lower-case hex digits and a NUL. */
void simhash_format(uint64_t fp, char out[SIMHASH_HEX_LEN + 1]);

/* Byte classes of step 1, for other modules that must agree with them
 * (inside daemon/text, textbytes.h has them inline). */
int simhash_byte_is_separator(uint8_t c);
/* ASCII upper case to lower case; every other byte unchanged. */
uint8_t simhash_byte_fold(uint8_t c);

#endif
