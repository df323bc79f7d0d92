/* SPDX-License-Identifier: MIT */

/* Prints the table of report formats (report-formats.c), "NAME FAMILY" a line, in its order, for
 * check-report-formats.py. */

#include <stdio.h>

#include "report-format.h"

int main(void) {
        const ReportFormat *f;

        for (size_t i = 0; (f = report_format_get(i)); i++)
                printf("%s %s\n", f->name, f->family);
        return fflush(stdout) == 0 ? 0 : 1;
}
