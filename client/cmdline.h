/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A command line described by two tables, its verbs and its options. Everything about an option is in
 * its one entry (names, value, the verbs that take it, help, how shells complete it, what it sets), and
 * everything else comes from the tables: getopt_long's arrays, the check that the verb takes each option
 * given, the exclusions, --help overall and per verb, and the listing the shell completions are
 * generated from at build time (cmdline_list(), shell-completion/generate.py). memstrackctl's tables
 * are in main.c.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"

typedef struct CmdlineVerb {
        const char *name;
        const char *synopsis;           /* after the name in --help: "NAME", "[peaks|all]"; NULL: nothing */
        const char *summary;            /* one line for --help and the completions' descriptions */
        unsigned min_args, max_args;    /* positional arguments after the verb */
        int (*run)(int argc, char *argv[]);     /* argv[0] is the verb */
} CmdlineVerb;

typedef enum CmdlineArgument {
        CMDLINE_NO_ARGUMENT,
        CMDLINE_REQUIRED_ARGUMENT,      /* --name=VALUE, --name VALUE, -xVALUE, -x VALUE */
        CMDLINE_OPTIONAL_ARGUMENT,      /* only --name=VALUE */
        _CMDLINE_ARGUMENT_MAX,
        _CMDLINE_ARGUMENT_INVALID = -EINVAL,
} CmdlineArgument;

/* What shells offer for an option's value. */
typedef enum CmdlineCompletion {
        CMDLINE_COMPLETE_NOTHING,       /* a number or free text */
        CMDLINE_COMPLETE_WORD,          /* one of the words of the verb's part (any part's without a verb) */
        CMDLINE_COMPLETE_WORD_LIST,     /* a comma-separated list of them */
        CMDLINE_COMPLETE_FILE,
        CMDLINE_COMPLETE_PID,           /* the pids memstrackd knows, else those in /proc */
        CMDLINE_COMPLETE_MODULE,        /* the modules memstrackd knows */
        CMDLINE_COMPLETE_UNIT,          /* the units memstrackd knows */
        _CMDLINE_COMPLETION_MAX,
        _CMDLINE_COMPLETION_INVALID = -EINVAL,
} CmdlineCompletion;

/* A NULL-terminated list of strings, for the tables. */
#define CMDLINE_WORDS(...) ((const char *const[]) { __VA_ARGS__, NULL })

/*
 * What an option does for some verbs. An option taken by several verbs in different ways has one part
 * per way: --help lists each with its verbs, and a verb's --help shows the text of its part alone.
 */
typedef struct CmdlineOptionPart {
        const char *const *verbs;       /* CMDLINE_WORDS("tasks", "top"); NULL: every verb */
        const char *help;               /* lowercase after verbs ("tasks: include ..."), a sentence without */
        const char *const *words;       /* values for CMDLINE_COMPLETE_WORD(_LIST) and cmdline_set_word() */
        const char *(*word_at)(size_t i);       /* instead of words: the i-th, NULL past the last */
} CmdlineOptionPart;

typedef struct CmdlineOption CmdlineOption;

/*
 * Sets what the option sets from value (NULL without one). Returns 0, or -EINVAL for a value the option
 * does not take (the caller says "--NAME takes EXPECTS, not 'VALUE'.").
 */
typedef int (*CmdlineParse)(const CmdlineOption *o, const char *value);

#define CMDLINE_PARTS_MAX 6

struct CmdlineOption {
        const char *name;               /* the long name, without "--" */
        char short_name;                /* 0: none */
        CmdlineArgument argument;
        const char *metavar;            /* the value in --help: "N", "FILE", "short|pretty" */
        CmdlineCompletion completion;
        const char *exclusive;          /* options naming the same group here exclude each other */
        bool stops;                     /* --help, --version: the first such wins, nothing after is read */
        bool hidden;                    /* in neither --help nor the completions (cmdline_list() says so) */

        CmdlineParse parse;
        void *target;                   /* what parse sets: bool *, const char **, uint64_t *, ... */
        uint64_t min, max;              /* for cmdline_set_uint64() and cmdline_set_int64() */
        const char *expects;            /* "a number from 1 to 10000"; NULL: the words, "a or b" */

        CmdlineOptionPart parts[CMDLINE_PARTS_MAX];     /* the first part without help ends them */
};

typedef struct Cmdline {
        const char *program;
        const char *description;        /* the sentence under --help's usage line */
        const CmdlineVerb *verbs;
        size_t n_verbs;
        const CmdlineOption *options;
        size_t n_options;
} Cmdline;

/* The values of an option that may be given several times, in order, borrowed from argv. */
#define CMDLINE_STRINGS_MAX 64
typedef struct CmdlineStrings {
        const char *items[CMDLINE_STRINGS_MAX];
        size_t n;
} CmdlineStrings;

/* The generic parsers; target is what the comment says. */
int cmdline_set_true(const CmdlineOption *o, const char *value);        /* bool */
int cmdline_set_false(const CmdlineOption *o, const char *value);       /* bool */
int cmdline_set_string(const CmdlineOption *o, const char *value);      /* const char *, borrowed from argv */
/* As cmdline_set_string(), for a name sent to the daemon: UTF-8 only (JSON strings are), so a name with
 * other bytes is written as memstrackctl shows it (\xNN). */
int cmdline_set_text(const CmdlineOption *o, const char *value);
int cmdline_set_word(const CmdlineOption *o, const char *value);        /* const char *, one of the words */
/* CmdlineStrings, one more value (non-empty, UTF-8); -EINVAL past CMDLINE_STRINGS_MAX. */
int cmdline_add_text(const CmdlineOption *o, const char *value);
int cmdline_set_uint64(const CmdlineOption *o, const char *value);      /* uint64_t in [min, max] */
int cmdline_set_int64(const CmdlineOption *o, const char *value);       /* int64_t in [min, max] */
/* uint64_t bytes in [min, max]: a number with an optional binary unit, "4096", "512K", "10M", "2GiB". */
int cmdline_set_size(const CmdlineOption *o, const char *value);

/*
 * Reads argv with getopt_long (options before and after the verb), then checks that a verb is named,
 * its count of arguments, that it takes every option given and the exclusions. On success returns 0,
 * with optind at the verb in the permuted argv and *ret_verb set. An option that stops (--help) makes
 * it return 0 with *ret_stop set after only that option's parse, *ret_verb being the verb named if any
 * (else NULL). Otherwise *ret_stop is NULL. A usage error is printed to stderr and returned as a
 * positive exit status (2); -ENOMEM.
 */
int cmdline_parse(const Cmdline *c, int argc, char *argv[],
                const CmdlineOption **ret_stop, const CmdlineVerb **ret_verb);

/* --help: every verb and option, or with verb the verb's usage and the options it takes. */
int cmdline_help(const Cmdline *c, const CmdlineVerb *verb, FILE *f);

/*
 * The tables as one JSON document, for shell-completion/generate.py and the tests: {"program", "verbs":
 * [{"name", "synopsis", "summary", "minArgs", "maxArgs"}], "options": [{"name", "short", "argument",
 * "metavar", "completion", "exclusive", "stops", "hidden", "parts": [{"verbs", "help", "words"}]}]}.
 * First checks the tables (cmdline_verify()): a mistake in them fails here, so in the build. 0, -EINVAL
 * (said on stderr), -ENOMEM, -EIO.
 */
int cmdline_list(const Cmdline *c, FILE *f);

/*
 * Mistakes in the tables: a part naming no verb of the table, two options of one name or short name, a
 * value without metavar or the other way round, no part, a completion by words without words. 0, or
 * -EINVAL with *ret_problem a new string saying what (NULL on OOM).
 */
int cmdline_verify(const Cmdline *c, char **ret_problem);

const char *cmdline_argument_to_string(CmdlineArgument a) _pure_;
const char *cmdline_completion_to_string(CmdlineCompletion c) _pure_;
