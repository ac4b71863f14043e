// SPDX-License-Identifier: MIT
/*
 * A C++ program written for liburcu that also uses the C++26 <rcu>
 * interface: a liburcu flavor header (treercu's, from compat/urcu) and
 * <treercu/rcu.hpp> in one file, in either order, with liburcu's
 * <urcu/rculist.h> and <urcu/rculfhash.h> when URCU_RCU_HPP_CDS is 1.
 * tests/api/urcu_rcu_hpp.sh builds it for every flavor header, both orders,
 * g++ and clang++, C++17 and C++20, and runs it.
 *
 *   URCU_RCU_HPP_FIRST   1: <treercu/rcu.hpp> first; 0: last.
 *   URCU_RCU_HPP_FLAVOR  1 <urcu.h>, 2 <urcu.h> with RCU_MB, 3 <urcu.h> with
 *                        RCU_SIGNAL, 4 <urcu-qsbr.h>, 5 <urcu-bp.h>,
 *                        6 <urcu/urcu-memb.h> ... <urcu/urcu-bp.h> together
 *                        (prefixed names only).
 *
 * Checked: liburcu's names keep liburcu's meaning (rcu_read_lock(),
 * call_rcu() on a struct rcu_head, rcu_barrier() unqualified, the pointer
 * macros, the data structures through the flavor structure), and the
 * standard's names keep theirs (treercu::rcu_barrier() with and without a
 * domain, using-declarations and using-directives of them, rcu_obj_base,
 * rcu_retire, rcu_synchronize, scoped_lock on the domain), all in one
 * process: a reader thread sees only live objects while both kinds of
 * retirement go on.
 */
#ifndef URCU_RCU_HPP_FIRST
#define URCU_RCU_HPP_FIRST 0
#endif
#ifndef URCU_RCU_HPP_FLAVOR
#define URCU_RCU_HPP_FLAVOR 1
#endif
#ifndef URCU_RCU_HPP_CDS
#define URCU_RCU_HPP_CDS 0
#endif

#if URCU_RCU_HPP_FIRST
#include <treercu/rcu.hpp>
#endif

#if URCU_RCU_HPP_FLAVOR == 1
#include <urcu.h>
#elif URCU_RCU_HPP_FLAVOR == 2
#define RCU_MB
#include <urcu.h>
#elif URCU_RCU_HPP_FLAVOR == 3
#define RCU_SIGNAL
#include <urcu.h>
#elif URCU_RCU_HPP_FLAVOR == 4
#include <urcu-qsbr.h>
#elif URCU_RCU_HPP_FLAVOR == 5
#include <urcu-bp.h>
#elif URCU_RCU_HPP_FLAVOR == 6
#include <urcu/urcu-memb.h>
#include <urcu/urcu-mb.h>
#include <urcu/urcu-signal.h>
#include <urcu/urcu-qsbr.h>
#include <urcu/urcu-bp.h>
#else
#error "URCU_RCU_HPP_FLAVOR: 1 to 6"
#endif

#if URCU_RCU_HPP_CDS
#include <urcu/rculist.h>
#include <urcu/rculfhash.h>
#endif

#if !URCU_RCU_HPP_FIRST
#include <treercu/rcu.hpp>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <type_traits>

#include <unistd.h>

// The liburcu calls this file makes: the short names of the flavor header,
// or (6) the memb flavor's prefixed ones; U_barrier_fn is a prefixed name
// of the same flavor, taken as a value.
#if URCU_RCU_HPP_FLAVOR == 6
#define U_register_thread   urcu_memb_register_thread
#define U_unregister_thread urcu_memb_unregister_thread
#define U_read_lock         urcu_memb_read_lock
#define U_read_unlock       urcu_memb_read_unlock
#define U_quiescent_state   urcu_memb_quiescent_state
#define U_synchronize_rcu   urcu_memb_synchronize_rcu
#define U_call_rcu          urcu_memb_call_rcu
#define U_barrier           urcu_memb_barrier
#define U_defer_rcu         urcu_memb_defer_rcu
#define U_defer_barrier     urcu_memb_defer_barrier
#define U_flavor            urcu_memb_flavor
#else
#define U_register_thread   rcu_register_thread
#define U_unregister_thread rcu_unregister_thread
#define U_read_lock         rcu_read_lock
#define U_read_unlock       rcu_read_unlock
#define U_quiescent_state   rcu_quiescent_state
#define U_synchronize_rcu   synchronize_rcu
#define U_call_rcu          call_rcu
#define U_barrier           rcu_barrier
#define U_defer_rcu         defer_rcu
#define U_defer_barrier     rcu_defer_barrier
#define U_flavor            rcu_flavor
#endif
#if URCU_RCU_HPP_FLAVOR == 1 || URCU_RCU_HPP_FLAVOR == 6
#define U_barrier_fn urcu_memb_barrier
#elif URCU_RCU_HPP_FLAVOR == 2
#define U_barrier_fn urcu_mb_barrier
#elif URCU_RCU_HPP_FLAVOR == 3
#define U_barrier_fn urcu_signal_barrier
#elif URCU_RCU_HPP_FLAVOR == 4
#define U_barrier_fn urcu_qsbr_barrier
#else
#define U_barrier_fn urcu_bp_barrier
#endif

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			std::fflush(stderr); \
			_exit(1); \
		} \
	} while (0)

// The standard's signatures, whatever the order of the headers.
static_assert(std::is_same_v<decltype(treercu::rcu_barrier()), void>);
static_assert(noexcept(treercu::rcu_barrier()));
static_assert(noexcept(treercu::rcu_barrier(treercu::rcu_default_domain())));
static_assert(noexcept(treercu::rcu_synchronize()));
static_assert(std::is_same_v<decltype(treercu::rcu_default_domain()), treercu::rcu_domain&>);
// liburcu's callback head keeps liburcu's size.
static_assert(sizeof(struct rcu_head) == 2 * sizeof(void*));

static std::atomic<int> freed_call_rcu{0};
static std::atomic<int> freed_retire{0};
static std::atomic<int> freed_rcu_retire{0};
static std::atomic<int> freed_defer{0};

// Retired with liburcu's call_rcu(): the head first (standard layout).
struct litem {
	struct rcu_head head;
	int alive;
};

static void litem_free(struct rcu_head* h)
{
	litem* it = reinterpret_cast<litem*>(h);
	it->alive = 0;
	delete it;
	freed_call_rcu.fetch_add(1);
}

// Retired with the standard's retire() and a counting deleter.
struct citem;
struct counting_delete {
	void operator()(citem* p) const;
};
struct citem : treercu::rcu_obj_base<citem, counting_delete> {
	int alive = 1;
};
void counting_delete::operator()(citem* p) const
{
	p->alive = 0;
	delete p;
	freed_retire.fetch_add(1);
}

// Retired with rcu_retire() (no base).
struct pitem {
	int alive = 1;
};

static void defer_free(void* p)
{
	static_cast<pitem*>(p)->alive = 0;
	delete static_cast<pitem*>(p);
	freed_defer.fetch_add(1);
}

static litem* lp;   // rcu_assign_pointer() / rcu_dereference(), liburcu's macros
static std::atomic<citem*> cp{nullptr};
static std::atomic<pitem*> pp{nullptr};
static std::atomic<bool> stop{false};
static std::atomic<long> reads{0};

static void reader()
{
	U_register_thread();
	while (!stop.load(std::memory_order_relaxed)) {
		U_read_lock();
		litem* l = rcu_dereference(lp);
		if (l)
			CHECK(l->alive == 1);
		U_read_unlock();
		{
			// The standard's region, on the same domain.
			std::scoped_lock<treercu::rcu_domain> lk(treercu::rcu_default_domain());
			citem* c = cp.load(std::memory_order_acquire);
			if (c)
				CHECK(c->alive == 1);
			pitem* p = pp.load(std::memory_order_acquire);
			if (p)
				CHECK(p->alive == 1);
			litem* l2 = rcu_dereference(lp);
			if (l2)
				CHECK(l2->alive == 1);
		}
		U_quiescent_state();
		reads.fetch_add(1, std::memory_order_relaxed);
	}
	U_unregister_thread();
}

// Every spelling of the barrier a file holding both headers may use.
static void barriers()
{
#if URCU_RCU_HPP_FLAVOR != 6
	rcu_barrier();                  // liburcu's short name, unqualified
#endif
	treercu::rcu_barrier();
	treercu::rcu_barrier(treercu::rcu_default_domain());
	{
		using treercu::rcu_barrier;
		rcu_barrier();
	}
	{
		using namespace treercu;
		rcu_barrier();
		rcu_barrier(rcu_default_domain());
	}
	void (*fn)(void) = U_barrier_fn; // a prefixed name as a value
	fn();
	U_defer_barrier();
}

#if URCU_RCU_HPP_CDS
struct entry {
	struct rcu_head head;
	struct cds_lfht_node hnode;
	struct cds_list_head link;
	unsigned long key;
};

static void entry_free(struct rcu_head* h)
{
	delete caa_container_of(h, struct entry, head);
}

static int entry_match(struct cds_lfht_node* node, const void* key)
{
	return caa_container_of(node, struct entry, hnode)->key == *static_cast<const unsigned long*>(key);
}

// liburcu's list and hash table (liburcu-cds, through the flavor structure).
static void data_structures()
{
	struct cds_lfht* ht = cds_lfht_new_flavor(4, 4, 0, 0, &U_flavor, nullptr);
	CDS_LIST_HEAD(list);
	CHECK(ht);
	for (unsigned long k = 0; k < 64; k++) {
		entry* e = new entry();
		e->key = k;
		cds_lfht_node_init(&e->hnode);
		U_read_lock();
		cds_lfht_add(ht, k * 2654435761UL, &e->hnode);
		U_read_unlock();
		cds_list_add_rcu(&e->link, &list);
	}
	U_read_lock();
	unsigned long n = 0;
	entry* e;
	cds_list_for_each_entry_rcu(e, &list, link) {
		struct cds_lfht_iter it;
		cds_lfht_lookup(ht, e->key * 2654435761UL, entry_match, &e->key, &it);
		CHECK(cds_lfht_iter_get_node(&it) == &e->hnode);
		n++;
	}
	U_read_unlock();
	CHECK(n == 64);
	entry* tmp;
	cds_list_for_each_entry_safe(e, tmp, &list, link) {
		U_read_lock();
		CHECK(cds_lfht_del(ht, &e->hnode) == 0);
		U_read_unlock();
		cds_list_del_rcu(&e->link);
		U_call_rcu(&e->head, entry_free);
	}
	CHECK(cds_list_empty(&list));
	U_barrier();
	CHECK(cds_lfht_destroy(ht, nullptr) == 0);
}
#endif

int main()
{
	U_register_thread();
	std::thread r1(reader), r2(reader);

	const int rounds = 200;
	for (int i = 0; i < rounds; i++) {
		litem* nl = new litem();
		nl->alive = 1;
		litem* ol = rcu_xchg_pointer(&lp, nl);
		if (ol)
			U_call_rcu(&ol->head, litem_free);

		citem* oc = cp.exchange(new citem(), std::memory_order_acq_rel);
		if (oc)
			oc->retire();

		pitem* op = pp.exchange(new pitem(), std::memory_order_acq_rel);
		if (op) {
			if (i % 2)
				treercu::rcu_retire(op, [](pitem* p) {
					p->alive = 0;
					delete p;
					freed_rcu_retire.fetch_add(1);
				});
			else
				U_defer_rcu(defer_free, op);
		}
		if (i % 50 == 0)
			treercu::rcu_synchronize();
		else if (i % 50 == 25)
			U_synchronize_rcu();
		U_quiescent_state();
	}
	while (reads.load() < 100)
		U_quiescent_state();
	stop.store(true);
	r1.join();
	r2.join();

	barriers();
	CHECK(freed_call_rcu.load() == rounds - 1);
	CHECK(freed_retire.load() == rounds - 1);
	CHECK(freed_rcu_retire.load() + freed_defer.load() == rounds - 1);

#if URCU_RCU_HPP_CDS
	data_structures();
#endif

	// Retire the last ones too.
	litem* last = rcu_xchg_pointer(&lp, static_cast<litem*>(nullptr));
	U_call_rcu(&last->head, litem_free);
	cp.exchange(nullptr)->retire();
	treercu::rcu_retire(pp.exchange(nullptr));
	treercu::rcu_barrier();
	CHECK(freed_call_rcu.load() == rounds);
	CHECK(freed_retire.load() == rounds);

	U_unregister_thread();
	std::printf("urcu_rcu_hpp: flavor %d, rcu.hpp %s: %ld reads\n", URCU_RCU_HPP_FLAVOR,
		    URCU_RCU_HPP_FIRST ? "first" : "last", reads.load());
	return 0;
}
