/* SPDX-License-Identifier: MIT */
/*
 * A program that uses liburcu (memb flavor) and treercu in one file and one
 * binary: with TREERCU_NO_SHORT_NAMES the short names are liburcu's and
 * treercu's are prefixed.  tests/api/header_matrix.sh builds it against both
 * libraries (when liburcu is installed) and runs it.
 */
#define TREERCU_NO_SHORT_NAMES
#include <urcu/urcu-memb.h>
#include <treercu/treercu.h>
#include <stdio.h>
static int *lp, *tp;
int main(void)
{
	static int a = 1, b = 2;
	urcu_memb_register_thread();
	rcu_assign_pointer(lp, &a);          /* liburcu's */
	trcu_assign_pointer(tp, &b);
	urcu_memb_read_lock();
	trcu_read_lock();
	int s = *rcu_dereference(lp) + *trcu_dereference(tp);
	trcu_read_unlock();
	urcu_memb_read_unlock();
	urcu_memb_synchronize_rcu();
	trcu_synchronize_rcu();
	urcu_memb_unregister_thread();
	printf("both %d\n", s);
	return s == 3 ? 0 : 1;
}
