/* SPDX-License-Identifier: MIT */

/*
 * An allocator preloaded before this library (LD_PRELOAD="libjemalloc.so.2 libmemstrack-heap.so", as a
 * process may set it for its own children) comes first in the lookup order: the dynamic loader bound
 * every object's calls of malloc, free and the library's other names to it, and the library's entry
 * points would see nothing. rebind_objects() binds those calls to the library, as the loader binds them
 * when the library comes first: in each loaded object, every GOT slot the loader filled for one of the
 * names the library exports (its JUMP_SLOT and GLOB_DAT relocations) gets the library's function. The
 * library then calls that allocator as its real one (interpose_next()).
 *
 * A program that defines malloc itself calls it directly, through no slot: that case stays refused. Only
 * what is loaded at the start is rebound; a library dlopen()ed later calls the allocator directly.
 * Libc only and no allocation: the loader's own tables, read in place.
 */

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "library.h"
#include "rebind.h"

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* An object's dynamic tables, as its loaded image holds them. */
typedef struct Tables {
        uintptr_t base;
        const ElfW(Sym) *symbols;
        const char *strings;
        const uint32_t *gnu_hash;
        const ElfW(Rela) *relocations[2];       /* DT_JMPREL, DT_RELA */
        size_t n_relocations[2];
        uintptr_t relro_start, relro_end;       /* read-only after relocation (PT_GNU_RELRO) */
} Tables;

/* The loader rewrites most dynamic entries to addresses in place; where it cannot (a read-only dynamic
 * section), they are still offsets from the object's base. */
static uintptr_t dynamic_address(uintptr_t base, uintptr_t value) {
        return value < base ? base + value : value;
}

static bool tables_of(const struct dl_phdr_info *info, Tables *ret) {
        const ElfW(Dyn) *dynamic = NULL;

        *ret = (Tables) { .base = info->dlpi_addr };
        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                if (ph->p_type == PT_DYNAMIC)
                        dynamic = (const ElfW(Dyn) *) (info->dlpi_addr + ph->p_vaddr);
                else if (ph->p_type == PT_GNU_RELRO) {
                        ret->relro_start = info->dlpi_addr + ph->p_vaddr;
                        ret->relro_end = ret->relro_start + ph->p_memsz;
                }
        }
        if (!dynamic)
                return false;
        for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
                uintptr_t p = dynamic_address(ret->base, d->d_un.d_ptr);
                switch (d->d_tag) {
                case DT_SYMTAB:
                        ret->symbols = (const ElfW(Sym) *) p;
                        break;
                case DT_STRTAB:
                        ret->strings = (const char *) p;
                        break;
                case DT_GNU_HASH:
                        ret->gnu_hash = (const uint32_t *) p;
                        break;
                case DT_JMPREL:
                        ret->relocations[0] = (const ElfW(Rela) *) p;
                        break;
                case DT_PLTRELSZ:
                        ret->n_relocations[0] = d->d_un.d_val / sizeof(ElfW(Rela));
                        break;
                case DT_RELA:
                        ret->relocations[1] = (const ElfW(Rela) *) p;
                        break;
                case DT_RELASZ:
                        ret->n_relocations[1] = d->d_un.d_val / sizeof(ElfW(Rela));
                        break;
                }
        }
        return ret->symbols && ret->strings;
}

/* This library's tables, found by the address of one of its functions. */
static Tables own;

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
        uintptr_t address = (uintptr_t) data;

        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph->p_vaddr;
                if (ph->p_type == PT_LOAD && address >= start && address < start + ph->p_memsz)
                        return tables_of(info, &own) && own.gnu_hash ? 1 : -1;
        }
        return 0;
}

/* The library's own exported function of a name, 0 if it has none: a lookup in its GNU hash table
 * (buckets of symbol indexes, each chain of hashes ending at one with its low bit set). */
static uintptr_t own_function(const char *name) {
        uint32_t h = 5381;

        for (const unsigned char *c = (const unsigned char *) name; *c; c++)
                h = h * 33 + *c;
        uint32_t n_buckets = own.gnu_hash[0], first = own.gnu_hash[1], bloom_words = own.gnu_hash[2];
        const uint32_t *buckets = (const uint32_t *) ((const ElfW(Addr) *) (own.gnu_hash + 4) + bloom_words);
        const uint32_t *chain = buckets + n_buckets;

        if (n_buckets == 0)
                return 0;
        for (uint32_t i = buckets[h % n_buckets]; i >= first; i++) {
                const ElfW(Sym) *sym = &own.symbols[i];
                uint32_t other = chain[i - first];
                if ((other | 1) == (h | 1) && ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
                    sym->st_shndx != SHN_UNDEF && ELF64_ST_VISIBILITY(sym->st_other) == STV_DEFAULT &&
                    strcmp(own.strings + sym->st_name, name) == 0)
                        return own.base + sym->st_value;
                if (other & 1)
                        break;
        }
        return 0;
}

/* Writes a GOT slot, read-only after relocation in the RELRO part: made writable for the store. */
static void set_slot(const Tables *t, uintptr_t *slot, uintptr_t function) {
        uintptr_t at = (uintptr_t) slot;
        bool relro = at >= t->relro_start && at < t->relro_end;
        uintptr_t page = at & ~((uintptr_t) sysconf(_SC_PAGESIZE) - 1);

        if (relro && mprotect((void *) page, (uintptr_t) sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE) < 0)
                return;
        __atomic_store_n(slot, function, __ATOMIC_RELAXED);
        if (relro)
                (void) mprotect((void *) page, (uintptr_t) sysconf(_SC_PAGESIZE), PROT_READ);
}

static int rebind_object(struct dl_phdr_info *info, size_t size, void *data) {
        Tables t;

        /* The library itself calls the allocator through the real functions, and the vDSO allocates nothing. */
        if (info->dlpi_addr == own.base || !tables_of(info, &t))
                return 0;
        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; t.relocations[k] && i < t.n_relocations[k]; i++) {
                        const ElfW(Rela) *r = &t.relocations[k][i];
                        size_t type = ELF64_R_TYPE(r->r_info), index = ELF64_R_SYM(r->r_info);
                        if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || index == 0)
                                continue;
                        uintptr_t function = own_function(t.strings + t.symbols[index].st_name);
                        if (function)
                                set_slot(&t, (uintptr_t *) (t.base + r->r_offset), function);
                }
        return 0;
}

bool rebind_possible(void) {
#ifdef R_JUMP_SLOT
        return true;
#else
        return false;
#endif
}

bool rebind_objects(const void *own_code) {
#ifdef R_JUMP_SLOT
        if (dl_iterate_phdr(find_own, (void *) own_code) != 1)
                return false;
        (void) dl_iterate_phdr(rebind_object, NULL);
        return true;
#else
        return false;
#endif
}
