/* SPDX-License-Identifier: MIT */

/*
 * memstrackctl footprint VMLINUX [MODULES...]: the static footprint of a built kernel (or any ELF file),
 * read from the files alone, no daemon. Sizes come from the section headers and the symbol table, source
 * directories from DWARF through libdwfl (which also lays out and relocates relocatable files, so .ko
 * modules and .o files work like vmlinux).
 *
 * Sections count when SHF_ALLOC: SHF_EXECINSTR is text; SHT_NOBITS is bss; else read-only is rodata and
 * writable is data. size(1)'s Berkeley text is our text plus rodata.
 *
 * A symbol is attributed to the compilation unit whose code ranges hold its address (functions) or which
 * has a variable at its address (data): the CU's file, relative to its DW_AT_comp_dir, without leading
 * "./" and "../", gives the directory. The CU is the file that emitted the bytes, so a header's
 * out-of-line copy counts where it was compiled, as kbuild's built-in.a of a directory holds it.
 */

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "format.h"
#include "macro.h"

#define NO_DEBUG_INFO "[no debug info]"
#define NO_SYMBOL "[no symbol]"

#define CMP(a, b) (((a) > (b)) - ((a) < (b)))

typedef enum FootprintClass {
        FOOTPRINT_TEXT,
        FOOTPRINT_RODATA,
        FOOTPRINT_DATA,
        FOOTPRINT_BSS,
        _FOOTPRINT_CLASS_MAX,
        _FOOTPRINT_CLASS_INVALID = -EINVAL,
} FootprintClass;

static const char *const class_names[_FOOTPRINT_CLASS_MAX] = { "text", "rodata", "data", "bss" };

typedef struct FootprintFile {
        char *path;
        char *name;                     /* "vmlinux" for the first file's basename, a module's without .ko */
        bool debug_info;
        uint64_t bytes[_FOOTPRINT_CLASS_MAX];
} FootprintFile;

typedef struct FootprintSection {
        size_t file;                    /* index into Footprint.files */
        char *name;
        FootprintClass class;
        uint64_t size;
        uint64_t attributed;            /* bytes covered by symbols (aliases and overlaps once) */
} FootprintSection;

typedef struct FootprintSymbol {
        size_t file;
        ssize_t section;                /* index into Footprint.sections before they are sorted; -1: COMMON */
        const char *section_name;       /* borrowed from its FootprintSection */
        char *name;
        FootprintClass class;
        uint64_t offset;                /* in its section */
        uint64_t size;                  /* st_size, as nm -S prints it */
        uint64_t attributed;            /* bytes no earlier symbol of its section covers */
        const char *directory;          /* borrowed from Footprint.directories; NULL: no debug info */
} FootprintSymbol;

/* An address range of one CU's code or one variable of it, in libdwfl's addresses. */
typedef struct FootprintRange {
        uint64_t start, end;
        const char *directory;
} FootprintRange;

typedef struct Footprint {
        FootprintFile *files;
        size_t n_files;
        FootprintSection *sections;
        size_t n_sections;
        FootprintSymbol *symbols;
        size_t n_symbols;
        char **directories;             /* owned: one per CU */
        size_t n_directories;
} Footprint;

static void footprint_done(Footprint *fp) {
        for (size_t i = 0; i < fp->n_files; i++) {
                free(fp->files[i].path);
                free(fp->files[i].name);
        }
        free(fp->files);
        for (size_t i = 0; i < fp->n_sections; i++)
                free(fp->sections[i].name);
        free(fp->sections);
        for (size_t i = 0; i < fp->n_symbols; i++)
                free(fp->symbols[i].name);
        free(fp->symbols);
        for (size_t i = 0; i < fp->n_directories; i++)
                free(fp->directories[i]);
        free(fp->directories);
}

/* Grows *array of *n elements of size to hold one more; returns the new element, zeroed, or NULL. */
static void *grow(void **array, size_t *n, size_t *allocated, size_t size) {
        if (greedy_realloc(array, allocated, *n + 1, size, 64) < 0)
                return NULL;
        void *e = (char *) *array + (*n)++ * size;
        memset(e, 0, size);
        return e;
}

static FootprintClass section_class(const GElf_Shdr *shdr) {
        if (!(shdr->sh_flags & SHF_ALLOC))
                return _FOOTPRINT_CLASS_INVALID;
        if (shdr->sh_flags & SHF_EXECINSTR)
                return FOOTPRINT_TEXT;
        if (shdr->sh_type == SHT_NOBITS)
                return FOOTPRINT_BSS;
        if (!(shdr->sh_flags & SHF_WRITE))
                return FOOTPRINT_RODATA;
        return FOOTPRINT_DATA;
}

/* The directory of a CU's file: relative to comp_dir when under it, without leading "./", "../" or "/";
 * "." for a file at the top. Returns a new string or NULL. */
static char *cu_directory(const char *name, const char *comp_dir) {
        size_t n;

        if (comp_dir && name[0] == '/' && (n = strlen(comp_dir)) > 0 && strncmp(name, comp_dir, n) == 0 &&
            name[n] == '/')
                name += n + 1;
        for (;;) {
                if (name[0] == '/')
                        name++;
                else if (strncmp(name, "./", 2) == 0)
                        name += 2;
                else if (strncmp(name, "../", 3) == 0)
                        name += 3;
                else
                        break;
        }
        const char *slash = strrchr(name, '/');
        return slash ? strndup(name, (size_t) (slash - name)) : strdup(".");
}

typedef struct RangeList {
        FootprintRange *ranges;
        size_t n, allocated;
} RangeList;

static int range_add(RangeList *l, uint64_t start, uint64_t end, const char *directory) {
        FootprintRange *r;

        if (end <= start)
                return 0;
        r = grow((void **) &l->ranges, &l->n, &l->allocated, sizeof(*l->ranges));
        if (!r)
                return -ENOMEM;
        *r = (FootprintRange) { .start = start, .end = end, .directory = directory };
        return 0;
}

/* Adds the variables with a fixed address below die (and in functions and blocks, for static locals). */
static int add_variables(RangeList *l, Dwarf_Die *parent, Dwarf_Addr bias, const char *directory) {
        Dwarf_Die die;
        int r;

        if (dwarf_child(parent, &die) != 0)
                return 0;
        do {
                int tag = dwarf_tag(&die);

                if (tag == DW_TAG_variable) {
                        Dwarf_Attribute attr;
                        Dwarf_Op *expr;
                        size_t len;

                        if (!dwarf_attr(&die, DW_AT_location, &attr) ||
                            dwarf_getlocation(&attr, &expr, &len) != 0 || len < 1)
                                continue;
                        Dwarf_Addr addr;
                        if (expr[0].atom == DW_OP_addr)
                                addr = expr[0].number;
                        else if (expr[0].atom == DW_OP_addrx || expr[0].atom == DW_OP_GNU_addr_index) {
                                Dwarf_Attribute a;
                                if (dwarf_getlocation_attr(&attr, &expr[0], &a) != 0 || dwarf_formaddr(&a, &addr) != 0)
                                        continue;
                        } else
                                continue;
                        r = range_add(l, addr + bias, addr + bias + 1, directory);
                        if (r < 0)
                                return r;
                } else if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block ||
                           tag == DW_TAG_inlined_subroutine || tag == DW_TAG_namespace) {
                        r = add_variables(l, &die, bias, directory);
                        if (r < 0)
                                return r;
                }
        } while (dwarf_siblingof(&die, &die) == 0);
        return 0;
}

/* The ranges of every CU of dwarf, and their directories (appended to fp->directories). */
static int collect_ranges(Footprint *fp, size_t *directories_allocated, Dwarf *dwarf, Dwarf_Addr bias,
                RangeList *l) {
        Dwarf_Off off = 0, next;
        size_t header_size;
        int r;

        while (dwarf_nextcu(dwarf, off, &next, &header_size, NULL, NULL, NULL) == 0) {
                Dwarf_Die cu;
                Dwarf_Attribute attr;
                Dwarf_Addr base, start, end;
                ptrdiff_t o = 0;

                if (!dwarf_offdie(dwarf, off + header_size, &cu)) {
                        off = next;
                        continue;
                }
                off = next;
                const char *name = dwarf_diename(&cu);
                if (!name)
                        continue;
                const char *comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr));
                char **d = grow((void **) &fp->directories, &fp->n_directories, directories_allocated,
                                sizeof(char *));
                if (!d)
                        return -ENOMEM;
                *d = cu_directory(name, comp_dir);
                if (!*d)
                        return -ENOMEM;

                while ((o = dwarf_ranges(&cu, o, &base, &start, &end)) > 0) {
                        r = range_add(l, start + bias, end + bias, *d);
                        if (r < 0)
                                return r;
                }
                r = add_variables(l, &cu, bias, *d);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int range_compare(const void *a, const void *b) {
        const FootprintRange *x = a, *y = b;

        return CMP(x->start, y->start);
}

/* The directory of the range holding addr, or NULL. Ranges of different CUs do not overlap in practice
 * (code against variables); look back a little in case they do. */
static const char *range_lookup(const RangeList *l, uint64_t addr) {
        size_t lo = SORTED_COUNT_AT_MOST(l->ranges, l->n, start, addr);
        for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++)
                if (addr < l->ranges[i - 1].end)
                        return l->ranges[i - 1].directory;
        return NULL;
}

static int file_error(const char *path, const char *what) {
        fprintf(stderr, "memstrackctl: %s: %s\n", path, what);
        return CTL_EXIT_FAILURE;
}

static const Dwfl_Callbacks offline_callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
};

static void elf_endp(Elf **e) {
        if (*e)
                (void) elf_end(*e);
}

static void dwfl_endp(Dwfl **d) {
        if (*d)
                dwfl_end(*d);
}

static char *file_name(const char *path, bool first) {
        const char *base = strrchr(path, '/');
        size_t n;

        base = base ? base + 1 : path;
        if (first)
                return strdup(base);
        n = strlen(base);
        if (n > 3 && streq(base + n - 3, ".ko"))
                n -= 3;
        return strndup(base, n);
}

typedef struct Growth {
        size_t files, sections, symbols, directories;
} Growth;

/* Reads one file into fp. Returns 0, a CtlExit after telling the user, or -ENOMEM. */
static int footprint_add_file(Footprint *fp, Growth *g, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_(elf_endp) Elf *elf = NULL;
        _cleanup_(dwfl_endp) Dwfl *dwfl = NULL;
        _cleanup_free_ FootprintRange *ranges_owned = NULL;
        RangeList ranges = {};
        struct stat st;
        GElf_Ehdr ehdr;
        size_t shnum, shstrndx, first_section = fp->n_sections, file_index = fp->n_files;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return file_error(path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return file_error(path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return file_error(path, "not a regular file");

        char magic[8] = {};
        bool elf_magic = pread(fd, magic, sizeof(magic), 0) >= SELFMAG && memcmp(magic, ELFMAG, SELFMAG) == 0;
        static const struct {
                const char *magic, *tool;
        } compressed[] = {
                { "\xfd" "7zXZ", "xz -dk" },
                { "\x28\xb5\x2f\xfd", "zstd -d" },
                { "\x1f\x8b", "gzip -dk" },
        };
        for (size_t i = 0; !elf_magic && i < ELEMENTSOF(compressed); i++)
                if (memcmp(magic, compressed[i].magic, strlen(compressed[i].magic)) == 0) {
                        fprintf(stderr, "memstrackctl: %s: compressed; decompress it first (%s)\n", path,
                                compressed[i].tool);
                        return CTL_EXIT_FAILURE;
                }
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
                return file_error(path, elf_magic ? "truncated or corrupt ELF file (ELF header)" : "not an ELF file");
        /* Before libelf reads them: section headers past the end would otherwise read as none. */
        if (ehdr.e_shoff > (uint64_t) st.st_size ||
            (uint64_t) st.st_size - ehdr.e_shoff < (uint64_t) MAX(ehdr.e_shnum, 1) * ehdr.e_shentsize)
                return file_error(path, "truncated ELF file (section headers past its end)");
        if (elf_getshdrnum(elf, &shnum) < 0 || elf_getshdrstrndx(elf, &shstrndx) < 0)
                return file_error(path, "truncated or corrupt ELF file (section headers)");
        if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN && ehdr.e_type != ET_REL)
                return file_error(path, "not an executable, shared object or relocatable ELF file");
        if (ehdr.e_shoff == 0 || shnum == 0)
                return file_error(path, "no section headers");
        if ((uint64_t) st.st_size - ehdr.e_shoff < (uint64_t) shnum * ehdr.e_shentsize)
                return file_error(path, "truncated ELF file (section headers past its end)");

        FootprintFile *f = grow((void **) &fp->files, &fp->n_files, &g->files, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->path = strdup(path);
        f->name = file_name(path, file_index == 0);
        if (!f->path || !f->name)
                return -ENOMEM;

        /* The sections, by index: fp->sections[first_section + ndx] is section ndx (unallocated ones too,
         * with an invalid class, so symbols find theirs by index). */
        for (size_t ndx = 0; ndx < shnum; ndx++) {
                Elf_Scn *scn = elf_getscn(elf, ndx);
                GElf_Shdr shdr;
                const char *name;

                FootprintSection *s = grow((void **) &fp->sections, &fp->n_sections, &g->sections, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                s->file = file_index;
                s->class = _FOOTPRINT_CLASS_INVALID;
                if (!scn || !gelf_getshdr(scn, &shdr))
                        return file_error(path, "truncated or corrupt ELF file (section header)");
                name = elf_strptr(elf, shstrndx, shdr.sh_name);
                s->name = strdup(name ?: "?");
                if (!s->name)
                        return -ENOMEM;
                if (ndx == 0)
                        continue;
                if (shdr.sh_type != SHT_NOBITS &&
                    (shdr.sh_offset > (uint64_t) st.st_size || (uint64_t) st.st_size - shdr.sh_offset < shdr.sh_size))
                        return file_error(path, "truncated ELF file (a section past its end)");
                /* objcopy --only-keep-debug leaves the code's section headers without their bytes. */
                if ((shdr.sh_flags & SHF_ALLOC) && (shdr.sh_flags & SHF_EXECINSTR) && shdr.sh_type == SHT_NOBITS)
                        return file_error(path, "a separate debug info file, without the code: give the binary it "
                                          "belongs to (its debug info is found by build ID or .gnu_debuglink)");
                s->class = section_class(&shdr);
                s->size = shdr.sh_size;
                if (s->class >= 0)
                        f->bytes[s->class] += s->size;
        }

        /* libdwfl for symbols and DWARF: it relocates ET_REL files and finds separate debug info. */
        dwfl = dwfl_begin(&offline_callbacks);
        if (!dwfl)
                return -ENOMEM;
        Dwfl_Module *mod = dwfl_report_offline(dwfl, f->name, path, -1);
        if (!mod || dwfl_report_end(dwfl, NULL, NULL) != 0) {
                fprintf(stderr, "memstrackctl: %s: %s\n", path, dwfl_errmsg(-1));
                return CTL_EXIT_FAILURE;
        }

        Dwarf_Addr dwbias;
        Dwarf *dwarf = dwfl_module_getdwarf(mod, &dwbias);
        if (dwarf) {
                r = collect_ranges(fp, &g->directories, dwarf, dwbias, &ranges);
                ranges_owned = ranges.ranges;
                if (r < 0)
                        return r;
                qsort(ranges.ranges, ranges.n, sizeof(*ranges.ranges), range_compare);
                f->debug_info = ranges.n > 0;
        }

        int n = dwfl_module_getsymtab(mod);
        for (int i = 0; i < n; i++) {
                GElf_Sym sym;
                GElf_Addr addr;
                GElf_Word shndx;
                const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
                ssize_t section = -1;
                FootprintClass class;

                if (!name || sym.st_size == 0 || GELF_ST_TYPE(sym.st_info) == STT_SECTION || GELF_ST_TYPE(sym.st_info) == STT_FILE)
                        continue;
                if (shndx == SHN_COMMON)
                        class = FOOTPRINT_BSS;
                else if (shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == (GElf_Word) -1 || shndx >= shnum)
                        continue;
                else {
                        section = (ssize_t) (first_section + shndx);
                        class = fp->sections[section].class;
                        if (class < 0)
                                continue;
                }

                FootprintSymbol *s = grow((void **) &fp->symbols, &fp->n_symbols, &g->symbols, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                s->file = file_index;
                s->section = section;
                s->class = class;
                s->size = sym.st_size;
                s->section_name = section >= 0 ? fp->sections[section].name : "*COM*";
                if (section >= 0) {
                        GElf_Shdr shdr;
                        s->offset = sym.st_value;
                        if (ehdr.e_type != ET_REL && gelf_getshdr(elf_getscn(elf, shndx), &shdr))
                                s->offset -= shdr.sh_addr;
                }
                s->directory = range_lookup(&ranges, addr);
                s->name = strdup(name);
                if (!s->name)
                        return -ENOMEM;
        }
        return 0;
}

static int symbol_by_place(const void *a, const void *b) {
        const FootprintSymbol *x = a, *y = b;
        int c;

        if ((c = CMP(x->section, y->section)) != 0 || (c = CMP(x->offset, y->offset)) != 0 ||
            (c = CMP(y->size, x->size)) != 0)
                return c;
        return strcmp(x->name, y->name);
}

/* Each symbol's bytes that no symbol before it in its section covers, so aliases and nested symbols
 * count once; each section's sum of them. */
static void attribute_bytes(Footprint *fp) {
        qsort(fp->symbols, fp->n_symbols, sizeof(*fp->symbols), symbol_by_place);
        ssize_t section = -2;
        uint64_t covered = 0;

        for (size_t i = 0; i < fp->n_symbols; i++) {
                FootprintSymbol *s = &fp->symbols[i];

                if (s->section < 0) {
                        s->attributed = s->size;
                        continue;
                }
                if (s->section != section) {
                        section = s->section;
                        covered = 0;
                }
                uint64_t size = fp->sections[section].size;
                uint64_t start = MAX(s->offset, covered), end = s->offset + MIN(s->size, size);
                end = MIN(end, size);
                s->attributed = end > start ? end - start : 0;
                covered = MAX(covered, end);
                fp->sections[section].attributed += s->attributed;
        }
}

static int symbol_by_size(const void *a, const void *b) {
        const FootprintSymbol *x = a, *y = b;
        int c;

        if ((c = CMP(y->size, x->size)) != 0 || (c = strcmp(x->name, y->name)) != 0)
                return c;
        return CMP(x->file, y->file);
}

static int section_by_size(const void *a, const void *b) {
        const FootprintSection *x = a, *y = b;
        int c;

        if ((c = CMP(y->size, x->size)) != 0 || (c = strcmp(x->name, y->name)) != 0)
                return c;
        return CMP(x->file, y->file);
}

typedef struct FootprintDirectory {
        const char *directory;          /* borrowed */
        size_t length;                  /* of the directory's name, cut at --depth */
        uint64_t bytes[_FOOTPRINT_CLASS_MAX];
        uint64_t total;
        uint64_t symbols;
} FootprintDirectory;

static int directory_by_name(const void *a, const void *b) {
        const FootprintDirectory *x = a, *y = b;
        int c = strncmp(x->directory, y->directory, MIN(x->length, y->length));

        return c != 0 ? c : CMP(x->length, y->length);
}

static int directory_by_size(const void *a, const void *b) {
        const FootprintDirectory *x = a, *y = b;
        int c = CMP(y->total, x->total);

        return c != 0 ? c : directory_by_name(a, b);
}

/* The length of directory's first depth components (all of it for depth < 0). */
static size_t depth_length(const char *directory, int64_t depth) {
        size_t n = 0;

        if (depth < 0)
                return strlen(directory);
        for (const char *p = directory; *p; p++)
                if (*p == '/' && ++n == (uint64_t) depth)
                        return (size_t) (p - directory);
        return strlen(directory);
}

/* The directories of every symbol (and one row for section bytes no symbol covers), summed and sorted
 * largest first. */
static int directories_build(const Footprint *fp, FootprintDirectory **ret, size_t *ret_n) {
        _cleanup_free_ FootprintDirectory *d = calloc(fp->n_symbols + 1, sizeof(*d));
        size_t n = 0, m = 0;

        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < fp->n_symbols; i++) {
                const FootprintSymbol *s = &fp->symbols[i];
                const char *dir = s->directory ?: NO_DEBUG_INFO;

                d[n] = (FootprintDirectory) {
                        .directory = dir,
                        .length = s->directory ? depth_length(dir, arg_depth) : strlen(dir),
                        .total = s->attributed,
                        .symbols = 1,
                };
                d[n].bytes[s->class] = s->attributed;
                n++;
        }
        FootprintDirectory none = { .directory = NO_SYMBOL, .length = strlen(NO_SYMBOL) };
        for (size_t i = 0; i < fp->n_sections; i++) {
                const FootprintSection *s = &fp->sections[i];
                if (s->class < 0 || s->size <= s->attributed)
                        continue;
                none.bytes[s->class] += s->size - s->attributed;
                none.total += s->size - s->attributed;
        }
        if (none.total > 0)
                d[n++] = none;

        qsort(d, n, sizeof(*d), directory_by_name);
        for (size_t i = 0; i < n; i++) {
                if (m > 0 && directory_by_name(&d[m - 1], &d[i]) == 0) {
                        for (size_t c = 0; c < _FOOTPRINT_CLASS_MAX; c++)
                                d[m - 1].bytes[c] += d[i].bytes[c];
                        d[m - 1].total += d[i].total;
                        d[m - 1].symbols += d[i].symbols;
                } else
                        d[m++] = d[i];
        }
        qsort(d, m, sizeof(*d), directory_by_size);
        *ret = TAKE_PTR(d);
        *ret_n = m;
        return 0;
}

static size_t shown(size_t n) {
        return arg_limit > 0 && arg_limit < n ? (size_t) arg_limit : n;
}

/* A symbol's name with its module in brackets, as kallsyms prints it, for symbols not in the first file. */
static char *symbol_label(const Footprint *fp, const FootprintSymbol *s) {
        char *label;

        if (s->file == 0)
                return strdup(s->name);
        if (asprintf(&label, "%s [%s]", s->name, fp->files[s->file].name) < 0)
                return NULL;
        return label;
}

static int json_add_classes(json_t *o, const uint64_t bytes[_FOOTPRINT_CLASS_MAX]) {
        uint64_t total = 0;

        for (size_t c = 0; c < _FOOTPRINT_CLASS_MAX; c++) {
                if (json_object_set_new(o, class_names[c], json_integer((json_int_t) bytes[c])) < 0)
                        return -ENOMEM;
                total += bytes[c];
        }
        return json_object_set_new(o, "total", json_integer((json_int_t) total)) < 0 ? -ENOMEM : 0;
}

static int print_json(const Footprint *fp, const char *by, const FootprintDirectory *dirs, size_t n_dirs) {
        json_auto_t *root = json_object(), *files = json_array(), *rows = json_array(), *totals = json_object();
        uint64_t sum[_FOOTPRINT_CLASS_MAX] = {};
        size_t n = 0;

        if (!root || !files || !rows || !totals)
                return -ENOMEM;
        for (size_t i = 0; i < fp->n_files; i++) {
                const FootprintFile *f = &fp->files[i];
                json_t *o = json_pack("{s:s,s:s,s:b}", "path", f->path, "name", f->name, "debugInfo", f->debug_info);
                if (!o || json_array_append_new(files, o) < 0 || json_add_classes(o, f->bytes) < 0)
                        return -ENOMEM;
                for (size_t c = 0; c < _FOOTPRINT_CLASS_MAX; c++)
                        sum[c] += f->bytes[c];
        }
        if (json_add_classes(totals, sum) < 0)
                return -ENOMEM;

        if (streq(by, "directory")) {
                n = n_dirs;
                for (size_t i = 0; i < shown(n); i++) {
                        json_t *o = json_pack("{s:s%,s:I}", "directory", dirs[i].directory, dirs[i].length,
                                              "symbols", (json_int_t) dirs[i].symbols);
                        if (!o || json_array_append_new(rows, o) < 0 || json_add_classes(o, dirs[i].bytes) < 0)
                                return -ENOMEM;
                }
        } else if (streq(by, "symbol")) {
                n = fp->n_symbols;
                for (size_t i = 0; i < shown(n); i++) {
                        const FootprintSymbol *s = &fp->symbols[i];
                        json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:s,s:o}", "name", s->name,
                                              "file", fp->files[s->file].name, "size", (json_int_t) s->size,
                                              "class", class_names[s->class],
                                              "section", s->section_name,
                                              "directory", s->directory ? json_string(s->directory) : json_null());
                        if (!o || json_array_append_new(rows, o) < 0)
                                return -ENOMEM;
                }
        } else {
                for (size_t i = 0; i < fp->n_sections; i++) {
                        const FootprintSection *s = &fp->sections[i];
                        if (s->class < 0)
                                continue;
                        if (n++ >= shown(SIZE_MAX))
                                continue;
                        json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "name", s->name, "file", fp->files[s->file].name,
                                              "size", (json_int_t) s->size, "class", class_names[s->class]);
                        if (!o || json_array_append_new(rows, o) < 0)
                                return -ENOMEM;
                }
        }
        if (json_object_set_new(root, "by", json_string(by)) < 0 ||
            json_object_set_new(root, "depth", arg_depth >= 0 ? json_integer(arg_depth) : json_null()) < 0 ||
            json_object_set(root, "files", files) < 0 ||
            json_object_set(root, "totals", totals) < 0 ||
            json_object_set(root, streq(by, "directory") ? "directories" : streq(by, "symbol") ? "symbols" : "sections",
                            rows) < 0 ||
            json_object_set_new(root, "notShown", json_integer((json_int_t) (n - shown(n)))) < 0)
                return -ENOMEM;
        return ctl_print_json(root);
}

static int print_text(const Footprint *fp, const char *by, const FootprintDirectory *dirs, size_t n_dirs) {
        static const TableColumn directory_columns[] = {
                { .header = "TOTAL", .align = TABLE_ALIGN_RIGHT },
                { .header = "TEXT", .align = TABLE_ALIGN_RIGHT },
                { .header = "RODATA", .align = TABLE_ALIGN_RIGHT },
                { .header = "DATA", .align = TABLE_ALIGN_RIGHT },
                { .header = "BSS", .align = TABLE_ALIGN_RIGHT },
                { .header = "SYMBOLS", .align = TABLE_ALIGN_RIGHT },
                { .header = "DIRECTORY", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 10 },
        };
        static const TableColumn symbol_columns[] = {
                { .header = "SIZE", .align = TABLE_ALIGN_RIGHT },
                { .header = "CLASS", .align = TABLE_ALIGN_LEFT },
                { .header = "SECTION", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
                { .header = "DIRECTORY", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 10 },
                { .header = "SYMBOL", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 10 },
        };
        static const TableColumn section_columns[] = {
                { .header = "SIZE", .align = TABLE_ALIGN_RIGHT },
                { .header = "CLASS", .align = TABLE_ALIGN_LEFT },
                { .header = "SECTION", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
                { .header = "FILE", .align = TABLE_ALIGN_LEFT, .elastic = true, .min_width = 8 },
        };
        _cleanup_(table_freep) Table *t = NULL;
        uint64_t sum[_FOOTPRINT_CLASS_MAX] = {};
        size_t n = 0;
        int r;

        if (streq(by, "directory")) {
                r = table_new(directory_columns, ELEMENTSOF(directory_columns), &t);
                if (r < 0)
                        return r;
                n = n_dirs;
                for (size_t i = 0; i < shown(n); i++) {
                        const FootprintDirectory *d = &dirs[i];
                        if ((r = table_add_cellf(t, "%" PRIu64, d->total)) < 0)
                                return r;
                        for (size_t c = 0; c < _FOOTPRINT_CLASS_MAX; c++)
                                if ((r = table_add_cellf(t, "%" PRIu64, d->bytes[c])) < 0)
                                        return r;
                        if ((r = table_add_cellf(t, "%" PRIu64, d->symbols)) < 0 ||
                            (r = table_add_cellf(t, "%.*s", (int) d->length, d->directory)) < 0)
                                return r;
                }
        } else if (streq(by, "symbol")) {
                r = table_new(symbol_columns, ELEMENTSOF(symbol_columns), &t);
                if (r < 0)
                        return r;
                n = fp->n_symbols;
                for (size_t i = 0; i < shown(n); i++) {
                        const FootprintSymbol *s = &fp->symbols[i];
                        _cleanup_free_ char *label = symbol_label(fp, s);
                        if (!label)
                                return -ENOMEM;
                        if ((r = table_add_cellf(t, "%" PRIu64, s->size)) < 0 ||
                            (r = table_add_cell(t, class_names[s->class])) < 0 ||
                            (r = table_add_cell(t, s->section_name)) < 0 ||
                            (r = table_add_cell(t, s->directory ?: NO_DEBUG_INFO)) < 0 ||
                            (r = table_add_cell(t, label)) < 0)
                                return r;
                }
        } else {
                r = table_new(section_columns, ELEMENTSOF(section_columns), &t);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < fp->n_sections; i++) {
                        const FootprintSection *s = &fp->sections[i];
                        if (s->class < 0)
                                continue;
                        if (n++ >= shown(SIZE_MAX))
                                continue;
                        if ((r = table_add_cellf(t, "%" PRIu64, s->size)) < 0 ||
                            (r = table_add_cell(t, class_names[s->class])) < 0 ||
                            (r = table_add_cell(t, s->name)) < 0 ||
                            (r = table_add_cell(t, fp->files[s->file].name)) < 0)
                                return r;
                }
        }
        table_set_header(t, arg_legend);
        r = table_print(t, stdout, format_terminal_columns());
        if (r < 0 || !arg_legend)
                return r;

        for (size_t i = 0; i < fp->n_files; i++)
                for (size_t c = 0; c < _FOOTPRINT_CLASS_MAX; c++)
                        sum[c] += fp->files[i].bytes[c];
        printf("\n%zu file%s: text %" PRIu64 ", rodata %" PRIu64 ", data %" PRIu64 ", bss %" PRIu64
               ", total %" PRIu64 " bytes", fp->n_files, fp->n_files == 1 ? "" : "s",
               sum[FOOTPRINT_TEXT], sum[FOOTPRINT_RODATA], sum[FOOTPRINT_DATA], sum[FOOTPRINT_BSS],
               sum[FOOTPRINT_TEXT] + sum[FOOTPRINT_RODATA] + sum[FOOTPRINT_DATA] + sum[FOOTPRINT_BSS]);
        if (n > shown(n))
                printf("; %zu more rows not shown", n - shown(n));
        putchar('\n');
        for (size_t i = 0; i < fp->n_files; i++)
                if (!fp->files[i].debug_info)
                        printf("%s has no debug info: its symbols are under %s.\n", fp->files[i].path,
                               NO_DEBUG_INFO);
        return 0;
}

int verb_footprint(int argc, char *argv[]) {
        _cleanup_(footprint_done) Footprint fp = {};
        _cleanup_free_ FootprintDirectory *dirs = NULL;
        const char *by = arg_by ?: "directory";
        Growth g = {};
        size_t n_dirs = 0;
        int r;

        if (!streq(by, "directory") && !streq(by, "symbol") && !streq(by, "section")) {
                fprintf(stderr, "memstrackctl: --by takes directory, symbol or section, not '%s'.\n", by);
                return CTL_EXIT_USAGE;
        }
        if (arg_depth == 0) {
                fprintf(stderr, "memstrackctl: footprint: --depth takes 1 or more.\n");
                return CTL_EXIT_USAGE;
        }
        if (elf_version(EV_CURRENT) == EV_NONE)
                return -EIO;

        for (int i = 1; i < argc; i++) {
                r = footprint_add_file(&fp, &g, argv[i]);
                if (r != 0)
                        return r;
        }
        attribute_bytes(&fp);
        qsort(fp.symbols, fp.n_symbols, sizeof(*fp.symbols), symbol_by_size);
        qsort(fp.sections, fp.n_sections, sizeof(*fp.sections), section_by_size);
        r = directories_build(&fp, &dirs, &n_dirs);
        if (r < 0)
                return r;

        if (arg_json != CTL_JSON_OFF)
                return print_json(&fp, by, dirs, n_dirs);
        return print_text(&fp, by, dirs, n_dirs);
}
