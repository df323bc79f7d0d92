/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Answers to one HTTP request of memstrack-metrics (libmicrohttpd): a body with its Content-Type and any
 * further headers. Every refusal is a status with a one-line text reason, so that curl, Prometheus and
 * go tool pprof all show why.
 */

#include <stddef.h>

#include <microhttpd.h>

typedef struct HttpHeader {
        const char *name;
        const char *value;
} HttpHeader;

/* Queues status with body (malloc'd: taken, also on failure) of size bytes. MHD_NO on failure. */
enum MHD_Result http_respond(struct MHD_Connection *conn, unsigned status, const char *content_type, void *body,
                size_t size, const HttpHeader *headers, size_t n_headers);

/* The same for a line of text (a newline is added), as text/plain. */
enum MHD_Result http_respond_text(struct MHD_Connection *conn, unsigned status, const char *text,
                const HttpHeader *headers, size_t n_headers);
