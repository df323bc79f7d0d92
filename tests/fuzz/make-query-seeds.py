#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed programs of the query fuzzer (fuzz-query.c) into corpus-query/.

A program is bytes: two of configuration, then ops, each a byte (its index in the ops table) and its
operands. The op and method tables are read from fuzz-query.c, so the seeds follow a reordering; the
operands are encoded here as the ops read them (see each op_* function there). Any bytes are a valid
program: a seed only starts libFuzzer somewhere that matters.

    tests/fuzz/make-query-seeds.py
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = open(os.path.join(HERE, "fuzz-query.c")).read()
CORPUS = os.path.join(HERE, "corpus-query")

ops_table = SOURCE[SOURCE.index("static const Op ops[] = {"):]
OPS = re.findall(r"OP\((\w+)\)", ops_table[:ops_table.index("};")])
methods_table = SOURCE[SOURCE.index("static const Method methods[] = {"):]
methods_table = methods_table[:methods_table.index("\n};") + 1]
METHODS = []
for m in re.finditer(r'\{ "(io\.memstrack\.\w+)", \{(.*?)\} \},?\n', methods_table, re.S):
    METHODS.append((m.group(1), re.findall(r'"(\w+)", PARAM_', m.group(2))))


class Program:
    def __init__(self, threads, per_process, slab, max_exited, ksym=1):
        # c0: threads, per-process trees, slab, exited records kept (index), symbol table; c1: budgets.
        c0 = threads | per_process << 1 | slab << 2 | max_exited << 3 | ksym << 5
        self.bytes = [c0, 3]

    def op(self, name, *operands):
        self.bytes.append(OPS.index(name))
        self.bytes.extend(operands)
        return self

    def feed(self):
        # No jitter, CPU 0.
        self.bytes.extend([0, 0])

    def fork(self, parent, pid):
        self.op("fork", parent - 1, pid - 1, 0)
        self.feed()

    def comm(self, pid, comm):
        self.op("comm", pid - 1, 0, comm, 0)
        self.feed()

    def exit(self, pid):
        self.op("exit", pid - 1, 0)
        self.feed()

    def alloc(self, pid, pfn_index, order, chain, user=False, cgroup=0):
        # Chain mode 1 (a chain the kernel makes), 0x80: with one user frame below.
        self.op("page_alloc", pid - 1, 0, cgroup, order, pfn_index, 0x81 if user else 1, chain)
        if user:
            self.bytes.extend([0, 0])
        self.feed()

    def free(self, pid, pfn_index, order):
        self.op("page_free", pid - 1, order, pfn_index)
        self.feed()

    def object(self, pid, ptr_index, size_index, cgroup=0):
        self.op("object_alloc", pid - 1, 0, cgroup, ptr_index, size_index, 0, 1, 0, 0)
        self.feed()

    def call(self, method, **params):
        """params: name -> the bytes of its value (a parameter left out is absent)."""
        index = [m[0] for m in METHODS].index("io.memstrack." + method)
        self.op("call", index)
        for name in METHODS[index][1]:
            if name in params:
                self.bytes.append(100)
                self.bytes.extend(params[name])
            else:
                self.bytes.append(0)  # absent, mandatory or not
        self.bytes.append(0)

    def write(self, name):
        with open(os.path.join(CORPUS, name), "wb") as f:
            f.write(bytes(self.bytes))


def evicted_owners():
    """The daemon's crash: one exited task kept, processes exit holding pages and objects, then Leaks of
    every age, Leaks of one pid and Slab by task."""
    p = Program(threads=0, per_process=0, slab=1, max_exited=1)
    for pid in range(1, 6):
        p.fork(1, pid)
        p.alloc(pid, pid, 1, 0)
        p.object(pid, pid, 3)
    for pid in range(2, 6):
        p.exit(pid)
    p.call("Leaks", minAgeSeconds=[0])
    p.call("Leaks", minAgeSeconds=[0], pid=[0, 0])
    p.call("Slab", by=[2])
    p.write("evicted-owners")


def slot_reuse():
    """A process with user frames is forgotten and its record reused: its tree and peaks must not pass on."""
    p = Program(threads=0, per_process=1, slab=0, max_exited=1)
    p.fork(1, 2)
    p.alloc(2, 1, 3, 0, user=True)
    p.free(2, 1, 3)
    p.exit(2)
    p.fork(1, 3)
    p.exit(3)
    p.fork(1, 4)
    p.comm(4, 1)
    p.alloc(4, 2, 0, 0, user=True)
    p.call("StackTree", pid=[0, 3], sortBy=[1])
    p.call("StackTree", sortBy=[1])
    p.write("slot-reuse")


def every_method():
    """Every method, without parameters and then with some, over a little of everything."""
    p = Program(threads=1, per_process=1, slab=1, max_exited=2)
    for pid in range(1, 5):
        p.fork(1, pid)
        p.comm(pid, pid)
        p.alloc(pid, pid, pid % 3, pid % 9, user=pid % 2 == 1, cgroup=pid)
        p.object(pid, pid, pid % 8, cgroup=pid)
    p.op("cgroup_resolve_pending", 0, 1, 2, 3, 4)
    p.op("history_tick")
    p.exit(3)
    for method, _ in METHODS:
        p.call(method.split(".")[-1])
    p.call("Snapshot", name=[0])
    p.alloc(2, 40, 2, 2)
    p.call("Diff", name=[0])
    p.call("Units", stacks=[2])
    p.call("Slab", by=[3])
    p.call("StackTree", module=[0])
    p.call("History", unit=[1])
    p.write("every-method")


if __name__ == "__main__":
    if not OPS or not METHODS:
        sys.exit("cannot read the op and method tables of fuzz-query.c")
    evicted_owners()
    slot_reuse()
    every_method()
