#!/bin/bash
# SPDX-License-Identifier: MIT
# Which reports the dracut module's helper (units/dracut/memstrackd-initrd.sh) prints for which kernel
# command line, as memstrack's own dracut modules decide: rd.memdebug=4|5, rd.memstrack=1|2|3; and where
# kdump-done saves a capture run when no directory is given (dump-dir).
# getargnum comes from a stand-in for dracut-lib.sh that reads $CMDLINE (dracut's own reads
# /proc/cmdline, the same "last one wins, out of range is the default" rules).
# Usage: test-dracut-formats.sh BUILT_HELPER
set -uo pipefail
helper=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/dracut-lib.sh" <<'LIB'
# getargnum DEFAULT MIN MAX NAME: NAME's last value on $CMDLINE when a number within MIN..MAX, else DEFAULT.
getargnum() {
        local default=$1 min=$2 max=$3 name=$4 word value=
        for word in $CMDLINE; do
                case $word in "$name="*) value=${word#"$name="} ;; esac
        done
        case $value in '' | *[!0-9]*) echo "$default"; return ;; esac
        if [ "$value" -lt "$min" ] || [ "$value" -gt "$max" ]; then
                echo "$default"
        else
                echo "$value"
        fi
}
LIB

fails=0
expect() {
        local cmdline=$1 want=$2 got
        got=$(CMDLINE=$cmdline MEMSTRACKD_INITRD_DRACUT_LIB=$tmp/dracut-lib.sh sh "$helper" formats)
        if [ "$got" = "$want" ]; then
                echo "ok: '$cmdline' -> '$got'"
        else
                echo "FAIL: '$cmdline' -> '$got', want '$want'"
                fails=$((fails + 1))
        fi
}

expect "" ""
expect "quiet rd.memdebug=3" ""
expect "rd.memdebug=4" "module_summary"
expect "rd.memdebug=5 console=ttyS0" "module_summary,module_top"
expect "rd.memdebug=9" ""
expect "rd.memstrack=0" ""
expect "rd.memstrack=1" "module_summary"
expect "rd.memstrack=2" "task_summary,module_summary"
expect "rd.memstrack=3" "task_summary,module_summary,module_top"
expect "rd.memdebug=4 rd.memstrack=3" "task_summary,module_summary,module_top"
expect "rd.memdebug=5 rd.memstrack=2" "task_summary,module_summary,module_top"
expect "rd.memstrack=1 rd.memstrack=2" "task_summary,module_summary"
expect "rd.memstrack=x" ""

# Where kdump-done saves the capture run without a directory: the newest directory holding a vmcore
# (vmcore, vmcore-incomplete, dump.N) under the dump places, in whichever place it is; none: nothing.
dump_dir() {
        CMDLINE='' MEMSTRACKD_INITRD_DRACUT_LIB=$tmp/dracut-lib.sh MEMSTRACKD_INITRD_DUMP_PLACES="$tmp/a $tmp/b $tmp/none" \
                sh "$helper" dump-dir
}
mkdir -p "$tmp/a/old" "$tmp/a/empty" "$tmp/b/new" "$tmp/b/debian"
got=$(dump_dir)
[ -z "$got" ] || { echo "FAIL: dump-dir with no dump: '$got'"; fails=$((fails + 1)); }
touch -d '2026-01-01' "$tmp/a/old/vmcore"
touch -d '2026-01-01' "$tmp/a/old"
got=$(dump_dir)
[ "$got" = "$tmp/a/old" ] || { echo "FAIL: dump-dir with one dump: '$got'"; fails=$((fails + 1)); }
touch "$tmp/b/new/vmcore-incomplete" "$tmp/a/empty/notes"
touch -d '2026-06-01' "$tmp/b/new"
got=$(dump_dir)
[ "$got" = "$tmp/b/new" ] || { echo "FAIL: dump-dir picks '$got', not the newest $tmp/b/new"; fails=$((fails + 1)); }
touch "$tmp/b/debian/dump.202612020000"
touch -d '2026-07-01' "$tmp/b/debian"
got=$(dump_dir)
[ "$got" = "$tmp/b/debian" ] || { echo "FAIL: dump-dir misses kdump-tools' dump.N: '$got'"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "ok: dump-dir finds the newest dump directory"

# An unknown verb is a usage error.
CMDLINE='' MEMSTRACKD_INITRD_DRACUT_LIB=$tmp/dracut-lib.sh sh "$helper" frobnicate 2>/dev/null
rc=$?
[ $rc -eq 2 ] || { echo "FAIL: unknown verb exits $rc, want 2"; fails=$((fails + 1)); }

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
