/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "proc-seed.h"
#include "read-file.h"
#include "time-util.h"

#define COMM_MAX 64u                    /* TASK_COMM_LEN is 16; /proc/PID/comm adds a newline */
#define STATM_MAX (7u * 21u + 1u)       /* seven decimal u64s and separators */
#define STAT_MAX 1024u                  /* /proc/PID/stat: 52 fields after a comm of up to 64 bytes */

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* <proc>/PID/FILE into path (PATH_MAX bytes); false if it does not fit. */
static bool proc_path(char *path, const char *proc, long pid, const char *file) {
        int n = snprintf(path, PATH_MAX, "%s/%ld/%s", proc, pid, file);

        return n > 0 && n < PATH_MAX;
}

const char *proc_read_cmdline(const char *proc, int32_t pid, char *buf, size_t size) {
        char path[PATH_MAX];
        ssize_t n;

        assert(proc);
        assert(buf);
        assert(size > 0);

        if (!proc_path(path, proc, pid, "cmdline"))
                return NULL;
        n = read_file_small(path, buf, size);
        if (n <= 0)
                return NULL;
        while (n > 0 && buf[n - 1] == '\0')
                n--;
        for (ssize_t i = 0; i < n; i++)
                if (buf[i] == '\0')
                        buf[i] = ' ';
        buf[n] = '\0';
        return n > 0 ? buf : NULL;
}

void proc_read_comm(const char *proc, int32_t pid, char comm[static 16]) {
        char path[PATH_MAX], buf[16];
        ssize_t n;

        assert(proc);
        comm[0] = '\0';
        if (!proc_path(path, proc, pid, "comm"))
                return;
        n = read_file_small(path, buf, sizeof(buf));
        if (n <= 0)
                return;
        buf[strcspn(buf, "\n")] = '\0';
        memcpy(comm, buf, sizeof(buf));
}

/* The inode of the initial PID namespace (PROC_PID_INIT_INO in the kernel): the same on every boot. */
#define PID_NS_INIT_INO UINT64_C(0xeffffffc)

int proc_pid_namespace(uint64_t *ret_dev, uint64_t *ret_ino, bool *ret_initial) {
        struct stat st;

        if (stat("/proc/self/ns/pid", &st) < 0)
                return -errno;
        if (ret_dev)
                *ret_dev = (uint64_t) st.st_dev;
        if (ret_ino)
                *ret_ino = (uint64_t) st.st_ino;
        if (ret_initial)
                *ret_initial = (uint64_t) st.st_ino == PID_NS_INIT_INO;
        return 0;
}

/* From <proc>/PID/stat ("PID (COMM) STATE PPID ..."; the comm may hold spaces and parentheses): the state
 * letter and the parent's pid. False if it cannot be read (the task is gone). */
static bool proc_read_stat(const char *proc, long pid, char *ret_state, int32_t *ret_parent_pid) {
        char path[PATH_MAX], stat[STAT_MAX];
        long parent;

        if (!proc_path(path, proc, pid, "stat") || read_file_small(path, stat, sizeof(stat)) < 0)
                return false;
        const char *paren = strrchr(stat, ')');
        if (!paren || paren[1] != ' ' || !paren[2] || sscanf(paren + 3, " %ld", &parent) != 1 || parent < 0 ||
            parent > INT32_MAX)
                return false;
        *ret_state = paren[2];
        *ret_parent_pid = (int32_t) parent;
        return true;
}

uint64_t proc_seed_tasks(const char *proc, pid_t self, const MsEventSink *sink) {
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_free_ char *cmdline = NULL;
        uint64_t n = 0;
        struct dirent *de;

        assert(proc);
        assert(sink && sink->event);

        cmdline = malloc(PROC_CMDLINE_MAX);
        if (!cmdline) {
                log_oom();
                return 0;
        }
        d = opendir(proc);
        if (!d) {
                log_warning_errno(errno, "Failed to open %s, tasks alive before tracing stay unnamed: %m", proc);
                return 0;
        }
        while ((de = readdir(d))) {
                char path[PATH_MAX], comm[COMM_MAX], statm[STATM_MAX];
                unsigned long long size_pages, resident_pages;
                MsEvent ev;
                char *end;
                long pid;
                ssize_t k;

                errno = 0;
                pid = strtol(de->d_name, &end, 10);
                if (errno != 0 || end == de->d_name || *end != '\0' || pid <= 0 || pid > INT32_MAX)
                        continue;
                if (pid == self)
                        continue;

                /* A task that exits meanwhile is skipped: its EXIT record follows in the ring. */
                if (!proc_path(path, proc, pid, "comm"))
                        continue;
                k = read_file_small(path, comm, sizeof(comm));
                if (k < 0)
                        continue;
                if (k > 0 && comm[k - 1] == '\n')
                        comm[k - 1] = '\0';

                if (!proc_path(path, proc, pid, "statm") || read_file_small(path, statm, sizeof(statm)) < 0 ||
                    sscanf(statm, "%llu %llu", &size_pages, &resident_pages) != 2)
                        resident_pages = 0;
                /* A task that has exited and only waits to be reaped (a zombie, state Z, or X): its exit
                 * came before tracing began, so it would stay alive in the accounting for good. A zombie
                 * leader whose threads still run keeps its memory (statm counts it), and is seeded. */
                char state = 'R';
                int32_t parent_pid = 0;
                if (!proc_read_stat(proc, pid, &state, &parent_pid))
                        parent_pid = 0;
                if (resident_pages == 0 && (state == 'Z' || state == 'X'))
                        continue;

                ev = (MsEvent) {
                        .type = MS_EVENT_TASK_NEW,
                        .pid = (int32_t) pid,
                        .tid = (int32_t) pid,
                        .timestamp_nsec = now_nsec(CLOCK_MONOTONIC),
                        .task = {
                                .name = comm,
                                .cmdline = proc_read_cmdline(proc, (int32_t) pid, cmdline, PROC_CMDLINE_MAX),
                                .baseline_pages = resident_pages,
                                .parent_pid = parent_pid,
                        },
                };
                sink->event(sink->userdata, &ev);
                n++;
        }
        log_debug("Seeded %" PRIu64 " tasks from %s.", n, proc);
        return n;
}
