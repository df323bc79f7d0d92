/* SPDX-License-Identifier: MIT */

/*
 * Runs a libFuzzer target without libFuzzer, for compilers and builds that have none (gcc, the plain and
 * sanitizer builds): the files named on the command line (a crash libFuzzer saved, a corpus), else --runs
 * inputs of pseudo-random bytes from --seed, each of up to --max-len bytes. The same arguments run the same
 * inputs on every machine. --save=FILE writes each input there before it runs: after a crash, FILE holds the
 * input that crashed, to be run again by name.
 *
 *   fuzz-driver [--runs=N] [--seed=S] [--max-len=L] [--save=FILE] [FILE...]
 */

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* splitmix64: a fixed sequence for a seed, whatever the libc. */
static uint64_t next_random(uint64_t *state) {
        uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        return z ^ (z >> 31);
}

static int run_file(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ uint8_t *data = NULL;
        size_t size = 0, allocated = 0;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        for (;;) {
                if (size == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 4096);
                        uint8_t *d = realloc(data, allocated);
                        if (!d)
                                return -ENOMEM;
                        data = d;
                }
                size_t n = fread(data + size, 1, allocated - size, f);
                size += n;
                if (n == 0)
                        break;
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error\n", path);
                return -EIO;
        }
        fprintf(stderr, "%s: %zu bytes\n", path, size);
        return LLVMFuzzerTestOneInput(data, size);
}

static int save_input(const char *path, const uint8_t *data, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "we");

        if (!f || fwrite(data, 1, size, f) != size || fflush(f) != 0) {
                fprintf(stderr, "%s: cannot write\n", path);
                return -EIO;
        }
        return 0;
}

static int number_arg(const char *arg, const char *name, uint64_t max, uint64_t *ret) {
        size_t n = strlen(name);

        if (strncmp(arg, name, n) != 0 || arg[n] != '=')
                return 0;
        if (parse_uint64(arg + n + 1, 0, max, ret) < 0) {
                fprintf(stderr, "bad %s\n", arg);
                exit(EXIT_FAILURE);
        }
        return 1;
}

int main(int argc, char *argv[]) {
        uint64_t runs = 1000, seed = 1, max_len = 1024;
        const char *save = NULL;
        int files = 0;

        for (int i = 1; i < argc; i++) {
                if (number_arg(argv[i], "--runs", UINT32_MAX, &runs) || number_arg(argv[i], "--seed", UINT64_MAX, &seed) ||
                    number_arg(argv[i], "--max-len", 1 << 24, &max_len))
                        continue;
                if (strncmp(argv[i], "--save=", 7) == 0) {
                        save = argv[i] + 7;
                        continue;
                }
                if (argv[i][0] == '-') {
                        fprintf(stderr, "usage: %s [--runs=N] [--seed=S] [--max-len=L] [--save=FILE] [FILE...]\n",
                                argv[0]);
                        return EXIT_FAILURE;
                }
                if (run_file(argv[i]) < 0)
                        return EXIT_FAILURE;
                files++;
        }
        if (files > 0)
                return EXIT_SUCCESS;

        _cleanup_free_ uint8_t *data = malloc(MAX(max_len, (uint64_t) 1));
        uint64_t state = seed;
        if (!data)
                return EXIT_FAILURE;
        for (uint64_t run = 0; run < runs; run++) {
                /* Lengths of every size up to the bound, bytes of every value. */
                size_t size = (size_t) (next_random(&state) % (max_len + 1));
                for (size_t i = 0; i < size; i++)
                        data[i] = (uint8_t) next_random(&state);
                if (save && save_input(save, data, size) < 0)
                        return EXIT_FAILURE;
                (void) LLVMFuzzerTestOneInput(data, size);
        }
        fprintf(stderr, "%" PRIu64 " runs, seed %" PRIu64 ", at most %" PRIu64 " bytes each\n", runs, seed, max_len);
        return EXIT_SUCCESS;
}
