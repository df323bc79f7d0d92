/* SPDX-License-Identifier: MIT */

/*
 * The call stacks of sampled blocks (stacks.h). The table is open addressing from a stack's hash to its
 * frames, appended to the region's frames array; a slot once published is never changed, so a lookup reads
 * it without the lock and only an insert takes it. The objects are rewritten as a whole under a sequence
 * count (heap-abi.h), which the daemon reads around its copy.
 */

#include <execinfo.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "library.h"
#include "spin-lock.h"
#include "stacks.h"
#include "unwind.h"

static int stack_lock;                  /* a stack's insert into the table */
static int objects_lock;                /* a rewrite of the objects */
static uintptr_t own_text_start, own_text_end;  /* our code: frames inside it are left out of stacks */

/* ---- The stack table ---------------------------------------------------------------------------------- */

static uint64_t stack_hash(const uint64_t *f, size_t n) {
        uint64_t h = UINT64_C(0x9E3779B97F4A7C15) ^ n;
        for (size_t i = 0; i < n; i++)
                h = mix64(h ^ f[i]);
        return h ?: 1;
}

static bool stack_equal(const HeapAbiStackSlot *s, const uint64_t *f, size_t n) {
        if (s->n_frames != n || (uint64_t) s->offset + n > channel.header->n_frames)
                return false;
        return memcmp(channel.frames + s->offset, f, n * sizeof(uint64_t)) == 0;
}

/* The id of this stack in the shared table, adding it. Published slots are never changed: a lookup
 * reads them without the lock. */
static uint32_t stack_id(const uint64_t *f, size_t n, bool nested, bool *ret_new) {
        uint64_t h = stack_hash(f, n), mask = channel.header->n_stack_slots - 1;
        bool locked = false;
        uint32_t id = HEAP_STACK_FULL;

        for (size_t i = h & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
                HeapAbiStackSlot *s = &channel.stack_slots[i];
                uint64_t sh = __atomic_load_n(&s->hash, __ATOMIC_ACQUIRE);

                if (sh == h && stack_equal(s, f, n)) {
                        id = (uint32_t) i + HEAP_STACK_FIRST;
                        break;
                }
                if (sh != 0)
                        continue;
                /* Empty: take the lock and look at this slot again, another thread may be filling it. */
                if (!locked) {
                        if (!lock_take(&stack_lock, nested))
                                break;
                        locked = true;
                        i = (i - 1) & mask;     /* the same slot once more, now under the lock */
                        probes--;
                        continue;
                }
                uint64_t used = channel.header->frames_used;
                if (used + n > channel.header->n_frames)
                        break;
                memcpy(channel.frames + used, f, n * sizeof(uint64_t));
                channel.header->frames_used = used + n;
                s->offset = (uint32_t) used;
                s->n_frames = (uint32_t) n;
                __atomic_store_n(&s->hash, h, __ATOMIC_RELEASE);
                id = (uint32_t) i + HEAP_STACK_FIRST;
                *ret_new = true;
                break;
        }
        if (id == HEAP_STACK_FULL)
                __atomic_fetch_add(&channel.header->stacks_full, 1, __ATOMIC_RELAXED);
        if (locked)
                lock_release(&stack_lock);
        return id;
}

/* ---- Loaded objects ----------------------------------------------------------------------------------- */

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
        uint64_t *n = data;
        const char *path = info->dlpi_name;
        char exe[HEAP_OBJECT_PATH_MAX];

        if (!path || !*path) {
                /* The main program: its name is what /proc/self/exe says. */
                ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                if (k <= 0)
                        return 0;
                exe[k] = '\0';
                path = exe;
        }
        char resolved[PATH_MAX];
        /* dlopen("dir/lib.so") keeps the name relative: as the loader found it, from here. */
        if (path[0] != '/' && strchr(path, '/') && realpath(path, resolved))
                path = resolved;
        if (path[0] != '/' || strlen(path) >= HEAP_OBJECT_PATH_MAX)
                return 0;       /* the vDSO ("linux-vdso.so.1"), or a path too long to keep */
        for (int i = 0; i < info->dlpi_phnum && *n < channel.header->n_objects_max; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type != PT_LOAD)
                        continue;
                uint64_t start = info->dlpi_addr + ph->p_vaddr, page = 4096;
                HeapAbiObject *o = &channel.objects[(*n)++];
                o->start = start & ~(page - 1);
                o->end = (start + ph->p_memsz + page - 1) & ~(page - 1);
                o->offset = ph->p_offset & ~(page - 1);
                o->flags = ph->p_flags;
                memcpy(o->path, path, strlen(path) + 1);
        }
        return 0;
}

void stacks_publish_objects(void) {
        HeapAbiHeader *h = channel.header;
        uint64_t n = 0;

        if (!lock_take(&objects_lock, true))
                return;
        __atomic_fetch_add(&h->objects_generation, 1, __ATOMIC_ACQ_REL);   /* odd: being written */
        (void) dl_iterate_phdr(add_object, &n);
        __atomic_store_n(&h->n_objects, n, __ATOMIC_RELAXED);
        __atomic_fetch_add(&h->objects_generation, 1, __ATOMIC_RELEASE);   /* even: done */
        lock_release(&objects_lock);
}

static bool frame_in_objects(uint64_t ip) {
        uint64_t n = __atomic_load_n(&channel.header->n_objects, __ATOMIC_RELAXED);
        for (uint64_t i = 0; i < n && i < channel.header->n_objects_max; i++) {
                const HeapAbiObject *o = &channel.objects[i];
                if ((o->flags & PF_X) && ip >= o->start && ip < o->end)
                        return true;
        }
        return false;
}

static bool in_own_text(uint64_t ip) {
        return ip >= own_text_start && ip < own_text_end;
}

/* glibc's backtrace(), for the stacks the unwinder cannot follow to their end. */
static size_t backtrace_stack(uint64_t f[static HEAP_FRAMES_MAX]) {
        void *raw[HEAP_FRAMES_MAX + 8];
        int n = backtrace(raw, (int) (sizeof(raw) / sizeof(raw[0])));
        size_t k = 0;
        int i = 0;

        /* Our own frames (this function, the hook) come first. */
        while (i < n && in_own_text((uint64_t) (uintptr_t) raw[i]))
                i++;
        for (; i < n && k < HEAP_FRAMES_MAX; i++)
                f[k++] = (uint64_t) (uintptr_t) raw[i];
        return k;
}

/* The stack of the hook's caller. Our code keeps frame pointers: their chain leads to the hook's frame,
 * the first whose return address is outside our code, and the unwinder goes on from there. */
static size_t caller_stack(uint64_t f[static HEAP_FRAMES_MAX]) {
        uint64_t *fp = __builtin_frame_address(0);

        for (unsigned i = 0; i < 32; i++) {
                if (!in_own_text(fp[1])) {
                        UnwindEnd end;
                        size_t n = unwind_stack(fp, f, HEAP_FRAMES_MAX, &end);
                        if (end == UNWIND_COMPLETE)
                                return n;
                        break;
                }
                uint64_t *caller = (uint64_t *) (uintptr_t) fp[0];
                if (caller <= fp)
                        break;
                fp = caller;
        }
        return backtrace_stack(f);
}

uint32_t stacks_take(void) {
        uint64_t f[HEAP_FRAMES_MAX];
        size_t k = caller_stack(f);
        bool new_stack = false;
        uint32_t id = stack_id(f, k, false, &new_stack);
        /* A new stack with a frame in no object known: a library was loaded since (dlopen). */
        if (new_stack)
                for (size_t j = 0; j < k; j++)
                        if (!frame_in_objects(f[j])) {
                                stacks_publish_objects();
                                break;
                        }
        return id;
}

/* The executable segment holding an address, and its object's path ("" for the main program). */
typedef struct TextOf {
        uintptr_t address;
        uintptr_t start, end;
        const char *name;
} TextOf;

static int find_text(struct dl_phdr_info *info, size_t size, void *data) {
        TextOf *t = data;

        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
                if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || t->address < start || t->address >= end)
                        continue;
                t->start = start;
                t->end = end;
                t->name = info->dlpi_name ?: "";
                return 1;
        }
        return 0;
}

static TextOf text_of(const void *address) {
        TextOf t = { .address = (uintptr_t) address };
        (void) dl_iterate_phdr(find_text, &t);
        return t;
}

const char *stacks_code_path(const void *address) {
        return text_of(address).name;
}

void stacks_init(void) {
        TextOf own = text_of((const void *) &find_text);
        own_text_start = own.start;
        own_text_end = own.end;
}
