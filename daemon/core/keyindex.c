/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "keyindex.h"

#define KEY_INDEX_MIN 64u               /* slots at first; a power of two */

/* The slot holding key, or the empty slot where it would go; SIZE_MAX for a table without slots. */
static size_t slot_of(const KeyIndex *x, uint64_t key) {
        if (x->n_slots == 0)
                return SIZE_MAX;
        for (size_t i = key_index_mix(key) & (x->n_slots - 1);; i = (i + 1) & (x->n_slots - 1))
                if (x->keys[i] == 0 || x->keys[i] == key)
                        return i;
}

uint32_t key_index_get(const KeyIndex *x, uint64_t key) {
        size_t i = slot_of(x, key);
        return i != SIZE_MAX && x->keys[i] == key ? x->values[i] : KEY_INDEX_NONE;
}

int key_index_put(KeyIndex *x, uint64_t key, uint32_t value) {
        if ((x->n_used + 1) * 2 > x->n_slots) {
                size_t n = x->n_slots ? x->n_slots * 2 : KEY_INDEX_MIN;
                KeyIndex bigger = { .keys = calloc(n, sizeof(uint64_t)), .values = calloc(n, sizeof(uint32_t)),
                                    .n_slots = n };
                if (!bigger.keys || !bigger.values) {
                        key_index_done(&bigger);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < x->n_slots; i++)
                        if (x->keys[i] != 0) {
                                size_t j = slot_of(&bigger, x->keys[i]);
                                bigger.keys[j] = x->keys[i];
                                bigger.values[j] = x->values[i];
                                bigger.n_used++;
                        }
                key_index_done(x);
                *x = bigger;
        }
        size_t i = slot_of(x, key);
        x->keys[i] = key;
        x->values[i] = value;
        x->n_used++;
        return 0;
}

void key_index_done(KeyIndex *x) {
        free(x->keys);
        free(x->values);
        *x = (KeyIndex) {};
}

size_t key_index_memory_bytes(const KeyIndex *x) {
        return x->n_slots * (sizeof(uint64_t) + sizeof(uint32_t));
}
