/*
 * urlfixture: a URL set on a real store in a temporary directory, for the
 * unit suites of the url/ modules: opened with a reader, dropped as a
 * crash leaves it (nothing flushed), reopened, and removed at the end.
 */
#ifndef NDDD_TESTS_URLFIXTURE_H
#define NDDD_TESTS_URLFIXTURE_H

#include <stdint.h>

#include "store.h"
#include "urlset.h"

struct url_fixture {
	char *dir;			/* set by the test: tu_tmpdir() */
	struct store *st;
	struct urlset *us;
	struct urlset_reader *rd;	/* a reader of us */
	struct urlset_options opts;	/* set by the test */
	uint64_t map_size;		/* the store's; 0: 128 MiB */
};

/*
 * Opens the store (asserted) and the URL set; NULL with *cause when the
 * set refuses to open.
 */
struct urlset *url_fixture_try_open(struct url_fixture *fx, char **cause);
/* Opens both, asserted. */
void url_fixture_open(struct url_fixture *fx);
/* Closes everything with nothing flushed: what a crash leaves. */
void url_fixture_drop(struct url_fixture *fx);
/* Drops, removes the directory, and puts back the wall clock and the
 * crash hook a test may have set. */
void url_fixture_end(struct url_fixture *fx);

#endif
