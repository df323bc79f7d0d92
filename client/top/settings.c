/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "settings.h"
#include "view-class.h"

static const char *const chart_names[_TOP_CHART_SPAN_MAX] = { "off", "10min", "24h" };

char *top_settings_path(void) {
        const char *config = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        char *path;

        /* The XDG base directory rule: a relative $XDG_CONFIG_HOME is invalid and ignored. */
        if (config && config[0] == '/') {
                if (asprintf(&path, "%s/memstrack/top.conf", config) < 0)
                        return NULL;
        } else if (home && home[0] == '/') {
                if (asprintf(&path, "%s/.config/memstrack/top.conf", home) < 0)
                        return NULL;
        } else
                return NULL;
        return path;
}

static int lookup(const char *const *names, size_t n, const char *value) {
        for (size_t i = 0; i < n; i++)
                if (streq(names[i], value))
                        return (int) i;
        return -1;
}

/* The view its class names so, _TOP_VIEW_INVALID if none. */
static TopView view_named(const char *name) {
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                if (streq(top_view_class((TopView) v)->name, name))
                        return (TopView) v;
        return _TOP_VIEW_INVALID;
}

static bool set_one(TopModel *m, const char *key, const char *value) {
        int i;

        if (streq(key, "view")) {
                TopView v = view_named(value);
                if (v < 0)
                        return false;
                m->view = v;
                return true;
        }
        if (streq(key, "chart")) {
                if ((i = lookup(chart_names, _TOP_CHART_SPAN_MAX, value)) < 0)
                        return false;
                m->chart = (TopChartSpan) i;
                return true;
        }
        if (streq(key, "high-percent")) {
                char *end;
                errno = 0;
                double d = strtod(value, &end);
                if (errno != 0 || end == value || *end || !(d >= 0 && d <= 100))
                        return false;
                m->high_percent = d;
                return true;
        }
        if (strncmp(key, "sort.", 5) == 0) {
                TopView v = view_named(key + 5);
                if (v < 0)
                        return false;
                const TopViewClass *c = top_view_class(v);
                if ((i = lookup(c->sort_names, c->n_sorts, value)) < 0)
                        return false;
                m->sort[v] = (unsigned) i;
                return true;
        }
        if (strncmp(key, "tree.", 5) == 0) {
                TopView v = view_named(key + 5);
                if (v < 0 || top_view_class(v)->tree != TOP_TREE_OPTIONAL ||
                    (!streq(value, "yes") && !streq(value, "no")))
                        return false;
                m->tree[v] = streq(value, "yes");
                return true;
        }
        return false;
}

int top_settings_parse(TopModel *m, const char *text) {
        int taken = 0;

        for (const char *line = text; line && *line;) {
                const char *eol = strchrnul(line, '\n');
                _cleanup_free_ char *copy = strndup(line, (size_t) (eol - line));
                line = *eol ? eol + 1 : NULL;
                if (!copy)
                        return -ENOMEM;
                char *eq = strchr(copy, '=');
                if (copy[0] == '#' || !eq)
                        continue;
                *eq = '\0';
                taken += set_one(m, copy, eq + 1);
        }
        (void) top_model_rebuild(m);
        return taken;
}

int top_settings_load(TopModel *m, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char text[4096];
        size_t n;

        if (!f)
                return -errno;
        n = fread(text, 1, sizeof(text) - 1, f);
        if (ferror(f))
                return -EIO;
        text[n] = '\0';
        int r = top_settings_parse(m, text);
        return r < 0 ? r : 0;
}

char *top_settings_format(const TopModel *m) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        fprintf(f, "# memstrackctl top's settings, written when it quits.\n");
        fprintf(f, "view=%s\n", top_view_class(m->view)->name);
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                fprintf(f, "sort.%s=%s\n", top_view_class((TopView) v)->name, top_model_sort_name(m, (TopView) v));
        for (size_t v = 0; v < _TOP_VIEW_MAX; v++)
                if (top_view_class((TopView) v)->tree == TOP_TREE_OPTIONAL)
                        fprintf(f, "tree.%s=%s\n", top_view_class((TopView) v)->name, m->tree[v] ? "yes" : "no");
        fprintf(f, "chart=%s\n", chart_names[m->chart % _TOP_CHART_SPAN_MAX]);
        fprintf(f, "# Rows holding at least this share (%%) of the machine's memory are marked; 0: none.\n");
        fprintf(f, "high-percent=%g\n", m->high_percent);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* Makes each missing folder of path's parent (mode 0700: a user's settings are their own). */
static int make_parents(const char *path) {
        _cleanup_free_ char *copy = strdup(path);

        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                if (mkdir(copy, 0700) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        return 0;
}

int top_settings_save(const TopModel *m, const char *path) {
        _cleanup_free_ char *text = top_settings_format(m), *tmp = NULL;
        int r;

        if (!text || asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        r = make_parents(path);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        size_t len = strlen(text);
        for (size_t done = 0; done < len;) {
                ssize_t k = write(fd, text + done, len - done);
                if (k < 0) {
                        r = -errno;
                        (void) unlink(tmp);
                        return r;
                }
                done += (size_t) k;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}
