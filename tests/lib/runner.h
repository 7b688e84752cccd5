/*
 * runner: the main() shared by the test programs.  Each program's main.c
 * includes its generated list of SUITE(name) lines and calls runner_main.
 */
#ifndef NDDD_TEST_RUNNER_H
#define NDDD_TEST_RUNNER_H

#include <check.h>

typedef Suite *(*runner_suite_fn)(void);

/*
 * Runs the suites (NULL-terminated).  CK_RUN_SUITE and CK_RUN_CASE select a
 * subset, as in Check.  Returns the process exit status.
 */
int runner_main(const char *program, runner_suite_fn *suites);

#endif
