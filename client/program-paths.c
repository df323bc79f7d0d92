/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "program-paths.h"

static const struct {
        const char *env;                /* overrides the rest */
        const char *in_build_tree;      /* relative to the build directory */
        const char *installed;
} programs[_PROGRAM_PATH_MAX] = {
        [PROGRAM_MEMSTRACKD] = { "MEMSTRACKD", "daemon/memstrackd", MEMSTRACKD_PATH },
        [PROGRAM_HEAP_LIBRARY] = { "MEMSTRACK_HEAP_LIBRARY", "heap/libmemstrack-heap.so", MEMSTRACK_HEAP_LIBRARY },
};

/* The build directory memstrackctl runs from, if it does: its executable is client/memstrackctl of a
 * directory that holds build.ninja. NULL otherwise (an installed memstrackctl). */
static char *build_directory(void) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        struct stat st;

        if (n <= 0 || (size_t) n >= sizeof(exe) - 1)
                return NULL;
        exe[n] = '\0';
        /* dirname() twice: .../BUILD/client/memstrackctl -> .../BUILD */
        char *client = dirname(exe);
        if (strcmp(strrchr(client, '/') ? strrchr(client, '/') + 1 : client, "client") != 0)
                return NULL;
        char *root = strdup(dirname(client));
        char *ninja = NULL;
        if (!root || asprintf(&ninja, "%s/build.ninja", root) < 0) {
                free(root);
                return NULL;
        }
        bool found = stat(ninja, &st) == 0 && S_ISREG(st.st_mode);
        free(ninja);
        if (!found) {
                free(root);
                return NULL;
        }
        return root;
}

int program_path(ProgramPath which, char **ret, ProgramOrigin *ret_origin) {
        const char *env = getenv(programs[which].env);
        char *path = NULL;

        if (env && *env) {
                *ret_origin = PROGRAM_ENVIRONMENT;
                path = strdup(env);
        } else {
                _cleanup_free_ char *root = build_directory();
                if (root) {
                        *ret_origin = PROGRAM_BUILD_TREE;
                        if (asprintf(&path, "%s/%s", root, programs[which].in_build_tree) < 0)
                                path = NULL;
                } else {
                        *ret_origin = PROGRAM_INSTALLED;
                        path = strdup(programs[which].installed);
                }
        }
        if (!path)
                return -ENOMEM;
        *ret = path;
        return 0;
}

const char *program_origin_to_string(ProgramPath which, ProgramOrigin origin) {
        switch (origin) {
        case PROGRAM_ENVIRONMENT:
                return which == PROGRAM_MEMSTRACKD ? "from $MEMSTRACKD" : "from $MEMSTRACK_HEAP_LIBRARY";
        case PROGRAM_BUILD_TREE:
                return "this build tree's";
        default:
                return "installed";
        }
}
