/*
 * redo: the store writer's journal of LMDB operations.  See redo.h.
 */
#include "redo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

#define REDO_MAGIC	0x31464a53u	/* "SJF1" */
#define REDO_OP_HEADER	8
#define REDO_PUT	1
#define REDO_DEL	2

struct redo {
	struct journal *j;
	/* The group being captured: its frame's payload. */
	uint8_t *buf;
	size_t len, cap;
	size_t ops;
	bool failed;
};

/* aux holds the payload's length. */
static int64_t
payload_len(uint32_t magic, uint32_t count, uint32_t aux)
{
	(void)count;
	return magic == REDO_MAGIC ? (int64_t)aux : -1;
}

static const struct journal_format redo_format = {
	.file = "store.journal",
	.what = "the store journal",
	.payload_len = payload_len,
};

struct redo *
redo_open(const char *dir, size_t size, char **cause)
{
	struct redo *r;

	*cause = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->j = journal_open(dir, &redo_format, size, cause)) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

void
redo_close(struct redo *r)
{
	if (r == NULL)
		return;
	journal_close(r->j);
	free(r->buf);
	free(r);
}

/* Decodes the operation at p (n bytes left) into *op; its length, or 0 if
 * it does not fit. */
static size_t
op_decode(const uint8_t *p, size_t n, struct redo_op *op)
{
	size_t klen, vlen;

	if (n < REDO_OP_HEADER)
		return 0;
	klen = le_get16(p + 2);
	vlen = le_get32(p + 4);
	if ((p[1] != REDO_PUT && p[1] != REDO_DEL) ||
	    klen > n - REDO_OP_HEADER || vlen > n - REDO_OP_HEADER - klen)
		return 0;
	op->table = p[0];
	op->del = p[1] == REDO_DEL;
	op->key = p + REDO_OP_HEADER;
	op->klen = klen;
	op->val = p + REDO_OP_HEADER + klen;
	op->vlen = vlen;
	return REDO_OP_HEADER + klen + vlen;
}

struct replay {
	redo_op_fn fn;
	void *arg;
	uint64_t ops;
};

static int
replay_frame(const struct journal_frame *f, void *arg)
{
	struct replay *rp = arg;
	size_t off = 0;

	for (uint32_t i = 0; i < f->count; i++) {
		struct redo_op op;
		size_t n = op_decode(f->payload + off, f->len - off, &op);

		if (n == 0 || rp->fn(&op, rp->arg) == -1)
			return -1;
		off += n;
	}
	rp->ops += f->count;
	return off == f->len ? 0 : -1;
}

int
redo_replay(struct redo *r, uint64_t after_seq, redo_op_fn fn, void *arg,
    uint64_t *frames, uint64_t *ops, char **cause)
{
	struct replay rp = { .fn = fn, .arg = arg };
	int rc = journal_replay(r->j, after_seq, replay_frame, &rp, frames,
	    cause);

	*ops = rp.ops;
	return rc;
}

int
redo_reread(struct redo *r, uint64_t after_seq, redo_op_fn fn, void *arg,
    char **cause)
{
	struct replay rp = { .fn = fn, .arg = arg };

	return journal_reread(r->j, after_seq, replay_frame, &rp, cause);
}

void
redo_capture_start(struct redo *r)
{
	r->len = 0;
	r->ops = 0;
	r->failed = false;
}

void
redo_capture(struct redo *r, const struct redo_op *op)
{
	size_t need = REDO_OP_HEADER + op->klen + (op->del ? 0 : op->vlen);
	uint8_t *p;

	if (r->failed)
		return;
	if (op->klen > UINT16_MAX || need > UINT32_MAX - r->len ||
	    r->ops == UINT32_MAX) {
		r->failed = true;
		return;
	}
	if (r->len + need > r->cap) {
		size_t cap = r->cap ? r->cap : 65536;

		while (cap < r->len + need)
			cap *= 2;
		if ((p = realloc(r->buf, cap)) == NULL) {
			r->failed = true;
			return;
		}
		r->buf = p;
		r->cap = cap;
	}
	p = r->buf + r->len;
	p[0] = (uint8_t)op->table;
	p[1] = op->del ? REDO_DEL : REDO_PUT;
	le_put16(p + 2, (uint16_t)op->klen);
	le_put32(p + 4, op->del ? 0 : (uint32_t)op->vlen);
	memcpy(p + REDO_OP_HEADER, op->key, op->klen);
	if (!op->del && op->vlen > 0)
		memcpy(p + REDO_OP_HEADER + op->klen, op->val, op->vlen);
	r->len += need;
	r->ops++;
}

bool
redo_capture_failed(const struct redo *r)
{
	return r->failed;
}

size_t
redo_capture_ops(const struct redo *r)
{
	return r->ops;
}

size_t
redo_capture_bytes(const struct redo *r)
{
	return journal_frame_len(r->len);
}

bool
redo_capture_fits(const struct redo *r)
{
	return redo_capture_bytes(r) <= journal_room(r->j);
}

int
redo_capture_write(struct redo *r)
{
	uint8_t *p;

	if (!redo_capture_fits(r)) {
		errno = ENOSPC;
		return -1;
	}
	if ((p = journal_payload(r->j, r->len)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (r->len > 0)
		memcpy(p, r->buf, r->len);
	return journal_append(r->j, REDO_MAGIC, (uint32_t)r->ops,
	    (uint32_t)r->len, r->len);
}

int
redo_capture_publish(const struct redo *r, struct pending *p)
{
	size_t off = 0;

	for (size_t i = 0; i < r->ops; i++) {
		struct redo_op op;
		size_t n = op_decode(r->buf + off, r->len - off, &op);

		if (n == 0 || pending_set(p, op.table, op.key, op.klen, op.val,
		    op.vlen, op.del) == -1)
			return -1;
		off += n;
	}
	return 0;
}

int
redo_sync(struct redo *r)
{
	return journal_sync(r->j);
}

uint64_t
redo_last_seq(const struct redo *r)
{
	return journal_last_seq(r->j);
}

void
redo_restart(struct redo *r)
{
	journal_restart(r->j);
}

void
redo_stats(const struct redo *r, struct journal_stats *out)
{
	journal_stats(r->j, out);
}
