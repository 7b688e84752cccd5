/*
 * shard_admin: one daemon's part in resharding (docs/sharding.md), as
 * nddctl reshard drives it: its shard state (nddd_shard_set), pages of the
 * keys it no longer owns (nddd_shard_export) and their import on their
 * new owner (nddd_shard_import), and a page turned into deletions
 * (nddd_moved_as_deletions).  The client of a whole shard list is
 * shards.c's; the other files are listed in nddd_impl.h.
 */
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "nddd.pb-c.h"

int
nddd_moved_as_deletions(struct nddd_moved *m)
{
	Nddd__V1__MovedKeys *k = nddd__v1__moved_keys__unpack(NULL,
	    m->packed_len, m->packed);
	struct nddd_moved del = *m;
	size_t kept = 0;
	int rc;

	if (k == NULL)
		return -1;
	/* Texts alone change nothing to delete. */
	for (size_t i = 0; i < k->n_urls; i++) {
		Nddd__V1__MovedUrl *u = k->urls[i];

		if (u->text_only)
			continue;
		u->count = 0;
		u->first_seen_ms = u->last_seen_ms = u->expires_ms = 0;
		u->url.len = 0;
		k->urls[kept++] = u;
	}
	/* The dropped ones are still freed with the message: its count of
	 * them is restored first. */
	for (size_t i = 0; i < k->n_docs; i++)
		k->docs[i]->deleted = 1;
	{
		size_t n_urls = k->n_urls;

		k->n_urls = kept;
		del.packed_len = nddd__v1__moved_keys__get_packed_size(k);
		rc = (del.packed = malloc(del.packed_len + 1)) == NULL ? -1 : 0;
		if (rc == 0)
			nddd__v1__moved_keys__pack(k, del.packed);
		k->n_urls = n_urls;
	}
	nddd__v1__moved_keys__free_unpacked(k, NULL);
	if (rc == -1)
		return -1;
	free(m->packed);
	*m = del;
	m->nurls = kept;
	return 0;
}

int
nddd_shard_set(nddd_client *c, const struct nddd_shard_state *st)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__ShardState m = NDDD__V1__SHARD_STATE__INIT;
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent;

	m.place = st->place;
	m.shards = st->shards;
	m.importing = st->importing != 0;
	m.keep_moved_docs = st->keep_moved_docs != 0;
	m.shard_list = (char *)(st->list != NULL ? st->list : "");
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_SET;
	req.shard_set = &m;
	sent = client_queue(c, &req, &id);
	if ((r = call_for(c, sent, id, NDDD_REPLY_SHARD, "shard_set")) == NULL)
		return -1;
	nddd_reply_free(r);
	return 0;
}

int
nddd_shard_export(nddd_client *c, enum nddd_export_step step,
    uint32_t shards, uint32_t place, uint64_t session, uint64_t url_cursor,
    uint64_t doc_cursor, struct nddd_moved *out)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__ShardExport m = NDDD__V1__SHARD_EXPORT__INIT;
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent;

	memset(out, 0, sizeof(*out));
	m.step = (Nddd__V1__ExportStep)step;
	m.shards = shards;
	m.place = place;
	m.session = session;
	m.url_cursor = url_cursor;
	m.doc_cursor = doc_cursor;
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_EXPORT;
	req.shard_export = &m;
	sent = client_queue(c, &req, &id);
	if ((r = call_for(c, sent, id, NDDD_REPLY_MOVED, "shard_export")) ==
	    NULL)
		return -1;
	*out = r->moved;
	memset(&r->moved, 0, sizeof(r->moved));
	nddd_reply_free(r);
	return 0;
}

int
nddd_shard_import(nddd_client *c, const struct nddd_moved *keys)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__MovedKeys *m;
	struct nddd_reply *r;
	uint64_t id = 0;
	int rc;

	if ((m = nddd__v1__moved_keys__unpack(NULL, keys->packed_len,
	    keys->packed)) == NULL)
		return client_fail(c, "shard_import: not a page of moved keys");
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_IMPORT;
	req.shard_import = m;
	rc = client_queue(c, &req, &id);
	nddd__v1__moved_keys__free_unpacked(m, NULL);
	if ((r = call_for(c, rc, id, NDDD_REPLY_MOVED, "shard_import")) ==
	    NULL)
		return -1;
	nddd_reply_free(r);
	return 0;
}
