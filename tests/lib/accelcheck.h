/*
 * accelcheck: fingerprints a corpus through an accelerator the way the
 * daemon does (jobs submitted to accel, completions through the event
 * loop) and checks every document against the naive reference.  Shared by
 * the unit tests of the accelerator interface and of its backends.
 */
#ifndef NDDD_ACCELCHECK_H
#define NDDD_ACCELCHECK_H

#include <stddef.h>

#include <event2/event.h>

#include "accel.h"
#include "corpus.h"
#include "simhash_ref.h"

/* Jobs in flight on base: accelcheck_job_done breaks the loop at zero. */
struct accelcheck_run {
	struct event_base *base;
	unsigned pending;
};

/* A job completion callback; arg is a struct accelcheck_run. */
void accelcheck_job_done(struct accel_job *job, void *arg);

/*
 * Fingerprints the first ndocs documents of c (all of them if there are
 * fewer) through acc, in jobs of per_job documents, running base until
 * every job is done or limit_s seconds have passed.  Fails the running
 * test on any job left undone and on any result that differs from the
 * reference: a fingerprint, or EMPTY_DOCUMENT exactly where the reference
 * finds no term.  ref_sw is the reference's stop-word list; paper selects
 * the paper-exact term hash.
 */
void accelcheck_corpus(struct accel *acc, struct event_base *base,
    const struct corpus *c, size_t ndocs, size_t per_job,
    enum simhash_input in, int paper, const struct ref_stopwords *ref_sw,
    long limit_s);

#endif
