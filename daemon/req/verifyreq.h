/*
 * verifyreq: the verify operation of the protocol.  The URL writer flushes
 * its journal and checks the URLs (filter counters and index against the
 * records), then the store writer checks the documents (tables and URL
 * index against the records), alone between its transactions; the reply
 * goes out after both.
 */
#ifndef NDDD_VERIFYREQ_H
#define NDDD_VERIFYREQ_H

#include "opcall.h"

/* The handler (operation.h), on a request worker. */
void verifyreq_start(struct op_call *call);

#endif
