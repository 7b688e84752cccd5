/*
 * urlreq: the URL operations of the protocol (url_submit, url_check,
 * url_delete, url_forget; namespace_set, and the checks of namespace_drop,
 * which docdrop.h carries out) on top of urlset.
 *
 * A batch names its URLs, or their digests made by the client with the
 * server's canonicalization (refused whole if it names another).  Each URL
 * of a batch is answered on its own: an invalid URL fails its item with
 * INVALID_ARGUMENT and the others go on.  Checks are answered at once;
 * submits and deletes go to the URL writer as one job per request and are
 * answered once as durable as the batch asked.
 *
 * Threads: the handlers run on a request worker, with that worker's
 * keyer, reader and arena; a job's reply is finished in the loop.
 */
#ifndef NDDD_URLREQ_H
#define NDDD_URLREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nddd.pb-c.h"
#include "opcall.h"
#include "reply.h"
#include "urlns.h"

/*
 * OK, or the code refusing batch as a whole and a static *message
 * (URLs and digests both named, digests of the wrong size, too many
 * items, an unknown durability).
 */
Nddd__V1__Code urlreq_validate(const Nddd__V1__UrlBatch *batch,
    const struct request_limits *lim, const char **message);

/*
 * OK, or INVALID_ARGUMENT and a static *message for a namespace name or a
 * default time to live that cannot be, or (drop) the default namespace.
 */
Nddd__V1__Code urlreq_namespace_validate(const char *name,
    uint64_t ttl_seconds, bool drop, const char **message);

/*
 * OK, or INVALID_ARGUMENT and a static *message for a url_forget that
 * names neither or both of a host and a prefix, a host that cannot be
 * one, subdomains with a prefix, or a bad namespace name.
 */
Nddd__V1__Code urlreq_forget_validate(const Nddd__V1__UrlForget *f,
    const char **message);

/* A NamespaceInfo reply to r: name, its URLs' count and default time to
 * live (urls; NULL: it has none), its documents. */
void urlreq_reply_namespace(struct reply *r, const char *name,
    const struct urlns_info *urls, uint64_t docs);

/* The operations' handlers (operation.h). */
void urlreq_check(struct op_call *call);
void urlreq_submit(struct op_call *call);
void urlreq_delete(struct op_call *call);
void urlreq_namespace_set(struct op_call *call);
void urlreq_forget(struct op_call *call);

#endif
