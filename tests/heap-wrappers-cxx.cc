// SPDX-License-Identifier: MIT
//
// heap-wrappers' C++ call site: new[] reaches malloc through libstdc++'s operator new[] (_Znam).

#include <cstddef>

extern "C" void *heap_wrappers_new(std::size_t n, int *ret_line);

void *heap_wrappers_new(std::size_t n, int *ret_line) {
        char *p = new char[n];
        *ret_line = __LINE__ - 1;
        return p;
}
