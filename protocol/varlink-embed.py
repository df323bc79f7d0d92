#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a C file defining one NUL-terminated string with the text of a varlink interface file,
so the daemon serves exactly the checked-in IDL (the single source of truth).

usage: varlink-embed.py INPUT OUTPUT SYMBOL"""

import sys


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


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, dst, symbol = sys.argv[1:]
    with open(src, encoding='utf-8') as f:
        text = f.read()
    if '\0' in text:
        sys.exit(f'{src}: contains a NUL byte')
    lines = text.splitlines(keepends=True) or ['']
    with open(dst, 'w', encoding='ascii') as f:
        f.write(f'/* Generated from {src.split("/")[-1]} by varlink-embed.py: do not edit. */\n\n')
        f.write(f'extern const char {symbol}[];\n')
        f.write(f'const char {symbol}[] =\n')
        for line in lines:
            f.write(f'        "{c_escape(line)}"\n')
        f.write('        ;\n')


if __name__ == '__main__':
    main()
