/* SPDX-License-Identifier: MIT */
/*
 * Why a read-side fast path that stores ->watching + 1 reads 4.7-4.9 ns per
 * pair on some machines (a 2-vCPU AMD EPYC VM) while liburcu memb reads
 * 1.2 ns in the same run.  The fast path copied here as A updates two words
 * of the thread's trcu_reader in every lock and unlock (->watching += 1,
 * and ->nest_flags 0 <-> 1), and the next call reloads each store, so every
 * pair waits on store-to-load forwarding.  Measured here (three rounds):
 *   A (->watching + 1)              4.8-5.0 ns
 *   B (->watching chain alone)      0.65-4.8 ns (fast in some rounds only)
 *   C (->nest_flags alone)          0.9-1.35 ns
 *   D (memory-destination add)      3.8-4.0 ns
 *   E (lock stores a global gen.)   1.5-2.0 ns
 * Moving the fields apart or reordering the accesses did not help (4.1-7.0
 * ns).  The same fast path in a loop unrolled by one reads 1.76 ns; the
 * tool's loop is unrolled by ten (REFSCALE_PAIR10).  liburcu memb's fast
 * path stores one word per call, and its lock's stored value does not
 * depend on the previous unlock's.  The library takes E: the lock stores
 * the reader generation trcu_reader_gen (include/treercu/rcu.h), so no
 * store-load chain runs from one pair to the next (docs/decisions.md).
 *
 * Build: cc -O3 scripts/bench/readside_chains.c -o readside_chains
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
static long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000L+t.tv_nsec;}
#define tool_barrier() __asm__ __volatile__("" ::: "memory")
#define P(L,U) do { L; tool_barrier(); U; tool_barrier(); } while (0)
#define P10(L,U) do { P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);P(L,U);} while(0)
#define LOOP(nb,L,U) do { for (unsigned long b=0;b<(nb);b++) for(int i=0;i<100;i++) P10(L,U); } while(0)
struct rd { _Atomic unsigned long w; unsigned long nf; _Atomic unsigned nq; } __attribute__((aligned(64)));
__thread struct rd tls = { 1, 0, 0 };
/* A: current */
static inline void lkA(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==0,1)){unsigned long w=atomic_load_explicit(&r->w,memory_order_relaxed); r->nf=1; atomic_store_explicit(&r->w,w+1,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst);} else r->nf=nf+1;}
static inline void ulA(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==1,1)){unsigned long w=atomic_load_explicit(&r->w,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst); r->nf=0; atomic_store_explicit(&r->w,w+1,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst); if(atomic_load_explicit(&r->nq,memory_order_relaxed)) __builtin_trap();} else r->nf=nf-1;}
/* B: no nest_flags traffic (only watching chain) */
static inline void lkB(void){ struct rd *r=&tls; unsigned long w=atomic_load_explicit(&r->w,memory_order_relaxed); atomic_store_explicit(&r->w,w+1,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst);}
static inline void ulB(void){ struct rd *r=&tls; unsigned long w=atomic_load_explicit(&r->w,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst); atomic_store_explicit(&r->w,w+1,memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst); if(atomic_load_explicit(&r->nq,memory_order_relaxed)) __builtin_trap();}
/* C: only nest_flags (constant stores) + need_qs */
static inline void lkC(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==0,1)){ r->nf=1; atomic_signal_fence(memory_order_seq_cst);} else r->nf=nf+1;}
static inline void ulC(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==1,1)){ r->nf=0; atomic_signal_fence(memory_order_seq_cst); if(atomic_load_explicit(&r->nq,memory_order_relaxed)) __builtin_trap();} else r->nf=nf-1;}
/* D: watching chain via memory-destination add */
static inline void lkD(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==0,1)){ r->nf=1; __asm__ volatile("addq $1, %0" : "+m"(*(unsigned long*)&r->w)); } else r->nf=nf+1;}
static inline void ulD(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==1,1)){ r->nf=0; __asm__ volatile("addq $1, %0" : "+m"(*(unsigned long*)&r->w)); if(atomic_load_explicit(&r->nq,memory_order_relaxed)) __builtin_trap();} else r->nf=nf-1;}
/* E: as A, but lock stores a global generation (odd, advanced by each GP
 * start) instead of ->watching + 1: the loaded ->watching only feeds the
 * "registered?" branch, so no store-load chain runs from pair to pair
 * (unlock's +1 depends on its own section's lock only). */
_Atomic unsigned long gen = 1;
static inline void lkE(void){ struct rd *r=&tls; unsigned long nf=r->nf; if(__builtin_expect(nf==0,1)){unsigned long w=atomic_load_explicit(&r->w,memory_order_relaxed); r->nf=1; if(__builtin_expect(w==0,0)) __builtin_trap(); atomic_store_explicit(&r->w,atomic_load_explicit(&gen,memory_order_relaxed),memory_order_relaxed); atomic_signal_fence(memory_order_seq_cst);} else r->nf=nf+1;}
__attribute__((noinline)) void A(unsigned long nb){ LOOP(nb,lkA(),ulA()); }
__attribute__((noinline)) void B(unsigned long nb){ LOOP(nb,lkB(),ulB()); }
__attribute__((noinline)) void C(unsigned long nb){ LOOP(nb,lkC(),ulC()); }
__attribute__((noinline)) void D(unsigned long nb){ LOOP(nb,lkD(),ulD()); }
__attribute__((noinline)) void E(unsigned long nb){ LOOP(nb,lkE(),ulA()); }
int main(){ unsigned long nb=50000; void (*f[])(unsigned long)={A,B,C,D,E}; const char*nm="ABCDE";
 for(int k=0;k<3;k++)
  for(int v=0;v<5;v++){ long t0=now(); f[v](nb); long t1=now(); printf("%c %.3f ns\n",nm[v],(t1-t0)/(double)nb/1000);}
 return 0;}
