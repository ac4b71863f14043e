/* SPDX-License-Identifier: MIT */
/*
 * liburcu's pointer publication macros, liburcu's forms: rcu_dereference(p)
 * and rcu_assign_pointer(p, v) take the pointer; rcu_set_pointer(pp, v),
 * rcu_xchg_pointer(pp, v) and rcu_cmpxchg_pointer(pp, old, new) take its
 * address.  Written with the compiler's __atomic builtins (no liburcu
 * uatomic needed).
 *
 * Ordering: rcu_dereference() is a consume load (acquire in practice); it
 * pairs with the release store of rcu_assign_pointer()/rcu_set_pointer()
 * and with the full (seq_cst) read-modify-writes of rcu_xchg_pointer() and
 * rcu_cmpxchg_pointer(), which, like liburcu's uatomic_xchg()/cmpxchg(),
 * imply a full barrier on both sides.
 */
#ifndef _URCU_POINTER_H
#define _URCU_POINTER_H

/*
 * liburcu's <urcu/pointer.h> brings in its compiler, arch, system and
 * uatomic helpers, and programs use them (caa_container_of(), cmm_smp_mb(),
 * CMM_STORE_SHARED() in <urcu/rculist.h>, ...) without including them.
 * Where liburcu's headers are installed, so does this one; the macros below
 * need none of them.
 */
#if defined(__has_include)
#if __has_include(<urcu/uatomic.h>)
#include <urcu/compiler.h>
#include <urcu/arch.h>
#include <urcu/system.h>
#include <urcu/uatomic.h>
#endif
#endif

#define _rcu_dereference(p) \
	(__extension__({ \
		__typeof__(p) _trcu_urcu_p1 = __atomic_load_n(&(p), __ATOMIC_CONSUME); \
		_trcu_urcu_p1; \
	}))

#define _rcu_set_pointer(pp, v) \
	do { \
		__typeof__(*(pp)) _trcu_urcu_pv = (v); \
		__atomic_store_n((pp), _trcu_urcu_pv, __ATOMIC_RELEASE); \
	} while (0)

#define _rcu_xchg_pointer(pp, v) \
	(__extension__({ \
		__typeof__(*(pp)) _trcu_urcu_pv = (v); \
		__atomic_exchange_n((pp), _trcu_urcu_pv, __ATOMIC_SEQ_CST); \
	}))

#define _rcu_cmpxchg_pointer(pp, old, new_) \
	(__extension__({ \
		__typeof__(*(pp)) _trcu_urcu_old = (old); \
		__typeof__(*(pp)) _trcu_urcu_new = (new_); \
		__atomic_compare_exchange_n((pp), &_trcu_urcu_old, _trcu_urcu_new, 0, \
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
		_trcu_urcu_old; \
	}))

#define _rcu_assign_pointer(p, v) _rcu_set_pointer(&(p), v)

/* Where <treercu/rcu.h> came first with its short names (it defines
 * trcu_head then), its macros of these names give way: same forms, same
 * orderings. */
#ifdef trcu_head
#undef rcu_dereference
#undef rcu_set_pointer
#undef rcu_xchg_pointer
#undef rcu_cmpxchg_pointer
#undef rcu_assign_pointer
#endif
#define rcu_dereference(p)                  _rcu_dereference(p)
#define rcu_set_pointer(pp, v)              _rcu_set_pointer(pp, v)
#define rcu_xchg_pointer(pp, v)             _rcu_xchg_pointer(pp, v)
#define rcu_cmpxchg_pointer(pp, old, new_)  _rcu_cmpxchg_pointer(pp, old, new_)
#define rcu_assign_pointer(p, v)            _rcu_assign_pointer(p, v)

#endif /* _URCU_POINTER_H */
