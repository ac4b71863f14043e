// SPDX-License-Identifier: MIT
/*
 * C++20 coroutines as task readers (<treercu/task.h>): a coroutine suspends
 * (co_await) inside its read-side section and is resumed later, often on
 * the other worker thread, and the object it read stays alive throughout.
 *
 * - The coroutine's promise embeds a struct trcu_task: trcu_task_init()
 *   when the coroutine is created, trcu_task_exit() before its frame is
 *   destroyed.
 * - The executor (two worker threads sharing one run queue) calls
 *   trcu_task_switch_in() before every resume and trcu_task_switch_out()
 *   after it: that is all a runtime adds.
 * - Coroutine code uses trcu_task_read_lock(t) / trcu_task_read_unlock(t)
 *   on its own task: they read no thread-local storage, so a section that
 *   spans a co_await and a move to another thread is correct.
 *
 * An updater replaces the shared object, waits with synchronize_rcu() and
 * poisons the old one before freeing it; a reader that ever saw the poison
 * (its section not waited for while it was suspended) aborts.
 */
#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <treercu/rcu.h>
#include <treercu/task.h>

namespace {

constexpr unsigned long LIVE = 0x5eedUL, POISON = 0xdeadUL;
// Each reader runs at least SECTIONS sections, and on until the updater has
// replaced the object MIN_UPDATES times.
constexpr int READERS = 16, SECTIONS = 400, WORKERS = 2, MIN_UPDATES = 100;

struct Config {
	unsigned long magic;
	unsigned long version;
};

Config *current;   // published with rcu_assign_pointer()

std::atomic<long> sections{0}, suspended_inside{0}, moved_inside{0}, updates{0};
std::atomic<uint64_t> next_id{1};

// The coroutine type: a reader task.  Created suspended; the executor
// resumes it until it is done.
struct ReaderTask {
	struct promise_type {
		trcu_task rcu;          // the task object treercu knows
		int worker = -1;        // where it runs now (set by the executor)

		promise_type() { trcu_task_init(&rcu, next_id.fetch_add(1), "reader"); }
		ReaderTask get_return_object()
		{
			return ReaderTask{std::coroutine_handle<promise_type>::from_promise(*this)};
		}
		std::suspend_always initial_suspend() noexcept { return {}; }
		std::suspend_always final_suspend() noexcept { return {}; }
		void return_void() {}
		void unhandled_exception() { std::abort(); }
	};
	std::coroutine_handle<promise_type> handle;
};
using Handle = std::coroutine_handle<ReaderTask::promise_type>;

// co_await ThisTask{}: the coroutine's own promise, without suspending.
struct ThisTask {
	ReaderTask::promise_type *p = nullptr;
	bool await_ready() const noexcept { return false; }
	bool await_suspend(Handle h) noexcept
	{
		p = &h.promise();
		return false;           // do not suspend
	}
	ReaderTask::promise_type *await_resume() const noexcept { return p; }
};

// co_await Yield{}: back to the run queue; any worker may resume it.
struct Yield {
	bool await_ready() const noexcept { return false; }
	void await_suspend(Handle) const noexcept {}
	void await_resume() const noexcept {}
};

class Executor {
public:
	void spawn(Handle h)
	{
		std::lock_guard<std::mutex> g(lock_);
		queue_.push_back(h);
		live_++;
		more_.notify_one();
	}
	void run()
	{
		std::vector<std::thread> workers;

		for (int i = 0; i < WORKERS; i++)
			workers.emplace_back([this, i] { work(i); });
		for (auto &w : workers)
			w.join();
	}

private:
	void work(int self)
	{
		for (;;) {
			Handle h;
			{
				std::unique_lock<std::mutex> g(lock_);
				more_.wait(g, [this] { return !queue_.empty() || !live_; });
				if (queue_.empty())
					break;  // every task is done
				h = queue_.front();
				queue_.pop_front();
			}
			// The hand-off through lock_ orders the task's data (and its
			// trcu_task) between the workers, as the rules ask.
			trcu_task *t = &h.promise().rcu;
			h.promise().worker = self;
			trcu_task_switch_in(t);
			h.resume();
			trcu_task_switch_out(t);
			if (h.done()) {
				trcu_task_exit(t);
				h.destroy();
				std::lock_guard<std::mutex> g(lock_);
				if (!--live_)
					more_.notify_all();
			} else {
				std::lock_guard<std::mutex> g(lock_);
				queue_.push_back(h);
				more_.notify_one();
			}
		}
	}

	std::mutex lock_;
	std::condition_variable more_;
	std::deque<Handle> queue_;
	int live_ = 0;
};

ReaderTask reader()
{
	ReaderTask::promise_type *self = co_await ThisTask{};
	trcu_task *t = &self->rcu;

	for (int i = 0; i < SECTIONS || updates.load() < MIN_UPDATES; i++) {
		trcu_task_read_lock(t);
		Config *c = rcu_dereference(current);
		unsigned long version = c->version;

		if (i % 2 == 0) {
			int before = self->worker;

			co_await Yield{};       // suspended inside the section
			suspended_inside.fetch_add(1, std::memory_order_relaxed);
			if (self->worker != before)
				moved_inside.fetch_add(1, std::memory_order_relaxed);
		}
		if (c->magic != LIVE || c->version != version) {
			std::fprintf(stderr, "coroutine_readers: a reader saw a freed object\n");
			std::abort();
		}
		trcu_task_read_unlock(t);
		sections.fetch_add(1, std::memory_order_relaxed);
		co_await Yield{};
	}
}

void updater(std::atomic<bool> &stop)
{
	rcu_register_thread();
	for (unsigned long v = 1; !stop.load(); v++) {
		Config *fresh = new Config{LIVE, v};
		Config *old = rcu_xchg_pointer(&current, fresh);

		synchronize_rcu();      // every section that could see old is over
		old->magic = POISON;    // a reader still holding it would see this
		delete old;
		updates.fetch_add(1);
	}
	rcu_unregister_thread();
}

} // namespace

int main()
{
	Executor ex;
	std::atomic<bool> stop{false};
	Config *first = new Config{LIVE, 0};

	rcu_assign_pointer(current, first);
	for (int i = 0; i < READERS; i++)
		ex.spawn(reader().handle);
	std::thread up(updater, std::ref(stop));
	ex.run();
	stop.store(true);
	up.join();
	delete current;

	std::printf("%ld sections by %d coroutines on %d workers, %ld suspended inside their "
		    "section (%ld resumed on the other worker), %ld updates: no reader saw a "
		    "freed object\n",
		    sections.load(), READERS, WORKERS, suspended_inside.load(), moved_inside.load(),
		    updates.load());
	if (sections.load() < (long)READERS * SECTIONS || updates.load() < MIN_UPDATES)
		return 1;
	return 0;
}
