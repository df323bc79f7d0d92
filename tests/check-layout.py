#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Keeps the source layout honest: which folder may include which, and no folder-level cycle.

Usage: check-layout.py SOURCE_ROOT
       check-layout.py --self-test

Every `#include "x.h"` in a .c or .h file of a checked folder is resolved as the build resolves it: the
including file's own folder first, then the folders it may use (ALLOWED; each daemon folder is a library
built with exactly those include paths). A name found only in a folder it may not use is a forbidden
include; a name found in two folders it may use is ambiguous (the build would pick one silently). Every
resolved include is an edge between two folders, and the folder graph must have no cycle. Some folders see
another only through its interface headers (INTERFACES: the query layer reads the core through view.h), and
those headers reach no other header of their folder than the plain data they hand out. Each offending
include is printed with its file and line, so the fix is obvious. Names found nowhere (config.h, the
generated *.varlink.c, system headers in quotes) are not checked. docs/layout.md explains the rules.
"""
import os
import re
import sys
import tempfile

# Folder -> the folders its files may include. A folder may always include itself. Keep it a DAG, and
# keep it in step with the include_directories of each folder's meson.build and with docs/layout.md.
ALLOWED = {
        "common": set(),
        "heap": set(),
        "protocol": {"common"},
        "report": {"common"},
        "pprof": {"common"},
        "daemon/util": {"common"},
        "daemon/symbols": {"common", "daemon/util"},
        "daemon/core": {"common", "daemon/symbols"},
        "daemon/sources": {"common", "daemon/util", "daemon/core", "heap"},
        "daemon/varlink": {"common", "protocol", "daemon/util"},
        "daemon/api": {"common", "protocol", "report", "daemon/util", "daemon/core", "daemon/symbols",
                       "daemon/varlink"},
        "daemon/observers": {"common", "daemon/util", "daemon/core", "daemon/symbols"},
        "daemon/access": {"common", "daemon/util", "daemon/core", "daemon/symbols", "daemon/sources"},
        "daemon/oom": {"common", "protocol", "report", "daemon/util", "daemon/core", "daemon/symbols",
                       "daemon/sources", "daemon/api", "daemon/varlink"},
        "daemon": {"common", "protocol", "report", "daemon/util", "daemon/core", "daemon/symbols",
                   "daemon/sources", "daemon/api", "daemon/observers", "daemon/oom", "daemon/access", "daemon/varlink",
                   "heap"},
        "client": {"common", "protocol", "report", "pprof", "heap"},
        "client/top": {"common", "protocol", "report", "client"},
        "metrics": {"common", "protocol", "pprof"},
}

# Including folder -> {folder it sees through an interface: the headers it may include there}, and per such
# folder what its interface headers may include of it in turn, transitively: plain data, never a part's
# own header, so that a reader cannot reach the core's tables through the interface either.
INTERFACES = {
        "daemon/api": {"daemon/core": {"view.h"}},
}
INTERFACE_CLOSURE = {
        "daemon/core": {"view.h", "event.h", "ledger.h", "stats.h"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root, allowed):
        for folder in sorted(allowed):
                path = os.path.join(root, folder)
                if not os.path.isdir(path):
                        continue
                for name in sorted(os.listdir(path)):
                        if name.endswith((".c", ".h")):
                                yield folder, name


def cycles(edges):
        """Every back edge of a depth-first walk, as the path that closes the cycle."""
        found = []
        state = {}

        def visit(node, path):
                state[node] = "open"
                for nxt in sorted(edges.get(node, ())):
                        if state.get(nxt) == "open":
                                stack = path + [node]
                                found.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
                        elif nxt not in state:
                                visit(nxt, path + [node])
                state[node] = "done"

        for node in sorted(edges):
                if node not in state:
                        visit(node, [])
        return found


def check(root, allowed):
        """Returns (errors, number of files, number of folder edges)."""
        errors = [f"the allowed folder edges have a cycle: {c}" for c in cycles(allowed)]
        files = list(sources(root, allowed))
        where = {}
        for folder, name in files:
                where.setdefault(name, []).append(folder)

        edges = {}
        includes = {}           # (folder, name) -> [(line number, included name)]
        for folder, name in files:
                with open(os.path.join(root, folder, name), encoding="utf-8") as f:
                        for lineno, line in enumerate(f, 1):
                                m = INCLUDE.match(line)
                                if not m:
                                        continue
                                target = os.path.basename(m.group(1))
                                includes.setdefault((folder, name), []).append((lineno, target))
                                found = where.get(target)
                                if not found:
                                        continue        # generated (config.h, *.varlink.c) or outside the tree
                                if folder in found:
                                        continue        # its own folder comes first
                                visible = [d for d in found if d in allowed[folder]]
                                here = f"{folder}/{name}:{lineno}"
                                if len(visible) > 1:
                                        errors.append(f"{here}: {target} is ambiguous: it exists in "
                                                      f"{', '.join(visible)}")
                                        continue
                                dest = visible[0] if visible else found[0]
                                edges.setdefault(folder, set()).add(dest)
                                if not visible:
                                        errors.append(f"{here}: includes {dest}/{target}, but {folder}/ may "
                                                      f"only include {', '.join(sorted(allowed[folder])) or 'nothing'}")
                                        continue
                                through = INTERFACES.get(folder, {}).get(dest)
                                if through is not None and target not in through:
                                        errors.append(f"{here}: includes {dest}/{target}, but {folder}/ reads "
                                                      f"{dest}/ only through {', '.join(sorted(through))}")

        # What the interface headers reach in their own folder, include by include.
        for folder, plain in sorted(INTERFACE_CLOSURE.items()):
                headers = set().union(*(i.get(folder, set()) for i in INTERFACES.values()))
                queue = sorted(headers)
                seen = set(queue)
                while queue:
                        name = queue.pop()
                        for lineno, target in includes.get((folder, name), []):
                                if folder not in where.get(target, []):
                                        continue
                                if target not in plain:
                                        errors.append(f"{folder}/{name}:{lineno}: the interface reaches {folder}/"
                                                      f"{target}; it may reach only {', '.join(sorted(plain))}")
                                elif target not in seen:
                                        seen.add(target)
                                        queue.append(target)

        # A cycle among folders means two rooms that cannot be understood apart.
        errors += [f"folder cycle: {c}" for c in cycles(edges)]
        if not files:
                errors.append(f"no sources found under {root}: wrong root?")
        return errors, len(files), sum(len(v) for v in edges.values())


def self_test():
        """The check must catch what it is for: a clean tree passes, each kind of violation fails."""
        def tree(files):
                d = tempfile.TemporaryDirectory()
                for path, text in files.items():
                        os.makedirs(os.path.dirname(os.path.join(d.name, path)), exist_ok=True)
                        with open(os.path.join(d.name, path), "w", encoding="utf-8") as f:
                                f.write(text)
                return d

        base = {
                "common/macro.h": "#pragma once\n",
                "daemon/util/log.h": '#include "macro.h"\n',
                "daemon/core/accounting.h": '#include "ksym.h"\n#include "event.h"\n#include "config.h"\n',
                "daemon/core/event.h": "#pragma once\n",
                "daemon/core/view.h": '#include "event.h"\n',
                "daemon/symbols/ksym.h": '#include "log.h"\n',
                "daemon/api/service.c": '#include "view.h"\n#include <stdio.h>\n',
                "client/snapshot.h": "#pragma once\n",
                # The same name in two folders that no folder sees both of.
                "daemon/api/snapshot.h": '#include "view.h"\n',
                "client/report.c": '#include "snapshot.h"\n',
                "daemon/manager.c": '#include "snapshot.h"\n#include "service.h"\n',
                "daemon/api/service.h": "#pragma once\n",
        }
        failures = []

        def expect(what, files, allowed, needle):
                with tree(files) as root:
                        errors, _, _ = check(root, allowed)
                if needle is None and errors:
                        failures.append(f"{what}: expected no errors, got {errors}")
                if needle is not None and not any(needle in e for e in errors):
                        failures.append(f"{what}: expected an error containing {needle!r}, got {errors}")

        expect("clean tree", base, ALLOWED, None)
        expect("core includes api", {**base, "daemon/core/pagemap.c": '#include "service.h"\n'},
               ALLOWED, "daemon/core/pagemap.c:1: includes daemon/api/service.h")
        expect("api includes the manager", {**base, "daemon/manager.h": "#pragma once\n",
                                            "daemon/api/query.c": '\n#include "manager.h"\n'},
               ALLOWED, "daemon/api/query.c:2: includes daemon/manager.h")
        expect("ambiguous name", {**base, "daemon/util/event.h": "#pragma once\n",
                                  "daemon/sources/perf.c": '#include "event.h"\n'},
               ALLOWED, "event.h is ambiguous")
        # A cycle needs edges the table allows, so it takes a table that allows one.
        loose = {**ALLOWED, "daemon/core": ALLOWED["daemon/core"] | {"daemon/api"}}
        expect("folder cycle", {**base, "daemon/core/usage.c": '#include "service.h"\n',
                                "daemon/api/service.h": '#include "event.h"\n'},
               loose, "folder cycle: daemon/api -> daemon/core -> daemon/api")
        expect("cyclic table", base, loose, "the allowed folder edges have a cycle")
        # The query layer reads the core through view.h alone, and view.h reaches only plain data.
        viewed = base
        expect("api past the view", {**viewed, "daemon/api/query.c": '#include "view.h"\n#include "accounting.h"\n'},
               ALLOWED, "daemon/api/query.c:2: includes daemon/core/accounting.h, but daemon/api/ reads daemon/core/ "
               "only through view.h")
        expect("view reaching the core", {**viewed, "daemon/core/event.h": '#include "pagemap.h"\n',
                                          "daemon/core/pagemap.h": "#pragma once\n"},
               ALLOWED, "daemon/core/event.h:1: the interface reaches daemon/core/pagemap.h")
        expect("empty tree", {"README": ""}, ALLOWED, "no sources found")

        for f in failures:
                print("layout self-test: " + f, file=sys.stderr)
        if failures:
                return 1
        print("layout self-test: ok")
        return 0


def main():
        if len(sys.argv) != 2:
                print("usage: check-layout.py SOURCE_ROOT | --self-test", file=sys.stderr)
                return 2
        if sys.argv[1] == "--self-test":
                return self_test()
        errors, n_files, n_edges = check(sys.argv[1], ALLOWED)
        for e in errors:
                print("layout: " + e, file=sys.stderr)
        if errors:
                return 1
        print(f"layout: {n_files} files, {n_edges} folder edges, all allowed, no cycle")
        return 0


if __name__ == "__main__":
        sys.exit(main())
