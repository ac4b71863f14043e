// SPDX-License-Identifier: MIT
/*
 * treercu/rcu.hpp: the C++26 <rcu> header ([saferecl.rcu] in the working
 * draft, from P2545R4) in namespace treercu, on treercu's read side and
 * callbacks.  The names, signatures and guarantees are the standard's;
 * where the standard leaves a choice to the implementation, the choice is
 * said here and in docs/cxx.md.
 *
 *   rcu_domain            lock()/try_lock()/unlock(): trcu_read_lock() and
 *                         trcu_read_unlock(); Cpp17Lockable, so
 *                         std::scoped_lock<rcu_domain> works.
 *   rcu_default_domain()  the one domain: treercu's process-wide RCU.  Every
 *                         rcu_domain& parameter can only name it.
 *   rcu_synchronize()     trcu_synchronize_rcu().
 *   rcu_barrier()         trcu_rcu_barrier(): every deleter scheduled (by
 *                         any thread) before the call has run on return.
 *   rcu_obj_base<T, D>    retire(): the deleter runs after a grace period,
 *                         through trcu_call_rcu() on a head inside the base
 *                         (no allocation; noexcept).
 *   rcu_retire(p, d)      allocates a node holding p and d, then
 *                         trcu_call_rcu().
 *   rcu_read_guard        RAII read-side section on the default domain
 *                         (treercu's own addition).
 *
 * Implementation-defined choices of the standard:
 * - Deleters ("scheduled evaluations") run on treercu's callback-offload
 *   threads, never inside lock(), unlock(), retire() or rcu_retire(); so a
 *   deleter may take locks that the retiring thread holds.  rcu_barrier()
 *   waits for them and runs none itself.
 * - rcu_retire() out of memory: outside a read-side section it waits for a
 *   grace period (rcu_synchronize()) and runs the deleter itself before
 *   returning, as the kernel's kvfree_rcu() does; inside one (where waiting
 *   would never end) it throws std::bad_alloc, having scheduled nothing, as
 *   the standard allows.  retire() never allocates.
 * - A deleter that exits via an exception (undefined behaviour in the
 *   standard) calls std::terminate().
 * - rcu_synchronize() inside a region of RCU protection on the same thread
 *   (which the standard makes wait forever) aborts with a message, as
 *   synchronize_rcu() does.
 *
 * Needs C++17 (std::scoped_lock, the _v type traits); nothing
 * in the standard's interface needs C++20.  Link with -ltreercu.
 */
#ifndef TREERCU_RCU_HPP
#define TREERCU_RCU_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "treercu/rcu.hpp needs C++17 or later"
#endif

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <treercu/rcu.h>

/* A short name rcu_barrier, a macro (treercu's for trcu_rcu_barrier(), or
 * liburcu's from treercu's compat headers, <urcu.h> and the like), would
 * rewrite the standard's treercu::rcu_barrier().  The macro goes; in its
 * place the global namespace gets a using-declaration of this header's
 * function, the same barrier, so that rcu_barrier() keeps working
 * unqualified, and with `using namespace treercu` or `using
 * treercu::rcu_barrier` too (they name the one function).  The compat
 * headers, when they come after this one, declare it the same way.  The
 * function is declared here, with its default argument, for the
 * using-declaration to carry it; it is defined below. */
#pragma push_macro("rcu_barrier")
#undef rcu_barrier
namespace treercu {
class rcu_domain;
rcu_domain& rcu_default_domain() noexcept;
inline void rcu_barrier(rcu_domain& dom = rcu_default_domain()) noexcept;
} // namespace treercu
#pragma pop_macro("rcu_barrier")
#ifdef rcu_barrier
#undef rcu_barrier
using treercu::rcu_barrier;
#endif

namespace treercu {

/*
 * A region of RCU protection is a treercu read-side critical section;
 * regions nest.  Not copyable, not movable, not constructible by users:
 * rcu_default_domain() returns the only one.
 */
class rcu_domain {
public:
	rcu_domain(const rcu_domain&) = delete;
	rcu_domain& operator=(const rcu_domain&) = delete;

	// Opens a region: trcu_read_lock() (registers the thread on first use).
	void lock() noexcept { trcu_read_lock(); }
	// Equivalent to lock(); always succeeds.
	bool try_lock() noexcept
	{
		lock();
		return true;
	}
	// Closes the most recently opened region of this thread.  Runs no
	// deleter.  An unlock() without a lock() aborts with a message.
	void unlock() noexcept { trcu_read_unlock(); }

private:
	constexpr rcu_domain() noexcept = default;
	friend rcu_domain& rcu_default_domain() noexcept;
};

// The process-wide domain.  Trivially destructible and constant-initialised,
// so it is usable from static constructors and destructors of any order.
inline rcu_domain& rcu_default_domain() noexcept
{
	static rcu_domain dom;
	return dom;
}

// Blocks until every region that began before the call has ended; those
// ends happen before the return (the grace period's membarrier()/fence
// pairs, docs/design.md).
inline void rcu_synchronize(rcu_domain& dom = rcu_default_domain()) noexcept
{
	static_cast<void>(dom);
	trcu_synchronize_rcu();
}

// Blocks until every deleter scheduled before the call (by any thread, with
// retire() or rcu_retire()) has run; those runs happen before the return.
// The default argument, rcu_default_domain(), is the declaration's above.
inline void rcu_barrier(rcu_domain& dom) noexcept
{
	static_cast<void>(dom);
	trcu_rcu_barrier();
}

namespace detail {

// The callback head inside every rcu_obj_base, as a private base: the
// callback gets back to the object with static_casts, where offsetof would
// need T to be standard-layout.  The trcu_head is a member (first and only:
// the two are pointer-interconvertible), not a base, and every name here
// and in rcu_obj_base's private part is prefixed: a base's names are found
// by name lookup in T even when private, so `next` or `invoke` would make
// T's own or its other bases' members of that name ambiguous.
struct retire_head {
	trcu_head trcu_retire_head_;
};

// Runs a deleter after its grace period; one for each rcu_retire() call.
template <class T, class D>
struct retire_node : trcu_head {
	T* p;
	D d;

	retire_node(T* ptr, D&& del) : trcu_head(), p(ptr), d(std::move(del)) {}

	static void invoke(trcu_head* h) noexcept
	{
		retire_node* n = static_cast<retire_node*>(h);

		n->d(n->p);
		delete n;
	}
};

} // namespace detail

/*
 * Base of an RCU-protected class T (T derives publicly, non-virtually and
 * once from rcu_obj_base<T, D>).  retire() schedules deleter(addressof(x))
 * for the T object x after a grace period.  D: a function object type,
 * default constructible and move assignable, with d(T*) valid.  T may be
 * incomplete until retire() is used.
 */
template <class T, class D = std::default_delete<T>>
class rcu_obj_base : private detail::retire_head {
public:
	void retire(D d = D(), rcu_domain& dom = rcu_default_domain()) noexcept
	{
		static_assert(std::is_class_v<T>, "rcu_obj_base<T, D>: T must be a class type");
		static_assert(std::is_base_of_v<rcu_obj_base, T>,
			      "rcu_obj_base<T, D>: T must derive from rcu_obj_base<T, D>");
		static_assert(std::is_convertible_v<T*, rcu_obj_base*>,
			      "rcu_obj_base<T, D>: the base must be public and unambiguous");
		static_assert(std::is_default_constructible_v<D> && std::is_move_assignable_v<D>,
			      "rcu_obj_base<T, D>: D must be default constructible and move assignable");
		static_assert(std::is_invocable_v<D&, T*>,
			      "rcu_obj_base<T, D>: D must be callable with a T*");
		static_cast<void>(dom);
		trcu_retire_deleter_ = std::move(d);
		// trcu_call_rcu()'s enqueue publishes the object (the deleter
		// included) to the offload thread that runs the invoker; the
		// grace period orders every region that could see x before it.
		trcu_call_rcu(&static_cast<detail::retire_head*>(this)->trcu_retire_head_,
			      &trcu_retire_invoke_);
	}

protected:
	rcu_obj_base() = default;
	rcu_obj_base(const rcu_obj_base&) = default;
	rcu_obj_base(rcu_obj_base&&) = default;
	rcu_obj_base& operator=(const rcu_obj_base&) = default;
	rcu_obj_base& operator=(rcu_obj_base&&) = default;
	~rcu_obj_base() = default;

private:
	// Static_cast from the head's holder, not reinterpret_cast to the
	// object: a virtual base would not compile.  The head is its holder's
	// first and only member (pointer-interconvertible).
	static void trcu_retire_invoke_(trcu_head* h) noexcept
	{
		rcu_obj_base* self = static_cast<rcu_obj_base*>(
			reinterpret_cast<detail::retire_head*>(h));

		self->trcu_retire_deleter_(static_cast<T*>(self));
	}

	D trcu_retire_deleter_;
};

/*
 * Schedules d(p) after a grace period, for any object type T (no
 * rcu_obj_base needed).  D: move constructible, with d(p) valid.  Throws
 * what D's move constructor throws, or std::bad_alloc (see the header
 * comment); then nothing is scheduled.
 */
template <class T, class D = std::default_delete<T>>
void rcu_retire(T* p, D d = D(), rcu_domain& dom = rcu_default_domain())
{
	static_assert(std::is_object_v<T>, "rcu_retire(p, d): T must be an object type");
	static_assert(std::is_move_constructible_v<D>,
		      "rcu_retire(p, d): D must be move constructible");
	static_assert(std::is_invocable_v<D&, T*>, "rcu_retire(p, d): d(p) must be well-formed");
	using node = detail::retire_node<T, D>;

	node* n = new (std::nothrow) node(p, std::move(d));
	if (n) {
		trcu_call_rcu(n, &node::invoke);
		return;
	}
	if (trcu_read_lock_held())
		throw std::bad_alloc();
	D d1(std::move(d));
	rcu_synchronize(dom);
	d1(p);
}

/*
 * RAII read-side section on the default domain: the same as
 * std::scoped_lock<rcu_domain> lk(rcu_default_domain()), spelled shorter.
 */
class rcu_read_guard {
public:
	rcu_read_guard() noexcept { rcu_default_domain().lock(); }
	~rcu_read_guard() { rcu_default_domain().unlock(); }
	rcu_read_guard(const rcu_read_guard&) = delete;
	rcu_read_guard& operator=(const rcu_read_guard&) = delete;
};

} // namespace treercu

#endif // TREERCU_RCU_HPP
