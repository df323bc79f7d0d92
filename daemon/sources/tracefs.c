/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "log.h"
#include "macro.h"
#include "read-file.h"
#include "tracefs.h"

static bool is_dir(const char *path) {
        struct stat st;

        return stat(path, &st) >= 0 && S_ISDIR(st.st_mode);
}

static int strdup_to(const char *s, char **ret) {
        char *copy = strdup(s);

        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

int tracefs_find(char **ret_path) {
        _cleanup_free_ char *tracefs = NULL, *debugfs = NULL;
        struct mntent *m;
        FILE *f;
        int r;

        assert(ret_path);

        f = setmntent("/proc/mounts", "re");
        if (!f)
                return negative_errno();
        while ((m = getmntent(f))) {
                if (streq(m->mnt_type, "tracefs")) {
                        /* The canonical place wins over wherever else it is mounted too. */
                        if (!tracefs || streq(m->mnt_dir, TRACEFS_DEFAULT)) {
                                free(tracefs);
                                tracefs = strdup(m->mnt_dir);
                                if (!tracefs)
                                        break;
                        }
                } else if (streq(m->mnt_type, "debugfs") && !debugfs) {
                        debugfs = strdup(m->mnt_dir);
                        if (!debugfs)
                                break;
                }
        }
        (void) endmntent(f);
        if (m)
                return -ENOMEM;

        if (tracefs)
                return strdup_to(tracefs, ret_path);

        /* Older systems only mount debugfs; it mounts tracefs below itself when it is accessed. */
        if (debugfs) {
                _cleanup_free_ char *p = NULL, *events = NULL;

                if (asprintf(&p, "%s/tracing", debugfs) < 0)
                        return -ENOMEM;
                if (asprintf(&events, "%s/events", p) < 0)
                        return -ENOMEM;
                if (is_dir(events)) {
                        *ret_path = TAKE_PTR(p);
                        return 0;
                }
        }

        if (mount("nodev", TRACEFS_DEFAULT, "tracefs", 0, NULL) < 0) {
                r = negative_errno();
                log_debug_errno(r, "Failed to mount tracefs at " TRACEFS_DEFAULT ": %m");
                /* No mount point or no such file system type: tracefs is simply not there. */
                return r == -ENOENT || r == -ENODEV ? -ENOENT : r;
        }
        r = strdup_to(TRACEFS_DEFAULT, ret_path);
        if (r < 0)
                return r;
        return 1;
}

int tracefs_lockdown_check(const char *path, const char **ret_reason) {
        char buf[128];

        assert(ret_reason);
        if (read_file_small(path ?: LOCKDOWN_FILE_DEFAULT, buf, sizeof(buf)) < 0 || !strstr(buf, "[confidentiality]"))
                return 0;
        *ret_reason = "the kernel is locked down in confidentiality mode (/sys/kernel/security/lockdown), which "
                      "closes tracefs, perf's kernel data and BPF's reads of kernel memory to every tracer";
        return -EPERM;
}
