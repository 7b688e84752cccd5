/*
 * accelcheck: a corpus through an accelerator, against the reference.
 * See accelcheck.h.
 */
#include "accelcheck.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

void
accelcheck_job_done(struct accel_job *job, void *arg)
{
	struct accelcheck_run *r = arg;

	(void)job;
	if (--r->pending == 0)
		event_base_loopbreak(r->base);
}

/* The reference's answer for document d: 0 and *fp, or -1 if no term. */
static int
reference(const struct corpus_doc *d, enum simhash_input in, int paper,
    const struct ref_stopwords *ref_sw, uint64_t *fp)
{
	if (in == SIMHASH_INPUT_PREPROCESSED)
		return ref_simhash_preprocessed(d->data, d->len, paper, fp);
	return ref_simhash(d->data, d->len, in == SIMHASH_INPUT_HTML, paper,
	    ref_sw, fp);
}

void
accelcheck_corpus(struct accel *acc, struct event_base *base,
    const struct corpus *c, size_t ndocs, size_t per_job,
    enum simhash_input in, int paper, const struct ref_stopwords *ref_sw,
    long limit_s)
{
	struct accel_job **jobs;
	struct timeval limit = { limit_s, 0 };
	struct accelcheck_run r = { base, 0 };
	size_t nj, j, k, i;
	uint64_t want, got;

	if (ndocs > c->n)
		ndocs = c->n;
	nj = (ndocs + per_job - 1) / per_job;
	ck_assert_ptr_nonnull(jobs = calloc(nj, sizeof(*jobs)));
	for (j = 0; j < nj; j++) {
		size_t first = j * per_job, n = ndocs - first < per_job ?
		    ndocs - first : per_job;

		ck_assert_ptr_nonnull(jobs[j] = accel_job_new(n, in));
		for (k = 0; k < n; k++)
			accel_job_set(jobs[j], k, c->docs[first + k].data,
			    c->docs[first + k].len);
		r.pending++;
		ck_assert_int_eq(accel_submit(acc, jobs[j], accelcheck_job_done,
		    &r), 0);
	}
	event_base_loopexit(base, &limit);
	event_base_dispatch(base);
	ck_assert_msg(r.pending == 0, "%u jobs not done", r.pending);
	for (j = 0; j < nj; j++) {
		for (k = 0; k < accel_job_ndocs(jobs[j]); k++) {
			const struct corpus_doc *d;

			i = j * per_job + k;
			d = &c->docs[i];
			if (reference(d, in, paper, ref_sw, &want) == -1) {
				ck_assert_msg(accel_job_result(jobs[j], k, &got)
				    == SIMHASH_EMPTY_DOCUMENT, "%s: document "
				    "%zu: not EMPTY_DOCUMENT",
				    accel_backend_name(acc), i);
				continue;
			}
			ck_assert_msg(accel_job_result(jobs[j], k, &got) ==
			    SIMHASH_OK, "%s: document %zu: EMPTY_DOCUMENT",
			    accel_backend_name(acc), i);
			ck_assert_msg(got == want, "%s: document %zu (%zu "
			    "bytes): %016llx, reference %016llx",
			    accel_backend_name(acc), i, d->len,
			    (unsigned long long)got, (unsigned long long)want);
		}
		accel_job_free(jobs[j]);
	}
	free(jobs);
}
