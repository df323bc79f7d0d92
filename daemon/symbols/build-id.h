/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The GNU build IDs of the running kernel and its modules, as their ELF notes say them: what a profile's
 * mappings carry so that a server (Parca, Pyroscope, a debuginfod) can find the right vmlinux and .ko
 * files. Read from sysfs, whose notes the kernel keeps in memory: nothing is opened on disk.
 */

#include <stddef.h>
#include <stdint.h>

/* The longest build ID kept: 20 bytes (SHA-1) is what linkers write, some write up to 32. */
#define BUILD_ID_SIZE_MAX 64u

/* The build ID of the first NT_GNU_BUILD_ID note in an ELF note section's bytes (notes of the machine's
 * byte order), into id (BUILD_ID_SIZE_MAX bytes). Returns its size, -ENOENT if the notes have none,
 * -EBADMSG if they are malformed. */
int build_id_from_notes(const uint8_t *notes, size_t size, uint8_t *id);

/* The build ID of the kernel image (module NULL or "vmlinux": /sys/kernel/notes) or of a loaded module
 * (/sys/module/NAME/notes/.note.gnu.build-id), as lowercase hex in *ret (the caller frees). -ENOENT when
 * it has none or is not loaded, -EINVAL for a name that is no module's, -errno of the read. */
int kernel_build_id(const char *module, char **ret);
