/* SPDX-License-Identifier: MIT */

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-id.h"
#include "macro.h"
#include "read-file.h"

/* The note sections of the kernel and of a module are a few hundred bytes. */
#define NOTES_SIZE_MAX (64u * 1024u)

static size_t align4(size_t n) {
        return (n + 3) & ~(size_t) 3;
}

int build_id_from_notes(const uint8_t *notes, size_t size, uint8_t *id) {
        size_t at = 0;

        /* Elf32_Nhdr and Elf64_Nhdr are the same: three 32-bit words, name and descriptor 4-aligned. */
        while (size - at >= sizeof(Elf64_Nhdr)) {
                Elf64_Nhdr h;
                memcpy(&h, notes + at, sizeof(h));
                at += sizeof(h);
                if (h.n_namesz > size - at || align4(h.n_namesz) > size - at)
                        return -EBADMSG;
                const uint8_t *name = notes + at;
                at += align4(h.n_namesz);
                if (h.n_descsz > size - at)
                        return -EBADMSG;
                const uint8_t *desc = notes + at;
                at += MIN(align4(h.n_descsz), size - at);
                if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                    h.n_descsz > 0 && h.n_descsz <= BUILD_ID_SIZE_MAX) {
                        memcpy(id, desc, h.n_descsz);
                        return (int) h.n_descsz;
                }
        }
        return -ENOENT;
}

/* A module's name as sysfs has it: letters, digits, '_' and '-', nothing that leaves the directory. */
static bool module_name_valid(const char *m) {
        if (!m[0] || strlen(m) > 64)
                return false;
        for (const char *p = m; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_' || *p == '-'))
                        return false;
        return true;
}

int kernel_build_id(const char *module, char **ret) {
        _cleanup_free_ char *path = NULL, *notes = NULL, *hex = NULL;
        uint8_t id[BUILD_ID_SIZE_MAX];
        size_t size;
        int n, r;

        if (!module || streq(module, "vmlinux"))
                path = strdup("/sys/kernel/notes");
        else if (!module_name_valid(module))
                return -EINVAL;
        else if (asprintf(&path, "/sys/module/%s/notes/.note.gnu.build-id", module) < 0)
                path = NULL;
        if (!path)
                return -ENOMEM;
        /* sysfs says 4096 bytes for any attribute; the read says how many there are. */
        r = read_file_full(path, NOTES_SIZE_MAX, &notes, &size);
        if (r == -EBADFD)
                r = -ENOENT;
        if (r < 0)
                return r;
        n = build_id_from_notes((const uint8_t *) notes, size, id);
        if (n < 0)
                return n;
        hex = malloc(2 * (size_t) n + 1);
        if (!hex)
                return -ENOMEM;
        for (int i = 0; i < n; i++)
                (void) snprintf(hex + 2 * i, 3, "%02x", id[i]);
        *ret = TAKE_PTR(hex);
        return 0;
}
