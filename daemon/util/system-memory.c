/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "read-file.h"
#include "system-memory.h"

/* /proc/iomem has a line per range; a large machine's runs to some hundred kB. */
#define IOMEM_MAX (4u << 20)

/* The kB value of the meminfo line "KEY:   N kB", or -1 when text has no such line. */
static int64_t meminfo_kib(const char *text, const char *key) {
        size_t n = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                if (strncmp(line, key, n) != 0 || line[n] != ':')
                        continue;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(line + n + 1, &end, 10);
                if (errno != 0 || end == line + n + 1 || v > INT64_MAX / 1024)
                        return -1;
                return (int64_t) v;
        }
        return -1;
}

int system_memory_parse_meminfo(const char *text, SystemMemory *ret) {
        int64_t total = meminfo_kib(text, "MemTotal"), free = meminfo_kib(text, "MemFree"),
                available = meminfo_kib(text, "MemAvailable");

        if (total < 0 || free < 0)
                return -EINVAL;
        ret->total_bytes = (uint64_t) total * 1024;
        ret->free_bytes = (uint64_t) free * 1024;
        /* Kernels before 3.14 have no MemAvailable. */
        ret->available_bytes = (uint64_t) (available >= 0 ? available : free) * 1024;
        ret->known = true;
        return 0;
}

uint64_t system_memory_parse_iomem(const char *text) {
        uint64_t sum = 0;

        for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                unsigned long long start, end;
                int name_at = 0;
                /* Top-level ranges only: nested ones ("  00100000-... : Kernel code") start with spaces. */
                if (*line == ' ' || sscanf(line, "%llx-%llx : %n", &start, &end, &name_at) != 2 || name_at == 0)
                        continue;
                const char *name = line + name_at;
                if (strncmp(name, "System RAM", 10) != 0 || (name[10] != '\n' && name[10] != '\0'))
                        continue;
                if (end >= start)
                        sum += end - start + 1;
        }
        /* Without CAP_SYS_ADMIN every range reads 00000000-00000000: one byte each, no real figure. */
        return sum < 1024u * 1024u ? 0 : sum;
}

void system_memory_read(const char *proc_root, SystemMemory *ret) {
        char path[256], buf[8192];
        const char *root = proc_root ?: "/proc";

        *ret = (SystemMemory) {};
        snprintf(path, sizeof(path), "%s/meminfo", root);
        if (read_file_small(path, buf, sizeof(buf)) >= 0)
                (void) system_memory_parse_meminfo(buf, ret);
        _cleanup_free_ char *iomem = NULL;
        size_t size;
        snprintf(path, sizeof(path), "%s/iomem", root);
        if (read_file_full(path, IOMEM_MAX, &iomem, &size) >= 0)
                ret->system_ram_bytes = system_memory_parse_iomem(iomem);
        snprintf(path, sizeof(path), "%s/vmcore", root);
        ret->capture_kernel = access(path, F_OK) == 0;
}
