#!/bin/bash
# SPDX-License-Identifier: MIT
# memstrackctl report --format html against a stand-in memstrackd (fake-memstrackd.py): the page from
# the daemon, from a snapshot file (--from) and from the boot phase (--boot) is the same page, and it is
# opened in headless Chromium (report-html-browser.js): sections, sorting, zoom, no console error, no
# request leaving it; the screenshot stays in the build directory. Skips (77) without chromium or
# playwright-core (scripts/deps installs both). No kernel, no root.
#
# Usage: test-report-html.sh MEMSTRACKCTL TESTS_DIR SCREENSHOT
set -uo pipefail

CTL=${1:?memstrackctl}
TESTS=${2:?tests dir}
SHOT=${3:?screenshot path}
WAIT=60
work=$(mktemp -d /tmp/test-report-html.XXXXXX)
fake=
trap '[ -n "$fake" ] && kill "$fake" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

python3 "$TESTS/fake-memstrackd.py" --socket "$work/sock" --log "$work/log" --boot-snapshot "$work/snap.json" \
    >"$work/fake.out" 2>&1 &
fake=$!
deadline=$((SECONDS + WAIT))
until [ -S "$work/sock" ]; do
    [ $SECONDS -lt $deadline ] || fail "the fake memstrackd did not start: $(cat "$work/fake.out")"
    sleep 0.1
done
ctl() {
    "$CTL" --address "$work/sock" "$@"
}

ctl report --format html --output "$work/live.html" || fail "report --format html exited $?"
grep -q '^<!DOCTYPE html>' "$work/live.html" || fail "not an HTML page"
grep -qF "Content-Security-Policy\" content=\"default-src 'none'" "$work/live.html" || fail "no CSP of default-src 'none'"
# Nothing to fetch: no src= or href= but the page's own anchors.
grep -oE '(src|href)="[^"#][^"]*"' "$work/live.html" && fail "the page refers to something outside it"
ctl snapshot --file "$work/snap.json" || fail "snapshot --file exited $?"
ctl report --format html --from "$work/snap.json" >"$work/file.html" || fail "report --from exited $?"
ctl report --format html --boot >"$work/boot.html" || fail "report --boot exited $?"
# From the file and from the boot phase: the same document, the same page.
cmp -s "$work/file.html" "$work/boot.html" || fail "the page from --boot differs from the one from --from"
for f in live file; do
    for id in summary history tasks units modules flamegraph slab leaks oom; do
        grep -q "<section id=\"$id\">" "$work/$f.html" || fail "$f.html has no section $id"
    done
done
ctl report --format html,module_top >/dev/null 2>&1
[ $? -eq 2 ] || fail "html with another format on standard output is not a usage error"
ctl report --format html,module_top --output "$work/dir" || fail "html and module_top into a directory"
[ -s "$work/dir/html.html" ] && [ -s "$work/dir/module_top.txt" ] || fail "the directory lacks html.html: $(ls "$work/dir")"
ctl --json=short report --format html | python3 -c 'import json, sys; assert json.load(sys.stdin)["html"].startswith("<!DOCTYPE html>")' ||
    fail "report --json --format html is not the page as a JSON string"
echo "ok report --format html from the daemon, a file and --boot"

chromium=$(command -v chromium) || { echo "SKIP: no chromium (Debian's chromium package; scripts/deps)" >&2; exit 77; }
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/opt/memstrack-test-node/node_modules
node -e 'require("playwright-core")' 2>/dev/null ||
    { echo "SKIP: playwright-core is not installed (scripts/deps puts it in /opt/memstrack-test-node)" >&2; exit 77; }
node "$TESTS/report-html-browser.js" "$work/live.html" "$SHOT" "$chromium" || fail "the page in Chromium"
[ -s "$SHOT" ] || fail "no screenshot in $SHOT"
echo "ok the page in headless Chromium; screenshot: $SHOT"
