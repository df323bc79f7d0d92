/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "keyindex.h"
#include "backshift.h"

#define KEY_INDEX_MIN 64u               /* slots at first; a power of two */

static size_t home_of(const KeyIndex *x, uint64_t key) {
        return key_index_mix(key) & (x->n_slots - 1);
}

/* The slot holding key (not 0), or the empty slot where it would go; SIZE_MAX for a table without slots. */
static size_t slot_of(const KeyIndex *x, uint64_t key) {
        if (x->n_slots == 0)
                return SIZE_MAX;
        for (size_t i = home_of(x, key);; i = (i + 1) & (x->n_slots - 1))
                if (x->keys[i] == 0 || x->keys[i] == key)
                        return i;
}

uint32_t key_index_get(const KeyIndex *x, uint64_t key) {
        if (key == 0)
                return x->has_zero ? x->zero_value : KEY_INDEX_NONE;
        size_t i = slot_of(x, key);
        return i != SIZE_MAX && x->keys[i] == key ? x->values[i] : KEY_INDEX_NONE;
}

static int grow(KeyIndex *x) {
        size_t n = x->n_slots ? x->n_slots * 2 : KEY_INDEX_MIN;
        KeyIndex bigger = { .keys = calloc(n, sizeof(uint64_t)), .values = calloc(n, sizeof(uint32_t)), .n_slots = n,
                            .n_used = x->n_used, .has_zero = x->has_zero, .zero_value = x->zero_value };

        if (!bigger.keys || !bigger.values) {
                key_index_done(&bigger);
                return -ENOMEM;
        }
        for (size_t i = 0; i < x->n_slots; i++)
                if (x->keys[i] != 0) {
                        size_t j = slot_of(&bigger, x->keys[i]);
                        bigger.keys[j] = x->keys[i];
                        bigger.values[j] = x->values[i];
                }
        key_index_done(x);
        *x = bigger;
        return 0;
}

int key_index_put(KeyIndex *x, uint64_t key, uint32_t value) {
        if (key == 0) {
                x->has_zero = true;
                x->zero_value = value;
                return 0;
        }
        if ((x->n_used + 1) * 2 > x->n_slots && grow(x) < 0)
                return -ENOMEM;
        size_t i = slot_of(x, key);
        if (x->keys[i] == 0)
                x->n_used++;
        x->keys[i] = key;
        x->values[i] = value;
        return 0;
}

static size_t slot_home(const void *table, size_t i) {
        const KeyIndex *x = table;
        return x->keys[i] == 0 ? BACKSHIFT_EMPTY : home_of(x, x->keys[i]);
}

static void slot_move(void *table, size_t to, size_t from) {
        KeyIndex *x = table;
        x->keys[to] = x->keys[from];
        x->values[to] = x->values[from];
}

static void slot_clear(void *table, size_t i) {
        KeyIndex *x = table;
        x->keys[i] = 0;
}

bool key_index_remove(KeyIndex *x, uint64_t key) {
        if (key == 0) {
                bool had = x->has_zero;
                x->has_zero = false;
                return had;
        }
        size_t i = slot_of(x, key);
        if (i == SIZE_MAX || x->keys[i] != key)
                return false;
        backshift_delete(x, x->n_slots, i, slot_home, slot_move, slot_clear);
        x->n_used--;
        return true;
}

void key_index_clear(KeyIndex *x) {
        if (x->keys)
                memset(x->keys, 0, x->n_slots * sizeof(uint64_t));
        x->n_used = 0;
        x->has_zero = false;
}

void key_index_done(KeyIndex *x) {
        free(x->keys);
        free(x->values);
        *x = (KeyIndex) {};
}

size_t key_index_count(const KeyIndex *x) {
        return x->n_used + x->has_zero;
}

size_t key_index_memory_bytes(const KeyIndex *x) {
        return x->n_slots * (sizeof(uint64_t) + sizeof(uint32_t));
}
