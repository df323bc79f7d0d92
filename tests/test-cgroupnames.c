/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroupnames.h"
#include "macro.h"
#include "tests.h"

static void check_unit(const char *path, const char *expected) {
        size_t n;
        const char *s = cgroupnames_unit_name(path, &n);
        ASSERT_EQ(n, strlen(expected));
        ASSERT_TRUE(strncmp(s, expected, n) == 0);
}

static void test_unit_names(void) {
        check_unit("/system.slice/sshd.service", "sshd.service");
        check_unit("/user.slice/user-1000.slice/session-3.scope", "session-3.scope");
        check_unit("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", "foo.service");
        check_unit("/user.slice/user-1000.slice", "user-1000.slice");
        check_unit("/init.scope", "init.scope");
        /* A delegated subtree counts for the unit it was delegated to. */
        check_unit("/system.slice/docker-1234.scope/inner/leaf", "docker-1234.scope");
        check_unit("/system.slice/systemd-udevd.service/udev", "systemd-udevd.service");
        check_unit("/system.slice/var-lib.mount", "var-lib.mount");
        /* No unit in it: the path itself. */
        check_unit("/", "/");
        check_unit("/machine/qemu-1", "/machine/qemu-1");
        /* A bare suffix is not a unit name. */
        check_unit("/x/.service", "/x/.service");
        check_unit("", "");
}

static char root[] = "/tmp/test-cgroupnames-XXXXXX";

static uint64_t make_dir(const char *rel) {
        char path[PATH_MAX];
        struct stat st;

        (void) snprintf(path, sizeof(path), "%s%s", root, rel);
        ASSERT_OK(mkdir(path, 0755) < 0 ? -errno : 0);
        ASSERT_OK(stat(path, &st) < 0 ? -errno : 0);
        return (uint64_t) st.st_ino;
}

static void remove_dir(const char *rel) {
        char path[PATH_MAX];

        (void) snprintf(path, sizeof(path), "%s%s", root, rel);
        ASSERT_OK(rmdir(path) < 0 ? -errno : 0);
}

/* A fake cgroup tree in a temporary directory: a walk finds every directory by inode, files are skipped,
 * a directory made after the walk is found by the next one, a removed one is forgotten. */
static void test_walk(void) {
        CgroupNames *c = NULL;
        struct stat st;
        char file[PATH_MAX];

        ASSERT_NOT_NULL(mkdtemp(root));
        ASSERT_OK(stat(root, &st) < 0 ? -errno : 0);
        uint64_t top = (uint64_t) st.st_ino;
        uint64_t system = make_dir("/system.slice");
        uint64_t sshd = make_dir("/system.slice/sshd.service");
        uint64_t user = make_dir("/user.slice");
        uint64_t u1000 = make_dir("/user.slice/user-1000.slice");
        uint64_t session = make_dir("/user.slice/user-1000.slice/session-3.scope");
        (void) snprintf(file, sizeof(file), "%s/system.slice/sshd.service/cgroup.procs", root);
        FILE *f = fopen(file, "we");
        ASSERT_NOT_NULL(f);
        fclose(f);

        ASSERT_OK(cgroupnames_new(root, &c));
        ASSERT_STREQ(cgroupnames_root(c), root);
        ASSERT_NULL(cgroupnames_path(c, sshd));         /* not walked yet */
        ASSERT_OK(cgroupnames_walk(c));
        ASSERT_EQ(cgroupnames_walks(c), 1);
        ASSERT_EQ(cgroupnames_count(c), 6);
        ASSERT_STREQ(cgroupnames_path(c, top), "/");
        ASSERT_STREQ(cgroupnames_path(c, system), "/system.slice");
        ASSERT_STREQ(cgroupnames_path(c, sshd), "/system.slice/sshd.service");
        ASSERT_STREQ(cgroupnames_path(c, user), "/user.slice");
        ASSERT_STREQ(cgroupnames_path(c, u1000), "/user.slice/user-1000.slice");
        ASSERT_STREQ(cgroupnames_path(c, session), "/user.slice/user-1000.slice/session-3.scope");
        ASSERT_NULL(cgroupnames_path(c, 0));
        ASSERT_NULL(cgroupnames_path(c, UINT64_MAX));

        uint64_t holder = make_dir("/system.slice/holder.service");
        ASSERT_NULL(cgroupnames_path(c, holder));
        remove_dir("/user.slice/user-1000.slice/session-3.scope");
        ASSERT_OK(cgroupnames_walk(c));
        ASSERT_STREQ(cgroupnames_path(c, holder), "/system.slice/holder.service");
        /* (An inode number may be reused by the new directory; only check it is gone if it was not.) */
        if (session != holder)
                ASSERT_NULL(cgroupnames_path(c, session));
        ASSERT_EQ(cgroupnames_count(c), 6);

        /* A root that went away: an error, and the cache stays. */
        remove_dir("/system.slice/holder.service");
        remove_dir("/user.slice/user-1000.slice");
        remove_dir("/user.slice");
        ASSERT_OK(unlink(file) < 0 ? -errno : 0);
        remove_dir("/system.slice/sshd.service");
        remove_dir("/system.slice");
        ASSERT_OK(rmdir(root) < 0 ? -errno : 0);
        ASSERT_EQ(cgroupnames_walk(c), -ENOENT);
        ASSERT_STREQ(cgroupnames_path(c, system), "/system.slice");
        cgroupnames_free(c);
}

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        ASSERT_NOT_NULL(f);
        ASSERT_GE(fputs(text, f), 0);
        ASSERT_EQ(fclose(f), 0);
}

/* A cgroup named from its task's /proc/PID/cgroup (a fake proc here): the cgroup2 line's path, checked
 * against the id; a task that moved, a record without the line and a missing task are refused. */
static void test_task_path(void) {
        char proc[] = "/tmp/test-cgroupnames-proc-XXXXXX", file[PATH_MAX];
        CgroupNames *c = NULL;
        char *path = NULL;

        memcpy(root, "/tmp/test-cgroupnames-XXXXXX", sizeof(root));      /* test_walk() used it */
        ASSERT_NOT_NULL(mkdtemp(root));
        ASSERT_NOT_NULL(mkdtemp(proc));
        (void) make_dir("/system.slice");
        uint64_t victim = make_dir("/system.slice/oomvictim.service");
        ASSERT_OK(cgroupnames_new(root, &c));
        (void) snprintf(file, sizeof(file), "%s/42", proc);
        ASSERT_OK(mkdir(file, 0755) < 0 ? -errno : 0);
        (void) snprintf(file, sizeof(file), "%s/42/cgroup", proc);
        write_text(file, "4:memory:/system.slice/oomvictim.service\n0::/system.slice/oomvictim.service\n");
        ASSERT_OK(cgroupnames_task_path(c, proc, 42, victim, &path));
        ASSERT_STREQ(path, "/system.slice/oomvictim.service");
        free(path);
        path = NULL;
        /* Not the cgroup of that id (the task moved), no cgroup2 line, no such task. */
        ASSERT_EQ(cgroupnames_task_path(c, proc, 42, victim + 1, &path), -ESTALE);
        write_text(file, "0::/system.slice/oomvictim.service");
        ASSERT_OK(cgroupnames_task_path(c, proc, 42, victim, &path));
        free(path);
        path = NULL;
        write_text(file, "4:memory:/system.slice/oomvictim.service\n");
        ASSERT_EQ(cgroupnames_task_path(c, proc, 42, victim, &path), -ENOENT);
        ASSERT_EQ(cgroupnames_task_path(c, proc, 43, victim, &path), -ENOENT);
        ASSERT_EQ(cgroupnames_task_path(c, proc, 0, victim, &path), -EINVAL);
        ASSERT_NULL(path);
        ASSERT_OK(unlink(file) < 0 ? -errno : 0);
        (void) snprintf(file, sizeof(file), "%s/42", proc);
        ASSERT_OK(rmdir(file) < 0 ? -errno : 0);
        ASSERT_OK(rmdir(proc) < 0 ? -errno : 0);
        remove_dir("/system.slice/oomvictim.service");
        remove_dir("/system.slice");
        ASSERT_OK(rmdir(root) < 0 ? -errno : 0);
        cgroupnames_free(c);
}

/* The default root: the host's cgroup2 mount, where there is one. */
static void test_default_root(void) {
        CgroupNames *c = NULL;
        int r = cgroupnames_new(NULL, &c);

        if (r == -ENOMEDIUM) {
                fprintf(stderr, "no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified, skipping the host walk\n");
                return;
        }
        ASSERT_OK(r);
        ASSERT_OK(cgroupnames_walk(c));
        ASSERT_GE(cgroupnames_count(c), 1);
        /* Our own cgroup is in it, under the path /proc/self/cgroup gives for cgroup2 ("0::/..."). */
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[4096];
        bool found = false;
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        char path[PATH_MAX + 4096];
                        struct stat st;
                        (void) snprintf(path, sizeof(path), "%s%s", cgroupnames_root(c), line + 3);
                        if (stat(path, &st) == 0) {
                                ASSERT_STREQ(cgroupnames_path(c, (uint64_t) st.st_ino), line + 3);
                                found = true;
                        }
                }
        if (f)
                fclose(f);
        if (!found)
                fprintf(stderr, "our own cgroup2 path is not visible here, not checked\n");
        cgroupnames_free(c);
}

int main(void) {
        TEST(test_unit_names);
        TEST(test_walk);
        TEST(test_task_path);
        TEST(test_default_root);
        return 0;
}
