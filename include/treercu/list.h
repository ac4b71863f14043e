/* SPDX-License-Identifier: MIT */
/*
 * treercu/list.h: the Linux kernel's circular doubly linked list
 * (struct list_head) and hash list (struct hlist_head/hlist_node), with the
 * RCU-safe updates and traversals of the kernel's include/linux/rculist.h,
 * so that code ported from the kernel needs no other list library.
 *
 * Rules, as in the kernel:
 * - Updaters serialise among themselves (a lock of the caller's); readers
 *   take none and run inside rcu_read_lock()/rcu_read_unlock().
 * - Readers use only the _rcu traversals (list_for_each_entry_rcu(),
 *   list_entry_rcu(), list_first_or_null_rcu(), hlist_for_each_entry_rcu())
 *   and list_empty()/hlist_empty(); they follow ->next (->first) only,
 *   never ->prev (->pprev).
 * - An entry removed with list_del_rcu()/hlist_del_rcu() or replaced with
 *   list_replace_rcu()/hlist_replace_rcu() keeps its ->next, so a reader
 *   standing on it walks on; its ->prev/->pprev is poisoned.  Free it (or
 *   reuse it) only after a grace period: synchronize_rcu(), call_rcu() or
 *   rcu_free().
 * - The plain updates (list_add(), list_del(), list_for_each_entry(), ...)
 *   are for updaters, or for lists no reader can see.
 *
 * Ordering: every store that makes an entry reachable is a release store
 * (trcu_assign_pointer()), paired with the consume load of the traversals
 * (trcu_dereference()); see docs/design.md, "RCU lists".
 *
 * Names: every name here starts with trcu_ / TRCU_; the kernel's names
 * (list_head, list_add_rcu(), hlist_for_each_entry_rcu(), ...) are short
 * names for them unless TREERCU_NO_SHORT_NAMES is defined, as in
 * treercu/rcu.h.  The short names are object-like macros for the functions
 * (so list_add_rcu can be passed as a function pointer); the kernel's type
 * names are the real tags (struct list_head, hlist_head, hlist_node), and
 * struct trcu_list_head etc. are other spellings of them, as struct
 * trcu_head is of struct rcu_head.  Do not combine the short names with
 * another header that defines list_head or these functions (the kernel's own list.h, a project's copy of it, BSD
 * <sys/queue.h>'s LIST_HEAD): define TREERCU_NO_SHORT_NAMES and use the
 * trcu_ names there.  liburcu's <urcu/list.h> and <urcu/rculist.h> use
 * cds_list_* names and coexist with this header.
 *
 * C11 (with GNU statement expressions and __typeof__, as treercu/rcu.h)
 * and C++17 or later.
 */
#ifndef TREERCU_LIST_H
#define TREERCU_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <treercu/rcu.h>

#ifndef TREERCU_NO_SHORT_NAMES
/*
 * With the short names the kernel's tags are the real ones and the trcu_
 * tags spell them (treercu/rcu.h does the same for struct rcu_head): a
 * user's own struct list_head then collides loudly with ours instead of
 * being renamed to it.  With TREERCU_NO_SHORT_NAMES the tags are the trcu_
 * ones and nothing named list_head/hlist_* is declared.
 */
#define trcu_list_head  list_head
#define trcu_hlist_head hlist_head
#define trcu_hlist_node hlist_node
#endif

struct trcu_list_head {
	struct trcu_list_head *next, *prev;
};

struct trcu_hlist_node {
	struct trcu_hlist_node *next, **pprev;
};

struct trcu_hlist_head {
	struct trcu_hlist_node *first;
};

/* ->prev (->next) of an entry taken off a list: an address that faults,
 * so an updater that follows a stale entry's pointers crashes at once. */
#define TRCU_LIST_POISON1 TRCU_ADDR_AS_(struct trcu_list_head *, 0x100)
#define TRCU_LIST_POISON2 TRCU_ADDR_AS_(struct trcu_list_head *, 0x122)
#define TRCU_HLIST_POISON2 TRCU_ADDR_AS_(struct trcu_hlist_node **, 0x122)

/* The containing object of a member pointer. */
#ifndef __cplusplus
#define trcu_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#else
/* In C++ the entry type need not be standard-layout (a class with an
 * rcu_obj_base base, treercu/rcu.hpp, is not): offsetof is then
 * "conditionally-supported", which GCC and Clang support for members
 * reached without a virtual base (a virtual base is an error) and warn
 * about (-Winvalid-offsetof); the warning is silenced here only.  C++'s
 * casts: a const or void pointer is accepted, as by the C form, and no
 * old-style cast reaches the program's warnings. */
#define trcu_container_of(ptr, type, member) \
	(__extension__({ \
		_Pragma("GCC diagnostic push") \
		_Pragma("GCC diagnostic ignored \"-Winvalid-offsetof\"") \
		type *trcu_co_ = static_cast<type *>(static_cast<void *>( \
			const_cast<char *>(reinterpret_cast<const volatile char *>(ptr)) - \
			offsetof(type, member))); \
		_Pragma("GCC diagnostic pop") \
		trcu_co_; \
	}))
#endif

/* Plain single-copy-atomic accesses (the kernel's READ_ONCE/WRITE_ONCE):
 * for fields a reader may load concurrently when the store orders nothing
 * (relaxed). */
#define TRCU_LIST_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define TRCU_LIST_WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* ---- struct list_head: initialisation and tests --------------------------- */

#define TRCU_LIST_HEAD_INIT(name) { &(name), &(name) }
#define TRCU_LIST_HEAD(name) struct trcu_list_head name = TRCU_LIST_HEAD_INIT(name)

static inline void trcu_init_list_head(struct trcu_list_head *list)
{
	TRCU_LIST_WRITE_ONCE(list->next, list);
	TRCU_LIST_WRITE_ONCE(list->prev, list);
}

/* Safe inside a read-side section too: it compares ->next with head but
 * never dereferences it (the kernel has no list_empty_rcu() for that
 * reason). */
static inline bool trcu_list_empty(const struct trcu_list_head *head)
{
	return TRCU_LIST_READ_ONCE(head->next) == head;
}

/* ---- struct list_head: updates that readers may see ------------------------ */

/* Insert new between the consecutive entries prev and next. */
static inline void trcu_list_link_rcu(struct trcu_list_head *new_,
				       struct trcu_list_head *prev,
				       struct trcu_list_head *next)
{
	new_->next = next;
	new_->prev = prev;
	/* Release: new_'s fields (and the object around it) are initialised
	 * before a reader can reach it; pairs with trcu_dereference() in the
	 * traversals. */
	trcu_assign_pointer(prev->next, new_);
	next->prev = new_;              /* readers never follow ->prev */
}

/* Add new after head (a stack); readers see the list with or without it. */
static inline void trcu_list_add_rcu(struct trcu_list_head *new_,
				     struct trcu_list_head *head)
{
	trcu_list_link_rcu(new_, head, head->next);
}

/* Add new before head (a queue). */
static inline void trcu_list_add_tail_rcu(struct trcu_list_head *new_,
					  struct trcu_list_head *head)
{
	trcu_list_link_rcu(new_, head->prev, head);
}

/* Unlink the entries between prev and next (exclusive). */
static inline void trcu_list_unlink_rcu(struct trcu_list_head *prev,
				       struct trcu_list_head *next)
{
	next->prev = prev;
	/* Release, where the kernel has WRITE_ONCE: next was published by an
	 * earlier updater; the release carries that publication (ordered
	 * before this updater by the updaters' lock) to a reader that now
	 * reaches next through prev, which in the C11 model a relaxed store
	 * would not.  Pairs with trcu_dereference() in the traversals. */
	trcu_assign_pointer(prev->next, next);
}

/*
 * Remove entry from its list.  entry->next is left intact, so a reader
 * standing on entry walks on to the rest of the list; entry->prev is
 * poisoned.  Free entry only after a grace period.
 */
static inline void trcu_list_del_rcu(struct trcu_list_head *entry)
{
	trcu_list_unlink_rcu(entry->prev, entry->next);
	entry->prev = TRCU_LIST_POISON2;
}

/*
 * Put new in old's place.  A reader sees old or new, never neither, and
 * walks on from either.  old->next is left intact, old->prev poisoned; free
 * old only after a grace period.
 */
static inline void trcu_list_replace_rcu(struct trcu_list_head *old,
					 struct trcu_list_head *new_)
{
	new_->next = old->next;
	new_->prev = old->prev;
	/* Release: new_ initialised before a reader reaches it; pairs with
	 * trcu_dereference() in the traversals. */
	trcu_assign_pointer(new_->prev->next, new_);
	new_->next->prev = new_;
	old->prev = TRCU_LIST_POISON2;
}

/* Initialise a list head that readers may be traversing (the head of a
 * list being emptied): WRITE_ONCE so that a reader's load of ->next sees
 * either the old first entry or the head itself. */
static inline void trcu_init_list_head_rcu(struct trcu_list_head *list)
{
	TRCU_LIST_WRITE_ONCE(list->next, list);
	TRCU_LIST_WRITE_ONCE(list->prev, list);
}

/* Splice list's entries between prev and next; sync is a grace-period
 * wait (trcu_synchronize_rcu). */
static inline void trcu_list_splice_between_rcu(struct trcu_list_head *list,
					       struct trcu_list_head *prev,
					       struct trcu_list_head *next,
					       void (*sync)(void))
{
	struct trcu_list_head *first = list->next;
	struct trcu_list_head *last = list->prev;

	/* Readers of list now find it empty; those already inside its
	 * entries will end at list's head as long as last->next points
	 * there, so wait for them before moving last->next. */
	trcu_init_list_head_rcu(list);
	sync();
	last->next = next;              /* unreachable until the store below */
	/* Release: the spliced entries' ->next chain (last->next above)
	 * before readers of the target list reach first; pairs with
	 * trcu_dereference() in the traversals. */
	trcu_assign_pointer(prev->next, first);
	first->prev = prev;
	next->prev = last;
}

/*
 * Move every entry of list to the front of head (the _tail variant: to its
 * back), leaving list empty.  Both lists may have readers; sync() waits for
 * a grace period (pass trcu_synchronize_rcu) and is called once, only when
 * list is not empty.  Readers of list see it empty from the start; readers
 * of head see it with or without the whole of list.
 */
static inline void trcu_list_splice_init_rcu(struct trcu_list_head *list,
					     struct trcu_list_head *head,
					     void (*sync)(void))
{
	if (!trcu_list_empty(list))
		trcu_list_splice_between_rcu(list, head, head->next, sync);
}

static inline void trcu_list_splice_tail_init_rcu(struct trcu_list_head *list,
						  struct trcu_list_head *head,
						  void (*sync)(void))
{
	if (!trcu_list_empty(list))
		trcu_list_splice_between_rcu(list, head->prev, head, sync);
}

/* ---- struct list_head: read-side traversal -------------------------------- */

/* The entry a list pointer (an lvalue: head->next, pos->member.next) points
 * to, loaded with trcu_dereference(). */
#define trcu_list_entry_rcu(ptr, type, member) \
	trcu_container_of(trcu_dereference(ptr), type, member)

/* The first entry of the list, or NULL if it is empty (one load of ->next,
 * so that an entry found is never the head itself). */
#define trcu_list_first_or_null_rcu(ptr, type, member) \
	(__extension__({ \
		struct trcu_list_head *trcu_lh_ = (ptr); \
		struct trcu_list_head *trcu_ln_ = trcu_dereference(trcu_lh_->next); \
		trcu_ln_ != trcu_lh_ ? trcu_container_of(trcu_ln_, type, member) \
				     : TRCU_NULL_AS_(type *); \
	}))

/* Walk the list inside a read-side section (or under the updaters' lock);
 * pos is a pointer to the entry type, member its struct list_head. */
#define trcu_list_for_each_entry_rcu(pos, head, member) \
	for (pos = trcu_list_entry_rcu((head)->next, __typeof__(*(pos)), member); \
	     &(pos)->member != (head); \
	     pos = trcu_list_entry_rcu((pos)->member.next, __typeof__(*(pos)), member))

/* ---- struct list_head: updater-only operations ----------------------------- */

#define trcu_list_entry(ptr, type, member) trcu_container_of(ptr, type, member)
#define trcu_list_first_entry(ptr, type, member) \
	trcu_list_entry((ptr)->next, type, member)

static inline void trcu_list_add(struct trcu_list_head *new_,
				 struct trcu_list_head *head)
{
	struct trcu_list_head *next = head->next;

	new_->next = next;
	new_->prev = head;
	next->prev = new_;
	head->next = new_;
}

static inline void trcu_list_add_tail(struct trcu_list_head *new_,
				      struct trcu_list_head *head)
{
	struct trcu_list_head *prev = head->prev;

	new_->next = head;
	new_->prev = prev;
	head->prev = new_;
	prev->next = new_;
}

/* Remove entry; both its pointers are poisoned (unlike list_del_rcu(), a
 * reader standing on it could not walk on: not for lists readers see). */
static inline void trcu_list_del(struct trcu_list_head *entry)
{
	entry->next->prev = entry->prev;
	entry->prev->next = entry->next;
	entry->next = TRCU_LIST_POISON1;
	entry->prev = TRCU_LIST_POISON2;
}

#define trcu_list_for_each_entry(pos, head, member) \
	for (pos = trcu_list_entry((head)->next, __typeof__(*(pos)), member); \
	     &(pos)->member != (head); \
	     pos = trcu_list_entry((pos)->member.next, __typeof__(*(pos)), member))

/* Walk the list while removing entries: n holds the next entry. */
#define trcu_list_for_each_entry_safe(pos, n, head, member) \
	for (pos = trcu_list_entry((head)->next, __typeof__(*(pos)), member), \
	     n = trcu_list_entry((pos)->member.next, __typeof__(*(pos)), member); \
	     &(pos)->member != (head); \
	     pos = n, n = trcu_list_entry((n)->member.next, __typeof__(*(n)), member))

/* ---- struct hlist_head / hlist_node ---------------------------------------- */

#define TRCU_HLIST_HEAD_INIT { NULL }
#define TRCU_HLIST_HEAD(name) struct trcu_hlist_head name = TRCU_HLIST_HEAD_INIT

static inline void trcu_init_hlist_head(struct trcu_hlist_head *h)
{
	TRCU_LIST_WRITE_ONCE(h->first, TRCU_NULL_AS_(struct trcu_hlist_node *));
}

static inline void trcu_init_hlist_node(struct trcu_hlist_node *n)
{
	n->next = TRCU_NIL_;
	n->pprev = TRCU_NIL_;
}

/* True for a node on no list (initialised, or removed with
 * hlist_del_init_rcu()). */
static inline bool trcu_hlist_unhashed(const struct trcu_hlist_node *n)
{
	return !TRCU_LIST_READ_ONCE(n->pprev);
}

/* Safe inside a read-side section (compares, never dereferences). */
static inline bool trcu_hlist_empty(const struct trcu_hlist_head *h)
{
	return !TRCU_LIST_READ_ONCE(h->first);
}

/* Add n at the front of h's chain. */
static inline void trcu_hlist_add_head_rcu(struct trcu_hlist_node *n,
					   struct trcu_hlist_head *h)
{
	struct trcu_hlist_node *first = h->first;

	n->next = first;
	TRCU_LIST_WRITE_ONCE(n->pprev, &h->first);
	/* Release: n initialised before a reader reaches it; pairs with
	 * trcu_dereference() in hlist_for_each_entry_rcu(). */
	trcu_assign_pointer(h->first, n);
	if (first)
		TRCU_LIST_WRITE_ONCE(first->pprev, &n->next);
}

/* Unlink n (not poisoning it). */
static inline void trcu_hlist_unlink_rcu(struct trcu_hlist_node *n)
{
	struct trcu_hlist_node *next = n->next;
	struct trcu_hlist_node **pprev = n->pprev;

	/* Release, as in trcu_list_unlink_rcu(): carries next's publication
	 * by an earlier updater to a reader reaching it from here. */
	trcu_assign_pointer(*pprev, next);
	if (next)
		TRCU_LIST_WRITE_ONCE(next->pprev, pprev);
}

/* Remove n; n->next is left intact for readers standing on it, n->pprev
 * poisoned.  Free n only after a grace period. */
static inline void trcu_hlist_del_rcu(struct trcu_hlist_node *n)
{
	trcu_hlist_unlink_rcu(n);
	TRCU_LIST_WRITE_ONCE(n->pprev, TRCU_HLIST_POISON2);
}

/* Remove n if it is on a list, and mark it unhashed (hlist_unhashed() is
 * then true, and removing it again does nothing).  n->next is left intact. */
static inline void trcu_hlist_del_init_rcu(struct trcu_hlist_node *n)
{
	if (!trcu_hlist_unhashed(n)) {
		trcu_hlist_unlink_rcu(n);
		TRCU_LIST_WRITE_ONCE(n->pprev, TRCU_NULL_AS_(struct trcu_hlist_node **));
	}
}

/* Put new in old's place; a reader sees one of them, never neither.
 * old->next is left intact, old->pprev poisoned. */
static inline void trcu_hlist_replace_rcu(struct trcu_hlist_node *old,
					  struct trcu_hlist_node *new_)
{
	struct trcu_hlist_node *next = old->next;

	new_->next = next;
	TRCU_LIST_WRITE_ONCE(new_->pprev, old->pprev);
	/* Release: new_ initialised before a reader reaches it; pairs with
	 * trcu_dereference() in hlist_for_each_entry_rcu(). */
	trcu_assign_pointer(*new_->pprev, new_);
	if (next)
		TRCU_LIST_WRITE_ONCE(next->pprev, &new_->next);
	TRCU_LIST_WRITE_ONCE(old->pprev, TRCU_HLIST_POISON2);
}

/* The entry around an hlist node pointer, or NULL for NULL. */
#define trcu_hlist_entry_safe(ptr, type, member) \
	(__extension__({ \
		struct trcu_hlist_node *trcu_hn_ = (ptr); \
		trcu_hn_ ? trcu_container_of(trcu_hn_, type, member) : TRCU_NULL_AS_(type *); \
	}))

/* Walk h's chain inside a read-side section (or under the updaters' lock). */
#define trcu_hlist_for_each_entry_rcu(pos, head, member) \
	for (pos = trcu_hlist_entry_safe(trcu_dereference((head)->first), \
					 __typeof__(*(pos)), member); \
	     pos; \
	     pos = trcu_hlist_entry_safe(trcu_dereference((pos)->member.next), \
					 __typeof__(*(pos)), member))

/* ---- Familiar names ---------------------------------------------------------- */
#ifndef TREERCU_NO_SHORT_NAMES
#ifndef container_of
#define container_of(ptr, type, member) trcu_container_of(ptr, type, member)
#endif
#define LIST_POISON1               TRCU_LIST_POISON1
#define LIST_POISON2               TRCU_LIST_POISON2
#define LIST_HEAD_INIT(name)       TRCU_LIST_HEAD_INIT(name)
#define LIST_HEAD(name)            TRCU_LIST_HEAD(name)
#define INIT_LIST_HEAD             trcu_init_list_head
#define INIT_LIST_HEAD_RCU         trcu_init_list_head_rcu
#define list_empty                 trcu_list_empty
#define list_add_rcu               trcu_list_add_rcu
#define list_add_tail_rcu          trcu_list_add_tail_rcu
#define list_del_rcu               trcu_list_del_rcu
#define list_replace_rcu           trcu_list_replace_rcu
#define list_splice_init_rcu       trcu_list_splice_init_rcu
#define list_splice_tail_init_rcu  trcu_list_splice_tail_init_rcu
#define list_entry_rcu(ptr, type, member)        trcu_list_entry_rcu(ptr, type, member)
#define list_first_or_null_rcu(ptr, type, member) trcu_list_first_or_null_rcu(ptr, type, member)
#define list_for_each_entry_rcu(pos, head, member) trcu_list_for_each_entry_rcu(pos, head, member)
#define list_entry(ptr, type, member)            trcu_list_entry(ptr, type, member)
#define list_first_entry(ptr, type, member)      trcu_list_first_entry(ptr, type, member)
#define list_add                   trcu_list_add
#define list_add_tail              trcu_list_add_tail
#define list_del                   trcu_list_del
#define list_for_each_entry(pos, head, member)   trcu_list_for_each_entry(pos, head, member)
#define list_for_each_entry_safe(pos, n, head, member) \
	trcu_list_for_each_entry_safe(pos, n, head, member)
#define HLIST_HEAD_INIT            TRCU_HLIST_HEAD_INIT
#define HLIST_HEAD(name)           TRCU_HLIST_HEAD(name)
#define INIT_HLIST_HEAD            trcu_init_hlist_head
#define INIT_HLIST_NODE            trcu_init_hlist_node
#define hlist_unhashed             trcu_hlist_unhashed
#define hlist_empty                trcu_hlist_empty
#define hlist_add_head_rcu         trcu_hlist_add_head_rcu
#define hlist_del_rcu              trcu_hlist_del_rcu
#define hlist_del_init_rcu         trcu_hlist_del_init_rcu
#define hlist_replace_rcu          trcu_hlist_replace_rcu
#define hlist_entry_safe(ptr, type, member)      trcu_hlist_entry_safe(ptr, type, member)
#define hlist_for_each_entry_rcu(pos, head, member) \
	trcu_hlist_for_each_entry_rcu(pos, head, member)
#endif

#endif /* TREERCU_LIST_H */
