/* SPDX-License-Identifier: MIT */
/* One thread queues 5 x 200000 callbacks, rcu_barrier() after each batch:
 * the call_rcu() path in a flood, for instruction counts
 * (scripts/bench/call_rcu_instructions.sh). */
#include <treercu/rcu.h>
#include <stdlib.h>
static struct rcu_head heads[200000];
static long n;
static void cb(struct rcu_head *h) { (void)h; n++; }
int main(void) {
	for (int r = 0; r < 5; r++) {
		for (int i = 0; i < 200000; i++) call_rcu(&heads[i], cb);
		rcu_barrier();
	}
	return n == 1000000 ? 0 : 1;
}
