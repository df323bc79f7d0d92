/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * KeyCalibration: the constant between an event source's page keys and page frame numbers, for a source
 * whose keys are not pfns (the eBPF source keys a page by its struct page's index: the pfn plus a constant
 * of the kernel's memory layout, which userspace is not told). An access source speaks pfns, so the keys
 * must be translated: a child process touches KEY_CALIBRATION_PAGES pages of its own, reads their pfns in
 * /proc/self/pagemap (root only) and hands them over a pipe; the allocations of that child the source
 * delivers carry their keys, and the one constant that maps every pfn to a key of the child's is it.
 * Nothing of the kernel is read but the child's own page map.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "macro.h"

#define KEY_CALIBRATION_PAGES 8
#define KEY_CALIBRATION_KEYS_MAX 512

typedef struct KeyCalibration KeyCalibration;

/* Forks the child. -errno. */
int key_calibration_start(KeyCalibration **ret);
/* Kills the child if it still runs, and reaps it. */
KeyCalibration *key_calibration_free(KeyCalibration *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(KeyCalibration *, key_calibration_free);

/* The child, to watch its allocations for. */
pid_t key_calibration_pid(const KeyCalibration *k);
/* An allocation event: kept if it is the child's. */
void key_calibration_event(KeyCalibration *k, const MsEvent *e);
/* 1 with the constant in *ret_offset (key = pfn + offset, modulo 2^MS_PAGE_KEY_BITS), 0 not yet known,
 * -ENODATA the child could not read its pfns (not root), -ENOTUNIQ more than one constant fits (start
 * another). */
int key_calibration_result(KeyCalibration *k, uint64_t *ret_offset);

/* The matching alone: the one offset (modulo 2^MS_PAGE_KEY_BITS) that maps every pfn onto one of keys. 1
 * with it, 0 none fits, -ENOTUNIQ more than one does. */
int key_calibration_match(const uint64_t *pfns, size_t n_pfns, const uint64_t *keys, size_t n_keys,
                uint64_t *ret_offset);
