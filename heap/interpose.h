/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the library's entry points share (heap/interpose.c: the malloc family and the start;
 * heap/allocators.c: C++'s operators, C23's sized frees and the APIs of jemalloc, tcmalloc and mimalloc):
 * whether this call is recorded, the real allocator's malloc and free, and the guard around a call of the
 * allocator's own.
 */

#include <stdbool.h>
#include <stddef.h>

#include "library.h"
#include "record.h"

#pragma GCC visibility push(hidden)

#define EXPORT __attribute__((visibility("default")))

typedef enum InterposeState {
        INTERPOSE_UNINITIALIZED,
        INTERPOSE_INITIALIZING,
        INTERPOSE_RECORDING,
        INTERPOSE_OFF,          /* not asked to, refused or stopped by the daemon, or a forked child */
} InterposeState;

extern int interpose_state;

/* The library's start, once, by the first call of any entry point (or its constructor). */
void interpose_initialize(void);

/* The real free(): the next in the lookup order after this library, the allocator's. Known once started. */
void interpose_real_free(void *p);
/* The function of a name the library stands in front of: the next in the lookup order after the library,
 * or where an allocator preloaded before the library provides malloc, the first one that is not the
 * library's. NULL: none. */
void *interpose_next(const char *name);
/* The code of the allocator's malloc(), to tell its other functions from libstdc++'s. */
const void *interpose_allocator_code(void);

/* Whether a block is one of the library's own from before the real functions were known. */
bool interpose_is_bootstrap(const void *p);

/* Whether this call is recorded; starts the library at the first. */
static inline bool interpose_recording(void) {
        int s = __atomic_load_n(&interpose_state, __ATOMIC_ACQUIRE);

        if (likely(s == INTERPOSE_RECORDING))
                return true;
        if (s == INTERPOSE_UNINITIALIZED) {
                interpose_initialize();
                return __atomic_load_n(&interpose_state, __ATOMIC_ACQUIRE) == INTERPOSE_RECORDING;
        }
        return false;
}

/* Around a call of the allocator's own that may enter the library again through an exported name: what
 * it allocates and frees inside is this call's, recorded once by the entry point that made it. The fences
 * keep the compiler from moving the marks past the call. */
static inline void allocator_enter(void) {
        record_in_call += RECORD_IN_ALLOCATOR;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void allocator_leave(void) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        record_in_call -= RECORD_IN_ALLOCATOR;
}

#pragma GCC visibility pop
