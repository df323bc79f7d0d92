#!/bin/bash
# SPDX-License-Identifier: MIT
# The page-owner source (daemon/sources/page-owner.c) through the whole daemon: memstrackd
# --source=page-owner imports page_owner logs of every format (tests/data/page-owner/, written from the
# kernel's format strings in mm/page_owner.c and tools/mm/page_owner_sort.c) and memstrackctl's answers
# count exactly their pages per process (tgid), per module and per stack. Bad records are skipped with
# their line numbers, and the rest is imported. No kernel tracing, no root.
#
# Usage: test-page-owner-source.sh MEMSTRACKD MEMSTRACKCTL DATADIR
set -uo pipefail

D=${1:?memstrackd}
CTL=${2:?memstrackctl}
DATA=${3:?data directory}/page-owner
# shellcheck source=daemon-lib.sh
. "$(dirname "$0")/daemon-lib.sh"

# Starts memstrackd on the log $1 and waits for it. $2: "stdin" reads it from standard input, "pipe" from
# a pipe's path, "crlf" with CRLF line ends and blanks on the empty lines.
start() {
    if [ "${2:-}" = crlf ]; then
        sed 's/$/\r/; s/^\r$/ \t \r/' "$1" >"$work/crlf.txt"
        set -- "$work/crlf.txt"
    fi
    if [ "${2:-}" = stdin ]; then
        cat "$1" | "$D" --foreground --source=page-owner --source-input=- --socket="$work/sock" \
            --group="$(id -gn)" >"$work/log" 2>&1 &
    elif [ "${2:-}" = pipe ]; then
        # A path that cannot be read twice, as /sys/kernel/debug/page_owner cannot.
        "$D" --foreground --source=page-owner --source-input=<(cat "$1") --socket="$work/sock" \
            --group="$(id -gn)" >"$work/log" 2>&1 &
    else
        "$D" --foreground --source=page-owner --source-input="$1" --socket="$work/sock" --group="$(id -gn)" \
            >"$work/log" 2>&1 &
    fi
    daemon=$!
    daemon_answers "$1"
}

# Compares the daemon's answers with what the log holds: check NAME TASKS MODULES TOPFRAMES TOTAL BAD, the
# first three as Python dicts ({tgid: (comm, pages)}, {module: pages}, {outermost frame: pages}).
check() {
    local c="$CTL --address unix:$work/sock"
    $c tasks --all --json=short >"$work/tasks" 2>"$work/err" || fail "$1: memstrackctl tasks: $(cat "$work/err")"
    $c modules --json=short >"$work/modules" 2>"$work/err" || fail "$1: memstrackctl modules: $(cat "$work/err")"
    $c stacks --depth=1 --limit=100 --json=short >"$work/stacks" 2>"$work/err" ||
        fail "$1: memstrackctl stacks: $(cat "$work/err")"
    $c status --json=short >"$work/status" 2>"$work/err" || fail "$1: memstrackctl status: $(cat "$work/err")"
    python3 - "$work" "$2" "$3" "$4" "$5" "$6" <<'END' || fail "$1: the answers differ from the log"
import json, sys
work, tasks, modules, frames, total, bad = sys.argv[1], eval(sys.argv[2]), eval(sys.argv[3]), eval(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
load = lambda name: json.load(open(f"{work}/{name}"))
ok = True
def differ(what, got, want):
    global ok
    if got != want:
        print(f"{what}: {got!r}, expected {want!r}", file=sys.stderr)
        ok = False
differ("tasks", {t["pid"]: (t["comm"], t["currentPages"]) for t in load("tasks")["tasks"]}, tasks)
differ("modules", {m["name"]: m["currentPages"] for m in load("modules")["modules"] if m["currentPages"]}, modules)
root = load("stacks")["root"]
differ("stack tree total", root["currentPages"], total)
differ("outermost frames", {c["frame"] + (f" [{c['module']}]" if c["module"] else ""): c["currentPages"]
                            for c in root["children"]}, frames)
status = load("status")
differ("tracked pages", status["trackedPages"], total)
differ("bad records", {l["reason"]: l["count"] for l in status["lostByReason"]}, {"badRecord": bad})
differ("lost events", status["lostEvents"], bad)
differ("backend", status["backend"], "page-owner")
# The addresses that name the log's functions are made up: shown to no one, root included.
differ("addresses", [c["address"] for c in root["children"] if c["address"] is not None], [])
differ("kernelAddressesHidden", status["kernelAddressesHidden"], True)
sys.exit(0 if ok else 1)
END
}

# The current format (6.10 on): threads of one process (2000) under their own names, a name with ") b), ts",
# one that is not UTF-8, module frames with build ids, orders 9 and 10, migration, slab and memcg notes.
for how in file crlf pipe stdin; do
    start "$DATA/current.txt" $how
    check "current ($how)" \
        '{1001: ("systemd-journal", 2), 2000: ("Web Content", 516), 3003: ("a) b), ts 1 (x", 1024), 4004: ("bad\\xff\\xfename", 1)}' \
        '{"vmlinux": 516, "virtio_net": 1024, "xfs": 2, "ext4": 1}' \
        '{"virtio_dev_probe+0x1b6": 1024, "handle_mm_fault+0xe2": 512, "do_pipe2+0x3f": 4, "vfs_read+0x23c": 2, "kthread+0xe4": 1}' \
        1543 0
    daemon_stop
done
grep -q "Imported 6 page_owner records (1543 pages) from (standard input); 0 bad records skipped" "$work/log" ||
    fail "standard input: the import is not logged"

# 6.6 to 6.9: tgid (comm) and free_ts, PFN in decimal.
start "$DATA/tgid-free-ts.txt"
check "tgid-free-ts" '{1500: ("sshd", 1), 77: ("kworker/u8:3", 4)}' '{"vmlinux": 1, "i915": 4}' \
    '{"do_anonymous_page+0x1cd": 1, "process_one_work+0x174": 4}' 5 0
daemon_stop

# 5.11 to 6.5: a pid and no name; the pid is the process.
start "$DATA/pid-ts.txt"
check "pid-ts" '{812: ("[unknown]", 9), 1: ("[unknown]", 1)}' '{"vmlinux": 1, "btrfs": 8, "overlay": 1}' \
    '{"wp_page_copy+0x8c": 1, "btrfs_read_node_slot+0x6e [btrfs]": 8, "ovl_copy_up_data+0x1b7 [overlay]": 1}' 10 0
daemon_stop

# 4.x to 5.10: no task at all (pid 0), 4.4's mask without names, orders 9 and 10.
start "$DATA/no-task.txt"
check "no-task" '{0: ("[unknown]", 1539)}' '{"vmlinux": 514, "e1000e": 1, "ttm": 1024}' \
    '{"pte_alloc_one+0x13": 2, "net_rx_action+0x14f": 1, "kthread+0x112": 512, "ttm_tt_populate+0xa5 [ttm]": 1024}' 1539 0
daemon_stop

# page_owner_sort's output: counted records, the old "N times:", culled by task and by stack, one-liners.
start "$DATA/sorted.txt"
check "sorted" \
    '{600: ("bash", 3), 700: ("modprobe", 16), 0: ("[unknown]", 10), 800: ("my app", 64), 900: ("cron", 7), 901: ("cron", 2)}' \
    '{"vmlinux": 22, "nvme": 16, "drm": 64}' \
    '{"__do_fault+0x31": 3, "nvme_probe+0x2c1 [nvme]": 16, "pte_alloc_one+0x13": 10, "drm_gem_shmem_get_pages+0x2d [drm_shmem_helper]": 64}' \
    102 0
daemon_stop

# page_owner_stacks/show_stacks: pages per stack, no task.
start "$DATA/show-stacks.txt"
check "show-stacks" '{0: ("[unknown]", 344)}' '{"vmlinux": 44, "kvm": 300}' \
    '{"kvm_arch_vcpu_ioctl_run+0x11e [kvm]": 300, "copy_process+0x1c1": 44}' 344 0
daemon_stop

# Bad records among good ones: each is named by its line, the others are imported.
start "$DATA/corrupt.txt"
check "corrupt" '{10: ("good", 1), 11: ("good too", 4), 12: ("third", 2)}' '{"vmlinux": 4, "xfs": 1, "ext4": 2}' \
    '{"xfs_buf_alloc_pages+0x55 [xfs]": 1, "copy_process+0x1c1": 4, "ext4_alloc_da_blocks+0x1f [ext4]": 2}' 7 4
"$CTL" --address "unix:$work/sock" status >"$work/status.txt" 2>&1 || fail "corrupt: memstrackctl status"
grep -q '^ *Lost events: 4 (counts are lower bounds) by reason: badRecord 4$' "$work/status.txt" ||
    fail "corrupt: status does not show the bad records: $(cat "$work/status.txt")"
daemon_stop
for want in "corrupt.txt:9: not a page_owner record (a garbled 'Page allocated' line)" \
            "corrupt.txt:28: not a page_owner record (a garbled frame)" \
            "corrupt.txt:31: not a page_owner record (an unknown line)" \
            "corrupt.txt:44: not a page_owner record (the file ends inside a line)" \
            "Imported 3 page_owner records (7 pages) from .*corrupt.txt; 4 bad records skipped"; do
    grep -q "$want" "$work/log" || fail "corrupt: the log does not say '$want'"
done

# A garbled one-liner of page_owner_sort --cull takes none of the lines after it.
printf '%s\n' "7 times, 7 pages, TGID 900, task_comm_name: cron" "5 apples" \
    "1 times, 2 pages, PID 901, task_comm_name: cron" >"$work/culled.txt"
start "$work/culled.txt"
check "culled" '{900: ("cron", 7), 901: ("cron", 2)}' '{"vmlinux": 9}' '{}' 9 1
daemon_stop
grep -q "culled.txt:2: not a page_owner record (a garbled 'N times' line)" "$work/log" ||
    fail "culled: the log does not name line 2"

# A file cut at the end of a line: the record it cuts is the bad one.
head -n 38 "$DATA/corrupt.txt" >"$work/cut.txt"
start "$work/cut.txt"
check "cut" '{10: ("good", 1), 11: ("good too", 4)}' '{"vmlinux": 4, "xfs": 1}' \
    '{"xfs_buf_alloc_pages+0x55 [xfs]": 1, "copy_process+0x1c1": 4}' 5 4
daemon_stop
grep -q "cut.txt:38: not a page_owner record (the file ends inside the record)" "$work/log" ||
    fail "cut: the log does not name line 38"

# Nothing to import: refused, as is a missing input.
printf 'hello\nworld\n' >"$work/none.txt"
"$D" --foreground --no-socket --source=page-owner --source-input="$work/none.txt" >"$work/log" 2>&1
status=$?
[ $status = 1 ] || fail "a file without records: exit $status"
grep -q "none.txt has no page_owner record" "$work/log" || fail "a file without records: $(cat "$work/log")"
"$D" --foreground --no-socket --source=page-owner >"$work/log" 2>&1
status=$?
[ $status = 1 ] || fail "no page_owner file: exit $status"
grep -q "source-input" "$work/log" || fail "no page_owner file: $(cat "$work/log")"

# memstrackctl import page-owner: the same through a private memstrackd it starts and stops itself.
export MEMSTRACKD=$D
# Its private directory goes here, where the test can see that it is removed.
export TMPDIR=$work/tmp
mkdir "$TMPDIR"
"$CTL" import page-owner "$DATA/current.txt" --format=module_summary >"$work/import.txt" 2>"$work/err" ||
    fail "import: $(cat "$work/err")"
cat >"$work/want.txt" <<'END'
Module virtio_net using 4.0MB (1024 pages), peak allocation 4.0MB (1024 pages)
Module vmlinux using 2.0MB (516 pages), peak allocation 2.0MB (516 pages)
Module xfs using 0.0MB (2 pages), peak allocation 0.0MB (2 pages)
Module ext4 using 0.0MB (1 pages), peak allocation 0.0MB (1 pages)
END
diff -u "$work/want.txt" "$work/import.txt" >&2 || fail "import: the module summary differs"
[ -s "$work/err" ] && fail "import of a clean log printed: $(cat "$work/err")"
# As a user who is not root too (kallsyms shows no addresses then; the import needs none, so no warning).
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && runuser -u nobody -- test -r "$DATA/current.txt"; then
    mkdir -m 1777 "$work/tmp-nobody"
    runuser -u nobody -- env TMPDIR="$work/tmp-nobody" MEMSTRACKD="$D" "$CTL" import page-owner \
        "$DATA/current.txt" --format=module_summary >"$work/import.txt" 2>"$work/err" ||
        fail "import as nobody: $(cat "$work/err")"
    diff -u "$work/want.txt" "$work/import.txt" >&2 || fail "import as nobody: the module summary differs"
    [ -s "$work/err" ] && fail "import as nobody printed: $(cat "$work/err")"
fi
# From standard input, to a snapshot file that reports read later; the bad records are named.
"$CTL" import page-owner --file="$work/import.json" <"$DATA/corrupt.txt" >"$work/import.txt" 2>"$work/err" ||
    fail "import --file: $(cat "$work/err")"
grep -q "Wrote $work/import.json (3 tasks, 7 pages tracked)" "$work/import.txt" ||
    fail "import --file: $(cat "$work/import.txt")"
grep -q "^(standard input):44: not a page_owner record (the file ends inside a line), skipping the record.$" \
    "$work/err" || fail "import --file: the bad records are not named: $(cat "$work/err")"
[ "$(wc -l <"$work/err")" = 4 ] || fail "import --file: more than the 4 bad records on stderr: $(cat "$work/err")"
"$CTL" report --from="$work/import.json" --format=task_summary >"$work/report.txt" ||
    fail "report --from the imported snapshot"
grep -q "^Task good too (11) using 0.0MB (4 pages), peak usage 0.0MB (4 pages)$" "$work/report.txt" ||
    fail "report --from the imported snapshot: $(cat "$work/report.txt")"
# A log without records: memstrackd's reason and exit status 1; no kind but page-owner (exit 2).
"$CTL" import page-owner "$work/none.txt" >"$work/import.txt" 2>"$work/err"
status=$?
[ $status = 1 ] || fail "import of a file without records: exit $status"
grep -q "none.txt has no page_owner record that can be read" "$work/err" || fail "import of nothing: $(cat "$work/err")"
"$CTL" import ftrace "$work/none.txt" >/dev/null 2>"$work/err"
status=$?
[ $status = 2 ] || fail "import ftrace: exit $status"
[ -z "$(ls -A "$TMPDIR")" ] || fail "import left files behind: $(ls -A "$TMPDIR")"

echo "every page_owner format imports with exact totals"
