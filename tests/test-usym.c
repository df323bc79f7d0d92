/* SPDX-License-Identifier: MIT */

/*
 * daemon/symbols/usym.c against live processes: usym-target children (tests/usym-target.c) print where their
 * function, libc's getppid() and an anonymous mapping are, and the lookups must name exactly those; and
 * against images made from their maps text, moved and renamed, which must share what they read.
 *
 * Usage: test-usym USYM-TARGET USYM-OTHER (the same program built under two names)
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "tests.h"
#include "usym.h"

static const char *target_path, *other_path;

typedef struct Target {
        pid_t pid;
        FILE *in;               /* the child's stdin */
        FILE *out;              /* the child's stdout */
        uint64_t function;      /* usym_target_function() */
        uint64_t libc;          /* getppid() */
        uint64_t anonymous;     /* an anonymous mapping */
} Target;

/* Reads the child's line of addresses. */
static void target_read(Target *t) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        void *function, *libc, *anonymous;

        ASSERT_GT(getline(&line, &size, t->out), 0);
        ASSERT_EQ(sscanf(line, "function=%p libc=%p anonymous=%p", &function, &libc, &anonymous), 3);
        t->function = (uint64_t) (uintptr_t) function;
        t->libc = (uint64_t) (uintptr_t) libc;
        t->anonymous = (uint64_t) (uintptr_t) anonymous;
}

static Target target_start(const char *path) {
        int in[2], out[2];
        Target t = {};

        ASSERT_OK(pipe2(in, O_CLOEXEC));
        ASSERT_OK(pipe2(out, O_CLOEXEC));
        t.pid = fork();
        ASSERT_OK(t.pid);
        if (t.pid == 0) {
                /* dup2() clears O_CLOEXEC on the copies. */
                if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0)
                        _exit(EXIT_FAILURE);
                (void) execl(path, path, (char *) NULL);
                _exit(EXIT_FAILURE);
        }
        (void) close(in[0]);
        (void) close(out[1]);
        t.in = fdopen(in[1], "w");
        t.out = fdopen(out[0], "r");
        ASSERT_NOT_NULL(t.in);
        ASSERT_NOT_NULL(t.out);
        target_read(&t);
        return t;
}

static void target_exec(Target *t, const char *path) {
        ASSERT_GT(fprintf(t->in, "exec %s\n", path), 0);
        ASSERT_EQ(fflush(t->in), 0);
        target_read(t);
}

/* EOF on its stdin: the child exits by itself. */
static void target_stop(Target *t) {
        int status;

        (void) fclose(t->in);
        ASSERT_EQ(waitpid(t->pid, &status, 0), t->pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        (void) fclose(t->out);
}

static void test_executable_and_libc(void) {
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        Target t = target_start(target_path);
        UsymResult r;

        ASSERT_NOT_NULL(u);
        ASSERT_TRUE(usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_STREQ(r.name, "usym_target_function");
        ASSERT_EQ(r.offset, 3);
        ASSERT_STREQ(r.object, "usym-target");

        ASSERT_TRUE(usym_lookup(u, t.pid, t.function, &r));
        ASSERT_STREQ(r.name, "usym_target_function");
        ASSERT_EQ(r.offset, 0);

        /* libc has no .symtab here: its .dynsym. */
        ASSERT_TRUE(usym_lookup(u, t.pid, t.libc + 1, &r));
        ASSERT_STREQ(r.name, "getppid");
        ASSERT_EQ(r.offset, 1);
        ASSERT_STREQ(r.object, "libc.so.6");
        ASSERT_EQ(usym_cached_processes(u), 1);

        target_stop(&t);
        usym_free(u);
}

static void test_unknown_addresses(void) {
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        Target t = target_start(target_path);
        UsymResult r = {};

        ASSERT_NOT_NULL(u);
        /* Anonymous memory (JIT code looks the same), nothing mapped, not a user address. */
        ASSERT_TRUE(!usym_lookup(u, t.pid, t.anonymous, &r));
        ASSERT_TRUE(!usym_lookup(u, t.pid, t.anonymous + 16, &r));
        ASSERT_TRUE(!usym_lookup(u, t.pid, 0, &r));
        ASSERT_TRUE(!usym_lookup(u, t.pid, UINT64_C(0xffffffff81000000), &r));
        ASSERT_NULL(r.name);
        /* Not a process id. */
        ASSERT_TRUE(!usym_lookup(u, 0, t.function, &r));
        ASSERT_TRUE(!usym_lookup(u, -1, t.function, &r));

        /* Still fine after those. */
        ASSERT_TRUE(usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_STREQ(r.name, "usym_target_function");

        /* Gone, reaped: nothing, and nothing kept for it. */
        ASSERT_OK(kill(t.pid, SIGKILL));
        ASSERT_EQ(waitpid(t.pid, NULL, 0), t.pid);
        r = (UsymResult) {};
        ASSERT_TRUE(!usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_NULL(r.name);
        ASSERT_EQ(usym_cached_processes(u), 0);
        (void) fclose(t.in);
        (void) fclose(t.out);
        usym_free(u);
}

static void test_exec_invalidates(void) {
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        Target t = target_start(target_path);
        uint64_t old_function = t.function;
        UsymResult r;

        ASSERT_NOT_NULL(u);
        ASSERT_TRUE(usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_STREQ(r.object, "usym-target");

        /* The same pid, another program: the cached (and memoized) answer must not be served. */
        target_exec(&t, other_path);
        if (usym_lookup(u, t.pid, old_function + 3, &r))
                ASSERT_STREQ(r.object, "usym-other");
        ASSERT_TRUE(usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_STREQ(r.name, "usym_target_function");
        ASSERT_EQ(r.offset, 3);
        ASSERT_STREQ(r.object, "usym-other");
        ASSERT_EQ(usym_cached_processes(u), 1);

        /* And the same program again: new addresses (randomized), still right. */
        target_exec(&t, other_path);
        ASSERT_TRUE(usym_lookup(u, t.pid, t.function + 5, &r));
        ASSERT_STREQ(r.name, "usym_target_function");
        ASSERT_EQ(r.offset, 5);
        ASSERT_STREQ(r.object, "usym-other");

        target_stop(&t);
        usym_free(u);
}

/* One session for many addresses, as a stack tree is rendered: answers memoized, then the same. */
static void test_session(void) {
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        Target t = target_start(target_path);
        UsymProcess *p;
        UsymResult r;

        ASSERT_NOT_NULL(u);
        p = usym_process(u, t.pid);
        ASSERT_NOT_NULL(p);
        for (unsigned round = 0; round < 2; round++) {
                for (uint64_t off = 0; off < 8; off++) {
                        ASSERT_TRUE(usym_process_lookup(p, t.function + off, &r));
                        ASSERT_STREQ(r.name, "usym_target_function");
                        ASSERT_EQ(r.offset, off);
                        ASSERT_STREQ(r.object, "usym-target");
                }
                ASSERT_TRUE(usym_process_lookup(p, t.libc, &r));
                ASSERT_STREQ(r.name, "getppid");
                ASSERT_STREQ(r.object, "libc.so.6");
                ASSERT_TRUE(!usym_process_lookup(p, t.anonymous, &r));
        }
        /* The same session again while nothing changed. */
        ASSERT_TRUE(usym_process(u, t.pid) == p);
        ASSERT_NULL(usym_process(u, 0));

        target_stop(&t);
        ASSERT_NULL(usym_process(u, t.pid));
        ASSERT_EQ(usym_cached_processes(u), 0);
        usym_free(u);
}

static void test_forget_and_lru(void) {
        UserSymbols *u = usym_new(1);
        Target a = target_start(target_path), b = target_start(other_path);
        UsymResult r;

        ASSERT_NOT_NULL(u);
        ASSERT_TRUE(usym_lookup(u, a.pid, a.function + 3, &r));
        ASSERT_STREQ(r.object, "usym-target");
        /* One slot: b takes it from a, and a comes back. */
        ASSERT_TRUE(usym_lookup(u, b.pid, b.function + 3, &r));
        ASSERT_STREQ(r.object, "usym-other");
        ASSERT_EQ(usym_cached_processes(u), 1);
        ASSERT_TRUE(usym_lookup(u, a.pid, a.function + 3, &r));
        ASSERT_STREQ(r.object, "usym-target");
        ASSERT_EQ(usym_cached_processes(u), 1);

        usym_forget(u, b.pid);  /* not cached: nothing happens */
        ASSERT_EQ(usym_cached_processes(u), 1);
        usym_forget(u, a.pid);
        ASSERT_EQ(usym_cached_processes(u), 0);
        ASSERT_TRUE(usym_lookup(u, a.pid, a.function + 3, &r));
        ASSERT_STREQ(r.name, "usym_target_function");

        target_stop(&a);
        target_stop(&b);
        usym_free(u);
}

/* Copies the target program to a file beside it with the given mode, to run it and delete the file. */
static char *copy_target(mode_t mode) {
        _cleanup_free_ char *dir = strdup(target_path);
        char *copy = NULL;
        char buf[65536];
        ssize_t n;
        int in, out;

        ASSERT_NOT_NULL(dir);
        ASSERT_TRUE(asprintf(&copy, "%s/usym-deleted-XXXXXX", dirname(dir)) > 0);
        out = mkostemp(copy, O_CLOEXEC);
        ASSERT_OK(out);
        in = open(target_path, O_RDONLY | O_CLOEXEC);
        ASSERT_OK(in);
        while ((n = read(in, buf, sizeof(buf))) > 0)
                ASSERT_EQ(write(out, buf, (size_t) n), n);
        ASSERT_EQ(n, 0);
        ASSERT_OK(fchmod(out, mode));
        (void) close(in);
        ASSERT_OK(close(out));
        return copy;
}

static void test_deleted_file(void) {
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        _cleanup_free_ char *copy = copy_target(0755);
        Target t = target_start(copy);
        UsymResult r;

        ASSERT_NOT_NULL(u);
        ASSERT_OK(unlink(copy));
        /* The maps say "(deleted)": whatever has that path now is not what runs. libc still resolves. */
        ASSERT_TRUE(!usym_lookup(u, t.pid, t.function + 3, &r));
        ASSERT_TRUE(usym_lookup(u, t.pid, t.libc + 1, &r));
        ASSERT_STREQ(r.name, "getppid");

        target_stop(&t);
        usym_free(u);
}

/* The process's maps text, as the heap source saves it. */
static char *read_maps(pid_t pid) {
        char path[64], buf[4096];
        char *text = NULL;
        size_t size = 0, n;

        (void) snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        FILE *in = fopen(path, "re");
        ASSERT_NOT_NULL(in);
        FILE *out = open_memstream(&text, &size);
        ASSERT_NOT_NULL(out);
        while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
                ASSERT_EQ(fwrite(buf, 1, n, out), n);
        (void) fclose(in);
        ASSERT_EQ(fclose(out), 0);
        return text;
}

/* maps with the lines of the file at path moved by delta and, if rename is given, naming that path instead:
 * the same file loaded elsewhere, or another copy of it. */
static char *maps_moved(const char *maps, const char *path, uint64_t delta, const char *rename) {
        char *text = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&text, &size);

        ASSERT_NOT_NULL(out);
        for (const char *line = maps; *line; ) {
                const char *eol = strchrnul(line, '\n');
                int len = (int) (eol - line), at = 0;
                unsigned long long start, end;
                const char *name = memchr(line, '/', (size_t) len);

                if (name && (size_t) (eol - name) == strlen(path) && strncmp(name, path, strlen(path)) == 0) {
                        ASSERT_EQ(sscanf(line, "%llx-%llx%n", &start, &end, &at), 2);
                        ASSERT_GT(fprintf(out, "%llx-%llx%.*s%s\n", start + delta, end + delta,
                                          (int) (name - line - at), line + at, rename ?: path), 0);
                } else
                        ASSERT_GT(fprintf(out, "%.*s\n", len, line), 0);
                line = *eol ? eol + 1 : eol;
        }
        ASSERT_EQ(fclose(out), 0);
        return text;
}

/* The innermost frame of ip in the image, checked to be usym_target_function() in usym-target.c. */
static UsymSource image_function(UsymImage *im, uint64_t ip, const char *object) {
        UsymSource src;

        ASSERT_NOT_NULL(im);
        ASSERT_TRUE(usym_image_lookup(im, ip, false, &src));
        ASSERT_TRUE(src.has_symbol);
        ASSERT_STREQ(src.symbol.name, "usym_target_function");
        ASSERT_EQ(src.symbol.offset, 3);
        ASSERT_STREQ(src.symbol.object, object);
        ASSERT_TRUE(src.n_frames >= 1 && src.frames[0].file && src.frames[0].line > 0);
        ASSERT_TRUE(strstr(src.frames[0].file, "usym-target.c") != NULL);
        return src;
}

static void image_libc(UsymImage *im, uint64_t ip) {
        UsymSource src;

        ASSERT_TRUE(usym_image_lookup(im, ip + 1, false, &src));
        ASSERT_STREQ(src.symbol.name, "getppid");
        ASSERT_STREQ(src.symbol.object, "libc.so.6");
}

/* Images of one program loaded at other addresses, and under another path, share its symbols and DWARF:
 * each file is read once, each image names the same lines, and an image that goes away leaves them to
 * the others. Files no image uses any more are kept up to a bound. */
static void test_images_share_files(void) {
        /* A multiple of any page size, past where anything is mapped. */
        const uint64_t delta = UINT64_C(1) << 36;
        UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
        _cleanup_free_ char *copy = copy_target(0755), *exe = realpath(target_path, NULL), *copy_abs = NULL;
        Target t = target_start(target_path);
        _cleanup_free_ char *maps = read_maps(t.pid), *moved = NULL, *renamed = NULL;
        const char *copy_name = strrchr(copy, '/') + 1;

        ASSERT_NOT_NULL(u);
        ASSERT_NOT_NULL(exe);
        copy_abs = realpath(copy, NULL);
        ASSERT_NOT_NULL(copy_abs);
        moved = maps_moved(maps, exe, delta, NULL);
        renamed = maps_moved(maps, exe, 0, copy_abs);
        ASSERT_EQ(usym_image_files_opened(u), 0);

        UsymSource here = image_function(usym_image(u, 1, maps), t.function + 3, "usym-target");
        image_libc(usym_image(u, 1, maps), t.libc);
        _cleanup_free_ char *file = strdup(here.frames[0].file);
        ASSERT_NOT_NULL(file);
        unsigned line = here.frames[0].line;
        ASSERT_EQ(usym_image_files_opened(u), 2);

        /* Elsewhere: the same line, from the same file session, and what image 1 found there is not looked
         * for again. */
        size_t memoized = usym_image_lookups_memoized(u);
        UsymSource there = image_function(usym_image(u, 2, moved), t.function + 3 + delta, "usym-target");
        ASSERT_STREQ(there.frames[0].file, file);
        ASSERT_EQ(there.frames[0].line, line);
        ASSERT_GT(usym_image_lookups_memoized(u), memoized);
        /* The old addresses are not the program's in the moved image. */
        UsymSource none;
        ASSERT_TRUE(!usym_image_lookup(usym_image(u, 2, moved), t.function + 3, false, &none) ||
                    !streq(none.symbol.object, "usym-target"));
        image_libc(usym_image(u, 2, moved), t.libc);
        /* A copy of the program (the same build ID) under its own name. */
        UsymSource copied = image_function(usym_image(u, 3, renamed), t.function + 3, copy_name);
        ASSERT_EQ(copied.frames[0].line, line);
        ASSERT_EQ(usym_image_files_opened(u), 2);
        ASSERT_EQ(usym_image_files_cached(u), 2);

        /* Image 1 gives its slot to others (the least recently used), the moved one still answers. */
        ASSERT_NOT_NULL(usym_image(u, 2, moved));
        ASSERT_NOT_NULL(usym_image(u, 3, renamed));
        for (uint64_t key = 10; key < 16; key++)
                ASSERT_NOT_NULL(usym_image(u, key, ""));
        there = image_function(usym_image(u, 2, moved), t.function + 3 + delta, "usym-target");
        ASSERT_EQ(there.frames[0].line, line);
        image_function(usym_image(u, 1, maps), t.function + 3, "usym-target");
        ASSERT_EQ(usym_image_files_opened(u), 2);

        /* Many files, then no image using them: the least recently used beyond the bound are freed. Each
         * test program beside the target is another file (another build ID). */
        _cleanup_free_ char *dir = strdup(exe);
        ASSERT_NOT_NULL(dir);
        char *many = NULL;
        size_t many_size = 0;
        FILE *out = open_memstream(&many, &many_size);
        ASSERT_NOT_NULL(out);
        DIR *d = opendir(dirname(dir));
        ASSERT_NOT_NULL(d);
        size_t n_files = 0;
        for (struct dirent *e; (e = readdir(d)) && n_files < 2 * USYM_IDLE_FILES_MAX; ) {
                if (strncmp(e->d_name, "test-", 5) != 0 || e->d_type != DT_REG)
                        continue;
                n_files++;
                ASSERT_GT(fprintf(out, "%llx-%llx r--p 00000000 00:00 0 %s/%s\n",
                                  (unsigned long long) n_files << 32, ((unsigned long long) n_files << 32) + 4096,
                                  dir, e->d_name), 0);
        }
        (void) closedir(d);
        ASSERT_EQ(fclose(out), 0);
        if (n_files <= USYM_IDLE_FILES_MAX)
                fprintf(stderr, "only %zu test programs: the bound on idle files is not reached\n", n_files);
        UsymImage *im = usym_image(u, 20, many);
        ASSERT_NOT_NULL(im);
        for (size_t i = 1; i <= n_files; i++)
                (void) usym_image_lookup(im, (uint64_t) i << 32, false, &none);
        ASSERT_EQ(usym_image_files_opened(u), 2 + n_files);
        ASSERT_EQ(usym_image_files_cached(u), 2 + n_files);
        /* The program and libc used last. */
        image_function(usym_image(u, 1, maps), t.function + 3, "usym-target");
        image_libc(usym_image(u, 1, maps), t.libc);
        for (uint64_t key = 30; key < 30 + USYM_IMAGES_MAX; key++)
                ASSERT_NOT_NULL(usym_image(u, key, ""));
        ASSERT_EQ(usym_image_files_cached(u), MIN(2 + n_files, (size_t) USYM_IDLE_FILES_MAX));
        free(many);

        /* The program and libc were used last: still there, not read again. */
        image_function(usym_image(u, 1, maps), t.function + 3, "usym-target");
        image_libc(usym_image(u, 1, maps), t.libc);
        ASSERT_EQ(usym_image_files_opened(u), 2 + n_files);

        target_stop(&t);
        ASSERT_OK(unlink(copy));
        usym_free(u);
}

/* A process whose maps we may not read gives false, not a crash. The target runs from an execute-only
 * copy, which makes it non-dumpable: only CAP_SYS_PTRACE reads its maps then. Root has that, so as root
 * the lookup runs in a child that became uid 65534, for which a root process is unreadable anyway.
 * Returns false if the maps are readable all the same here, so the case cannot run. */
static bool test_unreadable_maps(void) {
        _cleanup_free_ char *copy = copy_target(0111);
        Target t = target_start(copy);
        pid_t pid;
        int status;

        pid = fork();
        ASSERT_OK(pid);
        if (pid == 0) {
                char maps[64];
                UsymResult r;
                bool found;
                int fd;

                if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                                       setresuid(65534, 65534, 65534) < 0))
                        _exit(2);
                /* The premise: the kernel refuses us the maps. */
                (void) snprintf(maps, sizeof(maps), "/proc/%d/maps", (int) t.pid);
                fd = open(maps, O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                        _exit(EXIT_TEST_SKIP);
                UserSymbols *u = usym_new(USYM_MAX_PROCESSES_DEFAULT);
                if (!u)
                        _exit(3);
                found = usym_lookup(u, t.pid, t.function + 3, &r);
                usym_free(u);
                _exit(found ? 1 : 0);
        }
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        target_stop(&t);
        ASSERT_OK(unlink(copy));
        ASSERT_TRUE(WIFEXITED(status));
        if (WEXITSTATUS(status) == EXIT_TEST_SKIP) {
                fprintf(stderr, "SKIP: the unreadable-maps case: the maps of a non-dumpable process%s are "
                        "readable here (CAP_SYS_PTRACE?)\n", geteuid() == 0 ? " of root, as uid 65534," : "");
                return false;
        }
        ASSERT_EQ(WEXITSTATUS(status), 0);
        return true;
}

int main(int argc, char *argv[]) {
        bool unreadable_maps = argc == 4 && strcmp(argv[3], "unreadable-maps") == 0;

        if (argc != 3 && !unreadable_maps) {
                fprintf(stderr, "Usage: %s USYM-TARGET USYM-OTHER [unreadable-maps]\n", argv[0]);
                return EXIT_FAILURE;
        }
        target_path = argv[1];
        other_path = argv[2];
        /* A child that dies early must fail an assertion, not kill us with SIGPIPE. */
        (void) signal(SIGPIPE, SIG_IGN);

        /* A case of its own: it needs the kernel to refuse us a process's maps, which some machines
         * do not (a skip of this test alone). */
        if (unreadable_maps) {
                fprintf(stderr, "== test_unreadable_maps\n");
                return test_unreadable_maps() ? EXIT_SUCCESS : EXIT_TEST_SKIP;
        }
        TEST(test_executable_and_libc);
        TEST(test_unknown_addresses);
        TEST(test_exec_invalidates);
        TEST(test_session);
        TEST(test_forget_and_lru);
        TEST(test_deleted_file);
        TEST(test_images_share_files);
        return EXIT_SUCCESS;
}
