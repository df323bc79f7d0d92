/* SPDX-License-Identifier: MIT */

/* memstrackctl cold: the Cold method, printed as the cold report prints it (one text for both), or with
 * --json as it came. */

#include <errno.h>

#include "connection.h"
#include "ctl.h"
#include "report-format.h"
#include "report.h"

int verb_cold(int argc, char *argv[]) {
        json_auto_t *params = json_object(), *reply = NULL, *doc = NULL;
        ReportOptions o = REPORT_OPTIONS_DEFAULT;
        uint64_t page_size;
        int r;

        if (!params ||
            (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0) ||
            (arg_limit > 0 && json_object_set_new(params, "stacks",
                                                   json_integer((json_int_t) MIN(arg_limit, (uint64_t) 100))) < 0))
                return -ENOMEM;
        r = ctl_query("io.memstrack.Cold", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        doc = json_pack("{s:O}", "cold", reply);
        if (!doc)
                return -ENOMEM;
        o.formats[0].format = report_format_find("cold");
        o.n_formats = 1;
        return report_render(doc, &o, stdout);
}
