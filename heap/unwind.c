/* SPDX-License-Identifier: MIT */

/*
 * The unwinder of heap/unwind.h. A frame's rule comes from the FDE that covers its address in the
 * .eh_frame of its object (found through the object's .eh_frame_hdr search table): the CIE's and the FDE's
 * call frame instructions run up to the address give where the CFA is, where the return address and the
 * frame pointer (%rbp, which later frames may compute their CFA from) are saved. Only that much is kept,
 * in 8 bytes, in a lock-free hash table keyed by the address looked up.
 *
 * Lookups are made at the return address minus one (the call instruction: a noreturn call may be the
 * last instruction of its function), except for a frame a signal interrupted, whose address is the
 * instruction itself.
 */

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "spin-lock.h"
#include "unwind.h"

#if defined(__x86_64__)

#define CACHE_BITS_FIRST 10u            /* 16 KiB: most programs' sampled stacks need no more */
#define CACHE_BITS_MAX 18u              /* 4 MiB */
#define CACHE_PROBES 8u
#define KEY_EMPTY 0u
#define KEY_BUSY 1u                     /* a writer is filling the slot */
#define KEY_ADDRESS_BITS 48u            /* user-space addresses; the generation is above them */
#define STATES_MAX 8u                   /* DW_CFA_remember_state nesting */

/* DWARF register numbers on x86-64. */
#define DWARF_RBP 6u
#define DWARF_RSP 7u

/* Call frame instructions (DWARF 5, 6.4.2) and the pointer encodings of .eh_frame (LSB). */
enum {
        DW_CFA_nop = 0x00,
        DW_CFA_set_loc = 0x01,
        DW_CFA_advance_loc1 = 0x02,
        DW_CFA_advance_loc2 = 0x03,
        DW_CFA_advance_loc4 = 0x04,
        DW_CFA_offset_extended = 0x05,
        DW_CFA_restore_extended = 0x06,
        DW_CFA_undefined = 0x07,
        DW_CFA_same_value = 0x08,
        DW_CFA_register = 0x09,
        DW_CFA_remember_state = 0x0a,
        DW_CFA_restore_state = 0x0b,
        DW_CFA_def_cfa = 0x0c,
        DW_CFA_def_cfa_register = 0x0d,
        DW_CFA_def_cfa_offset = 0x0e,
        DW_CFA_def_cfa_expression = 0x0f,
        DW_CFA_expression = 0x10,
        DW_CFA_offset_extended_sf = 0x11,
        DW_CFA_def_cfa_sf = 0x12,
        DW_CFA_def_cfa_offset_sf = 0x13,
        DW_CFA_val_offset = 0x14,
        DW_CFA_val_offset_sf = 0x15,
        DW_CFA_val_expression = 0x16,
        DW_CFA_GNU_args_size = 0x2e,
        DW_CFA_GNU_negative_offset_extended = 0x2f,
        DW_CFA_advance_loc = 0x40,
        DW_CFA_offset = 0x80,
        DW_CFA_restore = 0xc0,

        DW_OP_deref = 0x06,
        DW_OP_breg0 = 0x70,

        DW_EH_PE_absptr = 0x00,
        DW_EH_PE_uleb128 = 0x01,
        DW_EH_PE_udata2 = 0x02,
        DW_EH_PE_udata4 = 0x03,
        DW_EH_PE_udata8 = 0x04,
        DW_EH_PE_sleb128 = 0x09,
        DW_EH_PE_sdata2 = 0x0a,
        DW_EH_PE_sdata4 = 0x0b,
        DW_EH_PE_sdata8 = 0x0c,
        DW_EH_PE_pcrel = 0x10,
        DW_EH_PE_datarel = 0x30,
        DW_EH_PE_indirect = 0x80,
        DW_EH_PE_omit = 0xff,
};

typedef enum RuleKind {
        RULE_NORMAL,
        RULE_OUTERMOST,         /* the return address is undefined: the stack ends here */
        RULE_SIGNAL,            /* the signal trampoline: the interrupted frame's registers are in a ucontext */
        RULE_UNSUPPORTED,
} RuleKind;

typedef enum CfaBase {
        CFA_SP,                 /* CFA = %rsp + offset */
        CFA_BP,                 /* CFA = %rbp + offset */
        CFA_SP_DEREF,           /* CFA = *(%rsp + offset) */
        CFA_BP_DEREF,           /* CFA = *(%rbp + offset): a realigned stack (GCC's DRAP) */
} CfaBase;

typedef enum BpRule {
        BP_SAME,                /* the caller's %rbp is this frame's */
        BP_AT_CFA,              /* saved at CFA + bp_offset */
        BP_AT_BP,               /* saved at %rbp + bp_offset (DW_CFA_expression DW_OP_breg6) */
        BP_UNKNOWN,             /* not followed: a later frame whose CFA needs it is unsupported */
} BpRule;

/* What a frame needs: 8 bytes, stored whole in the cache. The return address is at CFA + ra_offset. */
typedef struct Rule {
        int32_t cfa_offset;
        int16_t bp_offset;
        int8_t ra_offset;
        uint8_t kind : 2, cfa_base : 2, bp_rule : 2;
} Rule;

_Static_assert(sizeof(Rule) == sizeof(uint64_t), "a rule is one word");

/* key: the address looked up | the generation << KEY_ADDRESS_BITS; rule: a Rule. A reader takes the rule
 * when the key matches before and after it read it (a writer sets KEY_BUSY first, the key last). */
typedef struct CacheSlot {
        uint64_t key;
        uint64_t rule;
} CacheSlot;

/* The table starts small and is replaced by one four times the size when half full: a table that a
 * hash spreads over pages faults in every page it touches, twice (a read maps the zero page, the first
 * write copies it), which cost a short program more than its stacks. A replaced table stays mapped for
 * the readers still in it (all of them take a third of the last one) and its rules are worked out again. */
typedef struct Cache {
        unsigned bits;
        uint64_t used;
        CacheSlot slots[];
} Cache;

static Cache *cache;
static int growing;
static uint64_t generation = 1;         /* 1 to 0xffff; unwind_flush() moves it on */
static uint64_t rules_cached, rule_misses;

static Cache *cache_new(unsigned bits) {
        Cache *c = mmap(NULL, sizeof(Cache) + ((size_t) 1 << bits) * sizeof(CacheSlot), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (c == MAP_FAILED)
                return NULL;
        c->bits = bits;
        return c;
}

bool unwind_init(void) {
        Cache *c = cache_new(CACHE_BITS_FIRST);

        if (!c)
                return false;
        __atomic_store_n(&cache, c, __ATOMIC_RELEASE);
        return true;
}

/* c is half full: the next one, unless another thread makes it or the last size is reached. */
static void cache_grow(Cache *c) {
        if (c->bits + 2 > CACHE_BITS_MAX || !lock_take(&growing, true))
                return;
        Cache *next = __atomic_load_n(&cache, __ATOMIC_RELAXED) == c ? cache_new(c->bits + 2) : NULL;
        if (next)
                __atomic_store_n(&cache, next, __ATOMIC_RELEASE);
        lock_release(&growing);
}

void unwind_flush(void) {
        uint64_t g = __atomic_load_n(&generation, __ATOMIC_RELAXED), next;

        /* After 65535 flushes a key of the first generation would match again: a program that unloads
         * that many libraries has its rules worked out again rather than cached for long. */
        do
                next = g % 0xffff + 1;
        while (!__atomic_compare_exchange_n(&generation, &g, next, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void unwind_get_stats(uint64_t *ret_cached, uint64_t *ret_misses) {
        *ret_cached = __atomic_load_n(&rules_cached, __ATOMIC_RELAXED);
        *ret_misses = __atomic_load_n(&rule_misses, __ATOMIC_RELAXED);
}

/* ---- The cache ---------------------------------------------------------------------------------------- */

static size_t cache_home(const Cache *c, uint64_t address) {
        return (size_t) ((address * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - c->bits));
}

static bool cache_get(const Cache *c, uint64_t address, uint64_t key, Rule *ret) {
        size_t mask = ((size_t) 1 << c->bits) - 1;

        for (size_t i = cache_home(c, address), probes = 0; probes < CACHE_PROBES; probes++, i = (i + 1) & mask) {
                const CacheSlot *s = &c->slots[i];
                uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);

                if (k == KEY_EMPTY)
                        return false;
                if (k != key)
                        continue;
                uint64_t rule = __atomic_load_n(&s->rule, __ATOMIC_RELAXED);
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                if (__atomic_load_n(&s->key, __ATOMIC_RELAXED) != key)
                        return false;   /* rewritten meanwhile */
                memcpy(ret, &rule, sizeof(rule));
                return true;
        }
        return false;
}

/* Keeps a rule, in an empty slot or one of an older generation; not at all when the probes find none. */
static void cache_put(Cache *c, uint64_t address, uint64_t key, Rule rule) {
        size_t mask = ((size_t) 1 << c->bits) - 1;
        uint64_t g = key >> KEY_ADDRESS_BITS, value;

        memcpy(&value, &rule, sizeof(value));
        for (size_t i = cache_home(c, address), probes = 0; probes < CACHE_PROBES; probes++, i = (i + 1) & mask) {
                CacheSlot *s = &c->slots[i];
                uint64_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);

                if (k == key)
                        return;
                if (k == KEY_BUSY || (k != KEY_EMPTY && k >> KEY_ADDRESS_BITS == g))
                        continue;
                if (!__atomic_compare_exchange_n(&s->key, &k, KEY_BUSY, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                        continue;
                __atomic_thread_fence(__ATOMIC_RELEASE);
                __atomic_store_n(&s->rule, value, __ATOMIC_RELAXED);
                __atomic_store_n(&s->key, key, __ATOMIC_RELEASE);
                __atomic_fetch_add(&rules_cached, 1, __ATOMIC_RELAXED);
                if (__atomic_add_fetch(&c->used, 1, __ATOMIC_RELAXED) * 2 > mask)
                        cache_grow(c);
                return;
        }
}

/* ---- Reading .eh_frame -------------------------------------------------------------------------------- */

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; *p < end; shift += 7) {
                uint8_t b = *(*p)++;
                if (shift < 64)
                        v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

static bool read_sleb(const uint8_t **p, const uint8_t *end, int64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; *p < end;) {
                uint8_t b = *(*p)++;
                if (shift < 64)
                        v |= (uint64_t) (b & 0x7f) << shift;
                shift += 7;
                if (!(b & 0x80)) {
                        if (shift < 64 && (b & 0x40))
                                v |= ~UINT64_C(0) << shift;
                        *ret = (int64_t) v;
                        return true;
                }
        }
        return false;
}

static bool read_fixed(const uint8_t **p, const uint8_t *end, void *ret, size_t n) {
        if ((size_t) (end - *p) < n)
                return false;
        memcpy(ret, *p, n);
        *p += n;
        return true;
}

/* A pointer in encoding enc; datarel is what DW_EH_PE_datarel is relative to (0: not allowed). Indirect
 * pointers are read as the address of the pointer, never followed: only personality routines use them,
 * and those are skipped. */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t datarel, uint64_t *ret) {
        const uint8_t *at = *p;
        uint64_t v;

        switch (enc & 0x0f) {
        case DW_EH_PE_absptr:
        case DW_EH_PE_udata8:
        case DW_EH_PE_sdata8:
                if (!read_fixed(p, end, &v, 8))
                        return false;
                break;
        case DW_EH_PE_uleb128:
                if (!read_uleb(p, end, &v))
                        return false;
                break;
        case DW_EH_PE_sleb128: {
                int64_t s;
                if (!read_sleb(p, end, &s))
                        return false;
                v = (uint64_t) s;
                break;
        }
        case DW_EH_PE_udata2: {
                uint16_t u;
                if (!read_fixed(p, end, &u, 2))
                        return false;
                v = u;
                break;
        }
        case DW_EH_PE_sdata2: {
                int16_t s;
                if (!read_fixed(p, end, &s, 2))
                        return false;
                v = (uint64_t) (int64_t) s;
                break;
        }
        case DW_EH_PE_udata4: {
                uint32_t u;
                if (!read_fixed(p, end, &u, 4))
                        return false;
                v = u;
                break;
        }
        case DW_EH_PE_sdata4: {
                int32_t s;
                if (!read_fixed(p, end, &s, 4))
                        return false;
                v = (uint64_t) (int64_t) s;
                break;
        }
        default:
                return false;
        }
        switch (enc & 0x70) {
        case 0:
                break;
        case DW_EH_PE_pcrel:
                v += (uint64_t) (uintptr_t) at;
                break;
        case DW_EH_PE_datarel:
                if (datarel == 0)
                        return false;
                v += datarel;
                break;
        default:
                return false;
        }
        *ret = v;
        return true;
}

/* The .eh_frame_hdr of the object mapped at address, or NULL. */
#if HAVE_DL_FIND_OBJECT
static const uint8_t *find_eh_frame_hdr(uint64_t address) {
        struct dl_find_object o;

        if (_dl_find_object((void *) (uintptr_t) address, &o) != 0)
                return NULL;
        return o.dlfo_eh_frame;
}
#else
typedef struct HdrSearch {
        uint64_t address;
        const uint8_t *hdr;
} HdrSearch;

static int find_hdr_in(struct dl_phdr_info *info, size_t size, void *data) {
        HdrSearch *search = data;
        const uint8_t *hdr = NULL;
        bool here = false;

        for (int i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uint64_t start = info->dlpi_addr + ph->p_vaddr;
                if (ph->p_type == PT_LOAD && search->address >= start && search->address - start < ph->p_memsz)
                        here = true;
                else if (ph->p_type == PT_GNU_EH_FRAME)
                        hdr = (const uint8_t *) (uintptr_t) start;
        }
        if (!here)
                return 0;
        search->hdr = hdr;
        return 1;
}

static const uint8_t *find_eh_frame_hdr(uint64_t address) {
        HdrSearch search = { .address = address };

        (void) dl_iterate_phdr(find_hdr_in, &search);
        return search.hdr;
}
#endif

/* The FDE whose range holds address, from the binary search table of .eh_frame_hdr; NULL if none. */
static const uint8_t *find_fde(uint64_t address) {
        const uint8_t *hdr = find_eh_frame_hdr(address), *p;
        uint64_t base = (uint64_t) (uintptr_t) hdr, eh_frame, count;

        /* version 1; the table as every linker writes it: signed 4-byte offsets from the header */
        if (!hdr || hdr[0] != 1 || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
                return NULL;
        p = hdr + 4;
        if (!read_encoded(&p, p + 16, hdr[1], base, &eh_frame) || !read_encoded(&p, p + 16, hdr[2], base, &count))
                return NULL;
        const int32_t *table = (const int32_t *) p;
        size_t lo = 0, hi = count;
        if (count == 0 || address < base + (uint64_t) (int64_t) table[0])
                return NULL;
        /* The last entry that starts at or before address. */
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (base + (uint64_t) (int64_t) table[2 * mid] <= address)
                        lo = mid;
                else
                        hi = mid;
        }
        return hdr + table[2 * lo + 1];
}

/* ---- Call frame instructions -------------------------------------------------------------------------- */

typedef enum RegHow {
        HOW_SAME,
        HOW_UNDEFINED,
        HOW_AT_CFA,             /* saved at CFA + offset */
        HOW_AT_BP,              /* saved at %rbp + offset */
        HOW_OTHER,              /* anything else: not followed */
} RegHow;

typedef struct RegRule {
        RegHow how;
        int64_t offset;
} RegRule;

typedef struct CfiState {
        uint64_t cfa_reg;
        int64_t cfa_offset;
        bool cfa_deref;
        bool cfa_unsupported;   /* an expression other than breg + deref */
        RegRule bp, ra;
} CfiState;

typedef struct Cie {
        uint64_t code_align;
        int64_t data_align;
        uint64_t ra_reg;
        uint8_t fde_encoding;
        bool augmented;         /* 'z': FDEs have augmentation data */
        bool signal;            /* 'S': the signal trampoline */
        const uint8_t *instructions, *end;
} Cie;

static bool parse_cie(const uint8_t *cie, Cie *ret) {
        uint32_t length, id;
        const uint8_t *p = cie, *end;

        memcpy(&length, p, 4);
        if (length == 0 || length == UINT32_MAX)
                return false;   /* a terminator, or 64-bit DWARF, which no x86-64 linker writes */
        end = p + 4 + length;
        p += 4;
        if (!read_fixed(&p, end, &id, 4) || id != 0)
                return false;
        uint8_t version = *p++;
        if (version != 1 && version != 3 && version != 4)
                return false;
        const char *aug = (const char *) p;
        size_t aug_len = strnlen(aug, (size_t) (end - p));
        if (p + aug_len >= end)
                return false;
        p += aug_len + 1;
        if (version == 4)
                p += 2;         /* address_size, segment_selector_size */
        *ret = (Cie) { .fde_encoding = DW_EH_PE_absptr };
        if (!read_uleb(&p, end, &ret->code_align) || !read_sleb(&p, end, &ret->data_align))
                return false;
        if (version == 1) {
                if (p >= end)
                        return false;
                ret->ra_reg = *p++;
        } else if (!read_uleb(&p, end, &ret->ra_reg))
                return false;
        if (aug[0] == 'z') {
                uint64_t n;
                if (!read_uleb(&p, end, &n) || n > (uint64_t) (end - p))
                        return false;
                const uint8_t *data = p, *data_end = p + n;
                ret->augmented = true;
                for (const char *c = aug + 1; *c; c++) {
                        uint64_t skipped;
                        if (*c == 'R') {
                                if (data >= data_end)
                                        return false;
                                ret->fde_encoding = *data++;
                        } else if (*c == 'P') {
                                if (data >= data_end)
                                        return false;
                                /* Skipped: its format says its size. */
                                uint8_t enc = *data++;
                                if (!read_encoded(&data, data_end, enc & 0x0f, 0, &skipped))
                                        return false;
                        } else if (*c == 'L')
                                data++;
                        else if (*c == 'S')
                                ret->signal = true;
                        else
                                break;  /* unknown: the rest of the data is skipped by its length */
                }
                p = data_end;
        } else if (aug[0] != '\0')
                return false;
        ret->instructions = p;
        ret->end = end;
        return true;
}

static void set_reg(CfiState *s, const Cie *cie, uint64_t reg, RegHow how, int64_t offset) {
        RegRule r = { how, offset };

        if (reg == DWARF_RBP)
                s->bp = r;
        else if (reg == cie->ra_reg)
                s->ra = r;
}

static void restore_reg(CfiState *s, const CfiState *initial, const Cie *cie, uint64_t reg) {
        if (reg == DWARF_RBP)
                s->bp = initial->bp;
        else if (reg == cie->ra_reg)
                s->ra = initial->ra;
}

/*
 * Runs instructions [p, end) from location loc until the location passes address; fde_encoding for
 * DW_CFA_set_loc, initial the state after the CIE's instructions (NULL while running them). false on an
 * instruction it does not know or a malformed one.
 */
static bool run_cfi(const uint8_t *p, const uint8_t *end, const Cie *cie, uint64_t loc, uint64_t address,
                    CfiState *s, const CfiState *initial) {
        CfiState saved[STATES_MAX];
        unsigned n_saved = 0;

        while (p < end) {
                uint8_t op = *p++;
                uint64_t reg, u, delta = 0;
                int64_t sv;

                switch (op & 0xc0) {
                case DW_CFA_advance_loc:
                        delta = (op & 0x3f) * cie->code_align;
                        goto advance;
                case DW_CFA_offset:
                        if (!read_uleb(&p, end, &u))
                                return false;
                        set_reg(s, cie, op & 0x3f, HOW_AT_CFA, (int64_t) u * cie->data_align);
                        continue;
                case DW_CFA_restore:
                        if (initial)
                                restore_reg(s, initial, cie, op & 0x3f);
                        continue;
                default:
                        break;
                }
                switch (op) {
                case DW_CFA_nop:
                        break;
                case DW_CFA_set_loc:
                        if (!read_encoded(&p, end, cie->fde_encoding, 0, &u))
                                return false;
                        if (u > address)
                                return true;
                        loc = u;
                        break;
                case DW_CFA_advance_loc1: {
                        uint8_t d;
                        if (!read_fixed(&p, end, &d, 1))
                                return false;
                        delta = d * cie->code_align;
                        goto advance;
                }
                case DW_CFA_advance_loc2: {
                        uint16_t d;
                        if (!read_fixed(&p, end, &d, 2))
                                return false;
                        delta = d * cie->code_align;
                        goto advance;
                }
                case DW_CFA_advance_loc4: {
                        uint32_t d;
                        if (!read_fixed(&p, end, &d, 4))
                                return false;
                        delta = d * cie->code_align;
                        goto advance;
                }
                case DW_CFA_offset_extended:
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
                                return false;
                        set_reg(s, cie, reg, HOW_AT_CFA, (int64_t) u * cie->data_align);
                        break;
                case DW_CFA_offset_extended_sf:
                        if (!read_uleb(&p, end, &reg) || !read_sleb(&p, end, &sv))
                                return false;
                        set_reg(s, cie, reg, HOW_AT_CFA, sv * cie->data_align);
                        break;
                case DW_CFA_GNU_negative_offset_extended:
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
                                return false;
                        set_reg(s, cie, reg, HOW_AT_CFA, -(int64_t) u * cie->data_align);
                        break;
                case DW_CFA_restore_extended:
                        if (!read_uleb(&p, end, &reg))
                                return false;
                        if (initial)
                                restore_reg(s, initial, cie, reg);
                        break;
                case DW_CFA_undefined:
                case DW_CFA_same_value:
                        if (!read_uleb(&p, end, &reg))
                                return false;
                        set_reg(s, cie, reg, op == DW_CFA_undefined ? HOW_UNDEFINED : HOW_SAME, 0);
                        break;
                case DW_CFA_register:
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
                                return false;
                        set_reg(s, cie, reg, HOW_OTHER, 0);
                        break;
                case DW_CFA_val_offset:
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
                                return false;
                        set_reg(s, cie, reg, HOW_OTHER, 0);
                        break;
                case DW_CFA_val_offset_sf:
                        if (!read_uleb(&p, end, &reg) || !read_sleb(&p, end, &sv))
                                return false;
                        set_reg(s, cie, reg, HOW_OTHER, 0);
                        break;
                case DW_CFA_remember_state:
                        if (n_saved == STATES_MAX)
                                return false;
                        saved[n_saved++] = *s;
                        break;
                case DW_CFA_restore_state:
                        if (n_saved == 0)
                                return false;
                        *s = saved[--n_saved];
                        break;
                case DW_CFA_def_cfa:
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u))
                                return false;
                        s->cfa_reg = reg;
                        s->cfa_offset = (int64_t) u;
                        s->cfa_deref = s->cfa_unsupported = false;
                        break;
                case DW_CFA_def_cfa_sf:
                        if (!read_uleb(&p, end, &reg) || !read_sleb(&p, end, &sv))
                                return false;
                        s->cfa_reg = reg;
                        s->cfa_offset = sv * cie->data_align;
                        s->cfa_deref = s->cfa_unsupported = false;
                        break;
                case DW_CFA_def_cfa_register:
                        if (!read_uleb(&p, end, &reg))
                                return false;
                        s->cfa_reg = reg;
                        s->cfa_deref = s->cfa_unsupported = false;
                        break;
                case DW_CFA_def_cfa_offset:
                        if (!read_uleb(&p, end, &u))
                                return false;
                        s->cfa_offset = (int64_t) u;
                        break;
                case DW_CFA_def_cfa_offset_sf:
                        if (!read_sleb(&p, end, &sv))
                                return false;
                        s->cfa_offset = sv * cie->data_align;
                        break;
                case DW_CFA_def_cfa_expression: {
                        /* GCC's realigned frames: DW_OP_breg<r> N; DW_OP_deref. Nothing else is followed. */
                        if (!read_uleb(&p, end, &u) || u > (uint64_t) (end - p))
                                return false;
                        const uint8_t *e = p, *e_end = p + u;
                        p = e_end;
                        s->cfa_unsupported = true;
                        if (e < e_end && *e >= DW_OP_breg0 && *e < DW_OP_breg0 + 32) {
                                reg = *e++ - DW_OP_breg0;
                                if (read_sleb(&e, e_end, &sv) && e + 1 == e_end && *e == DW_OP_deref) {
                                        s->cfa_reg = reg;
                                        s->cfa_offset = sv;
                                        s->cfa_deref = true;
                                        s->cfa_unsupported = false;
                                }
                        }
                        break;
                }
                case DW_CFA_expression:
                case DW_CFA_val_expression: {
                        if (!read_uleb(&p, end, &reg) || !read_uleb(&p, end, &u) || u > (uint64_t) (end - p))
                                return false;
                        const uint8_t *e = p, *e_end = p + u;
                        p = e_end;
                        /* The one GCC writes for %rbp in a realigned frame: saved at %rbp + N. */
                        bool at_bp = op == DW_CFA_expression && reg == DWARF_RBP && e < e_end &&
                                     *e++ == DW_OP_breg0 + DWARF_RBP && read_sleb(&e, e_end, &sv) && e == e_end;
                        set_reg(s, cie, reg, at_bp ? HOW_AT_BP : HOW_OTHER, at_bp ? sv : 0);
                        break;
                }
                case DW_CFA_GNU_args_size:
                        if (!read_uleb(&p, end, &u))
                                return false;
                        break;
                default:
                        return false;
                }
                continue;
advance:
                if (loc + delta > address)
                        return true;
                loc += delta;
        }
        return true;
}

/* The rule of the frame at address, from the unwind tables. */
static Rule compute_rule(uint64_t address) {
        Rule unsupported = { .kind = RULE_UNSUPPORTED };
        const uint8_t *fde = find_fde(address), *p, *end;
        uint32_t length;
        int32_t cie_offset;
        uint64_t pc_begin, pc_range;
        Cie cie;

        if (!fde)
                return unsupported;
        memcpy(&length, fde, 4);
        if (length == 0 || length == UINT32_MAX)
                return unsupported;
        end = fde + 4 + length;
        p = fde + 4;
        if (!read_fixed(&p, end, &cie_offset, 4) || cie_offset == 0)
                return unsupported;
        if (!parse_cie(p - 4 - cie_offset, &cie))
                return unsupported;
        if ((cie.fde_encoding & DW_EH_PE_indirect) || !read_encoded(&p, end, cie.fde_encoding, 0, &pc_begin) ||
            !read_encoded(&p, end, cie.fde_encoding & 0x0f, 0, &pc_range))
                return unsupported;
        if (address < pc_begin || address - pc_begin >= pc_range)
                return unsupported;     /* no FDE covers it: code without unwind tables */
        if (cie.signal)
                return (Rule) { .kind = RULE_SIGNAL };
        if (cie.augmented) {
                uint64_t n;
                if (!read_uleb(&p, end, &n) || n > (uint64_t) (end - p))
                        return unsupported;
                p += n;
        }

        CfiState s = { .cfa_reg = DWARF_RSP, .bp = { HOW_SAME, 0 }, .ra = { HOW_UNDEFINED, 0 } };
        if (!run_cfi(cie.instructions, cie.end, &cie, 0, UINT64_MAX, &s, NULL))
                return unsupported;
        CfiState initial = s;
        if (!run_cfi(p, end, &cie, pc_begin, address, &s, &initial))
                return unsupported;

        if (s.ra.how == HOW_UNDEFINED)
                return (Rule) { .kind = RULE_OUTERMOST };
        if (s.cfa_unsupported || (s.cfa_reg != DWARF_RSP && s.cfa_reg != DWARF_RBP) || s.cfa_offset < INT32_MIN ||
            s.cfa_offset > INT32_MAX || s.ra.how != HOW_AT_CFA || s.ra.offset < INT8_MIN || s.ra.offset > INT8_MAX)
                return unsupported;
        Rule r = {
                .kind = RULE_NORMAL,
                .cfa_offset = (int32_t) s.cfa_offset,
                .ra_offset = (int8_t) s.ra.offset,
                .cfa_base = (s.cfa_reg == DWARF_RBP ? CFA_BP : CFA_SP) + (s.cfa_deref ? CFA_SP_DEREF : 0),
                .bp_rule = BP_UNKNOWN,
        };
        if (s.bp.how == HOW_SAME)
                r.bp_rule = BP_SAME;
        else if ((s.bp.how == HOW_AT_CFA || s.bp.how == HOW_AT_BP) && s.bp.offset >= INT16_MIN &&
                 s.bp.offset <= INT16_MAX) {
                r.bp_rule = s.bp.how == HOW_AT_CFA ? BP_AT_CFA : BP_AT_BP;
                r.bp_offset = (int16_t) s.bp.offset;
        }
        return r;
}

static Rule rule_of(uint64_t address) {
        uint64_t g = __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
        uint64_t key = address | g << KEY_ADDRESS_BITS;
        bool cacheable = address >> KEY_ADDRESS_BITS == 0 && address > KEY_BUSY;
        Cache *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
        Rule r;

        if (cacheable && cache_get(c, address, key, &r))
                return r;
        __atomic_fetch_add(&rule_misses, 1, __ATOMIC_RELAXED);
        r = compute_rule(address);
        if (cacheable)
                cache_put(c, address, key, r);
        return r;
}

/* ---- The walk ----------------------------------------------------------------------------------------- */

static uint64_t load_word(uint64_t address) {
        uint64_t v;
        memcpy(&v, (const void *) (uintptr_t) address, sizeof(v));
        return v;
}

size_t unwind_stack(void *frame, uint64_t *ret, size_t max, UnwindEnd *ret_end) {
        const uint64_t *fp = frame;
        uint64_t ip = fp[1], sp = (uint64_t) (uintptr_t) (fp + 2), bp = fp[0];
        bool bp_known = true, interrupted = false;
        size_t n = 0;

        *ret_end = UNWIND_UNSUPPORTED;
        if (!cache)
                return 0;
        while (n < max) {
                if (ip == 0)
                        break;
                ret[n++] = ip;
                Rule r = rule_of(interrupted ? ip : ip - 1);
                interrupted = false;
                if (r.kind == RULE_OUTERMOST)
                        break;
                if (r.kind == RULE_UNSUPPORTED)
                        return n;
                if (r.kind == RULE_SIGNAL) {
                        /* The handler returned here; the kernel left the interrupted registers at %rsp. */
                        const ucontext_t *uc = (const ucontext_t *) (uintptr_t) sp;
                        ip = (uint64_t) uc->uc_mcontext.gregs[REG_RIP];
                        sp = (uint64_t) uc->uc_mcontext.gregs[REG_RSP];
                        bp = (uint64_t) uc->uc_mcontext.gregs[REG_RBP];
                        bp_known = interrupted = true;
                        continue;
                }
                bool on_bp = r.cfa_base == CFA_BP || r.cfa_base == CFA_BP_DEREF;
                if (on_bp && !bp_known)
                        return n;
                uint64_t cfa = (on_bp ? bp : sp) + (uint64_t) (int64_t) r.cfa_offset;
                if (r.cfa_base >= CFA_SP_DEREF)
                        cfa = load_word(cfa);
                /* A caller's frame lies above its callee's: anything else is not a stack these rules fit. */
                if (cfa <= sp)
                        return n;
                uint64_t caller_ip = load_word(cfa + (uint64_t) (int64_t) r.ra_offset);
                switch (r.bp_rule) {
                case BP_AT_CFA:
                        bp = load_word(cfa + (uint64_t) (int64_t) r.bp_offset);
                        break;
                case BP_AT_BP:
                        if (!bp_known)
                                return n;
                        bp = load_word(bp + (uint64_t) (int64_t) r.bp_offset);
                        break;
                case BP_UNKNOWN:
                        bp_known = false;
                        break;
                default:
                        break;
                }
                sp = cfa;
                ip = caller_ip;
        }
        *ret_end = UNWIND_COMPLETE;
        return n;
}

#else

bool unwind_init(void) {
        return true;
}

size_t unwind_stack(void *frame, uint64_t *ret, size_t max, UnwindEnd *ret_end) {
        *ret_end = UNWIND_UNSUPPORTED;
        return 0;
}

void unwind_flush(void) {
}

void unwind_get_stats(uint64_t *ret_cached, uint64_t *ret_misses) {
        *ret_cached = *ret_misses = 0;
}

#endif
