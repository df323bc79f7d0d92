/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Ksym: kernel address -> symbol+offset and module, from /proc/kallsyms (or a file in its format).
 *
 * Text symbols only, sorted by address; lookups are a binary search. Lines tagged "[name]" belong to a
 * module; the kernel's own pseudo-modules ("[bpf]", "[__builtin__ftrace]", ...) are kept for display but
 * are not modules pages can be charged to. When kptr_restrict hides addresses (every address reads 0),
 * loading succeeds, ksym_addresses_hidden() says so and lookups fail: callers keep raw addresses.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Ksym Ksym;

typedef struct KsymResult {
        const char *name;       /* borrowed from the Ksym */
        uint64_t offset;        /* address - symbol start */
        const char *module;     /* borrowed; NULL for the kernel image */
        bool real_module;       /* module is a loadable module (not bpf/ftrace/kprobe pseudo-modules) */
} KsymResult;

/* Loads path, or /proc/kallsyms when path is NULL. -errno on failure (-ENOENT, -EACCES, -ENOMEM, -EBADMSG
 * if the file has no parsable line, -EBADFD if it is not a regular file). */
int ksym_load(const char *path, Ksym **ret);
/* The same from text in that format: the table an event source made for its frames
 * (EventSourceOps.symbols), whose addresses are synthetic (ksym_addresses_synthetic()). Empty text is
 * an empty table. */
int ksym_load_text(const char *text, Ksym **ret);
Ksym *ksym_free(Ksym *k);

/* The symbol containing addr: the nearest start at or below it. False if none or addresses are hidden. */
bool ksym_lookup(const Ksym *k, uint64_t addr, KsymResult *ret);

bool ksym_addresses_hidden(const Ksym *k);
/* Whether the table came from ksym_load_text(): addresses a source made up to name its frames, which
 * mean nothing outside this table and are not shown to anyone. */
bool ksym_addresses_synthetic(const Ksym *k);
size_t ksym_count(const Ksym *k);
size_t ksym_memory_bytes(const Ksym *k);

/* Looks a symbol up by name (linear; for tests and rare start-up checks). Returns 0 if absent. */
uint64_t ksym_address_of(const Ksym *k, const char *name);

/*
 * The name index, for stacks that arrive as text (page_owner dumps, ftrace): built on the first call, a
 * sorted array of 4 bytes per symbol, so each lookup is a binary search. A reload makes a new Ksym and with
 * it a new index. Takes a non-const Ksym because the first call builds the index.
 */

/* Looks up the text symbol name in module (NULL or "" for the kernel image). Aliases at one address count
 * as one symbol. 0 and *ret_address (may be NULL) on success; -ENOENT if there is none, -ENOTUNIQ if several
 * symbols there have that name (static functions), -EADDRNOTAVAIL if addresses are hidden, -ENOMEM. */
int ksym_lookup_name(Ksym *k, const char *name, const char *module, uint64_t *ret_address);

/* Parses one frame as the kernel prints it with %pS/%pSb, "func+0xoff/0xsize [module]" ("+0xoff", "/0xsize"
 * and " [module]" optional; surrounding blanks ignored; "0xaddr" is taken as the address itself), into the
 * address it names. When several static functions share the name, the one whose extent (distance to the
 * next symbol) equals the stated size is chosen. Returns 0 and *ret_address (may be NULL); -EINVAL if the
 * text is not a frame, -ERANGE if the offset is at or past the stated size or past the symbol in this table
 * (the text came from another kernel), or ksym_lookup_name()'s errors. */
int ksym_parse_frame(Ksym *k, const char *text, uint64_t *ret_address);

/* "name+0xoff [module]" or "0xaddr", as long as the name is: a new string, NULL on OOM. */
char *ksym_format(const Ksym *k, uint64_t addr);
