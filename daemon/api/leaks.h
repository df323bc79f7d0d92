/* SPDX-License-Identifier: MIT */
#pragma once

/* The Leaks method's reply: what is old and still live, slab objects by call site (slab.h) and pages by
 * process and stack (pagemap.h), each with how its live part grew over the last intervals. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "view.h"
#include "query.h"
#include "usym.h"

typedef struct LeaksQuery {
        uint64_t now_nsec;              /* CLOCK_MONOTONIC, the clock of the events' times */
        uint64_t min_age_nsec;          /* only objects and pages at least this old */
        uint64_t interval_nsec;         /* growth: what is still live per interval of this length... */
        unsigned intervals;             /* ...over this many intervals before now, newest last */
        int32_t pid;                    /* only this process's; 0: every task's */
        size_t limit;                   /* rows per list */
        bool show_addresses;            /* raw kernel addresses (root callers only) */
        QueryUserAddresses user_addresses;      /* whose raw user-space addresses (query.h) */
        uid_t caller_uid;               /* for QUERY_USER_ADDRESSES_OWN */
        UserSymbols *usym;              /* symbolizes user frames of live processes; NULL: raw addresses */
} LeaksQuery;

/* The method's defaults (docs/protocol.md), seen at now_nsec, for everyone's rows (root's view). */
#define LEAKS_QUERY_DEFAULT(now, max_rows, user_symbols)                                                     \
        {                                                                                                   \
                .now_nsec = (now), .min_age_nsec = 60 * UINT64_C(1000000000),                              \
                .interval_nsec = 10 * UINT64_C(1000000000), .intervals = 6, .limit = (max_rows),            \
                .show_addresses = true, .user_addresses = QUERY_USER_ADDRESSES_ALL,                         \
                .usym = (user_symbols),                                                                     \
        }

/* Old live objects by call site and old live pages by process and stack, most first. -ENOMEM. */
int leaks_query_json(Accounting *a, const LeaksQuery *q, json_t **ret);
