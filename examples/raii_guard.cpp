// SPDX-License-Identifier: MIT
/*
 * C++: RAII read-side sections and retiring objects with treercu/rcu.hpp
 * (the C++26 <rcu> interface in namespace treercu).
 *
 * - treercu::rcu_read_guard opens a section for its scope; so does
 *   std::scoped_lock<treercu::rcu_domain> on rcu_default_domain().
 * - A class derived from treercu::rcu_obj_base<T> is retired with
 *   retire(): its deleter runs after a grace period, with no allocation.
 * - treercu::rcu_retire(p) does the same for any object.
 *
 * Readers check that the settings they see are whole and never destroyed
 * under them; at the end treercu::rcu_barrier() has run every deleter, so
 * every object built has been destroyed exactly once.
 */
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <treercu/rcu.hpp>

namespace {

std::atomic<long> alive{0};

class Settings : public treercu::rcu_obj_base<Settings> {
public:
	explicit Settings(unsigned long gen)
		: gen_(gen), label_("settings #" + std::to_string(gen)), check_(~gen)
	{
		alive.fetch_add(1);
	}
	~Settings()
	{
		check_ = 0;             // a reader after this would see it
		alive.fetch_sub(1);
	}
	Settings(const Settings&) = delete;
	Settings& operator=(const Settings&) = delete;

	bool whole() const { return check_ == ~gen_ && label_.size() > 10; }
	unsigned long generation() const { return gen_; }

private:
	unsigned long gen_;
	std::string label_;
	unsigned long check_;
};

Settings* current;                      // published with rcu_xchg_pointer()
std::atomic<bool> stop{false};

[[noreturn]] void fail(const char* what)
{
	std::fprintf(stderr, "raii_guard: %s\n", what);
	std::exit(1);
}

void reader_guard()
{
	unsigned long last = 0;

	while (!stop.load(std::memory_order_relaxed)) {
		treercu::rcu_read_guard guard;          // section until the scope ends
		const Settings* s = rcu_dereference(current);

		if (!s->whole() || s->generation() < last)
			fail("a reader (rcu_read_guard) saw a destroyed or older Settings");
		last = s->generation();
	}
}

void reader_scoped_lock()
{
	while (!stop.load(std::memory_order_relaxed)) {
		std::scoped_lock<treercu::rcu_domain> lock(treercu::rcu_default_domain());
		const Settings* s = rcu_dereference(current);

		if (!s->whole())
			fail("a reader (scoped_lock) saw a destroyed Settings");
	}
}

} // namespace

int main()
{
	constexpr unsigned long updates = 2000;

	current = new Settings(1);
	std::vector<std::thread> readers;
	readers.emplace_back(reader_guard);
	readers.emplace_back(reader_scoped_lock);

	for (unsigned long g = 2; g <= updates; g++) {
		Settings* old = rcu_xchg_pointer(&current, new Settings(g));
		old->retire();                          // delete old after a grace period
	}

	// rcu_retire(): any object, no base class needed.
	auto* note = new std::string("retired without a base class");
	treercu::rcu_retire(note);

	stop.store(true);
	for (auto& t : readers)
		t.join();
	treercu::rcu_barrier();                         // every deleter has run
	if (alive.load() != 1)
		fail("rcu_barrier() returned before every retired Settings was deleted");
	delete rcu_xchg_pointer(&current, static_cast<Settings*>(nullptr));
	std::printf("raii_guard: ok (%lu settings retired)\n", updates - 1);
	return 0;
}
