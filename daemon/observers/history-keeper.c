/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file-util.h"
#include "history-keeper.h"
#include "log.h"
#include "time-util.h"

struct HistoryKeeper {
        Accounting *accounting;         /* borrowed */
        History *history;               /* owned */
        char *path;                     /* owned: where the history is kept; NULL: not kept */
        uint64_t saved_usec;            /* CLOCK_MONOTONIC of the last save */
        EventObserver observer;
};

static void save(HistoryKeeper *k) {
        k->saved_usec = now_usec(CLOCK_MONOTONIC);
        if (!k->path)
                return;
        int r = history_save(k->history, k->path);
        if (r < 0)
                log_warning_errno(r, "Failed to write the history to %s, ignoring: %m", k->path);
        else
                log_debug("Wrote the history to %s.", k->path);
}

static void on_tick(void *userdata) {
        HistoryKeeper *k = userdata;

        history_tick(k->history, k->accounting, now_usec(CLOCK_REALTIME));
        if (k->path && now_usec(CLOCK_MONOTONIC) - k->saved_usec >= HISTORY_SAVE_INTERVAL_USEC)
                save(k);
}

static void on_finish(void *userdata) {
        HistoryKeeper *k = userdata;

        /* The last second too. */
        history_tick(k->history, k->accounting, now_usec(CLOCK_REALTIME));
        save(k);
}

static void observer_free(void *userdata) {
        history_keeper_free(userdata);
}

HistoryKeeper *history_keeper_free(HistoryKeeper *k) {
        if (!k)
                return NULL;
        history_free(k->history);
        free(k->path);
        free(k);
        return NULL;
}

/* Where the history is kept, and what it held before a restart. */
static int keep_in(HistoryKeeper *k, const char *dir) {
        _cleanup_free_ char *env_dir = NULL;
        int r;

        if (!dir) {
                /* systemd's StateDirectory=: a colon-separated list, ours first. */
                const char *e = getenv("STATE_DIRECTORY");
                if (e && *e) {
                        env_dir = strndup(e, strcspn(e, ":"));
                        if (!env_dir)
                                return log_oom();
                        dir = env_dir;
                }
        }
        if (!dir || !*dir)
                return 0;
        if (asprintf(&k->path, "%s/history", dir) < 0) {
                k->path = NULL;
                return log_oom();
        }
        r = history_load(k->history, k->path);
        if (r == -EBADMSG)
                log_warning("The history in %s is corrupt or of another version, starting a new one.", k->path);
        else if (r < 0 && r != -ENOENT)
                log_warning_errno(r, "Failed to read the history from %s, starting a new one: %s", k->path,
                                  file_error_string(r));
        else if (r == 0)
                log_info("Read the history from %s.", k->path);
        return 0;
}

int history_keeper_new(const char *state_directory, Accounting *accounting, HistoryKeeper **ret) {
        _cleanup_(history_keeper_freep) HistoryKeeper *k = calloc(1, sizeof(HistoryKeeper));
        int r;

        if (!k)
                return log_oom();
        k->accounting = accounting;
        k->observer = (EventObserver) {
                .name = "history",
                .userdata = k,
                .tick = on_tick,
                .finish = on_finish,
                .free = observer_free,
        };
        k->history = history_new();
        if (!k->history)
                return log_oom();
        r = keep_in(k, state_directory);
        if (r < 0)
                return r;
        k->saved_usec = now_usec(CLOCK_MONOTONIC);
        *ret = TAKE_PTR(k);
        return 0;
}

History *history_keeper_history(HistoryKeeper *k) {
        return k->history;
}

EventObserver *history_keeper_observer(HistoryKeeper *k) {
        return &k->observer;
}
