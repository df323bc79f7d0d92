/* SPDX-License-Identifier: MIT */

/* memstrackctl explain UNIT: the Explain reply, the kernel's figures of a unit beside memstrack's. */

#include <stdio.h>

#include <jansson.h>

#include "connection.h"
#include "ctl.h"
#include "explain-text.h"

int verb_explain(int argc, char *argv[]) {
        json_auto_t *params = NULL, *reply = NULL;
        uint64_t page_size = 4096;
        int r;

        params = json_pack("{s:s}", "name", argv[1]);
        if (!params)
                return -ENOMEM;
        if (arg_limit > 0 && json_object_set_new(params, "limit", json_integer((json_int_t) arg_limit)) < 0)
                return -ENOMEM;
        if (arg_stacks >= 0 && json_object_set_new(params, "stacks", json_integer((json_int_t) arg_stacks)) < 0)
                return -ENOMEM;
        r = ctl_query("io.memstrack.Explain", params, &reply, &page_size);
        if (r != 0 || !reply)
                return r;
        return explain_render_text(reply, stdout);
}
