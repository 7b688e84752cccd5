/*
 * corpus: documents from the shared test data, for the simhash tests and
 * benchmark: Reuters-21578 article bodies and the L3S-GN1 HTML pages.
 */
#ifndef NDDD_CORPUS_H
#define NDDD_CORPUS_H

#include <stddef.h>

struct corpus_doc {
	char *data;
	size_t len;
};

struct corpus {
	struct corpus_doc *docs;
	size_t n;
	size_t bytes;		/* total */
};

/*
 * The text between <BODY> and </BODY> of the Reuters articles in dir
 * (reut2-000.sgm ... reut2-021.sgm), in file order, at most max of them
 * (0: all).  Returns NULL if no file can be read.
 */
struct corpus *corpus_reuters(const char *dir, size_t max);
/* Every *.html file in dir, in name order. */
struct corpus *corpus_files(const char *dir, const char *suffix);
void corpus_free(struct corpus *c);

#endif
