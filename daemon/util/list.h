/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Intrusive doubly linked lists: an item struct has "prev" and "next" pointers to its own type, the
 * owner keeps a pointer to the first item (NULL: empty). Macros, not functions, because they work on
 * any item type; each evaluates its arguments once.
 */

/* Puts item first. */
#define LIST_PREPEND(head, item)                                                                        \
        do {                                                                                            \
                typeof(head) *_head = &(head), _item = (item);                                          \
                _item->prev = NULL;                                                                     \
                _item->next = *_head;                                                                   \
                if (_item->next)                                                                        \
                        _item->next->prev = _item;                                                      \
                *_head = _item;                                                                         \
        } while (0)

/* Unlinks item, which may be anywhere in the list or, never linked (prev and next NULL, not the head),
 * in none: destructors of half-built items can call it. */
#define LIST_REMOVE(head, item)                                                                         \
        do {                                                                                            \
                typeof(head) *_head = &(head), _item = (item);                                          \
                if (_item->prev)                                                                        \
                        _item->prev->next = _item->next;                                                \
                else if (*_head == _item)                                                               \
                        *_head = _item->next;                                                           \
                if (_item->next)                                                                        \
                        _item->next->prev = _item->prev;                                                \
                _item->prev = _item->next = NULL;                                                       \
        } while (0)
