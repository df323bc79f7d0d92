#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fills a shell completion template with memstrackctl's verbs and options.

Usage: generate.py bash|zsh OPTIONS_JSON TEMPLATE OUTPUT

OPTIONS_JSON is what `memstrackctl --list-options` prints: the verb and option tables of client/main.c.
The template keeps what is not in them (how words are scanned, positional arguments, asking the
daemon for pids); each @NAME@ line or word in it is replaced with what the tables say.
"""

import json
import sys

# Goes after "# " in the templates; a comment line of its own each.
GENERATED = ("Generated from memstrackctl's option table (client/main.c) by shell-completion/generate.py:\n"
             "# change the table or the template, not this file.")


def union(words_lists):
    """The words of every list, each once, in order."""
    seen = []
    for words in words_lists:
        for w in words:
            if w not in seen:
                seen.append(w)
    return seen


def visible(doc):
    return [o for o in doc["options"] if not o["hidden"]]


def is_global(o):
    return any(p["verbs"] is None for p in o["parts"])


def part_text(o, p):
    """A part as --help shows it with its verbs: "verb/verb: help"."""
    text = p["help"]
    if o["completion"] == "wordList":
        text = ",".join(p["words"]) + " " + text
    if p["verbs"] is not None:
        text = "/".join(p["verbs"]) + ": " + text
    return text


# ---- bash ----------------------------------------------------------------------------------------------

def bash_value_case(o):
    """The body of the case arm for o's value, or None when nothing is offered for it."""
    kind = o["completion"]
    if kind == "nothing":
        return "COMPREPLY=()"
    if kind == "file":
        return "_memstrackctl_files"
    if kind in ("pid", "module", "unit"):
        return "_memstrackctl_%ss" % kind
    helper = "_memstrackctl_words" if kind == "word" else "_memstrackctl_word_list"
    lists = [p["words"] for p in o["parts"]]
    if all(w == lists[0] for w in lists):
        return '%s "%s"' % (helper, " ".join(lists[0]))
    # Different values for different verbs; all of them before the verb is known.
    lines = ["case $verb in"]
    for p in o["parts"]:
        lines.append('    %s) %s "%s" ;;' % ("|".join(p["verbs"]), helper, " ".join(p["words"])))
    lines.append('    *) %s "%s" ;;' % (helper, " ".join(union(lists))))
    lines.append("esac")
    return "\n".join(lines)


def bash(doc, template):
    options = visible(doc)
    verb_options = []
    for v in doc["verbs"]:
        takes = ["--" + o["name"] for o in options
                 if not is_global(o) and any(v["name"] in p["verbs"] for p in o["parts"])]
        verb_options.append('        [%s]="%s"' % (v["name"], " ".join(takes)))
    with_value = []
    for o in options:
        if o["argument"] == "required":
            with_value.append("--" + o["name"])
            if o["short"]:
                with_value.append("-" + o["short"])

    # One arm per body, naming every option that has it, in table order.
    arms = {}
    for o in options:
        if o["argument"] == "none":
            continue
        body = bash_value_case(o)
        if o["argument"] == "optional":
            body = "if [[ -n $eq ]]; then\n    %s\n    return\nfi" % body.replace("\n", "\n    ")
        else:
            body += "\nreturn"
        names = ["--" + o["name"]] + (["-" + o["short"]] if o["short"] else [])
        arms.setdefault(body, []).extend(names)
    cases = []
    for body, names in arms.items():
        cases.append("        %s)" % "|".join(names))
        for line in body.split("\n"):
            cases.append("            " + line)
        cases[-1] += " ;;"

    return fill(template, {
        "GENERATED": GENERATED,
        "VERBS": " ".join(v["name"] for v in doc["verbs"]),
        "GLOBAL_OPTIONS": " ".join("--" + o["name"] for o in options if is_global(o)),
        "WITH_VALUE": " ".join(with_value),
        "VERB_OPTIONS": "\n".join(verb_options),
        "VALUE_CASES": "\n".join(cases),
    })


# ---- zsh -----------------------------------------------------------------------------------------------

def zsh_quote(s):
    """s inside '...'."""
    return s.replace("'", "'\\''")


def zsh_description(o):
    # _arguments ends the description at the first unescaped ']'.
    text = "; ".join(part_text(o, p) for p in o["parts"])
    return text.replace("[", "\\[").replace("]", "\\]")


def zsh_action(o):
    kind = o["completion"]
    words = union(p["words"] for p in o["parts"])
    if kind == "nothing":
        return ""
    if kind == "word":
        return "(%s)" % " ".join(words)
    if kind == "wordList":
        return "_values -s , %s %s" % (o["metavar"].lower(), " ".join(words))
    if kind == "file":
        return "_files"
    return "_memstrackctl_%ss" % kind


def zsh_spec(doc, o):
    long_name, short = "--" + o["name"], o["short"]
    if o["stops"]:
        exclusive = ["-", "*"]
    else:
        exclusive = ["--" + x["name"] for x in doc["options"]
                     if o["exclusive"] and x["exclusive"] == o["exclusive"] and x is not o]
        if short:
            exclusive += ["-" + short, long_name]
    exclusive_text = "(%s)" % " ".join(exclusive) if exclusive else ""

    if o["argument"] == "required":
        forms = ("-%s+" % short, long_name + "=")
        value = ":%s:%s" % (o["metavar"], zsh_action(o))
    elif o["argument"] == "optional":
        forms = ("-%s-" % short, long_name + "=-")
        value = "::%s:%s" % (o["metavar"], zsh_action(o))
    else:
        forms = ("-" + short if short else None, long_name)
        value = ""
    if value.endswith(":"):
        value = value[:-1]      # no action: zsh shows the message alone
    rest = zsh_quote("[%s]%s" % (zsh_description(o), value))
    if short:
        return "%s{%s,%s}'%s'" % ("'%s'" % exclusive_text if exclusive else "", forms[0], forms[1], rest)
    return "'%s%s%s'" % (exclusive_text, zsh_quote(forms[1]), rest)


def zsh(doc, template):
    verbs = ["                '%s:%s'" % (zsh_quote(v["name"]), zsh_quote(v["summary"]))
             for v in doc["verbs"]]
    specs = ["                %s \\" % zsh_spec(doc, o) for o in visible(doc)]
    return fill(template, {
        "GENERATED": GENERATED,
        "VERBS": "\n".join(verbs),
        "OPTIONS": "\n".join(specs),
    })


def fill(template, values):
    for name, value in values.items():
        marker = "@%s@" % name
        if marker not in template:
            sys.exit("generate.py: the template has no %s" % marker)
        template = template.replace(marker, value)
    return template


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("bash", "zsh"):
        sys.exit(__doc__.strip().split("\n\n")[1])
    shell, options_json, template_path, output = sys.argv[1:]
    with open(options_json) as f:
        doc = json.load(f)
    with open(template_path) as f:
        template = f.read()
    text = bash(doc, template) if shell == "bash" else zsh(doc, template)
    with open(output, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
