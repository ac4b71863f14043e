/* SPDX-License-Identifier: MIT */
/* The library's version, for a program that links it (the header's
 * TREERCU_VERSION_STRING says which headers it was compiled with). */
#include <treercu/rcu.h>

const char *trcu_version(void)
{
	return TREERCU_VERSION_STRING;
}
