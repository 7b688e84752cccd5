/*
 * docimage: the documents' restart image.
 *
 * A start rebuilds the documents' tables from their records, and with
 * millions of documents that is most of a restart (docs/docstore.md,
 * "Start-up"): decoding every record and sketch, filing every sketch key.
 * So a daemon that stops cleanly writes, beside the store, what the
 * rebuild would make: the documents' fingerprints, ids and namespaces in
 * id order, and the sketch index as it is in memory (sketchidx.h); the
 * next start reads them back in file order instead.
 *
 * The image is a cache of the store, never a second copy of its truth: it
 * names the store's state it was written from (store_ident: the data
 * file and its last commit), and a start uses it only when the store it
 * opened is still in that state; any commit since (a later daemon that
 * did not read it, a replayed journal, a restored data file) makes it
 * stale, and the records are read as before.  Each image serves one
 * start: it is removed as it is opened, used or not, so that a daemon
 * killed later leaves none behind to be mistaken for its state.  It is
 * written to a temporary name, synced, then renamed: a crash while
 * writing leaves no image.  In this machine's byte order.
 */
#ifndef NDDD_DOCIMAGE_H
#define NDDD_DOCIMAGE_H

#include <stdint.h>

#include "sketchidx.h"
#include "store.h"

#define DOCIMAGE_FILE	"docs.image"

/* The documents as the records' scan gathers them, in id order. */
struct docimage_docs {
	const uint64_t *fps, *ids;
	const uint32_t *nss;
	uint64_t n;
	uint64_t max_id;
	uint64_t unsketched;	/* documents stored without a sketch */
};

/*
 * Writes the image of docs and x for st as it is now (nothing may write
 * meanwhile: the daemon's writers have stopped).  Returns 0, or -1 with
 * *cause set (caller frees; NULL if memory was short), no image left.
 */
int docimage_save(struct store *st, const struct docimage_docs *docs,
    struct sketchidx *x, char **cause);

struct docimage;

/*
 * The image in st's data directory if it matches the store as opened, or
 * NULL (none; or stale, damaged or unreadable, which is logged).  The
 * file is removed either way.
 */
struct docimage *docimage_open(struct store *st);
/* What the image holds; valid until docimage_close. */
const struct docimage_docs *docimage_docs(const struct docimage *im);
void docimage_sketches(const struct docimage *im, const void **p,
    size_t *len);
/* The image's bytes in the file. */
uint64_t docimage_bytes(const struct docimage *im);
void docimage_close(struct docimage *im);

#endif
