/*
 * engine: what a program linked with the static client library (nddctl
 * simhash) reads of an nddd_engine to drive the fingerprint library
 * itself, e.g. its accelerators: the settings the engine parsed and the
 * stop words it loaded.  Not part of libnddd.so's interface (its names are
 * not nddd_*, so the shared object keeps them to itself).
 */
#ifndef LIBNDDD_ENGINE_H
#define LIBNDDD_ENGINE_H

#include "nddd.h"
#include "simhash.h"

struct stopwords;

/* The engine's term hash. */
enum simhash_term_hash engine_term_hash(const nddd_engine *e);
/* Its stop words (NULL: none), owned by e. */
const struct stopwords *engine_stopwords_set(const nddd_engine *e);

#endif
