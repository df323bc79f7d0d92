/* SPDX-License-Identifier: MIT */

/*
 * The entry points beside the malloc family (interpose.c) through which programs allocate and free without
 * calling malloc() or free(): C++'s operators new and delete, C23's sized frees, and the APIs of the
 * allocators that programs link against and call directly: jemalloc's *allocx(), tcmalloc's tc_*() and
 * mimalloc's mi_*(). Without them a sized delete, sdallocx() or mi_free() would free a block the library
 * counts as live, and mallocx() or mi_malloc() would allocate one it never saw.
 *
 * Each finds the next function of its name in the lookup order (the allocator's) at its first call, so that
 * a program that never calls it pays nothing, and one that loads libstdc++ later finds it then.
 *
 * C++'s operators are of two kinds. libstdc++'s call malloc() and free(), whose entry points record them:
 * these only pass the call on. An allocator's own (jemalloc, tcmalloc and mimalloc define them) reach its
 * insides directly: these record the block themselves, as every allocator API here does, around a call
 * marked as the allocator's own (allocator_enter()), so that what the allocator calls of the library's
 * names inside is recorded once, by the outer entry point.
 *
 * An operator new that throws cannot be marked (the mark would stay on the thread once the exception went
 * past): it is tried as its nothrow twin, marked, and only when that fails (out of memory: a new_handler
 * may make room, or std::bad_alloc is thrown) called itself, unmarked and unrecorded.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interpose.h"
#include "library.h"
#include "record.h"
#include "stacks.h"

/* The functions defined here are other libraries' (declared in <new>, jemalloc.h, gperftools/tcmalloc.h,
 * mimalloc.h, none of which the library may include): their definitions are their only declarations. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define NEXT_MISSING ((void *) 1)

/* The names, in the order of Next. */
#define NEXT_NAMES(X) \
        X(NEW, "_Znwm") X(NEW_ARRAY, "_Znam") \
        X(NEW_NOTHROW, "_ZnwmRKSt9nothrow_t") X(NEW_ARRAY_NOTHROW, "_ZnamRKSt9nothrow_t") \
        X(NEW_ALIGNED, "_ZnwmSt11align_val_t") X(NEW_ARRAY_ALIGNED, "_ZnamSt11align_val_t") \
        X(NEW_ALIGNED_NOTHROW, "_ZnwmSt11align_val_tRKSt9nothrow_t") \
        X(NEW_ARRAY_ALIGNED_NOTHROW, "_ZnamSt11align_val_tRKSt9nothrow_t") \
        X(DELETE, "_ZdlPv") X(DELETE_ARRAY, "_ZdaPv") X(DELETE_SIZED, "_ZdlPvm") X(DELETE_ARRAY_SIZED, "_ZdaPvm") \
        X(DELETE_ALIGNED, "_ZdlPvSt11align_val_t") X(DELETE_ARRAY_ALIGNED, "_ZdaPvSt11align_val_t") \
        X(DELETE_SIZED_ALIGNED, "_ZdlPvmSt11align_val_t") X(DELETE_ARRAY_SIZED_ALIGNED, "_ZdaPvmSt11align_val_t") \
        X(DELETE_NOTHROW, "_ZdlPvRKSt9nothrow_t") X(DELETE_ARRAY_NOTHROW, "_ZdaPvRKSt9nothrow_t") \
        X(DELETE_ALIGNED_NOTHROW, "_ZdlPvSt11align_val_tRKSt9nothrow_t") \
        X(DELETE_ARRAY_ALIGNED_NOTHROW, "_ZdaPvSt11align_val_tRKSt9nothrow_t") \
        X(FREE_SIZED, "free_sized") X(FREE_ALIGNED_SIZED, "free_aligned_sized") \
        X(MALLOCX, "mallocx") X(RALLOCX, "rallocx") X(XALLOCX, "xallocx") X(SDALLOCX, "sdallocx") \
        X(DALLOCX, "dallocx") \
        X(TC_MALLOC, "tc_malloc") X(TC_CALLOC, "tc_calloc") X(TC_REALLOC, "tc_realloc") X(TC_FREE, "tc_free") \
        X(TC_FREE_SIZED, "tc_free_sized") X(TC_MEMALIGN, "tc_memalign") X(TC_POSIX_MEMALIGN, "tc_posix_memalign") \
        X(TC_NEW, "tc_new") X(TC_NEWARRAY, "tc_newarray") X(TC_NEW_NOTHROW, "tc_new_nothrow") \
        X(TC_NEWARRAY_NOTHROW, "tc_newarray_nothrow") X(TC_DELETE, "tc_delete") \
        X(TC_DELETEARRAY, "tc_deletearray") X(TC_DELETE_SIZED, "tc_delete_sized") \
        X(TC_DELETEARRAY_SIZED, "tc_deletearray_sized") \
        X(MI_MALLOC, "mi_malloc") X(MI_ZALLOC, "mi_zalloc") X(MI_CALLOC, "mi_calloc") X(MI_MALLOCN, "mi_mallocn") \
        X(MI_REALLOC, "mi_realloc") X(MI_REALLOCN, "mi_reallocn") X(MI_REALLOCF, "mi_reallocf") \
        X(MI_STRDUP, "mi_strdup") X(MI_STRNDUP, "mi_strndup") X(MI_MALLOC_ALIGNED, "mi_malloc_aligned") \
        X(MI_ZALLOC_ALIGNED, "mi_zalloc_aligned") X(MI_CALLOC_ALIGNED, "mi_calloc_aligned") \
        X(MI_REALLOC_ALIGNED, "mi_realloc_aligned") X(MI_FREE, "mi_free") X(MI_FREE_SIZE, "mi_free_size") \
        X(MI_FREE_ALIGNED, "mi_free_aligned") X(MI_FREE_SIZE_ALIGNED, "mi_free_size_aligned")

#define NEXT_ID(id, name) NEXT_##id,
#define NEXT_NAME(id, name) name,

typedef enum Next {
        NEXT_NAMES(NEXT_ID)
        _NEXT_MAX,
} Next;

static const char *const next_names[_NEXT_MAX] = { NEXT_NAMES(NEXT_NAME) };

/* Each name's next function, NEXT_MISSING where there is none; NULL: not looked up yet. own: it is the
 * allocator's (in the object of the real malloc()), not libstdc++'s over malloc(). */
static void *next[_NEXT_MAX];
static bool own[_NEXT_MAX];

static void *next_of(Next id) {
        void *fn = __atomic_load_n(&next[id], __ATOMIC_ACQUIRE);

        if (likely(fn))
                return fn == NEXT_MISSING ? NULL : fn;
        fn = interpose_next(next_names[id]);
        if (fn)
                own[id] = stacks_code_path(fn) == stacks_code_path(interpose_allocator_code());
        __atomic_store_n(&next[id], fn ?: NEXT_MISSING, __ATOMIC_RELEASE);
        return fn;
}

/* ---- What the entry points share ---------------------------------------------------------------------- */

/* A block the allocator handed out, recorded if on. */
static void *took(bool on, void *p) {
        if (on && p)
                record_alloc(p);
        return p;
}

/* A block about to go back to the allocator: recorded if on. False: nothing to give back (NULL, or one of
 * the library's own from its start, which no allocator knows). */
static bool giving(void *p) {
        if (!p || interpose_is_bootstrap(p))
                return false;
        if (interpose_recording())
                record_free(p);
        return true;
}

/* A call that resized p into q (NULL: failed, and p is still there unless the call frees it on failure, or
 * it was a resize to nothing). The old block was recorded as gone before the call. */
static void *resized(bool on, void *p, void *q, size_t n, bool frees_on_failure) {
        if (on && q)
                record_alloc(q);
        else if (on && p && n != 0 && !frees_on_failure)
                record_alloc(p);
        return q;
}

/* Before a call that may move or free p: p recorded as gone (the allocator may hand its address to
 * another thread once it moved it). */
static bool resizing(void *p) {
        bool on = interpose_recording();
        if (on && p)
                record_free(p);
        return on;
}

/* Before the allocator frees p through fn: p recorded as gone. True: the caller calls fn now, then
 * allocator_leave(); false: nothing to call (p is NULL or the library's own, or fn is missing and free()
 * did the same). */
static bool freeing(void *fn, void *p) {
        if (!giving(p))
                return false;
        if (!fn) {
                interpose_real_free(p);
                return false;
        }
        allocator_enter();
        return true;
}

/* A function the allocator lacks: what its callers expect of a failure. */
static void *missing(void) {
        errno = ENOMEM;
        return NULL;
}

/* ---- C++'s operators ---------------------------------------------------------------------------------- */

typedef void *(*NewFn)(size_t);
typedef void *(*NewNothrowFn)(size_t, const void *);
typedef void *(*NewAlignedFn)(size_t, size_t);
typedef void *(*NewAlignedNothrowFn)(size_t, size_t, const void *);
typedef void (*FreeFn)(void *);
typedef void (*FreeSizeFn)(void *, size_t);
typedef void (*FreeTwoSizesFn)(void *, size_t, size_t);
typedef void (*FreeTagFn)(void *, const void *);
typedef void (*FreeSizeTagFn)(void *, size_t, const void *);

/* The nothrow object operator new takes: no operator reads it (std::nothrow_t is an empty struct). */
static const char nothrow_tag;

/* operator new and tc_new(): own is false for libstdc++'s, which only calls malloc(). */
static void *new_call(Next id, Next nothrow, size_t n) {
        bool on = interpose_recording();
        NewFn fn = (NewFn) next_of(id);
        NewNothrowFn quiet = (NewNothrowFn) next_of(nothrow);

        if (!fn)
                return missing();
        if (!own[id] || !quiet)
                return fn(n);
        allocator_enter();
        void *p = quiet(n, &nothrow_tag);
        allocator_leave();
        return p ? took(on, p) : fn(n);
}

static void *new_nothrow_call(Next id, size_t n, const void *tag) {
        bool on = interpose_recording();
        NewNothrowFn fn = (NewNothrowFn) next_of(id);

        if (!fn)
                return NULL;
        if (!own[id])
                return fn(n, tag);
        allocator_enter();
        void *p = fn(n, tag);
        allocator_leave();
        return took(on, p);
}

static void *new_aligned_call(Next id, Next nothrow, size_t n, size_t alignment) {
        bool on = interpose_recording();
        NewAlignedFn fn = (NewAlignedFn) next_of(id);
        NewAlignedNothrowFn quiet = (NewAlignedNothrowFn) next_of(nothrow);

        if (!fn)
                return missing();
        if (!own[id] || !quiet)
                return fn(n, alignment);
        allocator_enter();
        void *p = quiet(n, alignment, &nothrow_tag);
        allocator_leave();
        return p ? took(on, p) : fn(n, alignment);
}

static void *new_aligned_nothrow_call(Next id, size_t n, size_t alignment, const void *tag) {
        bool on = interpose_recording();
        NewAlignedNothrowFn fn = (NewAlignedNothrowFn) next_of(id);

        if (!fn)
                return NULL;
        if (!own[id])
                return fn(n, alignment, tag);
        allocator_enter();
        void *p = fn(n, alignment, tag);
        allocator_leave();
        return took(on, p);
}

/* Whether a delete only passes the call on: libstdc++'s, which calls free(), which records. */
static bool passes_on(Next id, void *fn) {
        return fn && !own[id];
}

EXPORT void *_Znwm(size_t n) {
        return new_call(NEXT_NEW, NEXT_NEW_NOTHROW, n);
}

EXPORT void *_Znam(size_t n) {
        return new_call(NEXT_NEW_ARRAY, NEXT_NEW_ARRAY_NOTHROW, n);
}

EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *tag) {
        return new_nothrow_call(NEXT_NEW_NOTHROW, n, tag);
}

EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *tag) {
        return new_nothrow_call(NEXT_NEW_ARRAY_NOTHROW, n, tag);
}

EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t alignment) {
        return new_aligned_call(NEXT_NEW_ALIGNED, NEXT_NEW_ALIGNED_NOTHROW, n, alignment);
}

EXPORT void *_ZnamSt11align_val_t(size_t n, size_t alignment) {
        return new_aligned_call(NEXT_NEW_ARRAY_ALIGNED, NEXT_NEW_ARRAY_ALIGNED_NOTHROW, n, alignment);
}

EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag) {
        return new_aligned_nothrow_call(NEXT_NEW_ALIGNED_NOTHROW, n, alignment, tag);
}

EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t alignment, const void *tag) {
        return new_aligned_nothrow_call(NEXT_NEW_ARRAY_ALIGNED_NOTHROW, n, alignment, tag);
}

static void delete_call(Next id, void *p) {
        FreeFn fn = (FreeFn) next_of(id);

        if (passes_on(id, (void *) fn))
                fn(p);
        else if (freeing((void *) fn, p)) {
                fn(p);
                allocator_leave();
        }
}

/* Sized and aligned deletes: the one word after the pointer. */
static void delete_size_call(Next id, void *p, size_t n) {
        FreeSizeFn fn = (FreeSizeFn) next_of(id);

        if (passes_on(id, (void *) fn))
                fn(p, n);
        else if (freeing((void *) fn, p)) {
                fn(p, n);
                allocator_leave();
        }
}

static void delete_two_sizes_call(Next id, void *p, size_t n, size_t alignment) {
        FreeTwoSizesFn fn = (FreeTwoSizesFn) next_of(id);

        if (passes_on(id, (void *) fn))
                fn(p, n, alignment);
        else if (freeing((void *) fn, p)) {
                fn(p, n, alignment);
                allocator_leave();
        }
}

static void delete_tag_call(Next id, void *p, const void *tag) {
        FreeTagFn fn = (FreeTagFn) next_of(id);

        if (passes_on(id, (void *) fn))
                fn(p, tag);
        else if (freeing((void *) fn, p)) {
                fn(p, tag);
                allocator_leave();
        }
}

static void delete_size_tag_call(Next id, void *p, size_t alignment, const void *tag) {
        FreeSizeTagFn fn = (FreeSizeTagFn) next_of(id);

        if (passes_on(id, (void *) fn))
                fn(p, alignment, tag);
        else if (freeing((void *) fn, p)) {
                fn(p, alignment, tag);
                allocator_leave();
        }
}

EXPORT void _ZdlPv(void *p) {
        delete_call(NEXT_DELETE, p);
}

EXPORT void _ZdaPv(void *p) {
        delete_call(NEXT_DELETE_ARRAY, p);
}

EXPORT void _ZdlPvm(void *p, size_t n) {
        delete_size_call(NEXT_DELETE_SIZED, p, n);
}

EXPORT void _ZdaPvm(void *p, size_t n) {
        delete_size_call(NEXT_DELETE_ARRAY_SIZED, p, n);
}

EXPORT void _ZdlPvSt11align_val_t(void *p, size_t alignment) {
        delete_size_call(NEXT_DELETE_ALIGNED, p, alignment);
}

EXPORT void _ZdaPvSt11align_val_t(void *p, size_t alignment) {
        delete_size_call(NEXT_DELETE_ARRAY_ALIGNED, p, alignment);
}

EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t alignment) {
        delete_two_sizes_call(NEXT_DELETE_SIZED_ALIGNED, p, n, alignment);
}

EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t alignment) {
        delete_two_sizes_call(NEXT_DELETE_ARRAY_SIZED_ALIGNED, p, n, alignment);
}

EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *tag) {
        delete_tag_call(NEXT_DELETE_NOTHROW, p, tag);
}

EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *tag) {
        delete_tag_call(NEXT_DELETE_ARRAY_NOTHROW, p, tag);
}

EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag) {
        delete_size_tag_call(NEXT_DELETE_ALIGNED_NOTHROW, p, alignment, tag);
}

EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t alignment, const void *tag) {
        delete_size_tag_call(NEXT_DELETE_ARRAY_ALIGNED_NOTHROW, p, alignment, tag);
}

/* ---- Sized frees, the allocators' APIs ---------------------------------------------------------------- */

/* The frees of an allocator's API (and C23's) record the block and call it; where the allocator has no
 * such function (C23's sized frees before glibc 2.41), free() does the same. */
static void free_call(Next id, void *p) {
        FreeFn fn = (FreeFn) next_of(id);

        if (freeing((void *) fn, p)) {
                fn(p);
                allocator_leave();
        }
}

static void free_size_call(Next id, void *p, size_t n) {
        FreeSizeFn fn = (FreeSizeFn) next_of(id);

        if (freeing((void *) fn, p)) {
                fn(p, n);
                allocator_leave();
        }
}

static void free_two_sizes_call(Next id, void *p, size_t a, size_t b) {
        FreeTwoSizesFn fn = (FreeTwoSizesFn) next_of(id);

        if (freeing((void *) fn, p)) {
                fn(p, a, b);
                allocator_leave();
        }
}

EXPORT void free_sized(void *p, size_t n) {
        free_size_call(NEXT_FREE_SIZED, p, n);
}

EXPORT void free_aligned_sized(void *p, size_t alignment, size_t n) {
        free_two_sizes_call(NEXT_FREE_ALIGNED_SIZED, p, alignment, n);
}

/* jemalloc */

EXPORT void *mallocx(size_t n, int flags) {
        bool on = interpose_recording();
        void *(*fn)(size_t, int) = (void *(*)(size_t, int)) next_of(NEXT_MALLOCX);

        if (!fn)
                return NULL;
        allocator_enter();
        void *p = fn(n, flags);
        allocator_leave();
        return took(on, p);
}

EXPORT void *rallocx(void *p, size_t n, int flags) {
        void *(*fn)(void *, size_t, int) = (void *(*)(void *, size_t, int)) next_of(NEXT_RALLOCX);

        if (!fn)
                return NULL;
        bool on = resizing(p);
        allocator_enter();
        void *q = fn(p, n, flags);
        allocator_leave();
        return resized(on, p, q, n, false);
}

/* Resizes in place: the block is the same, its usable size the new one. */
EXPORT size_t xallocx(void *p, size_t n, size_t extra, int flags) {
        size_t (*fn)(void *, size_t, size_t, int) = (size_t (*)(void *, size_t, size_t, int)) next_of(NEXT_XALLOCX);

        if (!fn)
                return 0;
        bool on = resizing(p);
        allocator_enter();
        size_t usable = fn(p, n, extra, flags);
        allocator_leave();
        (void) took(on, p);
        return usable;
}

EXPORT void sdallocx(void *p, size_t n, int flags) {
        void (*fn)(void *, size_t, int) = (void (*)(void *, size_t, int)) next_of(NEXT_SDALLOCX);

        if (freeing((void *) fn, p)) {
                fn(p, n, flags);
                allocator_leave();
        }
}

EXPORT void dallocx(void *p, int flags) {
        void (*fn)(void *, int) = (void (*)(void *, int)) next_of(NEXT_DALLOCX);

        if (freeing((void *) fn, p)) {
                fn(p, flags);
                allocator_leave();
        }
}

/* What tcmalloc's and mimalloc's functions share: a new block from one, two or three sizes, a resize. */

static void *alloc1_call(Next id, size_t n) {
        bool on = interpose_recording();
        void *(*fn)(size_t) = (void *(*)(size_t)) next_of(id);

        if (!fn)
                return missing();
        allocator_enter();
        void *p = fn(n);
        allocator_leave();
        return took(on, p);
}

static void *alloc2_call(Next id, size_t a, size_t b) {
        bool on = interpose_recording();
        void *(*fn)(size_t, size_t) = (void *(*)(size_t, size_t)) next_of(id);

        if (!fn)
                return missing();
        allocator_enter();
        void *p = fn(a, b);
        allocator_leave();
        return took(on, p);
}

static void *alloc3_call(Next id, size_t a, size_t b, size_t c) {
        bool on = interpose_recording();
        void *(*fn)(size_t, size_t, size_t) = (void *(*)(size_t, size_t, size_t)) next_of(id);

        if (!fn)
                return missing();
        allocator_enter();
        void *p = fn(a, b, c);
        allocator_leave();
        return took(on, p);
}

/* p resized to n bytes: fn(p, n). */
static void *resize1_call(Next id, void *p, size_t n, bool frees_on_failure) {
        void *(*fn)(void *, size_t) = (void *(*)(void *, size_t)) next_of(id);

        if (!fn)
                return missing();
        bool on = resizing(p);
        allocator_enter();
        void *q = fn(p, n);
        allocator_leave();
        return resized(on, p, q, n, frees_on_failure);
}

/* p resized to n bytes: fn(p, a, b) (count and size, or size and alignment). */
static void *resize2_call(Next id, void *p, size_t n, size_t a, size_t b) {
        void *(*fn)(void *, size_t, size_t) = (void *(*)(void *, size_t, size_t)) next_of(id);

        if (!fn)
                return missing();
        bool on = resizing(p);
        allocator_enter();
        void *q = fn(p, a, b);
        allocator_leave();
        return resized(on, p, q, n, false);
}

/* tcmalloc */

EXPORT void *tc_malloc(size_t n) {
        return alloc1_call(NEXT_TC_MALLOC, n);
}

EXPORT void *tc_calloc(size_t count, size_t size) {
        return alloc2_call(NEXT_TC_CALLOC, count, size);
}

EXPORT void *tc_realloc(void *p, size_t n) {
        return resize1_call(NEXT_TC_REALLOC, p, n, false);
}

EXPORT void tc_free(void *p) {
        free_call(NEXT_TC_FREE, p);
}

EXPORT void tc_free_sized(void *p, size_t n) {
        free_size_call(NEXT_TC_FREE_SIZED, p, n);
}

EXPORT void *tc_memalign(size_t alignment, size_t n) {
        return alloc2_call(NEXT_TC_MEMALIGN, alignment, n);
}

EXPORT int tc_posix_memalign(void **ret, size_t alignment, size_t n) {
        bool on = interpose_recording();
        int (*fn)(void **, size_t, size_t) = (int (*)(void **, size_t, size_t)) next_of(NEXT_TC_POSIX_MEMALIGN);

        if (!fn)
                return ENOMEM;
        allocator_enter();
        int r = fn(ret, alignment, n);
        allocator_leave();
        if (r == 0)
                (void) took(on, *ret);
        return r;
}

EXPORT void *tc_new(size_t n) {
        return new_call(NEXT_TC_NEW, NEXT_TC_NEW_NOTHROW, n);
}

EXPORT void *tc_newarray(size_t n) {
        return new_call(NEXT_TC_NEWARRAY, NEXT_TC_NEWARRAY_NOTHROW, n);
}

EXPORT void *tc_new_nothrow(size_t n, const void *tag) {
        return new_nothrow_call(NEXT_TC_NEW_NOTHROW, n, tag);
}

EXPORT void *tc_newarray_nothrow(size_t n, const void *tag) {
        return new_nothrow_call(NEXT_TC_NEWARRAY_NOTHROW, n, tag);
}

EXPORT void tc_delete(void *p) {
        free_call(NEXT_TC_DELETE, p);
}

EXPORT void tc_deletearray(void *p) {
        free_call(NEXT_TC_DELETEARRAY, p);
}

EXPORT void tc_delete_sized(void *p, size_t n) {
        free_size_call(NEXT_TC_DELETE_SIZED, p, n);
}

EXPORT void tc_deletearray_sized(void *p, size_t n) {
        free_size_call(NEXT_TC_DELETEARRAY_SIZED, p, n);
}

/* mimalloc */

EXPORT void *mi_malloc(size_t n) {
        return alloc1_call(NEXT_MI_MALLOC, n);
}

EXPORT void *mi_zalloc(size_t n) {
        return alloc1_call(NEXT_MI_ZALLOC, n);
}

EXPORT void *mi_calloc(size_t count, size_t size) {
        return alloc2_call(NEXT_MI_CALLOC, count, size);
}

EXPORT void *mi_mallocn(size_t count, size_t size) {
        return alloc2_call(NEXT_MI_MALLOCN, count, size);
}

EXPORT void *mi_realloc(void *p, size_t n) {
        return resize1_call(NEXT_MI_REALLOC, p, n, false);
}

EXPORT void *mi_reallocn(void *p, size_t count, size_t size) {
        size_t n = size != 0 && count > SIZE_MAX / size ? SIZE_MAX : count * size;
        return resize2_call(NEXT_MI_REALLOCN, p, n, count, size);
}

/* Frees p when it fails. */
EXPORT void *mi_reallocf(void *p, size_t n) {
        return resize1_call(NEXT_MI_REALLOCF, p, n, true);
}

EXPORT char *mi_strdup(const char *s) {
        bool on = interpose_recording();
        char *(*fn)(const char *) = (char *(*)(const char *)) next_of(NEXT_MI_STRDUP);

        if (!fn)
                return missing();
        allocator_enter();
        char *p = fn(s);
        allocator_leave();
        return took(on, p);
}

EXPORT char *mi_strndup(const char *s, size_t n) {
        bool on = interpose_recording();
        char *(*fn)(const char *, size_t) = (char *(*)(const char *, size_t)) next_of(NEXT_MI_STRNDUP);

        if (!fn)
                return missing();
        allocator_enter();
        char *p = fn(s, n);
        allocator_leave();
        return took(on, p);
}

EXPORT void *mi_malloc_aligned(size_t n, size_t alignment) {
        return alloc2_call(NEXT_MI_MALLOC_ALIGNED, n, alignment);
}

EXPORT void *mi_zalloc_aligned(size_t n, size_t alignment) {
        return alloc2_call(NEXT_MI_ZALLOC_ALIGNED, n, alignment);
}

EXPORT void *mi_calloc_aligned(size_t count, size_t size, size_t alignment) {
        return alloc3_call(NEXT_MI_CALLOC_ALIGNED, count, size, alignment);
}

EXPORT void *mi_realloc_aligned(void *p, size_t n, size_t alignment) {
        return resize2_call(NEXT_MI_REALLOC_ALIGNED, p, n, n, alignment);
}

EXPORT void mi_free(void *p) {
        free_call(NEXT_MI_FREE, p);
}

EXPORT void mi_free_size(void *p, size_t n) {
        free_size_call(NEXT_MI_FREE_SIZE, p, n);
}

EXPORT void mi_free_aligned(void *p, size_t alignment) {
        free_size_call(NEXT_MI_FREE_ALIGNED, p, alignment);
}

EXPORT void mi_free_size_aligned(void *p, size_t n, size_t alignment) {
        free_two_sizes_call(NEXT_MI_FREE_SIZE_ALIGNED, p, n, alignment);
}
