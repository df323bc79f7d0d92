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
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "file-util.h"
#include "log.h"
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

struct UsymProcess {
        UserSymbols *owner;
        pid_t pid;              /* 0: a free slot */
        UsymIdentity identity;
        Dwfl *dwfl;             /* owned; its modules' userdata point back here */
        uint64_t generation;    /* new on every read of the maps: memoized answers of older ones are stale */
        uint64_t last_used;     /* UserSymbols.clock when last handed out: the LRU order */
        uint64_t reported_usec; /* CLOCK_MONOTONIC of the last read of the maps */
};

/* One memoized answer. The strings are borrowed from the session's Dwfl, alive while its generation is. */
typedef struct UsymMemo {
        uint64_t generation;    /* of the session that answered; 0: empty */
        uint64_t ip;
        const char *name;       /* NULL: the file has no symbol there */
        const char *object;
        uint64_t offset;
} UsymMemo;

/* Image sessions kept (usym_image()): a heap report has one or a few processes. */
#define USYM_IMAGES_MAX 8u

struct UsymImage {
        uint64_t key;
        uint64_t text_hash;     /* of the maps text it was made from */
        uint64_t last_used;
        Dwfl *dwfl;             /* owned; NULL: a free slot */
};

struct UserSymbols {
        UsymImage images[USYM_IMAGES_MAX];
        UsymProcess *processes; /* owned: max_processes slots, never moved (modules point into it) */
        size_t max_processes;
        UsymMemo *memo;         /* owned, USYM_MEMO_SIZE entries, allocated by the first lookup */
        uint64_t clock;         /* counts usym_process() calls */
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

static void process_clear(UsymProcess *p) {
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
        u->max_processes = max_processes;
        return TAKE_PTR(u);
}

UserSymbols *usym_free(UserSymbols *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->max_processes; i++)
                process_clear(&u->processes[i]);
        for (size_t i = 0; i < USYM_IMAGES_MAX; i++)
                if (u->images[i].dwfl)
                        dwfl_end(u->images[i].dwfl);
        free(u->processes);
        free(u->memo);
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

        GElf_Off offset = 0;
        GElf_Sym sym;
        const char *name = dwfl_module_addrinfo(mod, ip, &offset, &sym, NULL, NULL, NULL);
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

/* The file by its path; never the vDSO (it would be read from a process's memory) or a deleted file. */
static int image_find_elf(Dwfl_Module *mod, void **userdata, const char *module_name, Dwarf_Addr base,
                char **file_name, Elf **elfp) {
        if (module_name[0] != '/' || endswith(module_name, " (deleted)"))
                return -1;
        return dwfl_linux_proc_find_elf(mod, userdata, module_name, base, file_name, elfp);
}

static const Dwfl_Callbacks image_callbacks = {
        .find_elf = image_find_elf,
        /* The file's own DWARF, else a debug file below /usr/lib/debug (build ID, .gnu_debuglink). The
         * daemon that reads images runs without DEBUGINFOD_URLS (memstrackctl record clears it). */
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = NULL,         /* libdwfl's default: beside the file, .debug/, /usr/lib/debug */
};

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
                if (x->dwfl && x->key == key && x->text_hash == hash) {
                        x->last_used = ++u->clock;
                        return x;
                }
                if (!x->dwfl || (im->dwfl && x->last_used < im->last_used))
                        im = x;
        }
        if (im->dwfl)
                dwfl_end(im->dwfl);
        *im = (UsymImage) { .key = key, .text_hash = hash, .last_used = ++u->clock };

        _cleanup_fclose_ FILE *f = fmemopen((void *) maps, strlen(maps), "r");
        if (!f)
                return NULL;
        im->dwfl = dwfl_begin(&image_callbacks);
        if (!im->dwfl)
                return NULL;
        dwfl_report_begin(im->dwfl);
        int r = dwfl_linux_proc_maps_report(im->dwfl, f);
        if (dwfl_report_end(im->dwfl, NULL, NULL) != 0 || r != 0) {
                log_debug("Failed to read saved process mappings; some frames stay unnamed.");
                /* What was reported before the failure still names its frames. */
        }
        return im;
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

bool usym_image_lookup(UsymImage *im, uint64_t ip, bool return_address, UsymSource *ret) {
        Dwarf_Addr at = return_address && ip > 0 ? ip - 1 : ip, bias = 0;
        GElf_Off offset = 0;
        GElf_Sym sym;

        assert(im);
        assert(ret);
        *ret = (UsymSource) {};
        if (!im->dwfl)
                return false;
        Dwfl_Module *mod = dwfl_addrmodule(im->dwfl, ip);
        if (!mod)
                return false;
        const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        const char *name = dwfl_module_addrinfo(mod, ip, &offset, &sym, NULL, NULL, NULL);
        const char *slash = path ? strrchr(path, '/') : NULL;
        if (name && name[0] != '\0') {
                ret->symbol = (UsymResult) { .name = name, .offset = offset, .object = slash ? slash + 1 : path };
                ret->has_symbol = true;
        }

        /* The innermost function's own line. */
        Dwfl_Line *line = dwfl_module_getsrc(mod, at);
        int lineno = 0;
        const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
        ret->frames[0] = (UsymSourceFrame) { .function = ret->has_symbol ? name : NULL, .file = file,
                                             .line = lineno > 0 ? (unsigned) lineno : 0 };
        ret->n_frames = 1;

        /* Inlined functions: scopes innermost first; each inlined subroutine's call_file:call_line is where
         * the function around it calls it. */
        Dwarf_Die *cu = dwfl_module_addrdie(mod, at, &bias);
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
