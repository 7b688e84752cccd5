/*
 * crc32c: the CRC-32C checksum.  See crc32c.h.
 */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define CRC32C_POLY 0x82f63b78u	/* reflected Castagnoli polynomial */

static uint32_t crc32c_table[256];
static bool crc32c_hw;
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static void
crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ CRC32C_POLY : c >> 1;
		crc32c_table[i] = c;
	}
#if defined(__x86_64__)
	crc32c_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t
crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ crc >> 8;
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		c = __builtin_ia32_crc32di(c, w);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

uint32_t
crc32c(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&crc32c_once, crc32c_init);
	crc = ~crc;
#if defined(__x86_64__)
	if (crc32c_hw)
		return ~crc32c_sse42(crc, data, len);
#endif
	return ~crc32c_sw(crc, data, len);
}
