#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstrackctl's command line against its option table, every option with every verb.

The table is what `memstrackctl --list-options` prints (client/main.c). For each (verb, option) pair it
does not allow, memstrackctl must exit 2 saying "'VERB' does not take --OPTION." before doing anything;
that is run as a user would type it, with no daemon at the address, so an option the parser lets through
ends in another exit status or message. For each pair it allows, `--parse-only` must accept it. Then
the exclusions, each verb's --help against the table, the completions generated from it and the man
page's options.

Usage: test-ctl-options.py MEMSTRACKCTL [--table-from OTHER] [--man MANPAGE] [--completions DIR]
  --table-from  take the table from OTHER: to check a memstrackctl without one (without --parse-only,
                the allowed pairs go unchecked)
  --man         docs/memstrackctl.1, whose OPTIONS section must name every option and no other
  --completions the directory with bash/memstrackctl, whose per-verb options must be the table's
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def run(ctl, args, env):
    p = subprocess.run([ctl] + args, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def takes(option, verb):
    return any(p["verbs"] is None or verb in p["verbs"] for p in option["parts"])


def value_for(option, verb):
    """A value the option's parser accepts: the verb's first word, else "1" (a number, pid, duration,
    seconds, percentage; any string)."""
    for p in option["parts"]:
        if p["words"] and (p["verbs"] is None or verb in p["verbs"]):
            return p["words"][0]
    for p in option["parts"]:
        if p["words"]:
            return p["words"][0]
    return "1"


def option_args(option, verb, short=False):
    if option["argument"] == "none":
        return ["-" + option["short"]] if short else ["--" + option["name"]]
    if option["argument"] == "optional":
        return ["--%s=%s" % (option["name"], value_for(option, verb))]
    if short:
        return ["-" + option["short"], value_for(option, verb)]
    return ["--%s=%s" % (option["name"], value_for(option, verb))]


def verb_args(verb):
    return ["x"] * verb["minArgs"]


def check_pairs(ctl, doc, env, parse_only):
    """Every option that does not stop the command line, with every verb, long and short."""
    checked_allowed = checked_refused = 0
    failed_before = len(failures)
    for verb in doc["verbs"]:
        name = verb["name"]
        for o in doc["options"]:
            if o["stops"] or o["name"] == "parse-only":
                continue
            for short in ([False, True] if o["short"] else [False]):
                args = option_args(o, name, short)
                if takes(o, name):
                    if not parse_only:
                        continue
                    r, out, err = run(ctl, ["--parse-only", name] + verb_args(verb) + args, env)
                    checked_allowed += 1
                    if r != 0 or out or err:
                        fail("%s %s: refused (exit %d): %s" % (name, " ".join(args), r, err.strip()))
                    continue
                r, out, err = run(ctl, [name] + verb_args(verb) + args, env)
                checked_refused += 1
                want = "memstrackctl: '%s' does not take --%s." % (name, o["name"])
                lines = err.split("\n")
                if r != 2 or lines[0] != want or not lines[1].startswith("Try 'memstrackctl") or out:
                    fail("%s %s: exit %d, said %r; expected exit 2 and %r"
                         % (name, " ".join(args), r, err, want))
    print("%s %d refused and %d accepted (verb, option) pairs, %d verbs, %d options"
          % ("ok" if len(failures) == failed_before else "checked", checked_refused, checked_allowed,
             len(doc["verbs"]), len(doc["options"])))


def check_exclusions(ctl, doc, env):
    failed_before = len(failures)
    groups = {}
    for o in doc["options"]:
        if o["exclusive"]:
            groups.setdefault(o["exclusive"], []).append(o)
    for group, members in groups.items():
        names = ["--" + o["name"] for o in members]
        want = "memstrackctl: %s exclude each other." % (", ".join(names[:-1]) + " and " + names[-1])
        tried = 0
        for verb in doc["verbs"]:
            given = [o for o in members if takes(o, verb["name"])]
            if len(given) < 2:
                continue
            args = option_args(given[0], verb["name"]) + option_args(given[1], verb["name"])
            r, _, err = run(ctl, ["--parse-only", verb["name"]] + verb_args(verb) + args, env)
            tried += 1
            if r != 2 or err.split("\n")[0] != want:
                fail("%s %s: exit %d, said %r; expected exit 2 and %r"
                     % (verb["name"], " ".join(args), r, err, want))
        if tried == 0:
            fail("no verb takes two options of the group %s: it excludes nothing" % group)
    if len(failures) == failed_before:
        print("ok %d groups of options that exclude each other" % len(groups))


def help_options(text):
    """The long options a --help text lists (lines starting with "  -x --name" or "     --name")."""
    return re.findall(r"^(?:  -. |     )--([a-z][a-z-]*)", text, re.M)


def check_help(ctl, doc, env):
    failed_before = len(failures)
    visible = [o for o in doc["options"] if not o["hidden"]]
    r, out, _ = run(ctl, ["--help"], env)
    if r != 0:
        fail("--help exited %d" % r)
    if help_options(out) != [o["name"] for o in visible]:
        fail("--help lists %s, the table %s" % (help_options(out), [o["name"] for o in visible]))
    listed_verbs = re.findall(r"^  ([a-z-]+)", out.split("\nVerbs:\n")[1].split("\n\n")[0], re.M)
    if listed_verbs != [v["name"] for v in doc["verbs"]]:
        fail("--help lists the verbs %s" % listed_verbs)
    for verb in doc["verbs"]:
        name = verb["name"]
        r, out, err = run(ctl, [name, "--help"], env)
        want = [o["name"] for o in visible if takes(o, name)]
        got = help_options(out)
        usage = "Usage: memstrackctl [OPTIONS] %s" % name
        if r != 0 or not out.startswith(usage) or sorted(got) != sorted(want):
            fail("%s --help (exit %d) lists %s, the table %s" % (name, r, got, want))
    if len(failures) == failed_before:
        print("ok --help and the --help of %d verbs" % len(doc["verbs"]))


def check_completions(doc, directory):
    failed_before = len(failures)
    with open(os.path.join(directory, "bash", "memstrackctl")) as f:
        script = f.read()
    got = dict(re.findall(r'^ *\[([a-z-]+)\]="([^"]*)"$', script, re.M))
    for verb in doc["verbs"]:
        name = verb["name"]
        want = {"--" + o["name"] for o in doc["options"]
                if not o["hidden"] and all(p["verbs"] is not None for p in o["parts"]) and takes(o, name)}
        if set(got.get(name, "").split()) != want:
            fail("the bash completion offers %s for %s, the table %s" % (got.get(name), name, sorted(want)))
    if len(failures) == failed_before:
        print("ok the bash completion's options of %d verbs" % len(doc["verbs"]))


def check_man(doc, path):
    failed_before = len(failures)
    with open(path) as f:
        man = f.read()
    section = man.split("\n.SH OPTIONS\n")[1].split("\n.SH ")[0]
    # The options the section documents: those in the tag line after each .TP.
    documented = set()
    for tag in re.findall(r"^\.TP\n(.*)$", section, re.M):
        documented.update(re.findall(r"\\-\\-([a-z][a-z\\-]*)", tag))
    documented = {d.replace("\\-", "-") for d in documented}
    table = {o["name"] for o in doc["options"] if not o["hidden"]}
    if documented != table:
        fail("memstrackctl(1) OPTIONS documents %s more and %s less than the table"
             % (sorted(documented - table), sorted(table - documented)))
    verbs_section = man.split("\n.SH VERBS\n")[1].split("\n.SH ")[0]
    for verb in doc["verbs"]:
        # roff writes a hyphen in a name as \-.
        name = re.escape(verb["name"].replace("-", "\\-"))
        if not re.search(r"^\.(?:TP\n\.)?B[IR]? \"?%s\b" % name, verbs_section, re.M):
            fail("memstrackctl(1) VERBS has no %s" % verb["name"])
    if len(failures) == failed_before:
        print("ok memstrackctl(1) documents the %d options and %d verbs" % (len(table), len(doc["verbs"])))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("memstrackctl")
    parser.add_argument("--table-from")
    parser.add_argument("--man")
    parser.add_argument("--completions")
    a = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="test-ctl-options.") as work:
        # Nothing at the address and no memstrackd to run: a verb that runs by mistake fails at once.
        env = dict(os.environ, MEMSTRACK_ADDRESS="unix:" + os.path.join(work, "none.sock"),
                   MEMSTRACKD=os.path.join(work, "no-memstrackd"), COLUMNS="80")
        r, out, err = run(a.table_from or a.memstrackctl, ["--list-options"], env)
        if r != 0:
            print("FAIL: --list-options exited %d: %s" % (r, err))
            return 1
        doc = json.loads(out)
        if len(doc["verbs"]) < 2 or len(doc["options"]) < 2:
            print("FAIL: the table has %d verbs and %d options" % (len(doc["verbs"]), len(doc["options"])))
            return 1

        parse_only = run(a.memstrackctl, ["--parse-only", doc["verbs"][0]["name"]] +
                         verb_args(doc["verbs"][0]), env)[0] == 0
        if not parse_only:
            if not a.table_from:
                print("FAIL: memstrackctl has no --parse-only")
                return 1
            print("(no --parse-only: the allowed pairs go unchecked)")
        check_pairs(a.memstrackctl, doc, env, parse_only)
        if parse_only:
            check_exclusions(a.memstrackctl, doc, env)
            check_help(a.memstrackctl, doc, env)
        if a.completions:
            check_completions(doc, a.completions)
        if a.man:
            check_man(doc, a.man)

    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
