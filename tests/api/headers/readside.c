/* SPDX-License-Identifier: MIT */
/*
 * The read side as a user's code expands it.  tests/api/header_matrix.sh
 * compiles this file as C and as C++ with the same compiler family and
 * options and requires the two disassemblies to be identical: the C++
 * spelling of the header (plain fields, __atomic builtins) must not cost
 * a C++ program anything.
 */
#include <treercu/rcu.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rs_obj {
	int v;
	struct trcu_head rh;
};
struct rs_obj *rs_gp;

void rs_lock(void);
void rs_unlock(void);
int rs_held(void);
void rs_qs(void);
struct rs_obj *rs_deref(void);
int rs_section(void);
int rs_nested(void);

void rs_lock(void) { trcu_read_lock(); }
void rs_unlock(void) { trcu_read_unlock(); }
int rs_held(void) { return trcu_read_lock_held(); }
void rs_qs(void) { trcu_quiescent_state(); }
struct rs_obj *rs_deref(void) { return trcu_dereference(rs_gp); }

int rs_section(void)
{
	int v;

	trcu_read_lock();
	v = trcu_dereference(rs_gp)->v;
	trcu_read_unlock();
	return v;
}

int rs_nested(void)
{
	int v;

	trcu_read_lock();
	trcu_read_lock();
	v = trcu_dereference(rs_gp)->v;
	trcu_read_unlock();
	trcu_read_unlock();
	return v;
}

#ifdef __cplusplus
}
#endif
