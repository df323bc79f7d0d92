/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PprofBuilder: a pprof profile (profile.proto, package perftools.profiles: what go tool pprof, Parca and
 * Grafana Pyroscope read) put together sample by sample. memstrackctl pprof fills one from a StackTree
 * reply, memstrack-metrics from a Profile or Heap reply; neither JSON nor the daemon is known here.
 *
 * What a profile shares is interned: strings, mappings (by side and name), functions (by mapping and
 * name, the frame's "+0x..." offset dropped), locations (by mapping and frame text). Samples of the same
 * stack and labels are one sample whose values add up, so a delta of two profiles is the first added
 * with scale -1 and the second with 1; pprof_builder_encode() leaves out samples whose values all came
 * to 0, as pprof's own merge does.
 *
 * Frames arrive named (a kernel symbol, a user ELF symbol): every mapping says has_functions, so readers
 * show the names and never try to symbolize the addresses again.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Sample types a profile has at most: Go's heap profiles have four. */
#define PPROF_VALUES_MAX 4

typedef struct PprofBuilder PprofBuilder;

typedef struct PprofValueType {
        const char *type;               /* "inuse_space" */
        const char *unit;               /* "bytes" */
} PprofValueType;

typedef struct PprofMapping {
        const char *file;               /* the file name readers show ("vmlinux", "/usr/lib/.../libc.so.6") */
        const char *build_id;           /* lowercase hex; NULL: unknown */
        uint64_t start, limit, offset;  /* where it was mapped and from which file offset; 0: unknown */
} PprofMapping;

typedef struct PprofLabel {
        const char *key;
        const char *value;
} PprofLabel;

typedef struct PprofBuilderStats {
        size_t n_samples, n_locations, n_functions, n_mappings, n_strings;
} PprofBuilderStats;

/*
 * A new profile with n_types sample types (1 .. PPROF_VALUES_MAX), each sample's values in that order.
 * default_type names the one readers show first; NULL leaves it unset (readers take the last), as Go's
 * heap profile does. -EINVAL, -ENOMEM.
 */
int pprof_builder_new(const PprofValueType *types, size_t n_types, const char *default_type, PprofBuilder **ret);
PprofBuilder *pprof_builder_free(PprofBuilder *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(PprofBuilder *, pprof_builder_free);

/* The kind of events between two sampled ones and how many ("space", "bytes", 524288). -ENOMEM. */
int pprof_builder_set_period(PprofBuilder *b, const char *type, const char *unit, int64_t period);
/* When the profile was taken (ns since the epoch) and, for a delta, over how long. */
void pprof_builder_set_time(PprofBuilder *b, int64_t time_nanos, int64_t duration_nanos);
/* A line go tool pprof -comments shows. -ENOMEM. */
int pprof_builder_comment(PprofBuilder *b, const char *format, ...) _printf_(2, 3);

/*
 * The id of the mapping named name on the kernel or the user side (a kernel module and a user file may
 * share a name), made from m the first time (m NULL: only the name as its file); later calls return it
 * as it is. The first mapping made is the main binary to readers. -ENOMEM.
 */
int pprof_builder_mapping(PprofBuilder *b, bool user, const char *name, const PprofMapping *m, uint64_t *ret_id);

/* The id of the location of frame (its text as the daemon names it) in mapping (0: none), with its
 * address (0: unknown) the first time. -ENOMEM. */
int pprof_builder_location(PprofBuilder *b, uint64_t mapping, const char *frame, uint64_t address, uint64_t *ret_id);

/* The mapping of the kernel image; kernel modules and user files go by their own names. */
#define PPROF_KERNEL_MAPPING "vmlinux"

/*
 * The location of a frame as the daemon names it (StackNode, ProfileFrame, HeapNode): frame is its text
 * ("function+0xoffset", "[user] 0x7f...", or a synthetic "[...]" such as "[not sampled]"), module its
 * kernel module or, for a user frame (user), its ELF file's name; NULL for a kernel frame is the kernel
 * image (PPROF_KERNEL_MAPPING). address is the hex text the daemon sent root ("0xffffffff81234567"),
 * NULL when it sent none. Synthetic frames and unnamed user addresses have no mapping; a mapping made
 * before with pprof_builder_mapping() (build ID, addresses) is the one the frame gets. -ENOMEM.
 */
int pprof_builder_frame(PprofBuilder *b, const char *frame, const char *module, bool user, const char *address,
                uint64_t *ret_id);

/*
 * Adds values (one per sample type) to the sample of the stack (location ids, innermost first; n may be
 * 0) with these labels, times scale (1, or -1 for the older profile of a delta). Values add up with
 * saturation at INT64_MAX and INT64_MIN. -ENOMEM.
 */
int pprof_builder_add(PprofBuilder *b, const uint64_t *locations, size_t n, const int64_t *values,
                const PprofLabel *labels, size_t n_labels, int scale);

/*
 * The profile as an uncompressed profile.proto message in *ret (malloc'd, the caller frees), *ret_size
 * bytes, leaving out samples whose values are all 0; *ret_stats (if not NULL) counts what it holds. Call
 * it once: it drops those samples from the builder. -ENOMEM, -EIO.
 */
int pprof_builder_encode(PprofBuilder *b, uint8_t **ret, size_t *ret_size, PprofBuilderStats *ret_stats);

/* data as one gzip member in *ret (malloc'd), as pprof files and /debug/pprof replies are. -ENOMEM,
 * -EFBIG (over 4 GiB), -EIO. */
int pprof_gzip(const uint8_t *data, size_t size, uint8_t **ret, size_t *ret_size);
