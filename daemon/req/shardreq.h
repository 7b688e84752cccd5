/*
 * shardreq: the resharding operations of the protocol (shard_set,
 * shard_export, shard_import; docs/sharding.md, "Adding a shard"), on top
 * of shardstate, the URL set's export (urlset.h) and the documents'
 * (docmove.h).
 *
 * Threads: the handlers run on a request worker; what goes through the
 * URL writer or the store writer is answered in the loop.
 */
#ifndef NDDD_SHARDREQ_H
#define NDDD_SHARDREQ_H

#include "nddd.pb-c.h"
#include "opcall.h"

/* The most URLs, and documents, a page or an import carries. */
#define SHARDREQ_PAGE_MAX	4096

Nddd__V1__Code shardreq_validate_set(const Nddd__V1__ShardState *s,
    const char **message);
Nddd__V1__Code shardreq_validate_export(const Nddd__V1__ShardExport *e,
    const char **message);
Nddd__V1__Code shardreq_validate_import(const Nddd__V1__MovedKeys *m,
    const char **message);

void shardreq_set(struct op_call *call);
void shardreq_export(struct op_call *call);
void shardreq_import(struct op_call *call);

#endif
