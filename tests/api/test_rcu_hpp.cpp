// SPDX-License-Identifier: MIT
/*
 * treercu/rcu.hpp, tested from the wording of the C++26 standard's
 * [saferecl.rcu]:
 * - retire() then rcu_barrier(): the deleter has run, once, with the
 *   object's address ("schedules deleter(addressof(x))"; rcu_barrier
 *   "blocks until E has been evaluated"), and a custom deleter's state
 *   travels with it.
 * - A region of RCU protection that began before retire() ends before the
 *   deleter runs, and rcu_synchronize() does not return before it ends.
 * - rcu_retire() with the default and with custom (move-only, lambda)
 *   deleters; out of memory it still schedules the deleter outside a region,
 *   and inside one throws bad_alloc having scheduled nothing.
 * - rcu_domain is Cpp17Lockable (scoped_lock, unique_lock, try_lock),
 *   regions nest, rcu_default_domain() is always the same object.
 * - Stress: readers in regions (scoped_lock and rcu_read_guard) check the
 *   objects they reach are alive while writers swap and retire them.
 * - treercu/list.h in C++: an RCU list of rcu_obj_base objects.
 * Compile-time checks pin the signatures, noexcept and the class
 * properties the standard lists.
 */
#include <treercu/rcu.hpp>
#include <treercu/list.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include "check.h"

using treercu::rcu_barrier;
using treercu::rcu_default_domain;
using treercu::rcu_domain;
using treercu::rcu_obj_base;
using treercu::rcu_read_guard;
using treercu::rcu_retire;
using treercu::rcu_synchronize;

// ---- Out-of-memory injection for rcu_retire()'s node -----------------------
// Replaces the nothrow operator new (what rcu_retire() allocates with); the
// memory comes from the ordinary operator new, so operator delete matches.
static std::atomic<bool> fail_nothrow_new{false};

void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
	if (fail_nothrow_new.load(std::memory_order_relaxed))
		return nullptr;
	try {
		return ::operator new(size);
	} catch (...) {
		return nullptr;
	}
}

// ---- Compile-time properties ---------------------------------------------------
static_assert(!std::is_copy_constructible_v<rcu_domain>);
static_assert(!std::is_move_constructible_v<rcu_domain>);
static_assert(!std::is_copy_assignable_v<rcu_domain>);
static_assert(!std::is_default_constructible_v<rcu_domain>);
static_assert(noexcept(rcu_default_domain()));
static_assert(noexcept(rcu_default_domain().lock()));
static_assert(noexcept(rcu_default_domain().try_lock()));
static_assert(noexcept(rcu_default_domain().unlock()));
static_assert(std::is_same_v<decltype(rcu_default_domain().try_lock()), bool>);
static_assert(noexcept(rcu_synchronize()));
static_assert(noexcept(rcu_barrier()));
static_assert(std::is_same_v<decltype(rcu_default_domain()), rcu_domain&>);

struct plain : rcu_obj_base<plain> {
	int v = 0;
};
// "If D is trivially copyable, all specializations of rcu_obj_base<T, D> are
// trivially copyable"; its special members are protected.
static_assert(std::is_trivially_copyable_v<rcu_obj_base<plain>>);
static_assert(!std::is_default_constructible_v<rcu_obj_base<plain>>);
static_assert(std::is_trivially_copyable_v<plain>);
static_assert(noexcept(std::declval<plain&>().retire()));

// "T may be an incomplete type" where the base is named.
struct incomplete;
using incomplete_base = rcu_obj_base<incomplete>;
struct incomplete : incomplete_base {
	int v = 0;
};

// ---- Helpers ----------------------------------------------------------------------

// A custom deleter with state: default constructible and move assignable
// (what rcu_obj_base requires), records what it was called with.
struct counting_delete {
	std::atomic<int>* count = nullptr;
	const void** seen = nullptr;

	template <class T>
	void operator()(T* p) const
	{
		if (seen)
			*seen = p;
		count->fetch_add(1);
		delete p;
	}
};

struct widget : rcu_obj_base<widget, counting_delete> {
	int magic = 0x600d;
};

// Starts a thread that sits in a region of RCU protection (scoped_lock on
// the default domain) until release is set, reading *obj at the end.
struct region_holder {
	std::atomic<bool> held{false}, release{false};
	std::thread t;

	template <class F>
	explicit region_holder(F last_look)
	    : t([this, last_look] {
		      std::scoped_lock<rcu_domain> lk(rcu_default_domain());
		      held = true;
		      while (!release)
			      usleep(100);
		      last_look();
	      })
	{
		CHECK_WITHIN_MS(held.load(), 10000);
	}
	void finish()
	{
		release = true;
		t.join();
	}
};

// ---- retire() then rcu_barrier() ------------------------------------------------------
static void retire_then_barrier_runs_deleter_once()
{
	std::atomic<int> count{0};
	const void* seen = nullptr;
	widget* w = new widget;

	w->retire(counting_delete{&count, &seen});
	rcu_barrier();
	CHECK_EQ(count.load(), 1);
	CHECK(seen == w);                    // deleter(addressof(x))
	rcu_barrier();
	rcu_synchronize();
	rcu_barrier();
	CHECK_EQ(count.load(), 1);           // evaluated at most once

	// Default deleter (std::default_delete<T>): the object is deleted.
	plain* p = new plain;
	p->retire();
	rcu_barrier();                       // ASan: p freed exactly once

	// Every retire() from other threads before the barrier, too.
	std::atomic<int> many{0};
	std::atomic<bool> all_retired{false};
	std::thread th([&] {
		for (int i = 0; i < 1000; i++)
			(new widget)->retire(counting_delete{&many, nullptr});
		all_retired = true;
	});
	th.join();
	CHECK(all_retired.load());
	rcu_barrier();
	CHECK_EQ(many.load(), 1000);
	printf("retire + rcu_barrier: deleter ran once, with x's address\n");
}

// ---- A region that began before retire() ------------------------------------------
static void region_outlives_retire()
{
	std::atomic<int> count{0};
	std::atomic<widget*> shared{new widget};
	widget* w = shared.load();
	region_holder h([&] {
		CHECK_EQ(w->magic, 0x600d);   // still not deleted (ASan too)
		CHECK_EQ(count.load(), 0);
	});

	shared.store(nullptr);
	w->retire(counting_delete{&count, nullptr});

	std::atomic<bool> synced{false};
	std::thread s([&] {
		rcu_synchronize();
		synced = true;
	});
	// The holder's region began before both calls: neither the deleter nor
	// rcu_synchronize()'s return may happen before its unlock.
	for (int i = 0; i < 200; i++) {
		CHECK(!synced.load());
		CHECK_EQ(count.load(), 0);
		usleep(1000);
	}
	h.finish();
	s.join();
	CHECK(synced.load());
	rcu_barrier();
	CHECK_EQ(count.load(), 1);
	printf("a region open before retire(): deleter and rcu_synchronize() wait for its unlock\n");
}

// ---- rcu_retire() -----------------------------------------------------------------------
struct not_rcu {
	int v = 7;
};

static void rcu_retire_deleters()
{
	std::atomic<int> count{0};

	// Default deleter on a type with no rcu_obj_base.
	rcu_retire(new not_rcu);
	// A move-only deleter (rcu_retire needs only MoveConstructible).
	auto token = std::make_unique<int>(5);
	rcu_retire(new not_rcu, [&count, t = std::move(token)](not_rcu* p) {
		CHECK_EQ(*t, 5);
		CHECK_EQ(p->v, 7);
		count.fetch_add(1);
		delete p;
	});
	// A deleter that does not delete: d(p) is all that is evaluated.
	static int not_heap = 3;
	rcu_retire(&not_heap, [&count](int* p) {
		CHECK_EQ(*p, 3);
		count.fetch_add(10);
	});
	// The domain argument names the default domain.
	rcu_retire(new not_rcu, std::default_delete<not_rcu>(), rcu_default_domain());
	rcu_barrier();
	CHECK_EQ(count.load(), 11);

	// A region open before rcu_retire() holds the deleter off.
	std::atomic<int> held_count{0};
	auto* o = new not_rcu;
	region_holder h([&] {
		CHECK_EQ(o->v, 7);
		CHECK_EQ(held_count.load(), 0);
	});
	rcu_retire(o, [&held_count](not_rcu* p) {
		held_count.fetch_add(1);
		delete p;
	});
	usleep(50000);
	CHECK_EQ(held_count.load(), 0);
	h.finish();
	rcu_barrier();
	CHECK_EQ(held_count.load(), 1);
	printf("rcu_retire: default, move-only and non-deleting deleters ran once each\n");
}

static void rcu_retire_out_of_memory()
{
	std::atomic<int> count{0};
	auto del = [&count](not_rcu* p) {
		count.fetch_add(1);
		delete p;
	};

	// Outside a region: waits for a grace period and runs the deleter.
	auto* o = new not_rcu;
	std::atomic<bool> done{false};
	region_holder h([&] {
		CHECK_EQ(o->v, 7);
		CHECK(!done.load());
	});
	fail_nothrow_new = true;
	std::thread r([&] {
		rcu_retire(o, del);
		done = true;
	});
	usleep(50000);
	CHECK(!done.load());                 // the holder's region is still open
	CHECK_EQ(count.load(), 0);
	h.finish();
	r.join();
	CHECK_EQ(count.load(), 1);           // ran before rcu_retire() returned

	// Inside a region: bad_alloc, and nothing is scheduled.
	auto* o2 = new not_rcu;
	bool threw = false;
	{
		std::scoped_lock<rcu_domain> lk(rcu_default_domain());
		try {
			rcu_retire(o2, del);
		} catch (const std::bad_alloc&) {
			threw = true;
		}
	}
	fail_nothrow_new = false;
	CHECK(threw);
	rcu_barrier();
	CHECK_EQ(count.load(), 1);
	delete o2;
	printf("rcu_retire out of memory: synchronous outside a region, bad_alloc inside\n");
}

// ---- rcu_domain as a lock ---------------------------------------------------------------
static void domain_is_lockable()
{
	rcu_domain& d = rcu_default_domain();

	CHECK(&d == &rcu_default_domain());
	CHECK(!trcu_read_lock_held());
	{
		std::scoped_lock<rcu_domain> lk(d);
		CHECK(trcu_read_lock_held());
		{
			std::unique_lock<rcu_domain> nested(d);   // regions nest
			CHECK(trcu_read_lock_held());
		}
		CHECK(trcu_read_lock_held());
		CHECK(d.try_lock());
		d.unlock();
		rcu_read_guard g;
		CHECK(trcu_read_lock_held());
	}
	CHECK(!trcu_read_lock_held());
	{
		rcu_read_guard g;
		CHECK(trcu_read_lock_held());
	}
	CHECK(!trcu_read_lock_held());
	// std::lock on two Lockables (try_lock is used).
	std::unique_lock<rcu_domain> a(d, std::defer_lock), b(d, std::defer_lock);
	std::lock(a, b);
	CHECK(trcu_read_lock_held());
	a.unlock();
	b.unlock();
	CHECK(!trcu_read_lock_held());
	printf("rcu_domain: scoped_lock, unique_lock, std::lock, nesting, rcu_read_guard\n");
}

// ---- list.h in C++ --------------------------------------------------------------------------
struct entry : rcu_obj_base<entry, counting_delete> {
	int key = 0;
	list_head link{};
};

static void list_of_rcu_objects()
{
	LIST_HEAD(head);
	std::atomic<int> count{0};
	entry* e;
	int sum = 0;

	for (int k = 1; k <= 3; k++) {
		e = new entry;
		e->key = k;
		list_add_tail_rcu(&e->link, &head);
	}
	{
		rcu_read_guard g;
		list_for_each_entry_rcu(e, &head, link)
			sum += e->key;
		CHECK(list_first_or_null_rcu(&head, entry, link)->key == 1);
	}
	CHECK_EQ(sum, 6);
	entry* n;
	list_for_each_entry_safe(e, n, &head, link) {
		list_del_rcu(&e->link);
		e->retire(counting_delete{&count, nullptr});
	}
	CHECK(list_empty(&head));
	rcu_barrier();
	CHECK_EQ(count.load(), 3);
	printf("list.h: an RCU list of rcu_obj_base objects\n");
}

// ---- Stress: readers and retirers -----------------------------------------------------
namespace stress {

constexpr int kSlots = 8;
constexpr int kSwapsPerWriter = 20000;
enum : int { kLive = 0x11fe, kDead = 0xdead };

struct node;

// Marks the node dead, then frees it: a reader that still reached it would
// see kDead, or trip ASan.
struct mark_dead_delete {
	void operator()(node* n) const;
};

struct node : rcu_obj_base<node, mark_dead_delete> {
	std::atomic<int> magic{kLive};
	int slot = 0;
};

std::atomic<node*> slots[kSlots];
std::atomic<bool> stop{false};
std::atomic<long> reads{0};
std::atomic<int> freed{0};
std::atomic<int> retired{0};

void mark_dead_delete::operator()(node* n) const
{
	n->magic.store(kDead, std::memory_order_relaxed);
	freed.fetch_add(1);
	delete n;
}

void check_node(node* n, int slot)
{
	if (n->magic.load(std::memory_order_relaxed) != kLive) {
		fprintf(stderr, "reader reached a node whose deleter already ran\n");
		CHECK_FAIL_EXIT();
	}
	CHECK_EQ(n->slot, slot);
}

void reader(int id)
{
	unsigned int seed = static_cast<unsigned int>(id);

	while (!stop.load(std::memory_order_relaxed)) {
		if (id % 2) {
			std::scoped_lock<rcu_domain> lk(rcu_default_domain());
			for (int i = 0; i < kSlots; i++)
				check_node(slots[i].load(std::memory_order_acquire), i);
		} else {
			rcu_read_guard g;
			int i = static_cast<int>(rand_r(&seed) % kSlots);
			node* n = slots[i].load(std::memory_order_acquire);
			check_node(n, i);
			sched_yield();
			check_node(n, i);
		}
		reads.fetch_add(1, std::memory_order_relaxed);
	}
}

void writer(int id)
{
	unsigned int seed = static_cast<unsigned int>(id) * 7919u;

	for (int s = 0; s < kSwapsPerWriter; s++) {
		int i = static_cast<int>(rand_r(&seed) % kSlots);
		node* nw = new node;
		nw->slot = i;
		// Release: nw's fields before a reader's acquire load reaches it.
		node* old = slots[i].exchange(nw, std::memory_order_acq_rel);
		if (s % 2)
			old->retire();                      // rcu_obj_base's D
		else
			rcu_retire(old, mark_dead_delete{});
		retired.fetch_add(1);
	}
}

} // namespace stress

static void readers_and_retirers()
{
	using namespace stress;
	std::vector<std::thread> ts;

	for (int i = 0; i < kSlots; i++) {
		node* n = new node;
		n->slot = i;
		slots[i].store(n);
	}
	for (int i = 0; i < 3; i++)
		ts.emplace_back(reader, i + 1);
	std::thread w1(writer, 1), w2(writer, 2);
	w1.join();
	w2.join();
	stop = true;
	for (auto& t : ts)
		t.join();
	rcu_barrier();
	CHECK_EQ(retired.load(), 2 * kSwapsPerWriter);
	CHECK_EQ(freed.load(), retired.load());
	printf("stress: %d objects retired under %ld reader regions, none seen after its deleter\n",
	       retired.load(), reads.load());
	for (int i = 0; i < kSlots; i++)
		delete slots[i].load();
}

// rcu_obj_base adds no name a derived class can trip on: a class with
// another base whose members are called next, func, invoke and deleter_
// (an intrusive list link, a callable) uses them unqualified.  With the
// head as a base of rcu_obj_base, `next` here was ambiguous (g++: "reference
// to 'next' is ambiguous") and did not compile.
struct link_base {
	link_base* next = nullptr;
	int func() const { return 1; }
	int invoke() const { return 2; }
	int deleter_ = 3;
};

static std::atomic<int> linked_freed{0};

struct linked_delete {
	template <class T>
	void operator()(T* p) const
	{
		linked_freed.fetch_add(1);
		delete p;
	}
};

struct linked : rcu_obj_base<linked, linked_delete>, link_base {
	int names() const { return (next == nullptr) + func() + invoke() + deleter_; }
};

static void base_names_stay_the_users()
{
	linked* l = new linked;

	CHECK_EQ(l->names(), 7);
	l->retire();
	rcu_barrier();
	CHECK_EQ(linked_freed.load(), 1);
	printf("rcu_obj_base beside a base with next/func/invoke/deleter_: names unambiguous, "
	       "retired once\n");
}

static void on_alarm(int)
{
	static const char msg[] = "test_rcu_hpp: timed out (hang?)\n";

	if (write(2, msg, sizeof(msg) - 1) < 0) {
		// nothing more to say
	}
	_exit(1);
}

int main()
{
	std::signal(SIGALRM, on_alarm);
	alarm(240);

	retire_then_barrier_runs_deleter_once();
	region_outlives_retire();
	rcu_retire_deleters();
	rcu_retire_out_of_memory();
	domain_is_lockable();
	list_of_rcu_objects();
	readers_and_retirers();
	base_names_stay_the_users();
	incomplete* inc = new incomplete;
	inc->retire();
	rcu_barrier();
	printf("test_rcu_hpp: ok (C++%ld)\n", __cplusplus / 100 % 100);
	return 0;
}
