/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The library's end of the channel to memstrackd's heap source (heap-abi.h; the daemon's end is
 * daemon/sources/heap.c): the shared region, made here and handed over the socket once; the ring that
 * sampled calls write their records into; and the parent's region let go in a forked child. Only this file
 * knows the socket and the ring's protocol; the region's other parts (the threads' counts, the stack table,
 * the loaded objects) are filled by the files that keep them, through the pointers of `channel`.
 */

#include <stdbool.h>
#include <stdint.h>

#include "heap-abi.h"
#include "live.h"

#pragma GCC visibility push(hidden)

/* The region as this process mapped it and where its parts are. header is NULL while none is mapped:
 * before channel_create(), after a failure, in a forked child. */
typedef struct Channel {
        HeapAbiHeader *header;
        HeapAbiRecord *ring;
        uint64_t ring_mask;             /* ring_records - 1 */
        HeapAbiStackSlot *stack_slots;
        uint64_t *frames;
        HeapAbiObject *objects;
        HeapAbiThread *thread_slots;
} Channel;

extern Channel channel;

/* Makes and maps the region of a process that samples a stack per sample_interval bytes (1: every call,
 * with a larger ring). on_closed is called by each reservation that finds the daemon stopped reading the
 * region (HeapStop). false: not made, said on stderr. */
bool channel_create(uint64_t sample_interval, void (*on_closed)(void));
/* Hands the region to the daemon listening at path and closes every descriptor used for it. false: the
 * daemon did not take it, said on stderr; the region is unmapped. */
bool channel_hand_over(const char *path);

/* Reserves the next record of the ring: a LiveReserveFn. A full ring is waited on while the daemon keeps
 * polling, except by a nested call. false: dropped and counted, or the daemon stopped reading. */
bool channel_reserve(bool nested, uint64_t *ret_seq);
/* Writes the record whose slot live_change() reserved in *slot (nothing if it was dropped), stamped with
 * the time now, and publishes it. live_after: the live bytes after the call, as live_change() returned
 * them; thread_allocs: HeapAbiRecord's. */
void channel_emit(const LiveRecord *slot, HeapAbiRecordType type, uint64_t ptr, uint64_t bytes,
                int64_t live_after, uint32_t stack, uint32_t thread_allocs);

/* In a forked child (only the forking thread runs there): unmaps the parent's region, which the child
 * must not write, and forgets the thread's id. */
void channel_forget(void);

#pragma GCC visibility pop
