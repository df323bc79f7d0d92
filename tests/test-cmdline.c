/* SPDX-License-Identifier: MIT */

/*
 * client/cmdline.c on a small table of its own: parsing before and after the verb, the per-verb check,
 * value errors, exclusions, --help stopping the line, --help's layout, the JSON listing, and
 * cmdline_verify() catching each kind of mistake in a table. memstrackctl's own table is checked
 * option by option against every verb by test-ctl-options.py.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmdline.h"
#include "macro.h"
#include "tests.h"

static bool arg_help, arg_quiet, arg_left, arg_right;
static uint64_t arg_count;
static const char *arg_mode, *arg_colour;

static int run_nothing(int argc, char *argv[]) {
        return 0;
}

static const CmdlineVerb verbs[] = {
        { "show", NULL, "Show things", 0, 0, run_nothing },
        { "copy", "FROM [TO]", "Copy FROM to TO", 1, 2, run_nothing },
};

static const CmdlineOption options[] = {
        {
                .name = "help", .short_name = 'h', .stops = true,
                .parse = cmdline_set_true, .target = &arg_help,
                .parts = { { .verbs = NULL, .help = "Show this help" } },
        }, {
                .name = "quiet",
                .parse = cmdline_set_true, .target = &arg_quiet,
                .parts = { { .verbs = NULL, .help = "Say nothing" } },
        }, {
                .name = "count", .short_name = 'c', .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "N",
                .parse = cmdline_set_uint64, .target = &arg_count, .min = 1, .max = 9,
                .expects = "a number from 1 to 9",
                .parts = { { .verbs = CMDLINE_WORDS("show"),
                             .help = "how many things to show, counted one by one from the "
                                                    "first, which is the biggest" } },
        }, {
                .name = "mode", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "MODE",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = cmdline_set_word, .target = &arg_mode,
                .parts = {
                        { .verbs = CMDLINE_WORDS("show"),
                          .help = "fast or slow", .words = CMDLINE_WORDS("fast", "slow") },
                        { .verbs = CMDLINE_WORDS("copy"),
                          .help = "fast or safe", .words = CMDLINE_WORDS("fast", "safe") },
                },
        }, {
                .name = "left", .exclusive = "side",
                .parse = cmdline_set_true, .target = &arg_left,
                .parts = { { .verbs = CMDLINE_WORDS("copy"), .help = "to the left" } },
        }, {
                .name = "right", .exclusive = "side",
                .parse = cmdline_set_true, .target = &arg_right,
                .parts = { { .verbs = CMDLINE_WORDS("copy"), .help = "to the right" } },
        }, {
                /* An option added as one entry: nothing else in this file names it but the test. */
                .name = "colour", .argument = CMDLINE_REQUIRED_ARGUMENT, .metavar = "WHEN",
                .completion = CMDLINE_COMPLETE_WORD,
                .parse = cmdline_set_word, .target = &arg_colour,
                .parts = { { .verbs = CMDLINE_WORDS("show", "copy"), .help = "always, never or auto",
                             .words = CMDLINE_WORDS("always", "never", "auto") } },
        },
};

static const Cmdline table = {
        .program = "prog",
        .description = "Does things.",
        .verbs = verbs,
        .n_verbs = ELEMENTSOF(verbs),
        .options = options,
        .n_options = ELEMENTSOF(options),
};

typedef struct Parsed {
        int r;
        const CmdlineOption *stop;
        const CmdlineVerb *verb;
        char *err;              /* what went to stderr */
        char *first_arg;        /* the verb's first argument, NULL if none */
} Parsed;

static void parsed_done(Parsed *p) {
        free(p->err);
        free(p->first_arg);
}

/* The words of the last line parsed, which the arg_* variables point into. */
static char *words_buffer;

/* Parses "prog " + line (words split at spaces), stderr caught. */
static Parsed parse(const Cmdline *c, const char *line) {
        char *copy = strdup(line);
        char *argv[32] = { (char *) "prog" }, *save = NULL;
        int argc = 1, saved_stderr;
        FILE *f = tmpfile();
        Parsed p = {};
        long size;

        ASSERT_NOT_NULL(copy);
        ASSERT_NOT_NULL(f);
        free(words_buffer);
        words_buffer = copy;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                ASSERT_LT(argc, 31);
                argv[argc++] = w;
        }
        arg_help = arg_quiet = arg_left = arg_right = false;
        arg_count = 0;
        arg_mode = arg_colour = NULL;

        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        ASSERT_OK(saved_stderr);
        ASSERT_OK(dup2(fileno(f), STDERR_FILENO));
        p.r = cmdline_parse(c, argc, argv, &p.stop, &p.verb);
        fflush(stderr);
        ASSERT_OK(dup2(saved_stderr, STDERR_FILENO));
        close(saved_stderr);

        size = ftell(f);
        ASSERT_OK(size);
        p.err = calloc(1, (size_t) size + 1);
        ASSERT_NOT_NULL(p.err);
        rewind(f);
        ASSERT_EQ(fread(p.err, 1, (size_t) size, f), size);
        fclose(f);
        if (p.r == 0 && p.verb && !p.stop && optind + 1 < argc)
                p.first_arg = strdup(argv[optind + 1]);
        return p;
}

static void expect_ok(const char *line, const char *verb) {
        Parsed p = parse(&table, line);

        fprintf(stderr, "   '%s'\n", line);
        ASSERT_EQ(p.r, 0);
        ASSERT_STREQ(p.err, "");
        ASSERT_NULL(p.stop);
        ASSERT_NOT_NULL(p.verb);
        ASSERT_STREQ(p.verb->name, verb);
        parsed_done(&p);
}

static void expect_usage(const char *line, const char *message) {
        Parsed p = parse(&table, line);

        fprintf(stderr, "   '%s'\n", line);
        ASSERT_EQ(p.r, 2);
        ASSERT_STREQ(p.err, message);
        parsed_done(&p);
}

static void test_parse(void) {
        Parsed p;

        expect_ok("show", "show");
        ASSERT_EQ(arg_count, 0);
        /* Options before and after the verb, long and short, value attached or not. */
        expect_ok("--count=3 show", "show");
        ASSERT_EQ(arg_count, 3);
        expect_ok("show --count 4 --quiet", "show");
        ASSERT_EQ(arg_count, 4);
        ASSERT_TRUE(arg_quiet);
        expect_ok("-c5 show", "show");
        ASSERT_EQ(arg_count, 5);
        expect_ok("show -c 6", "show");
        ASSERT_EQ(arg_count, 6);
        expect_ok("copy --mode safe a b --left --colour=never", "copy");
        ASSERT_STREQ(arg_mode, "safe");
        ASSERT_STREQ(arg_colour, "never");
        ASSERT_TRUE(arg_left);

        /* getopt moved the options away: the verb's arguments follow it. */
        p = parse(&table, "copy --quiet from --mode fast");
        ASSERT_EQ(p.r, 0);
        ASSERT_STREQ(p.first_arg, "from");
        parsed_done(&p);

        expect_usage("copy a --count 3", "prog: 'copy' does not take --count.\nTry 'prog copy --help'.\n");
        expect_usage("--count=3 copy a", "prog: 'copy' does not take --count.\nTry 'prog copy --help'.\n");
        expect_usage("show -c 3 --left", "prog: 'show' does not take --left.\nTry 'prog show --help'.\n");
        expect_usage("show --count=10",
                     "prog: --count takes a number from 1 to 9, not '10'.\nTry 'prog --help'.\n");
        /* The words of every part, each once. */
        expect_usage("show --mode=quick",
                     "prog: --mode takes fast, slow or safe, not 'quick'.\nTry 'prog --help'.\n");
        expect_usage("show --colour", "prog: Option '--colour' needs an argument.\nTry 'prog --help'.\n");
        expect_usage("show --bogus", "prog: Unknown option '--bogus'.\nTry 'prog --help'.\n");
        expect_usage("show --quiet=1", "prog: Unknown option '--quiet=1'.\nTry 'prog --help'.\n");
        expect_usage("", "prog: Missing verb.\nTry 'prog --help'.\n");
        expect_usage("paste", "prog: Unknown verb 'paste'.\nTry 'prog --help'.\n");
        expect_usage("copy", "prog: Too few arguments for 'copy'.\nTry 'prog copy --help'.\n");
        expect_usage("copy a b c", "prog: Too many arguments for 'copy'.\nTry 'prog copy --help'.\n");
        expect_usage("copy a --right --left",
                     "prog: --left and --right exclude each other.\nTry 'prog --help'.\n");
        expect_usage("show --colour=green",
                     "prog: --colour takes always, never or auto, not 'green'.\nTry 'prog --help'.\n");

        /* --help stops reading: what follows is not checked, the verb is still found. */
        p = parse(&table, "--help --bogus --count=99 show");
        ASSERT_EQ(p.r, 0);
        ASSERT_STREQ(p.err, "");
        ASSERT_NOT_NULL(p.stop);
        ASSERT_STREQ(p.stop->name, "help");
        ASSERT_NOT_NULL(p.verb);
        ASSERT_STREQ(p.verb->name, "show");
        ASSERT_EQ(arg_count, 0);
        parsed_done(&p);
        p = parse(&table, "paste -h");
        ASSERT_EQ(p.r, 0);
        ASSERT_NOT_NULL(p.stop);
        ASSERT_NULL(p.verb);
        parsed_done(&p);
        /* Before it, errors count. */
        expect_usage("--bogus --help", "prog: Unknown option '--bogus'.\nTry 'prog --help'.\n");
}

static char *help_text(const CmdlineVerb *verb) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);

        ASSERT_NOT_NULL(f);
        ASSERT_OK(cmdline_help(&table, verb, f));
        ASSERT_EQ(fclose(f), 0);
        return s;
}

static void test_help(void) {
        _cleanup_free_ char *all = help_text(NULL), *show = help_text(&verbs[0]),
                *copy = help_text(&verbs[1]);

        /* Each part on its own lines with its verbs; long text wrapped at 79 columns, under column 29. */
        ASSERT_STREQ(all,
                     "Usage: prog [OPTIONS] VERB [ARGS]\n"
                     "\n"
                     "Does things.\n"
                     "\n"
                     "Verbs:\n"
                     "  show                       Show things\n"
                     "  copy FROM [TO]             Copy FROM to TO\n"
                     "\n"
                     "Options:\n"
                     "  -h --help                  Show this help\n"
                     "     --quiet                 Say nothing\n"
                     "  -c --count=N               show: how many things to show, counted one by one\n"
                     "                             from the first, which is the biggest\n"
                     "     --mode=MODE             show: fast or slow\n"
                     "                             copy: fast or safe\n"
                     "     --left                  copy: to the left\n"
                     "     --right                 copy: to the right\n"
                     "     --colour=WHEN           show/copy: always, never or auto\n"
                     "\n"
                     "See prog(1).\n");
        /* A verb's: its part alone, capitalized. */
        ASSERT_STREQ(copy,
                     "Usage: prog [OPTIONS] copy FROM [TO]\n"
                     "\n"
                     "Copy FROM to TO\n"
                     "\n"
                     "Options of copy:\n"
                     "     --mode=MODE             Fast or safe\n"
                     "     --left                  To the left\n"
                     "     --right                 To the right\n"
                     "     --colour=WHEN           Always, never or auto\n"
                     "\n"
                     "Options of every verb:\n"
                     "  -h --help                  Show this help\n"
                     "     --quiet                 Say nothing\n"
                     "\n"
                     "See prog(1).\n");
        ASSERT_NOT_NULL(strstr(show, "  -c --count=N               How many things to show, counted one by one "
                                     "from\n"));
        ASSERT_NULL(strstr(show, "--left"));
}

static void test_list(void) {
        json_auto_t *doc = NULL;
        _cleanup_free_ char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        json_t *mode, *count;

        ASSERT_NOT_NULL(f);
        ASSERT_OK(cmdline_list(&table, f));
        ASSERT_EQ(fclose(f), 0);
        doc = json_loads(s, 0, NULL);
        ASSERT_NOT_NULL(doc);
        ASSERT_EQ(json_array_size(json_object_get(doc, "verbs")), 2);
        ASSERT_EQ(json_array_size(json_object_get(doc, "options")), ELEMENTSOF(options));
        count = json_array_get(json_object_get(doc, "options"), 2);
        ASSERT_STREQ(json_string_value(json_object_get(count, "short")), "c");
        ASSERT_STREQ(json_string_value(json_object_get(count, "argument")), "required");
        mode = json_array_get(json_object_get(doc, "options"), 3);
        ASSERT_STREQ(json_string_value(json_object_get(mode, "completion")), "word");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(
                json_array_get(json_object_get(mode, "parts"), 1), "words"), 1)), "safe");
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(
                json_array_get(json_object_get(mode, "parts"), 1), "verbs"), 0)), "copy");
}

/* A copy of the table with option i replaced by o must fail cmdline_verify() saying problem. */
static void expect_broken(size_t i, CmdlineOption o, const char *problem) {
        CmdlineOption broken[ELEMENTSOF(options)];
        Cmdline c = table;
        _cleanup_free_ char *said = NULL;

        memcpy(broken, options, sizeof(options));
        broken[i] = o;
        c.options = broken;
        ASSERT_EQ(cmdline_verify(&c, &said), -EINVAL);
        fprintf(stderr, "   %s\n", said);
        ASSERT_NOT_NULL(said);
        ASSERT_NOT_NULL(strstr(said, problem));
}

static void test_verify(void) {
        _cleanup_free_ char *said = NULL;
        CmdlineOption o;

        ASSERT_EQ(cmdline_verify(&table, &said), 0);
        ASSERT_NULL(said);

        o = options[2];
        o.parts[0].verbs = CMDLINE_WORDS("shows");
        expect_broken(2, o, "--count names no verb 'shows'");
        o = options[2];
        o.name = "quiet";
        expect_broken(2, o, "--quiet is there twice");
        o = options[2];
        o.short_name = 'h';
        expect_broken(2, o, "-h is there twice");
        o = options[2];
        o.metavar = NULL;
        expect_broken(2, o, "a metavar exactly when it takes a value");
        o = options[3];
        o.parts[1].words = NULL;
        expect_broken(3, o, "--mode: part 1 has no words");
        o = options[3];
        o.parts[1].verbs = CMDLINE_WORDS("copy", "show");
        expect_broken(3, o, "--mode names 'show' in two parts");
        o = options[4];
        o.exclusive = "other";
        expect_broken(4, o, "--left is alone in its group 'other'");
        o = options[1];
        o.parts[0].help = NULL;
        expect_broken(1, o, "--quiet: no part");
}

int main(void) {
        TEST(test_parse);
        TEST(test_help);
        TEST(test_list);
        TEST(test_verify);
        free(words_buffer);
        return 0;
}
