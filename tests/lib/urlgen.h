/*
 * urlgen: the URLs the URL benchmarks use, the same for nddd and its peers.
 *
 * Synthetic URLs are "http://www.site<i % 50000>.example/<section>/<i>.html
 * ?ref=<i*7 % 1000>": distinct, of a crawl's usual length (about 60 bytes),
 * spread over 50,000 hosts.  Real lists are read one URL per line (a
 * "category<TAB>url" line gives its URL; scheme-less lines get "http://").
 */
#ifndef NDDD_URLGEN_H
#define NDDD_URLGEN_H

#include <stddef.h>

struct urllist {
	char **urls;
	size_t n, cap;
};

/*
 * The benchmarks' URLs that are never submitted, checked as "unseen":
 * synthetic URLs numbered from here on.
 */
#define URLGEN_UNSEEN_FIRST 1000000000
/* The seed of the order in which the benchmarks check stored URLs. */
#define URLGEN_CHECK_SEED 2026

/* Appends synthetic URLs number offset .. offset + n - 1. */
void urlgen_synthetic(struct urllist *l, size_t n, size_t offset);
/* Appends the URLs of a list file; exits with a message if unreadable. */
void urlgen_file(struct urllist *l, const char *path);
void urlgen_free(struct urllist *l);
/*
 * The same URLs in a random order (seeded, so the same for every
 * benchmark): a pointer array into l, which the caller frees (not the
 * URLs).  Checks use it: a crawler does not check URLs in the order it
 * submitted them, and nddd's store lays them out in that order.
 */
char **urlgen_shuffled(const struct urllist *l, unsigned long long seed);

#endif
