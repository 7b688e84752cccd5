/*
 * urlfixture: a URL set on a real store for the url/ suites.  See
 * urlfixture.h.
 */
#include "urlfixture.h"

#include <check.h>
#include <stdlib.h>

#include "clock.h"
#include "testutil.h"
#include "urlset_impl.h"

struct urlset *
url_fixture_try_open(struct url_fixture *fx, char **cause)
{
	struct store_options so = { .dir = fx->dir, .map_size = fx->map_size ?
	    fx->map_size : 128 << 20, .sync = STORE_SYNC_NONE };

	*cause = NULL;
	fx->st = store_open(&so, cause);
	ck_assert_msg(fx->st != NULL, "%s", *cause ? *cause : "store_open");
	fx->us = urlset_open(fx->st, fx->dir, &fx->opts, cause);
	if (fx->us != NULL) {
		fx->rd = urlset_reader_new(fx->us);
		ck_assert_ptr_nonnull(fx->rd);
	}
	return fx->us;
}

void
url_fixture_open(struct url_fixture *fx)
{
	char *cause;

	ck_assert_msg(url_fixture_try_open(fx, &cause) != NULL,
	    "urlset_open: %s", cause ? cause : "?");
}

void
url_fixture_drop(struct url_fixture *fx)
{
	urlset_reader_free(fx->rd);
	urlset_free(fx->us);
	store_close(fx->st);
	fx->rd = NULL;
	fx->us = NULL;
	fx->st = NULL;
}

void
url_fixture_end(struct url_fixture *fx)
{
	url_fixture_drop(fx);
	tu_rmtree(fx->dir);
	free(fx->dir);
	clock_wall_source = NULL;
	urlset_crash_hook = NULL;
}
