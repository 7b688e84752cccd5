/*
 * hugemap: a huge-page-aligned anonymous mapping.  See hugemap.h.
 */
#include "hugemap.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void *
hugemap_new(size_t bytes, bool populate, size_t *mapped)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (bytes + page - 1) & ~(page - 1), lead;
	char *p, *start;

	/* Map a huge page more, then give back what lies before the first
	 * boundary and after the table. */
	p = mmap(NULL, len + HUGEMAP_PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (char *)(((uintptr_t)p + HUGEMAP_PAGE - 1) &
	    ~(uintptr_t)(HUGEMAP_PAGE - 1));
	lead = (size_t)(start - p);
	if (lead > 0)
		munmap(p, lead);
	munmap(start + len, HUGEMAP_PAGE - lead);
	/* Huge pages first, then every page touched once (MAP_POPULATE
	 * would fault small pages before the advice). */
	madvise(start, len, MADV_HUGEPAGE);
	if (populate)
		madvise(start, len, MADV_POPULATE_WRITE);
	*mapped = len;
	return start;
}

void
hugemap_free(void *p, size_t mapped)
{
	if (p != NULL)
		munmap(p, mapped);
}
