/* SPDX-License-Identifier: MIT */
#pragma once

/* The Cold method's reply: pages hot, warm and cold per process, unit, module and allocating stack, from
 * the access source's last round (core/coldness.h through view.h), with the source, its thresholds and
 * what the round could not tell. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "query.h"
#include "usym.h"
#include "view.h"

#define COLD_QUERY_LIMIT_DEFAULT 20
#define COLD_QUERY_STACKS_DEFAULT 10
#define COLD_QUERY_STACKS_MAX 100

typedef struct ColdQuery {
        size_t limit;                   /* rows per list */
        unsigned stacks;                /* stacks listed */
        long page_size;
        bool show_addresses;            /* raw kernel addresses (root callers only) */
        QueryUserAddresses user_addresses;
        uid_t caller_uid;
        UserSymbols *usym;              /* symbolizes user frames; NULL: raw addresses */
} ColdQuery;

/* The pages by idleness a holder's cells add up to, at the round: current pages now, then one count per
 * class (VIEW_COLD_*). */
typedef struct ColdSum {
        uint64_t current;
        uint64_t pages[VIEW_COLD_CLASSES];
        bool known;                     /* some cell of it had figures */
} ColdSum;

/* A ColdPages object. */
json_t *cold_pages_json(const ColdSum *s);
/* The ColdSum of a scope's cells (a process, a unit, a module). */
ColdSum cold_scope_sum(Accounting *a, const Coldness *c, ViewScope scope);

/* The ColdSum of every unit, by unit id (view_unit_count() of them): one walk of every cell, into a new
 * array. -ENOMEM. */
int cold_unit_sums(Accounting *a, const Coldness *c, ColdSum **ret);

/* The reply. c NULL: no access source at all (zeros, reason). -ENOMEM. */
int cold_query_json(Accounting *a, const Coldness *c, const ColdQuery *q, json_t **ret);
