/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The boot phase: the snapshot document an initramfs memstrackd left in /run (the dracut module writes
 * it at pre-pivot), taken over by the real root's memstrackd at start and served by BootPhase, so the
 * boot's story from the initramfs on is one query away, beside the running system.
 */

#include <stdbool.h>

#include <jansson.h>

/* Where the dracut module leaves it; /run goes along into the real root. */
#define BOOT_PHASE_PATH_DEFAULT "/run/memstrack/initramfs.snapshot"
/* A reply may be at most 16 MiB (the server's max_message_bytes): a bigger document could not be sent. */
#define BOOT_PHASE_BYTES_MAX (15u * 1024u * 1024u)

/* Reads and checks the document at path. 0 with *ret NULL when there is none (missing file), 0 with the
 * document, or -errno having logged why it is not used (unreadable, too big, not a snapshot document). */
int boot_phase_load(const char *path, json_t **ret);

/* The document as a caller may see it: raw addresses only for root, as in every stack reply (the
 * document was written by root in the initramfs). New reference, NULL on OOM. */
json_t *boot_phase_for_caller(json_t *doc, bool peer_is_root);
