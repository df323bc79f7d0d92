/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * KernelSymbols: the kernel symbol table the core names frames and modules with, kept fresh. A module
 * load marks the core's symbols stale at once and schedules a reload of kallsyms a moment after the last
 * load of a burst (reading kallsyms takes tens of milliseconds: per load, udev loading fifty modules at
 * boot would stall the drain for seconds); SIGHUP reloads at once. A source that names its own frames
 * (an imported page_owner log) hands over its table instead, and nothing is reloaded.
 */

#include <systemd/sd-event.h>

#include "accounting.h"
#include "ksym.h"
#include "macro.h"
#include "observer.h"

typedef struct KernelSymbols KernelSymbols;

/* kallsyms: where kernel_symbols_load() reads the table (NULL: /proc/kallsyms). The table is empty until
 * then. -errno, logged. */
int kernel_symbols_new(sd_event *event, const char *kallsyms, KernelSymbols **ret);
KernelSymbols *kernel_symbols_free(KernelSymbols *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(KernelSymbols *, kernel_symbols_free);

/* The table now: valid until the next reload. */
const Ksym *kernel_symbols_table(const KernelSymbols *k);
/* The core that borrows the table; it gets every later one. */
void kernel_symbols_attach(KernelSymbols *k, Accounting *accounting);
/* The event source is known: takes its own table (kallsyms text, EventSourceOps.symbols), for good, or
 * with text NULL reads kallsyms and warns if the kernel's addresses are hidden. Read only now: a source
 * with a table of its own (an imported log, the heap source's empty one) saves a daemon that starts for
 * one command the 0.1 to 0.2 s of reading kallsyms. source names the source in logs. -errno, logged. */
int kernel_symbols_load(KernelSymbols *k, const char *text, const char *source);
/* Reads kallsyms again now (a source's own table stays). -errno, the old table kept. */
int kernel_symbols_reload(KernelSymbols *k);
/* Reads the table again once the source hooked kernel functions (EventSourceStats hooks): their BPF
 * trampolines are named in kallsyms only once attached, and the stacks their programs take start there. */
void kernel_symbols_after_hooks(KernelSymbols *k, const EventSourceStats *source);

/* The observer to register with the Manager; it frees k. */
EventObserver *kernel_symbols_observer(KernelSymbols *k);
