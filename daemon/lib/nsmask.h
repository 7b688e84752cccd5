/*
 * nsmask: a namespace's mask, the MD5 of "nddd.ns/" and its name.  A
 * URL's or a document's key in a named namespace is its key in the
 * default one XORed with the mask: keys stay uniform, and namespaces
 * never share one unless two MD5s differ by exactly their masks'
 * difference.  The URL set, the document set and libnddd's bulk requests
 * all make it here.
 */
#ifndef NDDD_NSMASK_H
#define NDDD_NSMASK_H

#include <stddef.h>
#include <stdint.h>

#include "md5.h"

#define NS_MASK_LEN		MD5_DIGEST_LEN
/* The longest name a mask is made of (every namespace's limit). */
#define NS_MASK_NAME_MAX	64

/* The mask of the namespace named name[0..len): zeros for the default
 * one (""); -1 for a name longer than NS_MASK_NAME_MAX. */
int ns_mask(const char *name, size_t len, uint8_t out[NS_MASK_LEN]);

#endif
