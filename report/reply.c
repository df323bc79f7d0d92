/* SPDX-License-Identifier: MIT */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reply.h"

int64_t reply_int(const json_t *o, const char *key, int64_t def) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) ? (int64_t) json_integer_value(v) : def;
}

uint64_t reply_count(const json_t *o, const char *key) {
        int64_t v = reply_int(o, key, 0);
        return v > 0 ? (uint64_t) v : 0;
}

double reply_double(const json_t *o, const char *key, double def) {
        json_t *v = json_object_get(o, key);
        return json_is_number(v) ? json_number_value(v) : def;
}

bool reply_bool(const json_t *o, const char *key, bool def) {
        json_t *v = json_object_get(o, key);
        return json_is_boolean(v) ? json_is_true(v) : def;
}

const char *reply_string(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

json_t *reply_array(const json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_array(v) ? v : NULL;
}

json_t *reply_object(const json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_object(v) ? v : NULL;
}

char *reply_frame_label(const json_t *node) {
        const char *frame = reply_string(node, "frame") ?: "[unknown]";
        const char *module = reply_string(node, "module");
        char *s;

        if (!module)
                return strdup(frame);
        if (asprintf(&s, "%s [%s]", frame, module) < 0)
                return NULL;
        return s;
}

int64_t reply_node_peak(const json_t *node) {
        json_t *v = json_object_get(node, "peakPages");
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t) json_integer_value(v) : -1;
}
