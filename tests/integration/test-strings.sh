#!/bin/bash
# SPDX-License-Identifier: MIT
# Names that are not text: two loadgens rename themselves while memstrackd traces, one to bytes that are
# not UTF-8 ("bad\xff\xfe"), one to control characters and a name the kernel cuts inside a character (comm
# keeps 15 bytes). Their command lines hold the same bytes. Every verb of memstrackctl must still work and
# show the names encoded as docs/protocol.md ("Strings from the kernel") says, every text output must be
# safe for a terminal, and memstrackd's replies must be valid JSON (checked on the raw socket).
# Needs root, perf events and the kmem tracepoints; skips (77) otherwise.
#
# Usage: test-strings.sh MEMSTRACKD MEMSTRACKCTL LOADGEN TESTS_DIR
set -uo pipefail

MEMSTRACKD=${1:?memstrackd}
MEMSTRACKCTL=${2:?memstrackctl}
LOADGEN=${3:?loadgen}
TESTS=${4:?tests dir}
. "$TESTS/integration/memstrackctl-lib.sh"

lib_init test-strings
server=memstrack-strings-$$
skipped=()      # cases that cannot run here, with the reason
cleanup() {
    command -v tmux >/dev/null && tmux -L "$server" kill-server 2>/dev/null
    lib_cleanup
}
trap cleanup EXIT

# The names as given to prctl(PR_SET_NAME), and as memstrackctl prints them. In JSON the same text
# (expected values in check.py): invalid bytes are \xNN there too, control characters stay characters.
BAD=$'bad\xff\xfe'
BAD_TEXT='bad\xff\xfe'
# 17 bytes: ESC [ 2 J, CR, the C1 control U+009B, then two euro signs; the kernel keeps 15 bytes, so the
# second euro sign is cut after its second byte.
CUT=$'esc\e[2J\r\xc2\x9b\xe2\x82\xac\xe2\x82\xac'
CUT_TEXT='esc\x1b[2J\x0d\xc2\x9b€\xe2\x82'
CUT_ARG_TEXT='esc\x1b[2J\x0d\xc2\x9b€€'
B_PAGES=4096

cat >"$work/check.py" <<'PY'
"""Varlink calls on the raw socket and checks of what memstrackd and memstrackctl print."""
import json, os, socket, sys
import xml.etree.ElementTree as ET

BAD = "bad\\xff\\xfe"                       # the JSON string's value for comm b"bad\xff\xfe"
CUT = "esc\x1b[2J\r\x9b\u20ac\\xe2\\x82"     # the kernel's 15 bytes: controls kept, the cut bytes escaped
CUT_ARG = "esc\x1b[2J\r\x9b\u20ac\u20ac"     # the whole argument in the command line: valid UTF-8


def call(sock, method, parameters=None, more=False):
    """One call; the first reply must be UTF-8, JSON, and no error."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(int(os.environ.get("WAIT", "120")))
        s.connect(sock)
        msg = {"method": method, "parameters": parameters or {}}
        if more:
            msg["more"] = True
        s.sendall(json.dumps(msg).encode() + b"\0")
        data = b""
        while b"\0" not in data:
            chunk = s.recv(1 << 16)
            assert chunk, f"{method}: memstrackd closed the connection"
            data += chunk
    raw = data.split(b"\0")[0]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError(f"{method}: the reply is not UTF-8: {e}: {raw[:300]!r}")
    reply = json.loads(text)
    assert "error" not in reply, f"{method} {parameters}: {reply}"
    return reply["parameters"]


def pages(sock, pid):
    tasks = call(sock, "io.memstrack.Tasks", {"pid": pid})["tasks"]
    print(tasks[0]["currentPages"] if tasks else 0)


def by_pid(tasks, pid):
    t = [x for x in tasks if x["pid"] == pid]
    assert t, f"pid {pid} is not listed"
    return t[0]


def raw(sock, a, a_parent, b, b_parent):
    """Every method that carries names, on the socket: valid JSON and the names encoded."""
    a, a_parent, b, b_parent = int(a), int(a_parent), int(b), int(b_parent)

    tasks = call(sock, "io.memstrack.Tasks", {"limit": 10000})["tasks"]
    assert by_pid(tasks, a)["comm"] == BAD, by_pid(tasks, a)
    assert by_pid(tasks, a_parent)["cmdline"].endswith("--comm " + BAD), by_pid(tasks, a_parent)
    assert by_pid(tasks, b)["comm"] == CUT, by_pid(tasks, b)
    assert by_pid(tasks, b_parent)["cmdline"].endswith("--comm " + CUT_ARG), by_pid(tasks, b_parent)

    # A client finds a task by the name it was shown.
    named = call(sock, "io.memstrack.Tasks", {"comm": BAD, "limit": 10000, "includeExited": True})["tasks"]
    assert {a, a_parent} <= {t["pid"] for t in named}, named
    assert all(t["comm"] == BAD for t in named), named

    summary = call(sock, "io.memstrack.Summary", {"limit": 10000})
    assert by_pid(summary["topTasks"], a)["comm"] == BAD

    for pid, comm in ((a, BAD), (b, CUT)):
        root = call(sock, "io.memstrack.StackTree", {"pid": pid, "maxDepth": 4})["root"]
        assert root["frame"] == f"[pid {pid} {comm}]", root["frame"]
    call(sock, "io.memstrack.StackTree", {"maxDepth": 255, "maxChildren": 10000, "minPages": 0})
    call(sock, "io.memstrack.Modules", {"limit": 10000})

    diff = call(sock, "io.memstrack.Diff", {"name": "before", "limit": 10000})
    assert by_pid(diff["tasks"], a)["comm"] == BAD
    assert by_pid(diff["tasks"], b)["comm"] == CUT

    top = call(sock, "io.memstrack.Top", {"limit": 10000}, more=True)
    assert by_pid(top["tasks"], a)["comm"] == BAD
    assert by_pid(top["tasks"], b)["comm"] == CUT


def safe(path):
    """Text output: UTF-8 without control characters but newlines (none of ESC, CR, BS, DEL, C1)."""
    data = open(path, "rb").read()
    text = data.decode("utf-8")
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    assert not bad, f"{path}: raw control characters {bad!r} reach the terminal"


def ctl_json(path, a, b):
    """memstrackctl --json output of tasks, diff or top: the strings as received."""
    d = json.load(open(path))
    tasks = d["tasks"]
    assert by_pid(tasks, int(a))["comm"] == BAD, by_pid(tasks, int(a))
    assert by_pid(tasks, int(b))["comm"] == CUT, by_pid(tasks, int(b))


def report_json(path, a):
    """report --json: the task list carries the names as received."""
    d = json.load(open(path))
    text = json.dumps(d)
    assert json.dumps(BAD) in text, "report --json lacks the encoded name"


def svg(path, needle):
    """A flame graph is well-formed XML and names the task as memstrackctl prints it."""
    root = ET.parse(path).getroot()
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(needle in t for t in titles), f"no frame title contains {needle!r}: {titles[:5]}"


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
PY

check() {
    python3 "$work/check.py" "$@"
}

# Waits until memstrackd charges pid $1 at least $2 pages, or a Tasks call fails (the checks then say how).
counted_or_broken() {
    local n
    n=$(check pages "$work/sock" "$1" 2>/dev/null) || return 0
    [ "$n" -ge "$2" ]
}

# Runs memstrackctl with the arguments into $work/out.txt (wide, never cut), which must be safe text.
ctl_text() {
    COLUMNS=1000 ctl "$@" >"$work/out.txt" 2>"$work/err" || fail "memstrackctl $* failed: $(cat "$work/err")"
    check safe "$work/out.txt" || fail "memstrackctl $* printed control characters or bytes that are not UTF-8"
}

# Fails unless $work/out.txt contains the fixed string $1.
has() {
    grep -qF -- "$1" "$work/out.txt" || fail "memstrackctl output lacks '$1' ($2): $(head -c 600 "$work/out.txt")"
}

start_tasks() {
    ctl snapshot before >/dev/null || fail "snapshot before failed"
    start_loadgen --comm "$BAD"
    lg alloc allocated
    "$LOADGEN" --pages "$B_PAGES" --child --hold-until-signal --comm "$CUT" >"$work/b.out" &
    b_parent=$!
    pids+=("$b_parent")
    wait_for "the second loadgen's pid" grep -q '^pid=' "$work/b.out"
    b_pid=$(sed -n 's/^pid=//p' "$work/b.out")
    pids+=("$b_pid")
    wait_for "memstrackd to charge $PAGES pages to $lg_pid" counted_or_broken "$lg_pid" "$PAGES"
    wait_for "memstrackd to charge $B_PAGES pages to $b_pid" counted_or_broken "$b_pid" "$B_PAGES"
    echo "ok renamed loadgens $lg_pid and $b_pid hold their pages"
}

test_raw_varlink() {
    check raw "$work/sock" "$lg_pid" "$lg_parent" "$b_pid" "$b_parent" ||
        fail "memstrackd's replies do not carry the names as valid, encoded JSON"
    echo "ok raw varlink: Tasks, Summary, StackTree, Modules, Diff, Top are valid JSON with encoded names"
}

test_text_verbs() {
    ctl_text status
    ctl_text tasks --limit 10000
    has "$BAD_TEXT" "tasks: the comm"
    has "$CUT_TEXT" "tasks: the cut comm"
    has "--comm $BAD_TEXT" "tasks: the command line"
    has "--comm $CUT_ARG_TEXT" "tasks: the other command line"
    # (awk -v would read the backslashes as escapes: the name goes through the environment.)
    COMM=$BAD_TEXT awk -v pid="$lg_pid" '$1 == pid && $2 == ENVIRON["COMM"] { found = 1 } END { exit !found }' \
        "$work/out.txt" || fail "tasks has no row '$lg_pid $BAD_TEXT'"
    ctl_text tasks --all --sort peak
    ctl_text modules --limit 10000
    ctl_text units --all --stacks 3 --limit 10000
    ctl_text stacks --task "$lg_pid" --depth 3
    has "[pid $lg_pid $BAD_TEXT]" "stacks --task: the root"
    ctl_text stacks --task "$b_pid" --depth 3
    has "[pid $b_pid $CUT_TEXT]" "stacks --task: the other root"
    ctl_text stacks --depth 255 --limit 10000
    ctl_text diff before
    has "$BAD_TEXT" "diff: the comm"
    has "$CUT_TEXT" "diff: the cut comm"
    ctl_text top --batch -n 1 --limit 10000
    has "$BAD_TEXT" "top --batch: the comm"
    has "$CUT_TEXT" "top --batch: the cut comm"
    echo "ok status, tasks, modules, units, stacks, diff, top --batch print the encoded names, no control characters"
}

test_json_verbs() {
    ctl --json=short tasks --limit 10000 >"$work/tasks.json" || fail "--json tasks failed"
    check ctl_json "$work/tasks.json" "$lg_pid" "$b_pid" || fail "--json tasks lacks the names as received"
    # The JSON text itself: the comm is the string bad\xff\xfe, its backslashes escaped.
    grep -qF '"comm":"bad\\xff\\xfe"' "$work/tasks.json" || fail "--json tasks does not say \"bad\\\\xff\\\\xfe\""
    ctl --json=short diff before >"$work/diff.json" || fail "--json diff failed"
    check ctl_json "$work/diff.json" "$lg_pid" "$b_pid" || fail "--json diff lacks the names as received"
    ctl --json=short top --batch -n 1 --limit 10000 >"$work/top.json" || fail "--json top --batch failed"
    check ctl_json "$work/top.json" "$lg_pid" "$b_pid" || fail "--json top lacks the names as received"
    local args
    for args in "status" "modules --limit 10000" "units --stacks 3 --limit 10000" "stacks --task $lg_pid" \
                "stacks --task $b_pid"; do
        # shellcheck disable=SC2086
        ctl --json=short $args >"$work/out.json" || fail "--json $args failed"
        assert_json "$work/out.json" "--json $args"
    done
    echo "ok --json tasks, diff, top, status, modules, units, stacks keep the strings as received"
}

# Every report format, from the daemon ($1 = "") or from a snapshot file ($1 = --from FILE).
check_reports() {
    local from=("$@") f where=${2:-the daemon}
    ctl_text report "${from[@]}" --format task_summary --task "$lg_pid"
    has "Task $BAD_TEXT ($lg_pid) using" "report task_summary from $where"
    ctl_text report "${from[@]}" --format task_top --task "$b_pid"
    has "Top stack usage of task $CUT_TEXT ($b_pid):" "report task_top from $where"
    ctl_text report "${from[@]}" --format stack_tree --task "$lg_pid"
    has "[pid $lg_pid $BAD_TEXT]" "report stack_tree from $where"
    for f in module_summary module_top folded task_summary,task_top,module_summary,module_top,stack_tree,folded; do
        ctl_text report "${from[@]}" --format "$f"
    done
    ctl report "${from[@]}" --format flamegraph --task "$b_pid" >"$work/fg.svg" ||
        fail "report flamegraph from $where failed"
    check svg "$work/fg.svg" "[pid $b_pid $CUT_TEXT]" || fail "the flame graph from $where is wrong"
    ctl --json=short report "${from[@]}" --format task_summary,task_top,module_summary,module_top,stack_tree,folded,flamegraph \
        >"$work/report.json" || fail "report --json from $where failed"
    check report_json "$work/report.json" "$lg_pid" || fail "report --json from $where lacks the name"
}

test_reports() {
    check_reports
    echo "ok report in every format, text and --json"
    ctl snapshot --file "$work/snap.json" >/dev/null || fail "snapshot --file failed"
    assert_json "$work/snap.json" "the snapshot file"
    grep -qF '"comm": "bad\\xff\\xfe"' "$work/snap.json" || grep -qF '"comm":"bad\\xff\\xfe"' "$work/snap.json" ||
        fail "the snapshot file does not hold the encoded comm"
    check_reports --from "$work/snap.json"
    echo "ok snapshot --file, then report --from it in every format"
}

# The live view in a terminal: the names show escaped, and ESC [ 2 J did not clear the screen.
test_top_tmux() {
    command -v tmux >/dev/null || { skipped+=("top in tmux: tmux is not installed"); return; }
    local deadline
    echo 'set -g default-terminal screen' >"$work/tmux.conf"
    tmux -L "$server" -f "$work/tmux.conf" new-session -d -s top -x 200 -y 50 \
        "env -i PATH=$PATH HOME=$work TERM=screen $MEMSTRACKCTL --address $work/sock top -d 0.5"
    deadline=$((SECONDS + WAIT))
    until tmux -L "$server" capture-pane -p -t top >"$work/screen.txt" 2>/dev/null &&
          grep -qE "^ +$lg_pid bad\\\\xff\\\\xfe " "$work/screen.txt" &&
          grep -qF "$b_pid esc\\x1b[2J\\x... " "$work/screen.txt"; do
        [ $SECONDS -lt $deadline ] || { cat "$work/screen.txt" >&2; fail "top in tmux does not show the encoded names"; }
        sleep 0.2
    done
    head -1 "$work/screen.txt" | grep -q '^memstrack top - tracked' || fail "the header of top is gone"
    tmux -L "$server" kill-server
    echo "ok top in tmux shows the encoded names"
}

# memstrackd's own summary at exit (stderr here, the journal under systemd) is text as well.
test_summary_at_exit() {
    stop_daemon
    check safe "$work/memstrackd.log" || fail "memstrackd's log and summary are not safe text"
    grep -q "memstrack summary" "$work/memstrackd.log" || fail "memstrackd printed no summary"
    if grep -qa "bad" "$work/memstrackd.log"; then
        grep -qF "$BAD_TEXT" "$work/memstrackd.log" || fail "the summary names the task, but not encoded"
    fi
    echo "ok memstrackd's summary is text"
}

start_daemon
start_tasks
test_raw_varlink
test_text_verbs
test_json_verbs
test_reports
test_top_tmux
test_summary_at_exit
lg free freed
lg exit bye
kill -USR1 "$b_pid"
# A case that could not run here makes the whole test a skip, with its reason, once the others passed.
if [ ${#skipped[@]} -gt 0 ]; then
    printf 'SKIP: %s\n' "${skipped[@]}" >&2
    exit 77
fi
echo "all string tests passed"
