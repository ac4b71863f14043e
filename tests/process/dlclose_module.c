/* SPDX-License-Identifier: MIT */
/*
 * A plugin that links the static archive: the library's code, its threads'
 * code included, lives in this shared object, which the program loads with
 * dlopen() and closes with dlclose() (test_dlclose_after_use's second
 * configuration).  The reference pulls the archive's one object in; its
 * public functions are then this object's exported symbols.
 */
#include <treercu/rcu.h>

int (*dlclose_module_register)(void) = trcu_register_thread;
