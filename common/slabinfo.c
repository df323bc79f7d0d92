/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slabinfo.h"

uint64_t slab_cache_pages(const SlabCache *c) {
        return c->slabs * c->pages_per_slab;
}

SlabInfo *slabinfo_free(SlabInfo *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_caches; i++)
                free(s->caches[i].name);
        free(s->caches);
        free(s);
        return NULL;
}

/*
 * One cache line: "NAME ACTIVE NUM OBJSIZE OBJPERSLAB PAGESPERSLAB : tunables L B S : slabdata ACTIVE
 * NUM SHARED", maybe followed by the statistics columns. 0, or -EBADMSG when it does not read so.
 */
static int parse_cache(const char *line, SlabCache *ret) {
        const char *slabdata = strstr(line, ": slabdata ");
        uint64_t v[5], active_slabs, slabs;
        int name_end = 0;

        if (!slabdata)
                return -EBADMSG;
        if (sscanf(line, "%*s%n %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " :",
                   &name_end, &v[0], &v[1], &v[2], &v[3], &v[4]) != 5 || name_end <= 0)
                return -EBADMSG;
        if (sscanf(slabdata, ": slabdata %" SCNu64 " %" SCNu64, &active_slabs, &slabs) != 2)
                return -EBADMSG;
        /* A count this big is a garbled line, and would overflow the page sums. */
        if (slabs > UINT32_MAX || v[4] > UINT32_MAX)
                return -EBADMSG;

        size_t skip = strspn(line, " \t");
        ret->name = strndup(line + skip, (size_t) name_end - skip);
        if (!ret->name)
                return -ENOMEM;
        ret->active_objects = v[0];
        ret->objects = v[1];
        ret->object_size = v[2];
        ret->objects_per_slab = v[3];
        ret->pages_per_slab = v[4];
        ret->active_slabs = active_slabs;
        ret->slabs = slabs;
        return 0;
}

int slabinfo_read(const char *path, SlabInfo **ret) {
        _cleanup_(slabinfo_freep) SlabInfo *s = calloc(1, sizeof(SlabInfo));
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0, allocated = 0;
        unsigned number = 0;
        ssize_t n;
        int r;

        assert(path);
        assert(ret);

        if (!s)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        errno = 0;
        while ((n = getline(&line, &size, f)) >= 0) {
                number++;
                if (n > 0 && line[n - 1] == '\n')
                        line[n - 1] = '\0';
                if (number == 1) {
                        if (strncmp(line, "slabinfo - version: 2.", strlen("slabinfo - version: 2.")) != 0)
                                return -EBADMSG;
                        continue;
                }
                if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
                        continue;       /* the column header */

                if (greedy_realloc(&s->caches, &allocated, s->n_caches + 1, sizeof(SlabCache), 64) < 0)
                        return -ENOMEM;
                SlabCache *c = &s->caches[s->n_caches];
                *c = (SlabCache) { .index = s->n_caches };
                r = parse_cache(line, c);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (s->n_bad_lines++ == 0)
                                s->first_bad_line = number;
                        continue;
                }
                s->n_caches++;
        }
        if (ferror(f))
                return errno > 0 ? -errno : -EIO;
        if (number == 0)
                return -EBADMSG;        /* empty: not slabinfo either */
        *ret = TAKE_PTR(s);
        return 0;
}
