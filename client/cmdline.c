/* SPDX-License-Identifier: MIT */

/* A command line from a verb table and an option table (cmdline.h). */

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmdline.h"
#include "macro.h"
#include "parse-util.h"
#include "utf8.h"

/* getopt_long's value for options[i] (short options return their letter, all below this). */
#define CMDLINE_LONG_BASE 0x100

/* --help's layout: option or verb, then its text from this column, lines up to HELP_WIDTH. */
#define HELP_COLUMN 29
#define HELP_WIDTH 79

/* Usage errors exit with 2, as CTL_EXIT_USAGE; this file knows no ctl.h. */
#define CMDLINE_EXIT_USAGE 2

static const char *const argument_names[_CMDLINE_ARGUMENT_MAX] = {
        [CMDLINE_NO_ARGUMENT] = "none",
        [CMDLINE_REQUIRED_ARGUMENT] = "required",
        [CMDLINE_OPTIONAL_ARGUMENT] = "optional",
};

static const char *const completion_names[_CMDLINE_COMPLETION_MAX] = {
        [CMDLINE_COMPLETE_NOTHING] = "nothing",
        [CMDLINE_COMPLETE_WORD] = "word",
        [CMDLINE_COMPLETE_WORD_LIST] = "wordList",
        [CMDLINE_COMPLETE_FILE] = "file",
        [CMDLINE_COMPLETE_PID] = "pid",
        [CMDLINE_COMPLETE_MODULE] = "module",
        [CMDLINE_COMPLETE_UNIT] = "unit",
};

const char *cmdline_argument_to_string(CmdlineArgument a) {
        return a >= 0 && a < _CMDLINE_ARGUMENT_MAX ? argument_names[a] : NULL;
}

const char *cmdline_completion_to_string(CmdlineCompletion c) {
        return c >= 0 && c < _CMDLINE_COMPLETION_MAX ? completion_names[c] : NULL;
}

/* Parts end at the first without help text. */
static size_t option_n_parts(const CmdlineOption *o) {
        size_t n = 0;

        while (n < CMDLINE_PARTS_MAX && o->parts[n].help)
                n++;
        return n;
}

static const char *part_word(const CmdlineOptionPart *p, size_t i) {
        if (p->word_at)
                return p->word_at(i);
        return p->words ? p->words[i] : NULL;
}

static bool words_contain(const char *const *words, const char *s) {
        for (size_t i = 0; words && words[i]; i++)
                if (streq(words[i], s))
                        return true;
        return false;
}

static bool part_takes(const CmdlineOptionPart *p, const char *verb) {
        return !p->verbs || words_contain(p->verbs, verb);
}

static bool option_global(const CmdlineOption *o) {
        for (size_t i = 0; i < option_n_parts(o); i++)
                if (!o->parts[i].verbs)
                        return true;
        return false;
}

static const CmdlineOptionPart *option_part_for(const CmdlineOption *o, const char *verb) {
        for (size_t i = 0; i < option_n_parts(o); i++)
                if (part_takes(&o->parts[i], verb))
                        return &o->parts[i];
        return NULL;
}

/* Whether any part of o offers word, before part p_end and word w_end of it when given. */
static bool option_has_word_before(const CmdlineOption *o, const char *word, size_t p_end, size_t w_end) {
        for (size_t p = 0; p <= p_end && p < option_n_parts(o); p++)
                for (size_t w = 0; (p < p_end || w < w_end) && part_word(&o->parts[p], w); w++)
                        if (streq(part_word(&o->parts[p], w), word))
                                return true;
        return false;
}

int cmdline_set_true(const CmdlineOption *o, const char *value) {
        *(bool *) o->target = true;
        return 0;
}

int cmdline_set_false(const CmdlineOption *o, const char *value) {
        *(bool *) o->target = false;
        return 0;
}

int cmdline_set_string(const CmdlineOption *o, const char *value) {
        *(const char **) o->target = value;
        return 0;
}

int cmdline_set_text(const CmdlineOption *o, const char *value) {
        if (!value || !utf8_is_valid(value))
                return -EINVAL;
        *(const char **) o->target = value;
        return 0;
}

int cmdline_set_word(const CmdlineOption *o, const char *value) {
        if (!value || !option_has_word_before(o, value, CMDLINE_PARTS_MAX, 0))
                return -EINVAL;
        *(const char **) o->target = value;
        return 0;
}

int cmdline_add_text(const CmdlineOption *o, const char *value) {
        CmdlineStrings *s = o->target;

        if (!value || !value[0] || !utf8_is_valid(value) || s->n >= CMDLINE_STRINGS_MAX)
                return -EINVAL;
        s->items[s->n++] = value;
        return 0;
}

int cmdline_set_uint64(const CmdlineOption *o, const char *value) {
        return parse_uint64(value, o->min, o->max, o->target) < 0 ? -EINVAL : 0;
}

int cmdline_set_int64(const CmdlineOption *o, const char *value) {
        uint64_t v;

        if (o->max > INT64_MAX || parse_uint64(value, o->min, o->max, &v) < 0)
                return -EINVAL;
        *(int64_t *) o->target = (int64_t) v;
        return 0;
}

int cmdline_set_size(const CmdlineOption *o, const char *value) {
        uint64_t v;

        if (!value || parse_size(value, o->max, &v) < 0 || v < o->min)
                return -EINVAL;
        *(uint64_t *) o->target = v;
        return 0;
}

/* "a, b or c": what o takes when it does not say (its words, each once). New string, NULL on OOM. */
static char *option_expects(const CmdlineOption *o) {
        _cleanup_fclose_ FILE *f = NULL;
        char *s = NULL;
        size_t n = 0, count = 0, done = 0;
        const char *w;

        if (o->expects)
                return strdup(o->expects);
        for (size_t p = 0; p < option_n_parts(o); p++)
                for (size_t i = 0; (w = part_word(&o->parts[p], i)); i++)
                        count += !option_has_word_before(o, w, p, i);
        f = open_memstream(&s, &n);
        if (!f)
                return NULL;
        for (size_t p = 0; p < option_n_parts(o); p++)
                for (size_t i = 0; (w = part_word(&o->parts[p], i)); i++) {
                        if (option_has_word_before(o, w, p, i))
                                continue;
                        fprintf(f, "%s%s", done == 0 ? "" : done + 1 == count ? " or " : ", ", w);
                        done++;
                }
        if (fclose(TAKE_PTR(f)) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

static int usage_error(const Cmdline *c, const CmdlineVerb *verb, const char *format, ...) _printf_(3, 4);
static int usage_error(const Cmdline *c, const CmdlineVerb *verb, const char *format, ...) {
        va_list ap;

        fprintf(stderr, "%s: ", c->program);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        if (verb)
                fprintf(stderr, "\nTry '%s %s --help'.\n", c->program, verb->name);
        else
                fprintf(stderr, "\nTry '%s --help'.\n", c->program);
        return CMDLINE_EXIT_USAGE;
}

static const CmdlineVerb *find_verb(const Cmdline *c, const char *name) {
        for (size_t i = 0; i < c->n_verbs; i++)
                if (streq(c->verbs[i].name, name))
                        return &c->verbs[i];
        return NULL;
}

/* The option getopt_long returned k for, NULL for none. */
static const CmdlineOption *find_option(const Cmdline *c, int k) {
        if (k >= CMDLINE_LONG_BASE) {
                size_t i = (size_t) (k - CMDLINE_LONG_BASE);

                return i < c->n_options ? &c->options[i] : NULL;
        }
        for (size_t i = 0; i < c->n_options; i++)
                if (c->options[i].short_name != 0 && c->options[i].short_name == k)
                        return &c->options[i];
        return NULL;
}

/* "--a, --b and --c": the options of group, in table order. New string, NULL on OOM. */
static char *group_names(const Cmdline *c, const char *group) {
        _cleanup_fclose_ FILE *f = NULL;
        char *s = NULL;
        size_t n = 0, count = 0, done = 0;

        for (size_t i = 0; i < c->n_options; i++)
                count += c->options[i].exclusive && streq(c->options[i].exclusive, group);
        f = open_memstream(&s, &n);
        if (!f)
                return NULL;
        for (size_t i = 0; i < c->n_options; i++) {
                if (!c->options[i].exclusive || !streq(c->options[i].exclusive, group))
                        continue;
                fprintf(f, "%s--%s", done == 0 ? "" : done + 1 == count ? " and " : ", ", c->options[i].name);
                done++;
        }
        if (fclose(TAKE_PTR(f)) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

/* The checks once every option is read: verb, its arguments, its options, exclusions. */
static int check_verb(const Cmdline *c, int argc, char *argv[], const bool *seen,
                const CmdlineVerb **ret_verb) {
        const CmdlineVerb *verb;
        unsigned n_args;

        if (optind >= argc)
                return usage_error(c, NULL, "Missing verb.");
        verb = find_verb(c, argv[optind]);
        if (!verb)
                return usage_error(c, NULL, "Unknown verb '%s'.", argv[optind]);

        n_args = (unsigned) (argc - optind - 1);
        if (n_args < verb->min_args)
                return usage_error(c, verb, "Too few arguments for '%s'.", verb->name);
        if (n_args > verb->max_args)
                return usage_error(c, verb, "Too many arguments for '%s'.", verb->name);

        for (size_t i = 0; i < c->n_options; i++) {
                const CmdlineOption *o = &c->options[i];

                if (seen[i] && !option_part_for(o, verb->name))
                        return usage_error(c, verb, "'%s' does not take --%s.", verb->name, o->name);
        }

        /* Each group once, where its first option is. */
        for (size_t i = 0; i < c->n_options; i++) {
                const char *group = c->options[i].exclusive;
                unsigned given = 0;
                bool first = true;

                if (!group)
                        continue;
                for (size_t j = 0; j < c->n_options; j++)
                        if (c->options[j].exclusive && streq(c->options[j].exclusive, group)) {
                                first = first && j >= i;
                                given += seen[j];
                        }
                if (first && given > 1) {
                        _cleanup_free_ char *names = group_names(c, group);

                        if (!names)
                                return -ENOMEM;
                        return usage_error(c, NULL, "%s exclude each other.", names);
                }
        }

        *ret_verb = verb;
        return 0;
}

int cmdline_parse(const Cmdline *c, int argc, char *argv[],
                const CmdlineOption **ret_stop, const CmdlineVerb **ret_verb) {
        _cleanup_free_ struct option *longopts = NULL;
        _cleanup_free_ char *shortopts = NULL;
        _cleanup_free_ bool *seen = NULL;
        const CmdlineOption *stop = NULL;
        char *s;
        int k, r;

        longopts = calloc(c->n_options + 1, sizeof(struct option));
        shortopts = malloc(2 + 3 * c->n_options);
        seen = calloc(c->n_options + 1, sizeof(bool));
        if (!longopts || !shortopts || !seen)
                return -ENOMEM;

        /* ':' first: a missing value is ':', not '?', and getopt prints nothing itself. */
        s = shortopts;
        *s++ = ':';
        for (size_t i = 0; i < c->n_options; i++) {
                const CmdlineOption *o = &c->options[i];

                longopts[i] = (struct option) {
                        .name = o->name,
                        .has_arg = o->argument == CMDLINE_REQUIRED_ARGUMENT ? required_argument :
                                   o->argument == CMDLINE_OPTIONAL_ARGUMENT ? optional_argument : no_argument,
                        .val = CMDLINE_LONG_BASE + (int) i,
                };
                if (o->short_name == 0)
                        continue;
                *s++ = o->short_name;
                if (o->argument != CMDLINE_NO_ARGUMENT)
                        *s++ = ':';
                if (o->argument == CMDLINE_OPTIONAL_ARGUMENT)
                        *s++ = ':';
        }
        *s = '\0';

        opterr = 0;
        optind = 0;     /* from the start, also when called again */
        while ((k = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const CmdlineOption *o;

                /* After --help, getopt only moves the verb to optind: nothing else is read. */
                if (stop)
                        continue;
                if (k == ':')
                        return usage_error(c, NULL, "Option '%s' needs an argument.", argv[optind - 1]);
                o = find_option(c, k);
                if (!o)
                        return usage_error(c, NULL, "Unknown option '%s'.", argv[optind - 1]);

                r = o->parse ? o->parse(o, optarg) : 0;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* The value as memstrackctl shows names: bytes that are not text escaped. */
                        _cleanup_free_ char *expects = option_expects(o), *value = utf8_escape(optarg,
                                                                                            UTF8_ESCAPE_CONTROL);

                        if (!expects || !value)
                                return -ENOMEM;
                        return usage_error(c, NULL, "--%s takes %s, not '%s'.", o->name, expects, value);
                }
                seen[o - c->options] = true;
                if (o->stops)
                        stop = o;
        }

        if (stop) {
                *ret_stop = stop;
                *ret_verb = optind < argc ? find_verb(c, argv[optind]) : NULL;
                return 0;
        }
        r = check_verb(c, argc, argv, seen, ret_verb);
        if (r != 0)
                return r;
        *ret_stop = NULL;
        return 0;
}

/*
 * Prints text from column on (where the caller left the cursor), breaking lines at spaces, and after
 * commas where a list without spaces is longer than a line, so that no line passes HELP_WIDTH; the
 * lines after the first start at column too.
 */
static void print_wrapped(FILE *f, const char *text, size_t column) {
        size_t col = column;
        bool line_empty = true;
        const char *p = text;

        while (*p) {
                bool space_before = false;
                size_t n;

                while (*p == ' ') {
                        space_before = true;
                        p++;
                }
                if (!*p)
                        break;
                n = strcspn(p, " ,");
                if (p[n] == ',')
                        n++;
                if (!line_empty && col + space_before + n > HELP_WIDTH) {
                        fprintf(f, "\n%*s", (int) column, "");
                        col = column;
                        line_empty = true;
                }
                if (space_before && !line_empty) {
                        fputc(' ', f);
                        col++;
                }
                fwrite(p, 1, n, f);
                col += n;
                line_empty = false;
                p += n;
        }
        fputc('\n', f);
}

/* "  -d --delay=SECONDS", padded to HELP_COLUMN (or on a line of its own when longer). */
static void print_option_name(FILE *f, const CmdlineOption *o) {
        int n;

        if (o->short_name != 0)
                n = fprintf(f, "  -%c --%s", o->short_name, o->name);
        else
                n = fprintf(f, "     --%s", o->name);
        if (o->argument == CMDLINE_REQUIRED_ARGUMENT)
                n += fprintf(f, "=%s", o->metavar);
        else if (o->argument == CMDLINE_OPTIONAL_ARGUMENT)
                n += fprintf(f, "[=%s]", o->metavar);
        if (n < 0)
                return;
        if ((size_t) n < HELP_COLUMN)
                fprintf(f, "%*s", (int) (HELP_COLUMN - (size_t) n), "");
        else
                fprintf(f, "\n%*s", HELP_COLUMN, "");
}

/*
 * A part's text: "verb/verb: " when with_verbs (and it names verbs), the words of a list option
 * ("a,b,c "), and the help, capitalized when it stands alone. New string, NULL on OOM.
 */
static char *part_text(const CmdlineOption *o, const CmdlineOptionPart *p, bool with_verbs) {
        _cleanup_fclose_ FILE *f = NULL;
        char *s = NULL;
        size_t n = 0;
        bool alone = true;
        const char *w;

        f = open_memstream(&s, &n);
        if (!f)
                return NULL;
        if (with_verbs && p->verbs) {
                for (size_t i = 0; p->verbs[i]; i++)
                        fprintf(f, "%s%s", i > 0 ? "/" : "", p->verbs[i]);
                fputs(": ", f);
                alone = false;
        }
        if (o->completion == CMDLINE_COMPLETE_WORD_LIST) {
                for (size_t i = 0; (w = part_word(p, i)); i++)
                        fprintf(f, "%s%s", i > 0 ? "," : "", w);
                fputc(' ', f);
                alone = false;
        }
        if (alone && p->verbs && islower((unsigned char) p->help[0]))
                fprintf(f, "%c%s", toupper((unsigned char) p->help[0]), p->help + 1);
        else
                fputs(p->help, f);
        if (fclose(TAKE_PTR(f)) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

/* An option in --help: its name, then each part (only the verb's, when verb is given). */
static int print_option(FILE *f, const CmdlineOption *o, const char *verb) {
        bool first = true;

        for (size_t i = 0; i < option_n_parts(o); i++) {
                const CmdlineOptionPart *p = &o->parts[i];
                _cleanup_free_ char *text = NULL;

                if (verb && p != option_part_for(o, verb))
                        continue;
                text = part_text(o, p, !verb);
                if (!text)
                        return -ENOMEM;
                if (first)
                        print_option_name(f, o);
                else
                        fprintf(f, "%*s", HELP_COLUMN, "");
                print_wrapped(f, text, HELP_COLUMN);
                first = false;
        }
        return 0;
}

static void print_verb_name(FILE *f, const CmdlineVerb *v) {
        int n = fprintf(f, "  %s%s%s", v->name, v->synopsis ? " " : "", v->synopsis ?: "");

        if (n >= 0 && (size_t) n < HELP_COLUMN)
                fprintf(f, "%*s", (int) (HELP_COLUMN - (size_t) n), "");
        else
                fputc(' ', f);
}

int cmdline_help(const Cmdline *c, const CmdlineVerb *verb, FILE *f) {
        bool any = false;
        int r;

        if (!verb) {
                fprintf(f, "Usage: %s [OPTIONS] VERB [ARGS]\n\n%s\n\nVerbs:\n", c->program, c->description);
                /* One line each, never wrapped: what follows the verb's name is its summary. */
                for (size_t i = 0; i < c->n_verbs; i++) {
                        print_verb_name(f, &c->verbs[i]);
                        fprintf(f, "%s\n", c->verbs[i].summary);
                }
                fputs("\nOptions:\n", f);
                for (size_t i = 0; i < c->n_options; i++) {
                        if (c->options[i].hidden)
                                continue;
                        r = print_option(f, &c->options[i], NULL);
                        if (r < 0)
                                return r;
                }
                fprintf(f, "\nSee %s(1).\n", c->program);
                return 0;
        }

        fprintf(f, "Usage: %s [OPTIONS] %s%s%s\n\n%s\n", c->program, verb->name, verb->synopsis ? " " : "",
                verb->synopsis ?: "", verb->summary);
        for (size_t i = 0; i < c->n_options; i++) {
                const CmdlineOption *o = &c->options[i];

                if (o->hidden || option_global(o) || !option_part_for(o, verb->name))
                        continue;
                if (!any)
                        fprintf(f, "\nOptions of %s:\n", verb->name);
                any = true;
                r = print_option(f, o, verb->name);
                if (r < 0)
                        return r;
        }
        fputs("\nOptions of every verb:\n", f);
        for (size_t i = 0; i < c->n_options; i++) {
                const CmdlineOption *o = &c->options[i];

                if (o->hidden || !option_global(o))
                        continue;
                r = print_option(f, o, verb->name);
                if (r < 0)
                        return r;
        }
        fprintf(f, "\nSee %s(1).\n", c->program);
        return 0;
}

static int verify_error(char **ret_problem, const char *format, ...) _printf_(2, 3);
static int verify_error(char **ret_problem, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        if (vasprintf(ret_problem, format, ap) < 0)
                *ret_problem = NULL;
        va_end(ap);
        return -EINVAL;
}

static int verify_option(const Cmdline *c, const CmdlineOption *o, char **ret_problem) {
        size_t n_parts = option_n_parts(o);
        unsigned group_size = 0;

        if (!o->name || !cmdline_argument_to_string(o->argument) ||
            !cmdline_completion_to_string(o->completion))
                return verify_error(ret_problem, "option %zu: no name, or a bad argument or completion",
                                    (size_t) (o - c->options));
        for (const CmdlineOption *other = c->options; other < o; other++) {
                if (streq(other->name, o->name))
                        return verify_error(ret_problem, "--%s is there twice", o->name);
                if (o->short_name != 0 && other->short_name == o->short_name)
                        return verify_error(ret_problem, "-%c is there twice", o->short_name);
        }
        if ((o->argument == CMDLINE_NO_ARGUMENT) != !o->metavar)
                return verify_error(ret_problem, "--%s: a metavar exactly when it takes a value", o->name);
        if (o->argument == CMDLINE_NO_ARGUMENT && o->completion != CMDLINE_COMPLETE_NOTHING)
                return verify_error(ret_problem, "--%s: a completion without a value", o->name);
        if (n_parts == 0)
                return verify_error(ret_problem, "--%s: no part (no help)", o->name);

        for (size_t p = 0; p < n_parts; p++) {
                const CmdlineOptionPart *part = &o->parts[p];
                bool wants_words = o->completion == CMDLINE_COMPLETE_WORD ||
                                   o->completion == CMDLINE_COMPLETE_WORD_LIST ||
                                   o->parse == cmdline_set_word;

                if (wants_words && !part_word(part, 0))
                        return verify_error(ret_problem, "--%s: part %zu has no words", o->name, p);
                if (!part->verbs && n_parts > 1)
                        return verify_error(ret_problem, "--%s: a part for every verb beside others",
                                            o->name);
                for (size_t v = 0; part->verbs && part->verbs[v]; v++) {
                        const char *verb = part->verbs[v];

                        if (!find_verb(c, verb))
                                return verify_error(ret_problem, "--%s names no verb '%s'", o->name, verb);
                        if (option_part_for(o, verb) != part)
                                return verify_error(ret_problem, "--%s names '%s' in two parts", o->name,
                                                    verb);
                }
        }

        for (size_t j = 0; o->exclusive && j < c->n_options; j++)
                group_size += c->options[j].exclusive && streq(c->options[j].exclusive, o->exclusive);
        if (o->exclusive && group_size < 2)
                return verify_error(ret_problem, "--%s is alone in its group '%s'", o->name, o->exclusive);
        return 0;
}

int cmdline_verify(const Cmdline *c, char **ret_problem) {
        int r;

        for (size_t i = 0; i < c->n_verbs; i++) {
                const CmdlineVerb *v = &c->verbs[i];

                if (!v->name || !v->summary || !v->run || v->min_args > v->max_args)
                        return verify_error(ret_problem, "verb %zu: no name, summary or handler", i);
                if (find_verb(c, v->name) != v)
                        return verify_error(ret_problem, "verb '%s' is there twice", v->name);
        }
        for (size_t i = 0; i < c->n_options; i++) {
                r = verify_option(c, &c->options[i], ret_problem);
                if (r < 0)
                        return r;
        }
        return 0;
}

static json_t *part_json(const CmdlineOptionPart *p) {
        json_auto_t *verbs = p->verbs ? json_array() : json_null(), *words = json_array();
        const char *w;

        if (!verbs || !words)
                return NULL;
        for (size_t i = 0; p->verbs && p->verbs[i]; i++)
                if (json_array_append_new(verbs, json_string(p->verbs[i])) < 0)
                        return NULL;
        for (size_t i = 0; (w = part_word(p, i)); i++)
                if (json_array_append_new(words, json_string(w)) < 0)
                        return NULL;
        return json_pack("{s:O,s:s,s:O}", "verbs", verbs, "help", p->help, "words", words);
}

static json_t *option_json(const CmdlineOption *o) {
        json_auto_t *parts = json_array();
        char short_name[2] = { o->short_name, '\0' };

        if (!parts)
                return NULL;
        for (size_t i = 0; i < option_n_parts(o); i++)
                if (json_array_append_new(parts, part_json(&o->parts[i])) < 0)
                        return NULL;
        return json_pack("{s:s,s:s?,s:s,s:s?,s:s,s:s?,s:b,s:b,s:O}",
                      "name", o->name,
                      "short", o->short_name ? short_name : NULL,
                      "argument", cmdline_argument_to_string(o->argument),
                      "metavar", o->metavar,
                      "completion", cmdline_completion_to_string(o->completion),
                      "exclusive", o->exclusive,
                      "stops", o->stops,
                      "hidden", o->hidden,
                      "parts", parts);
}

int cmdline_list(const Cmdline *c, FILE *f) {
        json_auto_t *verbs = json_array(), *options = json_array(), *doc = NULL;
        _cleanup_free_ char *problem = NULL;
        int r;

        r = cmdline_verify(c, &problem);
        if (r < 0) {
                fprintf(stderr, "%s: the command line tables are wrong: %s.\n", c->program,
                        problem ?: "out of memory");
                return r;
        }
        if (!verbs || !options)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_verbs; i++) {
                const CmdlineVerb *v = &c->verbs[i];

                if (json_array_append_new(verbs, json_pack("{s:s,s:s?,s:s,s:i,s:i}", "name", v->name,
                                                           "synopsis", v->synopsis, "summary", v->summary,
                                                           "minArgs", (int) v->min_args,
                                                           "maxArgs", (int) v->max_args)) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_options; i++)
                if (json_array_append_new(options, option_json(&c->options[i])) < 0)
                        return -ENOMEM;
        doc = json_pack("{s:s,s:O,s:O}", "program", c->program, "verbs", verbs, "options", options);
        if (!doc)
                return -ENOMEM;
        if (json_dumpf(doc, f, JSON_INDENT(2)) < 0 || fputc('\n', f) == EOF || fflush(f) != 0)
                return -EIO;
        return 0;
}
