/* SPDX-License-Identifier: MIT */

/*
 * bpf-floor VARIANT: loads one variant of bench/bpf-floor.bpf.c on the page tracepoints, prints "ready",
 * and runs until stdin closes or SIGINT/SIGTERM; then prints what its programs did, one key=value per word:
 * run_cnt, run_time_ns and recursion_misses summed over its programs (run_time_ns counts only while
 * kernel.bpf_stats_enabled is 1) and the variant's own counters. bench/measure-bpf-floor.py runs it between
 * untraced loads. Variants: empty, owner, twin, total, cgroup, kstack, getstack, cell, storage,
 * counter, seq, clock, fentry, fcover (bpf-floor.bpf.c says what each does).
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf-floor.skel.h"

typedef struct Variant {
        const char *name;
        const char *programs[2];
} Variant;

static const Variant variants[] = {
        { "empty", { "empty_alloc", "empty_free" } },
        { "owner", { "owner_alloc_prog", "owner_free_prog" } },
        { "twin", { "owner_alloc_prog", "owner_free_prog" } },         /* and twin_free, after them */
        { "total", { "total_alloc", "total_free" } },
        { "cgroup", { "cgroup_alloc", "cgroup_free" } },
        { "kstack", { "kstack_alloc", NULL } },
        { "getstack", { "getstack_alloc", NULL } },
        { "cell", { "cell_alloc", "cell_free" } },
        { "storage", { "storage_alloc", "empty_free" } },
        { "counter", { "counter_alloc", "owner_free_prog" } },
        { "seq", { "seq_alloc", "seq_free" } },
        { "clock", { "clock_alloc", "clock_free" } },
        /* fentry and fcover load every fentry_* program whose function the kernel's BTF has. */
        { "fentry", { NULL, NULL } },
        { "fcover", { "cover_alloc", "cover_free" } },
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        stop = 1;
}

static int drain(void *ctx, void *data, size_t size) {
        return 0;
}

static int usage(void) {
        fprintf(stderr, "usage: bpf-floor VARIANT [PAGE_BITS]   (variants:");
        for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
                fprintf(stderr, " %s", variants[i].name);
        fprintf(stderr, ")\n");
        return 2;
}

int main(int argc, char **argv) {
        const Variant *v = NULL;
        struct bpf_floor *skel;
        struct ring_buffer *ring = NULL;
        struct bpf_program *prog;
        unsigned page_bits = 23;
        int r;

        if (argc < 2 || argc > 3)
                return usage();
        for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
                if (strcmp(argv[1], variants[i].name) == 0)
                        v = &variants[i];
        if (!v)
                return usage();
        if (argc == 3)
                page_bits = (unsigned) strtoul(argv[2], NULL, 10);
        if (page_bits < 16 || page_bits > 28)
                return usage();

        skel = bpf_floor__open();
        if (!skel) {
                fprintf(stderr, "bpf-floor: open: %s\n", strerror(errno));
                return 1;
        }
        skel->rodata->page_bits = page_bits;
        skel->rodata->self_tgid = (__u32) getpid();
        bpf_map__set_max_entries(skel->maps.page_owner, 1u << page_bits);
        bpf_object__for_each_program(prog, skel->obj) {
                const char *name = bpf_program__name(prog);
                bool load = (v->programs[0] && strcmp(name, v->programs[0]) == 0) ||
                            (v->programs[1] && strcmp(name, v->programs[1]) == 0) ||
                            (strcmp(v->name, "twin") == 0 && strcmp(name, "twin_free") == 0);

                /* The fentry programs: those whose function this kernel has. */
                if ((strcmp(v->name, "fentry") == 0 || strcmp(v->name, "fcover") == 0) &&
                    strncmp(name, "fentry_", 7) == 0) {
                        const char *function = strchr(bpf_program__section_name(prog), '/') + 1;
                        load = libbpf_find_vmlinux_btf_id(function, BPF_TRACE_FENTRY) >= 0;
                }
                bpf_program__set_autoload(prog, load);
        }
        r = bpf_floor__load(skel);
        if (r < 0) {
                fprintf(stderr, "bpf-floor: load: %s\n", strerror(-r));
                bpf_floor__destroy(skel);
                return 1;
        }
        /* The skeleton attaches in the order the file defines the programs: twin_free after owner_free. */
        r = bpf_floor__attach(skel);
        if (r < 0) {
                fprintf(stderr, "bpf-floor: attach: %s\n", strerror(-r));
                bpf_floor__destroy(skel);
                return 1;
        }
        if (strcmp(v->name, "getstack") == 0)
                ring = ring_buffer__new(bpf_map__fd(skel->maps.ring), drain, NULL, NULL);

        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        printf("ready\n");
        fflush(stdout);
        while (!stop) {
                struct pollfd p = { .fd = 0, .events = POLLIN };
                char buf[64];

                if (ring)
                        (void) ring_buffer__consume(ring);
                if (poll(&p, 1, ring ? 10 : 200) > 0 && read(0, buf, sizeof(buf)) <= 0)
                        break;
        }

        __u64 cnt = 0, ns = 0, misses = 0;
        bpf_object__for_each_program(prog, skel->obj) {
                struct bpf_prog_info info = {};
                __u32 len = sizeof(info);

                if (!bpf_program__autoload(prog))
                        continue;
                if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0)
                        continue;
                cnt += info.run_cnt;
                ns += info.run_time_ns;
                misses += info.recursion_misses;
                printf("%s.run_cnt=%llu %s.run_time_ns=%llu %s.recursion_misses=%llu ", bpf_program__name(prog),
                       (unsigned long long) info.run_cnt, bpf_program__name(prog),
                       (unsigned long long) info.run_time_ns, bpf_program__name(prog),
                       (unsigned long long) info.recursion_misses);
        }
        /* The fentry variants' page counts, summed over the CPUs. */
        int ncpu = libbpf_num_possible_cpus();
        const char *counted[] = { "tp_alloc_pages", "tp_free_pages", "f_alloc_pages", "f_free_pages" };
        for (__u32 k = 0; ncpu > 0 && k < 4; k++) {
                __u64 per_cpu[ncpu], sum = 0;

                if (bpf_map__lookup_elem(skel->maps.pages, &k, sizeof(k), per_cpu, sizeof(per_cpu), 0) < 0)
                        continue;
                for (int c = 0; c < ncpu; c++)
                        sum += per_cpu[c];
                printf("%s=%llu ", counted[k], (unsigned long long) sum);
        }
        printf("run_cnt=%llu run_time_ns=%llu recursion_misses=%llu total_current=%lld total_peak=%lld "
               "untracked_frees=%llu stack_errors=%llu slots=%u\n", (unsigned long long) cnt,
               (unsigned long long) ns, (unsigned long long) misses, (long long) skel->bss->total_current,
               (long long) skel->bss->total_peak, (unsigned long long) skel->bss->untracked_frees,
               (unsigned long long) skel->bss->stack_errors, skel->data->next_slot - 1);
        ring_buffer__free(ring);
        bpf_floor__destroy(skel);
        return 0;
}
