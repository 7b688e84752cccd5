/*
 * nddctl reshard: adds a shard at the end of a shard list while every
 * daemon serves (docs/sharding.md, "Adding a shard").
 *
 * With n shards and the new one at place n (importing: it answers for
 * nothing yet, its clients route by the old list):
 *
 *   1. copy: each old shard exports the keys that move to place n (jump
 *      hashing moves keys only to the new last place), a page at a time,
 *      and the new shard imports them; then the keys changed since, a few
 *      rounds, while the old shard still serves them;
 *   2. hand over: each old shard takes its place among n + 1 (it answers
 *      MOVED for the moved keys; its documents still answer queries), once
 *      every write it admitted before is done; the keys changed since the
 *      last round are copied, and no more can change;
 *   3. serve: the new shard answers for its keys; the old shards leave
 *      the moved documents out of their answers;
 *   4. drop: each old shard deletes the keys it handed over.
 *
 * Every step can be repeated: run the same command again after a failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddctl.h"

/* Copy rounds of changed keys stop once a round brings fewer than this
 * (the rest moves after the hand-over) or after this many rounds. */
#define RESHARD_SETTLED		1000
#define RESHARD_ROUNDS		20

struct reshard {
	const struct nddctl_common *co;
	char *list;			/* the new list, "A,B,...,N" */
	char **addr;			/* its addresses */
	size_t n;			/* the old list's length */
	nddd_client **c;		/* n + 1: the old shards, the new one */
	uint64_t urls, docs;		/* sent to the new shard (a key
					   that changed counts again) */
};

static int
fail_client(struct reshard *r, size_t t, const char *what)
{
	fprintf(stderr, "nddctl: reshard: %s: %s: %s\n", r->addr[t], what,
	    nddd_errstr(r->c[t]));
	return -1;
}

/* Gives every page of an export step of shard t to shard to. */
static int
copy_pages(struct reshard *r, size_t t, size_t to, enum nddd_export_step step,
    uint64_t session, size_t *moved)
{
	uint64_t url_cursor = 0, doc_cursor = 0;
	struct nddd_moved page;
	int done;

	*moved = 0;
	for (;;) {
		if (nddd_shard_export(r->c[t], step, 0, 0, session, url_cursor,
		    doc_cursor, &page) == -1)
			return fail_client(r, t, "export");
		*moved += page.nurls + page.ndocs;
		if (to != t) {
			r->urls += page.nurls;
			r->docs += page.ndocs;
		} else if (nddd_moved_as_deletions(&page) == -1) {
			nddd_moved_free(&page);
			fprintf(stderr, "nddctl: reshard: out of memory\n");
			return -1;
		}
		if ((page.nurls > 0 || page.ndocs > 0) &&
		    nddd_shard_import(r->c[to], &page) == -1) {
			nddd_moved_free(&page);
			return fail_client(r, to, "import");
		}
		url_cursor = page.url_cursor;
		doc_cursor = page.doc_cursor;
		done = page.done;
		nddd_moved_free(&page);
		if (done)
			return 0;
	}
}

/* Begins an export session on shard t: its id in *session. */
static int
begin(struct reshard *r, size_t t, uint64_t *session)
{
	struct nddd_moved page;

	if (nddd_shard_export(r->c[t], NDDD_EXPORT_BEGIN, (uint32_t)r->n + 1,
	    (uint32_t)t, 0, 0, 0, &page) == -1)
		return fail_client(r, t, "export");
	*session = page.session;
	nddd_moved_free(&page);
	return 0;
}

static int
end(struct reshard *r, size_t t, uint64_t session)
{
	struct nddd_moved page;

	if (nddd_shard_export(r->c[t], NDDD_EXPORT_END, 0, 0, session, 0, 0,
	    &page) == -1)
		return fail_client(r, t, "export");
	nddd_moved_free(&page);
	return 0;
}

static int
set_state(struct reshard *r, size_t t, int importing, int keep)
{
	struct nddd_shard_state st = {
		.place = (uint32_t)t,
		.shards = (uint32_t)r->n + 1,
		.importing = importing,
		.keep_moved_docs = keep,
		.list = r->list,
	};

	return nddd_shard_set(r->c[t], &st) == -1 ?
	    fail_client(r, t, "shard_set") : 0;
}

/* The namespaces' default times to live, for the new shard's submits. */
static int
copy_namespaces(struct reshard *r, size_t t)
{
	struct nddd_reply *rep;
	uint64_t id;
	int rc = 0;

	if (nddd_send_stats(r->c[t], &id) == -1 ||
	    (rep = nddd_call(r->c[t], id)) == NULL)
		return fail_client(r, t, "stats");
	for (size_t i = 0; i < rep->nnamespaces && rc == 0; i++) {
		const struct nddd_namespace *ns = &rep->namespaces[i];
		struct nddd_reply *set;

		if (ns->default_ttl_seconds == 0)
			continue;
		if (nddd_send_namespace_set(r->c[r->n], ns->name,
		    ns->default_ttl_seconds, &id) == -1 ||
		    (set = nddd_call(r->c[r->n], id)) == NULL)
			rc = fail_client(r, r->n, "namespace_set");
		else
			nddd_reply_free(set);
	}
	nddd_reply_free(rep);
	return rc;
}

/* Step 1 for shard t: everything it holds that moves, then what changed,
 * until a round brings little. */
static int
copy_shard(struct reshard *r, size_t t, uint64_t *session)
{
	size_t moved;

	if (begin(r, t, session) == -1 ||
	    copy_pages(r, t, r->n, NDDD_EXPORT_PAGE, *session, &moved) == -1)
		return -1;
	fprintf(stderr, "nddctl: reshard: %s: %zu keys copied\n", r->addr[t],
	    moved);
	for (int round = 0; round < RESHARD_ROUNDS; round++) {
		if (copy_pages(r, t, r->n, NDDD_EXPORT_CHANGED, *session,
		    &moved) == -1)
			return -1;
		if (moved < RESHARD_SETTLED)
			break;
	}
	return 0;
}

static int
run(struct reshard *r, bool serving)
{
	uint64_t *session = calloc(r->n, sizeof(*session));
	size_t moved;
	int rc = -1;

	if (session == NULL) {
		fprintf(stderr, "nddctl: reshard: out of memory\n");
		return -1;
	}
	if (!serving) {
		/* 1. copy. */
		if (set_state(r, r->n, 1, 0) == -1)
			goto out;
		for (size_t t = 0; t < r->n; t++)
			if (copy_namespaces(r, t) == -1 ||
			    copy_shard(r, t, &session[t]) == -1)
				goto out;
		/* 2. hand over, and the last changes. */
		for (size_t t = 0; t < r->n; t++) {
			if (set_state(r, t, 0, 1) == -1 ||
			    copy_pages(r, t, r->n, NDDD_EXPORT_CHANGED,
			    session[t], &moved) == -1 ||
			    end(r, t, session[t]) == -1)
				goto out;
			fprintf(stderr, "nddctl: reshard: %s handed over\n",
			    r->addr[t]);
		}
		/* 3. serve. */
		if (set_state(r, r->n, 0, 0) == -1)
			goto out;
		fprintf(stderr, "nddctl: reshard: %s serves\n", r->addr[r->n]);
	}
	for (size_t t = 0; t < r->n; t++)
		if (set_state(r, t, 0, 0) == -1)
			goto out;
	/* 4. drop. */
	for (size_t t = 0; t < r->n; t++) {
		if (begin(r, t, &session[t]) == -1 ||
		    copy_pages(r, t, t, NDDD_EXPORT_PAGE, session[t],
		    &moved) == -1 || end(r, t, session[t]) == -1)
			goto out;
		fprintf(stderr, "nddctl: reshard: %s dropped %zu moved keys\n",
		    r->addr[t], moved);
	}
	rc = 0;
out:
	free(session);
	return rc;
}

/* Whether the new shard is fresh (0), was left importing (0 too: the
 * copy starts over), serves already (1: only the last steps remain), or
 * cannot be added (-1). */
static int
new_shard_state(struct reshard *r)
{
	struct nddd_stats old, st;

	if (nddd_stats(r->c[0], &old) == -1)
		return fail_client(r, 0, "stats");
	if (nddd_stats(r->c[r->n], &st) == -1)
		return fail_client(r, r->n, "stats");
	if (strcmp(old.canon, st.canon) != 0 || old.near_k != st.near_k) {
		fprintf(stderr, "nddctl: reshard: %s states \"%s, near k %u\", "
		    "%s \"%s, near k %u\": the settings must be the same\n",
		    r->addr[0], old.canon, old.near_k, r->addr[r->n], st.canon,
		    st.near_k);
		return -1;
	}
	if (st.shard_count == r->n + 1 && st.shard_place == r->n)
		return st.shard_importing ? 0 : 1;
	if (st.shard_count != 0 || st.urls != 0 || st.docs != 0) {
		fprintf(stderr, "nddctl: reshard: %s holds keys already: a new "
		    "shard starts empty\n", r->addr[r->n]);
		return -1;
	}
	return 0;
}

int
nddctl_reshard(const struct nddctl_common *co, int argc, char **argv)
{
	struct reshard r = { .co = co };
	const char *add = NULL;
	int status = NDDCTL_EXIT_UNREACHABLE, state;
	size_t len;
	char *p;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--add") == 0 && i + 1 < argc)
			add = argv[++i];
		else {
			fprintf(stderr, "usage: nddctl -H OLD,LIST reshard --add "
			    "HOST:PORT\n");
			return NDDCTL_EXIT_USAGE;
		}
	}
	if (add == NULL || *add == '\0' || strchr(add, ',') != NULL) {
		fprintf(stderr, "nddctl: reshard: --add names the new shard's "
		    "address\n");
		return NDDCTL_EXIT_USAGE;
	}
	len = strlen(co->address) + strlen(add) + 2;
	if ((r.list = malloc(len)) == NULL ||
	    (r.addr = calloc(len, sizeof(*r.addr))) == NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		goto out;
	}
	snprintf(r.list, len, "%s,%s", co->address, add);
	for (p = r.list; p != NULL; r.n++) {
		char *comma = strchr(p, ',');
		size_t alen = comma != NULL ? (size_t)(comma - p) : strlen(p);

		if (alen == 0) {
			fprintf(stderr, "nddctl: -H: an empty address in the "
			    "shard list\n");
			status = NDDCTL_EXIT_USAGE;
			goto out;
		}
		if ((r.addr[r.n] = strndup(p, alen)) == NULL)
			goto out;
		for (size_t j = 0; j < r.n; j++)
			if (strcmp(r.addr[j], r.addr[r.n]) == 0) {
				fprintf(stderr, "nddctl: reshard: %s is listed "
				    "twice\n", r.addr[j]);
				status = NDDCTL_EXIT_USAGE;
				goto out;
			}
		p = comma != NULL ? comma + 1 : NULL;
	}
	r.n--;		/* the old list; addr[n] is the new shard */
	if ((r.c = calloc(r.n + 1, sizeof(*r.c))) == NULL)
		goto out;
	for (size_t t = 0; t <= r.n; t++) {
		struct nddctl_common one = *co;

		one.address = r.addr[t];
		if ((r.c[t] = nddctl_connect(&one)) == NULL)
			goto out;
	}
	status = NDDCTL_EXIT_ITEMS;
	if ((state = new_shard_state(&r)) == -1 || run(&r, state == 1) == -1)
		goto out;
	if (co->json)
		printf("{\"shards\":%zu,\"urls\":%" PRIu64 ",\"docs\":%" PRIu64
		    "}\n", r.n + 1, r.urls, r.docs);
	else
		printf("added %s: %zu shards; %" PRIu64 " URL items and %"
		    PRIu64 " documents sent to it (keys that changed meanwhile "
		    "count again)\n", add, r.n + 1, r.urls, r.docs);
	status = NDDCTL_EXIT_OK;
out:
	for (size_t t = 0; r.c != NULL && t <= r.n; t++)
		nddd_close(r.c[t]);
	for (size_t t = 0; r.addr != NULL && r.addr[t] != NULL; t++)
		free(r.addr[t]);
	free(r.c);
	free(r.addr);
	free(r.list);
	return status;
}
