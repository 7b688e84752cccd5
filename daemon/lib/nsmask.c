/*
 * nsmask: a namespace's mask.  See nsmask.h.
 */
#include "nsmask.h"

#include <string.h>

#define NS_MASK_PREFIX	"nddd.ns/"

int
ns_mask(const char *name, size_t len, uint8_t out[NS_MASK_LEN])
{
	char text[sizeof(NS_MASK_PREFIX) - 1 + NS_MASK_NAME_MAX];

	if (len > NS_MASK_NAME_MAX)
		return -1;
	if (len == 0) {
		memset(out, 0, NS_MASK_LEN);
		return 0;
	}
	memcpy(text, NS_MASK_PREFIX, sizeof(NS_MASK_PREFIX) - 1);
	memcpy(text + sizeof(NS_MASK_PREFIX) - 1, name, len);
	md5_digest(text, sizeof(NS_MASK_PREFIX) - 1 + len, out);
	return 0;
}
