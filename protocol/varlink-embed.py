#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a C file defining one NUL-terminated string with the text of a file: a varlink interface
file, so the daemon serves exactly the checked-in IDL (the single source of truth), or any other text
to embed. Given SIGNATURE_SYMBOL, it also defines the parameter types of the interface's methods (a
VarlinkSignature, protocol/varlink.h) parsed from that same text, so the server checks every call
against what the interface file declares.

usage: varlink-embed.py INPUT OUTPUT SYMBOL [SIGNATURE_SYMBOL]"""

import importlib.util
import os
import sys


def load_parser():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'varlink-idl-check.py')
    spec = importlib.util.spec_from_file_location('varlink_idl_check', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def c_escape(line):
    out = []
    for ch in line:
        o = ord(ch)
        if ch == '\\':
            out.append('\\\\')
        elif ch == '"':
            out.append('\\"')
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\t':
            out.append('\\t')
        elif o < 0x20 or o == 0x7f:
            out.append('\\%03o' % o)
        elif o >= 0x80:
            # Octal escapes per UTF-8 byte keep the C source ASCII and the bytes exact.
            out.extend('\\%03o' % b for b in ch.encode('utf-8'))
        else:
            out.append(ch)
    return ''.join(out)


KINDS = {'bool': 'BOOL', 'int': 'INT', 'float': 'FLOAT', 'string': 'STRING', 'object': 'OBJECT',
         'enum': 'ENUM', 'struct': 'STRUCT', 'array': 'ARRAY', 'map': 'MAP'}


class SignatureWriter:
    """Emits one static VarlinkType per type tree, children before parents. A named type is emitted
    once (declared first, so that a type may contain itself)."""

    def __init__(self, type_defs):
        self.type_defs = type_defs
        self.lines = []
        self.named = {}
        self.n = 0

    def new_name(self):
        self.n += 1
        return f'type{self.n}'

    def emit(self, tree):
        if tree['kind'] == 'ref':
            name = self.named.get(tree['name'])
            if name is None:
                name = self.named[tree['name']] = self.new_name()
                self.lines.append(f'static const VarlinkType {name};')
                self.define(name, self.type_defs[tree['name']])
            if not tree['nullable']:
                return name
            # "?Named": the named type, nullable.
            alias = self.new_name()
            self.lines.append(f'static const VarlinkType {alias} = {{ .kind = VARLINK_TYPE_REF, '
                              f'.nullable = true, .element = &{name} }};')
            return alias
        name = self.new_name()
        self.define(name, tree)
        return name

    def define(self, name, tree):
        members = [f'.kind = VARLINK_TYPE_{KINDS[tree["kind"]]}']
        if tree['nullable']:
            members.append('.nullable = true')
        if tree['kind'] == 'enum':
            choices = ', '.join(f'"{c}"' for c in tree['choices'])
            self.lines.append(f'static const char *const {name}_choices[] = {{ {choices}, NULL }};')
            members.append(f'.choices = {name}_choices')
        elif tree['kind'] in ('array', 'map'):
            members.append(f'.element = &{self.emit(tree["element"])}')
        elif tree['kind'] == 'struct' and tree['fields']:
            fields = [(f, self.emit(t)) for f, t in tree['fields']]
            self.lines.append(f'static const VarlinkTypeField {name}_fields[] = {{')
            self.lines.extend(f'        {{ "{f}", &{t} }},' for f, t in fields)
            self.lines.append('};')
            members.append(f'.fields = {name}_fields')
            members.append(f'.n_fields = {len(fields)}')
        self.lines.append(f'static const VarlinkType {name} = {{ {", ".join(members)} }};')


def write_signature(f, parser, symbol):
    w = SignatureWriter(parser.type_defs)
    methods = [(m, w.emit(parser.method_parameters[m])) for m in parser.methods]
    f.write('\n#include "varlink.h"\n\n')
    f.write(f'extern const VarlinkSignature {symbol};\n\n')
    f.write('\n'.join(w.lines) + '\n\n')
    f.write(f'static const VarlinkMethodSignature {symbol}_methods[] = {{\n')
    for m, t in methods:
        f.write(f'        {{ "{parser.name}.{m}", &{t} }},\n')
    f.write('};\n\n')
    f.write(f'const VarlinkSignature {symbol} = {{ .methods = {symbol}_methods, '
            f'.n_methods = {len(methods)} }};\n')


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, dst, symbol = sys.argv[1:4]
    signature = sys.argv[4] if len(sys.argv) == 5 else None
    with open(src, encoding='utf-8') as f:
        text = f.read()
    if '\0' in text:
        sys.exit(f'{src}: contains a NUL byte')
    parser = None
    if signature:
        idl = load_parser()
        try:
            parser = idl.check_text(text, strict=False)
        except idl.IdlError as e:
            line, msg = e.args[0]
            sys.exit(f'{src}:{line}: {msg}')
    lines = text.splitlines(keepends=True) or ['']
    with open(dst, 'w', encoding='ascii') as f:
        f.write(f'/* Generated from {src.split("/")[-1]} by varlink-embed.py: do not edit. */\n\n')
        f.write(f'extern const char {symbol}[];\n')
        f.write(f'const char {symbol}[] =\n')
        for line in lines:
            f.write(f'        "{c_escape(line)}"\n')
        f.write('        ;\n')
        if parser:
            write_signature(f, parser, signature)


if __name__ == '__main__':
    main()
