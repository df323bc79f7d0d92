#!/bin/bash
# SPDX-License-Identifier: MIT
# Shell completion for memstrackctl: the bash script completes verbs, per-verb options and their values
# when driven through COMP_WORDS/COMP_CWORD as bash does; both scripts know every verb and option
# `memstrackctl --help` lists (so they cannot drift from main.c); the zsh script parses (zsh -n) and
# compinit loads it.
#
# Usage: test-completion.sh MEMSTRACKCTL ROOT
# ROOT holds shell-completion/bash/memstrackctl and shell-completion/zsh/_memstrackctl: the build tree,
# where they are generated from memstrackctl's option table.
set -uo pipefail

CTL=${1:?memstrackctl}
SRC=${2:?root}
BASH_COMPLETION=$SRC/shell-completion/bash/memstrackctl
ZSH_COMPLETION=$SRC/shell-completion/zsh/_memstrackctl
failed=0

fail() {
    echo "FAIL: $*"
    failed=1
}

# No daemon for pids and modules: the completion must still answer (from /proc), quickly.
export MEMSTRACK_ADDRESS=/nonexistent/memstrack.sock
# The completion calls memstrackctl by name, as an installed one would be.
PATH=$(dirname "$CTL"):$PATH

# shellcheck source=/dev/null
. "$BASH_COMPLETION" || fail "sourcing $BASH_COMPLETION failed"
complete -p memstrackctl 2>/dev/null | grep -q -- "-F _memstrackctl memstrackctl" ||
    fail "complete -p memstrackctl: $(complete -p memstrackctl 2>&1)"

# complete WORD... : COMPREPLY for the last word, sorted, one line.
complete_words() {
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    _memstrackctl
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

expect() {
    local want=$1; shift
    local got
    got=$(complete_words "$@")
    if [ "$got" != "$want" ]; then
        fail "completing '$*' gave '$got', expected '$want'"
    else
        echo "ok '$*' -> '$want'"
    fi
}

expect "tasks" memstrackctl ta
expect "slab snapshot snapshots stacks status" memstrackctl s
expect "cache callsite" memstrackctl slab --by c
expect "cold delete-snapshot diff explain footprint history import leaks modules oom pages pprof record report reset slab snapshot snapshots stacks status tasks top units" memstrackctl --address /x ""
expect "delete-snapshot diff" memstrackctl d
expect "--uid" memstrackctl delete-snapshot --u
expect "" memstrackctl delete-snapshot --uid ""
expect "--address --all" memstrackctl snapshots --a
# Snapshot names come from the daemon; none answers here.
expect "" memstrackctl diff ""
# diff A.json B.json: files, the second always, the first once begun.
expect "$SRC/shell-completion/bash" memstrackctl diff "$SRC/shell-completion/ba"
expect "$SRC/shell-completion/bash" memstrackctl diff a.json "$SRC/shell-completion/ba"
expect "directory section symbol" memstrackctl footprint --by ""
expect "--depth" memstrackctl footprint --d
expect "--by" memstrackctl footprint --b
expect "--sort --stacks" memstrackctl units --s
expect "current peak" memstrackctl units --sort ""
expect "" memstrackctl units --stacks ""
expect "slab snapshot snapshots stacks status" memstrackctl --address /run/x.sock s
expect "slab snapshot snapshots stacks status" memstrackctl --json = short s
expect "--limit" memstrackctl tasks --li
expect "--address --all" memstrackctl tasks --a
expect "--batch" memstrackctl top --b
expect "--no-legend --no-pager" memstrackctl tasks --no
expect "" memstrackctl status --fo
expect "--fold-frame --format --from" memstrackctl report --f
expect "--offsets --output" memstrackctl report --o
expect "--keep-frames" memstrackctl record --kee
expect "--max-leaked --max-peak --min-share" memstrackctl record --m
expect "allocs current peak" memstrackctl tasks --sort ""
expect "current peak" memstrackctl modules --sort ""
expect "peak" memstrackctl tasks --sort = pe
expect "flamegraph folded" memstrackctl report --format f
expect "module_summary,module_top" memstrackctl report --format module_summary,module_t
expect "unit_summary unit_top" memstrackctl report --format unit_
expect "task_summary task_top task_top_json" memstrackctl report --format task_
expect "module_top,proc_slab_static" memstrackctl report --format module_top,pr
expect "task_summary,unit_top" memstrackctl report --format task_summary,unit_t
expect "--output" memstrackctl pprof --o
expect "--unit" memstrackctl pprof --u
expect "--from" memstrackctl pprof --fr
expect "page-owner" memstrackctl import ""
expect "--file --format" memstrackctl import --f
expect "--since" memstrackctl history --si
expect "10m 1h" memstrackctl history --since 1
expect "all peaks" memstrackctl reset ""
expect "" memstrackctl reset peaks ""
expect "" memstrackctl tasks --limit ""
# pids: from /proc when the daemon does not answer; this shell's pid is one.
got=$(complete_words memstrackctl stacks --task "$$")
[[ " $got " == *" $$ "* ]] || fail "completing --task $$ gave '$got'"

# Every verb and long option of --help is known to both scripts.
help=$("$CTL" --help)
verbs=$(sed -n '/^Verbs:/,/^$/p' <<<"$help" | awk 'NF && $1 != "Verbs:" { print $1 }' | sort -u)
options=$(grep -oE -- '--[a-z][a-z-]*' <<<"$help" | sort -u)
[ "$(wc -w <<<"$verbs")" -ge 9 ] || fail "found only these verbs in --help: $verbs"
[ "$(wc -w <<<"$options")" -ge 20 ] || fail "found only these options in --help: $options"
for v in $verbs; do
    grep -qw -- "$v" "$BASH_COMPLETION" || fail "the bash completion lacks the verb $v"
    grep -q -- "'$v:" "$ZSH_COMPLETION" || fail "the zsh completion lacks the verb $v"
done
for o in $options; do
    grep -qE -- "$o([^a-z-]|$)" "$BASH_COMPLETION" || fail "the bash completion lacks $o"
    grep -qE -- "$o([^a-z-]|$)" "$ZSH_COMPLETION" || fail "the zsh completion lacks $o"
done
echo "ok $(wc -w <<<"$verbs") verbs and $(wc -w <<<"$options") options in both scripts"
# Every report format --help names is offered by both.
formats=$(sed -n '/--format=LIST/,/(default/p' <<<"$help" | sed 's/.*report://; s/(default.*//' | tr ',' '\n' |
          awk 'NF { print $1 }' | sort -u)
[ "$(wc -w <<<"$formats")" -ge 9 ] || fail "found only these report formats in --help: $formats"
for f in $formats; do
    grep -qE -- "[ \"]$f([ \"]|$)" "$BASH_COMPLETION" || fail "the bash completion lacks the format $f"
    grep -qE -- " $f( |'|$)" "$ZSH_COMPLETION" || fail "the zsh completion lacks the format $f"
done
echo "ok $(wc -w <<<"$formats") report formats in both scripts"

if ! command -v zsh >/dev/null; then
    # scripts/deps installs zsh; without it the zsh script goes unchecked, so say so.
    [ $failed -eq 0 ] || exit $failed
    echo "SKIP: zsh is not installed, the zsh completion cannot be checked"
    exit 77
fi
zsh -n "$ZSH_COMPLETION" || fail "zsh -n $ZSH_COMPLETION"
# Loaded by compinit from an fpath directory, as installed: the function must be defined. -D: no dump
# file (compinit writes one by renaming a temporary file over it: never name /dev/null there).
zsh -f -c "fpath=($SRC/shell-completion/zsh \$fpath); autoload -Uz compinit; compinit -u -D
           [[ \${_comps[memstrackctl]} == _memstrackctl ]]" || fail "compinit does not pick up _memstrackctl"
echo "ok zsh"
exit $failed
