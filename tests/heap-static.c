/* SPDX-License-Identifier: MIT */

/* A static program: LD_PRELOAD cannot reach it, and memstrackctl record must say so. */

#include <stdlib.h>

int main(void) {
        free(malloc(10));
        return 0;
}
