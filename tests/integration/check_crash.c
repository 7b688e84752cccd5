/*
 * Crash safety, twenty times over: several clients run a mixed load of URL
 * submits and deletes, and one of document submits and deletes, the daemon
 * is killed with SIGKILL at a random moment, restarted on the same data,
 * and then every acknowledged submit must be present, every acknowledged
 * delete absent (operations in flight at the kill may have gone either
 * way), and the admin verify operation must find the rebuilt filter and
 * tables exactly equal to the store.  The filter is tiny, so its counters
 * saturate and the exact-deletion path is exercised; the URL journal holds
 * 600 changes and segments 16 records, so the kills land in the middle of
 * journal writes, flushes and merges alike.  One URL client asks for
 * relaxed durability: a kill of the daemon loses none of its acknowledged
 * changes either.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#define CLIENTS 3
#define PER_CLIENT 6000
#define DOCS 3000
#define ITERATIONS 20

enum url_state {
	NEVER,
	PENDING_SUBMIT,
	PRESENT,		/* submit acknowledged */
	PENDING_DELETE,
	ABSENT,			/* delete acknowledged */
};

struct client {
	const char *address;
	int iter, no;
	uint64_t seed;
	char *urls[PER_CLIENT];
	enum url_state state[PER_CLIENT];
	size_t acked;
};

struct batch {
	uint64_t id;
	enum nddd_url_op op;
	size_t n;
	int idx[200];
};

static void *
client_main(void *arg)
{
	struct client *cl = arg;
	struct batch fl[4];
	size_t nfl = 0, next = 0;
	char *err;
	nddd_client *c = nddd_connect(cl->address, 5000, &err);

	if (c == NULL) {
		free(err);
		return NULL;
	}
	if (cl->no == 0)
		nddd_set_durability(c, NDDD_RELAXED);
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		while (nfl < 4) {
			struct batch *b = &fl[nfl];
			const char *u[200];
			int del = next > 400 && tu_rand_below(&cl->seed, 3) == 0;

			/* New URLs first; once all are sent, deletes and
			 * re-submits go on until the kill. */
			b->n = 0;
			b->op = del ? NDDD_URL_DELETE : NDDD_URL_SUBMIT;
			for (int tries = 0; b->n < (del ? 100u : 200u) &&
			    tries < 2000; tries++) {
				int fresh = !del && next < PER_CLIENT;
				int i = fresh ? (int)next :
				    (int)tu_rand_below(&cl->seed, next);

				if (!fresh && cl->state[i] != (del ? PRESENT :
				    ABSENT))
					continue;
				if (fresh)
					next++;
				cl->state[i] = del ? PENDING_DELETE :
				    PENDING_SUBMIT;
				u[b->n] = cl->urls[i];
				b->idx[b->n++] = i;
			}
			if (b->n == 0)
				break;
			if (nddd_send_urls(c, b->op, u, NULL, b->n, &b->id) ==
			    -1)
				goto out;
			nfl++;
		}
		if (nfl == 0 || nddd_recv(c, &r) == -1)
			break;
		for (k = 0; k < nfl && fl[k].id != r->id; k++)
			;
		if (k < nfl && r->kind == NDDD_REPLY_URLS) {
			for (size_t i = 0; i < fl[k].n; i++) {
				if (r->results[i].code != NDDD_OK)
					continue;
				cl->state[fl[k].idx[i]] =
				    fl[k].op == NDDD_URL_SUBMIT ? PRESENT :
				    ABSENT;
				cl->acked++;
			}
			fl[k] = fl[--nfl];
		}
		nddd_reply_free(r);
	}
out:
	nddd_close(c);
	return NULL;
}

/* Document submits and deletes, one at a time in a window of 8. */
struct doc_client {
	const char *address;
	int iter;
	uint64_t seed;
	char *urls[DOCS];
	enum url_state state[DOCS];
	uint64_t fp[DOCS];		/* as acknowledged */
	size_t acked;
};

static char *
doc_body(int iter, int j)
{
	char *b;

	/* Near copies: every fifth document repeats an earlier one's text
	 * with one word changed, so groups form. */
	ck_assert_int_ne(asprintf(&b, "crash test story number %d of round "
	    "%d about markets %d and weather %d with details %d", j % 5 ? j :
	    j / 5, iter, j % 7, j % 11, j), -1);
	return b;
}

static void *
doc_client_main(void *arg)
{
	struct doc_client *dc = arg;
	struct { uint64_t id; int i; bool del; } fl[8];
	size_t nfl = 0;
	int next = 0;
	char *err;
	nddd_client *c = nddd_connect(dc->address, 5000, &err);

	if (c == NULL) {
		free(err);
		return NULL;
	}
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		while (nfl < 8) {
			bool del = false;
			int i = -1, rc;

			/* New documents first, then deletes and re-submits
			 * of random ones, until the kill. */
			for (int tries = 0; tries < 100 && i < 0; tries++) {
				int j;

				del = next > 100 &&
				    tu_rand_below(&dc->seed, 4) == 0;
				if (!del && next < DOCS) {
					i = next++;
					break;
				}
				j = (int)tu_rand_below(&dc->seed,
				    (uint64_t)next);
				if (dc->state[j] == (del ? PRESENT : ABSENT))
					i = j;
			}
			if (i < 0)
				break;
			dc->state[i] = del ? PENDING_DELETE : PENDING_SUBMIT;
			if (del)
				rc = nddd_send_doc_delete(c, dc->urls[i],
				    strlen(dc->urls[i]), &fl[nfl].id);
			else {
				char *body = doc_body(dc->iter, i);

				rc = nddd_send_doc_submit(c, dc->urls[i],
				    strlen(dc->urls[i]), body, strlen(body),
				    NDDD_TEXT, 0, &fl[nfl].id);
				free(body);
			}
			if (rc == -1)
				goto out;
			fl[nfl].i = i;
			fl[nfl++].del = del;
		}
		if (nfl == 0 || nddd_recv(c, &r) == -1)
			break;
		for (k = 0; k < nfl && fl[k].id != r->id; k++)
			;
		if (k < nfl) {
			if (r->kind == NDDD_REPLY_DOC) {
				dc->state[fl[k].i] = PRESENT;
				dc->fp[fl[k].i] = r->doc.simhash;
				dc->acked++;
			} else if (r->kind == NDDD_REPLY_DOC_DELETE) {
				dc->state[fl[k].i] = ABSENT;
				dc->acked++;
			}
			fl[k] = fl[--nfl];
		}
		nddd_reply_free(r);
	}
out:
	nddd_close(c);
	return NULL;
}

static void
check_docs(nddd_client *c, const struct doc_client *dc)
{
	for (int j = 0; j < DOCS; j++) {
		struct nddd_reply *r;
		uint64_t id;

		if (dc->state[j] != PRESENT && dc->state[j] != ABSENT &&
		    dc->state[j] != NEVER)
			continue;
		ck_assert_int_eq(nddd_send_doc_get(c, dc->urls[j],
		    strlen(dc->urls[j]), &id), 0);
		r = nddd_call(c, id);
		ck_assert_ptr_nonnull(r);
		if (dc->state[j] == PRESENT) {
			ck_assert_msg(r->kind == NDDD_REPLY_DOC,
			    "iteration %d: acknowledged document %s lost",
			    dc->iter, dc->urls[j]);
			ck_assert_uint_eq(r->doc.simhash, dc->fp[j]);
		} else
			ck_assert_msg(r->kind == NDDD_REPLY_ERROR &&
			    r->code == NDDD_NOT_FOUND, "iteration %d: %s "
			    "present after its acknowledged delete", dc->iter,
			    dc->urls[j]);
		nddd_reply_free(r);
	}
}

START_TEST(test_sigkill_under_mixed_load)
{
	struct harness h;
	static struct client cl[CLIENTS];
	static struct doc_client dc;
	uint64_t seed = 777;
	size_t total_acked = 0, total_pending = 0;
	uint64_t flushes = 0, merges = 0;

	harness_init(&h, "[server]\nmax_batch = 200\n[urls]\ncapacity = 500\n"
	    "journal_entries = 600\nsegment_records = 16\n");
	for (int iter = 0; iter < ITERATIONS; iter++) {
		pthread_t th[CLIENTS], dth;
		struct nddd_verify v;
		struct nddd_stats st;
		nddd_client *c;

		harness_start(&h);
		for (int i = 0; i < CLIENTS; i++) {
			cl[i].address = h.address;
			cl[i].iter = iter;
			cl[i].no = i;
			cl[i].seed = tu_rand(&seed);
			cl[i].acked = 0;
			for (int j = 0; j < PER_CLIENT; j++) {
				free(cl[i].urls[j]);
				ck_assert_int_ne(asprintf(&cl[i].urls[j],
				    "http://crash.example/%d/%d/%d", iter, i,
				    j), -1);
				cl[i].state[j] = NEVER;
			}
			pthread_create(&th[i], NULL, client_main, &cl[i]);
		}
		dc.address = h.address;
		dc.iter = iter;
		dc.seed = tu_rand(&seed);
		dc.acked = 0;
		for (int j = 0; j < DOCS; j++) {
			free(dc.urls[j]);
			ck_assert_int_ne(asprintf(&dc.urls[j],
			    "http://docs.example/%d/%d", iter, j), -1);
			dc.state[j] = NEVER;
		}
		pthread_create(&dth, NULL, doc_client_main, &dc);
		usleep(50000 + (useconds_t)tu_rand_below(&seed, 400000));
		harness_kill(&h);
		pthread_join(dth, NULL);
		total_acked += dc.acked;
		for (int i = 0; i < CLIENTS; i++) {
			pthread_join(th[i], NULL);
			total_acked += cl[i].acked;
			for (int j = 0; j < PER_CLIENT; j++)
				total_pending += cl[i].state[j] ==
				    PENDING_SUBMIT || cl[i].state[j] ==
				    PENDING_DELETE;
		}

		harness_start(&h);
		c = harness_client(&h);
		for (int i = 0; i < CLIENTS; i++) {
			struct nddd_url_result *res = calloc(PER_CLIENT,
			    sizeof(*res));

			ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
			    (const char *const *)cl[i].urls, PER_CLIENT, res,
			    200, 4, NULL, NULL), 0);
			for (int j = 0; j < PER_CLIENT; j++) {
				if (cl[i].state[j] == PRESENT)
					ck_assert_msg(res[j].count >= 1,
					    "iteration %d: acknowledged submit "
					    "of %s lost", iter, cl[i].urls[j]);
				if (cl[i].state[j] == ABSENT ||
				    cl[i].state[j] == NEVER)
					ck_assert_msg(res[j].count == 0,
					    "iteration %d: %s present after "
					    "its acknowledged delete", iter,
					    cl[i].urls[j]);
			}
			free(res);
		}
		check_docs(c, &dc);
		ck_assert_int_eq(nddd_verify(c, &v), 0);
		ck_assert_msg(v.consistent, "iteration %d: %s", iter, v.detail);
		ck_assert_int_eq(nddd_stats(c, &st), 0);
		flushes += st.url_store.flushes;
		merges += st.url_store.merges;
		nddd_close(c);
		ck_assert_int_eq(harness_stop(&h), 0);
	}
	printf("crash test: %d kills, %zu acknowledged operations, none "
	    "lost (%zu were in flight at the kills); %llu flushes and %llu "
	    "merges after the restarts\n", ITERATIONS, total_acked,
	    total_pending, (unsigned long long)flushes,
	    (unsigned long long)merges);
	/* The restarts replay, flush and merge what the kills left. */
	ck_assert_uint_gt(flushes, ITERATIONS);
	/* The load never ends by itself: every kill lands mid-stream. */
	ck_assert_uint_gt(total_pending, ITERATIONS);
	for (int i = 0; i < CLIENTS; i++)
		for (int j = 0; j < PER_CLIENT; j++) {
			free(cl[i].urls[j]);
			cl[i].urls[j] = NULL;
		}
	for (int j = 0; j < DOCS; j++) {
		free(dc.urls[j]);
		dc.urls[j] = NULL;
	}
	harness_cleanup(&h);
}
END_TEST

Suite *crash_suite(void);

Suite *
crash_suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sigkill_under_mixed_load);
	suite_add_tcase(s, tc);
	return s;
}
