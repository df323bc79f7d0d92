/* SPDX-License-Identifier: MIT */

#include <stdio.h>
#include <stdlib.h>

#include "http-reply.h"

enum MHD_Result http_respond(struct MHD_Connection *conn, unsigned status, const char *content_type, void *body,
                size_t size, const HttpHeader *headers, size_t n_headers) {
        struct MHD_Response *response;
        enum MHD_Result ret;

        response = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(body);
                return MHD_NO;
        }
        if (MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) == MHD_NO) {
                MHD_destroy_response(response);
                return MHD_NO;
        }
        for (size_t i = 0; i < n_headers; i++)
                if (MHD_add_response_header(response, headers[i].name, headers[i].value) == MHD_NO) {
                        MHD_destroy_response(response);
                        return MHD_NO;
                }
        ret = MHD_queue_response(conn, status, response);
        MHD_destroy_response(response);
        return ret;
}

enum MHD_Result http_respond_text(struct MHD_Connection *conn, unsigned status, const char *text,
                const HttpHeader *headers, size_t n_headers) {
        char *body = NULL;
        int n = asprintf(&body, "%s\n", text);

        if (n < 0)
                return MHD_NO;
        return http_respond(conn, status, "text/plain; charset=utf-8", body, (size_t) n, headers, n_headers);
}
