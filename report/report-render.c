/* SPDX-License-Identifier: MIT */

/* Rendering the formats a report asks for, each by its entry of the table (report-format.h). */

#include <assert.h>

#include "macro.h"
#include "report-format.h"

int report_render(json_t *doc, const ReportOptions *o, FILE *f) {
        int r;

        assert(doc);
        assert(o);
        assert(f);

        for (size_t i = 0; i < o->n_formats; i++) {
                ReportOptions one = report_options_for(o, i);
                const ReportFormat *format = one.formats[0].format;

                if (o->n_formats > 1)
                        fprintf(f, "======== Report format %s: ========\n", format->name);
                r = format->text(doc, &one, f);
                if (r < 0)
                        return r;
                if (o->n_formats > 1)
                        fprintf(f, "======== Report format %s END ========\n", format->name);
        }
        if (fflush(f) != 0 || ferror(f))
                return -EIO;
        return 0;
}

int report_render_json(json_t *doc, const ReportOptions *o, json_t **ret) {
        json_auto_t *out = json_object();
        int r;

        assert(doc);
        assert(o);
        assert(ret);

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_formats; i++) {
                ReportOptions one = report_options_for(o, i);
                const ReportFormat *format = one.formats[0].format;
                json_t *part = NULL;

                r = format->json ? format->json(doc, &one, &part) : 0;
                if (r < 0)
                        return r;
                if (json_object_set_new(out, format->name, part ?: json_null()) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}
