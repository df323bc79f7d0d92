/* SPDX-License-Identifier: MIT */

#include <stdlib.h>

#include "debounce.h"
#include "file-util.h"
#include "kernel-symbols.h"
#include "log.h"
#include "utf8.h"

/* A module load schedules the reload this long after the last load of a burst, and at most
 * RELOAD_MAX_DELAY_USEC after the first. */
#define RELOAD_DELAY_USEC 200000
#define RELOAD_MAX_DELAY_USEC 2000000

struct KernelSymbols {
        const char *kallsyms;           /* borrowed from the configuration; NULL: /proc/kallsyms */
        Ksym *table;                    /* owned */
        bool from_source;               /* table is a source's own: kept */
        Accounting *accounting;         /* borrowed: the core using the table */
        Debounce *reload;               /* owned: one reload per burst of module loads */
        EventObserver observer;
};

static void set_table(KernelSymbols *k, Ksym *table) {
        if (k->accounting)
                accounting_set_ksym(k->accounting, table);
        ksym_free(k->table);
        k->table = table;
}

int kernel_symbols_reload(KernelSymbols *k) {
        Ksym *table = NULL;
        int r;

        if (k->from_source)
                return 0;
        r = ksym_load(k->kallsyms, &table);
        if (r < 0)
                return r;
        set_table(k, table);
        return 0;
}

static void reload_deferred(void *userdata) {
        int r = kernel_symbols_reload(userdata);
        if (r < 0)
                log_warning_errno(r, "Failed to reload kernel symbols after module loads, ignoring: %m");
}

static void on_sighup(void *userdata) {
        int r = kernel_symbols_reload(userdata);
        if (r < 0)
                log_warning_errno(r, "Failed to reload kernel symbols, keeping the old ones: %m");
}

static void on_finish(void *userdata) {
        KernelSymbols *k = userdata;
        /* The summary names the modules loaded just before the end too. */
        debounce_flush(k->reload);
}

static void on_event(void *userdata, const MsEvent *e, bool applied) {
        KernelSymbols *k = userdata;

        (void) applied;
        /* Not now: a moment after the last load of a burst. Nodes created until then are classified again
         * by the reload (accounting_set_ksym()). */
        accounting_symbols_stale(k->accounting);
        int r = debounce_request(k->reload);
        if (r < 0) {
                /* The module's name is the kernel's bytes (utf8.h). */
                _cleanup_free_ char *name = utf8_escape(e->module.name, UTF8_ESCAPE_CONTROL);
                log_warning_errno(r, "Failed to schedule the kernel symbol reload after loading %s, ignoring: %m",
                                  name ?: "a module");
        }
}

static void observer_free(void *userdata) {
        kernel_symbols_free(userdata);
}

KernelSymbols *kernel_symbols_free(KernelSymbols *k) {
        if (!k)
                return NULL;
        debounce_free(k->reload);
        ksym_free(k->table);
        free(k);
        return NULL;
}

int kernel_symbols_new(sd_event *event, const char *kallsyms, KernelSymbols **ret) {
        _cleanup_(kernel_symbols_freep) KernelSymbols *k = calloc(1, sizeof(KernelSymbols));
        int r;

        if (!k)
                return log_oom();
        k->kallsyms = kallsyms;
        k->observer = (EventObserver) {
                .name = "kernel-symbols",
                .userdata = k,
                .event = on_event,
                .reload = on_sighup,
                .finish = on_finish,
                .free = observer_free,
        };
        r = debounce_new(event, "ksym-reload", RELOAD_DELAY_USEC, RELOAD_MAX_DELAY_USEC, reload_deferred, k,
                         &k->reload);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the symbol reload timer: %m");
        *ret = TAKE_PTR(k);
        return 0;
}

void kernel_symbols_after_hooks(KernelSymbols *k, const EventSourceStats *source) {
        for (size_t i = 0; i < source->n_hooks; i++)
                if (source->hooks[i].attached) {
                        int r = kernel_symbols_reload(k);
                        if (r < 0)
                                log_warning_errno(r, "Failed to read the kernel symbols again after hooking kernel "
                                                  "functions, ignoring: %m");
                        return;
                }
}

const Ksym *kernel_symbols_table(const KernelSymbols *k) {
        return k->table;
}

void kernel_symbols_attach(KernelSymbols *k, Accounting *accounting) {
        k->accounting = accounting;
        /* Module loads matter once there is a core to mark stale. */
        event_observer_set_types(&k->observer, 0, accounting ? MS_EVENT_BIT(MS_EVENT_MODULE_LOAD) : 0);
}

int kernel_symbols_load(KernelSymbols *k, const char *text, const char *source) {
        Ksym *table = NULL;
        int r;

        if (!text) {
                r = ksym_load(k->kallsyms, &table);
                if (r < 0)
                        return log_error_errno(r, "Failed to read kernel symbols from %s: %s",
                                               k->kallsyms ?: "/proc/kallsyms", file_error_string(r));
                set_table(k, table);
                log_debug("Read %zu kernel symbols.", ksym_count(k->table));
                if (ksym_addresses_hidden(k->table))
                        log_warning("Kernel addresses are hidden (kernel.kptr_restrict, or no CAP_SYSLOG): stacks will "
                                    "show raw addresses and pages cannot be charged to modules.");
                return 0;
        }
        r = ksym_load_text(text, &table);
        if (r < 0)
                return log_error_errno(r, "Failed to read the symbol table of the %s event source: %m", source);
        set_table(k, table);
        k->from_source = true;
        event_observer_set_types(&k->observer, 0, 0);
        log_debug("Using the %zu symbols of the %s event source.", ksym_count(table), source);
        return 0;
}

EventObserver *kernel_symbols_observer(KernelSymbols *k) {
        return &k->observer;
}
