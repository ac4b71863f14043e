/* SPDX-License-Identifier: MIT */
/*
 * Compiled for arm64 by scripts/check-task-readside.sh, never run: a task
 * reader's section spanning a call that may switch the task to another
 * worker (fiber_yield()), with the task read side and with the plain names.
 */
#include <treercu/task.h>

void fiber_yield(void);
void use(void *p);

void task_readside(struct trcu_task *t, void **gp);
void task_readside_nested(struct trcu_task *t, void **gp);
void plain_readside(void **gp);

void task_readside(struct trcu_task *t, void **gp)
{
	trcu_task_read_lock(t);
	use(*gp);
	fiber_yield();
	use(*gp);
	trcu_task_read_unlock(t);
}

void task_readside_nested(struct trcu_task *t, void **gp)
{
	trcu_task_read_lock(t);
	fiber_yield();
	trcu_task_read_lock(t);
	use(*gp);
	fiber_yield();
	trcu_task_read_unlock(t);
	fiber_yield();
	trcu_task_read_unlock(t);
}

void plain_readside(void **gp)
{
	rcu_read_lock();
	use(*gp);
	fiber_yield();
	use(*gp);
	rcu_read_unlock();
}
