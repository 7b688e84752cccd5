/*
 * shards_impl: what the shard list's two halves share, URL routing
 * (shards.c) and document routing (shard_docs.c).  Not installed.
 */
#ifndef LIBNDDD_SHARDS_IMPL_H
#define LIBNDDD_SHARDS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "nddd.h"

struct seqmap;

struct shard {
	char *address;
	nddd_client *c;		/* NULL while down */
	char err[256];		/* why it is down */
	/* One call's part: the positions of its URLs in the call's input,
	 * the URLs, their digests, and their results. */
	size_t *pos;
	const char **urls;
	unsigned char *digests;
	struct nddd_url_result *results;
	size_t n, cap;
	int failed;		/* the part's connection failed */
};

/* The settings every shard must state alike: "CANON, near k K, answer
 * A, containment C, resemblance R". */
#define SHARD_SETTINGS_LEN 256

struct nddd_shards {
	struct shard *shards;
	size_t n;
	struct nddd_options opts;	/* strings owned */
	char settings[SHARD_SETTINGS_LEN];
	char canon_id[128];		/* ... their canonicalization */
	unsigned k;			/* ... their [near] k */
	int hamming;			/* ... their [near] answer */
	float containment, resemblance;	/* ... and its thresholds */
	enum nddd_match match;		/* documents' answer asked for */
	nddd_canon *canon;
	enum nddd_durability durability;
	int digests;			/* URLs go as digests */
	struct nddd_url_opts url_opts;	/* ns owned */
	char *doc_ns;			/* documents' namespace; NULL: the
					   default one */
	struct seqmap *seqmap;		/* the order of recent documents
					   (shard_docs.c) */
	char err[256];
};

/*
 * While a shard is added (docs/sharding.md), an item answered NDDD_MOVED
 * is routed again by the number of places its message names, after a
 * pause that grows with each round (a key bounces between its old and
 * its new owner until the new one serves), for SHARDS_MOVED_WAIT_MS at
 * most; then it keeps its NDDD_MOVED.
 */
#define SHARDS_MOVED_WAIT_MS	120000
/*
 * The places item's NDDD_MOVED message says to route by (0: none it
 * names).
 */
uint32_t shards_moved_route_by(const char *message);
/*
 * Routes by places places: when the list is shorter, it takes the longer
 * list from sh's stats (it must start with the list's addresses) and
 * connects to the new shards as they are used.  Returns 0, or -1 with
 * s->err saying why the list cannot grow.
 */
int shards_grow(struct nddd_shards *s, struct shard *sh, uint32_t places);
/* Sleeps before retry round round (1, 2, ...) of moved items; 0 once
 * the call has waited SHARDS_MOVED_WAIT_MS since *start_ms (set at the
 * first round). */
int shards_moved_pause(unsigned round, long long *start_ms);

/* A shard found down is connected again; one of other settings stays
 * down. */
void shard_reconnect(struct nddd_shards *s, struct shard *sh);
/* Closes sh's connection, sh->err saying why (a printf format). */
void shard_down(struct shard *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * fn(args + i * size) for each i below n, in parallel: the first here,
 * the others on threads of their own (here too, after the first, when a
 * thread cannot start).
 */
void shards_parallel(void (*fn)(void *), void *args, size_t size,
    size_t n);

#endif
