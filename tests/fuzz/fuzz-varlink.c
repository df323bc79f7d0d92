/* SPDX-License-Identifier: MIT */

/*
 * libFuzzer target for what a client controls on the server: the framer (bytes split at fuzzer-chosen
 * points, through both the copy and the recv() paths), call parsing, method name handling, parameter
 * validation, and the reply path built from whatever parsed. Also feeds the raw input to the reply
 * parser, which memstrackctl runs on what a server sends.
 *
 * Input: byte 0 picks the chunk size and path, the rest is the stream.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "macro.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern const VarlinkSignature varlink_signature_io_memstrack;

static void exercise_call(const VarlinkCallMessage *m) {
        _cleanup_free_ char *iface = NULL, *text = NULL, *again = NULL;
        const char *member = NULL, *bad = NULL;
        json_auto_t *reply = NULL, *error = NULL, *ip = NULL;
        VarlinkReply r = {};
        size_t n;

        /* Parsing guaranteed these. */
        if (!varlink_method_name_is_valid(m->method) || !json_is_object(m->parameters))
                abort();
        if (varlink_method_name_split(m->method, &iface, &member) < 0 || !varlink_interface_name_is_valid(iface))
                abort();

        /* Against io.memstrack's own parameter types (from its interface file), as the server checks
         * them; for any other method, against Tasks's. */
        const VarlinkMethodSignature *sig = varlink_signature_find(&varlink_signature_io_memstrack, m->method) ?:
                                            varlink_signature_find(&varlink_signature_io_memstrack, "io.memstrack.Tasks");
        if (!sig)
                abort();
        if (varlink_parameters_check(m->parameters, sig, &bad) < 0) {
                if (!bad)
                        abort();
                ip = varlink_error_parameters_invalid_parameter(bad);
                error = varlink_reply_new_error(VARLINK_ERROR_INVALID_PARAMETER, ip);
        }

        /* Echo the parameters back the way the server would, and read the reply as a client would. */
        reply = varlink_reply_new(m->parameters, m->flags & VARLINK_CALL_MORE);
        if (!reply || varlink_message_serialize(reply, &text, &n) < 0)
                return;
        if (n == 0 || text[n - 1] != '\0' || strlen(text) != n - 1)
                abort();
        if (varlink_reply_parse(text, n - 1, &r) < 0)
                abort();
        if (!json_equal(r.parameters, m->parameters) || r.error)
                abort();
        varlink_reply_done(&r);

        /* A call rebuilt from the parsed one parses to the same thing. */
        if (varlink_call_build(m->method, m->parameters, m->flags, &again, &n) == 0) {
                VarlinkCallMessage m2 = {};

                if (varlink_call_parse(again, n - 1, &m2, NULL, NULL) < 0)
                        abort();
                if (!streq(m2.method, m->method) || m2.flags != m->flags || !json_equal(m2.parameters, m->parameters))
                        abort();
                varlink_call_message_done(&m2);
        }
}

static void handle_message(const char *msg, size_t n) {
        VarlinkCallMessage m = {};
        VarlinkCallFlags flags = 0;
        char *bad = NULL;
        int r;

        if (strlen(msg) != n)
                abort(); /* the framer hands out exactly one NUL-free message */

        r = varlink_call_parse(msg, n, &m, &bad, &flags);
        if (r == 0) {
                exercise_call(&m);
                varlink_call_message_done(&m);
        } else if (r == -EINVAL) {
                if (!bad || m.method)
                        abort();
        } else if (r != -EBADMSG && r != -ENOMEM)
                abort();
        free(bad);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(varlink_framer_freep) VarlinkFramer *f = NULL;
        VarlinkReply reply = {};
        size_t chunk, off = 0;
        bool use_space;

        if (size < 1)
                return 0;
        chunk = (data[0] & 0x7f) + 1;
        use_space = data[0] & 0x80;
        data++;
        size--;

        /* The client side parses arbitrary bytes as a reply. */
        if (varlink_reply_parse((const char *) data, size, &reply) == 0)
                varlink_reply_done(&reply);

        /* A small limit so oversized messages are reached quickly. */
        if (varlink_framer_new(1024, &f) < 0)
                return 0;

        while (off < size) {
                size_t n = MIN(chunk, size - off);
                const char *msg;
                size_t len;
                int r;

                if (use_space) {
                        void *buf;
                        size_t room;

                        r = varlink_framer_get_space(f, &buf, &room);
                        if (r < 0)
                                break;
                        n = MIN(n, room);
                        memcpy(buf, data + off, n);
                        varlink_framer_commit(f, n);
                } else {
                        r = varlink_framer_feed(f, data + off, n);
                        if (r < 0 && r != -EMSGSIZE)
                                break;
                }
                off += n;

                while ((r = varlink_framer_next(f, &msg, &len)) > 0)
                        handle_message(msg, len);
                if (r < 0)
                        break; /* -EMSGSIZE: the server drops the connection here */
        }
        return 0;
}
