/*
 * stopwords: the set of terms that simhash leaves out of a fingerprint.
 *
 * A stop word is compared with terms after preprocessing, so it is stored
 * ASCII lower-cased and may not contain a separator byte (ASCII whitespace or
 * ASCII punctuation): such a word could never match a term.  Words are byte
 * strings; UTF-8 words are fine and are matched byte for byte.
 *
 * The list file format: one word per line, '#' starts a comment (anywhere on
 * a line), leading and trailing whitespace and blank lines are ignored.
 *
 * A set is built once and then only read, so any number of threads may call
 * stopwords_contains on it concurrently.
 */
#ifndef NDDD_STOPWORDS_H
#define NDDD_STOPWORDS_H

#include <stddef.h>
#include <stdint.h>

/* Longest stop word accepted, in bytes. */
#define STOPWORDS_MAX_LEN 255

struct stopwords;

/* Returns an empty set, or NULL when out of memory. */
struct stopwords *stopwords_new(void);
/* Frees the set; NULL is ignored. */
void stopwords_free(struct stopwords *sw);

/*
 * Adds a word (len bytes, lower-cased on the way in; a word already present
 * is ignored).  Returns 0, or -1 with *cause set (the caller frees it) when
 * the word is empty, longer than STOPWORDS_MAX_LEN, contains a separator or
 * a NUL byte, or memory runs out.
 */
int stopwords_add(struct stopwords *sw, const void *word, size_t len,
    char **cause);

/*
 * Reads a list file.  Returns a new set, or NULL with *cause set (the caller
 * frees it) to a message of the form "path: reason" or "path:line: reason".
 */
struct stopwords *stopwords_load(const char *path, char **cause);
/*
 * Reads a list from memory: text[0..len) as a list file's content, named
 * name in messages ("name:line: reason").  Returns as stopwords_load.
 */
struct stopwords *stopwords_parse(const void *text, size_t len,
    const char *name, char **cause);

/* Whether the term (len bytes, already lower-cased) is in the set. */
int stopwords_contains(const struct stopwords *sw, const void *term,
    size_t len);

/* Number of words in the set. */
size_t stopwords_count(const struct stopwords *sw);
/* Length of the longest word, 0 for an empty set. */
size_t stopwords_max_len(const struct stopwords *sw);
/*
 * The words, as a NULL-terminated array of NUL-terminated strings in the
 * order they were added.  Owned by the set.
 */
const char *const *stopwords_list(const struct stopwords *sw);

#endif
