/*
 * testutil: helpers shared by the test programs: temporary directories,
 * the shared test data, whole-file reads and a seeded random generator.
 */
#ifndef NDDD_TESTUTIL_H
#define NDDD_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Creates a fresh directory under $TMPDIR (or /tmp); the caller frees it. */
char *tu_tmpdir(void);
/* Removes a directory tree; errors are ignored. */
void tu_rmtree(const char *path);

/*
 * Path of rel under the shared test data ($NDDD_TEST_DATA).  Fails the
 * running test if the file is missing.  The caller frees the result.
 */
char *tu_data_path(const char *rel);
/* Path of rel under the source tree ($NDDD_SOURCE_DIR, default "."). */
char *tu_source_path(const char *rel);

/* Seconds on the monotonic clock, for tests that bound their own time. */
double tu_now(void);

/* Reads a whole file, NUL-terminated; NULL if it cannot be read. */
char *tu_read_file(const char *path, size_t *len);
/* Copies src to dst (created or truncated), then gives dst mode; fails the
 * test on any error. */
void tu_copy_file(const char *src, const char *dst, unsigned mode);

/*
 * Calls fn(arg, s, len) on every line of the URL list rel (relative to the
 * test data): the line as it is, then its URL as urlgen reads it (after a
 * tab; "http://" added where there is no scheme) when that differs.  Many
 * lines as they are are not absolute URLs.
 */
void tu_foreach_list_line(const char *rel,
    void (*fn)(void *arg, const char *s, size_t len), void *arg);

/* splitmix64: a small, fast generator for seeded property tests. */
uint64_t tu_rand(uint64_t *state);
/* Uniform in [0, n). */
uint64_t tu_rand_below(uint64_t *state, uint64_t n);

#endif
