/*
 * hugemap: aligned anonymous mappings on huge pages.  See hugemap.h.
 */
#include "hugemap.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void *
hugemap_aligned(size_t bytes, size_t align)
{
	char *p, *start;
	size_t lead;

	/* Map align bytes more, then give back what lies before the first
	 * boundary and after the mapping asked for. */
	p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	lead = (size_t)(start - p);
	if (lead > 0)
		munmap(p, lead);
	munmap(start + bytes, align - lead);
	if (align >= HUGEMAP_PAGE)
		madvise(start, bytes, MADV_HUGEPAGE);
	return start;
}

void *
hugemap_new(size_t bytes, bool populate, size_t *mapped)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (bytes + page - 1) & ~(page - 1);
	char *p;

	if ((p = hugemap_aligned(len, HUGEMAP_PAGE)) == NULL)
		return NULL;
	/* Huge pages first (hugemap_aligned's advice), then every page
	 * touched once (MAP_POPULATE would fault small pages before the
	 * advice). */
	if (populate)
		madvise(p, len, MADV_POPULATE_WRITE);
	*mapped = len;
	return p;
}

void
hugemap_free(void *p, size_t mapped)
{
	if (p != NULL)
		munmap(p, mapped);
}
