/* SPDX-License-Identifier: MIT */

/*
 * The source registry (daemon/sources/source.c) with fake sources in place of the real ones: source.c is
 * included with a registry of its own, so "auto" is tested on probes the test controls, whatever the
 * kernel has. What it must do: skip a source whose probe fails and pick the next automatic one, never
 * pick a source that is not automatic, build a named source without asking its probe, and when nothing
 * can run, fail with -EOPNOTSUPP and an error that names every automatic source with its probe's reason.
 */

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* In registry order: what "auto" tries first comes first. */
#define SOURCE_REGISTRY(X)      \
        X(broken)               \
        X(manual)               \
        X(fine)                 \
        X(later)

#include "../daemon/sources/source.c"

#include "tests.h"

typedef struct Fake {
        const char *name;
        bool can_run;                   /* what its probe answers */
        const char *reason;             /* its probe's reason when it cannot run; NULL: none given */
        unsigned probed, built;
        const SourceOptions *options;   /* the options the last probe or constructor saw */
} Fake;

static Fake fakes[] = {
        { .name = "broken", .can_run = false, .reason = "the broken device is missing" },
        { .name = "manual" },
        { .name = "fine", .can_run = true, .reason = "fine has no device either" },
        { .name = "later", .can_run = true, .reason = "later is switched off" },
};

static Fake *fake_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(fakes); i++)
                if (streq(fakes[i].name, name))
                        return &fakes[i];
        assert(false);
        return NULL;
}

static void fakes_reset(void) {
        for (size_t i = 0; i < ELEMENTSOF(fakes); i++) {
                fakes[i].probed = fakes[i].built = 0;
                fakes[i].options = NULL;
        }
        fake_find("fine")->can_run = fake_find("later")->can_run = true;
}

typedef struct FakeSource {
        EventSource source;
        Fake *fake;
} FakeSource;

static void fake_source_free(EventSource *s) {
        free(s);
}

static const EventSourceOps fake_source_ops = {
        .name = "fake",
        .free = fake_source_free,
};

static int fake_probe(Fake *f, const SourceOptions *options, const char **ret_reason) {
        f->probed++;
        f->options = options;
        if (f->can_run)
                return 0;
        *ret_reason = f->reason;
        return -EOPNOTSUPP;
}

static int fake_new(Fake *f, const SourceOptions *options, EventSource **ret) {
        FakeSource *s = calloc(1, sizeof(FakeSource));

        if (!s)
                return -ENOMEM;
        f->built++;
        f->options = options;
        *s = (FakeSource) { .source.ops = &fake_source_ops, .fake = f };
        *ret = &s->source;
        return 0;
}

#define FAKE_TYPE(n, is_automatic)                                                                      \
        static int n##_probe(const SourceOptions *o, const char **r) {                                  \
                return fake_probe(fake_find(#n), o, r);                                                 \
        }                                                                                               \
        static int n##_new(const SourceOptions *o, EventSource **r) {                                   \
                return fake_new(fake_find(#n), o, r);                                                   \
        }                                                                                               \
        const SourceType n##_source_type = {                                                            \
                .name = #n,                                                                             \
                .description = "a fake source",                                                         \
                .automatic = is_automatic,                                                              \
                .probe = n##_probe,                                                                     \
                .new = n##_new,                                                                         \
        };

FAKE_TYPE(broken, true)
FAKE_TYPE(manual, false)
FAKE_TYPE(fine, true)
FAKE_TYPE(later, true)

/* Calls source_new() with stderr, where the log goes, captured into buf. */
static int source_new_logged(const char *name, const SourceOptions *o, EventSource **ret,
                const SourceType **ret_type, char *buf, size_t size) {
        char path[] = "/tmp/test-source-XXXXXX";
        int fd, saved, r;
        ssize_t n;

        fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        ASSERT_OK(unlink(path));
        ASSERT_EQ(fflush(stderr), 0);
        saved = dup(STDERR_FILENO);
        ASSERT_GE(saved, 0);
        ASSERT_GE(dup2(fd, STDERR_FILENO), 0);

        r = source_new(name, o, ret, ret_type, NULL);

        ASSERT_EQ(fflush(stderr), 0);
        ASSERT_GE(dup2(saved, STDERR_FILENO), 0);
        (void) close(saved);
        n = pread(fd, buf, size - 1, 0);
        ASSERT_GE(n, 0);
        buf[n] = '\0';
        (void) close(fd);
        return r;
}

static void test_auto_skips_failed_probe(void) {
        const SourceType *t = NULL;
        EventSource *s = NULL;
        SourceOptions o;

        source_options_init(&o);
        fakes_reset();

        /* broken's probe fails, manual is not for auto: fine is the one, and later is never asked. The
         * reason (Status backendReason) names what auto passed over and why. */
        _cleanup_free_ char *why = NULL;
        ASSERT_OK(source_new("auto", &o, &s, &t, &why));
        ASSERT_NOT_NULL(why);
        ASSERT_NOT_NULL(strstr(why, "auto: "));
        ASSERT_NOT_NULL(strstr(why, "broken: the broken device is missing"));
        ASSERT_NULL(strstr(why, "manual"));
        ASSERT_NOT_NULL(s);
        ASSERT_TRUE(t == &fine_source_type);
        ASSERT_TRUE(((FakeSource *) s)->fake == fake_find("fine"));
        ASSERT_EQ(fake_find("broken")->probed, 1);
        ASSERT_EQ(fake_find("broken")->built, 0);
        ASSERT_EQ(fake_find("manual")->probed, 0);
        ASSERT_EQ(fake_find("manual")->built, 0);
        ASSERT_EQ(fake_find("fine")->probed, 1);
        ASSERT_EQ(fake_find("fine")->built, 1);
        ASSERT_EQ(fake_find("later")->probed, 0);
        ASSERT_EQ(fake_find("later")->built, 0);
        /* The caller's options reach both the probe and the constructor. */
        ASSERT_TRUE(fake_find("fine")->options == &o);
        s = event_source_free(s);

        /* NULL means auto too; and when fine cannot run either, the next one runs. */
        fakes_reset();
        fake_find("fine")->can_run = false;
        ASSERT_OK(source_new(NULL, &o, &s, &t, NULL));
        ASSERT_TRUE(t == &later_source_type);
        ASSERT_EQ(fake_find("broken")->probed, 1);
        ASSERT_EQ(fake_find("fine")->probed, 1);
        ASSERT_EQ(fake_find("fine")->built, 0);
        ASSERT_EQ(fake_find("later")->built, 1);
        s = event_source_free(s);
}

static void test_auto_none_can_run(void) {
        const SourceType *t = NULL;
        EventSource *s = NULL;
        SourceOptions o;
        char log[4096];

        source_options_init(&o);
        fakes_reset();
        fake_find("fine")->can_run = fake_find("later")->can_run = false;
        /* A probe that gives no reason still gets named. */
        fake_find("later")->reason = NULL;

        ASSERT_EQ(source_new_logged("auto", &o, &s, &t, log, sizeof(log)), -EOPNOTSUPP);
        ASSERT_NULL(s);
        ASSERT_NULL(t);
        fprintf(stderr, "logged: %s", log);
        ASSERT_NOT_NULL(strstr(log, "No event source can run here"));
        ASSERT_NOT_NULL(strstr(log, "broken: the broken device is missing"));
        ASSERT_NOT_NULL(strstr(log, "fine: fine has no device either"));
        ASSERT_NOT_NULL(strstr(log, "later: (no reason)"));
        /* Not for auto, so not among the reasons. */
        ASSERT_NULL(strstr(log, "manual"));
        for (size_t i = 0; i < ELEMENTSOF(fakes); i++)
                ASSERT_EQ(fakes[i].built, 0);
        fake_find("later")->reason = "later is switched off";
}

static void test_named(void) {
        const SourceType *t = NULL;
        EventSource *s = NULL;
        SourceOptions o;
        char log[4096];

        source_options_init(&o);
        fakes_reset();

        /* A source that is not for auto runs when named. */
        _cleanup_free_ char *why = NULL;
        ASSERT_OK(source_new("manual", &o, &s, &t, &why));
        ASSERT_TRUE(why && streq(why, "asked for"));
        ASSERT_TRUE(t == &manual_source_type);
        s = event_source_free(s);

        /* Named, a source is built without its probe: its constructor says what exactly is missing. */
        ASSERT_OK(source_new("broken", &o, &s, NULL, NULL));
        ASSERT_EQ(fake_find("broken")->probed, 0);
        ASSERT_EQ(fake_find("broken")->built, 1);
        s = event_source_free(s);

        /* An unknown name is -ENOENT, and the error lists what is known. */
        t = NULL;
        ASSERT_EQ(source_new_logged("nosuch", &o, &s, &t, log, sizeof(log)), -ENOENT);
        ASSERT_NULL(s);
        ASSERT_NULL(t);
        ASSERT_NOT_NULL(strstr(log, "Unknown event source 'nosuch' (known: auto, broken, manual, fine, later)"));
}

static void test_registry(void) {
        char names[64];

        ASSERT_TRUE(source_type_find("fine") == &fine_source_type);
        ASSERT_NULL(source_type_find("auto"));
        ASSERT_NULL(source_type_find(NULL));
        ASSERT_TRUE(source_type_get(0) == &broken_source_type);
        ASSERT_TRUE(source_type_get(3) == &later_source_type);
        ASSERT_NULL(source_type_get(4));
        ASSERT_STREQ(source_type_names(",", names, sizeof(names)), "broken,manual,fine,later");
        /* Cut, but still a string. */
        ASSERT_STREQ(source_type_names(",", names, 8), "broken,");
}

int main(void) {
        log_set_target_journal(false);
        TEST(test_registry);
        TEST(test_auto_skips_failed_probe);
        TEST(test_auto_none_can_run);
        TEST(test_named);
        return EXIT_SUCCESS;
}
