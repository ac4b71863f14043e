#!/bin/sh
# Writes include/urcu/map/urcu-<flavor>.h: liburcu's short names mapped to
# one flavor's prefixed names, the same list for every flavor.  Reads
# include/treercu/rcu.h for the short names the two share.
# Run from anywhere: sh compat/urcu/gen-maps.sh
set -eu
dir=$(dirname "$0")/include/urcu/map
names="read_lock read_unlock read_ongoing quiescent_state thread_offline
thread_online register_thread unregister_thread init exit synchronize_rcu
start_poll_synchronize_rcu poll_state_synchronize_rcu get_cpu_call_rcu_data
get_call_rcu_thread create_call_rcu_data set_cpu_call_rcu_data
get_default_call_rcu_data get_call_rcu_data get_thread_call_rcu_data
set_thread_call_rcu_data create_all_cpu_call_rcu_data
free_all_cpu_call_rcu_data call_rcu call_rcu_data_free call_rcu_before_fork
call_rcu_after_fork_parent call_rcu_after_fork_child barrier defer_rcu
defer_register_thread defer_unregister_thread defer_barrier
defer_barrier_thread defer_exit flavor register_rculfhash_atfork
unregister_rculfhash_atfork"
# The short name liburcu gives each prefixed name.
short() {
	case $1 in
	read_lock|read_unlock|read_ongoing|quiescent_state|thread_offline|\
	thread_online|register_thread|unregister_thread|init|exit|barrier|flavor|\
	defer_register_thread|defer_unregister_thread|defer_barrier|\
	defer_barrier_thread|defer_exit) echo "rcu_$1" ;;
	register_rculfhash_atfork|unregister_rculfhash_atfork) echo "urcu_$1" ;;
	*) echo "$1" ;;
	esac
}
# The names <treercu/rcu.h>'s own short names define too: where that header
# came first with them (it defines trcu_head then), they give way to
# liburcu's.
rcu_h=$(dirname "$0")/../../include/treercu/rcu.h
taken=""
for n in $names; do
	s=$(short "$n")
	grep -q "^#define $s " "$rcu_h" && taken="$taken $s"
done
for f in memb mb signal qsbr bp; do
	F=$(echo "$f" | tr a-z A-Z)
	{
		echo "/* SPDX-License-Identifier: MIT */"
		echo "/* liburcu's short names for the $f flavor (<urcu.h>-style headers define"
		echo " * URCU_API_MAP to get them).  Written by compat/urcu/gen-maps.sh from one"
		echo " * name list; every flavor's map has the same shape.  Where <treercu/rcu.h>"
		echo " * came first with its own short names, liburcu's replace those it shares. */"
		echo "#ifndef TREERCU_URCU_MAP_${F}_H"
		echo "#define TREERCU_URCU_MAP_${F}_H"
		echo "#ifdef trcu_head"
		for s in $taken; do
			echo "#undef $s"
		done
		echo "#endif"
		for n in $names; do
			if [ "$n" = barrier ]; then
				echo "/* After <treercu/rcu.hpp> (C++), the standard's function (rcu.hpp says why). */"
				echo "#if defined(__cplusplus) && defined(TREERCU_RCU_HPP)"
				echo "using treercu::rcu_barrier;"
				echo "#else"
				printf '#define %-32s urcu_%s_%s\n' "$(short "$n")" "$f" "$n"
				echo "#endif"
				continue
			fi
			printf '#define %-32s urcu_%s_%s\n' "$(short "$n")" "$f" "$n"
		done
		for n in read_lock read_unlock read_ongoing quiescent_state thread_offline thread_online; do
			printf '#define %-32s _urcu_%s_%s\n' "_rcu_$n" "$f" "$n"
		done
		echo "#endif"
	} > "$dir/urcu-$f.h"
done
