/* SPDX-License-Identifier: MIT */

/*
 * A process for test-usym to symbolize. Prints one line,
 *     function=ADDR libc=ADDR anonymous=ADDR
 * the addresses of usym_target_function() (in this executable), of getppid() (in libc) and of an
 * anonymous mapping, then follows commands on stdin: "exec PATH" execs PATH (which prints its own line),
 * EOF exits. Built twice, as usym-target and usym-other, to exec into another program.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void usym_target_function(void *anonymous);

/* Not static and never inlined: the symbol must exist, and be larger than the offsets looked up. */
__attribute__((noinline)) void usym_target_function(void *anonymous) {
        char *line = NULL;
        size_t size = 0;
        ssize_t n;

        (void) printf("function=%p libc=%p anonymous=%p\n", (void *) usym_target_function, (void *) getppid,
                      anonymous);
        (void) fflush(stdout);

        while ((n = getline(&line, &size, stdin)) > 0) {
                if (line[n - 1] == '\n')
                        line[n - 1] = '\0';
                if (strncmp(line, "exec ", 5) == 0) {
                        char *argv[] = { line + 5, NULL };
                        (void) execv(argv[0], argv);
                        perror("execv");
                        break;
                }
        }
        free(line);
}

int main(void) {
        void *anonymous = mmap(NULL, (size_t) sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (anonymous == MAP_FAILED) {
                perror("mmap");
                return EXIT_FAILURE;
        }
        usym_target_function(anonymous);
        return EXIT_SUCCESS;
}
