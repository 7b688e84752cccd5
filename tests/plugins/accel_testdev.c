/*
 * accel_testdev: the test plugin presenting itself as hardware, so that
 * "accelerator = auto" may choose it.  See accel_test.c.
 */
#define ACCEL_TEST_DEVICE 1
#include "accel_test.c"
