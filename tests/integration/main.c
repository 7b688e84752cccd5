/*
 * The integration test program: runs every suite in tests/integration/check_*.c.
 */
#include "runner.h"

#define SUITE(name) Suite *name##_suite(void);
#include "integration_suites.h"
#undef SUITE

int
main(void)
{
	runner_suite_fn suites[] = {
#define SUITE(name) name##_suite,
#include "integration_suites.h"
#undef SUITE
		NULL,
	};

	return runner_main("integration-tests", suites);
}
