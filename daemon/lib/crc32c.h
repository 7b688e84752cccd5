/*
 * crc32c: the CRC-32C (Castagnoli) checksum, for records that must be
 * recognised as whole after a crash (the URL journal's frames).
 *
 * Uses the SSE 4.2 instruction where the CPU has it, a table otherwise;
 * both give the same value (crc32c("123456789") = 0xe3069283).
 */
#ifndef NDDD_CRC32C_H
#define NDDD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over len bytes of data. */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

#endif
