/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>

#include "format-text.h"
#include "macro.h"
#include "xml.h"

int xml_put_text(FILE *f, const char *text) {
        _cleanup_free_ char *clean = format_sanitize(text ?: "");

        if (!clean)
                return -ENOMEM;
        for (const char *s = clean; *s; s++)
                switch (*s) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&apos;", f);
                        break;
                default:
                        fputc(*s, f);
                }
        return 0;
}
