/*
 * call: libnddd's synchronous calls: nddd_call (send, then wait for that
 * reply), and the calls made of it, nddd_stats, nddd_verify and the
 * url_forget ones; call_for serves shard_admin.c too.  The requests are
 * request.c's; the other files are listed in nddd_impl.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "nddd.h"
#include "nddd_impl.h"

struct nddd_reply *
nddd_call(nddd_client *c, uint64_t id)
{
	struct nddd_reply *r;

	for (;;) {
		if (nddd_recv(c, &r) == -1)
			return NULL;
		/* id 0: the server refused the connection itself. */
		if (r->id == id || r->id == 0)
			return r;
		nddd_reply_free(r);
	}
}

struct nddd_reply *
call_for(nddd_client *c, int sent, uint64_t id, enum nddd_reply_kind kind,
    const char *what)
{
	struct nddd_reply *r;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL)
		return NULL;
	if (r->kind == kind)
		return r;
	client_fail(c, "%s refused: %s: %s", what, nddd_code_name(r->code),
	    r->message ? r->message : "");
	nddd_reply_free(r);
	return NULL;
}

int
nddd_verify(nddd_client *c, struct nddd_verify *out)
{
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent = nddd_send_verify(c, &id);

	if ((r = call_for(c, sent, id, NDDD_REPLY_VERIFY, "verify")) == NULL)
		return -1;
	*out = r->verify;
	nddd_reply_free(r);
	return 0;
}

int
nddd_stats(nddd_client *c, struct nddd_stats *out)
{
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent = nddd_send_stats(c, &id);

	if ((r = call_for(c, sent, id, NDDD_REPLY_STATS, "stats")) == NULL)
		return -1;
	*out = r->stats;
	nddd_reply_free(r);
	return 0;
}

/*
 * Waits for the reply to the url_forget id (sent: what sending it
 * returned) and takes its count.
 */
static int
forget_finish(nddd_client *c, int sent, uint64_t id, uint64_t *forgotten)
{
	struct nddd_reply *r;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL)
		return -1;
	if (r->kind != NDDD_REPLY_FORGET) {
		if (r->kind == NDDD_REPLY_ERROR)
			client_fail(c, "url_forget refused: %s: %s",
			    nddd_code_name(r->code),
			    r->message ? r->message : "");
		else
			client_fail(c, "url_forget: the reply has no count");
		nddd_reply_free(r);
		return -1;
	}
	*forgotten = r->forgotten;
	nddd_reply_free(r);
	return 0;
}

int
nddd_url_forget_host(nddd_client *c, const char *ns, const char *host,
    int subdomains, uint64_t *forgotten)
{
	uint64_t id = 0;
	int sent;

	sent = nddd_send_url_forget_host(c, ns, host, subdomains, &id);
	return forget_finish(c, sent, id, forgotten);
}

int
nddd_url_forget_prefix(nddd_client *c, const char *ns, const char *prefix,
    size_t len, uint64_t *forgotten)
{
	uint64_t id = 0;
	int sent;

	sent = nddd_send_url_forget_prefix(c, ns, prefix, len, &id);
	return forget_finish(c, sent, id, forgotten);
}
