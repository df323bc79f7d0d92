/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A StackTree reply as a pprof profile (profile.proto, package perftools.profiles), the format of
 * `go tool pprof`, Parca and Grafana Pyroscope. Nothing here talks to the daemon: pprof-verb.c fetches
 * the tree (or reads it from a snapshot file) and hands it over.
 *
 * The profile holds what is held now, as a Go heap profile's "inuse" values do:
 *   sample types  inuse_objects/count = pages, inuse_space/bytes = pages x page size
 *                 (no alloc_* types: StackTree sends no allocation counts; memstrack-metrics'
 *                 /debug/pprof/allocs has them)
 *   samples       one per tree node holding pages of its own (its current pages not held by the
 *                 children the daemon sent), its call stack leaf first, without the tree's root;
 *                 pages of the root itself get a one-frame sample named after the root ("[all]")
 *   locations     one per distinct frame ("function+0xoffset" and its module), one Line each
 *   functions     one per function name and module, the offset dropped
 *   mappings      one per module: "vmlinux" for the kernel image, kernel modules and user ELF files
 *                 by name; synthetic frames ("[pid N comm]", "[not sampled]", "[truncated]") and raw
 *                 user addresses ("[user] 0x...") have none. Every mapping has_functions, so readers
 *                 do not try to symbolize the addresses again.
 */

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct PprofSource {
        const json_t *tree;             /* a StackTree reply (root, totalPages, stackSampleInterval) */
        uint64_t page_size;             /* bytes per page, not 0 */
        int64_t sample_interval;        /* stackSampleInterval; -1: take it from tree, else unknown */
        int64_t time_nanos;             /* when the tree was taken, ns since the epoch; 0: unknown */
        const char *scope;              /* what the tree covers, for a comment ("task 4242"); NULL: all */
        const char *generator;          /* for a comment ("memstrackctl 0.1.0"); NULL: none */
        /* The tree is a recorded user-space heap at its maximum (report_doc_heap_tree()): inuse_objects
         * counts its blocks (currentBlocks), inuse_space its bytes (currentPages); page_size is 1. */
        bool heap;
} PprofSource;

/* A profile's numbers as pprof_encode() wrote them, for the caller's summary line. */
typedef struct PprofStats {
        uint64_t pages;                 /* sum of inuse_objects over all samples */
        size_t n_samples, n_locations, n_functions, n_mappings, n_strings;
} PprofStats;

/* Encodes s as an uncompressed profile.proto message in *ret (malloc'd, the caller frees), *ret_size
 * bytes, and fills *ret_stats if not NULL. -EINVAL if s->tree has no root, -ENOMEM. */
int pprof_encode(const PprofSource *s, uint8_t **ret, size_t *ret_size, PprofStats *ret_stats);

/* Writes data gzip-compressed (as pprof files are) to path, replacing it. -errno. */
int pprof_write_gzip(const uint8_t *data, size_t size, const char *path);
