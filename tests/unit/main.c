/*
 * The unit test program: runs every suite in tests/unit/check_*.c.
 */
#include "runner.h"

#define SUITE(name) Suite *name##_suite(void);
#include "unit_suites.h"
#undef SUITE

int
main(void)
{
	runner_suite_fn suites[] = {
#define SUITE(name) name##_suite,
#include "unit_suites.h"
#undef SUITE
		NULL,
	};

	return runner_main("unit-tests", suites);
}
