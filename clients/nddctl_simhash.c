/*
 * nddctl simhash: placeholder until the simhash engine lands.
 */
#include <stdio.h>

#include "nddctl.h"

int
nddctl_simhash(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "nddctl: simhash is not available in this build\n");
	return NDDCTL_EXIT_USAGE;
}
