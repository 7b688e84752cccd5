/*
 * Unit tests for shardstate: a change of state takes effect at once for
 * the writes admitted after it, waits for those admitted before it, and
 * changes are one at a time, kept in the store in the order they take
 * effect.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardstate.h"
#include "store.h"
#include "testutil.h"

struct fixture {
	char *dir;
	struct store *st;
	struct shard_state *ss;
};

static void
fx_open(struct fixture *fx)
{
	struct store_options so = { .map_size = 64 << 20,
	    .sync = STORE_SYNC_NONE };
	const char *why = NULL;
	char *cause = NULL;

	so.dir = fx->dir = tu_tmpdir();
	fx->st = store_open(&so, &cause);
	ck_assert_msg(fx->st != NULL, "%s", cause ? cause : "store");
	fx->ss = shard_state_open(fx->st, &why);
	ck_assert_msg(fx->ss != NULL, "%s", why ? why : "shard state");
}

static void
fx_close(struct fixture *fx)
{
	shard_state_free(fx->ss);
	store_close(fx->st);
	tu_rmtree(fx->dir);
	free(fx->dir);
}

/* A change run in a thread of its own. */
struct change {
	struct shard_state *ss;
	Nddd__V1__ShardState msg;
	Nddd__V1__Code code;
	const char *why;
	bool done;			/* atomic */
	pthread_t thread;
};

static void *
change_main(void *arg)
{
	struct change *c = arg;

	c->why = shard_state_set(c->ss, &c->msg, &c->code);
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void
change_start(struct change *c, struct shard_state *ss, uint32_t place,
    uint32_t shards)
{
	memset(c, 0, sizeof(*c));
	c->ss = ss;
	nddd__v1__shard_state__init(&c->msg);
	c->msg.place = place;
	c->msg.shards = shards;
	c->msg.shard_list = (char *)"";
	ck_assert_int_eq(pthread_create(&c->thread, NULL, change_main, c), 0);
}

static void
change_join(struct change *c)
{
	ck_assert_int_eq(pthread_join(c->thread, NULL), 0);
	ck_assert_msg(c->why == NULL, "%s", c->why);
	ck_assert_int_eq(c->code, NDDD__V1__CODE__OK);
}

static bool
change_done(struct change *c)
{
	return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

static void
nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

/* Waits (at most 10 s) until the state has shards places. */
static void
wait_for_shards(struct shard_state *ss, uint32_t shards)
{
	struct shard_view v;
	double until = tu_now() + 10;

	for (;;) {
		shard_state_view(ss, &v);
		if (v.shards == shards)
			return;
		ck_assert_msg(tu_now() < until, "the state never had %u shards",
		    shards);
		nap_ms(1);
	}
}

START_TEST(test_invalid_states)
{
	struct fixture fx;
	Nddd__V1__ShardState msg;
	Nddd__V1__Code code;

	fx_open(&fx);
	nddd__v1__shard_state__init(&msg);
	msg.place = 2;
	msg.shards = 2;
	ck_assert_ptr_nonnull(shard_state_set(fx.ss, &msg, &code));
	ck_assert_int_eq(code, NDDD__V1__CODE__INVALID_ARGUMENT);
	msg.place = 0;
	msg.importing = true;
	ck_assert_ptr_nonnull(shard_state_set(fx.ss, &msg, &code));
	ck_assert_int_eq(code, NDDD__V1__CODE__INVALID_ARGUMENT);
	msg.shards = 0;
	msg.importing = false;
	msg.shard_list = (char *)"a:1 b:2";
	ck_assert_ptr_nonnull(shard_state_set(fx.ss, &msg, &code));
	ck_assert_int_eq(code, NDDD__V1__CODE__INVALID_ARGUMENT);
	fx_close(&fx);
}
END_TEST

START_TEST(test_change_waits_for_admitted_writes)
{
	struct fixture fx;
	struct shard_view v;
	struct change c;
	unsigned before, after;

	fx_open(&fx);
	before = shard_admit(fx.ss, &v);
	ck_assert_uint_eq(v.shards, 0);
	change_start(&c, fx.ss, 0, 2);
	/* The new state is the writes' at once, and reads and admissions go
	 * on while the change waits: it holds no lock meanwhile. */
	wait_for_shards(fx.ss, 2);
	after = shard_admit(fx.ss, &v);
	ck_assert_uint_eq(v.shards, 2);
	ck_assert_uint_ne(after, before);
	shard_release(fx.ss, after);
	nap_ms(50);
	ck_assert(!change_done(&c));
	shard_release(fx.ss, before);
	change_join(&c);
	fx_close(&fx);
}
END_TEST

START_TEST(test_changes_one_at_a_time)
{
	struct fixture fx;
	struct shard_view v;
	struct change a, b;
	const char *why = NULL;
	unsigned t;

	fx_open(&fx);
	t = shard_admit(fx.ss, &v);
	change_start(&a, fx.ss, 0, 2);
	wait_for_shards(fx.ss, 2);
	/* a drains: b waits for it, not taking effect meanwhile. */
	change_start(&b, fx.ss, 1, 3);
	nap_ms(50);
	ck_assert(!change_done(&a));
	ck_assert(!change_done(&b));
	shard_state_view(fx.ss, &v);
	ck_assert_uint_eq(v.shards, 2);
	shard_release(fx.ss, t);
	change_join(&a);
	change_join(&b);
	shard_state_view(fx.ss, &v);
	ck_assert_uint_eq(v.shards, 3);
	ck_assert_uint_eq(v.place, 1);
	/* The store kept the last. */
	shard_state_free(fx.ss);
	fx.ss = shard_state_open(fx.st, &why);
	ck_assert_msg(fx.ss != NULL, "%s", why ? why : "shard state");
	shard_state_view(fx.ss, &v);
	ck_assert_uint_eq(v.shards, 3);
	ck_assert_uint_eq(v.place, 1);
	fx_close(&fx);
}
END_TEST

Suite *shardstate_suite(void);

Suite *
shardstate_suite(void)
{
	Suite *s = suite_create("shardstate");
	TCase *tc = tcase_create("shardstate");

	tcase_add_test(tc, test_invalid_states);
	tcase_add_test(tc, test_change_waits_for_admitted_writes);
	tcase_add_test(tc, test_changes_one_at_a_time);
	suite_add_tcase(s, tc);
	return s;
}
