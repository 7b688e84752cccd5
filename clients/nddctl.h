/*
 * nddctl: the command-line client.  Each subcommand is a function taking
 * its own arguments (argv[0] is the subcommand's name) and returning the
 * process exit status.
 */
#ifndef NDDD_NDDCTL_H
#define NDDD_NDDCTL_H

/*
 * nddctl simhash: fingerprints documents locally, no daemon needed (see
 * nddctl_simhash.c and docs/simhash.md).  Exit status 0 when every document
 * got a fingerprint, 1 when some had no terms (EMPTY_DOCUMENT), 2 on usage
 * or setup errors.
 */
int nddctl_simhash(int argc, char **argv);

#endif
