/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "file-util.h"
#include "log.h"
#include "proc-maps.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"
#include "usym.h"

/* How often a process's maps may be re-read because an address was outside all of them. */
#define USYM_REFRESH_USEC 1000000
/* Memoized answers of all sessions, direct-mapped: 40 bytes each. A power of two. */
#define USYM_MEMO_SIZE 16384u

/* What tells one process image apart from another under the same pid. */
typedef struct UsymIdentity {
        uint64_t start_time;    /* clock ticks after boot (stat field 22): a reused pid differs */
        uint64_t start_code;    /* stat fields 26, 27, 28: where code and stack are, new on each exec */
        uint64_t end_code;      /* when addresses are randomized (all 0 without ptrace access, as */
        uint64_t start_stack;   /* then the maps cannot be read either) */
        dev_t exe_dev;          /* the executable: another program after an exec even without */
        ino_t exe_ino;          /* address randomization */
} UsymIdentity;

/* A module's symbols sorted by address, made at its first lookup: libdwfl's own search goes through every
 * symbol (cc1 exports 29,000), ours bisects. Names are borrowed from the module. */
typedef struct UsymSymbol {
        uint64_t start, size;           /* size 0: a symbol without one */
        const char *name;
        unsigned rank;                  /* 0 global, 1 weak, 2 local: the preferred of two at one address */
} UsymSymbol;

typedef struct UsymIndex {
        Dwfl_Module *module;
        UsymSymbol *symbols;            /* owned */
        size_t n_symbols;
        struct UsymIndex *next;
} UsymIndex;

struct UsymProcess {
        UserSymbols *owner;
        pid_t pid;              /* 0: a free slot */
        UsymIdentity identity;
        Dwfl *dwfl;             /* owned; its modules' userdata point back here */
        uint64_t generation;    /* new on every read of the maps: memoized answers of older ones are stale */
        uint64_t last_used;     /* UserSymbols.clock when last handed out: the LRU order */
        uint64_t reported_usec; /* CLOCK_MONOTONIC of the last read of the maps */
        UsymIndex *indexes;     /* owned: of this generation's modules */
};

/* One memoized answer. The strings are borrowed from the session's Dwfl, alive while its generation is. */
typedef struct UsymMemo {
        uint64_t generation;    /* of the session that answered; 0: empty */
        uint64_t ip;
        const char *name;       /* NULL: the file has no symbol there */
        const char *object;
        uint64_t offset;
} UsymMemo;

/* What an image lookup found at one address of one file, for every image that maps the file: the
 * processes of one run (sixteen cc1) ask for the same frames, and DWARF's scopes are the costly part. */
#define USYM_SOURCE_MEMO_SIZE 4096u

typedef struct UsymSourceMemo {
        uint64_t file_serial;   /* UsymFile.serial; 0: empty. A freed file's serial is never given again */
        uint64_t addr;          /* the file's link-time address asked for */
        bool return_address;
        bool found;
        UsymSource source;      /* symbol.object left out: it is the image's name for the file */
} UsymSourceMemo;

/* Loadable segments of a file kept to place its mappings: two to five in practice. */
#define USYM_SEGMENTS_MAX 16u

typedef struct UsymSegment {
        uint64_t offset;        /* p_offset */
        uint64_t vaddr;         /* p_vaddr */
} UsymSegment;

/*
 * One ELF file's symbols and DWARF, shared by every image that maps it: inflating a compressed debug file
 * (libc's under /usr/lib/debug) costs far more than all lookups in it, and the processes of one run map
 * the same files. Known by its build ID, else (none) by device, inode, size and modification time. Its
 * session holds the file alone, at its link-time addresses plus the session's own bias; each image
 * keeps its own load address (UsymObject.bias).
 */
typedef struct UsymFile {
        uint8_t build_id[64];
        size_t build_id_size;   /* 0: none, the stat fields tell it apart */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        UsymSegment segments[USYM_SEGMENTS_MAX];
        size_t n_segments;
        Dwfl *dwfl;             /* owned: this file's module only */
        Dwfl_Module *module;
        uint64_t bias;          /* session address - link-time address */
        UsymIndex *indexes;     /* owned: the module's symbol index, once made */
        uint64_t serial;        /* unique among the files of a UserSymbols, from 1 */
        unsigned n_refs;        /* images' objects using it; 0: idle, freed when too many are */
        uint64_t last_used;     /* UserSymbols.clock when last referenced */
        struct UsymFile *next;
} UsymFile;

/* A file as one image maps it. */
typedef struct UsymObject {
        char *path;             /* owned: as the maps name it */
        uint64_t start;         /* its mapping of the lowest file offset: where, */
        uint64_t offset;        /* and of which offset */
        bool resolved;          /* file and bias looked for (at the first lookup in it) */
        UsymFile *file;         /* a reference; NULL: not found or not ELF */
        uint64_t bias;          /* load address - link-time address in this image */
} UsymObject;

typedef struct UsymRange {
        uint64_t start, end;
        size_t object;          /* index in UsymImage.objects */
} UsymRange;

struct UsymImage {
        UserSymbols *owner;
        bool used;              /* false: a free slot */
        uint64_t key;
        uint64_t text_hash;     /* of the maps text it was made from */
        uint64_t last_used;
        UsymObject *objects;    /* owned */
        size_t n_objects;
        UsymRange *ranges;      /* owned, sorted by address */
        size_t n_ranges;
};

struct UserSymbols {
        UsymImage images[USYM_IMAGES_MAX];
        UsymFile *files;        /* owned: in use by images, and at most USYM_IDLE_FILES_MAX idle ones */
        size_t files_opened;    /* file sessions made so far */
        UsymProcess *processes; /* owned: max_processes slots, never moved (modules point into it) */
        size_t max_processes;
        UsymMemo *memo;         /* owned, USYM_MEMO_SIZE entries, allocated by the first lookup */
        UsymSourceMemo *source_memo;    /* owned, USYM_SOURCE_MEMO_SIZE entries, by the first image lookup */
        size_t source_memo_hits;
        uint64_t clock;         /* counts usym_process() and usym_image() calls */
        uint64_t generation;    /* the last one given to a session */
};

static bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/*
 * libdwfl's find_elf callback. A module's userdata is its UsymProcess (set after each report). Opens the
 * mapped file as the process sees it, through /proc/PID/root, as a regular file only (open_regular():
 * libdwfl's own opener checks with stat() and then opens, so a FIFO put there in between, by whoever
 * owns that root, would be waited on), and hands libdwfl a mapped Elf without a descriptor, so a cached
 * process holds no fd per file. Not the vDSO ("[vdso: PID]"): libdwfl would read it from the process's memory.
 * Not a file the maps show as deleted: its path names another file now, or none.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *module_name, Dwarf_Addr base,
                char **file_name, Elf **elfp) {
        const UsymProcess *p = *userdata;
        _cleanup_free_ char *path = NULL;
        int fd;

        if (!p || module_name[0] != '/' || endswith(module_name, " (deleted)"))
                return -1;
        if (asprintf(&path, "/proc/%d/root%s", (int) p->pid, module_name) < 0)
                return -1;

        fd = open_regular(path, 0);
        if (fd < 0)
                return -1;
        *file_name = strdup(path);
        if (!*file_name) {
                (void) close(fd);
                return -1;
        }

        /* Mapped whole, then detached from the descriptor (ELF_C_FDREAD reads it in if the map failed). */
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (elf && (elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDREAD) < 0)) {
                (void) elf_end(elf);
                elf = NULL;
        }
        (void) close(fd);
        if (!elf) {
                /* libdwfl would try to open a file name left behind itself. */
                free(*file_name);
                *file_name = NULL;
                return -1;
        }
        *elfp = elf;
        return -1;
}

/* Symbols come from the mapped file only: no debuginfo file is searched for, here or on the network. */
static int find_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *module_name, Dwarf_Addr base,
                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                char **debuginfo_file_name) {
        return -1;
}

static const Dwfl_Callbacks callbacks = {
        .find_elf = find_elf,
        .find_debuginfo = find_no_debuginfo,
        .section_address = dwfl_offline_section_address,       /* relocatable files only: not used here */
        .debuginfo_path = NULL,
};

/* Reads the identity of pid from /proc/PID/stat and /proc/PID/exe. */
static int read_identity(pid_t pid, UsymIdentity *ret) {
        UsymIdentity id = {};
        char path[sizeof("/proc/2147483647/stat")];
        /* 52 fields of at most 20 digits and a comm of at most 64 bytes: always well under this. */
        char buf[4096], *saveptr = NULL;
        _cleanup_close_ int fd = -EBADF;
        unsigned field = 2;
        struct stat st;
        ssize_t n;
        int r;

        (void) snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return negative_errno();
        if (n == 0 || (size_t) n == sizeof(buf) - 1)
                return -EBADMSG;
        buf[n] = '\0';

        /* The comm in parentheses may hold anything, parentheses too: fields go on after the last one. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EBADMSG;
        for (char *word = strtok_r(p + 1, " \n", &saveptr); word && field < 28;
             word = strtok_r(NULL, " \n", &saveptr)) {
                uint64_t *v;

                switch (++field) {
                case 22:
                        v = &id.start_time;
                        break;
                case 26:
                        v = &id.start_code;
                        break;
                case 27:
                        v = &id.end_code;
                        break;
                case 28:
                        v = &id.start_stack;
                        break;
                default:
                        continue;
                }
                r = parse_uint64(word, 0, UINT64_MAX, v);
                if (r < 0)
                        return r;
        }
        if (field < 28)
                return -EBADMSG;

        (void) snprintf(path, sizeof(path), "/proc/%d/exe", (int) pid);
        if (stat(path, &st) < 0)
                return negative_errno();
        id.exe_dev = st.st_dev;
        id.exe_ino = st.st_ino;

        *ret = id;
        return 0;
}

static bool identity_equal(const UsymIdentity *a, const UsymIdentity *b) {
        return a->start_time == b->start_time && a->start_code == b->start_code &&
               a->end_code == b->end_code && a->start_stack == b->start_stack &&
               a->exe_dev == b->exe_dev && a->exe_ino == b->exe_ino;
}

/* ---- Symbol indexes ------------------------------------------------------------------------------- */

static void indexes_free(UsymIndex **list) {
        while (*list) {
                UsymIndex *x = *list;
                *list = x->next;
                free(x->symbols);
                free(x);
        }
}

static int symbol_compare(const void *a, const void *b) {
        const UsymSymbol *x = a, *y = b;
        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The module's index, made now if it is not in the list; NULL on OOM. */
static UsymIndex *index_of(UsymIndex **list, Dwfl_Module *mod) {
        for (UsymIndex *x = *list; x; x = x->next)
                if (x->module == mod)
                        return x;
        _cleanup_free_ UsymIndex *x = calloc(1, sizeof(UsymIndex));
        if (!x)
                return NULL;
        x->module = mod;
        int n = dwfl_module_getsymtab(mod);
        if (n > 1) {
                x->symbols = calloc((size_t) n, sizeof(UsymSymbol));
                if (!x->symbols)
                        return NULL;
        }
        for (int i = 1; i < n; i++) {
                GElf_Sym sym;
                GElf_Addr addr;
                GElf_Word shndx;
                const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
                int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
                if (!name || name[0] == '\0' || shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
                    type == STT_TLS)
                        continue;
                x->symbols[x->n_symbols++] = (UsymSymbol) {
                        .start = addr,
                        .size = sym.st_size,
                        .name = name,
                        .rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2,
                };
        }
        if (x->n_symbols > 1)
                qsort(x->symbols, x->n_symbols, sizeof(UsymSymbol), symbol_compare);
        x->next = *list;
        *list = x;
        return TAKE_PTR(x);
}

/* The symbol at ip, as dwfl_module_addrinfo() finds it: the closest one below ip whose size holds it
 * (of two at one address the global one), else a symbol without size right below ip. */
static const char *index_lookup(const UsymIndex *x, uint64_t ip, uint64_t *ret_offset) {
        size_t lo = SORTED_COUNT_AT_MOST(x->symbols, x->n_symbols, start, ip);
        /* Symbols without size, or nested ones, may lie between ip and the one whose size holds it. */
        for (size_t i = lo, scanned = 0; i > 0 && scanned < 64; i--, scanned++) {
                const UsymSymbol *sym = &x->symbols[i - 1];
                if (sym->size > 0 && ip - sym->start < sym->size) {
                        /* The first of this address is the preferred one (sorted by rank). */
                        while (i > 1 && x->symbols[i - 2].start == sym->start && x->symbols[i - 2].size > 0)
                                sym = &x->symbols[--i - 1];
                        *ret_offset = ip - sym->start;
                        return sym->name;
                }
        }
        if (lo > 0 && x->symbols[lo - 1].size == 0) {
                const UsymSymbol *sym = &x->symbols[lo - 1];
                while (lo > 1 && x->symbols[lo - 2].start == sym->start)
                        sym = &x->symbols[--lo - 1];
                *ret_offset = ip - sym->start;
                return sym->name;
        }
        return NULL;
}

/* The module's symbol at ip, with the list's index of it; NULL if none (or on OOM). */
static const char *module_symbol(UsymIndex **list, Dwfl_Module *mod, uint64_t ip, uint64_t *ret_offset) {
        UsymIndex *x = index_of(list, mod);
        return x ? index_lookup(x, ip, ret_offset) : NULL;
}

static void process_clear(UsymProcess *p) {
        indexes_free(&p->indexes);
        if (p->dwfl)
                dwfl_end(p->dwfl);
        *p = (UsymProcess) { .owner = p->owner };
}

static int set_module_process(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                void *arg) {
        *userdata = arg;
        return DWARF_CB_OK;
}

/* (Re-)reads the process's maps into its session. Modules still mapped keep their loaded symbols. */
static int process_report(UsymProcess *p) {
        int r, k;

        if (!p->dwfl) {
                p->dwfl = dwfl_begin(&callbacks);
                if (!p->dwfl)
                        return -ENOMEM;
        }
        p->reported_usec = now_usec(CLOCK_MONOTONIC);
        /* Modules may go away below, and with them the names memoized so far. */
        p->generation = ++p->owner->generation;
        indexes_free(&p->indexes);

        dwfl_report_begin(p->dwfl);
        /* 0, an errno (positive) for /proc failures, or -1 for libdwfl's own. */
        r = dwfl_linux_proc_report(p->dwfl, p->pid);
        k = dwfl_report_end(p->dwfl, NULL, NULL);
        if (r > 0)
                return -r;
        if (r < 0 || k != 0)
                return -EIO;
        if (dwfl_getmodules(p->dwfl, set_module_process, p, 0) != 0)
                return -EIO;
        return 0;
}

static UsymProcess *find_process(UserSymbols *u, pid_t pid) {
        for (size_t i = 0; i < u->max_processes; i++)
                if (u->processes[i].pid == pid)
                        return &u->processes[i];
        return NULL;
}

/* A free slot, else the least recently used one, emptied. */
static UsymProcess *take_slot(UserSymbols *u) {
        UsymProcess *lru = &u->processes[0];

        for (size_t i = 0; i < u->max_processes; i++) {
                UsymProcess *p = &u->processes[i];
                if (p->pid == 0)
                        return p;
                if (p->last_used < lru->last_used)
                        lru = p;
        }
        process_clear(lru);
        return lru;
}

/* Below, with the images. */
static void image_clear(UsymImage *im);
static void file_free(UsymFile *f);

UserSymbols *usym_new(size_t max_processes) {
        _cleanup_free_ UserSymbols *u = NULL;

        assert(max_processes >= 1);
        /* dwfl_begin() does this too; the Elf handles in find_elf() depend on it. */
        (void) elf_version(EV_CURRENT);

        u = calloc(1, sizeof(UserSymbols));
        if (!u)
                return NULL;
        u->processes = calloc(max_processes, sizeof(UsymProcess));
        if (!u->processes)
                return NULL;
        for (size_t i = 0; i < max_processes; i++)
                u->processes[i].owner = u;
        for (size_t i = 0; i < USYM_IMAGES_MAX; i++)
                u->images[i].owner = u;
        u->max_processes = max_processes;
        return TAKE_PTR(u);
}

UserSymbols *usym_free(UserSymbols *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->max_processes; i++)
                process_clear(&u->processes[i]);
        for (size_t i = 0; i < USYM_IMAGES_MAX; i++)
                image_clear(&u->images[i]);
        while (u->files) {
                UsymFile *f = u->files;
                u->files = f->next;
                file_free(f);
        }
        free(u->processes);
        free(u->memo);
        free(u->source_memo);
        free(u);
        return NULL;
}

void usym_forget(UserSymbols *u, pid_t pid) {
        UsymProcess *p;

        assert(u);
        if (pid <= 0)
                return;
        p = find_process(u, pid);
        if (p)
                process_clear(p);
}

size_t usym_cached_processes(const UserSymbols *u) {
        size_t n = 0;

        assert(u);
        for (size_t i = 0; i < u->max_processes; i++)
                if (u->processes[i].pid != 0)
                        n++;
        return n;
}

UsymProcess *usym_process(UserSymbols *u, pid_t pid) {
        UsymIdentity id;
        UsymProcess *p;
        int r;

        assert(u);
        if (pid <= 0)
                return NULL;

        r = read_identity(pid, &id);
        if (r < 0) {
                usym_forget(u, pid);
                return NULL;
        }
        p = find_process(u, pid);
        if (p && !identity_equal(&p->identity, &id)) {
                process_clear(p);
                p = NULL;
        }
        if (!p) {
                p = take_slot(u);
                p->pid = pid;
                p->identity = id;
                r = process_report(p);
                if (r < 0)
                        log_debug_errno(r, "Failed to read the mappings of process %d, not symbolizing it: %m",
                                        (int) pid);
                if (!p->dwfl) {
                        /* Out of memory: keep nothing, the next call tries again. */
                        process_clear(p);
                        return NULL;
                }
        }
        p->last_used = ++u->clock;
        return p;
}

static UsymMemo *memo_slot(UserSymbols *u, uint64_t generation, uint64_t ip) {
        /* Fibonacci hashing: return addresses differ in their low bits, sessions in the generation. */
        uint64_t h = (ip ^ generation * UINT64_C(0x9e3779b97f4a7c15)) * UINT64_C(0x9e3779b97f4a7c15);

        if (!u->memo) {
                u->memo = calloc(USYM_MEMO_SIZE, sizeof(UsymMemo));
                if (!u->memo)
                        return NULL;    /* answers are just not memoized */
        }
        return &u->memo[h >> 50 & (USYM_MEMO_SIZE - 1)];
}

bool usym_process_lookup(UsymProcess *p, uint64_t ip, UsymResult *ret) {
        UsymMemo *m;
        int r;

        assert(p);
        assert(ret);
        assert(p->pid > 0);

        m = memo_slot(p->owner, p->generation, ip);
        if (m && m->generation == p->generation && m->ip == ip)
                goto answer;

        Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, ip);
        if (!mod && now_usec(CLOCK_MONOTONIC) - p->reported_usec >= USYM_REFRESH_USEC) {
                /* Maybe mapped since (dlopen()); anonymous and JIT code stays unknown. */
                r = process_report(p);
                if (r < 0)
                        log_debug_errno(r, "Failed to re-read the mappings of process %d: %m", (int) p->pid);
                mod = dwfl_addrmodule(p->dwfl, ip);
                m = memo_slot(p->owner, p->generation, ip);
        }
        /* Not memoized: a later re-read of the maps may find it. */
        if (!mod)
                return false;

        uint64_t offset = 0;
        const char *name = module_symbol(&p->indexes, mod, ip, &offset);
        /* The module's name is the path in the maps. */
        const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (!path)
                return false;
        const char *slash = strrchr(path, '/');
        UsymMemo found = {
                .generation = p->generation,
                .ip = ip,
                .name = name && name[0] != '\0' ? name : NULL,
                .object = slash ? slash + 1 : path,
                .offset = offset,
        };
        if (!m)
                m = &found;
        else
                *m = found;

answer:
        if (!m->name)
                return false;
        *ret = (UsymResult) {
                .name = m->name,
                .offset = m->offset,
                .object = m->object,
        };
        return true;
}

bool usym_lookup(UserSymbols *u, pid_t pid, uint64_t ip, UsymResult *ret) {
        UsymProcess *p = usym_process(u, pid);
        return p && usym_process_lookup(p, ip, ret);
}

/* ---- Images from saved maps ------------------------------------------------------------------------ */

/* Files reported one by one (dwfl_report_elf()): find_elf is never asked. */
static int file_find_elf(Dwfl_Module *mod, void **userdata, const char *module_name, Dwarf_Addr base,
                char **file_name, Elf **elfp) {
        return -1;
}

static const Dwfl_Callbacks file_callbacks = {
        .find_elf = file_find_elf,
        /* The file's own DWARF, else a debug file below /usr/lib/debug (build ID, .gnu_debuglink). The
         * daemon that reads images runs without DEBUGINFOD_URLS (memstrackctl record clears it). */
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = NULL,         /* libdwfl's default: beside the file, .debug/, /usr/lib/debug */
};

static void file_free(UsymFile *f) {
        indexes_free(&f->indexes);
        if (f->dwfl)
                dwfl_end(f->dwfl);
        free(f);
}

static bool file_same(const UsymFile *a, const UsymFile *b) {
        if (a->build_id_size > 0 || b->build_id_size > 0)
                return a->build_id_size == b->build_id_size &&
                       memcmp(a->build_id, b->build_id, a->build_id_size) == 0;
        return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
               a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* What tells the ELF file open at fd apart (its build ID, else its stat) and its loadable segments. */
static int file_identify(int fd, UsymFile *f) {
        struct stat st;
        size_t n_headers;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->size = st.st_size;
        f->mtime = st.st_mtim;

        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EBADMSG;
        int r = -EBADMSG;
        if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n_headers) != 0)
                goto finish;
        const void *id = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
        if (n > 0 && (size_t) n <= sizeof(f->build_id)) {
                memcpy(f->build_id, id, (size_t) n);
                f->build_id_size = (size_t) n;
        }
        for (size_t i = 0; i < n_headers && f->n_segments < USYM_SEGMENTS_MAX; i++) {
                GElf_Phdr ph;
                if (gelf_getphdr(elf, (int) i, &ph) && ph.p_type == PT_LOAD)
                        f->segments[f->n_segments++] = (UsymSegment) { .offset = ph.p_offset, .vaddr = ph.p_vaddr };
        }
        r = f->n_segments > 0 ? 0 : -EBADMSG;
finish:
        (void) elf_end(elf);
        return r;
}

/*
 * The file at path as a referenced UsymFile: one already open if it is the same file, else a new session
 * (which the DWARF is read into at its first lookup). NULL if it is not a readable ELF file (or on OOM).
 * Opened as a regular file only (open_regular(): a FIFO put at the path would be waited on).
 */
static UsymFile *file_get(UserSymbols *u, const char *path) {
        _cleanup_free_ UsymFile *f = calloc(1, sizeof(UsymFile));
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!f)
                return NULL;
        fd = open_regular(path, 0);
        if (fd < 0) {
                log_debug_errno(fd, "Failed to open %s, not symbolizing it: %m", path);
                return NULL;
        }
        r = file_identify(fd, f);
        if (r < 0) {
                log_debug_errno(r, "Failed to read %s as ELF, not symbolizing it: %m", path);
                return NULL;
        }
        for (UsymFile *x = u->files; x; x = x->next)
                if (file_same(x, f)) {
                        x->n_refs++;
                        x->last_used = u->clock;
                        return x;
                }

        f->dwfl = dwfl_begin(&file_callbacks);
        if (!f->dwfl)
                return NULL;
        const char *slash = strrchr(path, '/');
        dwfl_report_begin(f->dwfl);
        /* Base 0: the session's addresses are the file's own (bias 0), whatever its type. */
        f->module = dwfl_report_elf(f->dwfl, slash ? slash + 1 : path, path, fd, 0, false);
        if (f->module)
                TAKE_FD(fd);    /* the module's now, closed by dwfl_end() */
        if (dwfl_report_end(f->dwfl, NULL, NULL) != 0 || !f->module) {
                log_debug("Failed to open %s for symbols: %s", path, dwfl_errmsg(-1));
                dwfl_end(TAKE_PTR(f->dwfl));
                return NULL;
        }
        Dwarf_Addr bias = 0;
        if (!dwfl_module_getelf(f->module, &bias)) {
                dwfl_end(TAKE_PTR(f->dwfl));
                return NULL;
        }
        f->bias = bias;
        f->n_refs = 1;
        f->last_used = u->clock;
        f->next = u->files;
        u->files = f;
        f->serial = ++u->files_opened;
        return TAKE_PTR(f);
}

/* Frees the least recently used idle files beyond USYM_IDLE_FILES_MAX. */
static void files_trim(UserSymbols *u) {
        for (;;) {
                UsymFile **oldest = NULL;
                size_t idle = 0;

                for (UsymFile **x = &u->files; *x; x = &(*x)->next)
                        if ((*x)->n_refs == 0) {
                                idle++;
                                if (!oldest || (*x)->last_used < (*oldest)->last_used)
                                        oldest = x;
                        }
                if (idle <= USYM_IDLE_FILES_MAX)
                        return;
                UsymFile *f = *oldest;
                *oldest = f->next;
                file_free(f);
        }
}

static void image_clear(UsymImage *im) {
        for (size_t i = 0; i < im->n_objects; i++) {
                UsymFile *f = im->objects[i].file;
                if (f) {
                        assert(f->n_refs > 0);
                        f->n_refs--;
                }
                free(im->objects[i].path);
        }
        free(im->objects);
        free(im->ranges);
        *im = (UsymImage) { .owner = im->owner };
}

/* The object's file and where this image loaded it, at its first lookup. */
static void object_resolve(UserSymbols *u, UsymObject *o) {
        long page = sysconf(_SC_PAGESIZE);

        o->resolved = true;
        o->file = file_get(u, o->path);
        if (!o->file)
                return;
        /* The lowest mapping holds the segment whose offset lies in its first page (the file's first
         * segment, normally at offset 0): what is at that offset is at its p_vaddr after linking. */
        const UsymSegment *seg = &o->file->segments[0];
        for (size_t i = 0; i < o->file->n_segments; i++) {
                const UsymSegment *x = &o->file->segments[i];
                if (x->offset >= o->offset && x->offset - o->offset < (uint64_t) MAX(page, 4096L)) {
                        seg = x;
                        break;
                }
        }
        o->bias = o->start + (seg->offset - o->offset) - seg->vaddr;
}

static int range_compare(const void *a, const void *b) {
        const UsymRange *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads /proc/PID/maps text: each mapped file (a path, not deleted) is an object, each of its lines a range. */
static int image_parse(UsymImage *im, const char *maps) {
        size_t objects_size = 0, ranges_size = 0;
        bool sorted = true;
        MapsLine m;
        int r;

        for (const char *cursor = maps; (r = maps_next(&cursor, &m)) != 0;) {
                if (r < 0 || !maps_line_is_file(&m))
                        continue;

                /* A file's lines follow each other: look at the last object first. */
                size_t k = im->n_objects;
                for (size_t i = im->n_objects; i > 0; i--)
                        if (strlen(im->objects[i - 1].path) == m.path_len &&
                            memcmp(im->objects[i - 1].path, m.path, m.path_len) == 0) {
                                k = i - 1;
                                break;
                        }
                if (k == im->n_objects) {
                        if (greedy_realloc(&im->objects, &objects_size, im->n_objects + 1, sizeof(UsymObject), 16) < 0)
                                return -ENOMEM;
                        im->objects[k] = (UsymObject) { .path = strndup(m.path, m.path_len), .start = m.start,
                                                        .offset = m.offset };
                        if (!im->objects[k].path)
                                return -ENOMEM;
                        im->n_objects++;
                } else if (m.offset < im->objects[k].offset) {
                        im->objects[k].start = m.start;
                        im->objects[k].offset = m.offset;
                }

                if (greedy_realloc(&im->ranges, &ranges_size, im->n_ranges + 1, sizeof(UsymRange), 64) < 0)
                        return -ENOMEM;
                if (im->n_ranges > 0 && im->ranges[im->n_ranges - 1].start > m.start)
                        sorted = false;
                im->ranges[im->n_ranges++] = (UsymRange) { .start = m.start, .end = m.end, .object = k };
        }
        if (!sorted)
                qsort(im->ranges, im->n_ranges, sizeof(UsymRange), range_compare);
        return 0;
}

static uint64_t text_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

UsymImage *usym_image(UserSymbols *u, uint64_t key, const char *maps) {
        uint64_t hash = text_hash(maps);
        UsymImage *im = &u->images[0];

        assert(u);
        for (size_t i = 0; i < USYM_IMAGES_MAX; i++) {
                UsymImage *x = &u->images[i];
                if (x->used && x->key == key && x->text_hash == hash) {
                        x->last_used = ++u->clock;
                        return x;
                }
                if (!x->used || (im->used && x->last_used < im->last_used))
                        im = x;
        }
        image_clear(im);
        files_trim(u);
        *im = (UsymImage) { .owner = u, .used = true, .key = key, .text_hash = hash, .last_used = ++u->clock };
        if (image_parse(im, maps) < 0) {
                image_clear(im);
                return NULL;
        }
        return im;
}

void usym_image_foreach_object(UsymImage *im, UsymImageObjectFn fn, void *userdata) {
        for (size_t i = 0; i < im->n_objects; i++) {
                const UsymObject *o = &im->objects[i];
                UsymImageObject x = { .path = o->path, .start = o->start, .offset = o->offset };

                if (!o->resolved)
                        continue;
                for (size_t k = 0; k < im->n_ranges; k++)
                        if (im->ranges[k].object == i)
                                x.limit = MAX(x.limit, im->ranges[k].end);
                if (o->file && o->file->build_id_size > 0) {
                        x.build_id = o->file->build_id;
                        x.build_id_size = o->file->build_id_size;
                }
                fn(userdata, &x);
        }
}

size_t usym_image_files_opened(const UserSymbols *u) {
        assert(u);
        return u->files_opened;
}

size_t usym_image_files_cached(const UserSymbols *u) {
        size_t n = 0;

        assert(u);
        for (const UsymFile *f = u->files; f; f = f->next)
                n++;
        return n;
}

/* The object holding ip, resolved; NULL if none. */
static UsymObject *image_object(UsymImage *im, uint64_t ip) {
        size_t lo = SORTED_COUNT_AT_MOST(im->ranges, im->n_ranges, start, ip);

        if (lo == 0 || ip >= im->ranges[lo - 1].end)
                return NULL;
        UsymObject *o = &im->objects[im->ranges[lo - 1].object];
        if (!o->resolved)
                object_resolve(im->owner, o);
        if (!o->file)
                return NULL;
        o->file->last_used = im->owner->clock;
        return o;
}

/* A DIE's name, also through DW_AT_abstract_origin / DW_AT_specification (inlined copies name none). */
static const char *die_name(Dwarf_Die *die) {
        Dwarf_Attribute attr;
        const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
        if (!name)
                name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
        return name;
}

/* The file of a DW_AT_call_file index in the CU. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die) {
        Dwarf_Attribute attr;
        Dwarf_Word index;
        Dwarf_Files *files;
        size_t n;

        if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &index) != 0 ||
            dwarf_getsrcfiles(cu, &files, &n) != 0 || index >= n)
                return NULL;
        return dwarf_filesrc(files, index, NULL, NULL);
}

static unsigned call_line(Dwarf_Die *die) {
        Dwarf_Attribute attr;
        Dwarf_Word line;

        if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) != 0 || line > UINT32_MAX)
                return 0;
        return (unsigned) line;
}

/* The compile unit holding at. libdw finds it through .debug_aranges, which clang does not emit (and a
 * program linked from gcc and clang objects has it for some units only): then each unit's own ranges
 * are asked, once per address, since lookups are cached by their callers. */
static Dwarf_Die *module_unit_at(Dwfl_Module *mod, Dwarf_Addr at, Dwarf_Addr *bias) {
        Dwarf_Die *cu = dwfl_module_addrdie(mod, at, bias);
        if (cu)
                return cu;
        while ((cu = dwfl_module_nextcu(mod, cu, bias)))
                if (dwarf_haspc(cu, at - *bias) > 0)
                        return cu;
        return NULL;
}

static UsymSourceMemo *source_memo_slot(UserSymbols *u, uint64_t serial, uint64_t addr, bool return_address) {
        uint64_t h = ((addr << 1 | return_address) ^ serial * UINT64_C(0x9e3779b97f4a7c15)) *
                     UINT64_C(0x9e3779b97f4a7c15);

        if (!u->source_memo) {
                u->source_memo = calloc(USYM_SOURCE_MEMO_SIZE, sizeof(UsymSourceMemo));
                if (!u->source_memo)
                        return NULL;    /* answers are just not memoized */
        }
        return &u->source_memo[h >> 52 & (USYM_SOURCE_MEMO_SIZE - 1)];
}

static bool source_lookup(UsymObject *o, uint64_t addr, bool return_address, UsymSource *ret);

bool usym_image_lookup(UsymImage *im, uint64_t ip, bool return_address, UsymSource *ret) {
        assert(im);
        assert(ret);
        *ret = (UsymSource) {};
        UsymObject *o = image_object(im, ip);
        if (!o)
                return false;
        /* In the file's session: its link-time address, plus that session's own bias. */
        uint64_t addr = ip - o->bias + o->file->bias;
        UsymSourceMemo *m = source_memo_slot(im->owner, o->file->serial, addr, return_address);
        bool found;
        if (m && m->file_serial == o->file->serial && m->addr == addr && m->return_address == return_address) {
                *ret = m->source;
                found = m->found;
                im->owner->source_memo_hits++;
        } else {
                found = source_lookup(o, addr, return_address, ret);
                if (m)
                        *m = (UsymSourceMemo) { .file_serial = o->file->serial, .addr = addr,
                                                .return_address = return_address, .found = found, .source = *ret };
        }
        if (ret->has_symbol) {
                const char *slash = strrchr(o->path, '/');
                ret->symbol.object = slash ? slash + 1 : o->path;
        }
        return found;
}

size_t usym_image_lookups_memoized(const UserSymbols *u) {
        assert(u);
        return u->source_memo_hits;
}

/* What the file says of addr: its ELF symbol, its line, the functions inlined there. */
static bool source_lookup(UsymObject *o, uint64_t addr, bool return_address, UsymSource *ret) {
        uint64_t offset = 0;
        Dwarf_Addr bias = 0;
        Dwfl_Module *mod = o->file->module;
        Dwarf_Addr at = return_address && addr > 0 ? addr - 1 : addr;
        const char *name = module_symbol(&o->file->indexes, mod, addr, &offset);
        if (name && name[0] != '\0') {
                ret->symbol = (UsymResult) { .name = name, .offset = offset };
                ret->has_symbol = true;
        }

        /* The innermost function's own line. */
        Dwarf_Die *cu = module_unit_at(mod, at, &bias);
        Dwarf_Line *line = cu ? dwarf_getsrc_die(cu, at - bias) : NULL;
        int lineno = 0;
        const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
        if (line)
                (void) dwarf_lineno(line, &lineno);
        ret->frames[0] = (UsymSourceFrame) { .function = ret->has_symbol ? name : NULL, .file = file,
                                             .line = lineno > 0 ? (unsigned) lineno : 0 };
        ret->n_frames = 1;

        /* Inlined functions: scopes innermost first; each inlined subroutine's call_file:call_line is where
         * the function around it calls it. */
        Dwarf_Die *scopes = NULL;
        int n = cu ? dwarf_getscopes(cu, at - bias, &scopes) : 0;
        bool named = false;
        for (int i = 0; i < n && ret->n_frames <= USYM_INLINE_MAX; i++) {
                int tag = dwarf_tag(&scopes[i]);
                if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
                        continue;
                const char *fn = die_name(&scopes[i]);
                UsymSourceFrame *f = &ret->frames[ret->n_frames - 1];
                if (fn)
                        f->function = fn;
                named = true;
                if (tag == DW_TAG_subprogram)
                        break;
                /* The caller's frame, at the line of the call. */
                ret->frames[ret->n_frames++] = (UsymSourceFrame) { .function = NULL, .file = call_file(cu, &scopes[i]),
                                                                   .line = call_line(&scopes[i]) };
        }
        free(scopes);
        /* The outermost got no name from DWARF: the ELF symbol is its function. */
        if (ret->n_frames > 1 && !ret->frames[ret->n_frames - 1].function && ret->has_symbol)
                ret->frames[ret->n_frames - 1].function = name;
        return ret->has_symbol || named || file;
}
