/*
 * accel_nosym: a shared object that is not an accelerator plugin (it
 * exports no nddd_accel_backend).
 */
int accel_nosym_marker(void);

int
accel_nosym_marker(void)
{
	return 42;
}
