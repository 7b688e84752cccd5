/*
 * hugemap: large tables that every request probes at random (the URL
 * filter and index, the document index's directories and segments) in
 * mappings of their own on transparent huge pages, where random probes
 * seldom miss the TLB.  A table's mapping starts on a huge-page boundary
 * but is only as long as the pages the table needs: the tail past the
 * last whole huge page is small pages, not a huge page mostly unused (a
 * filter of 52,000,000 bytes would otherwise hold 419 KiB it never uses).
 */
#ifndef NDDD_HUGEMAP_H
#define NDDD_HUGEMAP_H

#include <stdbool.h>
#include <stddef.h>

#define HUGEMAP_PAGE	((size_t)2 << 20)

/*
 * bytes of zeroes, rounded up to the system's page size in *mapped.  With
 * populate, every page is faulted in now: the memory is taken at
 * start-up (and fails it if it is not there), not page by page under
 * load.  NULL with errno if the system refuses the mapping.
 */
void *hugemap_new(size_t bytes, bool populate, size_t *mapped);
/*
 * An anonymous mapping of bytes (a whole number of pages) that starts at a
 * multiple of align (a power of two, at least a page), advised to huge
 * pages if align is a huge page or more.  NULL with errno if the system
 * refuses it.
 */
void *hugemap_aligned(size_t bytes, size_t align);
/* Unmaps what hugemap_new or hugemap_aligned returned (p NULL: nothing). */
void hugemap_free(void *p, size_t mapped);

#endif
