/*
 * urljournal: the URL store's journal file.  See urljournal.h.
 *
 * Frames of lib/journal.h: magic "UJF2", count the number of entries, aux
 * the bytes of texts; the payload holds per entry fp[16], count u32,
 * first u64, last u64, expires u64, namespace u32 (little-endian), then the
 * texts (opaque here: urlhosts.h).  Frames of format 2 ("UJF1") lack the
 * last two fields (no time to live, the default namespace) and texts: a
 * journal left by the nddd before is replayed all the same.
 */
#include "urljournal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

#define URLJOURNAL_MAGIC	0x32464a55u	/* "UJF2" */
#define URLJOURNAL_V2_MAGIC	0x31464a55u	/* "UJF1" */
#define URLJOURNAL_V2_ENTRY_LEN	36

struct urljournal {
	struct journal *j;
};

static int64_t
payload_len(uint32_t magic, uint32_t count, uint32_t aux)
{
	if (magic == URLJOURNAL_MAGIC)
		return (int64_t)count * URLJOURNAL_ENTRY_LEN + aux;
	if (magic == URLJOURNAL_V2_MAGIC)
		return (int64_t)count * URLJOURNAL_V2_ENTRY_LEN;
	return -1;
}

static const struct journal_format urljournal_format = {
	.file = "urls.journal",
	.what = "the URL journal",
	.payload_len = payload_len,
};

struct urljournal *
urljournal_open(const char *dir, size_t size, char **cause)
{
	struct urljournal *uj;

	*cause = NULL;
	if ((uj = calloc(1, sizeof(*uj))) == NULL)
		return NULL;
	if ((uj->j = journal_open(dir, &urljournal_format, size, cause)) ==
	    NULL) {
		free(uj);
		return NULL;
	}
	return uj;
}

void
urljournal_close(struct urljournal *uj)
{
	if (uj == NULL)
		return;
	journal_close(uj->j);
	free(uj);
}

static void
entry_decode(const uint8_t *p, size_t entry_len, struct urlmem_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->fp, p, CBF_FP_LEN);
	e->st.count = le_get32(p + 16);
	e->st.first_seen_ms = le_get64(p + 20);
	e->st.last_seen_ms = le_get64(p + 28);
	if (entry_len == URLJOURNAL_ENTRY_LEN) {
		e->st.expires_ms = le_get64(p + 36);
		e->st.ns = le_get32(p + 44);
	}
}

struct replay {
	int (*fn)(const struct urlmem_entry *e, void *arg);
	int (*text_fn)(const uint8_t *text, size_t len, void *arg);
	void *arg;
	uint64_t entries;
};

static int
replay_frame(const struct journal_frame *f, void *arg)
{
	struct replay *rp = arg;
	size_t entry_len = f->magic == URLJOURNAL_V2_MAGIC ?
	    URLJOURNAL_V2_ENTRY_LEN : URLJOURNAL_ENTRY_LEN;

	for (uint32_t i = 0; i < f->count; i++) {
		struct urlmem_entry e;

		entry_decode(f->payload + (size_t)i * entry_len, entry_len, &e);
		if (rp->fn(&e, rp->arg) == -1)
			return -1;
	}
	if (f->magic == URLJOURNAL_MAGIC && f->aux > 0 &&
	    rp->text_fn(f->payload + (size_t)f->count * entry_len, f->aux,
	    rp->arg) == -1)
		return -1;
	rp->entries += f->count;
	return 0;
}

int
urljournal_replay(struct urljournal *uj, uint64_t after_seq,
    int (*fn)(const struct urlmem_entry *e, void *arg),
    int (*text_fn)(const uint8_t *text, size_t len, void *arg), void *arg,
    uint64_t *frames, uint64_t *entries, char **cause)
{
	struct replay rp = { .fn = fn, .text_fn = text_fn, .arg = arg };
	int rc = journal_replay(uj->j, after_seq, replay_frame, &rp, frames,
	    cause);

	*entries = rp.entries;
	return rc;
}

size_t
urljournal_room(const struct urljournal *uj)
{
	return journal_room(uj->j);
}

int
urljournal_append(struct urljournal *uj, const struct urlmem_entry *e,
    size_t n, const uint8_t *text, size_t text_len)
{
	size_t len = n * URLJOURNAL_ENTRY_LEN + text_len;
	uint8_t *p;

	if (journal_frame_len(len) > journal_room(uj->j)) {
		errno = ENOSPC;
		return -1;
	}
	if ((p = journal_payload(uj->j, len)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < n; i++, p += URLJOURNAL_ENTRY_LEN) {
		memcpy(p, e[i].fp, CBF_FP_LEN);
		le_put32(p + 16, e[i].st.count);
		le_put64(p + 20, e[i].st.first_seen_ms);
		le_put64(p + 28, e[i].st.last_seen_ms);
		le_put64(p + 36, e[i].st.expires_ms);
		le_put32(p + 44, e[i].st.ns);
	}
	if (text_len > 0)
		memcpy(p, text, text_len);
	return journal_append(uj->j, URLJOURNAL_MAGIC, (uint32_t)n,
	    (uint32_t)text_len, len);
}

int
urljournal_sync(struct urljournal *uj)
{
	return journal_sync(uj->j);
}

uint64_t
urljournal_last_seq(const struct urljournal *uj)
{
	return journal_last_seq(uj->j);
}

void
urljournal_restart(struct urljournal *uj)
{
	journal_restart(uj->j);
}

void
urljournal_release(struct urljournal *uj)
{
	if (uj != NULL)
		journal_payload_release(uj->j);
}

void
urljournal_stats(const struct urljournal *uj, struct journal_stats *out)
{
	journal_stats(uj->j, out);
}
