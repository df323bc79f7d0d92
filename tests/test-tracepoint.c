/* SPDX-License-Identifier: MIT */

/*
 * Decoding of tracepoint records against recorded format files (tests/data): this kernel's kmem formats
 * (6.18, "pfn" fields), a hand-written older variant ("page" pointers, 4-byte gfp_t) with the module
 * events, and a partial tree. Records are built byte by byte in both byte orders, so the expected values
 * do not depend on the host's.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"
#include "tracefs.h"
#include "tracepoint.h"

#define TREE_NEW "data/tracefs-6.18"
#define TREE_OLD "data/tracefs-old"
#define TREE_PARTIAL "data/tracefs-partial"

/* Ids as recorded in the format files. */
#define ID_ALLOC 653
#define ID_FREE 655
#define ID_FREE_BATCHED 654
#define ID_SCHED_FORK 366
#define ID_SCHED_EXEC 365
#define ID_SCHED_EXIT 369
#define ID_NEWTASK 205
#define ID_RENAME 204
#define ID_KERNEL_STACK 4
#define ID_OLD_ALLOC 383
#define ID_OLD_FREE 380
#define ID_OLD_FREE_BATCHED 381
#define ID_OLD_MODULE_LOAD 301
#define ID_OLD_MODULE_FREE 302

/* Writes an n-byte unsigned value at buf + offset in the given byte order. */
static void put(uint8_t *buf, size_t offset, size_t n, uint64_t v, bool big) {
        for (size_t i = 0; i < n; i++) {
                size_t shift = big ? (n - 1 - i) * 8 : i * 8;
                buf[offset + i] = (uint8_t) (v >> shift);
        }
}

/* The common header every record starts with: type, flags, preempt count, pid. */
static void put_common(uint8_t *buf, uint16_t type, int32_t pid, bool big) {
        put(buf, 0, 2, type, big);
        buf[2] = 0;
        buf[3] = 1;
        put(buf, 4, 4, (uint32_t) pid, big);
}

static void clear_event(MsEvent *ev) {
        memset(ev, 0, sizeof(*ev));
        ev->type = _MS_EVENT_TYPE_INVALID;
}

static void test_kind_strings(void) {
        ASSERT_STREQ(tracepoint_kind_to_string(TRACEPOINT_PAGE_ALLOC), "kmem/mm_page_alloc");
        ASSERT_STREQ(tracepoint_kind_to_string(TRACEPOINT_MODULE_FREE), "module/module_free");
        ASSERT_NULL(tracepoint_kind_to_string(_TRACEPOINT_KIND_MAX));
        ASSERT_NULL(tracepoint_kind_to_string(_TRACEPOINT_KIND_INVALID));
        ASSERT_TRUE(tracepoint_kind_is_required(TRACEPOINT_PAGE_FREE));
        ASSERT_TRUE(!tracepoint_kind_is_required(TRACEPOINT_PAGE_FREE_BATCHED));
        ASSERT_TRUE(!tracepoint_kind_is_required(TRACEPOINT_MODULE_LOAD));
}

static void test_load_new(void) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        const char *what = NULL;

        ASSERT_OK(tracepoint_load(TREE_NEW, TRACEPOINT_BYTE_ORDER_HOST, &t, &what));
        ASSERT_NULL(what);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_ALLOC), ID_ALLOC);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_FREE), ID_FREE);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_FREE_BATCHED), ID_FREE_BATCHED);
        /* This kernel has no module events: absent, not an error. */
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_MODULE_LOAD), -ENOENT);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_MODULE_FREE), -ENOENT);
        ASSERT_EQ(tracepoint_id(t, _TRACEPOINT_KIND_MAX), -EINVAL);
        ASSERT_TRUE(!tracepoint_pfn_is_surrogate(t));
}

static void check_new_records(bool big) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        uint8_t rec[64];
        MsEvent ev;

        ASSERT_OK(tracepoint_load(TREE_NEW, big ? TRACEPOINT_BYTE_ORDER_BIG : TRACEPOINT_BYTE_ORDER_LITTLE,
                                  &t, NULL));

        /* mm_page_alloc: pfn@8/8, order@16/4, gfp_flags@24/8, migratetype@32/4 (signed), 36 bytes. */
        memset(rec, 0xa5, sizeof(rec));
        put_common(rec, ID_ALLOC, 4242, big);
        put(rec, 8, 8, UINT64_C(0x123456789a), big);
        put(rec, 16, 4, 3, big);
        put(rec, 24, 8, UINT64_C(0x8000000000140cca), big);
        put(rec, 32, 4, 2, big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 36, &ev), TRACEPOINT_PAGE_ALLOC);
        ASSERT_EQ(ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_TRUE(ev.page.pfn == UINT64_C(0x123456789a));
        ASSERT_EQ(ev.page.order, 3);
        ASSERT_TRUE(ev.page.gfp_flags == UINT64_C(0x8000000000140cca));
        ASSERT_EQ(ev.page.migrate_type, 2);
        /* Nothing else is touched. */
        ASSERT_EQ(ev.pid, 0);
        ASSERT_NULL(ev.page.stack.frames);

        /* A negative migrate type is sign-extended. */
        put(rec, 32, 4, (uint32_t) -1, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 36, &ev), TRACEPOINT_PAGE_ALLOC);
        ASSERT_EQ(ev.page.migrate_type, -1);

        /* One byte short of migratetype: rejected, not read past the end. */
        ASSERT_EQ(tracepoint_decode(t, rec, 35, &ev), -EBADMSG);
        ASSERT_EQ(tracepoint_decode(t, rec, 1, &ev), -EBADMSG);
        ASSERT_EQ(tracepoint_decode(t, rec, 0, &ev), -EBADMSG);

        /* A failed allocation records pfn -1. */
        put(rec, 8, 8, UINT64_MAX, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 36, &ev), -ENODATA);

        /* mm_page_free: pfn@8/8, order@16/4. */
        memset(rec, 0xa5, sizeof(rec));
        put_common(rec, ID_FREE, 1, big);
        put(rec, 8, 8, 0x42, big);
        put(rec, 16, 4, 9, big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 20, &ev), TRACEPOINT_PAGE_FREE);
        ASSERT_EQ(ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_EQ(ev.page.pfn, 0x42);
        ASSERT_EQ(ev.page.order, 9);

        /* mm_page_free_batched: pfn only, always order 0. */
        memset(rec, 0xa5, sizeof(rec));
        put_common(rec, ID_FREE_BATCHED, 1, big);
        put(rec, 8, 8, UINT64_C(0xfffffffff), big);
        clear_event(&ev);
        ev.page.order = 7;
        ASSERT_EQ(tracepoint_decode(t, rec, 16, &ev), TRACEPOINT_PAGE_FREE_BATCHED);
        ASSERT_EQ(ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_TRUE(ev.page.pfn == UINT64_C(0xfffffffff));
        ASSERT_EQ(ev.page.order, 0);

        /* An id this set does not know, e.g. a module event on this kernel. */
        put_common(rec, 9999, 1, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 16, &ev), -ENOENT);
        put_common(rec, ID_OLD_MODULE_LOAD, 1, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 16, &ev), -ENOENT);
}

static void test_new_little(void) {
        check_new_records(false);
}

static void test_new_big(void) {
        check_new_records(true);
}

/* A big-endian record read as little-endian is another event: the byte order really is applied. */
static void test_byte_order_matters(void) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        uint8_t rec[40] = {};
        MsEvent ev;

        ASSERT_OK(tracepoint_load(TREE_NEW, TRACEPOINT_BYTE_ORDER_LITTLE, &t, NULL));
        put_common(rec, ID_ALLOC, 1, true);
        ASSERT_EQ(tracepoint_decode(t, rec, 36, &ev), -ENOENT);
}

static void check_old_records(bool big) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        const uint64_t page = UINT64_C(0xffffea0001234540);
        const uint64_t key = (page >> 6) & ((UINT64_C(1) << MS_PAGE_KEY_BITS) - 1);
        uint8_t rec[64];
        MsEvent ev;

        ASSERT_OK(tracepoint_load(TREE_OLD, big ? TRACEPOINT_BYTE_ORDER_BIG : TRACEPOINT_BYTE_ORDER_LITTLE,
                                  &t, NULL));
        ASSERT_TRUE(tracepoint_pfn_is_surrogate(t));
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_MODULE_LOAD), ID_OLD_MODULE_LOAD);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_MODULE_FREE), ID_OLD_MODULE_FREE);

        /* mm_page_alloc: page@8/8, order@16/4, gfp_flags@20/4, migratetype@24/4. */
        memset(rec, 0x5a, sizeof(rec));
        put_common(rec, ID_OLD_ALLOC, 7, big);
        put(rec, 8, 8, page, big);
        put(rec, 16, 4, 1, big);
        put(rec, 20, 4, 0x200d2, big);
        put(rec, 24, 4, (uint32_t) -2, big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 28, &ev), TRACEPOINT_PAGE_ALLOC);
        ASSERT_EQ(ev.type, MS_EVENT_PAGE_ALLOC);
        ASSERT_TRUE(ev.page.pfn == key);
        ASSERT_TRUE(ev.page.pfn < (UINT64_C(1) << MS_PAGE_KEY_BITS));
        ASSERT_EQ(ev.page.order, 1);
        ASSERT_EQ(ev.page.gfp_flags, 0x200d2);
        ASSERT_EQ(ev.page.migrate_type, -2);

        /* The next struct page gets the next key, so a block's pages stay adjacent. */
        put(rec, 8, 8, page + 64, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 28, &ev), TRACEPOINT_PAGE_ALLOC);
        ASSERT_TRUE(ev.page.pfn == key + 1);

        /* A NULL page is a failed allocation. */
        put(rec, 8, 8, 0, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 28, &ev), -ENODATA);

        /* mm_page_free and mm_page_free_batched (page, cold) yield the same key as the allocation. */
        memset(rec, 0x5a, sizeof(rec));
        put_common(rec, ID_OLD_FREE, 7, big);
        put(rec, 8, 8, page, big);
        put(rec, 16, 4, 1, big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 20, &ev), TRACEPOINT_PAGE_FREE);
        ASSERT_TRUE(ev.page.pfn == key);
        ASSERT_EQ(ev.page.order, 1);

        put_common(rec, ID_OLD_FREE_BATCHED, 7, big);
        put(rec, 16, 4, 1, big);        /* cold, not an order */
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 20, &ev), TRACEPOINT_PAGE_FREE_BATCHED);
        ASSERT_EQ(ev.type, MS_EVENT_PAGE_FREE);
        ASSERT_TRUE(ev.page.pfn == key);
        ASSERT_EQ(ev.page.order, 0);

        /* module_load: taints@8/4, __data_loc name@12/4 -> (len << 16 | offset). */
        memset(rec, 0x5a, sizeof(rec));
        put_common(rec, ID_OLD_MODULE_LOAD, 99, big);
        put(rec, 8, 4, 0x1000, big);
        put(rec, 12, 4, (6u << 16) | 16u, big);
        memcpy(rec + 16, "dummy", 6);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 22, &ev), TRACEPOINT_MODULE_LOAD);
        ASSERT_EQ(ev.type, MS_EVENT_MODULE_LOAD);
        ASSERT_STREQ(ev.module.name, "dummy");
        ASSERT_TRUE(ev.module.name == (const char *) rec + 16);

        /* The string must lie inside the record and be terminated inside its length. */
        ASSERT_EQ(tracepoint_decode(t, rec, 21, &ev), -EBADMSG);
        put(rec, 12, 4, (5u << 16) | 16u, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 22, &ev), -EBADMSG);
        put(rec, 12, 4, (0u << 16) | 16u, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 22, &ev), -EBADMSG);
        put(rec, 12, 4, (6u << 16) | 0xfff0u, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 22, &ev), -EBADMSG);

        /* module_free: __data_loc name@8/4. */
        memset(rec, 0x5a, sizeof(rec));
        put_common(rec, ID_OLD_MODULE_FREE, 99, big);
        put(rec, 8, 4, (4u << 16) | 12u, big);
        memcpy(rec + 12, "xfs", 4);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 16, &ev), TRACEPOINT_MODULE_FREE);
        ASSERT_EQ(ev.type, MS_EVENT_MODULE_FREE);
        ASSERT_STREQ(ev.module.name, "xfs");
}

/* The task and stack events the ftrace source reads, as this kernel (6.18) lays them out. */
static void test_task_and_stack(bool big) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        TracepointTask task;
        uint64_t frames[4];
        uint8_t rec[128];
        int32_t pid;
        size_t n;

        ASSERT_OK(tracepoint_load(TREE_NEW, big ? TRACEPOINT_BYTE_ORDER_BIG : TRACEPOINT_BYTE_ORDER_LITTLE,
                                  &t, NULL));
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_SCHED_FORK), ID_SCHED_FORK);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KERNEL_STACK), ID_KERNEL_STACK);

        /* sched_process_fork: parent_comm@8 (data_loc), parent_pid@12, child_comm@16 (data_loc),
         * child_pid@20, strings after the fixed part. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_SCHED_FORK, 100, big);
        put(rec, 8, 4, (5u << 16) | 24u, big);
        put(rec, 12, 4, 100, big);
        put(rec, 16, 4, (20u << 16) | 29u, big);
        put(rec, 20, 4, 101, big);
        memcpy(rec + 24, "bash", 5);
        memcpy(rec + 29, "a-name-too-long-for-comm", 20);
        rec[48] = '\0';
        ASSERT_EQ(tracepoint_kind_of(t, rec, 49, &pid), TRACEPOINT_SCHED_FORK);
        ASSERT_EQ(pid, 100);
        ASSERT_EQ(tracepoint_decode_task(t, rec, 49, &task), TRACEPOINT_SCHED_FORK);
        ASSERT_EQ(task.pid, 101);
        ASSERT_EQ(task.parent_pid, 100);
        ASSERT_STREQ(task.comm, "a-name-too-long-");
        /* Not an MsEvent: tracepoint_decode() leaves it alone. */
        MsEvent ev;
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 49, &ev), -ENOENT);
        /* The child's name runs past the record: rejected. */
        ASSERT_EQ(tracepoint_decode_task(t, rec, 40, &task), -EBADMSG);

        /* sched_process_exec: filename@8 (data_loc), pid@12, old_pid@16. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_SCHED_EXEC, 7, big);
        put(rec, 8, 4, (13u << 16) | 20u, big);
        put(rec, 12, 4, 7, big);
        put(rec, 16, 4, 9, big);
        memcpy(rec + 20, "/usr/bin/env", 13);
        ASSERT_EQ(tracepoint_decode_task(t, rec, 33, &task), TRACEPOINT_SCHED_EXEC);
        ASSERT_EQ(task.pid, 7);
        ASSERT_EQ(task.old_pid, 9);
        ASSERT_STREQ(task.filename, "/usr/bin/env");

        /* sched_process_exit: comm[16]@8, pid@24, prio@28, group_dead@32. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_SCHED_EXIT, 8, big);
        memcpy(rec + 8, "0123456789abcdef", 16);   /* not terminated inside the field */
        put(rec, 24, 4, 8, big);
        rec[32] = 1;
        ASSERT_EQ(tracepoint_decode_task(t, rec, 33, &task), TRACEPOINT_SCHED_EXIT);
        ASSERT_EQ(task.pid, 8);
        ASSERT_EQ(task.group_dead, 1);
        ASSERT_STREQ(task.comm, "0123456789abcdef");
        ASSERT_EQ(tracepoint_decode_task(t, rec, 32, &task), -EBADMSG);

        /* task_newtask: pid@8, comm[16]@12, clone_flags@32. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_NEWTASK, 8, big);
        put(rec, 8, 4, 12, big);
        memcpy(rec + 12, "worker", 7);
        put(rec, 32, 8, 0x3d0f00, big);
        ASSERT_EQ(tracepoint_decode_task(t, rec, 42, &task), TRACEPOINT_TASK_NEWTASK);
        ASSERT_EQ(task.pid, 12);
        ASSERT_TRUE(task.clone_flags == 0x3d0f00);
        ASSERT_STREQ(task.comm, "worker");

        /* task_rename: pid@8, oldcomm@12, newcomm@28. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_RENAME, 8, big);
        put(rec, 8, 4, 8, big);
        memcpy(rec + 12, "old", 4);
        memcpy(rec + 28, "new", 4);
        ASSERT_EQ(tracepoint_decode_task(t, rec, 46, &task), TRACEPOINT_TASK_RENAME);
        ASSERT_STREQ(task.comm, "new");

        /* kernel_stack: size@8 (entries), caller[]@16, as long as the record. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, ID_KERNEL_STACK, 8, big);
        put(rec, 8, 4, 6, big);
        for (unsigned i = 0; i < 6; i++)
                put(rec, 16 + i * 8, 8, UINT64_C(0xffffffff81000000) + i, big);
        ASSERT_EQ(tracepoint_decode_stack(t, rec, 64, frames, ELEMENTSOF(frames), &n), TRACEPOINT_KERNEL_STACK);
        ASSERT_EQ(n, 4);       /* cut at max */
        ASSERT_TRUE(frames[0] == UINT64_C(0xffffffff81000000));
        ASSERT_TRUE(frames[3] == UINT64_C(0xffffffff81000003));
        /* More entries than the record holds: rejected. */
        ASSERT_EQ(tracepoint_decode_stack(t, rec, 63, frames, ELEMENTSOF(frames), &n), -EBADMSG);
        /* Another kind. */
        ASSERT_EQ(tracepoint_decode_stack(t, rec, 64, frames, 0, &n), TRACEPOINT_KERNEL_STACK);
        ASSERT_EQ(n, 0);
        put_common(rec, ID_RENAME, 8, big);
        ASSERT_EQ(tracepoint_decode_stack(t, rec, 64, frames, ELEMENTSOF(frames), &n), -ENOENT);
}

/* Slab events: kmem_cache_alloc with its cache name (__data_loc), kmalloc without, kfree, and the
 * pointers that are no object. 6.18 layouts: call_site@8, ptr@16, then name@24 (kmem_cache_*) or
 * bytes_req@24, bytes_alloc@32 (kmalloc); kmem_cache_alloc has bytes_req@32, bytes_alloc@40. */
static void check_slab_records(bool big) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        uint8_t rec[80];
        MsEvent ev;

        ASSERT_OK(tracepoint_load(TREE_NEW, big ? TRACEPOINT_BYTE_ORDER_BIG : TRACEPOINT_BYTE_ORDER_LITTLE,
                                  &t, NULL));
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMALLOC), 658);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMEM_CACHE_ALLOC), 659);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KFREE), 657);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMEM_CACHE_FREE), 656);
        /* Folded into the others since 6.1. */
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMALLOC_NODE), -ENOENT);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMEM_CACHE_ALLOC_NODE), -ENOENT);

        /* kmem_cache_alloc of "filp": 61 bytes of data_loc'd name at offset 64. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, 659, 77, big);
        put(rec, 8, 8, UINT64_C(0xffffffff81234567), big);
        put(rec, 16, 8, UINT64_C(0xffff888012345600), big);
        put(rec, 24, 4, (5u << 16) | 64u, big);
        put(rec, 32, 8, 184, big);
        put(rec, 40, 8, 192, big);
        memcpy(rec + 64, "filp", 5);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 69, &ev), TRACEPOINT_KMEM_CACHE_ALLOC);
        ASSERT_EQ(ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(ev.object.ptr, UINT64_C(0xffff888012345600));
        ASSERT_EQ(ev.object.call_site, UINT64_C(0xffffffff81234567));
        ASSERT_EQ(ev.object.bytes_requested, 184);
        ASSERT_EQ(ev.object.bytes_allocated, 192);
        ASSERT_STREQ(ev.object.cache, "filp");
        /* A name running past the record is malformed. */
        ASSERT_EQ(tracepoint_decode(t, rec, 66, &ev), -EBADMSG);

        /* kmalloc: no cache name. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, 658, 77, big);
        put(rec, 8, 8, UINT64_C(0xffffffff81000010), big);
        put(rec, 16, 8, UINT64_C(0xffff888000001000), big);
        put(rec, 24, 8, 100, big);
        put(rec, 32, 8, 128, big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 56, &ev), TRACEPOINT_KMALLOC);
        ASSERT_EQ(ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(ev.object.bytes_requested, 100);
        ASSERT_EQ(ev.object.bytes_allocated, 128);
        ASSERT_NULL(ev.object.cache);
        /* A failed kmalloc (NULL) and kmalloc(0) (ZERO_SIZE_PTR) are no objects. */
        put(rec, 16, 8, 0, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 56, &ev), -ENODATA);
        put(rec, 16, 8, 16, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 56, &ev), -ENODATA);
        /* Too short for bytes_alloc. */
        ASSERT_EQ(tracepoint_decode(t, rec, 36, &ev), -EBADMSG);

        /* kfree: the pointer and the caller; kfree(NULL) is no object. */
        memset(rec, 0, sizeof(rec));
        put_common(rec, 657, 77, big);
        put(rec, 8, 8, UINT64_C(0xffffffff81000020), big);
        put(rec, 16, 8, UINT64_C(0xffff888000001000), big);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 24, &ev), TRACEPOINT_KFREE);
        ASSERT_EQ(ev.type, MS_EVENT_OBJECT_FREE);
        ASSERT_EQ(ev.object.ptr, UINT64_C(0xffff888000001000));
        ASSERT_EQ(ev.object.call_site, UINT64_C(0xffffffff81000020));
        put(rec, 16, 8, 0, big);
        ASSERT_EQ(tracepoint_decode(t, rec, 24, &ev), -ENODATA);
}

static void test_slab_little(void) {
        check_slab_records(false);
}

static void test_slab_big(void) {
        check_slab_records(true);
}

/* A pre-6.1 tree: kmalloc_node is there, and a kmem_cache_free whose format lacks ptr is absent, not a
 * failed load (page tracing goes on without it). */
static void test_slab_old(void) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        uint8_t rec[48] = {};
        MsEvent ev;

        ASSERT_OK(tracepoint_load(TREE_OLD, TRACEPOINT_BYTE_ORDER_LITTLE, &t, NULL));
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMALLOC_NODE), 390);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMEM_CACHE_FREE), -ENOENT);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMALLOC), -ENOENT);
        put_common(rec, 390, 5, false);
        put(rec, 8, 8, UINT64_C(0xffffffff81000030), false);
        put(rec, 16, 8, UINT64_C(0xffff888000002000), false);
        put(rec, 24, 8, 24, false);
        put(rec, 32, 8, 32, false);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, 48, &ev), TRACEPOINT_KMALLOC_NODE);
        ASSERT_EQ(ev.type, MS_EVENT_OBJECT_ALLOC);
        ASSERT_EQ(ev.object.bytes_requested, 24);
        ASSERT_EQ(ev.object.bytes_allocated, 32);
        ASSERT_NULL(ev.object.cache);
        ASSERT_TRUE(tracepoint_kind_is_slab(TRACEPOINT_KFREE));
        ASSERT_TRUE(!tracepoint_kind_is_slab(TRACEPOINT_PAGE_ALLOC));

        /* What a source names under --slab: kmalloc counts as there through its twin; a buffer too small
         * cuts at a whole name. */
        char buf[128];
        ASSERT_STREQ(tracepoint_slab_missing(t, buf, sizeof(buf)),
                     "kmem/kmem_cache_alloc, kmem/kfree, kmem/kmem_cache_free");
        ASSERT_STREQ(tracepoint_slab_missing(t, buf, 30), "kmem/kmem_cache_alloc");
        t = tracepoint_free(t);
        ASSERT_OK(tracepoint_load(TREE_NEW, TRACEPOINT_BYTE_ORDER_HOST, &t, NULL));
        ASSERT_STREQ(tracepoint_slab_missing(t, buf, sizeof(buf)), "");
}

static void test_task_little(void) {
        test_task_and_stack(false);
}

static void test_task_big(void) {
        test_task_and_stack(true);
}

static void test_old_little(void) {
        check_old_records(false);
}

static void test_old_big(void) {
        check_old_records(true);
}

static void test_missing(void) {
        Tracepoints *t = NULL;
        const char *what = NULL;

        ASSERT_EQ(tracepoint_load("data/no-such-tracefs", TRACEPOINT_BYTE_ORDER_HOST, &t, &what), -ENOENT);
        ASSERT_STREQ(what, "events");
        ASSERT_NULL(t);

        what = NULL;
        ASSERT_EQ(tracepoint_load(TREE_PARTIAL, TRACEPOINT_BYTE_ORDER_HOST, &t, &what), -ENOENT);
        ASSERT_STREQ(what, "kmem/mm_page_free");
        ASSERT_NULL(t);

        ASSERT_EQ(tracepoint_load(TREE_NEW, _TRACEPOINT_BYTE_ORDER_INVALID, &t, &what), -EINVAL);
}

static char *path_join(const char *dir, const char *rest) {
        char *p = NULL;

        ASSERT_TRUE(asprintf(&p, "%s/%s", dir, rest) >= 0);
        return p;
}

static void make_dir(const char *dir, const char *rest) {
        char *p = path_join(dir, rest);

        ASSERT_OK(mkdir(p, 0755));
        free(p);
}

/* Writes a fake tree whose mm_page_free has the given field lines; returns the tree's path. */
static char *write_tree(const char *free_fields) {
        static const char *const kmem[] = { "mm_page_alloc", "mm_page_free" };
        char *dir = strdup("/tmp/test-tracepoint-XXXXXX");

        ASSERT_NOT_NULL(dir);
        ASSERT_NOT_NULL(mkdtemp(dir));
        make_dir(dir, "events");
        make_dir(dir, "events/kmem");
        for (size_t i = 0; i < ELEMENTSOF(kmem); i++) {
                char *sub = NULL, *path;
                FILE *f;

                ASSERT_TRUE(asprintf(&sub, "events/kmem/%s", kmem[i]) >= 0);
                make_dir(dir, sub);
                free(sub);
                ASSERT_TRUE(asprintf(&sub, "events/kmem/%s/format", kmem[i]) >= 0);
                path = path_join(dir, sub);
                free(sub);
                f = fopen(path, "we");
                ASSERT_NOT_NULL(f);
                free(path);
                fprintf(f, "name: %s\nID: %zu\nformat:\n"
                        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n%s\n"
                        "print fmt: \"x\"\n", kmem[i], 10 + i,
                        i == 0 ? "\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n"
                                 "\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n"
                               : free_fields);
                ASSERT_OK(fclose(f));
        }
        return dir;
}

static void remove_tree(char *dir) {
        char *cmd = NULL;

        ASSERT_TRUE(asprintf(&cmd, "rm -rf '%s'", dir) >= 0);
        ASSERT_EQ(system(cmd), 0);
        free(cmd);
        free(dir);
}

static void test_bad_formats(void) {
        Tracepoints *t = NULL;
        const char *what = NULL;
        char *dir;

        /* No pfn and no page field. */
        dir = write_tree("\tfield:unsigned int order;\toffset:8;\tsize:4;\tsigned:0;\n");
        ASSERT_EQ(tracepoint_load(dir, TRACEPOINT_BYTE_ORDER_HOST, &t, &what), -EBADMSG);
        ASSERT_STREQ(what, "kmem/mm_page_free");
        remove_tree(dir);

        /* A 3-byte field cannot be read as a number. */
        what = NULL;
        dir = write_tree("\tfield:unsigned long pfn;\toffset:8;\tsize:3;\tsigned:0;\n");
        ASSERT_EQ(tracepoint_load(dir, TRACEPOINT_BYTE_ORDER_HOST, &t, &what), -EBADMSG);
        ASSERT_STREQ(what, "kmem/mm_page_free");
        remove_tree(dir);

        /* Frees identifying pages by pointer while allocations use pfns could never match. */
        what = NULL;
        dir = write_tree("\tfield:struct page * page;\toffset:8;\tsize:8;\tsigned:0;\n");
        ASSERT_EQ(tracepoint_load(dir, TRACEPOINT_BYTE_ORDER_HOST, &t, &what), -EBADMSG);
        ASSERT_STREQ(what, "kmem/mm_page_free");
        remove_tree(dir);

        /* The minimal valid tree: required events only, free without order. */
        dir = write_tree("\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n");
        ASSERT_OK(tracepoint_load(dir, TRACEPOINT_BYTE_ORDER_HOST, &t, &what));
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_ALLOC), 10);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_FREE), 11);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_PAGE_FREE_BATCHED), -ENOENT);
        t = tracepoint_free(t);
        ASSERT_NULL(t);
        remove_tree(dir);
}

/* The GFP flag names of the recorded 6.18 format: composite masks first, as the kernel tries them; none in a
 * tree without the format. */
static void test_gfp_names(void) {
        GfpName *names = NULL;
        size_t n = 0;
        int kernel = -1, zero = -1, highuser_movable = -1;

        ASSERT_OK(tracepoint_gfp_names(TREE_NEW, &names, &n));
        ASSERT_GT(n, 30);
        for (size_t i = 0; i < n; i++) {
                if (streq(names[i].name, "GFP_KERNEL"))
                        kernel = (int) i;
                else if (streq(names[i].name, "__GFP_ZERO"))
                        zero = (int) i;
                else if (streq(names[i].name, "GFP_HIGHUSER_MOVABLE"))
                        highuser_movable = (int) i;
        }
        ASSERT_TRUE(kernel >= 0 && zero >= 0 && highuser_movable >= 0);
        ASSERT_EQ(names[kernel].mask, 0xcc0);
        ASSERT_EQ(names[zero].mask, 0x100);
        ASSERT_EQ(names[highuser_movable].mask, 0x100cca);
        ASSERT_LT(highuser_movable, kernel);
        ASSERT_LT(kernel, zero);
        for (size_t i = 0; i < n; i++)
                free(names[i].name);
        free(names);
        ASSERT_EQ(tracepoint_gfp_names("data/tracefs-partial-none", &names, &n), -ENOENT);
}

/*
 * The formats of Debian's kernels as the kernel lab found them (tests/data/tracefs-VERSION, copied from each
 * guest's tracefs): every event memstrackd reads loads, the *_node slab twins only before 6.1, the page
 * allocator's GFP flags by name (single flags are literals with C's suffix before 6.12), and a slab
 * allocation of each kernel's layout decodes at the offsets its format gives.
 */
static void check_debian_tree(const char *tree, bool node_twins) {
        _cleanup_(tracepoint_freep) Tracepoints *t = NULL;
        const TracepointKind present[] = {
                TRACEPOINT_PAGE_ALLOC, TRACEPOINT_PAGE_FREE, TRACEPOINT_PAGE_FREE_BATCHED, TRACEPOINT_MODULE_LOAD,
                TRACEPOINT_MODULE_FREE, TRACEPOINT_SCHED_FORK, TRACEPOINT_SCHED_EXEC, TRACEPOINT_SCHED_EXIT,
                TRACEPOINT_TASK_NEWTASK, TRACEPOINT_TASK_RENAME, TRACEPOINT_KMALLOC, TRACEPOINT_KMEM_CACHE_ALLOC,
                TRACEPOINT_KFREE, TRACEPOINT_KMEM_CACHE_FREE,
        };
        const char *what = NULL;
        GfpName *names = NULL;
        size_t n = 0;
        uint64_t comp = 0, zero = 0, kernel = 0;
        uint8_t rec[64] = {};
        MsEvent ev;
        int id;

        fprintf(stderr, "  %s\n", tree);
        ASSERT_OK(tracepoint_load(tree, TRACEPOINT_BYTE_ORDER_LITTLE, &t, &what));
        ASSERT_NULL(what);
        for (size_t i = 0; i < ELEMENTSOF(present); i++)
                ASSERT_GT(tracepoint_id(t, present[i]), 0);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMALLOC_NODE) > 0, node_twins);
        ASSERT_EQ(tracepoint_id(t, TRACEPOINT_KMEM_CACHE_ALLOC_NODE) > 0, node_twins);
        ASSERT_TRUE(!tracepoint_pfn_is_surrogate(t));

        ASSERT_OK(tracepoint_gfp_names(tree, &names, &n));
        ASSERT_GT(n, 30);
        for (size_t i = 0; i < n; i++) {
                if (streq(names[i].name, "__GFP_COMP"))
                        comp = names[i].mask;
                else if (streq(names[i].name, "__GFP_ZERO"))
                        zero = names[i].mask;
                else if (streq(names[i].name, "GFP_KERNEL"))
                        kernel = names[i].mask;
                free(names[i].name);
        }
        free(names);
        ASSERT_EQ(comp, 0x40000);
        ASSERT_EQ(zero, 0x100);
        ASSERT_EQ(kernel, 0xcc0);

        /* kmem_cache_alloc: call_site@8, ptr@16, bytes_req@24, bytes_alloc@32 on all three, no cache name. */
        id = tracepoint_id(t, TRACEPOINT_KMEM_CACHE_ALLOC);
        put_common(rec, (uint16_t) id, 77, false);
        put(rec, 8, 8, UINT64_C(0xffffffff81234567), false);
        put(rec, 16, 8, UINT64_C(0xffff888012345600), false);
        put(rec, 24, 8, 184, false);
        put(rec, 32, 8, 192, false);
        clear_event(&ev);
        ASSERT_EQ(tracepoint_decode(t, rec, sizeof(rec), &ev), TRACEPOINT_KMEM_CACHE_ALLOC);
        ASSERT_EQ(ev.object.ptr, UINT64_C(0xffff888012345600));
        ASSERT_EQ(ev.object.call_site, UINT64_C(0xffffffff81234567));
        ASSERT_EQ(ev.object.bytes_requested, 184);
        ASSERT_EQ(ev.object.bytes_allocated, 192);
        ASSERT_NULL(ev.object.cache);
}

static void test_debian_kernels(void) {
        check_debian_tree("data/tracefs-5.10", true);
        check_debian_tree("data/tracefs-6.1", false);
        check_debian_tree("data/tracefs-6.12", false);
}

/* The lockdown file as the kernel writes it, each mode in turn; only confidentiality closes tracing. */
static void test_lockdown(void) {
        char path[] = "/tmp/test-lockdown-XXXXXX";
        const char *reason = NULL;
        int fd = mkstemp(path);

        ASSERT_OK(fd);
        ASSERT_EQ(write(fd, "none integrity [confidentiality]\n", 33), 33);
        ASSERT_EQ(close(fd), 0);
        ASSERT_EQ(tracefs_lockdown_check(path, &reason), -EPERM);
        ASSERT_NOT_NULL(strstr(reason, "confidentiality"));
        FILE *f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        fputs("none [integrity] confidentiality\n", f);
        ASSERT_EQ(fclose(f), 0);
        reason = NULL;
        ASSERT_EQ(tracefs_lockdown_check(path, &reason), 0);
        ASSERT_NULL(reason);
        ASSERT_EQ(unlink(path), 0);
        /* No securityfs, or no lockdown LSM: nothing to say. */
        ASSERT_EQ(tracefs_lockdown_check(path, &reason), 0);
}

int main(void) {
        TEST(test_lockdown);
        TEST(test_kind_strings);
        TEST(test_gfp_names);
        TEST(test_debian_kernels);
        TEST(test_load_new);
        TEST(test_new_little);
        TEST(test_new_big);
        TEST(test_byte_order_matters);
        TEST(test_slab_little);
        TEST(test_slab_big);
        TEST(test_slab_old);
        TEST(test_task_little);
        TEST(test_task_big);
        TEST(test_old_little);
        TEST(test_old_big);
        TEST(test_missing);
        TEST(test_bad_formats);
        return 0;
}
