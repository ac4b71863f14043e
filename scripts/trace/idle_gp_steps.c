/* SPDX-License-Identifier: MIT */
/*
 * One idle synchronize_rcu() between two calls of marker(), after 1000
 * warm-up calls, with one idle registered thread: the program that
 * idle_gp_steps.sh single-steps.
 */
#include <pthread.h>
#include <unistd.h>

#include <treercu/rcu.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stop;

static void *idle_thread(void *arg)
{
	(void)arg;
	trcu_register_thread();
	pthread_mutex_lock(&lock);
	while (!stop)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	trcu_unregister_thread();
	return NULL;
}

__attribute__((noinline)) void marker(void)
{
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, idle_thread, NULL);
	usleep(10000);
	for (int i = 0; i < 1000; i++)
		synchronize_rcu();
	marker();
	synchronize_rcu();
	marker();
	pthread_mutex_lock(&lock);
	stop = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	return 0;
}
