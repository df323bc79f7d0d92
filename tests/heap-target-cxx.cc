// SPDX-License-Identifier: MIT
//
// heap-target's C++ call sites: new and delete reach malloc and free through libstdc++'s operators.

#include <cstddef>

extern "C" void *heap_target_new(std::size_t n, int *ret_line);
extern "C" void heap_target_delete(void *p);

void *heap_target_new(std::size_t n, int *ret_line) {
        char *p = new char[n];
        *ret_line = __LINE__ - 1;
        return p;
}

void heap_target_delete(void *p) {
        delete[] static_cast<char *>(p);
}
