/* SPDX-License-Identifier: MIT */
#pragma once

/* Text for XML and HTML (SVG files, the HTML report). */

#include <stdio.h>

/* Writes text as XML character data or an attribute value: control characters (invalid in XML 1.0)
 * escaped as on a terminal (format_sanitize()), then the markup characters as entities. -ENOMEM. */
int xml_put_text(FILE *f, const char *text);
