/*
 * runner: the main() shared by the test programs.  See runner.h.
 */
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>

int
runner_main(const char *program, runner_suite_fn *suites)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

	for (; *suites != NULL; suites++)
		srunner_add_suite(sr, (*suites)());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	printf("%s: %s\n", program, failed ? "FAILED" : "passed");
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
