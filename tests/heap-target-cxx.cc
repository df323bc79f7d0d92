// SPDX-License-Identifier: MIT
//
// heap-target's C++ call sites: new and delete, sized and aligned, which reach malloc and free through
// libstdc++'s operators, or an allocator's own operators (jemalloc, tcmalloc and mimalloc define them).

#include <cstddef>
#include <new>

extern "C" void *heap_target_new(std::size_t n, int *ret_line);
extern "C" void heap_target_delete(void *p);
extern "C" void *heap_target_new_object(std::size_t n, int *ret_line);
extern "C" void heap_target_delete_sized(void *p, std::size_t n);
extern "C" void *heap_target_new_aligned(std::size_t n, std::size_t alignment, int *ret_line);
extern "C" void heap_target_delete_aligned(void *p, std::size_t alignment);

void *heap_target_new(std::size_t n, int *ret_line) {
        char *p = new char[n];
        *ret_line = __LINE__ - 1;
        return p;
}

void heap_target_delete(void *p) {
        delete[] static_cast<char *>(p);
}

void *heap_target_new_object(std::size_t n, int *ret_line) {
        void *p = ::operator new(n);
        *ret_line = __LINE__ - 1;
        return p;
}

// What a compiler calls for a delete of a complete object (-fsized-deallocation).
void heap_target_delete_sized(void *p, std::size_t n) {
        ::operator delete(p, n);
}

void *heap_target_new_aligned(std::size_t n, std::size_t alignment, int *ret_line) {
        void *p = ::operator new(n, std::align_val_t(alignment));
        *ret_line = __LINE__ - 1;
        return p;
}

void heap_target_delete_aligned(void *p, std::size_t alignment) {
        ::operator delete(p, std::align_val_t(alignment));
}
