/* SPDX-License-Identifier: MIT */
/* The synchronize_rcu() paths the wake-from-GP experiments compare. */
#include <stdio.h>

#include <treercu/rcu.h>

#include "sync_paths.h"


const char *const sp_base[NSPATH] = {
	"0 wakeme (wait_rcu_gp)", "1 wake-from-GP list", "2 GP-end futex",
};
char sp_name[NSPATH][40];   /* sp_base, the default marked */
int sp_default;             /* normal_wake_from_gp when the run began */

void sp_names_init(long def)
{
	sp_default = (int)def;
	for (int p = 0; p < NSPATH; p++)
		snprintf(sp_name[p], sizeof(sp_name[p]), "%s%s", sp_base[p],
			 p == def ? " (default)" : "");
}
const char *const sp_key[NSPATH] = { "wakeme", "wake_from_gp_list", "gp_end_futex" };

int sp_apply(int path)
{
	if (trcu_set_tunable("normal_wake_from_gp", path)) {
		fprintf(stderr, "seeds: cannot set normal_wake_from_gp=%d\n", path);
		return -1;
	}
	return 0;
}

long sp_tunable(const char *name)
{
	long v = -1;

	trcu_get_tunable(name, &v);
	return v;
}
