/*
 * accel_badabi: a plugin built for another version of the accelerator ABI,
 * which nddd must refuse without touching the rest of its table.
 */
#include <stddef.h>

#include "accel_abi.h"

const struct accel_backend nddd_accel_backend = {
	.abi_version = ACCEL_ABI_VERSION + 1,
	.size = sizeof(struct accel_backend),
	.name = "badabi",
	.description = "a table from another ABI version",
};
