/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * UserSymbols: user-space address of a live process -> symbol+offset and the ELF file it is in, read
 * from the files mapped into the process (/proc/PID/maps). The only module that knows libdwfl/libelf.
 *
 * Symbols come from each mapped file's own .symtab, else its .dynsym (and an embedded .gnu_debugdata
 * table): no separate debuginfo is looked for, on disk or on the network. Files are opened through
 * /proc/PID/root, so a process in a container or chroot is symbolized with its own files.
 *
 * One libdwfl session per process, in a least-recently-used cache of at most max_processes. A session
 * is checked to still belong to the process image it was made for whenever it is handed out
 * (usym_process()): the start time tells a reused pid apart, the executable and the code and stack
 * addresses an exec. An address outside every known mapping re-reads the maps (at most once a second
 * per process), for libraries loaded later. Answers are memoized per session, so a stack tree's
 * repeated frames cost one hash probe after the first (a symbol search in libc takes ~50 us).
 *
 * Anything that stops a lookup makes it fail, never the caller: the process gone, /proc/PID/maps not
 * readable (another user's process without CAP_SYS_PTRACE), a deleted or replaced file, anonymous or
 * JIT code, the vDSO (reading it would mean reading the process's memory), a stripped file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USYM_MAX_PROCESSES_DEFAULT 64

typedef struct UserSymbols UserSymbols;
/* One process's session, owned by its UserSymbols. */
typedef struct UsymProcess UsymProcess;

typedef struct UsymResult {
        const char *name;       /* the ELF symbol, e.g. "malloc" */
        uint64_t offset;        /* address - symbol start */
        const char *object;     /* basename of the mapped ELF file, e.g. "libc.so.6" */
} UsymResult;

/* max_processes >= 1. Returns NULL on OOM. */
UserSymbols *usym_new(size_t max_processes);
UserSymbols *usym_free(UserSymbols *u);

/*
 * The session of process pid (a thread group id), checked against the running image, or a new one.
 * NULL if the process is gone or cannot be identified (or on OOM). Borrowed: valid until the next
 * usym_process(), usym_lookup() or usym_forget() on u. For many addresses of one process, take the
 * session once and use usym_process_lookup(): the check costs two /proc reads.
 */
UsymProcess *usym_process(UserSymbols *u, pid_t pid);

/*
 * Symbolizes ip in the session's process. False if it cannot be: see the top of this file. The strings
 * in *ret are borrowed, valid until the next call on the UserSymbols.
 */
bool usym_process_lookup(UsymProcess *p, uint64_t ip, UsymResult *ret);

/* usym_process() and usym_process_lookup() in one: for a single address. */
bool usym_lookup(UserSymbols *u, pid_t pid, uint64_t ip, UsymResult *ret);

/* Drops what is cached for pid (after it exited or exec'd). Cheap when pid is not cached. */
void usym_forget(UserSymbols *u, pid_t pid);

/*
 * Sessions of a process image known by its /proc/PID/maps text, as it was saved while the process ran:
 * symbolized whether it still runs or not (a heap after its process exited). Files are opened by the path
 * the maps name, as this process sees it. Besides the symbol table these read DWARF, from the file itself
 * or a separate debug file under /usr/lib/debug (by build ID or .gnu_debuglink; never over the network),
 * for the source line and the functions inlined at an address.
 */
typedef struct UsymImage UsymImage;

#define USYM_INLINE_MAX 8

typedef struct UsymSourceFrame {
        const char *function;           /* the function (DWARF's name, else the ELF symbol's), or NULL */
        const char *file;               /* the source file, or NULL */
        unsigned line;                  /* 0: unknown */
} UsymSourceFrame;

typedef struct UsymSource {
        UsymResult symbol;              /* ELF symbol and file, as usym_process_lookup() gives them */
        bool has_symbol;
        /* What the address runs: the innermost function first, then those it was inlined into, each with
         * the line it is at (the innermost one's own line, the others' the line calling the one inside). */
        UsymSourceFrame frames[USYM_INLINE_MAX + 1];
        size_t n_frames;
} UsymSource;

/*
 * The session for this maps text, cached by key (the caller's: a new key or other text makes a new one).
 * Borrowed: valid until the next usym_image() or usym_free(). NULL on OOM.
 *
 * Each ELF file's symbols and DWARF are read once and shared by all images that map it, whatever their
 * load addresses (the same file: the same build ID, else the same device, inode, size and modification
 * time), as the processes of one recorded run map the same libraries. A file is opened at the first
 * lookup in it; files no image uses any more stay cached, the USYM_IDLE_FILES_MAX most recently used.
 */
UsymImage *usym_image(UserSymbols *u, uint64_t key, const char *maps);

/* Image sessions kept, the least recently used replaced: a heap report has one or a few processes. */
#define USYM_IMAGES_MAX 8u
#define USYM_IDLE_FILES_MAX 16u

/* Files whose symbols and DWARF were read for images so far (a file read again after it was dropped from
 * the cache counts again), and those held now. */
size_t usym_image_files_opened(const UserSymbols *u);
size_t usym_image_files_cached(const UserSymbols *u);
/* Image lookups answered from what an earlier one found at the same address of the same file (by any
 * image that maps it). */
size_t usym_image_lookups_memoized(const UserSymbols *u);

/* Symbolizes ip in the image: false if nothing is known (see usym_process_lookup()). A return address
 * (return_address) is looked up one byte before it, in the call that returns there. Strings borrowed as
 * for usym_process_lookup(). */
bool usym_image_lookup(UsymImage *im, uint64_t ip, bool return_address, UsymSource *ret);

/* A file an image maps, as a profile's mapping describes it. */
typedef struct UsymImageObject {
        const char *path;               /* as the maps name it */
        uint64_t start, limit;          /* its lowest and highest mapped address (the limit one past it) */
        uint64_t offset;                /* the file offset mapped at start */
        const uint8_t *build_id;        /* its GNU build ID; NULL: none (no note, not ELF, not readable) */
        size_t build_id_size;
} UsymImageObject;

typedef void (*UsymImageObjectFn)(void *userdata, const UsymImageObject *o);
/* Calls fn with each file of the image that a lookup went into (usym_image_lookup() found an address in
 * it), in the maps' order. Strings and the build ID are borrowed as for usym_image_lookup(). */
void usym_image_foreach_object(UsymImage *im, UsymImageObjectFn fn, void *userdata);

/* Processes with a cached session, at most max_processes. */
size_t usym_cached_processes(const UserSymbols *u);
