/*
 * nddctl: the command-line client; dispatches subcommands by name.
 */
#include <stdio.h>
#include <string.h>

#include "nddctl.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *what;
} nddctl_commands[] = {
	{ "simhash", nddctl_simhash, "fingerprint documents locally" },
};

static int
nddctl_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: nddctl COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(nddctl_commands) / sizeof(nddctl_commands[0]);
	    i++)
		fprintf(f, "  %-10s %s\n", nddctl_commands[i].name,
		    nddctl_commands[i].what);
	fprintf(f, "\n\"nddctl COMMAND --help\" describes a command.\n");
	return 2;
}

int
main(int argc, char **argv)
{
	size_t i;

	if (argc < 2)
		return nddctl_usage(stderr);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		nddctl_usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(nddctl_commands) / sizeof(nddctl_commands[0]);
	    i++)
		if (strcmp(argv[1], nddctl_commands[i].name) == 0)
			return nddctl_commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "nddctl: unknown command \"%s\"\n", argv[1]);
	return nddctl_usage(stderr);
}
