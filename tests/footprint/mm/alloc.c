/* SPDX-License-Identifier: MIT */

/*
 * One of the two source files of the footprint test object (tests/test-footprint.py): a function,
 * initialized data, zeroed (bss) data, rodata and static locals, all under tests/footprint/mm.
 */

int mm_alloc_pages(int n);

static int mm_counter;
int mm_table[100] = { 1, 2, 3 };
char mm_zeroes[4096];
const char mm_message[] = "footprint rodata in mm";

int mm_alloc_pages(int n) {
        static int calls;

        calls++;
        for (int i = 0; i < n; i++)
                mm_counter += mm_table[i % 100] + mm_message[i % 7] + mm_zeroes[i % 4096];
        return mm_counter + calls;
}
