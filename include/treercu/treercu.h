/* SPDX-License-Identifier: MIT */
/* treercu umbrella header: the RCU API and the workqueue. */
#ifndef TREERCU_TREERCU_H
#define TREERCU_TREERCU_H
#include <treercu/rcu.h>
#if TREERCU_WORKQUEUE
#include <treercu/workqueue.h>
#endif
#endif
