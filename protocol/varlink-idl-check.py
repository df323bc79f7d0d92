#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks varlink interface definition files against the varlink IDL grammar, and optionally that
docs mention every method and error.

usage: varlink-idl-check.py [--strict-names] [--docs DOC.md [--docs-fields NAME,...]] FILE.varlink...
       varlink-idl-check.py --self-test

--strict-names adds memstrack's own rules: all-lowercase interface name, camelCase field names.
--docs requires a Markdown heading naming each "interface.Method" and each "interface.Error".
--docs-fields requires the docs to name each field of the listed types, and of the listed methods'
replies, in backticks or as a JSON key ("field":).
Exits 1 with "FILE:LINE: message" on the first problem of each file."""

import re
import sys

BASIC = {'bool', 'int', 'float', 'string', 'object'}
IFACE_RE = re.compile(r'[A-Za-z](-*[A-Za-z0-9])*(\.[A-Za-z0-9](-*[A-Za-z0-9])*)+$')
IFACE_LOWER_RE = re.compile(r'[a-z](-*[a-z0-9])*(\.[a-z0-9](-*[a-z0-9])*)+$')
MEMBER_RE = re.compile(r'[A-Z][A-Za-z0-9]*$')
FIELD_RE = re.compile(r'[A-Za-z](_?[A-Za-z0-9])*$')
CAMEL_RE = re.compile(r'[a-z][A-Za-z0-9]*$')
TOKEN_RE = re.compile(r'\s+|#[^\n]*|->|\[\]|\[string\]|[():,?]|[A-Za-z0-9_.-]+|.')


class IdlError(Exception):
    pass


class Parser:
    def __init__(self, text, strict):
        self.strict = strict
        self.toks = []
        line = 1
        for m in TOKEN_RE.finditer(text):
            t = m.group(0)
            if not t.isspace() and not t.startswith('#'):
                self.toks.append((t, line))
            line += t.count('\n')
        self.pos = 0
        self.types = {}
        self.refs = []
        self.members = set()
        self.methods = []
        self.errors = []
        # Type trees (see type()): named types by name, and each method's parameters (a struct).
        self.type_defs = {}
        self.method_parameters = {}
        self.method_replies = {}
        self.name = None

    def peek(self, ahead=0):
        i = self.pos + ahead
        return self.toks[i] if i < len(self.toks) else (None, self.toks[-1][1] if self.toks else 1)

    def fail(self, msg, line=None):
        raise IdlError((line if line is not None else self.peek()[1], msg))

    def take(self, expect=None):
        t, line = self.peek()
        if t is None:
            self.fail(f'unexpected end of file, expected {expect or "more"}')
        if expect is not None and t != expect:
            self.fail(f'expected "{expect}", got "{t}"')
        self.pos += 1
        return t, line

    def parse(self):
        self.take('interface')
        name, line = self.take()
        ok = IFACE_LOWER_RE.match(name) if self.strict else IFACE_RE.match(name)
        if not ok:
            self.fail(f'invalid interface name "{name}"', line)
        self.name = name
        while self.peek()[0] is not None:
            kw, line = self.take()
            if kw not in ('type', 'method', 'error'):
                self.fail(f'expected "type", "method" or "error", got "{kw}"', line)
            mname, mline = self.take()
            if not MEMBER_RE.match(mname):
                self.fail(f'invalid {kw} name "{mname}"', mline)
            if mname in self.members:
                self.fail(f'"{mname}" defined twice', mline)
            self.members.add(mname)
            if kw == 'type':
                self.types[mname] = mline
                self.type_defs[mname] = self.struct_or_enum(allow_enum=True)
            elif kw == 'method':
                self.methods.append(mname)
                self.method_parameters[mname] = self.struct_or_enum(allow_enum=False)
                self.take('->')
                self.method_replies[mname] = self.struct_or_enum(allow_enum=False)
            else:
                self.errors.append(mname)
                self.struct_or_enum(allow_enum=False)
        if not self.members:
            self.fail('interface has no members')
        for ref, line in self.refs:
            if ref not in self.types:
                self.fail(f'unknown type "{ref}"', line)

    # A type tree is a dict: kind (a basic type's name, 'enum', 'struct', 'array', 'map' or 'ref'),
    # nullable, and choices (enum), fields (struct: a list of (name, tree)), element (array, map) or
    # name (ref: a named type, in type_defs once parsed).
    def struct_or_enum(self, allow_enum):
        self.take('(')
        if self.peek()[0] == ')':
            self.take(')')
            return {'kind': 'struct', 'nullable': False, 'fields': []}
        # "name :" starts a struct, a bare name an enum.
        is_enum = self.peek(1)[0] in (',', ')')
        if is_enum and not allow_enum:
            self.fail('expected a struct of "name: type" fields')
        seen = set()
        members = []
        while True:
            fname, line = self.take()
            if not FIELD_RE.match(fname):
                self.fail(f'invalid field name "{fname}"', line)
            if self.strict and not CAMEL_RE.match(fname):
                self.fail(f'field name "{fname}" is not camelCase', line)
            if fname in seen:
                self.fail(f'field "{fname}" appears twice', line)
            seen.add(fname)
            if is_enum:
                members.append(fname)
            else:
                self.take(':')
                members.append((fname, self.type(maybe_ok=True)))
            t, line = self.take()
            if t == ')':
                if is_enum:
                    return {'kind': 'enum', 'nullable': False, 'choices': members}
                return {'kind': 'struct', 'nullable': False, 'fields': members}
            if t != ',':
                self.fail(f'expected "," or ")", got "{t}"', line)

    def type(self, maybe_ok):
        t, line = self.peek()
        if t == '?':
            if not maybe_ok:
                self.fail('"?" cannot apply to a nullable type')
            self.take()
            return dict(self.type(maybe_ok=False), nullable=True)
        if t in ('[]', '[string]'):
            self.take()
            return {'kind': 'array' if t == '[]' else 'map', 'nullable': False,
                    'element': self.type(maybe_ok=True)}
        if t == '(':
            return self.struct_or_enum(allow_enum=True)
        self.take()
        if t in BASIC:
            return {'kind': t, 'nullable': False}
        if t is not None and MEMBER_RE.match(t):
            self.refs.append((t, line))
            return {'kind': 'ref', 'nullable': False, 'name': t}
        self.fail(f'invalid type "{t}"', line)


def check_text(text, strict):
    p = Parser(text, strict)
    p.parse()
    return p


def check_docs(parser, docs_text):
    headings = [line for line in docs_text.splitlines() if re.match(r'#{1,6}\s', line)]
    missing = []
    for name in parser.methods + parser.errors:
        full = f'{parser.name}.{name}'
        pat = re.compile(r'(?<![A-Za-z0-9.])' + re.escape(full) + r'(?![A-Za-z0-9])')
        if not any(pat.search(h) for h in headings):
            missing.append(full)
    return missing


def check_doc_fields(parser, docs_text, names):
    """The fields of the named types and methods' replies the docs never name: "Name.field" each."""
    missing = []
    for name in names:
        tree = parser.type_defs.get(name) or parser.method_replies.get(name)
        if tree is None or tree['kind'] != 'struct':
            missing.append(f'{name} (no such struct type or method)')
            continue
        for field, _ in tree['fields']:
            if f'`{field}`' not in docs_text and f'"{field}":' not in docs_text:
                missing.append(f'{name}.{field}')
    return missing


SELF_TEST_GOOD = [
    'interface a.b\nmethod M() -> ()',
    'interface org.example.x-y\n# c\ntype T (a: ?[]string, b: [string]?int, c: (x, y), d: (e: int))\n'
    'method M(t: T) -> (o: object)\nerror E ()',
]
SELF_TEST_BAD = [
    '',
    'interface a\nmethod M() -> ()',
    'interface a.b\n',
    'interface a.b\nmethod m() -> ()',
    'interface a.b\nmethod M() ()',
    'interface a.b\nmethod M(a: ??int) -> ()',
    'interface a.b\nmethod M(a: int,) -> ()',
    'interface a.b\nmethod M(a: int b: int) -> ()',
    'interface a.b\nmethod M(a: Nope) -> ()',
    'interface a.b\nmethod M(a: int, a: int) -> ()',
    'interface a.b\nmethod M() -> ()\nmethod M() -> ()',
    'interface a.b\nmethod M(x, y) -> ()',
    'interface a.b\nerror E (a: int',
    'interface a.b\nmethod M(a: integer) -> ()',
    'interface a.b\nfoo M() -> ()',
    'interface a..b\nmethod M() -> ()',
]


def self_test():
    for text in SELF_TEST_GOOD:
        check_text(text, strict=False)
    for text in SELF_TEST_BAD:
        try:
            check_text(text, strict=False)
        except IdlError:
            continue
        sys.exit(f'self-test: accepted invalid IDL: {text!r}')
    try:
        check_text('interface Io.x\nmethod M() -> ()', strict=True)
        sys.exit('self-test: strict mode accepted an uppercase interface name')
    except IdlError:
        pass
    try:
        check_text('interface io.x\nmethod M(snake_case: int) -> ()', strict=True)
        sys.exit('self-test: strict mode accepted a snake_case field')
    except IdlError:
        pass
    p = check_text('interface io.x\nmethod Foo() -> ()\nerror Bar ()', strict=True)
    if check_docs(p, '## `io.x.Foo`\n## io.x.Bar\n') != []:
        sys.exit('self-test: docs check missed a heading')
    if check_docs(p, '## io.x.Foo\nio.x.Bar in text only\n') != ['io.x.Bar']:
        sys.exit('self-test: docs check accepted a method named outside a heading')
    p = check_text('interface io.x\ntype T (a: int, bB: int)\nmethod Foo() -> (c: T, d: int)', strict=True)
    if check_doc_fields(p, '`a` and {"bB": 1} and `c`', ['T', 'Foo']) != ['Foo.d']:
        sys.exit('self-test: docs fields check missed an undocumented field')
    if check_doc_fields(p, '', ['Nope']) == []:
        sys.exit('self-test: docs fields check accepted an unknown name')
    print('self-test: ok')


def main(argv):
    strict = False
    docs = None
    doc_fields = []
    files = []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--self-test':
            self_test()
            return 0
        if a == '--strict-names':
            strict = True
        elif a == '--docs':
            docs = args.pop(0)
        elif a == '--docs-fields':
            doc_fields = args.pop(0).split(',')
        else:
            files.append(a)
    if not files:
        sys.exit(__doc__)
    status = 0
    for f in files:
        with open(f, encoding='utf-8') as fh:
            text = fh.read()
        try:
            p = check_text(text, strict)
        except IdlError as e:
            line, msg = e.args[0]
            print(f'{f}:{line}: {msg}', file=sys.stderr)
            status = 1
            continue
        if docs:
            with open(docs, encoding='utf-8') as fh:
                docs_text = fh.read()
            for m in check_docs(p, docs_text):
                print(f'{docs}: no heading documents {m} (declared in {f})', file=sys.stderr)
                status = 1
            for m in check_doc_fields(p, docs_text, doc_fields):
                print(f'{docs}: does not name the field {m} (declared in {f})', file=sys.stderr)
                status = 1
        print(f'{f}: {p.name}: {len(p.types)} types, {len(p.methods)} methods, {len(p.errors)} errors')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
